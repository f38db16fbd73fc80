"""Empirical audits of the GDP guarantee of both pipelines (Theorem 6, Proposition 9).

μ-GDP (Definition 2) is a statement about hypothesis tests: for neighbouring
datasets X0 ~ X1, every test of "the release came from X0" against "from X1"
has type II error at least G_μ(type I error).  For a threshold test on a score
with false-positive rate FPR and false-negative rate FNR that reads

    Φ⁻¹(1 - FPR) - Φ⁻¹(FNR) <= μ.

An audit draws many releases from each dataset, scores them, counts errors at a
set of thresholds and turns the counts into Clopper–Pearson upper bounds
FPR_ub, FNR_ub.  Because Φ⁻¹(1 - a) - Φ⁻¹(b) decreases in both a and b,

    μ_lb = max over thresholds of Φ⁻¹(1 - FPR_ub) - Φ⁻¹(FNR_ub)

is below the mechanism's true μ whenever every upper bound holds.  Each bound
is taken at level α/(2k) for k thresholds (Bonferroni), so μ_lb <= μ_true with
probability at least 1 - α.  The thresholds are quantiles of scores from one
half of the draws; the counts come from the other half, so the thresholds are
fixed before the evaluation data are seen (the construction of jax_privacy's
``CanaryScoreAuditor`` and of tight auditing, Nasr et al. 2023).

Two scores:

* ``"lr"`` — the Neyman–Pearson statistic of the proof of Theorem 6: with
  summaries S0 = S(X0), S1 = S(X1), d = S1 - S0 and noise N(0, diag(σ²)) in the
  audited coordinates, U = ⟨y - S0, d/σ²⟩ / ||d/σ||, which is N(0, 1) under X0
  and N(||d/σ||, 1) under X1.  FTP is audited in its Cameron–Martin coordinates
  (coefficients for H_m, β-coordinates for an RKHS); PTF in the coordinates of
  the noisy means x̃ (Proposition 9 composes T coordinate releases and the fit
  is post-processing, so x̃ is where the guarantee is tight).
* ``"blackbox"`` — knows neither the noise law nor the summaries: it sees only
  the released function on the grid, learns a linear discriminant (difference
  of means, whitened by the pooled covariance) from the calibration half and
  projects the evaluation half on it.

Worst-case neighbours (:func:`worst_case_pair`) attain the sensitivities of
both pipelines, and mechanisms *broken on purpose* — PTF without the √T of
composition (:func:`broken_ptf_no_sqrt_T`), FTP calibrated to the sup or L²
norm on the grid instead of the Cameron–Martin norm (:func:`broken_ftp_grid_norm`),
FTP without the radius constraint (:func:`broken_ftp_no_radius`), FTP whose
mean of fits is computed by cancelling large numbers (:func:`broken_ftp_cancellation`,
correct in exact arithmetic, leaky in floating point), a ball design whose
whitening drops a thin noise direction through a pseudo-inverse
(:func:`broken_design_pinv`) — show that the audit catches miscalibration.

The privacy checks recompute what they audit (:func:`recompute`): the neighbours'
summaries from the curves by the audit's own fit, clip and average in 50-digit or
exact rational arithmetic (:func:`audit_summary`), σ from the public parameters and
the paper's formulas (:func:`formula_sigma`, compared with the published
``noise_scale``), every array a release carries checked as post-processing of its
Gaussian output, and any part of that output outside the noise's range found by an
exact rational span test with no tolerance (μ = ∞ there; the rank-deficient design
:func:`broken_design_rank_deficient` and σ × 0.9, :func:`broken_sigma_too_small`, are
caught so).  :func:`pair_mu` and the ``"lr"`` score use those summaries and solve the
noise law with :class:`NoiseLaw` — exact power-of-two scaling,
Householder QR and a condition check that raises instead of cutting off — and
:func:`worst_case_pair` and :func:`probe_pairs` build neighbours from the
definitions (B'·a_j, the published noise's thinnest direction), not from the
mechanisms' calibration code.  They exist for the audit only and are not
exported by ``dpfda``; never release data with them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import special

from .._validation import as_float_array, check_int, check_positive, check_rng
from ..maths.spaces import FunctionSpace, GridGeometry
from ..mechanisms import mechanism as mechanisms
from ..mechanisms.designs import Design, check_grid_space
from ..mechanisms.mechanism import (
    ClipToBox,
    FitInBall,
    FTPCalibration,
    Identity,
    Mechanism,
    PTFCalibration,
    WeightedFit,
)
from ..mechanisms.pipelines import check_radius, fitter, ftp_fit_mean, ptf_clip_bounds, ptf_default_weights
from ..simulation.engine import repeat_mechanism, repeated

__all__ = [
    "AuditResult",
    "audit",
    "broken_ftp_cancellation",
    "broken_ftp_grid_norm",
    "broken_design_pinv",
    "broken_design_rank_deficient",
    "broken_sigma_too_small",
    "audit_summary",
    "formula_sigma",
    "recompute",
    "Recomputation",
    "broken_ftp_no_radius",
    "broken_ptf_no_sqrt_T",
    "clopper_pearson",
    "empirical_tradeoff",
    "ftp_mechanism",
    "grid_norm_factor",
    "mu_lower_bound",
    "NoiseLaw",
    "PinvDesign",
    "pair_mu",
    "probe_pairs",
    "published_law",
    "ptf_mechanism",
    "worst_case_pair",
]


# ---------------------------------------------------------------------------
# Confidence bounds and the μ lower bound
# ---------------------------------------------------------------------------


def clopper_pearson(k, n, alpha):
    """One-sided Clopper–Pearson bounds (lower, upper) for a binomial proportion.

    Each bound alone holds with probability at least 1 - ``alpha``:
    P(p >= lower) >= 1 - alpha and P(p <= upper) >= 1 - alpha.
    """
    k = np.asarray(k)
    n = check_int(n, "n", 1)
    alpha = check_positive(alpha, "alpha")
    if alpha >= 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("counts k must lie in [0, n]")
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, special.betaincinv(k, n - k + 1, alpha), 0.0)
        upper = np.where(k < n, special.betaincinv(k + 1, n - k, 1.0 - alpha), 1.0)
    return lower, upper


def empirical_tradeoff(scores0, scores1):
    """The empirical trade-off curve of threshold tests "score > t ⇒ X1".

    Returns ``(fpr, fnr)`` over every distinct threshold (plus ±∞), with fpr
    decreasing; plot ``fnr`` against ``fpr`` beside ``dpfda.tradeoff(fpr, mu)``.
    """
    s0 = np.sort(_scores(scores0, "scores0"))
    s1 = np.sort(_scores(scores1, "scores1"))
    t = np.concatenate([[-np.inf], np.unique(np.concatenate([s0, s1]))])
    fpr = 1.0 - np.searchsorted(s0, t, side="right") / s0.size
    fnr = np.searchsorted(s1, t, side="right") / s1.size
    return fpr, fnr


@dataclass(frozen=True)
class AuditResult:
    """Counts, confidence bounds and the μ lower bound of an audit.

    Per-threshold arrays (length k) describe the tests "score > threshold ⇒ X1"
    on the evaluation draws; ``fpr_upper``/``fnr_upper`` (and the ``_lower``
    bounds, for plotting) are Clopper–Pearson bounds at level α/(2k), so all of
    them hold together with probability at least 1 - α.
    """

    thresholds: np.ndarray
    fpr: np.ndarray
    fnr: np.ndarray
    fpr_lower: np.ndarray
    fpr_upper: np.ndarray
    fnr_lower: np.ndarray
    fnr_upper: np.ndarray
    mu_lower: float
    mu_point: float
    best: int
    alpha: float
    scores0: np.ndarray = field(repr=False)
    scores1: np.ndarray = field(repr=False)
    draws: int | None = None
    statistic: str | None = None
    mechanism: str | None = None
    mu_claimed: float | None = None
    mu_pair: float | None = None

    @property
    def violation(self) -> bool:
        """Whether the audit refutes the claimed μ (μ_lb > μ) at confidence 1 - α."""
        if self.mu_claimed is None:
            raise ValueError("this result has no claimed mu to compare with")
        return bool(self.mu_lower > self.mu_claimed)

    def curve(self):
        """(fpr, fnr) of every threshold on the evaluation scores (for plots)."""
        return empirical_tradeoff(self.scores0, self.scores1)


def _scores(s, name):
    arr = as_float_array(s, name)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"{name} must be a non-empty one-dimensional array of scores")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def mu_lower_bound(scores0, scores1, thresholds, *, alpha: float = 0.05) -> AuditResult:
    """μ lower bound from scores of releases on X0 and X1 at fixed thresholds.

    The thresholds must not depend on these scores (choose them on other draws,
    or fix them in advance).  With k thresholds every Clopper–Pearson bound is
    taken at level α/(2k), so μ_lb = max_t Φ⁻¹(1 - FPR_ub) - Φ⁻¹(FNR_ub) (floored
    at 0) is a (1 - α) lower confidence bound on the μ of any GDP guarantee the
    mechanism satisfies.  ``mu_point`` is the plug-in value at the maximising
    threshold.
    """
    s0 = _scores(scores0, "scores0")
    s1 = _scores(scores1, "scores1")
    t = as_float_array(thresholds, "thresholds")
    if t.ndim != 1 or t.size < 1 or not np.all(np.isfinite(t)):
        raise ValueError("thresholds must be a non-empty one-dimensional array of finite numbers")
    alpha = check_positive(alpha, "alpha")
    if alpha >= 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    t = np.unique(t)
    level = alpha / (2 * t.size)
    fp = s0.size - np.searchsorted(np.sort(s0), t, side="right")  # s0 > t
    fn = np.searchsorted(np.sort(s1), t, side="right")  # s1 <= t
    fpr_lo, fpr_up = clopper_pearson(fp, s0.size, level)
    fnr_lo, fnr_up = clopper_pearson(fn, s1.size, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = special.ndtri(1.0 - fpr_up) - special.ndtri(fnr_up)
    bound = np.where(np.isnan(bound), -np.inf, bound)
    best = int(np.argmax(bound))
    fpr, fnr = fp / s0.size, fn / s1.size
    with np.errstate(divide="ignore"):
        point = float(special.ndtri(1.0 - fpr[best]) - special.ndtri(fnr[best]))
    return AuditResult(thresholds=t, fpr=fpr, fnr=fnr, fpr_lower=fpr_lo, fpr_upper=fpr_up,
                       fnr_lower=fnr_lo, fnr_upper=fnr_up,
                       mu_lower=float(max(bound[best], 0.0)), mu_point=point, best=best,
                       alpha=alpha, scores0=s0, scores1=s1)


# ---------------------------------------------------------------------------
# Mechanisms as the auditor sees them
# ---------------------------------------------------------------------------


def _geometry(grid, space):
    if not isinstance(space, FunctionSpace):
        raise TypeError(
            f"space must be a FunctionSpace (a LegendreSpace or KernelSpace), got {type(space).__name__}"
        )
    return space.at(grid)


def _setup(grid, space, radius, mu, n):
    """The geometry and the checked (radius, mu, n) of a mechanism on ``n`` curves."""
    geom = _geometry(grid, space)
    return geom, check_radius(radius), check_positive(mu, "mu"), check_int(n, "n", 1)


def ftp_mechanism(grid, space, radius, mu, *, n, secure=False) -> Mechanism:
    """FTP (Algorithm 1) on ``n`` curves, audited in Cameron–Martin coordinates (Theorem 6).

    :func:`dpfda.ftp_mechanism` with the number of curves fixed: an audit
    on datasets of another size is refused.
    """
    return mechanisms.ftp_mechanism(grid, space, radius, mu, n=check_int(n, "n", 1), secure=secure)


def ptf_mechanism(grid, space, radius, mu, *, n, clip=None, weights=None, secure=False) -> Mechanism:
    """PTF (Algorithm 2) on ``n`` curves, audited on the noisy means x̃ (Proposition 9).

    :func:`dpfda.ptf_mechanism` with the number of curves fixed.
    """
    return mechanisms.ptf_mechanism(grid, space, radius, mu, clip=clip, weights=weights,
                                    n=check_int(n, "n", 1), secure=secure)


def _ftp_variant(name, geom, per_curve, calibration, *, mu, radius, n) -> Mechanism:
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

    def secure_noisy(self, centre, n, mu, sigma):
        """Not offered: a mechanism broken on purpose is for audits only."""
        raise ValueError("a mechanism broken on purpose has no secure path")


def broken_ptf_no_sqrt_T(grid, space, radius, mu, *, n, clip=None) -> Mechanism:
    """BROKEN ON PURPOSE: PTF with σ_j = 2c_j/(nμ), forgetting the √T of composition.

    Each coordinate is then μ-GDP, and the T of them together only √T·μ-GDP.
    """
    geom, radius, mu, n = _setup(grid, space, radius, mu, n)
    c = ptf_clip_bounds(geom, radius, clip).copy()
    c.setflags(write=False)
    w = ptf_default_weights(geom)
    w.setflags(write=False)
    return Mechanism(name="PTF without √T (broken)", method="ptf", geometry=geom, radius=radius,
                     mu=mu, dim=geom.T, per_curve=ClipToBox(c), calibration=_NoSqrtT(c),
                     post=WeightedFit(geom, radius, w), clip=c, n=n)


def grid_norm_factor(geometry, norm: str) -> float:
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


def broken_ftp_grid_norm(grid, space, radius, mu, *, n, norm: str) -> Mechanism:
    """BROKEN ON PURPOSE (when the factor is < 1): FTP with σ calibrated to a grid norm.

    The summary and the noise σZ are those of Algorithm 1, but σ = Δ_norm/μ,
    where Δ_norm = (2B'/n)·:func:`grid_norm_factor` is the (correct) sensitivity of
    the fitted mean in the sup-norm or the L² norm on the grid.  Theorem 6 asks
    for the Cameron–Martin sensitivity 2B'/n: the pair's true μ is μ/factor.
    """
    geom, radius, mu, n = _setup(grid, space, radius, mu, n)
    factor = grid_norm_factor(geom, norm)
    name = f"FTP calibrated to the grid {norm}-norm" + (" (broken)" if factor < 1 else "")
    calibration = FTPCalibration(geom, radius, factor=factor, norm=f"grid {norm}-norm")
    return _ftp_variant(name, geom, FitInBall(geom, radius), calibration, mu=mu, radius=radius, n=n)


def broken_ftp_no_radius(grid, space, radius, mu, *, n) -> Mechanism:
    """BROKEN ON PURPOSE: FTP that fits without the ball constraint, still σ = 2B'/(nμ).

    An unconstrained fit can have any norm, so the sensitivity is unbounded.
    """
    geom, radius, mu, n = _setup(grid, space, radius, mu, n)
    return _ftp_variant("FTP without the radius constraint (broken)", geom, _UnconstrainedFits(geom),
                        FTPCalibration(geom, radius), mu=mu, radius=radius, n=n)


@dataclass(frozen=True, eq=False)
class _UnconstrainedFits:
    """BROKEN ON PURPOSE: the mean of unconstrained least-squares fits (no ball: unbounded)."""

    geometry: GridGeometry

    def __call__(self, X, *, exact: bool = True):
        """(mean of the unconstrained fits, no curve moved)."""
        X = np.asarray(X, dtype=float)
        return self.mean(X), np.zeros(X.shape[:-1], dtype=bool)

    def mean(self, X, *, exact: bool = True):
        """The mean of the unconstrained fits."""
        return fitter(self.geometry).unconstrained(np.asarray(X, dtype=float)).mean(axis=-2)


def broken_ftp_cancellation(grid, space, radius, mu, *, n) -> Mechanism:
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
    the same bits gives the same leak on every CPU.
    """
    geom, radius, mu, n = _setup(grid, space, radius, mu, n)
    return _ftp_variant("FTP with a cancelling mean (broken)", geom, _CancellingFits(geom, radius),
                        FTPCalibration(geom, radius), mu=mu, radius=radius, n=n)


def _halving_sum(terms: list):
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

    def __call__(self, X, *, exact: bool = True):
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

    def mean(self, X, *, exact: bool = True):
        """The cancelling mean alone."""
        return self(X)[0]


class PinvDesign(Design):
    """BROKEN ON PURPOSE: a ball design whose extent is r·||pinv(L)||₂ (:func:`broken_design_pinv`)."""

    def _cached_extent(self):
        # numpy's pinv cuts off singular values below ~1e-15 of the largest, so a thin
        # noise direction is dropped silently.
        Lp = np.linalg.pinv(self.L)
        _, s, Vt = np.linalg.svd(Lp)
        return self.ball_radius * float(s[0]), {"x": self.ball_radius * Vt[0]}

    def rounding_excess(self, n):
        """0: the old calibration bounded no rounding (the real bound would refuse this design)."""
        return 0.0


def broken_design_pinv(grid, space, radius, mu, *, n, noise, ball_radius=None):
    """BROKEN ON PURPOSE: a ball design whitened by a pseudo-inverse.

    ``dpfda.mechanisms.designs.Design(..., region="ball", noise=noise)`` with one change: the
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


def probe_pairs(mechanism: Mechanism, n: int, T: int, *, size: float, directions=None):
    """Neighbouring datasets that probe a mechanism's thinnest noise directions.

    From first principles: the audit reads the noise law a release publishes
    (:class:`NoiseLaw`), whitens each grid coordinate with its own factorisation,
    and takes as directions every grid coordinate e_j and the direction v that
    maximises ||L⁻¹v||/||v|| (where the noise is thinnest per unit of signal),
    plus any ``directions`` given.  For each direction v the pair's first curves
    are ±size·v/max|v| and all other curves 0 (n curves of length T).  A curve far
    outside the mechanism's set is mapped onto its boundary, so ``size`` should be
    several times the set's extent.
    """
    n = check_int(n, "n", 1)
    T = check_int(T, "T", 1)
    size = check_positive(size, "size")
    law = published_law(mechanism, np.zeros((n, T)))
    dirs = [np.eye(T)[j] for j in range(T)]
    if law.factor is not None:
        Z, outside = law.white(np.eye(T))  # row j: e_j whitened
        Z = np.where(outside[:, None], 0.0, Z)
        _, _, Vt = np.linalg.svd(Z.T)  # ||Zᵀv|| = ||L⁻¹v||/σ is largest at Vt[0]
        dirs.append(Vt[0])
    for v in directions or ():
        dirs.append(as_float_array(v, "directions"))
    pairs = []
    for v in dirs:
        X0 = np.zeros((n, T))
        X0[0] = size * v / np.max(np.abs(v))
        X1 = X0.copy()
        X1[0] = -X0[0]
        pairs.append((X0, X1))
    return pairs


def _check_mechanism(mechanism) -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a dpfda.mechanisms.mechanism.Mechanism, got {type(mechanism).__name__}: build it "
            "with dpfda.trust.audit.ftp_mechanism / ptf_mechanism (or dpfda.mechanisms.mechanism.ftp_mechanism / "
            "ptf_mechanism, dpfda.mechanisms.designs.Design(...).mechanism(n, mu), or a broken_* constructor "
            "of dpfda.trust.audit); a plain function (X, rng) -> Release does not say what to audit"
        )
    return mechanism


def _check_n(mechanism: Mechanism, X) -> None:
    if mechanism.n is not None and X.shape[-2] != mechanism.n:
        raise ValueError(
            f"the datasets hold n={X.shape[-2]} curves but {mechanism.name} was calibrated for "
            f"n={mechanism.n}"
        )


# ---------------------------------------------------------------------------
# The published noise law, solved from first principles
# ---------------------------------------------------------------------------


AUDIT_MAX_CONDITION = 1e10
"""Largest condition number of a (scaled) published noise factor the audit will solve."""


def _pow2_exponents(v):
    """Integer exponents e with v·2^-e of magnitude in [1/2, 1) (0 where v is 0)."""
    _, e = np.frexp(np.asarray(v, dtype=float))
    return e.astype(np.int64)


def _norm_of_ratio(v, scale):
    """||v/scale|| for a vector v and a positive scale (scalar or per entry), scale-free.

    Every ratio is kept as mantissa·2^exponent, and the squares are summed on one
    common exponent, so no square over- or underflows however large the ratio
    (no ``overflow encountered in square``).  inf only if the
    norm itself exceeds the float range.
    """
    mv, ev = np.frexp(np.asarray(v, dtype=float))
    ms, es = np.frexp(np.broadcast_to(np.asarray(scale, dtype=float), np.shape(v)))
    mant, expo = mv / ms, ev.astype(np.int64) - es.astype(np.int64)
    nz = mant != 0
    if not np.any(nz):
        return 0.0
    E = int(np.max(expo[nz]))
    with np.errstate(under="ignore"):
        r = np.ldexp(mant, expo - E)
    with np.errstate(over="ignore"):
        return float(np.ldexp(np.sqrt(np.sum(r * r)), E))


class NoiseLaw:
    """The Gaussian noise law N(0, σ²LLᵀ) a release publishes, solved by the audit itself.

    ``scale`` is the release's ``noise_scale`` (σ, or one σ_j per coordinate);
    ``factor`` its ``noise_factor`` L (T, k), or None for independent noise.  Nothing
    of the audited mechanism's own whitening or calibration is used:

    * independent noise: the coordinates are v/σ, divided entry by entry on
      mantissas and exponents;
    * L: rows and columns of L are divided by powers of two (exact: L = D_r L̃ D_c),
      L̃ is factorised by Householder QR, and its condition number (from R's
      singular values) must be at most ``AUDIT_MAX_CONDITION``, otherwise a
      ``ValueError`` — never a silent cut-off.  A vector v is solved as
      L z = v; if v is not in the range of L — decided in exact rational arithmetic,
      with no tolerance (:meth:`outside`) — the two laws have different supports and
      the pair is told apart with certainty: its μ is inf.
    """

    def __init__(self, scale, factor=None):
        self.scale = np.asarray(scale, dtype=float)
        if not (np.all(np.isfinite(self.scale)) and np.all(self.scale > 0)):
            raise ValueError("a release's noise_scale must be finite and > 0 to be audited")
        self.factor = None if factor is None else as_float_array(factor, "noise_factor")
        if self.factor is None:
            return
        if self.scale.ndim != 0:
            raise ValueError("a correlated noise law needs a scalar noise_scale")
        L = self.factor
        if L.ndim != 2 or L.shape[1] > L.shape[0] or not np.all(np.isfinite(L)):
            raise ValueError(f"noise_factor must be a finite (T, k) matrix with k <= T, got shape {L.shape}")
        rows = np.max(np.abs(L), axis=1)
        self._r = -_pow2_exponents(np.where(rows > 0, rows, 1.0))
        Lr = np.ldexp(L, self._r[:, None])
        cols = np.max(np.abs(Lr), axis=0)
        if np.any(cols == 0):
            raise ValueError("noise_factor has a zero column")
        self._c = -_pow2_exponents(cols)
        self._Ls = np.ldexp(Lr, self._c[None, :])
        self._Q, self._R = np.linalg.qr(self._Ls)
        sv = np.linalg.svd(self._R, compute_uv=False)
        self.condition = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
        if not self.condition <= AUDIT_MAX_CONDITION:
            raise ValueError(
                f"the release's published noise covariance is too ill-conditioned for the audit to "
                f"solve reliably: condition number {self.condition:.3g} after scaling its rows and "
                f"columns (the limit is {AUDIT_MAX_CONDITION:g})"
            )

    def outside(self, v) -> bool:
        """Whether the vector v has a non-zero part off range(L), decided exactly (no tolerance).

        Always False for independent noise or a square L (full rank: every vector is in
        its range); otherwise rational Gaussian elimination on [L v].
        """
        if self.factor is None or self.factor.shape[1] == self.factor.shape[0]:
            return False
        return not _exactly_in_range(self.factor, np.asarray(v, dtype=float))

    def white(self, V):
        """(Z, outside): Z with V = σ·L·Z row by row (…, k), and whether each row is off range(L).

        Z is the least-squares solution off range(L); ``outside`` is :meth:`outside` (exact).
        """
        V = np.asarray(V, dtype=float)
        flat = V.reshape(-1, V.shape[-1])
        outside = np.array([self.outside(v) for v in flat], dtype=bool)
        return self._solve(V), outside.reshape(V.shape[:-1])

    def _solve(self, V):
        """Z with V = σ·L·Z row by row (…, k) (least squares off range(L); see :meth:`outside`)."""
        from scipy.linalg import solve_triangular

        V = np.asarray(V, dtype=float)
        if self.factor is None:
            with np.errstate(over="ignore"):
                return V / self.scale
        flat = V.reshape(-1, V.shape[-1])
        top = np.max(np.abs(flat), axis=-1)
        e = _pow2_exponents(np.where(top > 0, top, 1.0))
        Vs = np.ldexp(np.ldexp(flat, -e[:, None]), self._r[None, :])
        Zs = solve_triangular(self._R, self._Q.T @ Vs.T).T
        ms, es = math.frexp(float(self.scale))
        with np.errstate(over="ignore", under="ignore"):
            Z = np.ldexp(Zs * self._c_scale() / ms, (e - es)[:, None])
        return Z.reshape(V.shape[:-1] + (Z.shape[-1],))

    def _c_scale(self):
        return np.ldexp(1.0, self._c)[None, :]

    def distance(self, d) -> float:
        """||L⁻¹d||/σ: the μ of the pair whose summaries differ by ``d`` (inf off the range)."""
        d = np.asarray(d, dtype=float)
        if self.factor is None:
            return _norm_of_ratio(d, self.scale)
        if not np.any(d):
            return 0.0
        if self.outside(d):
            return float("inf")
        return _norm_of_ratio(self._solve(d.reshape(1, -1))[0], 1.0)


def published_law(mechanism: Mechanism, X) -> NoiseLaw:
    """The noise law published by a release of ``mechanism`` on ``X`` (a probe with its own generator)."""
    probe = mechanism.release(np.asarray(X, dtype=float), np.random.default_rng(0))
    return NoiseLaw(probe.noise_scale, probe.coordinate_factor)


def pair_mu(mechanism: Mechanism, X0, X1) -> float:
    """The exact μ of a Gaussian mechanism on one pair: ||L⁻¹(S(X1) - S(X0))||/σ.

    By the proof of Theorem 6 the two release laws are then exactly as hard to
    tell apart as N(0, 1) and N(pair_mu, 1).  The summaries S are the audit's own
    and the mechanism's (the larger μ counts), σ the smaller of the formula's and the
    published one, L the published factor solved by :class:`NoiseLaw`; inf when a
    release carries a part outside the support of its noise (:func:`recompute`).
    """
    return recompute(mechanism, X0, X1).mu_pair


# ---------------------------------------------------------------------------
# Worst-case neighbours
# ---------------------------------------------------------------------------


def worst_case_pair(grid, space, radius, n, *, pipeline="ftp", direction=None, factor=1.0,
                    clip=None):
    """Neighbouring datasets (X0, X1) of n curves that attain a pipeline's sensitivity.

    ``pipeline="ftp"``: every curve of X0 is the function with Cameron–Martin
    coordinates θ = factor·B'·u (u = ``direction``/||direction||, default
    (1, …, 1)/√d), observed without noise; X1 replaces the first curve by -θ.
    With factor >= 1 the ball-constrained fits are ±B'·u, so the fitted means
    differ by exactly 2B'/n in the Cameron–Martin norm (Theorem 6, Corollaries 7–8).

    ``pipeline="ptf"``: the first curve of X0 is factor·c_j at every grid point,
    of X1 -factor·c_j, all other curves 0; with factor >= 1 every clipped mean
    moves by 2c_j/n (Algorithm 2).  ``clip`` defaults to B'·a_j.

    Returns arrays of shape (n, T).
    """
    check_grid_space(grid, space, "worst_case_pair")
    geom = _geometry(grid, space)
    radius = check_positive(radius, "radius")
    n = check_int(n, "n", 1)
    factor = check_positive(factor, "factor")
    if pipeline == "ftp":
        u = np.ones(geom.dim) if direction is None else as_float_array(direction, "direction")
        if u.shape != (geom.dim,):
            raise ValueError(f"direction must have length d={geom.dim}, got shape {u.shape}")
        norm = np.linalg.norm(u)
        if not np.isfinite(norm) or norm == 0:
            raise ValueError("direction must be finite and non-zero")
        curve = geom.values(factor * radius * u / norm)
        X0 = np.tile(curve, (n, 1))
    elif pipeline == "ptf":
        if direction is not None:
            raise ValueError("direction applies to pipeline='ftp' only")
        # From the definition, not from PTF's own code: c_j = B'·a_j by default.
        c = radius * geom.eval_norm if clip is None else np.broadcast_to(
            as_float_array(clip, "clip"), (geom.T,)).copy()
        if not (np.all(np.isfinite(c)) and np.all(c > 0)):
            raise ValueError("clip must be finite and > 0 at every grid point")
        X0 = np.zeros((n, geom.T))
        X0[0] = factor * c
        curve = X0[0]
    else:
        raise ValueError(f"pipeline must be 'ftp' or 'ptf', got {pipeline!r}")
    X1 = X0.copy()
    X1[0] = -curve
    return X0, X1


# ---------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------


def _lda_direction(V0, V1):
    """Difference of means whitened by the pooled covariance (pseudo-inverse)."""
    m0, m1 = V0.mean(axis=0), V1.mean(axis=0)
    C = 0.5 * (np.cov(V0, rowvar=False) + np.cov(V1, rowvar=False))
    lam, U = np.linalg.eigh(np.atleast_2d(C))
    keep = lam > 1e-10 * max(lam[-1], 1e-300)
    w = (U[:, keep] / lam[keep]) @ (U[:, keep].T @ (m1 - m0))
    return w, 0.5 * (m0 + m1)


def _draw(mechanism, X, draws, chunk, rng, view):
    """``view`` of ``draws`` releases of ``X``, one row each, in chunks of ``chunk`` (the one loop).

    The releases are those ``mechanism.release`` makes on ``chunk`` copies of ``X``
    with ``rng`` (:func:`dpfda.simulation.engine.repeat_mechanism`); with OpenDP's noise
    (``secure``) each chunk is a release of the copies.
    """
    if mechanism.secure:
        parts = [np.asarray(view(rel), dtype=float)
                 for rel in repeated(mechanism.release, X, draws, chunk, rng)]
        return np.concatenate([p.reshape(p.shape[0], -1) for p in parts], axis=0)

    def score(rel, parts, c):
        return {"y": np.asarray(view(rel), dtype=float).reshape(c, -1)}

    return repeat_mechanism(mechanism, X, draws, rng, score, chunk=chunk)["y"]


def audit(mechanism, X0, X1, *, draws, rng, statistic="lr", alpha=0.05, thresholds=None,
          n_thresholds=32, split=0.5, chunk=20000) -> AuditResult:
    """Audit a mechanism on neighbouring datasets: empirical trade-off and μ lower bound.

    Parameters
    ----------
    mechanism : Mechanism
        A :class:`dpfda.Mechanism`, e.g. from :func:`ftp_mechanism`,
        :func:`ptf_mechanism` or :meth:`dpfda.mechanisms.designs.Design.mechanism`.  Its
        ``release`` is called on a batch (size, n, T) of identical copies, so many
        releases cost one vectorised call per ``chunk``.
    X0, X1 : arrays (n, T)
        Neighbouring datasets (they may differ in one curve only).
    draws : int
        Releases drawn from each dataset.
    rng : numpy.random.Generator
    statistic : "lr", "blackbox" or callable Release -> scores (size,)
        The score; larger should mean "X1".  ``"lr"`` is the Neyman–Pearson
        statistic (module docstring); ``"blackbox"`` learns a linear
        discriminant of the released grid values from the calibration draws.
    alpha : float
        μ_lower is a (1 - alpha) lower confidence bound.
    thresholds : array, optional
        Fixed thresholds, chosen without looking at these draws; then all draws
        are evaluation draws (except those the black-box score learns from).
        By default ``n_thresholds`` quantiles of the calibration scores.
    split : float
        Fraction of each side's draws used for calibration (threshold choice,
        black-box direction).
    chunk : int
        Releases per call of the mechanism (memory).

    Returns
    -------
    AuditResult
    """
    rng = check_rng(rng)
    draws = check_int(draws, "draws", 4)
    chunk = check_int(chunk, "chunk", 1)
    n_thresholds = check_int(n_thresholds, "n_thresholds", 1)
    split = check_positive(split, "split")
    if split >= 1:
        raise ValueError(f"split must be in (0, 1), got {split}")
    X0 = as_float_array(X0, "X0")
    X1 = as_float_array(X1, "X1")
    if X0.ndim != 2 or X0.shape != X1.shape:
        raise ValueError(f"X0 and X1 must both be (n, T) arrays of one shape, got {X0.shape} and {X1.shape}")
    if not (np.all(np.isfinite(X0)) and np.all(np.isfinite(X1))):
        raise ValueError("X0 and X1 must be finite")
    changed = int(np.sum(np.any(X0 != X1, axis=1)))
    if changed > 1:
        raise ValueError(f"X0 and X1 must be neighbours (differ in at most one curve); they differ in {changed}")
    mech = _check_mechanism(mechanism)
    _check_n(mech, X0)

    if isinstance(statistic, str) and statistic == "lr":
        # the audit's own summaries and noise law (recompute), never the mechanism's alone
        # the audit's own summaries and noise law (recompute), never the mechanism's alone;
        # the score tests the farther of the two pairs of centres (the audit's, the mechanism's)
        rec = recompute(mech, X0, X1)
        published = published_law(mech, X0)
        sigma = np.minimum(published.scale, formula_sigma(mech, X0.shape[-2]))
        law = NoiseLaw(sigma if published.factor is None else float(sigma), published.factor)
        pairs = [(audit_summary(mech, X0), audit_summary(mech, X1)),
                 (np.asarray(mech.summary(X0)), np.asarray(mech.summary(X1)))]
        s0, s1 = max(pairs, key=lambda p: law.distance(p[1] - p[0]))
        d = s1 - s0
        dist = rec.mu_pair if not np.isfinite(rec.mu_pair) else law.distance(d)
        view = mech.coordinates
        if law.factor is None:
            sig = np.broadcast_to(law.scale, s0.shape)
            w = d / sig**2 / dist if 0 < dist < np.inf else np.zeros_like(d)
            score = lambda Y: (Y - s0) @ w  # noqa: E731
        else:
            zd = law._solve(d.reshape(1, -1))
            u = zd[0] / np.linalg.norm(zd[0]) if 0 < dist < np.inf else np.zeros(zd.shape[-1])
            score = lambda Y: law._solve(Y - s0) @ u  # noqa: E731
        mu_pair, learn, name = rec.mu_pair, False, "lr"
    elif isinstance(statistic, str) and statistic == "blackbox":
        view, score, mu_pair, learn, name = (lambda rel: rel.values), None, None, True, "blackbox"
    elif callable(statistic):
        view, score, mu_pair, learn = statistic, (lambda Y: Y[:, 0]), None, False
        name = getattr(statistic, "__name__", "custom")
    else:
        raise ValueError("statistic must be 'lr', 'blackbox' or a callable Release -> scores")

    Y0 = _draw(mech, X0, draws, chunk, rng, view)
    Y1 = _draw(mech, X1, draws, chunk, rng, view)
    ncal = int(round(split * draws)) if (learn or thresholds is None) else 0
    if (learn or thresholds is None) and not 2 <= ncal <= draws - 2:
        raise ValueError("split leaves too few calibration or evaluation draws; raise draws")
    if learn:
        w, centre = _lda_direction(Y0[:ncal], Y1[:ncal])
        score = lambda Y: (Y - centre) @ w  # noqa: E731
    assert score is not None  # every branch above sets it
    c0, c1 = score(Y0[:ncal]), score(Y1[:ncal])
    e0, e1 = score(Y0[ncal:]), score(Y1[ncal:])
    if thresholds is None:
        levels = (np.arange(n_thresholds) + 0.5) / n_thresholds
        thresholds = np.quantile(np.concatenate([c0, c1]), levels)
    res = mu_lower_bound(e0, e1, thresholds, alpha=alpha)
    return replace(res, draws=draws, statistic=name, mechanism=mech.name, mu_claimed=mech.mu,
                   mu_pair=mu_pair)


# ---------------------------------------------------------------------------
# The audit's own recomputation: summaries, noise law, everything a release carries
# ---------------------------------------------------------------------------

AUDIT_DIGITS = 50
"""Decimal digits of the audit's own arithmetic (mpmath) for fits and projections."""

