"""Projections of a design's set, exact at every magnitude, and its trust-region maximum.

:func:`project_ball` maps each curve onto a Euclidean ball with its norm computed on a
power-of-two-scaled row (no overflow or underflow for any finite curve);
:func:`trust_region_max` bounds max_{||u|| <= 1} ||g + Gu|| through its convex dual, the
step of a box-with-ellipsoid extent (:mod:`dpfda_book.mechanisms.whitening`), over the sign
vectors of :func:`sign_vectors`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpfda.mechanisms.pipelines import check_radius
from dpfda.validation import as_float_array

__all__ = ["MAX_ENUMERATION_T", "project_ball", "robust_norm", "sign_vectors", "trust_region_max"]

_EPS = float(np.finfo(float).eps)

MAX_ENUMERATION_T = 20
"""Largest grid for which a sensitivity is computed by enumerating sign vectors (2^(T−1))."""


def robust_norm(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scaled rows, exponents e, norms of the scaled rows): X = scaled·2^e, entries <= 1.

    Dividing a row by a power of two is exact, so the norm of any finite row is
    computed without overflow; zero rows get e = 0.  The squares are added in a fixed
    order, element-wise row by row (:func:`~dpfda.maths.fitting.row_norms`'s sum), so a
    row's norm does not depend on the other rows: the projection onto a ball is a map of
    each curve alone, bit for bit.
    """
    X = np.asarray(X, dtype=float)
    top = np.max(np.abs(X), axis=-1)
    _, e = np.frexp(top)
    e = np.asarray(e, dtype=np.int64)
    U = np.ldexp(X, -e[..., None])
    k = U.shape[-1]
    cols = np.ascontiguousarray(U.reshape(-1, k).T)  # (k, rows): one column per row of X
    ss = cols[0] * cols[0]
    for c in cols[1:]:
        ss += c * c
    return U, e, np.sqrt(ss).reshape(U.shape[:-1])


def project_ball(X: ArrayLike, radius: float) -> np.ndarray:
    """Euclidean projection of each row of ``X`` (…, T) onto the ball ||x||₂ <= radius.

    Rows inside are returned unchanged; the others become radius·x/||x||, with
    norm at most ``radius`` for every finite row, however large or small (the
    row is divided by a power of two before its norm is taken).
    """
    radius = check_radius(radius)
    X = as_float_array(X, "X")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or inf; every value must be a finite number")
    U, e, norm = robust_norm(X)
    with np.errstate(over="ignore", under="ignore"):
        bound = np.ldexp(radius, -e)  # the radius in the row's units (inf: far inside)
    out = X.copy()
    active = norm > bound
    if np.any(active):
        y = radius * (U[active] / norm[active][:, None])
        _, ey, ny = robust_norm(y)
        # Four ulps inside: the norm is <= radius whichever way it is rounded.
        # remove the last rounding: exactly feasible
        y *= (np.minimum(1.0, radius / np.ldexp(ny, ey)) * (1.0 - 4 * np.finfo(float).eps))[:, None]
        out[active] = y
    return out


def trust_region_max(g: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """max over ||u|| <= 1 of ||g_s + G u||² for each row g_s of ``g`` (N, k); G (k, d).

    Inputs are expected on a unit scale (the caller divides by a power of two).
    Through the convex dual (S-lemma): for every η >= α_max(GᵀG) = ||G||₂²,
    ||g + Gu||² <= ||g||² + η + bᵀ(ηI − GᵀG)⁻¹b with b = Gᵀg, with equality
    at the minimising η.  The bracket starts at ||G||₂²·(1 + 8d·2⁻⁵²)² (the
    largest singular value from a backward-stable SVD, raised by its error
    bound), so every η tried is a valid dual point; the dual is minimised by
    bisection on its derivative 1 − Σ β_k²/(η − α_k)² and the value is taken at
    the upper end of the final bracket, so it is never below the true maximum
    (up to the rounding of the eigendecomposition, relative O(d·2⁻⁵²), which the
    caller's safety factor covers).  Returns (values (N,), u (N, d)): the
    maximisers (hard case included), for worst-case neighbours.
    """
    d = G.shape[1]
    A = G.T @ G
    alpha, V = np.linalg.eigh((A + A.T) / 2.0)
    smax = float(np.linalg.svd(G, compute_uv=False)[0]) if G.size else 0.0
    amax = (smax * (1.0 + 8 * d * _EPS)) ** 2
    alpha = np.clip(alpha, 0.0, amax)
    beta = (g @ G) @ V  # (N, d)
    b2 = beta * beta
    bnorm = np.sqrt(b2.sum(axis=-1))
    lo = np.full(g.shape[0], amax)
    hi = amax + bnorm + 4 * _EPS * amax + 1e-300
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            psi = np.sum(np.where(b2 > 0, b2 / (mid[:, None] - alpha) ** 2, 0.0), axis=-1)
        right = ~(psi > 1.0)  # derivative >= 0: the minimiser is at or left of mid
        hi = np.where(right, mid, hi)
        lo = np.where(right, lo, mid)
        if np.all(hi - lo <= 4 * _EPS * np.maximum(hi, 1e-300)):
            break
    eta = hi
    gap = eta[:, None] - alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(b2 > 0, b2 / gap, 0.0)
        coef = np.where(b2 > 0, beta / gap, 0.0)
    values = np.einsum("ij,ij->i", g, g) + eta + terms.sum(axis=-1)
    unorm2 = np.sum(coef * coef, axis=-1)
    fill = np.sqrt(np.clip(1.0 - unorm2, 0.0, None))  # the hard case: fill the top eigenvector
    coef[:, -1] += np.where(unorm2 < 1.0, fill, 0.0) * np.where(beta[:, -1] >= 0, 1.0, -1.0)
    u = coef @ V.T
    u /= np.maximum(np.linalg.norm(u, axis=-1, keepdims=True), 1e-300)
    return values, u


def sign_vectors(T: int) -> np.ndarray:
    """The 2^(T−1) sign vectors with s_1 = +1 (C is symmetric, so ±s give the same value)."""
    if T > MAX_ENUMERATION_T:
        raise ValueError(
            f"the exact sensitivity of this set enumerates 2^(T-1) sign vectors; T={T} is above "
            f"{MAX_ENUMERATION_T}: use a diagonal noise shape with the box, or the ball or ellipsoid"
        )
    bits = (np.arange(2 ** (T - 1))[:, None] >> np.arange(T - 1)) & 1
    return np.hstack([np.ones((bits.shape[0], 1)), 1.0 - 2.0 * bits])

