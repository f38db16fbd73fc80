"""Gaussian differential privacy: trade-off functions, calibration, conversions.

* ``tradeoff(alpha, mu)`` — G_μ(α) = Φ(Φ⁻¹(1 - α) - μ) (§2.2).
* ``compose(*mus)`` — μ-GDP composes as sqrt(Σ μ_i²) (§2.2).
* ``gaussian_sigma(sensitivity, mu)`` — σ = Δ₂ / μ (Proposition 4, Theorem 6), from
  :mod:`dpfda.mechanisms.calibration`, the one calibration of every mechanism.
* ``delta_from_mu``, ``epsilon_from_mu``, ``mu_from_epsilon_delta`` — the
  exact (ε, δ) curve of μ-GDP (Dong, Roth and Su, Corollary 2.13):
  δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2), computed in log space.
* ``laplace_scale``, ``laplace_mechanism`` — pure ε-DP (Definition 16,
  Proposition 17, Example 3).
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike

from ..validation import as_float_array, check_positive, check_rng
from .calibration import PARAM_MAX, gaussian_sigma
from .secure import laplace_release

__all__ = [
    "tradeoff",
    "compose",
    "gaussian_sigma",
    "delta_from_mu",
    "epsilon_from_mu",
    "mu_from_epsilon_delta",
    "laplace_scale",
    "laplace_mechanism",
]

def _array(x: ArrayLike, name: str, *, lower: float | None = None, upper: float | None = None,
           lower_open: bool = False, upper_open: bool = False) -> np.ndarray:
    arr = as_float_array(x, name)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    if lower is not None and (np.any(arr <= lower) if lower_open else np.any(arr < lower)):
        raise ValueError(f"{name} must be {'>' if lower_open else '>='} {lower}")
    if upper is not None and (np.any(arr >= upper) if upper_open else np.any(arr > upper)):
        raise ValueError(f"{name} must be {'<' if upper_open else '<='} {upper}")
    return arr


def _scalar_or_array(x: np.ndarray) -> float | np.ndarray:
    return float(x) if np.ndim(x) == 0 else x


@overload
def tradeoff(alpha: float, mu: float) -> float: ...
@overload
def tradeoff(alpha: ArrayLike, mu: ArrayLike) -> float | np.ndarray: ...
def tradeoff(alpha: ArrayLike, mu: ArrayLike) -> float | np.ndarray:
    """The Gaussian trade-off function G_μ(α) = Φ(Φ⁻¹(1 - α) - μ) (Definition 2).

    The smallest type II error of any level-α test of N(0, 1) against N(μ, 1).
    Vectorised over ``alpha`` and ``mu``; ``mu`` >= 0, ``alpha`` in [0, 1].

    Examples
    --------
    >>> round(float(tradeoff(0.05, 1.0)), 4)
    0.7405
    >>> float(tradeoff(0.05, 0.0))  # μ = 0: no test beats guessing
    0.95
    """
    from scipy import special  # here: importing dpfda needs no scipy
    a = _array(alpha, "alpha", lower=0.0, upper=1.0)
    m = _array(mu, "mu", lower=0.0)
    return _scalar_or_array(special.ndtr(special.ndtri(1.0 - a) - m))


def compose(*mus: Any) -> float:
    """μ of the composition of μ_1-, ..., μ_k-GDP mechanisms: sqrt(Σ μ_i²)."""
    if len(mus) == 1 and np.ndim(mus[0]) == 1:
        mus = tuple(mus[0])
    if not mus:
        raise ValueError("compose needs at least one mu")
    vals = [check_positive(m, "mu") for m in mus]
    return float(np.sqrt(np.sum(np.square(vals))))


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(12)


def _log_delta(mu: ArrayLike, eps: ArrayLike) -> np.ndarray:
    """log δ(ε) for μ-GDP, stable for large ε (both terms in log space) and small μ."""
    from scipy import special  # here: importing dpfda needs no scipy
    mu, eps = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(eps, dtype=float))
    a = -eps / mu + mu / 2.0
    b = -eps / mu - mu / 2.0
    la = special.log_ndtr(a)
    # δ = e^{la} - e^{lb} = e^{la} (1 - e^{lb - la}), with lb - la = ε + log Φ(b) - log Φ(a) < 0.
    # For μ < 1 the two logarithms nearly cancel, so log Φ(a) - log Φ(b) = ∫_b^a φ/Φ is
    # taken by Gauss–Legendre quadrature (smooth integrand on an interval of length μ).
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x = (-eps / mu)[..., None] + 0.5 * mu[..., None] * _GL_NODES
        mills = np.exp(-0.5 * x * x - 0.5 * np.log(2.0 * np.pi) - special.log_ndtr(x))
        diff_small = eps - 0.5 * mu * (mills @ _GL_WEIGHTS)
        diff_large = eps + special.log_ndtr(b) - la
        diff = np.minimum(np.where(mu < 1.0, diff_small, diff_large), 0.0)
        out = la + np.log(-np.expm1(diff))
    # Where Φ(a) itself underflows in log space, δ is 0 (not NaN from inf - inf).
    return np.where(la == -np.inf, -np.inf, out)


@overload
def delta_from_mu(mu: float, eps: float) -> float: ...
@overload
def delta_from_mu(mu: ArrayLike, eps: ArrayLike) -> float | np.ndarray: ...
def delta_from_mu(mu: ArrayLike, eps: ArrayLike) -> float | np.ndarray:
    """δ(ε) such that μ-GDP implies (ε, δ)-DP for every ε >= 0 (Dong et al., Cor. 2.13).

    δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2).  Vectorised; computed in log space,
    so the result stays accurate (and positive) far into the tail.
    """
    m = _array(mu, "mu", lower=0.0, lower_open=True)
    e = _array(eps, "eps", lower=0.0)
    return _scalar_or_array(np.exp(_log_delta(m, e)))


@overload
def epsilon_from_mu(mu: float, delta: float) -> float: ...
@overload
def epsilon_from_mu(mu: ArrayLike, delta: ArrayLike) -> float | np.ndarray: ...
def epsilon_from_mu(mu: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """The smallest ε with μ-GDP ⟹ (ε, δ)-DP; 0 when δ >= δ(0) = 2Φ(μ/2) - 1.

    Examples
    --------
    >>> round(float(epsilon_from_mu(1.0, 1e-5)), 3)
    4.377
    >>> round(float(delta_from_mu(1.0, float(epsilon_from_mu(1.0, 1e-5)))), 12)
    1e-05
    """
    from scipy import optimize  # here: importing dpfda needs no scipy
    m = _array(mu, "mu", lower=0.0, lower_open=True)
    d = _array(delta, "delta", lower=0.0, upper=1.0, lower_open=True, upper_open=True)
    m, d = np.broadcast_arrays(m, d)
    out = np.zeros(m.shape)
    for idx in np.ndindex(m.shape):
        mu_i, d_i = float(m[idx]), float(d[idx])
        ld = np.log(d_i)
        if d_i >= np.exp(_log_delta(mu_i, 0.0)):  # δ >= δ(0), compared as delta_from_mu does
            continue
        def f(e: float, mu_i: float = mu_i, ld: float = ld) -> np.ndarray:  # decreasing in e
            return _log_delta(mu_i, e) - ld

        hi = 1.0
        while f(hi) > 0:
            hi *= 2.0
            if not np.isfinite(hi) or not np.isfinite(f(hi)):
                raise ValueError(
                    f"mu={mu_i!r} is too large: the epsilon matching delta={d_i!r} "
                    "(about mu²/2) exceeds the floating-point range"
                )
        out[idx] = optimize.brentq(f, 0.0, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return _scalar_or_array(out)


@overload
def mu_from_epsilon_delta(eps: float, delta: float) -> float: ...
@overload
def mu_from_epsilon_delta(eps: ArrayLike, delta: ArrayLike) -> float | np.ndarray: ...
def mu_from_epsilon_delta(eps: ArrayLike, delta: ArrayLike) -> float | np.ndarray:
    """The largest μ such that μ-GDP implies (ε, δ)-DP (inverse of ``delta_from_mu``)."""
    from scipy import optimize  # here: importing dpfda needs no scipy
    e = _array(eps, "eps", lower=0.0)
    d = _array(delta, "delta", lower=0.0, upper=1.0, lower_open=True, upper_open=True)
    e, d = np.broadcast_arrays(e, d)
    out = np.empty(e.shape)
    for idx in np.ndindex(e.shape):
        e_i, ld = float(e[idx]), np.log(float(d[idx]))
        def f(mu: float, e_i: float = e_i, ld: float = ld) -> np.ndarray:  # increasing in mu
            return _log_delta(mu, e_i) - ld

        hi = 1.0
        while f(hi) < 0:
            hi *= 2.0
        lo = hi / 2.0
        while not f(lo) < 0:
            hi, lo = lo, lo / 2.0  # keep the bracket [lo, 2 lo] narrow
            if lo < 1e-300:
                raise ValueError(
                    f"delta={float(d[idx])!r} is too small: the largest mu for eps={e_i!r} is below 1e-300"
                )
        # Relative tolerance: μ may be tiny (ε = 0 and small δ give μ ≈ 2.5 δ).
        out[idx] = optimize.brentq(f, lo, hi, xtol=lo * 1e-15, rtol=4 * np.finfo(float).eps)
    return _scalar_or_array(out)


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """Scale b = Δ₁/ε of the Laplace mechanism (Proposition 17)."""
    return check_positive(sensitivity, "sensitivity") / check_positive(epsilon, "epsilon")


def laplace_mechanism(value: ArrayLike, sensitivity: float, epsilon: float, rng: np.random.Generator | None, *,
                      secure: bool = False) -> np.ndarray:
    """Release value + Lap(Δ₁/ε) noise in each coordinate: ε-DP (Proposition 17).

    Parameters
    ----------
    value : array
        The non-private value(s); every coordinate gets its own noise.  The
        mechanism's input domain is finite values with ``|value| <= 2^960``
        (``PARAM_MAX``, :mod:`dpfda.mechanisms.calibration`), so that value + noise stays finite; a value
        outside it is refused with ``ValueError``.  As with OpenDP's domains,
        keeping the statistic inside is the caller's part: if it could leave
        the domain for some data set, clip it to a public range first (a
        clipped statistic keeps its sensitivity), or the refusal itself could
        tell neighbours apart.
    sensitivity : float
        ℓ₁ sensitivity Δ₁ of ``value`` (of one vector along the last axis).
    epsilon : float
        The pure-DP budget ε > 0.  The scale Δ₁/ε must be a normal float of at
        most 2^960 (otherwise ``ValueError``, before anything is drawn).
    rng : numpy.random.Generator or None
        Source of the noise when ``secure=False``; not used with ``secure=True``
        (None is accepted then).
    secure : bool, default False
        Draw the noise with OpenDP's Laplace mechanism (:mod:`dpfda.mechanisms.secure`):
        exact sampling on a lattice from a cryptographically secure source, so
        the release is ε-DP in floating point, not only for idealised reals.
        numpy's textbook sampler (``secure=False``) is fine for simulations but
        leaks through the low-order bits of its output (Mironov, 2012; the
        audit chapter shows it).  Needs ``opendp``.

    Notes
    -----
    Floating point.  This function computes no summary: ``value``
    is the caller's, and ``sensitivity`` must bound how far it moves between
    neighbours *as computed in floating point*, rounding included.  For a mean
    of n points of a box ∏[−c_j, c_j] that is what
    :func:`dpfda.maths.summation.fixed_point_mean` gives, with ℓ₁ sensitivity
    Σ_j 2c_j/n·(1 + ε), ε = :func:`dpfda.maths.summation.box_mean_excess` (n, c)
    (a mean summed curve after curve can exceed 2c_j/n by n²·2⁻⁵⁴ of it).  The
    addition of the noise rounds once more: post-processing of the mechanism's
    output.  With ``secure=True`` OpenDP's map is checked against that
    declared sensitivity before any noise is drawn.
    """
    if not isinstance(secure, (bool, np.bool_)):
        raise TypeError(f"secure must be True or False, got {type(secure).__name__}")
    b = laplace_scale(sensitivity, epsilon)
    if not np.isfinite(b) or b < np.finfo(float).tiny or b > PARAM_MAX:
        raise ValueError(
            f"the Laplace scale sensitivity/epsilon must be a normal float of at most 2^960 "
            f"≈ 9.7e288 (so value + noise stays finite), got {b!r} (sensitivity={sensitivity!r}, "
            f"epsilon={epsilon!r}): choose a smaller sensitivity or a larger epsilon"
        )
    value = _array(value, "value")
    if value.size and np.max(np.abs(value)) > PARAM_MAX:
        raise ValueError(
            f"value must lie in [-2^960, 2^960] (≈ ±9.7e288, the mechanism's input domain, so "
            f"value + noise stays finite), got a magnitude of {float(np.max(np.abs(value))):.4g}: "
            "clip the statistic to a public range (or rescale it) before releasing it"
        )
    if secure:
        return laplace_release(value, b, sensitivity=float(sensitivity), epsilon=float(epsilon))
    rng = check_rng(rng)
    return value + rng.laplace(0.0, b, size=value.shape)