SUMMARY_GAP = 2.0**-20
"""Largest distance, in units of the sensitivity 2·bound/n, between a mechanism's summary and
the audit's recomputation that is put down to rounding (every proven rounding of the package
is below 2⁻¹⁰ of it only where σ is raised to cover it; ordinarily below 2⁻³¹)."""


def _mp():
    try:
        import mpmath
    except ImportError as exc:  # pragma: no cover - exercised only without mpmath
        raise ImportError("the audit recomputes summaries in extended precision with mpmath; "
                          "install it with `pip install 'mpmath>=1.3,<2'` (or dpfda[audit])") from exc
    return mpmath


def _unique_rows(X):
    """(distinct rows (u, T), their counts (u,)) of one dataset (n, T)."""
    rows, counts = np.unique(np.asarray(X, dtype=float), axis=0, return_counts=True)
    return rows, counts


def _exact_box_mean(X, clip) -> np.ndarray:
    """The mean of clip(x_j) to [−c_j, c_j] over the curves, exactly (fractions), rounded once."""
    from fractions import Fraction

    rows, counts = _unique_rows(X)
    n = int(counts.sum())
    clipped = np.clip(rows, -clip, clip)  # exact in floating point
    return np.array([float(sum(Fraction(float(v)) * int(k) for v, k in zip(clipped[:, j], counts)) / n)
                     for j in range(rows.shape[1])])


