"""Tolerances derived from rounding-error bounds, not from what one processor happens to give.

A comparison of two floating-point computations of the same exact quantity needs a
tolerance that holds on every processor: BLAS libraries sum in an order that depends on
the CPU's kernels (OpenBLAS's SkylakeX, Haswell, Zen, ...) and on the shapes involved, so
the last bits that one machine shows are no evidence about another's. The bounds here
follow the standard first-order analysis (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., §3.1, Theorems 7.2 and 9.4): a quantity computed through solves
with a matrix ``A`` of 2-norm condition number κ(A), with ``k`` roundings on the way of
each term, has a relative error of at most about κ(A)·γ_k, where γ_k = k·u/(1 − k·u) and
u = 2⁻⁵³ is the unit roundoff.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .summation import gamma

__all__ = ["solve_rtol"]

_STEPS_PER_SIZE = 8
"""Roundings per unit of ``size`` charged by :func:`solve_rtol`: forming A (one inner product of
length T), factorising it (3d), the products with the other factors (T + d), and the square of a
quadratic form (×2) — at most 8(T + d) in all."""


def solve_rtol(A: ArrayLike, size: int) -> float:
    """Relative error bound of a trace or quadratic form computed through solves with ``A``.

    ``size`` is T + d for a T × d design ``Φ`` and ``A = ΦᵀWΦ`` (d × d). The bound is
    κ₂(A)·γ_{8·size}: forming A costs T roundings per entry, so A is known to a relative
    γ_T in norm; Cholesky or LU with partial pivoting is backward stable with a backward
    error of γ_{3d} (Higham, Theorems 9.4 and 10.3); a backward error η in A gives a
    forward error of at most κ(A)·η/(1 − κ(A)·η) in the solution (Theorem 7.2); the
    products with the metric's square root and the noise factor add γ_{T+d}, whose square
    root comes from a symmetric eigendecomposition with eigenvalue errors u·‖A‖ (a relative
    κ·u at the smallest eigenvalue); and a quadratic form doubles the relative error.
    Charging 8·size roundings covers all of these. Refused (``ValueError``) when
    κ(A)·γ_{8·size} ≥ 1/2, where the first-order bound no longer holds.

    >>> solve_rtol(np.eye(3), 6) == gamma(48)
    True
    """
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or not np.all(np.isfinite(A)):
        raise ValueError("A must be a finite square matrix")
    if not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    kappa = float(np.linalg.cond(A))
    bound = kappa * gamma(_STEPS_PER_SIZE * int(size))
    if not np.isfinite(bound) or bound >= 0.5:
        raise ValueError(f"A is too ill-conditioned (condition number {kappa:.3g}) for a first-order rounding bound")
    return bound
