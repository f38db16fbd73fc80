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

Worst-case neighbours (:func:`worst_case_pair`) attain the sensitivities of both
pipelines, and :func:`probe_pairs` builds neighbours along the published noise's thinnest
directions, both from the definitions (B'·a_j, the noise law a release publishes), not from
the mechanisms' calibration code.  The book's mechanisms *broken on purpose*
(``dpfda_book.mechanisms.broken``: PTF without the √T of composition, FTP calibrated to a grid
norm, without the radius or with a cancelling mean, a design whitened by a
pseudo-inverse or with rank-deficient noise on the grid, σ × 0.9, a covariance calibrated
for added or removed records) show that the audit catches miscalibration: any
:class:`dpfda.Mechanism` is audited, and a design through the public definition of its set
(:class:`~dpfda.trust.recompute.DesignRegion`).  The private
covariances (:mod:`dpfda.mechanisms.covariance`) have their own worst-case neighbours
(:func:`worst_case_covariance_pair`), recomputation
(:func:`~dpfda.trust.recompute.recompute_covariance`) and empirical audit
(:func:`audit_covariance`).  The privacy checks recompute what they audit, in 50-digit or
exact rational arithmetic, with the noise law solved by the audit itself
(:mod:`dpfda.trust.recompute`; :func:`~dpfda.trust.recompute.pair_mu` and the ``"lr"``
score use its summaries).  The names of :mod:`dpfda.trust.recompute` can also be imported
from here.  They exist for the audit only and are not exported by ``dpfda``; never release
data with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from ..maths.curves import Curves
from ..maths.spaces import FunctionSpace, OrthonormalSpace
from ..mechanisms import ftp_ptf as mechanisms
from ..mechanisms.covariance import CovarianceMechanism
from ..mechanisms.ftp_ptf import Mechanism
from ..mechanisms.release import Release
from ..validation import as_float_array, check_int, check_positive, check_rng
from .checks import check_grid_space, check_mechanism, check_n, dataset_n, geometry, neighbours
from .draws import repeat_mechanism, repeated
from .recompute import (  # the audit's own recomputation, also reachable from here
    AUDIT_DIGITS,
    AUDIT_MAX_CONDITION,
    SUMMARY_GAP,
    CovarianceRecomputation,
    NoiseLaw,
    Recomputation,
    audit_covariance_summary,
    audit_summary,
    covariance_composed_mu,
    covariance_formula_sigma,
    formula_sigma,
    pair_mu,
    published_law,
    recompute,
    recompute_covariance,
)

__all__ = [
    "AuditResult",
    "audit",
    "batch_shape_pair",
    "clopper_pearson",
    "empirical_tradeoff",
    "ftp_mechanism",
    "grouping_pair",
    "mu_lower_bound",
    "probe_pairs",
    "ptf_mechanism",
    "worst_case_pair",
    # defined in dpfda.trust.recompute, importable from here too
    "NoiseLaw",
    "published_law",
    "pair_mu",
    "audit_summary",
    "formula_sigma",
    "recompute",
    "Recomputation",
    "AUDIT_MAX_CONDITION",
    "AUDIT_DIGITS",
    "SUMMARY_GAP",
    "worst_case_covariance_pair",
    "joint_worst_angle",
    "audit_covariance",
    "audit_covariance_summary",
    "covariance_formula_sigma",
    "covariance_composed_mu",
    "recompute_covariance",
    "CovarianceRecomputation",
]


# ---------------------------------------------------------------------------
# Confidence bounds and the μ lower bound
# ---------------------------------------------------------------------------


def clopper_pearson(k: ArrayLike, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
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


def empirical_tradeoff(scores0: ArrayLike, scores1: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
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

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """(fpr, fnr) of every threshold on the evaluation scores (for plots)."""
        return empirical_tradeoff(self.scores0, self.scores1)


def _scores(s: ArrayLike, name: str) -> np.ndarray:
    arr = as_float_array(s, name)
    if arr.ndim != 1 or arr.size < 1:
        raise ValueError(f"{name} must be a non-empty one-dimensional array of scores")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def mu_lower_bound(scores0: ArrayLike, scores1: ArrayLike, thresholds: ArrayLike, *,
                   alpha: float = 0.05) -> AuditResult:
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


def ftp_mechanism(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int,
                  secure: bool = False) -> Mechanism:
    """FTP (Algorithm 1) on ``n`` curves, audited in Cameron–Martin coordinates (Theorem 6).

    :func:`dpfda.ftp_mechanism` with the number of curves fixed: an audit
    on datasets of another size is refused.
    """
    return mechanisms.ftp_mechanism(grid, space, radius, mu, n=check_int(n, "n", 1), secure=secure)


def ptf_mechanism(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int,
                  clip: ArrayLike | None = None, weights: ArrayLike | None = None,
                  secure: bool = False) -> Mechanism:
    """PTF (Algorithm 2) on ``n`` curves, audited on the noisy means x̃ (Proposition 9).

    :func:`dpfda.ptf_mechanism` with the number of curves fixed.
    """
    return mechanisms.ptf_mechanism(grid, space, radius, mu, clip=clip, weights=weights,
                                    n=check_int(n, "n", 1), secure=secure)


def probe_pairs(mechanism: Mechanism, n: int, T: int, *, size: float,
                directions: Sequence[ArrayLike] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Neighbouring datasets that probe a mechanism's thinnest noise directions.

    From first principles: the audit reads the noise law a release publishes
    (:class:`~dpfda.trust.recompute.NoiseLaw`), whitens each grid coordinate with its own factorisation,
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


# ---------------------------------------------------------------------------
# Worst-case neighbours
# ---------------------------------------------------------------------------


def worst_case_pair(grid: ArrayLike, space: FunctionSpace, radius: float, n: int, *, pipeline: str = "ftp",
                    direction: ArrayLike | None = None, factor: float = 1.0,
                    clip: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
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
    geom = geometry(grid, space)
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
# Neighbours that change how the other records are computed
# ---------------------------------------------------------------------------

_TOP = 0.999 * float(np.finfo(float).max)
"""Values near the top of the float range: a product with a design of entries above 1 overflows."""


def _coefficient_summary(mechanism: Mechanism, who: str) -> Mechanism:
    """The mechanism, if its noise is added to the mean of fits in Cameron–Martin coordinates."""
    mech = check_mechanism(mechanism)
    geom = mech.geometry
    if mech.noise_factor is not None or mech.dim != geom.dim or mech.method not in ("ftp", "design"):
        raise ValueError(f"{who} builds neighbours for a mechanism whose noise is added to the mean of fits "
                         f"θ̄ (FTP, or a design with FTP's noise shape); {mech.name} adds it elsewhere")
    return mech


def _off_span(Phi: np.ndarray, rng: np.random.Generator, top: float) -> np.ndarray:
    """A curve orthogonal to span(Φ) (to rounding), scaled to max |value| = ``top``."""
    Q, _ = np.linalg.qr(Phi)
    r = rng.standard_normal(Phi.shape[0])
    v = r - Q @ (Q.T @ r)
    return v / np.max(np.abs(v)) * top


def _toward(Phi: np.ndarray, h: np.ndarray, top: float) -> np.ndarray:
    """A curve whose fit in the ball is B'·h/||h|| once ``top`` (its largest |value|) is large.

    The curve x = Φ(ΦᵀΦ)⁻¹h, scaled: Φᵀx is along h, and the fit of a curve far outside
    the ball, (ΦᵀΦ + νI)⁻¹Φᵀx with ν → ∞, turns to the direction of Φᵀx.
    """
    c = Phi @ np.linalg.solve(Phi.T @ Phi, h)
    return c / np.max(np.abs(c)) * top


def _unit(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    size = float(np.linalg.norm(v))
    return v / size if size > 0 and np.isfinite(size) else fallback / np.linalg.norm(fallback)


def batch_shape_pair(mechanism: Mechanism, n: int, *, candidates: int = 40,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Neighbours (X0, X1), (n, T) each, in which one record may change how another is computed.

    A curve v off span(Φ) with values near the top of the float range has a least-squares
    fit made of rounding error, which the ball scales to its sphere: a direction that only
    the rounding of that one curve sets.  If a mechanism's fit of v depends on the other
    curves — on the shape of a matrix product it is computed in, on whether it is
    recomputed alone or with others — a record can move v's fit by up to 2B'.  The pair:
    curve 1 is v in both datasets; curve 2 is, in X0, an in-span curve at the top of the
    float range (its product with the design overflows), in X1 an ordinary in-span curve
    outside the ball; the others are 0.  From first principles, by the mechanism's
    summary alone (a black box): for each of ``candidates`` random v (seeded by ``seed``),
    v's shift is n·[S(v, top) − S(v, ordinary)] − n·[S(0, top) − S(0, ordinary)], zero
    for a mechanism that maps each curve alone; curve 2 is then aimed along the largest
    shift found, so that its own change and v's add up (pair μ up to 2μ for a batch-
    dependent fit, exactly μ otherwise).

    For a mechanism whose noise is on the mean of fits θ̄ (FTP, a design with FTP's noise
    shape).  Pair μ by :func:`~dpfda.trust.recompute.pair_mu`; audit with :func:`audit`.
    """
    mech = _coefficient_summary(mechanism, "batch_shape_pair")
    n = check_int(n, "n", 2)
    candidates = check_int(candidates, "candidates", 1)
    geom = mech.geometry
    Phi, T, d = geom.Phi, geom.T, geom.dim
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    u = np.ones(d) / np.sqrt(d)
    far = 1e6 * mech.radius  # outside the ball, far from the top of the float range
    top, ordinary = _toward(Phi, u, _TOP), _toward(Phi, -u, far)

    def data(v: np.ndarray, other: np.ndarray) -> np.ndarray:
        X = np.zeros((n, T))
        X[0], X[1] = v, other
        return X

    zero = np.zeros(T)
    own = n * (mech.summary(data(zero, top)) - mech.summary(data(zero, ordinary)))
    best, victim = -1.0, _off_span(Phi, rng, _TOP)
    shift_best = np.zeros(d)
    for _ in range(candidates):
        v = _off_span(Phi, rng, _TOP)
        shift = n * (mech.summary(data(v, top)) - mech.summary(data(v, ordinary))) - own
        size = float(np.linalg.norm(shift))
        if size > best:
            best, victim, shift_best = size, v, shift
    h = _unit(-shift_best, u)  # X0 → X1 moves v by −shift; curve 2 moves along −h·2B'
    X0 = data(victim, _toward(Phi, -h, _TOP))
    X1 = data(victim, _toward(Phi, h, far))
    return X0, X1


def grouping_pair(mechanism: Mechanism, n: int, *, candidates: int = 60,
                  seed: int = 0) -> tuple[Curves, Curves]:
    """Neighbouring :class:`dpfda.Curves` on their own points in which one subject changes who shares its points.

    Two subjects a and b, on point sets A (20 points) and B (23 points), have values off the
    span of their designs at 10²⁰ B' (fits in the ball made of rounding error); a third
    subject sits on A in X0 and on B in X1, so a mechanism that fits the subjects on one
    point set together changes a's group and b's group at once; the others are zero curves
    on points of their own.  As in :func:`batch_shape_pair`, by the mechanism's summary
    alone: each victim's shift when the third subject joins its points (against the third
    subject on points of its own) is measured for ``candidates`` random victims, and the
    third subject's fit is aimed along the victims' total shift.  A mechanism that maps
    each subject alone gives pair μ exactly μ; one that fits groups together up to 3μ.

    For FTP on an orthonormal space (Legendre, Fourier), the one mechanism that takes curves
    on their own points.
    """
    mech = _coefficient_summary(mechanism, "grouping_pair")
    n = check_int(n, "n", 3)
    space = mech.geometry.space
    if mech.method != "ftp" or not isinstance(space, OrthonormalSpace):
        raise ValueError("grouping_pair builds curves on their own points, which FTP in an orthonormal "
                         f"space takes; {mech.name} does not")
    rng = np.random.default_rng(check_int(seed, "seed", 0))
    sets = [np.sort(rng.uniform(0.0, 1.0, size)) for size in (20, 23, max(space.m, 1) + 3)]
    A, B, C = sets
    u = np.ones(space.m) / np.sqrt(space.m)
    scale = 1e20 * mech.radius
    rest_t = [np.array([0.5 + 1e-3 * k]) for k in range(n - 3)]

    def curves(a: tuple, b: tuple, third: tuple) -> Curves:
        points, values = zip(a, b, third, *((t, np.zeros(1)) for t in rest_t))
        return Curves(list(values), list(points), (0.0, 1.0))

    def on(t: np.ndarray, h: np.ndarray) -> tuple:
        return t, _toward(space.basis(t), h, 1e6 * mech.radius)  # its fit: B'·h

    def victim(t: np.ndarray, home: np.ndarray, other: tuple) -> tuple[np.ndarray, np.ndarray]:
        best, out = -1.0, (np.zeros(t.size), np.zeros(space.m))
        away = on(home, u)
        for _ in range(candidates):
            v = _off_span(space.basis(t), rng, scale)
            shift = n * (mech.summary(curves((t, v), other, on(t, u)))
                         - mech.summary(curves((t, v), other, away)))
            size = float(np.linalg.norm(shift))
            if size > best:
                best, out = size, (v, shift)
        return out

    quiet = (C, np.zeros(C.size))  # a zero curve on points of its own
    va, sa = victim(A, C, quiet)
    vb, sb = victim(B, C, quiet)
    h = _unit(sb - sa, u)  # X0: a grouped, b alone; X1: a alone, b grouped
    X0 = curves((A, va), (B, vb), on(A, -h))
    X1 = curves((A, va), (B, vb), on(B, h))
    return X0, X1


# ---------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------


def _lda_direction(V0: np.ndarray, V1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Difference of means whitened by the pooled covariance (pseudo-inverse)."""
    m0, m1 = V0.mean(axis=0), V1.mean(axis=0)
    C = 0.5 * (np.cov(V0, rowvar=False) + np.cov(V1, rowvar=False))
    lam, U = np.linalg.eigh(np.atleast_2d(C))
    keep = lam > 1e-10 * max(lam[-1], 1e-300)
    w = (U[:, keep] / lam[keep]) @ (U[:, keep].T @ (m1 - m0))
    return w, 0.5 * (m0 + m1)


def _draw(mechanism: Mechanism, X: np.ndarray | Curves, draws: int, chunk: int, rng: np.random.Generator,
          view: Callable[[Release], np.ndarray]) -> np.ndarray:
    """``view`` of ``draws`` releases of ``X``, one row each, in chunks of ``chunk`` (the one loop).

    The releases are those ``mechanism.release`` makes on ``chunk`` copies of ``X``
    with ``rng`` (:func:`dpfda.trust.draws.repeat_mechanism`); with OpenDP's noise
    (``secure``) each chunk is a release of the copies.  Curves on their own points are
    summarised once and each chunk is the noise step of their release
    (:meth:`~dpfda.Mechanism.privatize` of the summary, normals from ``rng``).
    """
    if isinstance(X, Curves):
        centre = np.asarray(mechanism.summary(X), dtype=float)
        out = []
        for start in range(0, draws, chunk):
            c = min(chunk, draws - start)
            rel = mechanism.privatize(np.broadcast_to(centre, (c,) + centre.shape),
                                      rng.standard_normal((c, mechanism.noise_dim)), X.n)
            out.append(np.asarray(view(rel), dtype=float).reshape(c, -1))
        return np.concatenate(out, axis=0)
    if mechanism.secure:
        parts = [np.asarray(view(rel), dtype=float)
                 for rel in repeated(mechanism.release, X, draws, chunk, rng)]
        return np.concatenate([p.reshape(p.shape[0], -1) for p in parts], axis=0)

    def score(rel: Release, parts: dict, c: int) -> dict:
        return {"y": np.asarray(view(rel), dtype=float).reshape(c, -1)}

    return repeat_mechanism(mechanism, X, draws, rng, score, chunk=chunk)["y"]


def audit(mechanism: Mechanism, X0: ArrayLike | Curves, X1: ArrayLike | Curves, *, draws: int,
          rng: np.random.Generator,
          statistic: str | Callable[[Release], np.ndarray] = "lr", alpha: float = 0.05,
          thresholds: ArrayLike | None = None, n_thresholds: int = 32, split: float = 0.5,
          chunk: int = 20000) -> AuditResult:
    """Audit a mechanism on neighbouring datasets: empirical trade-off and μ lower bound.

    Parameters
    ----------
    mechanism : Mechanism
        A :class:`dpfda.Mechanism`, e.g. from :func:`ftp_mechanism`,
        :func:`ptf_mechanism` or a design of the book's (``dpfda_book.mechanisms.designs``).  Its
        ``release`` is called on a batch (size, n, T) of identical copies, so many
        releases cost one vectorised call per ``chunk``.
    X0, X1 : arrays (n, T), or dpfda.Curves
        Neighbouring datasets (they may differ in one curve only); Curves on their own
        points for FTP (:func:`grouping_pair`).
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
    mech = check_mechanism(mechanism)
    X0, X1 = neighbours(mech, X0, X1)
    check_n(mech, X0)

    view: Callable[[Release], np.ndarray]
    if isinstance(statistic, str) and statistic == "lr":
        # the audit's own summaries and noise law (recompute), never the mechanism's alone
        # the audit's own summaries and noise law (recompute), never the mechanism's alone;
        # the score tests the farther of the two pairs of centres (the audit's, the mechanism's)
        rec = recompute(mech, X0, X1)
        published = published_law(mech, X0)
        sigma = np.minimum(published.scale, formula_sigma(mech, dataset_n(X0)))
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
            zd = law.solve(d.reshape(1, -1))
            u = zd[0] / np.linalg.norm(zd[0]) if 0 < dist < np.inf else np.zeros(zd.shape[-1])
            score = lambda Y: law.solve(Y - s0) @ u  # noqa: E731
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
# The private covariances
# ---------------------------------------------------------------------------


def _orthogonal_unit(u: np.ndarray) -> np.ndarray:
    """A unit vector orthogonal to the unit vector u (alternating signs, with u's part removed)."""
    w = np.where(np.arange(u.size) % 2 == 0, 1.0, -1.0)
    w = w - (w @ u) * u
    if np.linalg.norm(w) < 1e-6:  # pragma: no cover - u itself alternates: take another direction
        w = np.eye(u.size)[0] - u[0] * u
    return w / np.linalg.norm(w)


def worst_case_covariance_pair(grid: ArrayLike, space: FunctionSpace, radius: float, n: int, *,
                               method: str = "ftp", angle: float = np.pi / 2,
                               clip: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Neighbours (X0, X1) of n curves that attain a covariance mechanism's sensitivities.

    From the definitions (not the mechanisms' code); every curve but the first is 0.

    ``method="ftp"``: the first curve of X0 is the noiseless function with Cameron–Martin
    coordinates B'u, u = (1, …, 1)/√d, and that of X1 has B'(cos(angle)·u + sin(angle)·w),
    w a unit vector orthogonal to u.  Both fits lie on the sphere of radius B', so the mean
    moves by 2B'·sin(angle/2)/n and the mean outer product by
    B'²·sqrt(2(1 − cos²(angle)))/n in Frobenius norm: ``angle`` = π/2 attains the second
    moment's sensitivity √2·B'²/n, ``angle`` = π the mean's 2B'/n (and moves no second
    moment).

    ``method="ptf"``: the first curve of X0 is c (every value at its upper clip bound, so
    u = clip(x)/c = (1, …, 1)), that of X1 is s⊙c with the signs s_j = +1 for the first
    ⌈T/2⌉ points and −1 after (``angle`` = π/2: uᵀv = T mod 2, so the mean outer product
    moves by sqrt(2T² − 2(T mod 2)²)/n, the sensitivity √2·T/n when T is even) or s = −1
    (``angle`` = π: the mean's 2c_j/n in every coordinate, no second moment).  ``clip``
    defaults to B'·a_j.
    """
    check_grid_space(grid, space, "worst_case_covariance_pair")
    geom = geometry(grid, space)
    radius = check_positive(radius, "radius")
    n = check_int(n, "n", 1)
    angle = check_positive(angle, "angle")
    if not angle <= np.pi:
        raise ValueError(f"angle must lie in (0, π], got {angle!r}")
    X0 = np.zeros((n, geom.T))
    X1 = np.zeros((n, geom.T))
    if method == "ftp":
        u = np.ones(geom.dim) / np.sqrt(geom.dim)
        if geom.dim == 1 and angle != np.pi:
            raise ValueError("a one-dimensional space has no orthogonal direction: use angle=π")
        w = _orthogonal_unit(u) if geom.dim > 1 else np.zeros(1)
        X0[0] = geom.values(radius * u)
        X1[0] = geom.values(radius * (np.cos(angle) * u + np.sin(angle) * w))
        return X0, X1
    if method != "ptf":
        raise ValueError(f"method must be 'ftp' or 'ptf', got {method!r}")
    c = radius * geom.eval_norm if clip is None else np.broadcast_to(as_float_array(clip, "clip"),
                                                                   (geom.T,)).copy()
    if not (np.all(np.isfinite(c)) and np.all(c > 0)):
        raise ValueError("clip must be finite and > 0 at every grid point")
    if angle == np.pi:
        signs = -np.ones(geom.T)
    elif angle == np.pi / 2:
        signs = np.where(np.arange(geom.T) < (geom.T + 1) // 2, 1.0, -1.0)
    else:
        raise ValueError("for method='ptf' the angle is π/2 (orthogonal corners) or π (opposite corners)")
    X0[0] = c
    X1[0] = signs * c
    return X0, X1


def joint_worst_angle(mu_mean: float, mu_cov: float) -> float:
    """The angle between two records on the sphere that maximises a composed FTP pair's μ.

    For fits B'u and B'v with cos∠(u, v) = κ the pair's μ² is
    μ_mean²(1 − κ)/2 + μ_cov²(1 − κ²) (the mean moves by B'·sqrt(2(1 − κ)), the mean outer
    product by B'²·sqrt(2(1 − κ²)), each over n and its σ); its maximum over κ ∈ [−1, 1]
    is at κ = −μ_mean²/(4μ_cov²) when that lies in [−1, 1], otherwise at κ = −1.
    """
    mu_mean = check_positive(mu_mean, "mu_mean")
    mu_cov = check_positive(mu_cov, "mu_cov")
    kappa = max(-1.0, -mu_mean**2 / (4.0 * mu_cov**2))
    return float(np.arccos(kappa))


def audit_covariance(mech: CovarianceMechanism, X0: ArrayLike, X1: ArrayLike, *, draws: int,
                     rng: np.random.Generator, alpha: float = 0.05, n_thresholds: int = 32,
                     split: float = 0.5) -> AuditResult:
    """An empirical μ lower bound for a covariance mechanism on neighbours (X0, X1).

    The score is the Neyman–Pearson statistic of the two Gaussian outputs together (the
    mean's noisy coordinates and the second moment's, each whitened by its σ): with the
    audit's own summaries (:func:`~dpfda.trust.recompute.audit_covariance_summary`) and
    σ (the smaller of the formula's and the published one), U = ⟨y − s0, d⟩/||d|| for the
    whitened difference d, N(0, 1) under X0 and N(||d||, 1) under X1.  Each dataset is
    summarised once and its ``draws`` releases differ in their noise only (the release's
    own noise step, :meth:`~dpfda.mechanisms.covariance.CovarianceMechanism.privatize`,
    with normals from ``rng``).  Thresholds come from a ``split`` of the draws, the
    Clopper–Pearson bounds from the rest (:func:`mu_lower_bound`).
    """
    draws = check_int(draws, "draws", 4)
    rng = check_rng(rng)
    if not isinstance(mech, CovarianceMechanism):
        raise TypeError(f"mech must be a CovarianceMechanism, got {type(mech).__name__}")
    X0, X1 = as_float_array(X0, "X0"), as_float_array(X1, "X1")
    rec = recompute_covariance(mech, X0, X1)
    n = X0.shape[0]
    sigma_m, sigma_c = covariance_formula_sigma(mech, n)
    law_m = np.minimum(np.asarray(rec.sigma_published[0], dtype=float), np.asarray(sigma_m))
    law_c = min(float(rec.sigma_published[1]), sigma_c)
    a0, a1 = audit_covariance_summary(mech, X0), audit_covariance_summary(mech, X1)
    s0 = np.concatenate([a0[0] / law_m, a0[1] / law_c])
    d = np.concatenate([a1[0] / law_m, a1[1] / law_c]) - s0
    norm = float(np.linalg.norm(d))
    w = d / norm if norm > 0 else np.zeros_like(d)

    def scores(X: np.ndarray) -> np.ndarray:
        centre_m, centre_c = mech.summary(X)
        rel = mech.privatize(np.broadcast_to(centre_m, (draws,) + centre_m.shape),
                             np.broadcast_to(centre_c, (draws,) + centre_c.shape),
                             rng.standard_normal((draws, mech.mean.noise_dim)),
                             rng.standard_normal((draws, mech.moment_dim)), n)
        y = np.concatenate([rel.mean.noisy_coordinates / law_m, rel.noisy_moment / law_c], axis=-1)
        return (y - s0) @ w

    e0, e1 = scores(X0), scores(X1)
    ncal = int(round(check_positive(split, "split") * draws))
    if not 2 <= ncal <= draws - 2:
        raise ValueError("split leaves too few calibration or evaluation draws; raise draws")
    levels = (np.arange(check_int(n_thresholds, "n_thresholds", 1)) + 0.5) / n_thresholds
    thresholds = np.quantile(np.concatenate([e0[:ncal], e1[:ncal]]), levels)
    res = mu_lower_bound(e0[ncal:], e1[ncal:], thresholds, alpha=alpha)
    return replace(res, draws=draws, statistic="lr", mechanism=mech.name, mu_claimed=mech.mu,
                   mu_pair=rec.mu_pair)