def _mp_fit_in_ball(mp, Phi, x, radius):
    """argmin ||x − Φθ||² over ||θ|| <= B', in mpmath (eigenbasis of ΦᵀΦ, bisection on λ)."""
    A = mp.matrix(Phi.T.tolist()) * mp.matrix(Phi.tolist())
    b = mp.matrix(Phi.T.tolist()) * mp.matrix([[float(v)] for v in x])
    alpha, V = mp.eigsy(A)
    d = len(alpha)
    beta = [sum(V[i, k] * b[i] for i in range(d)) for k in range(d)]
    B = mp.mpf(float(radius))

    def norm2(lam):
        return mp.fsum((beta[k] / (alpha[k] + lam)) ** 2 for k in range(d) if beta[k] != 0)

    smallest = min(alpha[k] for k in range(d))
    if smallest > 0 and norm2(mp.mpf(0)) <= B * B:
        lam = mp.mpf(0)
    else:
        lo = max(mp.mpf(0), -smallest)
        hi = lo + mp.sqrt(mp.fsum(v * v for v in beta)) / B + 1
        for _ in range(4 * AUDIT_DIGITS):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if norm2(mid) > B * B else (lo, mid)
        lam = hi
    coef = [mp.fsum(V[i, k] * beta[k] / (alpha[k] + lam) for k in range(d) if beta[k] != 0)
            for i in range(d)]
    return coef


