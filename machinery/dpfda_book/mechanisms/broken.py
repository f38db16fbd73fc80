"""Mechanisms broken on purpose: each fails its guarantee in one known way, for the audit to catch.

PTF without the √T of composition (:func:`broken_ptf_no_sqrt_T`), FTP calibrated to the
sup or L² norm on the grid instead of the Cameron–Martin norm (:func:`broken_ftp_grid_norm`),
FTP without the radius constraint (:func:`broken_ftp_no_radius`), FTP whose mean of fits
is computed by cancelling large numbers (:func:`broken_ftp_cancellation`, correct in exact
arithmetic, leaky in floating point), FTP whose fit of one curve depends on the batch it is
computed in (:func:`broken_ftp_batched_fits`, likewise), a ball design whose whitening drops a thin noise
direction through a pseudo-inverse (:func:`broken_design_pinv`), the ellipsoid design with
its rank-d noise added on the grid (:func:`broken_design_rank_deficient`) and any mechanism
with σ × 0.9 (:func:`broken_sigma_too_small`), and a private covariance whose second
moment is calibrated for added or removed records instead of replaced ones
(:func:`broken_covariance_add_remove`).  The audit (:mod:`dpfda.trust.audit`) and its
recomputation (:mod:`dpfda.trust.recompute`) catch every one of them.  They exist for the
audit only, have no secure path and are not exported by ``dpfda``; never release data
with them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpfda.maths.curves import Curves
from dpfda.maths.fitting import BallLeastSquares
from dpfda.maths.spaces import FunctionSpace, GridGeometry, OrthonormalSpace
from dpfda.maths.summation import fixed_point_ball_mean
from dpfda.mechanisms.covariance import SQRT2, CovarianceMechanism, covariance_mechanism
from dpfda.mechanisms.ftp_ptf import (
    ClipToBox,
    FitInBall,
    FTPCalibration,
    Identity,
    Mechanism,
    PTFCalibration,
    WeightedFit,
)
from dpfda.mechanisms.pipelines import fitter, ftp_fit_mean, ptf_clip_bounds, ptf_default_weights
from dpfda.trust.checks import check_grid_space, check_mechanism, setup
from dpfda.validation import check_int, check_positive

from .designs import Design

__all__ = [
    "broken_ptf_no_sqrt_T",
    "grid_norm_factor",
    "broken_ftp_grid_norm",
    "broken_ftp_no_radius",
    "broken_ftp_cancellation",
    "broken_ftp_batched_fits",
    "PinvDesign",
    "broken_design_pinv",
    "broken_design_rank_deficient",
    "broken_sigma_too_small",
    "broken_covariance_add_remove",
]


def _ftp_variant(name: str, geom: GridGeometry, per_curve: Any, calibration: Any, *, mu: float, radius: float,
                 n: int) -> Mechanism:
    """An FTP-like mechanism: ``per_curve``'s mean plus σZ in Cameron–Martin coordinates."""
    return Mechanism(name=name, method="ftp", geometry=geom, radius=radius, mu=mu, dim=geom.dim,
                     per_curve=per_curve, calibration=calibration, post=Identity(), n=n)


@dataclass(frozen=True, eq=False)
class _NoSqrtT(PTFCalibration):
    """BROKEN ON PURPOSE: σ_j = 2c_j/(nμ), each coordinate μ-GDP, the T of them only √T·μ."""

    norm: str = "per coordinate, NOT composed (broken)"

    def sigma(self, n: int, mu: float) -> np.ndarray:
        """2c_j/(nμ) — should be 2c_j√T/(nμ)."""
        return 2.0 * self.clip / (n * mu)

    def secure_noisy(self, centre: np.ndarray, n: int, mu: float, sigma: Any) -> np.ndarray:
        """Not offered: a mechanism broken on purpose is for audits only."""
        raise ValueError("a mechanism broken on purpose has no secure path")


def broken_ptf_no_sqrt_T(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int,
                         clip: ArrayLike | None = None) -> Mechanism:
    """BROKEN ON PURPOSE: PTF with σ_j = 2c_j/(nμ), forgetting the √T of composition.

    Each coordinate is then μ-GDP, and the T of them together only √T·μ-GDP.
    """
    geom, radius, mu, n = setup(grid, space, radius, mu, n)
    c = ptf_clip_bounds(geom, radius, clip).copy()
    c.setflags(write=False)
    w = ptf_default_weights(geom)
    w.setflags(write=False)
    return Mechanism(name="PTF without √T (broken)", method="ptf", geometry=geom, radius=radius,
                     mu=mu, dim=geom.T, per_curve=ClipToBox(c), calibration=_NoSqrtT(c),
                     post=WeightedFit(geom, radius, w), clip=c, n=n)


