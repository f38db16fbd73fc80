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

The GDP trade-off curve G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) and the normal cdf Φ are computed by
scipy's ``ndtri`` and ``ndtr`` (no BLAS): :func:`tradeoff_atol` and :func:`ndtr_atol` bound
their rounding from the accuracy that scipy's Cephes code states for them
(:data:`R_NDTRI`, :data:`R_NDTR`), which is measured on its trials, not proven.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .summation import U, gamma

__all__ = ["EIGH_CONSTANT", "R_NDTR", "R_NDTRI", "eigh_rtol", "fit_rtol", "ndtr_atol", "pair_rtol", "product_atol",
           "psd_root_rtol", "solve_rtol", "tradeoff_atol"]

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


R_NDTRI = 7.2e-16
"""Relative error of ``scipy.special.ndtri`` (Φ⁻¹), the peak that Cephes's documentation
reports over its test trials: a measured value, not a proven bound."""

R_NDTR = 5.7e-14
"""Relative error of the smaller tail computed by ``scipy.special.ndtr`` (Φ): Cephes reports
a peak of 3.4e-14 for ndtr on [−13, 0], computed through erfc, whose own reported peak
5.7e-14 is taken. Measured on Cephes's trials, not proven."""


def _norm_pdf(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.square(x) / 2) / np.sqrt(2 * np.pi)


def _ndtr_bound(x: ArrayLike, x_err: ArrayLike, *, tail: float = R_NDTR, rounding: float = U) -> np.ndarray:
    """:func:`ndtr_atol`, each term's constant a keyword (a term is dropped by setting it to 0)."""
    from scipy import special

    x, x_err = np.asarray(x, dtype=float), np.asarray(x_err, dtype=float)
    near = np.maximum(np.abs(x) - x_err, 0.0)
    return tail * special.ndtr(-near) + rounding + _norm_pdf(near) * x_err


def ndtr_atol(x: ArrayLike, x_err: ArrayLike = 0.0) -> np.ndarray:
    """How far ``scipy.special.ndtr(x)`` may be from Φ at any point within ``x_err`` of ``x``.

    The bound is R_NDTR·Φ(−n) + u + φ(n)·x_err with ``n = max(|x| − x_err, 0)``, the end of
    [x − x_err, x + x_err] nearest 0, where both the tail and the slope are largest. Term by term:

    * R_NDTR·Φ(−n): Cephes computes the smaller tail as erfc/2, with the relative error
      :data:`R_NDTR` (measured, not proven); inside ``|x| < √2`` it computes 1/2 + erf/2 instead
      (erf's reported 3.7e-16 and one rounding: below R_NDTR of a tail ≥ 0.07);
    * u: the larger value is 1 minus the smaller tail, one more rounding (at most u);
    * φ(n)·x_err: an argument known to within ``x_err`` moves Φ by at most the largest slope
      φ on that interval, which is at n.

    Parameters
    ----------
    x : array_like
        The argument given to ``ndtr``.
    x_err : array_like, optional
        How far the exact argument may be from ``x`` (0: ``x`` is exact).

    Returns
    -------
    numpy.ndarray
        The absolute error bound, broadcast over ``x`` and ``x_err``.

    Examples
    --------
    >>> float(ndtr_atol(40.0)) == U  # Φ(−40) underflows to 0: only the rounding of 1 − 0 is left
    True
    """
    return _ndtr_bound(x, x_err)


def _tradeoff_bound(a: ArrayLike, mu: ArrayLike, a_err: ArrayLike, *, level: float = U, quantile: float = R_NDTRI,
                    difference: float = U, tail: float = R_NDTR, rounding: float = U) -> np.ndarray:
    """:func:`tradeoff_atol`, each term's constant a keyword (a term is dropped by setting it to 0)."""
    from scipy import special

    a, mu, a_err = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, mu, a_err)))
    if np.any(~np.isfinite(a) | (a < 0) | (a > 1)) or np.any(~np.isfinite(mu) | (mu < 0)):
        raise ValueError("a must be levels in [0, 1] and mu finite numbers >= 0")
    inside = (a > 0) & (a < 1)
    if np.any(~inside & (a_err != 0)) or np.any(~np.isfinite(a_err) | (a_err < 0)):
        raise ValueError("a_err must be finite, >= 0, and 0 at the levels 0 and 1 (where G is exact)")
    p = 1 - a
    dp = a_err + level * p
    tail_level = np.where(inside, np.minimum(p, 1 - p) - dp, 0.5)
    if np.any(tail_level <= 0):
        raise ValueError("a_err (with the rounding of 1 - a) reaches 0 or 1: the bound needs the level inside (0, 1)")
    z = np.where(inside, special.ndtri(np.where(inside, p, 0.5)), 0.0)
    dz = dp / _norm_pdf(special.ndtri(tail_level)) + quantile * np.abs(z) + difference * np.abs(z - mu)
    return np.where(inside, _ndtr_bound(z - mu, dz, tail=tail, rounding=rounding), 0.0)


def tradeoff_atol(a: ArrayLike, mu: ArrayLike, a_err: ArrayLike = 0.0) -> np.ndarray:
    """How far ``dpfda.tradeoff(a, mu)`` = Φ(Φ⁻¹(1 − a) − μ) may be from G_μ at any level within ``a_err`` of ``a``.

    ``tradeoff`` computes p = 1 − a, z = ``ndtri(p)`` and ``ndtr(z − mu)``. Term by term:

    * p rounds by at most u·p, so the exact 1 − a is within dp = a_err + u·p of p;
    * Φ⁻¹'s slope 1/φ(Φ⁻¹(q)) is taken at the end of [p − dp, p + dp] nearest 0 or 1, where it
      is largest (no first-order expansion), so the quantile's argument moves z by at most
      dp/φ(Φ⁻¹(min(p, 1 − p) − dp));
    * ``ndtri`` adds its own :data:`R_NDTRI` times ``|z|`` (measured, not proven);
    * z − μ rounds by at most u times ``|z − μ|``;
    * then :func:`ndtr_atol` at z − μ with the sum of these three as its argument's error.

    At a = 0 and a = 1 (with ``a_err`` 0) G is exact, ``ndtri(1)`` = ∞ and ``ndtri(0)`` = −∞, and
    the bound is 0. On 2,201 levels from 1e-12 to 1 and μ from 0 to 5, scipy's G was within half
    this bound of G computed with 50 digits when the bound was written (tests/test_rounding.py
    checks the bound against 50 digits on such a grid).

    Parameters
    ----------
    a : array_like
        Levels α in [0, 1].
    mu : array_like
        μ ≥ 0.
    a_err : array_like, optional
        How far the exact level may be from ``a`` (≥ 0; 0 at the levels 0 and 1). A level
        that itself comes out of a rounded computation carries that computation's bound here.

    Returns
    -------
    numpy.ndarray
        The absolute error bound, broadcast over ``a``, ``mu`` and ``a_err``.

    Raises
    ------
    ValueError
        A level outside [0, 1], a negative or non-finite μ or ``a_err``, an error at the
        levels 0 or 1, or one that reaches 0 or 1 from inside.

    Examples
    --------
    >>> tradeoff_atol([0.0, 1.0], 1.0)  # exact at the ends
    array([0., 0.])
    """
    return _tradeoff_bound(a, mu, a_err)
