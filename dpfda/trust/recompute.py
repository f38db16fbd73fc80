"""The audit's own recomputation of what a mechanism releases, from the definitions.

The neighbours' summaries from the curves by the audit's own fit, clip and average in
50-digit or exact rational arithmetic (:func:`audit_summary`), σ from the public parameters
and the paper's formulas (:func:`formula_sigma`, compared with the published
``noise_scale``), every array a release carries checked as post-processing of its Gaussian
output, and any part of that output outside the noise's range found by an exact rational
span test with no tolerance (μ = ∞ there) — all in :func:`recompute`.  :func:`pair_mu`
uses those summaries and solves the published noise law with :class:`NoiseLaw`: exact
power-of-two scaling, Householder QR and a condition check that raises instead of cutting
off.  For the audit only (:mod:`dpfda.trust.audit`); never release data with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves
from ..maths.spaces import GridGeometry, OrthonormalSpace
from ..mechanisms.covariance import CovarianceMechanism
from ..mechanisms.ftp_ptf import Mechanism
from ..validation import as_float_array, check_int, check_rng
from .checks import check_mechanism, check_n, dataset_n, neighbours

__all__ = [
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
    "fit_rounding_bounds",
    "rounding_allowance",
    "audit_covariance_summary",
    "covariance_formula_sigma",
    "covariance_composed_mu",
    "recompute_covariance",
    "CovarianceRecomputation",
    "DesignRegion",
]


# ---------------------------------------------------------------------------
# The published noise law, solved from first principles
# ---------------------------------------------------------------------------


AUDIT_MAX_CONDITION = 1e10
"""Largest condition number of a (scaled) published noise factor the audit will solve."""


def _pow2_exponents(v: ArrayLike) -> np.ndarray:
    """Integer exponents e with v·2^-e of magnitude in [1/2, 1) (0 where v is 0)."""
    _, e = np.frexp(np.asarray(v, dtype=float))
    return e.astype(np.int64)


def _norm_of_ratio(v: ArrayLike, scale: ArrayLike) -> float:
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

    def __init__(self, scale: ArrayLike, factor: ArrayLike | None = None) -> None:
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

    def outside(self, v: ArrayLike) -> bool:
        """Whether the vector v has a non-zero part off range(L), decided exactly (no tolerance).

        Always False for independent noise or a square L (full rank: every vector is in
        its range); otherwise rational Gaussian elimination on [L v].
        """
        if self.factor is None or self.factor.shape[1] == self.factor.shape[0]:
            return False
        return not _exactly_in_range(self.factor, np.asarray(v, dtype=float))

    def white(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Z, outside): Z with V = σ·L·Z row by row (…, k), and whether each row is off range(L).

        Z is the least-squares solution off range(L); ``outside`` is :meth:`outside` (exact).
        """
        V = np.asarray(V, dtype=float)
        flat = V.reshape(-1, V.shape[-1])
        outside = np.array([self.outside(v) for v in flat], dtype=bool)
        return self.solve(V), outside.reshape(V.shape[:-1])

    def solve(self, V: np.ndarray) -> np.ndarray:
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

    def _c_scale(self) -> np.ndarray:
        return np.ldexp(1.0, self._c)[None, :]

    def distance(self, d: ArrayLike) -> float:
        """||L⁻¹d||/σ: the μ of the pair whose summaries differ by ``d`` (inf off the range)."""
        d = np.asarray(d, dtype=float)
        if self.factor is None:
            return _norm_of_ratio(d, self.scale)
        if not np.any(d):
            return 0.0
        if self.outside(d):
            return float("inf")
        return _norm_of_ratio(self.solve(d.reshape(1, -1))[0], 1.0)


def published_law(mechanism: Mechanism, X: ArrayLike | Curves) -> NoiseLaw:
    """The noise law published by a release of ``mechanism`` on ``X`` (a probe with its own generator)."""
    probe = mechanism.release(X, np.random.default_rng(0))  # an array: checked as Curves on its grid
    return NoiseLaw(probe.noise_scale, probe.coordinate_factor)


def pair_mu(mechanism: Mechanism, X0: ArrayLike | Curves, X1: ArrayLike | Curves) -> float:
    """The exact μ of a Gaussian mechanism on one pair: ||L⁻¹(S(X1) - S(X0))||/σ.

    By the proof of Theorem 6 the two release laws are then exactly as hard to
    tell apart as N(0, 1) and N(pair_mu, 1).  The summaries S are the audit's own
    and the mechanism's (the larger μ counts), σ the smaller of the formula's and the
    published one, L the published factor solved by :class:`NoiseLaw`; inf when a
    release carries a part outside the support of its noise (:func:`recompute`).
    """
    return recompute(mechanism, X0, X1).mu_pair