def grid_norm_factor(geometry: GridGeometry, norm: str) -> float:
    """sup ||f||_norm over the Cameron–Martin unit ball, for a norm of grid values.

    ``"sup"``: ``max_j |f(t_j)| <= ||f||·a_j``, so the factor is max_j a_j.
    ``"l2"``: the grid version of the L²[0,1] norm, sqrt(Σ_j f(t_j)²/T); the
    factor is sqrt(λ_max(ΦᵀΦ)/T).  ``"cm"``: 1.
    """
    if norm == "sup":
        return float(np.max(geometry.eval_norm))
    if norm == "l2":
        return float(np.sqrt(np.linalg.eigvalsh(geometry.Phi.T @ geometry.Phi)[-1] / geometry.T))
    if norm == "cm":
        return 1.0
    raise ValueError(f"norm must be 'sup', 'l2' or 'cm', got {norm!r}")


def broken_ftp_grid_norm(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int,
                         norm: str) -> Mechanism:
    """BROKEN ON PURPOSE (when the factor is < 1): FTP with σ calibrated to a grid norm.

    The summary and the noise σZ are those of Algorithm 1, but σ = Δ_norm/μ,
    where Δ_norm = (2B'/n)·:func:`grid_norm_factor` is the (correct) sensitivity of
    the fitted mean in the sup-norm or the L² norm on the grid.  Theorem 6 asks
    for the Cameron–Martin sensitivity 2B'/n: the pair's true μ is μ/factor.
    """
    geom, radius, mu, n = setup(grid, space, radius, mu, n)
    factor = grid_norm_factor(geom, norm)
    name = f"FTP calibrated to the grid {norm}-norm" + (" (broken)" if factor < 1 else "")
    calibration = FTPCalibration(geom, radius, factor=factor, norm=f"grid {norm}-norm")
    return _ftp_variant(name, geom, FitInBall(geom, radius), calibration, mu=mu, radius=radius, n=n)


def broken_ftp_no_radius(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int) -> Mechanism:
    """BROKEN ON PURPOSE: FTP that fits without the ball constraint, still σ = 2B'/(nμ).

    An unconstrained fit can have any norm, so the sensitivity is unbounded.
    """
    geom, radius, mu, n = setup(grid, space, radius, mu, n)
    return _ftp_variant("FTP without the radius constraint (broken)", geom, _UnconstrainedFits(geom),
                        FTPCalibration(geom, radius), mu=mu, radius=radius, n=n)