def _mp_mean_of_fits(X, geometry, radius):
    """The mean of the curves' fits in the ball (d mpf values), each fit in extended precision."""
    mp = _mp()
    rows, counts = _unique_rows(X)
    n = int(counts.sum())
    with mp.workdps(AUDIT_DIGITS):
        total = [mp.mpf(0)] * geometry.dim
        for x, k in zip(rows, counts):
            fit = _mp_fit_in_ball(mp, geometry.Phi, x, radius)
            total = [t + int(k) * f for t, f in zip(total, fit)]
        return [t / n for t in total], mp


def _mp_ball_mean(X, r) -> np.ndarray:
    """The mean of the curves' projections onto the ℓ₂ ball of radius r, in extended precision."""
    mp = _mp()
    rows, counts = _unique_rows(X)
    n = int(counts.sum())
    with mp.workdps(AUDIT_DIGITS):
        total = [mp.mpf(0)] * rows.shape[1]
        R = mp.mpf(float(r))
        for x, k in zip(rows, counts):
            v = [mp.mpf(float(t)) for t in x]
            nv = mp.sqrt(mp.fsum(t * t for t in v))
            s = 1 if nv <= R else R / nv
            total = [a + int(k) * s * t for a, t in zip(total, v)]
        return np.array([float(t / n) for t in total])