# ---------------------------------------------------------------------------
# The audit's own recomputation: summaries, noise law, everything a release carries
# ---------------------------------------------------------------------------

AUDIT_DIGITS = 50
"""Decimal digits of the audit's own arithmetic (mpmath) for fits and projections."""

SUMMARY_GAP = 2.0**-20
"""Largest distance, in units of the sensitivity 2·bound/n, between a mechanism's summary and
the audit's recomputation that is put down to rounding (every proven rounding of the package
is below 2⁻¹⁰ of it only where σ is raised to cover it; ordinarily below 2⁻³¹)."""


def _mp() -> Any:
    try:
        import mpmath
    except ImportError as exc:  # pragma: no cover - exercised only without mpmath
        raise ImportError("the audit recomputes summaries in extended precision with mpmath; "
                          "install it with `pip install 'mpmath>=1.3,<2'` (or dpfda[audit])") from exc
    return mpmath


def _unique_rows(X: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows (u, T), their counts (u,)) of one dataset (n, T)."""
    rows, counts = np.unique(np.asarray(X, dtype=float), axis=0, return_counts=True)
    return rows, counts


def _exact_box_mean(X: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """The mean of clip(x_j) to [−c_j, c_j] over the curves, exactly (fractions), rounded once."""
    from fractions import Fraction

    rows, counts = _unique_rows(X)
    n = int(counts.sum())
    clipped = np.clip(rows, -clip, clip)  # exact in floating point
    return np.array([float(sum(Fraction(float(v)) * int(k) for v, k in zip(clipped[:, j], counts)) / n)
                     for j in range(rows.shape[1])])


def _mp_eigenbasis(mp: Any, Phi: np.ndarray) -> tuple[list, Any, Any]:
    """(eigenvalues α, eigenvectors V of ΦᵀΦ, Φᵀ), in mpmath: what every curve's fit shares."""
    Phi_t = mp.matrix(Phi.T.tolist())
    alpha, V = mp.eigsy(Phi_t * mp.matrix(Phi.tolist()))
    return list(alpha), V, Phi_t


def _mp_fit_in_ball(mp: Any, basis: tuple[list, Any, Any], x: np.ndarray, radius: float) -> list:
    """argmin ||x − Φθ||² over ||θ|| <= B', in mpmath (eigenbasis of ΦᵀΦ, safeguarded Newton on λ).

    θ(λ) = Σ_k v_k β_k / (α_k + λ), with λ = 0 when that is inside the ball and otherwise the
    root of ||θ(λ)|| = B'. ψ(λ) = 1/||θ(λ)|| is increasing and concave in λ, so a Newton step
    on ψ − 1/B' lands left of the root from either side. A step from the left is nudged right
    by a quarter of the tolerance below, one from the right nudged left, so the points fall on
    both sides and close the bracket from both ends; a step that would leave the bracket is
    replaced by bisection. The bracket [lo, hi] keeps ||θ(lo)|| > B' >= ||θ(hi)||, and the fit
    is taken at hi (inside the ball) once hi − lo is below 10^−(AUDIT_DIGITS − 10) of α_min + hi,
    so every 1/(α_k + λ) is within that relative distance of its value at the root.
    """
    alpha, V, Phi_t = basis
    b = Phi_t * mp.matrix([[float(v)] for v in x])
    d = len(alpha)
    beta = [sum(V[i, k] * b[i] for i in range(d)) for k in range(d)]
    B = mp.mpf(float(radius))
    live = [k for k in range(d) if beta[k] != 0]

    def norm2(lam: Any) -> Any:
        return mp.fsum((beta[k] / (alpha[k] + lam)) ** 2 for k in live)

    smallest = min(alpha[k] for k in range(d))
    if not live or (smallest > 0 and norm2(mp.mpf(0)) <= B * B):
        lam = mp.mpf(0)
    else:
        tol = mp.mpf(10) ** -(AUDIT_DIGITS - 10)
        lo = max(mp.mpf(0), -smallest)
        hi = lo + mp.sqrt(mp.fsum(v * v for v in beta)) / B + 1
        lam = hi
        for _ in range(4 * AUDIT_DIGITS):
            S = norm2(lam)
            if S > B * B:
                lo = lam
            else:
                hi = lam
            if hi - lo <= tol * (smallest + hi):
                break
            slope = mp.fsum(beta[k] ** 2 / (alpha[k] + lam) ** 3 for k in live) / (S * mp.sqrt(S))
            step = lam - (1 / mp.sqrt(S) - 1 / B) / slope
            step += (tol / 4 if S > B * B else -tol / 4) * (smallest + step)
            lam = step if lo < step < hi else (lo + hi) / 2
        lam = hi
    coef = [mp.fsum(V[i, k] * beta[k] / (alpha[k] + lam) for k in live) for i in range(d)]
    return coef