@dataclass(frozen=True, eq=False)
class _UnconstrainedFits:
    """BROKEN ON PURPOSE: the mean of unconstrained least-squares fits (no ball: unbounded)."""

    geometry: GridGeometry

    def __call__(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(mean of the unconstrained fits, no curve moved)."""
        X = np.asarray(X, dtype=float)
        return self.mean(X), np.zeros(X.shape[:-1], dtype=bool)

    def mean(self, X: ArrayLike, *, exact: bool = True) -> np.ndarray:
        """The mean of the unconstrained fits."""
        return fitter(self.geometry).unconstrained(np.asarray(X, dtype=float)).mean(axis=-2)


def broken_ftp_cancellation(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int) -> Mechanism:
    """BROKEN ON PURPOSE (in floating point only): FTP whose mean of fits cancels large numbers.

    Algorithm 1 with the right σ = 2B'/(nμ), but the mean of the constrained
    fits is computed through the curves themselves: the fit is linear inside
    the ball, so the mean of the fits is the fit of Σ_i x_i + Σ (fitted curve −
    x_i)/n, the second sum over the curves outside the ball.  In exact
    arithmetic that is the same number.  In floating point, a curve of size s
    is added and taken away again, which leaves an error of about s·2^-52 —
    far more than 2B'/n once s is large, so two neighbouring datasets give
    means that differ by much more than the sensitivity.

    The two sums are explicit and ordered (the curves in halves, then the
    corrections curve after curve, each step one correctly rounded
    element-wise addition, no BLAS product), so a dataset whose values have
    the same bits gives the same leak on every CPU where the space's own
    numbers have the same bits too: a polynomial space's do; a kernel's come
    from numpy's ``exp``, whose last bit depends on the CPU's vector
    instructions, and the leak follows it.
    """
    geom, radius, mu, n = setup(grid, space, radius, mu, n)
    return _ftp_variant("FTP with a cancelling mean (broken)", geom, _CancellingFits(geom, radius),
                        FTPCalibration(geom, radius), mu=mu, radius=radius, n=n)


def _halving_sum(terms: list[np.ndarray]) -> np.ndarray:
    """Σ terms in a fixed order: the sum of the first half plus the sum of the second, recursively."""
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return _halving_sum(terms[:half]) + _halving_sum(terms[half:])


@dataclass(frozen=True, eq=False)
class _CancellingFits:
    """BROKEN ON PURPOSE (floating point): the mean of fits through the curves themselves."""

    geometry: GridGeometry
    radius: float

    def __call__(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(the cancelling mean of the constrained fits, which fits hit the ball)."""
        X = np.asarray(X, dtype=float)
        solver = fitter(self.geometry)
        fit = solver.solve(X, self.radius)  # each curve's constrained fit, of norm <= B'
        fitted = self.geometry.values(fit.coef)  # its grid values, bounded
        with np.errstate(invalid="ignore", over="ignore"):
            # Σ_i x_i, every curve as large as the data, in halves (as a blocked product sums) ...
            total = _halving_sum([X[..., i, :] for i in range(X.shape[-2])])
            # ... then + (fitted - x_i), curve after curve, for the curves outside the ball
            for i in range(X.shape[-2]):
                correction = fitted[..., i, :] - X[..., i, :]
                total = total + np.where(fit.active[..., i, None], correction, 0.0)
            # the fit is linear inside the ball: the fit of the mean curve is the mean of the fits
            return solver.unconstrained(total / X.shape[-2]), fit.active

    def mean(self, X: ArrayLike, *, exact: bool = True) -> np.ndarray:
        """The cancelling mean alone."""
        return self(X)[0]


class _BatchedSolver(BallLeastSquares):
    """BROKEN ON PURPOSE: the ball fit with a row's coordinates rounded as its batch decides.

    Everything as :class:`~dpfda.maths.fitting.BallLeastSquares` except Vᵀ ΦᵀW x: a product
    of one row adds its T terms one after the other (as BLAS's ``dgemv`` does), a product of
    several rows adds them in pairs, then pairs of pairs (a blocked ``dgemm``), and the rows
    redone after scaling form a product of their own.  This is the batching of dpfda's fits
    before they were made per record, with the two orders written out in element-wise
    operations: old dpfda used BLAS itself, whose orders depend on the processor's kernels
    (its constructions leaked up to 2μ under OpenBLAS's Haswell kernels and not at all under
    its Sandybridge kernels), while these two orders differ, and leak, on every processor.
    """

    def _coordinates(self, X2: np.ndarray) -> np.ndarray:
        if X2.shape[0] <= 1:
            return super()._coordinates(X2)  # one row: the terms one after the other
        terms = [self._P_cols[t] * X2[:, t] for t in range(X2.shape[1])]  # (d, N) each
        while len(terms) > 1:  # several rows: pairwise
            terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i]
                     for i in range(0, len(terms), 2)]
        return terms[0]