def _design_of(mech: Mechanism):
    des = getattr(mech.per_curve, "design", None)
    if not isinstance(des, Design):
        raise TypeError(f"{mech.name}: a design mechanism must carry its Design (per_curve.design) "
                        "for the audit to recompute its summary")
    return des


def audit_summary(mech: Mechanism, X) -> np.ndarray:
    """The audit's own summary of data ``X`` (n, T), in the coordinates the noise is added to.

    From the method's definition and the public parameters, never from the mechanism's
    code: FTP (Algorithm 1) the mean of the fits in the ball of radius B' (each fit and
    the mean in 50-digit arithmetic, rounded once); PTF (Algorithm 2) the mean of the
    values clipped to [−c_j, c_j] (exact, with fractions); a design its region's map:
    (1−λ)·the box mean + λ·(Φ times) the mean of fits, or the mean of projections onto
    its ball.  The coordinates are the mechanism's: d for FTP and a design whose noise
    is on θ̄ (``noise_factor`` None and ``Design.coefficient_noise``), T otherwise.
    """
    X = as_float_array(X, "X")
    geom = mech.geometry
    if mech.method == "ftp":
        mean, _ = _mp_mean_of_fits(X, geom, mech.radius)
        return np.array([float(v) for v in mean])
    if mech.method == "ptf":
        return _exact_box_mean(X, np.asarray(mech.clip, dtype=float))
    if mech.method != "design":
        raise ValueError(f"the audit knows the methods ftp, ptf and design, not {mech.method!r}")
    des = _design_of(mech)
    if des.region == "ball":
        return _mp_ball_mean(X, des.ball_radius)
    box_w, e_w = des._parts_weights()
    on_coef = des.coefficient_noise and mech.noise_factor is None and mech.dim == geom.dim
    mp = _mp()
    with mp.workdps(AUDIT_DIGITS):
        out = [mp.mpf(0)] * (geom.dim if on_coef else geom.T)
        if e_w > 0:
            mean, _ = _mp_mean_of_fits(X, geom, des.radius)
            if on_coef:
                out = [e_w * v for v in mean]
            else:
                Phi = geom.Phi
                out = [e_w * mp.fsum(float(Phi[j, k]) * mean[k] for k in range(geom.dim))
                       for j in range(geom.T)]
        if box_w > 0:
            box = _exact_box_mean(X, des.clip)
            out = [o + box_w * mp.mpf(float(b)) for o, b in zip(out, box)]
        return np.array([float(v) for v in out])