def _mp_mean_of_fits(X: np.ndarray, geometry: GridGeometry, radius: float) -> tuple[list, Any]:
    """The mean of the curves' fits in the ball (d mpf values), each fit in extended precision.

    ΦᵀΦ is diagonalised once (in the same precision) and shared by every curve's fit.
    """
    mp = _mp()
    rows, counts = _unique_rows(X)
    n = int(counts.sum())
    with mp.workdps(AUDIT_DIGITS):
        basis = _mp_eigenbasis(mp, geometry.Phi)
        total = [mp.mpf(0)] * geometry.dim
        for x, k in zip(rows, counts):
            fit = _mp_fit_in_ball(mp, basis, x, radius)
            total = [t + int(k) * f for t, f in zip(total, fit)]
        return [t / n for t in total], mp


def _mp_mean_of_subject_fits(curves: Curves, space: Any, radius: float) -> list:
    """The mean of each subject's fit in the ball on its own points (m mpf values), in extended precision.

    A subject whose points cannot determine a function of H_m (fewer than m points, or
    Φ_iᵀΦ_i with smallest eigenvalue at most 10⁻¹² of max(largest, 1), decided here in the
    audit's own precision) contributes zero: the public rule of own-points FTP.  Subjects
    on the same points share one 50-digit eigendecomposition.
    """
    mp = _mp()
    m = space.m
    subjects = curves.subjects()
    groups: dict = {}
    for t, x in subjects:
        groups.setdefault(t.tobytes(), (t, []))[1].append(x)
    with mp.workdps(AUDIT_DIGITS):
        total = [mp.mpf(0)] * m
        for t, rows in groups.values():
            if t.size < m:
                continue
            basis = _mp_eigenbasis(mp, space.basis(t))
            alpha = basis[0]
            if min(alpha) <= mp.mpf("1e-12") * max(max(alpha), 1):
                continue
            values, counts = _unique_rows(np.stack(rows))
            for x, k in zip(values, counts):
                fit = _mp_fit_in_ball(mp, basis, x, radius)
                total = [a + int(k) * f for a, f in zip(total, fit)]
        return [a / len(subjects) for a in total]


def _mp_ball_mean(X: np.ndarray, r: float) -> np.ndarray:
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


@runtime_checkable
class DesignRegion(Protocol):
    """What the audit reads of a mechanism of method ``"design"``: the public definition of its set.

    A design maps each curve into a convex set C, averages, adds N(0, σ²LLᵀ) and fits
    (the book's design space, ``dpfda_book.mechanisms.designs.Design``, satisfies this
    protocol; so do the designs broken on purpose).  Such a mechanism carries it as
    ``mechanism.per_curve.design``, and the audit recomputes the summary and σ from these
    public fields alone, never through the design's own code: ``region`` (``"box"``,
    ``"ellipsoid"``, ``"mix"`` or ``"ball"``), ``lam`` (the mix's λ), ``radius`` (B', the
    ellipsoid's), ``clip`` (the box's c_j), ``ball_radius``, the noise shape ``L``, the
    grid ``geometry``, ``coefficient_noise`` (the noise is added to the mean of fits θ̄)
    and the published ``extent`` R = max over C of ||L⁻¹x||, used only for the sets with
    no closed form (a box with a correlated L, a mix).
    """

    @property
    def region(self) -> str: ...  # noqa: D102

    @property
    def lam(self) -> float | None: ...  # noqa: D102

    @property
    def radius(self) -> float: ...  # noqa: D102

    @property
    def clip(self) -> np.ndarray | None: ...  # noqa: D102

    @property
    def ball_radius(self) -> float | None: ...  # noqa: D102

    @property
    def L(self) -> np.ndarray: ...  # noqa: D102

    @property
    def geometry(self) -> GridGeometry: ...  # noqa: D102

    @property
    def coefficient_noise(self) -> bool: ...  # noqa: D102

    @property
    def extent(self) -> float: ...  # noqa: D102


def _design_of(mech: Mechanism) -> DesignRegion:
    des = getattr(mech.per_curve, "design", None)
    if not isinstance(des, DesignRegion):
        raise TypeError(f"{mech.name}: a design mechanism must carry the public definition of its set "
                        "(per_curve.design, a dpfda.trust.recompute.DesignRegion) for the audit to recompute "
                        "its summary")
    return des


def _region_weights(des: DesignRegion) -> tuple[float, float]:
    """(box weight, ellipsoid weight) of a design's per-curve map, from its public definition.

    The box alone, the ellipsoid alone, or the mix (1 − λ)·box + λ·ellipsoid; not from the
    design's code.
    """
    if des.region == "box":
        return 1.0, 0.0
    if des.region == "ellipsoid":
        return 0.0, 1.0
    if des.region == "mix" and des.lam is not None:
        return 1.0 - des.lam, des.lam
    raise ValueError(f"the audit knows the regions box, ellipsoid, mix (with lam) and ball, not {des.region!r}")


