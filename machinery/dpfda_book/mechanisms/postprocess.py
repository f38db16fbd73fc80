r"""Post-processing of a released coefficient vector: positive-part James–Stein shrinkage.

A function of the release and of public parameters only, so it keeps the release's
μ-GDP guarantee at no extra privacy cost (post-processing). It applies where the noise
on the coefficients is isotropic with a public scale ``sigma``: Fit-Then-Protect's
release in :math:`\mathcal H_m` with an orthonormal basis, whose coefficients carry
noise :math:`\sigma Z`, :math:`Z\sim\mathcal N(0, I_m)`.
:func:`james_stein_risk` gives the exact risk of the plain James–Stein estimator there,
an upper bound on the positive-part estimator's.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from dpfda.validation import as_float_array, check_int, check_nonnegative, check_positive

__all__ = ["james_stein", "james_stein_risk", "ball_projection"]


def _rows(coef: ArrayLike) -> np.ndarray:
    x = as_float_array(coef, "coef")
    if x.ndim not in (1, 2):
        raise ValueError(f"coef must have shape (m,) or (r, m), got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("coef must be finite (no NaN or inf)")
    return x


def james_stein(coef: ArrayLike, sigma: float) -> np.ndarray:
    """Positive-part James–Stein shrinkage of ``coef`` towards zero.

    ``coef``: one release (shape ``(m,)``) or a stack of releases (shape ``(r, m)``), with
    ``m >= 3`` (below three coordinates the estimator does not dominate the release).
    ``sigma``: the public standard deviation of the isotropic noise on each coordinate.
    Returns ``max(0, 1 - (m - 2) sigma^2 / |coef|^2) * coef`` row by row; a zero row stays zero.
    """
    sigma = check_positive(sigma, "sigma")
    x = _rows(coef)
    m = x.shape[-1]
    if m < 3:
        raise ValueError(f"coef must have at least 3 coordinates for James–Stein shrinkage, got m = {m}")
    sq = np.sum(x * x, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(sq > 0, 1.0 - (m - 2) * sigma**2 / np.where(sq > 0, sq, 1.0), 0.0)
    return np.maximum(factor, 0.0) * x


_POISSON_SUM_MAX = 1e6  # Poisson means above this use the moment expansion


def _inverse_mean(a0: float, lam: float) -> float:
    """E[1/(a0 + 2K)] for K ~ Poisson(lam), a0 > 0."""
    if lam == 0.0:
        return 1.0 / a0
    if lam > _POISSON_SUM_MAX:  # central moments of a0 + 2K up to the fourth; error O(lam^-3)
        a = a0 + 2.0 * lam
        return 1 / a + 4 * lam / a**3 - 8 * lam / a**4 + 16 * (3 * lam**2 + lam) / a**5
    width = 12.0 * math.sqrt(lam) + 30.0  # the Poisson mass beyond is below 1e-30
    k = np.arange(max(0.0, math.floor(lam - width)), math.ceil(lam + width) + 1.0)
    log_pmf = k * math.log(lam) - lam - np.array([math.lgamma(j + 1.0) for j in k])
    return float(np.sum(np.exp(log_pmf) / (a0 + 2.0 * k)))


def james_stein_risk(m: int, sigma: float, norm: float) -> float:
    """Exact mean squared error of the plain James–Stein estimator at a mean of norm ``norm``.

    For ``x = theta + sigma Z`` with ``Z`` standard normal in ``m >= 3`` dimensions and
    ``theta`` of Euclidean norm ``norm``, the estimator ``(1 - (m - 2) sigma^2 / sum(x^2)) x``
    has risk (expected squared Euclidean error)
    ``m sigma^2 - (m - 2)^2 sigma^2 E[1 / (m - 2 + 2K)]``, with ``K`` Poisson of mean
    ``norm^2 / (2 sigma^2)`` (the noncentral chi-square as a Poisson mixture). It is
    ``2 sigma^2`` at ``norm = 0``, rises towards ``m sigma^2`` (the release's own risk) as
    ``norm`` grows, and bounds from above the risk of the positive-part estimator
    :func:`james_stein`, which never does worse than the plain one.
    """
    m = check_int(m, "m", 3)
    sigma = check_positive(sigma, "sigma")
    norm = check_nonnegative(norm, "norm")
    lam = 0.5 * (norm / sigma) ** 2
    if not math.isfinite(lam):
        raise ValueError(f"norm / sigma must be finite, got norm = {norm!r}, sigma = {sigma!r}")
    return float(sigma**2 * (m - (m - 2) ** 2 * _inverse_mean(m - 2.0, lam)))


def ball_projection(coef: ArrayLike, radius: float) -> np.ndarray:
    """Euclidean projection of each row of ``coef`` onto the ball of the given ``radius``."""
    radius = check_positive(radius, "radius")
    x = _rows(coef)
    norm = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return np.where(norm > radius, x * (radius / np.where(norm > 0, norm, 1.0)), x)