def formula_sigma(mech: Mechanism, n: int):
    """σ from the public parameters and the paper's formulas (not the mechanism's calibration).

    FTP: 2B'/(nμ) (Theorem 6, Corollaries 7–8); PTF: 2c_j√T/(nμ) (Proposition 9); a
    design: 2R/(nμ) with R = B' for noise on θ̄ (R of FTP), ||c/ℓ|| for a box with a
    diagonal noise shape (PTF's argument), and otherwise the design's published extent R
    (max over C of ||L⁻¹x||, ``Design.sensitivity``).  Computed in 50-digit arithmetic
    and rounded once; the rounding cover of the summary (at most 2⁻³¹ of σ below about
    a million curves) is not included.
    """
    mp = _mp()
    with mp.workdps(AUDIT_DIGITS):
        n_mu = mp.mpf(int(n)) * mp.mpf(float(mech.mu))
        if mech.method == "ftp":
            return float(2 * mp.mpf(float(mech.radius)) / n_mu)
        if mech.method == "ptf":
            c = np.asarray(mech.clip, dtype=float)
            root = mp.sqrt(c.size)
            return np.array([float(2 * mp.mpf(float(cj)) * root / n_mu) for cj in c])
        des = _design_of(mech)
        if des.coefficient_noise and mech.noise_factor is None:
            R = mp.mpf(float(des.radius))
        else:
            R = _audit_extent(mp, des)

        return float(2 * R / n_mu)