def audit_summary(mech: Mechanism, X: ArrayLike | Curves) -> np.ndarray:
    """The audit's own summary of data ``X`` (n, T) or a Curves, in the coordinates the noise is added to.

    From the method's definition and the public parameters, never from the mechanism's
    code: FTP (Algorithm 1) the mean of the fits in the ball of radius B' (each fit and
    the mean in 50-digit arithmetic, rounded once); PTF (Algorithm 2) the mean of the
    values clipped to [−c_j, c_j] (exact, with fractions); a design its region's map:
    (1−λ)·the box mean + λ·(Φ times) the mean of fits, or the mean of projections onto
    its ball; FTP of curves on their own points (a :class:`dpfda.Curves`) the mean of each
    subject's fit on its points.  The coordinates are the mechanism's: d for FTP and a design
    whose noise is on θ̄ (``noise_factor`` None and the region's ``coefficient_noise``), T otherwise.
    """
    geom = mech.geometry
    if isinstance(X, Curves):  # own points: FTP's fit of each subject on the points it has
        if mech.method != "ftp" or not isinstance(geom.space, OrthonormalSpace):
            raise ValueError(f"{mech.name}: the audit recomputes curves on their own points for FTP in an "
                             "orthonormal space only")
        return np.array([float(v) for v in _mp_mean_of_subject_fits(X, geom.space, mech.radius)])
    X = as_float_array(X, "X")
    if mech.method == "ftp":
        mean, _ = _mp_mean_of_fits(X, geom, mech.radius)
        return np.array([float(v) for v in mean])
    if mech.method == "ptf":
        return _exact_box_mean(X, np.asarray(mech.clip, dtype=float))
    if mech.method != "design":
        raise ValueError(f"the audit knows the methods ftp, ptf and design, not {mech.method!r}")
    des = _design_of(mech)
    if des.region == "ball":
        assert des.ball_radius is not None
        return _mp_ball_mean(X, des.ball_radius)
    box_w, e_w = _region_weights(des)
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
            assert des.clip is not None
            box = _exact_box_mean(X, des.clip)
            out = [o + box_w * mp.mpf(float(b)) for o, b in zip(out, box)]
        return np.array([float(v) for v in out])


def fit_rounding_bounds(Phi: np.ndarray, X: np.ndarray, radius: float) -> np.ndarray:
    """How far any floating-point fit in the ball of each row of ``X`` may be from the exact fit.

    A first-order bound of the rounding a backward-stable fit cannot avoid, from the design
    alone (A = ΦᵀΦ with extreme eigenvalues α_min, α_max, κ = α_max/α_min): the product
    g = Φᵀx errs by at most γ_T·||Φ||_F·||x||, the solve with A adds a relative
    γ_{4d}·κ of ||A⁻¹g|| <= ||x||/√α_min, and the fit in the ball is the A-metric projection
    of A⁻¹g (eq. 16), 1-Lipschitz in the A-norm, hence √κ-Lipschitz in the Euclidean norm;
    the projection itself rounds by γ_{16d}·B'.  With a factor 4 of room:

        b(x) = 4·[√κ·(γ_T·||Φ||_F·||x||/α_min + γ_{4d}·κ·||x||/√α_min) + γ_{16d}·B'],

    capped at 2B' (every fit lies in the ball).  For curves of the size of the ball b is
    about 10⁻¹³·B'; for a curve far outside the ball whose fit is mostly rounding error (a
    curve off the span of Φ at 10²⁰ or 10³⁰⁸) it is 2B': no float computation can place
    that fit, only keep it in the ball.  Returns b (one per row of X (k, T)).
    """
    Phi = np.asarray(Phi, dtype=float)
    T, d = Phi.shape
    s = np.linalg.svd(Phi, compute_uv=False)
    a_min, a_max = float(s[-1]) ** 2, float(s[0]) ** 2
    u = 2.0**-53
    gamma = lambda k: k * u / (1 - k * u)  # noqa: E731
    if not a_min > 0:
        return np.full(np.shape(X)[0], 2.0 * radius)
    kappa = a_max / a_min
    X = np.asarray(X, dtype=float).reshape(-1, T)
    top = np.max(np.abs(X), axis=1) if T else np.zeros(X.shape[0])
    safe = np.where(top > 0, top, 1.0)
    with np.errstate(over="ignore"):  # a norm above the float range: inf, and b is capped below
        norms = top * np.sqrt(np.sum((X / safe[:, None]) ** 2, axis=1))  # no overflow in the squares
    per_norm = math.sqrt(kappa) * (gamma(T) * float(np.linalg.norm(Phi)) / a_min
                                   + gamma(4 * d) * kappa / math.sqrt(a_min))
    with np.errstate(over="ignore"):
        b = 4.0 * (per_norm * norms + gamma(16 * d) * radius)
    return np.minimum(b, 2.0 * radius)


