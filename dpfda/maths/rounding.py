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

__all__ = ["EIGH_CONSTANT", "eigh_rtol", "fit_rtol", "pair_rtol", "product_atol", "psd_root_rtol", "solve_rtol"]

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


EIGH_CONSTANT = 10
"""The constant c of the backward error c·n²·u of a symmetric eigensolver (:func:`eigh_rtol`)."""


def eigh_rtol(n: int) -> float:
    """Backward error of a symmetric eigendecomposition of order ``n``, relative to ‖A‖₂: γ_{c·n²}.

    LAPACK's symmetric eigensolvers (``dsyevd`` behind ``numpy.linalg.eigh``,
    ``dsyevr``, ``dsyev``) return V̂, Λ̂ with A + E = (V̂ + δV)Λ̂(V̂ + δV)ᵀ exactly, V̂ + δV
    orthogonal, ‖E‖₂ ≤ p(n)·u·‖A‖₂ and ‖δV‖₂ ≤ p(n)·u (LAPACK Users' Guide, 3rd ed., §4.7.1,
    where p(n) is "a modestly growing function of n"). The worst case of the Householder
    reduction to tridiagonal form that every one of them starts with is of order n² roundings
    (Higham, §19.3 and Theorem 19.4, γ̃_{cn²} with a small constant c; the tridiagonal solver
    adds O(n)); we take p(n) = c·n² with c = :data:`EIGH_CONSTANT` = 10. So every computed
    eigenvalue is within ``eigh_rtol(n)·‖A‖₂`` of an exact one (Weyl's inequality), and
    ‖V̂ᵀV̂ − I‖₂ ≤ 2·eigh_rtol(n) + eigh_rtol(n)².

    >>> eigh_rtol(2) == gamma(40)
    True
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return gamma(EIGH_CONSTANT * int(n) ** 2)


def fit_rtol(A: ArrayLike, T: int, data_ratio: float = 1.0, multiplier: float | None = None) -> float:
    """Relative error bound of a least-squares fit through the eigendecomposition of ``A = ΦᵀWΦ``.

    The fit θ of a curve x on ``T`` points, A being d × d, unconstrained or in a ball:
    ``multiplier`` is its Lagrange multiplier ν (0: unconstrained; > 0: on the sphere; None:
    either, any ν ≥ 0). ``data_ratio`` is ‖x‖_W/(‖A‖₂^½·‖θ‖) (at most 1 for a curve in the span of
    Φ with W = I; larger where x has a large residual off the span, or where θ is small).
    :class:`dpfda.maths.fitting.BallLeastSquares` computes θ = V·(g/(λ + ν)) with
    g = Vᵀ·(ΦᵀW)x. Against the exact fit of the same x, with M = (A + νI)⁻¹ and
    k = κ₂(A + νI) = (λ_max + ν)/(λ_min + ν) (κ₂(A) when ν is not given):

    * forming A costs γ_{T+1} per entry relative to ``|Φ|ᵀW|Φ|``, whose 2-norm is at most
      d·‖A‖₂; the eigendecomposition adds a backward error e = :func:`eigh_rtol` (d) in norm,
      and V̂ is orthogonal to within 2e (each product with V̂ or V̂ᵀ is off by 2e in norm, 4e in
      all). A backward error η·‖A‖ moves M·b by at most k·η of itself (Higham, Theorem 7.2, first
      order);
    * the products x·(WΦV̂) and z·V̂ᵀ, the divisions by λ + ν and the Newton iteration for ν
      (stopped within 4 ulps of the root, :mod:`dpfda.maths.fitting`) round by γ_{2(T+d)+16} of
      ``|x|ᵀW|Φ||V̂|``, whose norm is at most √d·‖A‖^½·‖x‖_W; through M that is
      √d·γ_{2(T+d)+16}·data_ratio·λ_max/(λ_min + ν) of ‖θ‖;
    * on the sphere ν moves with the data to keep ‖θ‖ = B': a perturbation r of the equations
      moves θ by P·M·r, P = I − Mθθᵀ/(θᵀMθ) an oblique projector of norm at most
      (k + 1)/(2√k) (Kantorovich's inequality); 1 where ν = 0 is known.

    The bound is p·(k·(d·γ_{T+1} + e) + √d·γ_{2(T+d)+16}·max(k, data_ratio·λ_max/(λ_min + ν))) + 4e
    with p that projector's norm, relative to ‖θ‖. Refused (``ValueError``) when it reaches 1/2,
    where first-order bounds no longer hold.

    >>> expected = 2 * gamma(4) + 5 * eigh_rtol(2) + np.sqrt(2) * gamma(26)  # κ = 1, d = 2, T = 3
    >>> bool(np.isclose(fit_rtol(np.eye(2), 3), expected, rtol=gamma(4), atol=0))  # the sum's order
    True
    """
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or not np.all(np.isfinite(A)):
        raise ValueError("A must be a finite square matrix")
    if not isinstance(T, (int, np.integer)) or T < 1:
        raise ValueError(f"T must be a positive integer, got {T!r}")
    if not (np.isfinite(data_ratio) and data_ratio >= 0):
        raise ValueError(f"data_ratio must be finite and >= 0, got {data_ratio!r}")
    if multiplier is not None and not (np.isfinite(multiplier) and multiplier >= 0):
        raise ValueError(f"multiplier must be None or finite and >= 0, got {multiplier!r}")
    d, T = A.shape[0], int(T)
    kappa = float(np.linalg.cond(A))
    top = float(np.linalg.norm(A, 2))
    nu = 0.0 if multiplier is None else float(multiplier)
    low = top / kappa  # λ_min, as the condition number sees it
    k = (top + nu) / (low + nu) if nu > 0 else kappa
    p = 1.0 if multiplier == 0 else (k + 1) / (2 * np.sqrt(k))
    e = eigh_rtol(d)
    data = max(k, float(data_ratio) * top / (low + nu))
    bound = p * (k * (d * gamma(T + 1) + e) + np.sqrt(d) * gamma(2 * (T + d) + 16) * data) + 4 * e
    if not np.isfinite(bound) or bound >= 0.5:
        raise ValueError(f"A is too ill-conditioned (condition number {kappa:.3g}) for a first-order rounding bound")
    return float(bound)


def product_atol(A: ArrayLike, B: ArrayLike) -> np.ndarray:
    """Entrywise bound on the rounding error of the product ``A @ B``: ``γ_k·(|A| @ |B|)``.

    k is the inner dimension. Each entry of a computed product is an inner product of length
    k, and ``|fl(xᵀy) − xᵀy| ≤ γ_k·|x|ᵀ|y|`` whatever the order of the additions and whether
    multiply-adds are fused (Higham, §3.1, eq. (3.5) and Lemma 3.4) — so on every BLAS kernel.
    The bound is relative to ``|A||B|``, not to ``|AB|``: where the terms cancel, the error can be
    far larger than ``u·|AB|``.

    >>> product_atol([[1.0, -1.0]], [[1.0], [1.0]]).item() == 2 * gamma(2)
    True
    """
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    if A.ndim < 1 or B.ndim < 1 or A.shape[-1] != B.shape[-2 if B.ndim > 1 else 0]:
        raise ValueError(f"A and B must be conformable for A @ B, got shapes {A.shape} and {B.shape}")
    return gamma(A.shape[-1]) * (np.abs(A) @ np.abs(B))


def pair_rtol(A: ArrayLike, T: int, n: int) -> float:
    """Relative error bound of FTP's μ at a worst-case pair: two means of n fits through ``A``.

    At the worst-case neighbours (:func:`dpfda.trust.audit.worst_case_pair`) the two datasets
    differ in one curve whose fits are opposite points ±f of the ball, so the means differ by
    Δ = 2f/n, ‖f‖ = B', and μ = ‖Δ‖/σ with σ = 2B'/(nμ). Computed:

    * the n − 1 shared curves have the same fits in both datasets, bit for bit (a curve's map
      depends on that curve alone), and the two differing fits are each within
      ε = :func:`fit_rtol` (A, T) of the exact ones, relative to B': ‖δΔ‖ ≤ 2εB'/n;
    * each mean is rounded once from its exact sum, by γ₄ relative in every coordinate
      (:data:`dpfda.maths.summation.MEAN_ROUNDING`); the means have norm at most B'(1 + ε),
      so the two roundings move Δ by at most 2γ₄B'(1 + ε), a relative n·γ₄(1 + ε);
    * the difference, σ from its formula (a few roundings), the ratio and the norm of the d
      coordinates add γ_{d+10}.

    The bound is ε + n·γ₄·(1 + ε) + γ_{d+10}: n·γ₄ dominates for many curves, ε for an
    ill-conditioned A.

    >>> pair_rtol(np.eye(2), 3, 10) == fit_rtol(np.eye(2), 3) * (1 + 10 * gamma(4)) + 10 * gamma(4) + gamma(12)
    True
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    eps = fit_rtol(A, T)
    d = np.shape(A)[0]
    return eps * (1 + n * gamma(4)) + n * gamma(4) + gamma(d + 10)


def psd_root_rtol(n: int) -> float:
    """Error bound of Φ̂Φ̂ᵀ against a positive semi-definite K (n × n), relative to ‖K‖₂.

    Φ̂ = V̂·√Λ̂·V̂ᵀ is K's symmetric square root from its eigendecomposition. With
    e = :func:`eigh_rtol` (n): V̂Λ̂V̂ᵀ is within e·‖K‖ of K, plus what V̂'s departure from
    orthogonality (2e) does in each of its two factors (4e·‖K‖); the square roots round by u;
    the products V̂√Λ̂·V̂ᵀ and Φ̂Φ̂ᵀ round by γ_n of ``|V̂√Λ̂||V̂ᵀ|`` and ``|Φ̂||Φ̂ᵀ|``, whose norms are at
    most n·√‖K‖ and n·‖K‖ (``‖|M|‖₂ ≤ ‖M‖_F ≤ √n·‖M‖₂``), so 2n·γ_{n+1} and n·γ_n relative. In all
    5e + 3n·γ_{n+1}. A consequence used by the checks: tr(Φ̂Φ̂ᵀ) is within n·psd_root_rtol(n)·‖K‖₂
    ≤ n·psd_root_rtol(n)·tr K of tr K.

    >>> psd_root_rtol(3) == 5 * eigh_rtol(3) + 9 * gamma(4)
    True
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    return 5 * eigh_rtol(int(n)) + 3 * int(n) * gamma(int(n) + 1)