def _audit_extent(mp, des: Design):
    """R = max over C of ||L⁻¹x||, by the audit's own arithmetic where it has a closed form.

    Box with a diagonal L: ||c/ℓ|| (50 digits); ball of radius r: r/s_min(L) (exact for a
    diagonal L, else from the SVD of L itself, never the design's whitening); ellipsoid with
    a square L: B'·||L⁻¹Φ||₂ (:class:`NoiseLaw`'s own solve).  The other sets (a box with a
    correlated L, a mix) have no closed form: their published extent is used.
    """
    L = np.asarray(des.L, dtype=float)
    diagonal = L.shape[0] == L.shape[1] and not np.any(L - np.diag(np.diag(L)))
    if des.region == "box" and diagonal:
        return mp.sqrt(mp.fsum((mp.mpf(float(c)) / mp.mpf(float(ell))) ** 2
                               for c, ell in zip(des.clip, np.diag(L))))
    if des.region == "ball":
        smin = mp.mpf(float(np.min(np.abs(np.diag(L))))) if diagonal else \
            mp.mpf(float(np.linalg.svd(L, compute_uv=False)[-1]))
        return mp.mpf(float(des.ball_radius)) / smin
    if des.region == "ellipsoid" and L.shape[0] == L.shape[1]:
        G = NoiseLaw(1.0, L)._solve(des.geometry.Phi.T).T  # L⁻¹Φ
        return mp.mpf(float(des.radius)) * mp.mpf(float(np.linalg.svd(G, compute_uv=False)[0]))
    return mp.mpf(float(des.extent))


def _exactly_in_range(F: np.ndarray, v: np.ndarray) -> bool:
    """Whether v lies in the column span of F, decided in exact rational arithmetic (no tolerance)."""
    from fractions import Fraction

    rows = [[Fraction(float(a)) for a in row] + [Fraction(float(b))] for row, b in zip(F, v)]
    k = F.shape[1]
    rank, r = 0, 0
    for col in range(k + 1):
        pivot = next((i for i in range(r, len(rows)) if rows[i][col] != 0), None)
        if pivot is None:
            continue
        rows[r], rows[pivot] = rows[pivot], rows[r]
        for i in range(r + 1, len(rows)):
            if rows[i][col] != 0:
                f = rows[i][col] / rows[r][col]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[r])]
        if col == k:
            return False  # v adds a dimension: outside the span
        r += 1
        rank += 1
    return True


def _same_arrays(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f"
                                              else a == b))


@dataclass(frozen=True)
class Recomputation:
    """What the audit recomputed for one mechanism on one pair, and what it found.

    ``mu_pair`` is the pair's μ from the audit's own summaries and the formula's σ
    (inf when a release carries a part outside its noise's range); ``passed`` holds
    when it is at most the claimed μ (to the rounding cover) and none of ``problems``
    was found.
    """

    mechanism: str
    mu_claimed: float
    mu_pair: float
    mu_summaries: float
    sigma_formula: object
    sigma_published: object
    summary_gap: float
    noise_ratio: float | None
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """No problem found and μ_pair <= μ(1 + 10⁻⁸)."""
        return not self.problems and self.mu_pair <= self.mu_claimed * (1 + 1e-8)