def rounding_allowance(mech: Mechanism, X: ArrayLike | Curves) -> float:
    """How far a mechanism's summary of ``X`` may be from the exact one, in units of the sensitivity.

    The sum over the curves of :func:`fit_rounding_bounds` (each fit's unavoidable rounding)
    for the parts of the per-curve map that are fits in the ball — FTP, own-points FTP, a
    design's ellipsoid part with its weight, mapped to grid means by Φ where the noise is on
    the grid — divided by 2·bound, the pair's sensitivity times n.  Clipping and the
    projection onto a ball are exact or within a few ulps of the radius: nothing is added
    for them beyond :data:`SUMMARY_GAP`.
    """
    geom = mech.geometry
    if isinstance(X, Curves):
        space = geom.space
        if mech.method != "ftp" or not isinstance(space, OrthonormalSpace):
            return 0.0
        total = 0.0
        for t, x in X.subjects():
            if t.size >= space.m:
                total += float(fit_rounding_bounds(space.basis(t), x[None], mech.radius)[0])
        return total / (2.0 * mech.radius)
    X = as_float_array(X, "X")
    if mech.method == "ftp":
        return float(np.sum(fit_rounding_bounds(geom.Phi, X, mech.radius))) / (2.0 * mech.radius)
    if mech.method != "design":
        return 0.0
    des = _design_of(mech)
    weight = 0.0 if des.region == "ball" else _region_weights(des)[1]
    if weight == 0:
        return 0.0
    per_curve = weight * fit_rounding_bounds(geom.Phi, X, des.radius)
    if des.coefficient_noise and mech.noise_factor is None:
        return float(np.sum(per_curve)) / (2.0 * des.radius)
    rows = float(np.max(np.linalg.norm(geom.Phi, axis=1)))  # |Φ_j·δθ| <= ||Φ_j||·||δθ||
    return float(np.sum(per_curve)) * rows / (2.0 * des.extent)


