"""The one calibration of every Gaussian mechanism: σ, its rounding factor, OpenDP's Δ, the limits.

Every mechanism of the package — FTP (Theorem 6), PTF (Proposition 9), every
:class:`~dpfda_book.mechanisms.designs.Design`, the command line and the chapters — takes
its noise scale from here:

* :func:`noise_scale` — σ = 2·bound·factor/(n·μ)·(1 + rounding cover), computed on
  mantissas and exponents (no intermediate over- or underflows; in the ordinary
  range bit for bit the plain formula);
* ``gaussian_sigma`` — σ = Δ/μ for a given sensitivity (Proposition 4), by the
  same arithmetic;
* :func:`declared_sensitivity` — the floating-point sensitivity told to OpenDP,
  2·bound·factor/n times the same rounding factor as σ;
* :func:`check_secure_budget` — whether OpenDP's zero-concentrated budget
  ρ = μ²/2 is a normal float (a smaller μ is refused by name, before any data are read);
* ``PARAM_MAX`` and ``NOISE_RESOLUTION`` — the limits on every bound, scale and
  released value.

The rounding factor is :func:`dpfda.maths.summation.calibration_factor` of a proven
excess ε (1 while ε <= 2⁻³¹).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ..maths.summation import calibration_factor
from ..validation import check_positive

__all__ = [
    "PARAM_MAX",
    "NOISE_RESOLUTION",
    "SECURE_MU_MIN",
    "noise_scale",
    "gaussian_sigma",
    "declared_sensitivity",
    "check_secure_budget",
]

PARAM_MAX = 2.0**960
"""Largest bound (B', c_j, R), noise scale and released value accepted (≈ 9.7e288).

With every bound, scale and value below 2^960, sums of n fits or clipped values, the
noise (numpy's is at most about 37 scales, OpenDP's would need 2^64 scales, a chance
below e^(−1.8·10^19)) and the grid values of a release all stay far inside the float
range, so no release can overflow to inf or NaN whatever the data.  The one bound of
FTP, PTF, the designs, OpenDP's samplers and the Laplace mechanism."""

NOISE_RESOLUTION = 2.0**-40
"""Smallest accepted ratio σ/bound (σ/B' for FTP, σ_j/c_j for PTF, σ/R for a design).

The noise is added to a mean of magnitude up to the bound; far below it, rounding
would erase the noise and publish the mean itself.  At 2^-40 the noise keeps 12 of a
double's 52 bits; the ratio is 2/(nμ) (times √T for PTF), so only n·μ above about
10^12 is refused."""

SECURE_MU_MIN = 2.0**-510
"""Smallest μ of a release whose noise OpenDP draws (≈ 3.0e-154).

OpenDP accounts in zero-concentrated DP, ρ = μ²/2; below 2^-510, μ²/2 is not a normal
float (it underflows towards 0), so no sampler scale can be checked against it."""


def _short(x: ArrayLike) -> str:
    a = np.asarray(x, dtype=float)
    return repr(float(a)) if a.ndim == 0 else f"[{float(a.min())!r} … {float(a.max())!r}]"


def _check_bound(b: np.ndarray, bound_name: str) -> None:
    if np.any(b > PARAM_MAX):
        raise ValueError(
            f"{bound_name} must be at most 2^960 ≈ 9.7e288 (so sums, noise and grid values stay "
            f"within floating point), got {float(np.max(b))!r}"
        )


def _check_scale(sigma: float | np.ndarray, b: np.ndarray | None, what: str, formula: str) -> None:
    """σ must be a normal float, at most PARAM_MAX and at least NOISE_RESOLUTION·bound."""
    if not np.all(np.isfinite(sigma)) or np.any(sigma > PARAM_MAX):
        raise ValueError(
            f"the noise scale {formula} is too large {what} (above 2^960 ≈ 9.7e288); "
            "mu is too small or the bound too large"
        )
    if np.any(sigma < np.finfo(float).tiny):
        raise ValueError(
            f"the noise scale {formula} underflows {what}: it must be a normal "
            "floating-point number (> 2.2e-308); mu or n is too large or the bound too small"
        )
    if b is not None and np.any(sigma < NOISE_RESOLUTION * b):
        raise ValueError(
            f"the noise scale is below 2^-40 of the bound {what}: rounding would erase the "
            "noise from the released mean (n·mu must be below about 10^12)"
        )


def noise_scale(bound: ArrayLike, factor: float | None, n: int, mu: float, bound_name: str,
                rounding: float = 0.0, *, what: str | None = None,
                public_bound: bool = True) -> np.ndarray:
    """σ = 2·bound·factor/(n·μ) (``factor=None``: 1), on mantissas and exponents.

    ``bound`` is B' (FTP, Theorem 6), c_j (PTF, Proposition 9; ``factor`` = √T) or a
    design's extent R; ``rounding`` a proven bound ε on how much the rounding of the
    summary can add to pair μ, relative: σ is multiplied by
    :func:`dpfda.maths.summation.calibration_factor` (ε), 1 unless ε > 2⁻³¹.
    The operations are those of 2B'/(nμ) and (2c_j/n)·√T/μ in that order, so in the
    ordinary range the result is bit for bit the plain formula.  ``ValueError`` unless
    the bound is at most ``PARAM_MAX`` and σ a normal float in
    [``NOISE_RESOLUTION``·bound, ``PARAM_MAX``]; ``what`` replaces the
    parameters named in the messages.  ``public_bound=False``: the bound is derived (a
    design's R, which may exceed 2^960 while σ does not), so only σ is limited.
    """
    b = np.asarray(bound, dtype=float)
    if public_bound:
        _check_bound(b, bound_name)
    mb, eb = np.frexp(b)
    mn, en = math.frexp(float(n))
    mm, em = math.frexp(mu)
    inflate = calibration_factor(rounding, f"the mean over n={n} curves")
    with np.errstate(over="ignore", under="ignore"):
        mant = 2.0 * mb / (mn * mm) if factor is None else 2.0 * mb / mn * factor / mm
        if inflate != 1.0:
            mant = mant * inflate
        sigma = np.ldexp(mant, eb - en - em)
    what = what or f"for mu={mu!r}, {bound_name}={_short(bound)} and n={n}"
    _check_scale(sigma, b, what, f"2·{bound_name}/(n·mu)")
    return sigma


def gaussian_sigma(sensitivity: float, mu: float, *, rounding: float = 0.0) -> float:
    """Noise scale σ = Δ/μ of the Gaussian mechanism (Proposition 4), overflow-safe.

    ``sensitivity`` is the ℓ₂ (or Cameron–Martin, Theorem 6) sensitivity Δ > 0 of the
    summary as computed; ``rounding`` a proven relative excess ε of it
    (:func:`dpfda.maths.summation.calibration_factor`).  Δ and μ are divided on
    mantissas and exponents, so σ is exact to one rounding wherever it is a normal
    float; ``ValueError`` when it is not, or exceeds ``PARAM_MAX``.

    Examples
    --------
    >>> gaussian_sigma(2.0, 0.5)
    4.0
    >>> gaussian_sigma(1e-300, 1e-300)  # Δ/μ where Δ·(1/μ) would overflow
    1.0
    """
    delta = check_positive(sensitivity, "sensitivity")
    mu = check_positive(mu, "mu")
    md, ed = math.frexp(delta)
    mm, em = math.frexp(mu)
    inflate = calibration_factor(rounding, "the summary")
    with np.errstate(over="ignore", under="ignore"):
        sigma = float(np.ldexp(md / mm * inflate, ed - em))
    _check_scale(sigma, None, f"for sensitivity={delta!r} and mu={mu!r}", "sensitivity/mu")
    return sigma


def declared_sensitivity(bound: float, n: int, rounding: float = 0.0, factor: float | None = None) -> float:
    """The sensitivity told to OpenDP: 2·bound·factor/n, times σ's rounding factor.

    The same factor :func:`noise_scale` puts on σ, so OpenDP's map gives
    ρ = Δ²/(2σ²) = μ²/2 exactly as for the formula.
    """
    base = 2.0 * float(bound) / n if factor is None else 2.0 * float(bound) * factor / n
    return base * calibration_factor(rounding)


def check_secure_budget(mu: float) -> float:
    """μ for a release whose noise OpenDP draws: ρ = μ²/2 must be a normal float.

    Refused with a ``ValueError`` naming μ and the rule (not the scale) when μ is below
    :data:`SECURE_MU_MIN`: μ²/2 underflows and OpenDP's map cannot be checked.
    """
    mu = check_positive(mu, "mu")
    if mu < SECURE_MU_MIN:
        raise ValueError(
            f"mu={mu!r}: mu is too small for OpenDP's sampler (secure=True): OpenDP accounts in "
            f"zero-concentrated DP with rho = mu^2/2 = {0.5 * mu * mu!r}, which underflows "
            "(mu^2/2 must be a normal float, so mu >= 2^-510 ≈ 3.0e-154); raise mu"
        )
    return mu