def recompute(mechanism: Mechanism, X0, X1, *, draws: int = 0, rng=None) -> Recomputation:
    """Audit one mechanism on neighbours (X0, X1) by recomputing what it releases.

    1. The summaries of X0 and X1 by the audit's own arithmetic (:func:`audit_summary`),
       compared with the mechanism's (within ``SUMMARY_GAP`` of the sensitivity).
    2. σ by the formulas (:func:`formula_sigma`), compared with the release's
       ``noise_scale``; the noise law is N(0, σ²FFᵀ) with σ the smaller of the two and F
       the published ``coordinate_factor`` (solved by :class:`NoiseLaw`).
    3. A release of each dataset: the Gaussian output ``noisy_coordinates`` must have
       the mechanism's dimension and a square factor F; if F has fewer columns than
       rows, the release's vector is tested for membership of F's span in exact
       rational arithmetic — a non-zero part outside it is noise-free and μ is inf.
       Every other array the release carries (``coef``, ``noisy_means``, ``active``) must
       be recomputed bit for bit from ``noisy_coordinates`` by the post-processing.
    4. With ``draws`` > 0, that many releases of X0: the whitened residuals around the
       audit's summary, by the formula's σ, must have mean square at least
       1 − 6·√(2/(draws·k)) (noise no smaller than the formula says).

    ``mu_pair`` = max(μ of the audit's summaries, μ of the mechanism's summaries), both
    under that law.
    """
    mech = _check_mechanism(mechanism)
    X0, X1 = as_float_array(X0, "X0"), as_float_array(X1, "X1")
    _check_n(mech, X0)
    n = X0.shape[-2]
    problems: list[str] = []
    a0, a1 = audit_summary(mech, X0), audit_summary(mech, X1)
    m0, m1 = np.asarray(mech.summary(X0)), np.asarray(mech.summary(X1))
    sigma_f = formula_sigma(mech, n)
    scale_unit = np.min(np.atleast_1d(sigma_f)) * n * mech.mu / 2.0  # the bound (B', c_j or R)
    gap = max(float(np.max(np.abs(m0 - a0))), float(np.max(np.abs(m1 - a1)))) / (2.0 * scale_unit / n)
    if not gap <= SUMMARY_GAP:
        problems.append(f"the mechanism's summary differs from the audit's by {gap:.3g} of the sensitivity")
    gen = np.random.default_rng(0) if rng is None else check_rng(rng)
    r0, r1 = mech.release(X0, gen), mech.release(X1, gen)
    published = np.asarray(r0.noise_scale, dtype=float)
    if np.any(published < np.asarray(sigma_f) * (1 - 1e-12)):
        problems.append("the published noise scale is below the formula's")
    F = r0.coordinate_factor
    outside = False
    for rel in (r0, r1):
        y = np.asarray(rel.noisy_coordinates, dtype=float)
        if y.shape[-1] != mech.dim:
            problems.append(f"the Gaussian output has {y.shape[-1]} coordinates, the mechanism {mech.dim}")
        if F is not None and F.shape[1] < F.shape[0]:
            if not _exactly_in_range(np.asarray(F), y.reshape(-1, y.shape[-1])[0]):
                outside = True
        coef, active, grid = mech.post(y)
        if not (_same_arrays(coef, rel.coef) and _same_arrays(active, rel.active)
                and _same_arrays(grid, rel.noisy_means)):
            problems.append("the release carries arrays that are not post-processing of its Gaussian output")
    if outside:
        problems.append("the release has a part outside its noise's range (no noise there): mu = inf")
    law = NoiseLaw(np.minimum(published, sigma_f) if F is None else min(float(published), float(sigma_f)), F)
    mu_sum = law.distance(a1 - a0)
    mu_mech = law.distance(m1 - m0)
    mu_pair = math.inf if outside else max(mu_sum, mu_mech)
    ratio = None
    if draws:
        draws = check_int(draws, "draws", 2)
        reps = mech.release(np.broadcast_to(X0, (draws,) + X0.shape), gen)
        exact = NoiseLaw(sigma_f, F)
        z = exact._solve(np.asarray(reps.noisy_coordinates, dtype=float) - a0)
        ratio = float(np.mean(z * z))
        if ratio < 1 - 6 * math.sqrt(2.0 / z.size):
            problems.append(f"the noise is smaller than the formula's: mean square {ratio:.3f} of its variance")
    return Recomputation(mechanism=mech.name, mu_claimed=mech.mu, mu_pair=mu_pair, mu_summaries=mu_sum,
                         sigma_formula=sigma_f, sigma_published=r0.noise_scale, summary_gap=gap,
                         noise_ratio=ratio, problems=tuple(dict.fromkeys(problems)))


# ---------------------------------------------------------------------------
# Broken on purpose: a rank-deficient noise, a σ too small
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _GridMeansOfFits:
    """BROKEN ON PURPOSE: the mean of fits mapped to the grid before the noise, fl(θ̄Φᵀ) (T)."""

    design: Design

    def __call__(self, X, *, exact: bool = True):
        """(fl(θ̄Φᵀ) (…, T), which fits hit the ball)."""
        mean_coef, active = ftp_fit_mean(X, self.design.geometry, self.design.radius, exact=exact)
        return mean_coef @ self.design.geometry.Phi.T, active

    def mean(self, X, *, exact: bool = True):
        """fl(θ̄Φᵀ) alone."""
        return self(X, exact=exact)[0]


@dataclass(frozen=True, eq=False)
class _GridNoiseCalibration:
    """σ = 2B'/(nμ) (R = B' for the ellipsoid with FTP's shape), no secure path."""

    design: Design
    norm: str = "noise metric of a rank-d factor on the grid (broken)"

    def sensitivity(self, n):
        """2B'/n."""
        return 2.0 * self.design.radius / n

    def sigma(self, n, mu):
        """The design's σ."""
        return self.design.sigma(n, mu)

    def secure_noisy(self, centre, n, mu, sigma):
        """Not offered: a mechanism broken on purpose is for audits only."""
        raise ValueError("a mechanism broken on purpose has no secure path")


@dataclass(frozen=True, eq=False, repr=False)
class _RankDeficientMechanism(Mechanism):
    """BROKEN ON PURPOSE: noise σΦZ of rank d added to T grid means (the rule it breaks: full rank)."""

    def __post_init__(self):  # the square-factor rule of Mechanism is what this one violates
        pass

    @property
    def noise_dim(self) -> int:
        """d normals for T coordinates."""
        assert self.noise_factor is not None  # built with Φ by broken_design_rank_deficient
        return int(self.noise_factor.shape[1])


def broken_design_rank_deficient(grid, space, radius, mu, *, n=None) -> Mechanism:
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
    mech = _check_mechanism(mechanism)
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

    def sensitivity(self, n):
        """The wrapped sensitivity."""
        return self.inner.sensitivity(n)

    def sigma(self, n, mu):
        """factor·σ."""
        sigma = self.inner.sigma(n, mu)
        return self.factor * np.asarray(sigma) if np.ndim(sigma) else self.factor * sigma

    def secure_noisy(self, centre, n, mu, sigma):
        """Not offered: a mechanism broken on purpose is for audits only."""
        raise ValueError("a mechanism broken on purpose has no secure path")