def formula_sigma(mech: Mechanism, n: int) -> float | np.ndarray:
    """σ from the public parameters and the paper's formulas (not the mechanism's calibration).

    FTP: 2B'/(nμ) (Theorem 6, Corollaries 7–8); PTF: 2c_j√T/(nμ) (Proposition 9); a
    design: 2R/(nμ) with R = B' for noise on θ̄ (R of FTP), ||c/ℓ|| for a box with a
    diagonal noise shape (PTF's argument), and otherwise the design's published extent R
    (max over C of ||L⁻¹x||, the region's ``extent``).  Computed in 50-digit arithmetic
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


def _audit_extent(mp: Any, des: DesignRegion) -> Any:
    """R = max over C of ||L⁻¹x||, by the audit's own arithmetic where it has a closed form.

    Box with a diagonal L: ||c/ℓ|| (50 digits); ball of radius r: r/s_min(L) (exact for a
    diagonal L, else from the SVD of L itself, never the design's whitening); ellipsoid with
    a square L: B'·||L⁻¹Φ||₂ (:class:`NoiseLaw`'s own solve).  The other sets (a box with a
    correlated L, a mix) have no closed form: their published extent is used.
    """
    L = np.asarray(des.L, dtype=float)
    diagonal = L.shape[0] == L.shape[1] and not np.any(L - np.diag(np.diag(L)))
    if des.region == "box" and diagonal:
        assert des.clip is not None
        return mp.sqrt(mp.fsum((mp.mpf(float(c)) / mp.mpf(float(ell))) ** 2
                               for c, ell in zip(des.clip, np.diag(L))))
    if des.region == "ball":
        smin = mp.mpf(float(np.min(np.abs(np.diag(L))))) if diagonal else \
            mp.mpf(float(np.linalg.svd(L, compute_uv=False)[-1]))
        assert des.ball_radius is not None
        return mp.mpf(float(des.ball_radius)) / smin
    if des.region == "ellipsoid" and L.shape[0] == L.shape[1]:
        G = NoiseLaw(1.0, L).solve(des.geometry.Phi.T).T  # L⁻¹Φ
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


def _same_arrays(a: object, b: object) -> bool:
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
    rounding_allowance: float = 0.0

    @property
    def passed(self) -> bool:
        """No problem found and μ_pair <= μ(1 + 10⁻⁸)."""
        return not self.problems and self.mu_pair <= self.mu_claimed * (1 + 1e-8)


def recompute(mechanism: Mechanism, X0: ArrayLike | Curves, X1: ArrayLike | Curves, *, draws: int = 0,
              rng: np.random.Generator | None = None) -> Recomputation:
    """Audit one mechanism on neighbours (X0, X1) by recomputing what it releases.

    1. The summaries of X0 and X1 by the audit's own arithmetic (:func:`audit_summary`),
       compared with the mechanism's: within ``SUMMARY_GAP`` of the sensitivity, plus the
       rounding no floating-point fit can avoid (:func:`rounding_allowance`: nothing for
       curves of ordinary size, up to one sensitivity per curve whose fit is made of rounding
       error).  ``X0``, ``X1``: arrays (n, T), or :class:`dpfda.Curves` on their own points
       (FTP), neighbours in one subject.
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
    under that law.  The second is what catches a mechanism whose map of one curve depends
    on the others (a batch that changes their rounding): the audit's own fits are exact, so
    only the mechanism's summaries can show it.
    """
    mech = check_mechanism(mechanism)
    X0, X1 = neighbours(mech, X0, X1, adjacent=False)
    check_n(mech, X0)
    n = dataset_n(X0)
    problems: list[str] = []
    a0, a1 = audit_summary(mech, X0), audit_summary(mech, X1)
    m0, m1 = np.asarray(mech.summary(X0)), np.asarray(mech.summary(X1))
    sigma_f = formula_sigma(mech, n)
    scale_unit = np.min(np.atleast_1d(sigma_f)) * n * mech.mu / 2.0  # the bound (B', c_j or R)
    gap = max(float(np.max(np.abs(m0 - a0))), float(np.max(np.abs(m1 - a1)))) / (2.0 * scale_unit / n)
    allowance = max(rounding_allowance(mech, X0), rounding_allowance(mech, X1))
    if not gap <= SUMMARY_GAP + allowance:
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
        if isinstance(X0, Curves):  # the noise step of a release of X0, drawn ``draws`` times
            reps = mech.privatize(np.broadcast_to(m0, (draws,) + m0.shape),
                                  gen.standard_normal((draws, mech.noise_dim)), n)
        else:
            reps = mech.release(np.broadcast_to(X0, (draws,) + X0.shape), gen)
        exact = NoiseLaw(sigma_f, F)
        z = exact.solve(np.asarray(reps.noisy_coordinates, dtype=float) - a0)
        ratio = float(np.mean(z * z))
        if ratio < 1 - 6 * math.sqrt(2.0 / z.size):
            problems.append(f"the noise is smaller than the formula's: mean square {ratio:.3f} of its variance")
    return Recomputation(mechanism=mech.name, mu_claimed=mech.mu, mu_pair=mu_pair, mu_summaries=mu_sum,
                         sigma_formula=sigma_f, sigma_published=r0.noise_scale, summary_gap=gap,
                         noise_ratio=ratio, problems=tuple(dict.fromkeys(problems)),
                         rounding_allowance=allowance)


# ---------------------------------------------------------------------------
# The private covariances: the same recomputation for two composed Gaussian mechanisms
# ---------------------------------------------------------------------------


def _mp_pack(mp: Any, v: list) -> list:
    """The free coordinates of vvᵀ in mpmath: v_j² on the diagonal, √2·v_j·v_l above it, by rows."""
    root2 = mp.sqrt(2)
    k = len(v)
    return [v[j] * v[j] if j == q else root2 * v[j] * v[q] for j in range(k) for q in range(j, k)]


def audit_covariance_summary(mech: CovarianceMechanism, X: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The audit's own two summaries of ``X`` (n, T): the mean's and the packed second moment's.

    From the definitions, never from the mechanism's code.  FTP: each curve's fit in the
    ball of radius B' (``_mp_fit_in_ball``, 50 digits), the mean of the fits and the
    mean of their outer products' free coordinates (θ_j², √2·θ_jθ_l), rounded once.  PTF:
    the mean of the values clipped to [−c_j, c_j] (exact, fractions), and the mean of the
    outer products of u = clip(x)/c taken exactly in rational arithmetic, times √2 off the
    diagonal in 50 digits, rounded once.
    """
    from fractions import Fraction

    mp = _mp()
    X = as_float_array(X, "X")
    rows, counts = _unique_rows(X)
    n = int(counts.sum())
    geom = mech.geometry
    if mech.method == "ftp":
        with mp.workdps(AUDIT_DIGITS):
            basis = _mp_eigenbasis(mp, geom.Phi)
            total = [mp.mpf(0)] * geom.dim
            moment = [mp.mpf(0)] * (geom.dim * (geom.dim + 1) // 2)
            for x, k in zip(rows, counts):
                fit = _mp_fit_in_ball(mp, basis, x, mech.radius)
                total = [t + int(k) * f for t, f in zip(total, fit)]
                moment = [s + int(k) * q for s, q in zip(moment, _mp_pack(mp, fit))]
            return (np.array([float(t / n) for t in total]), np.array([float(s / n) for s in moment]))
    if mech.method != "ptf":
        raise ValueError(f"the covariance audit knows the methods ftp and ptf, not {mech.method!r}")
    clip = np.asarray(mech.clip, dtype=float)
    T = clip.size
    sums = [[Fraction(0)] * T for _ in range(T)]
    for x, k in zip(rows, counts):
        u = [Fraction(float(v)) / Fraction(float(c)) for v, c in zip(np.clip(x, -clip, clip), clip)]
        for j in range(T):
            for q in range(j, T):
                sums[j][q] += int(k) * u[j] * u[q]
    with mp.workdps(AUDIT_DIGITS):
        root2 = mp.sqrt(2)
        packed = []
        for j in range(T):
            for q in range(j, T):
                exact = sums[j][q] / n
                value = mp.mpf(exact.numerator) / exact.denominator
                packed.append(float(value if j == q else root2 * value))
    return _exact_box_mean(X, clip), np.array(packed)


def covariance_formula_sigma(mech: CovarianceMechanism, n: int) -> tuple[float | np.ndarray, float]:
    """(σ of the mean, σ_c of the second moment) from the public parameters and the definitions.

    Mean: 2B'/(nμ_mean) (FTP, Theorem 6) or 2c_j√T/(nμ_mean) (PTF, Proposition 9).  Second
    moment: the Frobenius sensitivity of the mean outer product over n public curves,
    sup ||vvᵀ − wwᵀ||_F/n = √2·r²/n for records of norm at most r (r = B' for the fits,
    r² = T for the cube [−1, 1]^T), over μ_cov.  Computed in 50 digits, rounded once; the
    rounding cover of the summaries (below 2⁻³¹ of σ up to about a hundred thousand
    curves) is not included.
    """
    mp = _mp()
    n = check_int(n, "n", 1)
    with mp.workdps(AUDIT_DIGITS):
        n_mu_m = mp.mpf(n) * mp.mpf(float(mech.mu_mean))
        n_mu_c = mp.mpf(n) * mp.mpf(float(mech.mu_cov))
        if mech.method == "ftp":
            B = mp.mpf(float(mech.radius))
            return float(2 * B / n_mu_m), float(mp.sqrt(2) * B * B / n_mu_c)
        c = np.asarray(mech.clip, dtype=float)
        root = mp.sqrt(c.size)
        sigma_m = np.array([float(2 * mp.mpf(float(cj)) * root / n_mu_m) for cj in c])
        return sigma_m, float(mp.sqrt(2) * c.size / n_mu_c)


def covariance_composed_mu(mu_mean: float, mu_cov: float) -> float:
    """sqrt(μ_mean² + μ_cov²), in 50 digits: the GDP composition of the two Gaussian mechanisms."""
    mp = _mp()
    with mp.workdps(AUDIT_DIGITS):
        return float(mp.sqrt(mp.mpf(float(mu_mean)) ** 2 + mp.mpf(float(mu_cov)) ** 2))


@dataclass(frozen=True)
class CovarianceRecomputation:
    """What the audit recomputed for one covariance mechanism on one pair, and what it found.

    ``mu_mean_pair`` and ``mu_cov_pair`` are the pair's μ of each Gaussian mechanism (the
    larger of the audit's and the mechanism's summaries, under the smaller of the
    formula's and the published σ); ``mu_pair`` = sqrt(mu_mean_pair² + mu_cov_pair²) is the
    pair's exact μ for the two independent outputs together.  ``passed``: no problem and
    ``mu_pair`` at most the claimed μ (to the rounding cover).
    """

    mechanism: str
    mu_claimed: float
    mu_composed: float
    mu_mean_pair: float
    mu_cov_pair: float
    mu_pair: float
    sigma_formula: tuple
    sigma_published: tuple
    summary_gap: float
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """No problem found and μ_pair <= μ(1 + 10⁻⁸)."""
        return not self.problems and self.mu_pair <= self.mu_claimed * (1 + 1e-8)


def recompute_covariance(mech: CovarianceMechanism, X0: ArrayLike, X1: ArrayLike, *,
                         rng: np.random.Generator | None = None) -> CovarianceRecomputation:
    """Audit a covariance mechanism on neighbours (X0, X1) by recomputing what it releases.

    1. Both summaries of X0 and X1 by the audit's own arithmetic
       (:func:`audit_covariance_summary`), compared with the mechanism's (within
       ``SUMMARY_GAP`` of each sensitivity).
    2. Both σ by the formulas (:func:`covariance_formula_sigma`), compared with the
       published ``mean.noise_scale`` and ``moment_scale``; the budget split must compose to
       the claimed μ (:func:`covariance_composed_mu`).
    3. A release of each dataset: its Gaussian outputs must have the mechanism's
       dimensions, and every other array it carries (the mean's coefficients and flags,
       the unprojected and projected covariance) must be recomputed bit for bit from them
       by the post-processing; no array may have an axis of length n.
    4. The pair's μ from the audit's summaries and from the mechanism's, whichever is
       larger, under the smaller σ.
    """
    if not isinstance(mech, CovarianceMechanism):
        raise TypeError(f"mech must be a CovarianceMechanism, got {type(mech).__name__}")
    X0, X1 = as_float_array(X0, "X0"), as_float_array(X1, "X1")
    if X0.ndim != 2 or X0.shape != X1.shape or int(np.sum(np.any(X0 != X1, axis=1))) > 1:
        raise ValueError("X0 and X1 must be neighbouring (n, T) datasets (differing in at most one curve)")
    n = X0.shape[0]
    problems: list[str] = []
    a0, a1 = audit_covariance_summary(mech, X0), audit_covariance_summary(mech, X1)
    m0, m1 = mech.summary(X0), mech.summary(X1)
    sigma_m, sigma_c = covariance_formula_sigma(mech, n)
    unit_m = 2.0 * (mech.radius if mech.method == "ftp" else np.asarray(mech.clip, dtype=float)) / n  # Δ_j
    unit_c = sigma_c * mech.mu_cov  # √2·r²/n
    gaps = [float(np.max(np.abs(m[0] - a[0]) / unit_m)) for m, a in ((m0, a0), (m1, a1))]
    gaps += [float(np.max(np.abs(m[1] - a[1]))) / unit_c for m, a in ((m0, a0), (m1, a1))]
    gap = max(gaps)
    if not gap <= SUMMARY_GAP:
        problems.append(f"the mechanism's summaries differ from the audit's by {gap:.3g} of the sensitivity")
    composed = covariance_composed_mu(mech.mu_mean, mech.mu_cov)
    if not composed <= mech.mu * (1 + 1e-12):
        problems.append(f"the budget split composes to {composed:.6g} > the claimed mu = {mech.mu:.6g}")
    gen = np.random.default_rng(0) if rng is None else check_rng(rng)
    r0, r1 = mech.release(X0, gen), mech.release(X1, gen)
    pub_m = np.asarray(r0.mean.noise_scale, dtype=float)
    pub_c = float(r0.moment_scale)
    if np.any(pub_m < np.asarray(sigma_m) * (1 - 1e-12)) or pub_c < sigma_c * (1 - 1e-12):
        problems.append("a published noise scale is below the formula's")
    for rel in (r0, r1):
        y_m = np.asarray(rel.mean.noisy_coordinates, dtype=float)
        y_c = np.asarray(rel.noisy_moment, dtype=float)
        if y_m.shape[-1] != mech.mean.dim or y_c.shape[-1] != mech.moment_dim:
            problems.append("the Gaussian outputs do not have the mechanism's dimensions")
            continue
        again = mech.post(mech.mean.post_process(y_m, n), y_c, n)
        if not (_same_arrays(again.coef, rel.coef) and _same_arrays(again.unprojected, rel.unprojected)
                and _same_arrays(again.mean.coef, rel.mean.coef)
                and _same_arrays(again.mean.active, rel.mean.active)
                and _same_arrays(again.mean.noisy_means, rel.mean.noisy_means)):
            problems.append("the release carries arrays that are not post-processing of its Gaussian outputs")
        for name, value in vars(rel).items():
            if isinstance(value, np.ndarray) and n > max(mech.geometry.T, mech.moment_dim) and n in value.shape:
                problems.append(f"the release's {name} has an axis of length n")
    law_m = np.minimum(pub_m, np.asarray(sigma_m))
    law_c = min(pub_c, sigma_c)
    mu_mean = max(_norm_of_ratio(a1[0] - a0[0], law_m), _norm_of_ratio(m1[0] - m0[0], law_m))
    mu_cov = max(_norm_of_ratio(a1[1] - a0[1], law_c), _norm_of_ratio(m1[1] - m0[1], law_c))
    return CovarianceRecomputation(
        mechanism=mech.name, mu_claimed=mech.mu, mu_composed=composed, mu_mean_pair=mu_mean,
        mu_cov_pair=mu_cov, mu_pair=math.hypot(mu_mean, mu_cov), sigma_formula=(sigma_m, sigma_c),
        sigma_published=(r0.mean.noise_scale, r0.moment_scale), summary_gap=gap,
        problems=tuple(dict.fromkeys(problems)))
