"""Release noise drawn by OpenDP's vetted samplers (``ftp(..., secure=True)``, ``ptf(..., secure=True)``).

``numpy.random.Generator.standard_normal`` is fine for simulation, but a release
that leaves the building should not rely on it: textbook floating-point noise
samplers leak information through the low-order bits of their output (Mironov,
2012).  OpenDP's Gaussian mechanism rounds the input to a lattice 2^k·ℤ,
adds *exactly sampled* discrete Gaussian noise on that lattice from a
cryptographically secure random source, and rounds the result to a float; its
privacy map is proved for that implementation, not for idealised reals.

Both pipelines release a Gaussian mechanism on a vector with known ℓ₂
sensitivity Δ (Proposition 4, Theorem 6):

* FTP on H_m — the coefficient vector θ̂, Δ = 2B'/n (Corollary 7);
* FTP on an RKHS — the β-coordinates of the fit, Δ = 2B'/n; the grid values
  K_T^{1/2}(β̂ + σξ) are post-processing (Corollary 8);
* PTF — the clipped means divided by c_j, so every coordinate has
  sensitivity 2/n and the vector Δ = 2√T/n; the noisy vector is multiplied
  back by c_j (post-processing), which gives σ_j = c_j·2√T/(nμ) (Proposition 9).

With noise scale σ = Δ/μ, OpenDP's map sends Δ to ρ = Δ²/(2σ²) = μ²/2 in
zero-concentrated DP, and a Gaussian mechanism with ρ = μ²/2 is exactly μ-GDP.
:func:`gaussian_release` checks that map before drawing anything.

The draws come from OpenDP's own secure random source: they cannot be seeded
and are not reproducible from a ``numpy.random.Generator`` — that is the point.
The pure-DP Laplace mechanism (``laplace_mechanism(..., secure=True)``,
Proposition 17, Example 3) goes through OpenDP's Laplace mechanism in the same
way: its map sends an ℓ₁ sensitivity Δ₁ to ε = Δ₁/scale, checked by
:func:`laplace_release`.

OpenDP is a run-time dependency of dpfda (``pip install .`` installs it).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..validation import as_float_array, check_positive
from .calibration import PARAM_MAX, check_secure_budget

__all__ = [
    "opendp_available",
    "gaussian_measurement",
    "gaussian_release",
    "laplace_measurement",
    "laplace_release",
]


def _opendp() -> ModuleType:
    try:
        import opendp.prelude as dp
    except ImportError as exc:  # pragma: no cover - exercised only without opendp
        raise ImportError(
            "secure=True draws the release noise with OpenDP, which is not installed; "
            "install it with `pip install 'opendp>=0.16,<0.17'` (or `pip install dpfda[secure]`)"
        ) from exc
    # make_gaussian is in OpenDP's "contrib" tier (proved, not yet vetted by the
    # OpenDP committee); enabling it is OpenDP's documented way to use it.
    dp.enable_features("contrib")
    return dp


def opendp_available() -> bool:
    """Whether OpenDP can be imported (``secure=True`` needs it)."""
    try:
        _opendp()
    except ImportError:
        return False
    return True


def gaussian_measurement(scale: float) -> Any:  # an opendp Measurement (opendp is untyped)
    """OpenDP's vector Gaussian mechanism with standard deviation ``scale``.

    The input space is float vectors without NaN under the ℓ₂ distance
    (``vector_domain(atom_domain(T=float, nan=False))``, ``l2_distance(T=float)``);
    the privacy measure is zero-concentrated DP, so ``meas.map(Δ)`` is
    ρ = Δ²/(2·scale²).
    """
    dp = _opendp()
    scale = check_positive(scale, "scale")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    return space >> dp.m.then_gaussian(scale=scale)


def gaussian_release(values: ArrayLike, scale: float, sensitivity: float, mu: float) -> np.ndarray:
    """``values`` + N(0, scale²) noise in every coordinate, drawn by OpenDP.

    Parameters
    ----------
    values : array (..., k)
        The non-private vector(s); leading axes are independent repetitions
        (each gets fresh noise — one OpenDP call on the flattened batch).
        Real, finite and at most 2^960 in magnitude (``PARAM_MAX``);
        otherwise ``TypeError``/``ValueError``.
    scale : float
        Noise standard deviation σ, at most 2^960.
    sensitivity : float
        ℓ₂ sensitivity Δ of one vector (the last axis).
    mu : float
        The GDP budget the caller promises; OpenDP's zCDP map of Δ must not
        exceed μ²/2 (up to rounding), otherwise ``ValueError``.

    Returns
    -------
    ndarray, same shape as ``values``.
    """
    scale = _check_scale(scale)
    sensitivity = check_positive(sensitivity, "sensitivity")
    mu = check_secure_budget(mu)
    values = _check_values(values)
    meas = gaussian_measurement(scale)
    return _checked_release(
        values, meas, sensitivity, 0.5 * mu * mu,
        f"rho = {{:.6g}} > mu^2/2 = {0.5 * mu * mu:.6g}: scale={scale:.6g} is too small for "
        f"sensitivity={sensitivity:.6g} at mu={mu:.6g}")


def laplace_measurement(scale: float) -> Any:  # an opendp Measurement (opendp is untyped)
    """OpenDP's vector Laplace mechanism with scale ``scale`` (pure DP under the ℓ₁ distance).

    ``meas.map(Δ₁)`` is ε = Δ₁/scale.
    """
    dp = _opendp()
    scale = check_positive(scale, "scale")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return space >> dp.m.then_laplace(scale=scale)


def laplace_release(values: ArrayLike, scale: float, sensitivity: float, epsilon: float) -> np.ndarray:
    """``values`` + Laplace(scale) noise in every coordinate, drawn by OpenDP.

    ``values`` must be real, finite and at most 2^960 in magnitude, ``scale`` at
    most 2^960 (``PARAM_MAX``).  ``sensitivity`` is the ℓ₁ sensitivity of one
    vector (the last axis);
    OpenDP's privacy map of it must not exceed ``epsilon`` (up to rounding),
    otherwise ``ValueError``.  Leading axes are independent repetitions.
    """
    scale = _check_scale(scale)
    sensitivity = check_positive(sensitivity, "sensitivity")
    epsilon = check_positive(epsilon, "epsilon")
    values = _check_values(values)
    meas = laplace_measurement(scale)
    return _checked_release(
        values, meas, sensitivity, epsilon,
        f"epsilon = {{:.6g}} > {epsilon:.6g}: scale={scale:.6g} is too small for "
        f"sensitivity={sensitivity:.6g}")


def _check_values(values: ArrayLike) -> np.ndarray:
    """The vector(s) to release: real, finite, of magnitude at most 2^960 (``PARAM_MAX``)."""
    values = as_float_array(values, "values")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite before noise is added (found NaN or inf)")
    if values.size and np.max(np.abs(values)) > PARAM_MAX:
        raise ValueError(
            f"values must lie in [-2^960, 2^960] (≈ ±9.7e288, so a noisy value stays finite), got a "
            f"magnitude of {float(np.max(np.abs(values))):.4g}: clip or rescale them first"
        )
    return values


def _check_scale(scale: float) -> float:
    scale = check_positive(scale, "scale")
    if scale > PARAM_MAX:
        raise ValueError(f"scale must be at most 2^960 ≈ 9.7e288 (so a noisy value stays finite), "
                         f"got {scale!r}")
    return scale


def _checked_release(values: np.ndarray, meas: Any, sensitivity: float, budget: float, refusal: str) -> np.ndarray:
    """``meas`` applied to every vector of ``values`` (last axis), after OpenDP's privacy map.

    The map of ``sensitivity`` must not exceed ``budget`` (up to rounding); otherwise a
    ``ValueError`` with ``refusal`` (its ``{}`` filled with the map's value).  ``values`` has
    been checked by :func:`_check_values`; leading axes are independent repetitions.
    """
    spent = float(meas.map(sensitivity))
    if spent > budget * (1.0 + 1e-9):
        raise ValueError("OpenDP's privacy map gives " + refusal.format(spent))
    if values.size == 0:
        return values.copy()
    return np.asarray(meas(values.ravel()), dtype=float).reshape(values.shape)