@dataclass(frozen=True, eq=False)
class _BatchedFits:
    """BROKEN ON PURPOSE: FTP's mean of fits through ``_BatchedSolver`` (batch-dependent bits)."""

    geometry: GridGeometry
    radius: float

    def __call__(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(the mean of the fits, which fits hit the ball), the fits computed in one batch."""
        return _BatchedSolver(self.geometry.Phi).solve_mean(np.asarray(X, dtype=float), self.radius, exact=exact)

    def mean(self, X: ArrayLike, *, exact: bool = True) -> np.ndarray:
        """The mean of the batched fits."""
        return self(X, exact=exact)[0]

    def curves_mean(self, curves: Curves) -> np.ndarray:
        """Curves on their own points: the subjects on one point set fitted together, in one product."""
        space = self.geometry.space
        assert isinstance(space, OrthonormalSpace)  # checked by the constructor
        subjects = curves.subjects()
        groups: dict = {}
        for i, (t, _) in enumerate(subjects):
            groups.setdefault(t.tobytes(), []).append(i)
        fits = np.zeros((len(subjects), space.m))
        for rows in groups.values():
            t = subjects[rows[0]][0]
            Phi = space.basis(t)
            if t.size < space.m or np.linalg.eigvalsh(Phi.T @ Phi)[0] <= 1e-12 * max(
                    np.linalg.eigvalsh(Phi.T @ Phi)[-1], 1.0):
                continue
            fits[rows] = _BatchedSolver(Phi).solve(np.stack([subjects[i][1] for i in rows]), self.radius).coef
        return fixed_point_ball_mean(fits, np.eye(space.m), self.radius)


def broken_ftp_batched_fits(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *,
                            n: int) -> Mechanism:
    """BROKEN ON PURPOSE (in floating point only): FTP whose fit of a curve depends on the other curves.

    Algorithm 1 with the right σ = 2B'/(nμ) and the exact mean, but each curve's fit is
    computed inside a product over its batch: all the curves, then the curves whose
    product overflowed (or came out near the subnormal range) again, together, after
    scaling; for curves on their own points (an orthonormal space), the subjects on one
    point set in one product.  A product of one row is summed in one order, of several
    rows in another (``_BatchedSolver``).  In exact arithmetic nothing changes.  In
    floating point the bits of a row depend on the product it is in, and a curve off the
    span of Φ with huge values has a fit made of rounding error, scaled to the sphere
    ||θ|| = B': whether another record is in its batch turns that fit by up to 2B', so a
    pair of neighbours can be up to 2μ apart (3μ when one subject changes the groups of
    two others).  This was dpfda's FTP before the fits were made per record, with BLAS's
    processor-dependent orders replaced by two fixed ones, so that it leaks everywhere.
    :func:`dpfda.trust.audit.batch_shape_pair` and :func:`~dpfda.trust.audit.grouping_pair`
    build the neighbours that show it.
    """
    geom, radius, mu, n = setup(grid, space, radius, mu, n)
    return _ftp_variant("FTP with batch-dependent fits (broken)", geom, _BatchedFits(geom, radius),
                        FTPCalibration(geom, radius), mu=mu, radius=radius, n=n)


class PinvDesign(Design):
    """BROKEN ON PURPOSE: a ball design whose extent is r·||pinv(L)||₂ (:func:`broken_design_pinv`)."""

    def _cached_extent(self) -> tuple[float, dict[str, np.ndarray | None]]:
        # numpy's pinv cuts off singular values below ~1e-15 of the largest, so a thin
        # noise direction is dropped silently.
        Lp = np.linalg.pinv(self.L)
        _, s, Vt = np.linalg.svd(Lp)
        assert self.ball_radius is not None
        return self.ball_radius * float(s[0]), {"x": self.ball_radius * Vt[0]}

    def rounding_excess(self, n: int) -> float:
        """0: the old calibration bounded no rounding (the real bound would refuse this design)."""
        return 0.0


def broken_design_pinv(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int,
                       noise: str | ArrayLike,
                       ball_radius: float | None = None) -> tuple[Mechanism, PinvDesign]:
    """BROKEN ON PURPOSE: a ball design whitened by a pseudo-inverse.

    ``dpfda_book.mechanisms.designs.Design(grid, space, radius, region="ball", noise=noise)`` with one change: the
    extent R = r·||L⁺||₂ is computed with ``numpy.linalg.pinv``, which silently
    drops singular values below about 1e-15 of the largest.  With a noise shape
    that has a thin direction (a grid point of tiny variance), R misses it, σ is
    far too small there, and the release names a person's value in that
    coordinate.  Returns ``(mechanism, design)``; the mechanism's releases publish
    the true noise factor L, which the audit solves itself.
    """
    check_grid_space(grid, space, "broken_design_pinv")
    des = PinvDesign(grid, space, radius, region="ball", noise=noise, ball_radius=ball_radius)
    mech = des.mechanism(n, mu)
    return replace(mech, name=f"ball design whitened by a pseudo-inverse (broken), {des.noise} noise"), des


@dataclass(frozen=True, eq=False)
class _GridMeansOfFits:
    """BROKEN ON PURPOSE: the mean of fits mapped to the grid before the noise, fl(θ̄Φᵀ) (T)."""

    design: Design

    def __call__(self, X: np.ndarray, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(fl(θ̄Φᵀ) (…, T), which fits hit the ball)."""
        mean_coef, active = ftp_fit_mean(X, self.design.geometry, self.design.radius, exact=exact)
        return mean_coef @ self.design.geometry.Phi.T, active

    def mean(self, X: np.ndarray, *, exact: bool = True) -> np.ndarray:
        """fl(θ̄Φᵀ) alone."""
        return self(X, exact=exact)[0]


@dataclass(frozen=True, eq=False)
class _GridNoiseCalibration:
    """σ = 2B'/(nμ) (R = B' for the ellipsoid with FTP's shape), no secure path."""

    design: Design
    norm: str = "noise metric of a rank-d factor on the grid (broken)"

    def sensitivity(self, n: int) -> float:
        """2B'/n."""
        return 2.0 * self.design.radius / n

    def sigma(self, n: int, mu: float) -> float:
        """The design's σ."""
        return self.design.sigma(n, mu)

    def secure_noisy(self, centre: np.ndarray, n: int, mu: float, sigma: Any) -> np.ndarray:
        """Not offered: a mechanism broken on purpose is for audits only."""
        raise ValueError("a mechanism broken on purpose has no secure path")


@dataclass(frozen=True, eq=False, repr=False)
class _RankDeficientMechanism(Mechanism):
    """BROKEN ON PURPOSE: noise σΦZ of rank d added to T grid means (the rule it breaks: full rank)."""

    def __post_init__(self) -> None:  # the square-factor rule of Mechanism is what this one violates
        pass

    @property
    def noise_dim(self) -> int:
        """d normals for T coordinates."""
        assert self.noise_factor is not None  # built with Φ by broken_design_rank_deficient
        return int(self.noise_factor.shape[1])


def broken_design_rank_deficient(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *,
                                 n: int | None = None) -> Mechanism:
    """BROKEN ON PURPOSE: the ellipsoid design with FTP's noise shape added on the grid.

    ``Design(grid, space, radius, region="ellipsoid")`` with its noise σΦZ (rank d) added
    to the grid means fl(θ̄Φᵀ) (T) instead of to θ̄: the rounding of the product lies
    outside the span of Φ, gets no noise, and differs between neighbours, so single
    releases projected onto span(Φ)⊥ tell neighbours apart (μ = ∞).
    """
    check_grid_space(grid, space, "broken_design_rank_deficient")
    des = Design(grid, space, radius, region="ellipsoid")
    geom = des.geometry
    return _RankDeficientMechanism(
        name="ellipsoid design with rank-d noise on the grid (broken)", method="design",
        geometry=geom, radius=des.radius, mu=check_positive(mu, "mu"), dim=geom.T,
        per_curve=_GridMeansOfFits(des), calibration=_GridNoiseCalibration(des),
        post=WeightedFit(geom, des.radius, des.weights), noise_factor=geom.Phi,
        n=None if n is None else check_int(n, "n", 1))


def broken_sigma_too_small(mechanism: Mechanism, factor: float = 0.9) -> Mechanism:
    """BROKEN ON PURPOSE: ``mechanism`` with σ multiplied by ``factor`` (< 1: too little noise).

    Its releases publish the smaller σ they use; the pair's true μ is μ/factor.
    """
    factor = check_positive(factor, "factor")
    mech = check_mechanism(mechanism)
    return replace(mech, name=f"{mech.name} with σ × {factor:g} (broken)",
                   calibration=_ScaledCalibration(mech.calibration, factor))


@dataclass(frozen=True, eq=False)
class _ScaledCalibration:
    """BROKEN ON PURPOSE (factor < 1): another calibration's σ times a factor."""

    inner: Any
    factor: float

    @property
    def norm(self) -> str:
        """The wrapped calibration's norm."""
        return self.inner.norm

    def sensitivity(self, n: int) -> Any:
        """The wrapped sensitivity."""
        return self.inner.sensitivity(n)

    def sigma(self, n: int, mu: float) -> Any:
        """factor·σ."""
        sigma = self.inner.sigma(n, mu)
        return self.factor * np.asarray(sigma) if np.ndim(sigma) else self.factor * sigma

    def secure_noisy(self, centre: np.ndarray, n: int, mu: float, sigma: Any) -> np.ndarray:
        """Not offered: a mechanism broken on purpose is for audits only."""
        raise ValueError("a mechanism broken on purpose has no secure path")


@dataclass(frozen=True, eq=False, repr=False)
class _AddRemoveCovariance(CovarianceMechanism):
    """BROKEN ON PURPOSE: the second moment calibrated to r²/n instead of √2·r²/n."""

    def moment_sensitivity(self, n: int) -> float:
        """r²/n: one record's outer product alone (add/remove), not a replacement's √2·r²/n."""
        return super().moment_sensitivity(n) / SQRT2


def broken_covariance_add_remove(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *,
                                 method: str = "ftp", n: int | None = None) -> CovarianceMechanism:
    """BROKEN ON PURPOSE: a covariance mechanism whose second moment is calibrated for the wrong neighbours.

    The Frobenius norm of one record's outer product is at most r² (B'² for FTP's fits, T
    for PTF's cube), which is the sensitivity when a record is added or removed; when one
    record is *replaced* (the package's neighbours, n public) two records of norm r with
    orthogonal directions move the mean outer product by √2·r²/n.  This variant uses
    r²/n, so the second moment's pair μ is √2·μ_cov on such a pair: the audit's
    recomputation from the definitions catches it.
    """
    good = covariance_mechanism(grid, space, radius, mu, method=method, n=n)
    values = {f.name: getattr(good, f.name) for f in fields(good)}
    values["name"] = f"{good.name} calibrated to r²/n (broken)"
    return _AddRemoveCovariance(**values)
