r"""Post-processing of a released coefficient vector: positive-part James–Stein shrinkage.

A function of the release and of public parameters only, so it keeps the release's
μ-GDP guarantee at no extra privacy cost (post-processing). It applies where the noise
on the coefficients is isotropic with a public scale ``sigma``: Fit-Then-Protect's
release in :math:`\mathcal H_m` with an orthonormal basis, whose coefficients carry
noise :math:`\sigma Z`, :math:`Z\sim\mathcal N(0, I_m)`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_float_array, check_positive

__all__ = ["james_stein", "ball_projection"]


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


def ball_projection(coef: ArrayLike, radius: float) -> np.ndarray:
    """Euclidean projection of each row of ``coef`` onto the ball of the given ``radius``."""
    radius = check_positive(radius, "radius")
    x = _rows(coef)
    norm = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return np.where(norm > radius, x * (radius / np.where(norm > 0, norm, 1.0)), x)
