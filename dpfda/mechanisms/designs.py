"""Beyond the paper: one mechanism for the design space between PTF and FTP.

Every design does the same four things (chapter *The design space*)::

    X (…, n, T) ──map each curve into C──▶ mean (…, T) ──+σ·L·Z──▶ x̃ ──weighted ball fit──▶ release

* C is a symmetric convex set of grid vectors: PTF's **box** ∏[−c_j, c_j]
  (default c_j = B'a_j), a Euclidean **ball**, FTP's **ellipsoid**
  E = {Φθ : ||θ||₂ <= B'}, or a **mix** (1−λ)·box + λ·E, 0 <= λ <= 1 (a
  Minkowski combination).  Box and ball are reached by Euclidean projection
  (clipping, radial scaling), E by FTP's own fit (W = I: the fitted values are
  the Euclidean projection onto E), and a mix member maps a curve x to
  (1−λ)·clip(x) + λ·P_E(x), a point of (1−λ)·box + λ·E; λ = 0 is PTF's
  clipping, λ = 1 FTP's fit.
* The noise N(0, σ²Σ) has Σ = LLᵀ with L (T, k) of full column rank:
  ``"diagonal"`` L = diag(a_j) (PTF's shape), ``"isotropic"`` L = I,
  ``"ellipsoid"`` L = Φ (FTP's shape: σΦZ, Z ~ N(0, I_d)), or ``"matched"``
  (box: diagonal, ball: isotropic, ellipsoid: ellipsoid, mix:
  Σ_λ = (1−λ)·diag(ΦΦᵀ) + λ·ΦΦᵀ, FTP's covariance with its correlations
  shrunk by λ; L = Φ at λ = 1 and diag(a_j) at λ = 0).
* σ = Δ/μ with the exact sensitivity Δ = sup_{x, x' ∈ C} ||x − x'||_{Σ⁻¹}/n =
  2R/n, R = max_{x ∈ C} ||L⁻¹x|| (C is symmetric; L⁺ on the span of Φ for
  FTP's shape): the Gaussian mechanism in the whitened coordinates L⁻¹x̃,
  μ-GDP (Theorem 6 with an identity covariance after whitening); the fit is
  post-processing.  R per set: box with diagonal L, ||c/ℓ||; ball of radius r,
  r·||L⁻¹||₂; ellipsoid, B'·||L⁻¹Φ||₂ (B' exactly for FTP's noise); box with a
  general L and the mix, the maximum over the 2^(T−1) sign vectors s of a
  trust-region problem max_{||u|| <= 1} ||L⁻¹((1−λ)c∘s + λB'Φu)|| solved
  through its convex dual (a guaranteed upper bound, tight to rounding).

Floating point (issue #19).  What the guarantee needs is that σ is at least
2R/(nμ) for the *exact* R of the *computed* summaries, for every public
parameter the class accepts:

* **no pseudo-inverse.**  L⁻¹ is formed by exact division (diagonal L: PTF's
  shape, the isotropic shape, a diagonal covariance — however thin a direction)
  or by Householder QR of L with each row divided by a power of two, with its
  condition number κ checked: the extent's relative rounding is then at most
  8·T·κ²·2⁻⁵², and a noise shape for which that exceeds ``MAX_ROUNDING``
  (10⁻⁶) is refused with a ValueError that says what to change.  A
  pseudo-inverse would instead drop a direction of tiny variance silently — the
  direction in which the noise protects least (defect 1 of issue #19, kept as
  :func:`dpfda.trust.audit.broken_design_pinv`).
* **scale-free extents.**  The set's size (c, r, B') and L⁻¹ are written as
  mantissa·2^exponent, the maximisation runs on the mantissas and the exponents
  are added at the end: R/B' has the same relative accuracy for every B' in
  (0, 2^960] that ftp/ptf accept, and a design whose R or σ leaves the float
  range is refused with a message about the radius, n and μ.
* **the rounding is covered.**  Every R except PTF's box (whose T divisions and
  sum of squares round by at most (T + 2)·2⁻⁵³, as PTF's own σ_j do) is
  multiplied by 1 + 10⁻¹⁰ + 8·T·κ²·2⁻⁵², which exceeds the relative error of
  every step above; σ = 2R/(nμ) is formed on mantissas and exponents as
  :func:`dpfda.ftp_sigma` is.
* **cached on everything.**  An extent is cached under the geometry, set, λ,
  the bytes of L, the clipping bounds, the ball radius and B' itself (never
  rescaled from another radius).
* **the summaries.**  Each curve's point of C is computed exactly as PTF's
  clipping (exact), FTP's constrained fit (norm <= B' to a few ulps, see
  ``dpfda.ftp_fit_mean``) or :func:`project_ball` (norm <= r for every
  finite row) — so each curve's contribution stays in C; their average over
  curves is the one step whose rounding depends on the order of the curves,
  treated for every mechanism alike (:meth:`Design.parts`).
* **the sampler.**  ``mechanism(n, mu).release(..., secure=True)`` draws the noise with OpenDP's
  vector Gaussian mechanism on the whitened summary divided by R (sensitivity
  2/n, scale 2/(nμ), ρ = μ²/2 checked by OpenDP before drawing); use it for
  any release of real data.  The numpy path is for simulation: floating-point
  samplers can leak through their low-order bits (Mironov, 2012) and its draws
  can be rebuilt from the seed.

* The fit is dpfda's weighted ball-constrained least squares (default PTF's
  W = diag(a_j⁻²) and radius B'); ``fit="none"`` reads off the unconstrained
  weighted least-squares coordinates instead.

Floating point (issue #19; :mod:`dpfda.maths.summation`): every mean over curves —
of the clipped curves, of the fits, of the projections onto the ball — is
summed exactly and rounded once (:func:`dpfda.maths.summation.fixed_point_mean`);
the box part is exact per curve, fits have norm <= B'(1 + 2⁻⁴⁰), projections
norm <= r(1 + γ_{T+4}).  The maps applied after the mean (Φ·θ̄, the weights of
a mix) round too; :meth:`Design.rounding_excess` bounds how much all of this
can add to pair μ, measured through ||L⁻¹||₂, and σ is calibrated to
Δ(1 + ε) where ε > 2⁻³¹.  FTP's noise shape L = Φ has rank d < T: following the
package's one noise rule (:mod:`dpfda.mechanisms.mechanism`, with its floating-point
argument), such a design adds σI_d to the mean of fits θ̄ itself and forms the grid
means Φ(θ̄ + σZ) afterwards, as post-processing — never σΦZ on rounded grid means,
whose rounding outside span(Φ) would be published without noise
(:func:`dpfda.trust.audit.broken_design_rank_deficient`).

With the same noise stream, ``Design(region="mix", lam=0)`` releases what
:func:`dpfda.ptf` releases, and ``Design(region="ellipsoid", noise="ellipsoid",
fit="none")`` what :func:`dpfda.ftp` releases (on the grid), to rounding.  None
of this is in the paper; it answers §6's question about structured
perturbations with one family and an honest comparison.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._validation import (
    as_float_array,
    check_data,
    check_int,
    check_nonnegative,
    check_positive,
    check_secure,
)
from ..maths.spaces import FunctionSpace, GridGeometry, KernelSpace, LegendreSpace
from ..maths.summation import (
    MEAN_ROUNDING,
    RECORD_SLACK,
    TINY_ERR,
    calibration_factor,
    fixed_point_mean,
    gamma,
)
from . import secure as opendp_noise  # a module: its sampler is looked up at each release
from .calibration import PARAM_MAX, check_secure_budget, declared_sensitivity, noise_scale
from .mechanism import GridThenFit, Mechanism, WeightedFit
from .pipelines import (
    check_radius,
    fitter,
    ftp_fit_mean,
    ftp_rounding_excess,
    ptf_clip_bounds,
    ptf_clipped_mean,
    ptf_weight_vector,
)

__all__ = ["SETS", "NOISES", "FITS", "Design", "DesignMap", "DesignCalibration", "project_ball",
           ]

SETS = ("box", "ball", "ellipsoid", "mix")
NOISES = ("matched", "diagonal", "isotropic", "ellipsoid")
FITS = ("ball", "none")
_EXTENTS: dict = {}
"""Extents already computed, keyed on every input they depend on (see :meth:`Design._cached_extent`)."""

_EPS = float(np.finfo(float).eps)

_SAFETY = 1.0 + 1e-10
"""Radii computed by SVD or the trust-region dual are raised by at least this factor (rounding)."""

MAX_ROUNDING = 1e-6
"""Largest relative rounding bound of an extent that is accepted.

An extent computed through a whitening with condition number κ (after exact
power-of-two equilibration) is raised by 8·T·κ²·2⁻⁵² (see ``_Whitening``); a
noise shape for which that exceeds ``MAX_ROUNDING`` is refused with a ValueError
rather than calibrated on numbers that cannot be trusted."""

NOISE_ROW_RANGE = (2.0**-500, 2.0**500)
"""Accepted range of each grid point's largest entry in a non-diagonal noise factor L.

Inside it the whitening L⁻¹ (entries up to about κ·2⁵⁰⁰) and its products with the
set's points, scaled to a unit exponent, stay inside the floating-point range."""

MAX_ENUMERATION_T = 20
"""Largest grid for which a sensitivity is computed by enumerating sign vectors (2^(T−1))."""


# ---------------------------------------------------------------------------
# Projections, exact at every magnitude
# ---------------------------------------------------------------------------


def _robust_norm(X: np.ndarray):
    """(scaled rows, exponents e, norms of the scaled rows): X = scaled·2^e, entries <= 1.

    Dividing a row by a power of two is exact, so the norm of any finite row is
    computed without overflow; zero rows get e = 0.
    """
    top = np.max(np.abs(X), axis=-1)
    _, e = np.frexp(top)
    e = np.asarray(e, dtype=np.int64)
    U = np.ldexp(X, -e[..., None])
    return U, e, np.sqrt(np.einsum("...k,...k->...", U, U))


def project_ball(X, radius):
    """Euclidean projection of each row of ``X`` (…, T) onto the ball ||x||₂ <= radius.

    Rows inside are returned unchanged; the others become radius·x/||x||, with
    norm at most ``radius`` for every finite row, however large or small (the
    row is divided by a power of two before its norm is taken).
    """
    radius = check_radius(radius)
    X = as_float_array(X, "X")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or inf; every value must be a finite number")
    U, e, norm = _robust_norm(X)
    with np.errstate(over="ignore", under="ignore"):
        bound = np.ldexp(radius, -e)  # the radius in the row's units (inf: far inside)
    out = X.copy()
    active = norm > bound
    if np.any(active):
        y = radius * (U[active] / norm[active][:, None])
        _, ey, ny = _robust_norm(y)
        # Four ulps inside: the norm is <= radius whichever way it is rounded.
        # remove the last rounding: exactly feasible
        y *= (np.minimum(1.0, radius / np.ldexp(ny, ey)) * (1.0 - 4 * np.finfo(float).eps))[:, None]
        out[active] = y
    return out


# ---------------------------------------------------------------------------
# The exact radius of a set in the noise metric
# ---------------------------------------------------------------------------


def _exponent(x: float) -> int:
    """e with x = m·2^e and 1/2 <= |m| < 1 (0 for x = 0)."""
    return math.frexp(float(x))[1]


def _scaled(v):
    """(v̂, e) with v = v̂·2^e exactly and max|v̂| in [1/2, 1) (e = 0 for an all-zero array)."""
    v = np.asarray(v, dtype=float)
    top = float(np.max(np.abs(v))) if v.size else 0.0
    if top == 0.0:
        return v.copy(), 0
    e = _exponent(top)
    return np.ldexp(v, -e), e


def _entrywise_product(A, c):
    """(N̂, E) with A·diag(c) = N̂·2^E: each product formed on mantissas and exponents.

    No product over- or underflows on the way; only entries below 2^-1074 of the largest
    are lost when they are put on the common exponent E.
    """
    mA, eA = np.frexp(A)
    mc, ec = np.frexp(np.asarray(c, dtype=float))
    exps = eA.astype(np.int64) + ec.astype(np.int64)[None, :]
    mant = mA * mc[None, :]
    nz = mant != 0
    if not np.any(nz):
        return np.zeros_like(mant), 0
    E = int(np.max(exps[nz]))
    with np.errstate(under="ignore"):
        return np.ldexp(mant, exps - E), E


class _Whitening:
    """The noise metric ||x||_{Σ⁻¹} = ||L⁻¹x|| of a noise factor L, with no pseudo-inverse.

    ``M`` (k, T) is L⁻¹ for a square L and L⁺ = (LᵀL)⁻¹Lᵀ for FTP's tall L = Φ (used
    on the span of Φ only).  How it is computed, and what rounding it can carry:

    * diagonal L: M = diag(1/ℓ_j), one correctly rounded division per entry
      (relative error 2⁻⁵³), condition κ = 1 — however thin a direction is;
    * any other L: the rows are divided by powers of two, L = D·L̃ with D = diag(2^{r_j})
      (exact), so each row of L̃ has its largest entry in [1/2, 1); then Householder QR,
      L̃ = QR, and M = R⁻¹Qᵀ·D⁻¹ by triangular solves (backward stable; the column
      scaling by D⁻¹ is exact).  κ = cond₂(R) = cond₂(L̃) from R's singular values.

    An extent R = max_{x ∈ C} ||Mx|| computed with the rounded M is then within
    ``rounding`` = 8·T·κ²·2⁻⁵² of the exact one, relatively (the error of M is at most
    about T·κ·2⁻⁵²·||L̃⁻¹|| per unit of D⁻¹x, and R >= ||D⁻¹x||/||L̃|| at the maximiser);
    a factor whose bound exceeds ``MAX_ROUNDING`` is refused with a ValueError
    instead of giving a silently wrong extent (a pseudo-inverse would drop the thin
    direction, whose variance is what the extent is about).
    """

    def __init__(self, L: np.ndarray, label: str, check: bool = True):
        L = np.asarray(L, dtype=float)
        T, k = L.shape
        rows = np.max(np.abs(L), axis=1)
        self.diagonal = k == T and not np.any(L - np.diag(np.diag(L)))
        if self.diagonal:  # exact division: any ℓ_j whose reciprocal is a finite normal float
            with np.errstate(divide="ignore", over="ignore"):
                inv = 1.0 / np.diag(L)
            bad = ~(np.isfinite(inv) & (np.abs(inv) >= np.finfo(float).tiny))
            if check and np.any(bad):
                j = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"the noise shape {label} has standard deviation {L[j, j]:.3g} at grid point index "
                    f"{j}, whose reciprocal is not a normal floating-point number; rescale the noise "
                    "matrix, or leave grid points this close to 0 out of the grid"
                )
            self.M = np.diag(inv)
            self.kappa = 1.0
            self.rounding = 0.0
            return
        lo, hi = NOISE_ROW_RANGE
        if check and (np.any(rows < lo) or np.any(rows > hi)):
            j = int(np.argmin(rows)) if np.any(rows < lo) else int(np.argmax(rows))
            raise ValueError(
                f"the noise shape {label} has a standard deviation of scale {rows[j]:.3g} at grid point "
                f"index {j}, outside [2^-500, 2^500] ≈ [3e-151, 3e150]: the extent cannot be computed "
                "in floating point; rescale the noise matrix, or leave grid points this close to 0 "
                "out of the grid"
            )
        if k > T:
            raise ValueError(f"the noise factor of {label} has more columns than grid points")
        _, r = np.frexp(rows)
        Lt = np.ldexp(L, -r[:, None])
        Q, Rf = np.linalg.qr(Lt)
        sv = np.linalg.svd(Rf, compute_uv=False)
        self.kappa = float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf
        self.rounding = 8.0 * T * self.kappa**2 * _EPS
        if check and not self.rounding <= MAX_ROUNDING:
            raise ValueError(
                f"the noise shape {label} is too ill-conditioned for a reliable extent: with each grid "
                f"point scaled, its factor has condition number {self.kappa:.3g}, so rounding could move "
                f"the extent by up to {self.rounding:.2g} of itself (the limit is {MAX_ROUNDING:g}). "
                "Choose a better-conditioned noise: noise='diagonal' or 'isotropic', a covariance "
                "without nearly dependent grid points, lam further from 1, or fewer/more widely "
                "spaced grid points"
            )
        from scipy.linalg import solve_triangular

        Mt = solve_triangular(Rf, Q.T)  # L̃⁺ (k, T)
        self.M = np.ldexp(Mt, -r[None, :])

    def apply(self, v):
        """M·v for the rows of ``v`` (…, T), each row scaled by a power of two first."""
        v = np.asarray(v, dtype=float)
        top = np.max(np.abs(v), axis=-1, keepdims=True)
        _, e = np.frexp(top)
        Ms, eM = _scaled(self.M)
        with np.errstate(over="ignore", under="ignore"):
            return np.ldexp(np.ldexp(v, -e) @ Ms.T, e + eM)


def _trust_region_max(g: np.ndarray, G: np.ndarray):
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


def _sign_vectors(T: int) -> np.ndarray:
    """The 2^(T−1) sign vectors with s_1 = +1 (C is symmetric, so ±s give the same value)."""
    if T > MAX_ENUMERATION_T:
        raise ValueError(
            f"the exact sensitivity of this set enumerates 2^(T-1) sign vectors; T={T} is above "
            f"{MAX_ENUMERATION_T}: use a diagonal noise shape with the box, or the ball or ellipsoid"
        )
    bits = (np.arange(2 ** (T - 1))[:, None] >> np.arange(T - 1)) & 1
    return np.hstack([np.ones((bits.shape[0], 1)), 1.0 - 2.0 * bits])


# ---------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------


def check_grid_space(grid, space, who: str) -> None:
    """Refuse arguments given in the order (space, grid): every constructor takes (grid, space, ...).

    A TypeError names the argument when ``grid`` is a function space or ``space`` an array.
    """
    if isinstance(grid, FunctionSpace):
        raise TypeError(f"{who} takes (grid, space, ...): got a space as `grid` "
                        f"({type(grid).__name__}); write {who}(grid, space, ...)")
    if isinstance(space, (np.ndarray, list, tuple)):
        raise TypeError(f"{who} takes (grid, space, ...): got an array as `space`; "
                        f"write {who}(grid, space, ...)")


class Design:
    """Map each curve into a convex set C, average, add N(0, σ²Σ), fit (module docstring).

    Parameters
    ----------
    grid : array (T,)
        Public grid points of [0, 1].
    space : LegendreSpace or KernelSpace
    radius : float
        B', the radius of FTP's ellipsoid E and of the final fit.
    region : {"box", "ball", "ellipsoid", "mix"}
        The set C each curve is mapped into (module docstring).
    lam : float in [0, 1]
        The mix parameter λ (``region="mix"`` only): 0 is PTF's box, 1 FTP's E.
    clip : float or array (T,), optional
        Box bounds c_j (``region="box"`` and ``"mix"``); default B'a_j (Theorems 11, 14).
    ball_radius : float, optional
        Radius r of the ball (``"ball"`` only); default B'·||Φ||₂, the smallest
        ball around E.
    noise : {"matched", "diagonal", "isotropic", "ellipsoid"} or array (T, T)
        The shape Σ of the noise, or a positive definite covariance matrix.
    weights : float or array (T,), optional
        The fit's W = diag(weights); default PTF's diag(a_j⁻²).
    fit : {"ball", "none"}
        Weighted least squares in the ball of radius B', or unconstrained.
    """

    def __init__(self, grid, space, radius, *, region="mix", lam=None, clip=None, ball_radius=None,
                 noise="matched", weights=None, fit="ball"):
        check_grid_space(grid, space, type(self).__name__)
        if not isinstance(space, (LegendreSpace, KernelSpace)):
            raise TypeError(f"space must be a LegendreSpace or KernelSpace, got {type(space).__name__}")
        geom = space.at(grid)
        self.geometry: GridGeometry = geom
        self.radius = check_radius(radius)
        if not isinstance(region, str) or region not in SETS:
            raise ValueError(f"region must be one of {', '.join(SETS)}, got {region!r}")
        self.region = region
        if region == "mix":
            if lam is None or not isinstance(lam, numbers.Real) or isinstance(lam, bool):
                raise TypeError(f"lam must be a real number in [0, 1] for region='mix', got {lam!r}")
            lam = float(lam)
            if not 0.0 <= lam <= 1.0:
                raise ValueError(f"lam must lie in [0, 1], got {lam!r}")
        elif lam is not None:
            raise ValueError("lam applies to region='mix' only")
        self.lam = lam
        self._box_w, self._e_w = self._parts_weights()
        if clip is not None and self._box_w == 0.0:
            raise ValueError(f"clip applies to a region with a box part, not region={region!r}")
        self.clip = ptf_clip_bounds(geom, self.radius, clip) if self._box_w > 0 else None
        if region == "ball":
            default = self.radius * float(np.linalg.norm(geom.Phi, 2))
            self.ball_radius = default if ball_radius is None else check_radius(ball_radius)
        elif ball_radius is not None:
            raise ValueError("ball_radius applies to region='ball' only")
        else:
            self.ball_radius = None
        self.weights = ptf_weight_vector(geom, weights)
        if not isinstance(fit, str) or fit not in FITS:
            raise ValueError(f"fit must be 'ball' or 'none', got {fit!r}")
        self.fit = fit
        self.noise = noise if isinstance(noise, str) else "custom"
        self.L = self._noise_factor(noise)
        self.L.setflags(write=False)
        # FTP's own shape: noise σΦZ on the ellipsoid, whose extent is B' exactly.
        self._ftp_shaped = self.L is geom.Phi and self._box_w == 0 and self._e_w == 1.0
        label = f"noise={noise!r}" if isinstance(noise, str) else "given as a matrix"
        # FTP's shape needs no whitening for its extent (R = B'); its M serves whiten() only.
        self._whitening = _Whitening(self.L, label, check=not self._ftp_shaped)
        if self.ball_radius is not None and self.ball_radius > PARAM_MAX:
            raise ValueError(
                f"radius={self.radius!r} is too large for region='ball': the default ball radius "
                f"radius·||Φ||₂ = {self.ball_radius:.4g} exceeds 2^960 ≈ 9.7e288; lower the radius "
                "or pass ball_radius"
            )
        try:
            fitter(geom, self.weights)
        except ValueError as exc:
            raise ValueError(
                f"the final fit's weights cannot be used on this grid ({exc}); pass weights=1.0 "
                "(an unweighted fit) or leave grid points where the space is nearly zero out of the grid"
            ) from None
        self.extent, self._extreme = self._cached_extent()

    # -- the set --------------------------------------------------------------
    def _parts_weights(self):
        """(weight of the box part, weight of the E part) of the per-curve map."""
        if self.region == "box":
            return 1.0, 0.0
        if self.region == "ellipsoid":
            return 0.0, 1.0
        if self.region == "ball":
            return 0.0, 0.0
        return 1.0 - self.lam, self.lam

    @property
    def ellipsoid_weight(self) -> float:
        """The weight of FTP's ellipsoid part in the per-curve map (λ for a mix; 1, or 0)."""
        return self._e_w

    @property
    def name(self) -> str:  # noqa: D102 - the design's label, documented in the class docstring
        what = f"mix λ={self.lam:g}" if self.region == "mix" else self.region
        return f"{what}, {self.noise} noise, fit={self.fit}"

    def __repr__(self):
        return f"Design({self.name}, space={self.geometry.space!r}, T={self.geometry.T}, radius={self.radius})"

    def _noise_factor(self, noise) -> np.ndarray:
        geom = self.geometry
        T, a, Phi = geom.T, geom.eval_norm, geom.Phi
        if not isinstance(noise, str):
            S = as_float_array(noise, "noise")
            if S.shape != (T, T) or not np.all(np.isfinite(S)) or not np.allclose(S, S.T):
                raise ValueError(f"noise must be a symmetric finite (T, T) matrix with T={T}")
            try:
                return np.linalg.cholesky(S)
            except np.linalg.LinAlgError:
                raise ValueError("noise must be positive definite (its Cholesky factorisation failed)") from None
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {', '.join(NOISES)} or a (T, T) matrix, got {noise!r}")
        if noise == "matched":
            noise = {"box": "diagonal", "ball": "isotropic", "ellipsoid": "ellipsoid"}.get(self.region)
            if noise is None:  # the mix
                noise = "diagonal" if self.lam == 0 else "ellipsoid" if self.lam == 1 else None
            if noise is None:
                K = Phi @ Phi.T
                S = (1.0 - self.lam) * np.diag(np.diag(K)) + self.lam * K
                try:
                    return np.linalg.cholesky((S + S.T) / 2.0)
                except np.linalg.LinAlgError:
                    raise ValueError(
                        f"noise='matched' for lam={self.lam!r} is not numerically positive definite on "
                        "this grid; use lam further from 1 or noise='diagonal'"
                    ) from None
        if noise == "diagonal":
            return np.diag(a)
        if noise == "isotropic":
            return np.eye(T)
        if geom.dim < T and self.region != "ellipsoid" and not (self.region == "mix" and self.lam == 1):
            raise ValueError(
                f"noise='ellipsoid' has rank d={geom.dim} < T={T}: it can only protect a set inside "
                "the span of Φ (region='ellipsoid'); choose a full-rank noise shape"
            )
        return Phi

    def _cached_extent(self):
        """:meth:`_extent`, cached on everything it depends on.

        The key holds the geometry (by identity, checked on a hit), the set, λ, the noise
        factor's bytes and shape, the clipping bounds, the ball radius and the radius B'
        itself: nothing is rescaled from another radius, so a design at one radius can
        never change the extent of another.
        """
        key = (id(self.geometry), self.region, self.lam, self.L.shape, self.L.tobytes(),
               None if self.clip is None else self.clip.tobytes(), self.ball_radius, self.radius)
        hit = _EXTENTS.get(key)
        if hit is not None and hit[0] is self.geometry:
            R, ext = hit[1]
            return R, {k: (None if v is None else v.copy()) for k, v in ext.items()}
        R, ext = self._extent()
        if len(_EXTENTS) > 256:
            _EXTENTS.clear()
        _EXTENTS[key] = (self.geometry, (R, {k: (None if v is None else v.copy()) for k, v in ext.items()}))
        return R, ext

    def _extent(self):
        """R = max_{x ∈ C} ||L⁻¹x|| (raised by the rounding bound) and a maximiser x*.

        Computed scale-free: the set's size (c, r or B') and the whitening M are each
        written as mantissa·2^exponent, the maximisation runs on the mantissas (unit
        scale, where neither squares nor sums can over- or underflow) and the exponents
        are added at the end, so B' from 5e-324 to 2^960 gives R/B' to the same relative
        accuracy.  Where each number comes from, and its rounding:

        * ellipsoid with FTP's noise (L = Φ): R = B' exactly (L⁺Φ = I), no rounding;
        * ball of radius r: R = r·||M||₂ (SVD: largest singular value to O(T·2⁻⁵²));
        * ellipsoid with a square L: R = B'·||MΦ||₂ (the same);
        * box with diagonal L: R = ||c/ℓ||, one product and a sum of T positive squares
          (relative error <= (T + 2)·2⁻⁵³);
        * box with any other L, and the mix: the maximum over the 2^(T−1) sign vectors s
          of max_{||u||<=1} ||M((1−λ)c∘s + λB'Φu)||, by the trust-region dual
          (:func:`_trust_region_max`: an upper bound up to O(d·2⁻⁵²)).

        Every R is then multiplied by 1 + 10⁻¹⁰ + ``rounding`` (``_Whitening``: the
        error M itself may carry), which covers these relative errors by orders of
        magnitude; σ = 2R/(nμ) is then at least the exact σ, so the pair μ of any two
        neighbours is at most μ in exact arithmetic on the rounded summaries.
        """
        geom, W = self.geometry, self._whitening
        safety = _SAFETY + W.rounding
        Ms, eM = _scaled(W.M)
        if self.region == "ball":
            rs, er = _scaled(self.ball_radius)
            _, s, Vt = np.linalg.svd(Ms)
            return self._finish(float(rs) * float(s[0]) * safety, er + eM), {"x": self.ball_radius * Vt[0]}
        if self.region == "ellipsoid" or (self.region == "mix" and self.lam == 1.0):
            Gs = Ms @ geom.Phi
            _, s, Vt = np.linalg.svd(Gs)
            e = self.radius * (geom.Phi @ Vt[0])
            if self._ftp_shaped:
                return self.radius, {"x": e, "e": e}  # L⁺Φ = I: R = B' exactly (FTP)
            Bs, eB = _scaled(self.radius)
            return self._finish(float(Bs) * float(s[0]) * safety, eB + eM), {"x": e, "e": e}
        c = self.clip
        if W.diagonal and self._e_w == 0.0:
            # PTF's analysis: coordinate j moves by 2c_j/n against noise σℓ_j, so R = ||c/ℓ||.
            # Each c_j/ℓ_j is one division of mantissas (the bits of c_j/ℓ_j wherever that is a
            # normal float), the sum of T squares on a common exponent and the root round to a
            # relative error below (T + 2)·2⁻⁵³ — the few ulps PTF's own σ_j carry; no safety
            # factor, so the box member releases exactly what PTF releases.
            mc, ec = np.frexp(c)
            ml, el = np.frexp(np.diag(self.L))
            mant, expo = mc / ml, ec.astype(np.int64) - el.astype(np.int64)
            E = int(np.max(expo))
            with np.errstate(under="ignore"):
                ratio = np.ldexp(mant, expo - E)
            return self._finish(float(np.sqrt(ratio @ ratio)), E), {"x": c.copy()}
        signs = _sign_vectors(geom.T)
        # g_s = (1−λ)·M(c∘s) and G = λB'·MΦ, both on one power-of-two scale 2^E.
        Nb, Eb = _entrywise_product(W.M, c)  # M·diag(c) = Nb·2^Eb
        MPhi, eMPhi = _scaled(Ms @ geom.Phi)
        Bs, eB = _scaled(self.radius)
        EG = eB + eM + eMPhi
        E = max(Eb, EG) if self._e_w > 0 else Eb
        with np.errstate(under="ignore"):
            g = self._box_w * (signs @ np.ldexp(Nb, Eb - E).T)  # (N, k)
            G = np.ldexp(self._e_w * float(Bs) * MPhi, EG - E) if self._e_w > 0 else np.zeros_like(MPhi)
        # Prune: ||g + Gu||² <= ||g||² + 2||Gᵀg|| + ||G||₂² for ||u|| <= 1, so a sign vector
        # whose bound is below a value attained by another cannot hold the maximum.
        gG = g @ G
        gGnorm = np.sqrt(np.einsum("ij,ij->i", gG, gG))
        u0 = gG / np.maximum(gGnorm, 1e-300)[:, None]
        r0 = g + u0 @ G.T
        attained = np.einsum("ij,ij->i", r0, r0)
        lower = float(np.max(attained))
        upper = np.einsum("ij,ij->i", g, g) + 2.0 * gGnorm + np.linalg.norm(G, 2) ** 2
        keep = np.union1d(np.flatnonzero(upper >= lower * (1.0 - 1e-9)), [int(np.argmax(attained))])
        values, u = _trust_region_max(g[keep], G)
        best = int(np.argmax(values))
        u, best = u[best:best + 1], int(keep[best])
        b = self._box_w * signs[best] * c
        e = self._e_w * self.radius * (geom.Phi @ u[0])
        return (self._finish(float(np.sqrt(np.max(values))) * safety, E),
                {"x": b + e, "e": e / self._e_w if self._e_w else None})

    def _finish(self, mantissa: float, exponent: int) -> float:
        """R = mantissa·2^exponent as a float, or a ValueError about the user's radius."""
        with np.errstate(over="ignore", under="ignore"):
            R = float(np.ldexp(mantissa, exponent))
        what = f"region={self.region!r}" + (f", lam={self.lam!r}" if self.lam is not None else "")
        if not np.isfinite(R):
            raise ValueError(
                f"radius={self.radius!r} is too large for this design ({what}, {self.name}): its radius in "
                f"the noise metric would be about {mantissa:.4g}·2^{exponent}, beyond the floating-point "
                "range; lower the radius (or clip / ball_radius), or use a noise shape with more "
                "variance in the set's thin directions"
            )
        if R < np.finfo(float).tiny:
            raise ValueError(
                f"radius={self.radius!r} is too small for this design ({what}, {self.name}): its radius "
                f"in the noise metric, {R!r}, is not a normal floating-point number; raise the "
                "radius (or clip / ball_radius)"
            )
        return R

    # -- per-curve maps and the summary ----------------------------------------
    def _check_X(self, X):
        return check_data(X, self.geometry.T)

    def project(self, X) -> np.ndarray:
        """Each curve mapped into C: shape (…, n, T)."""
        X = self._check_X(X)
        if self.region == "ball":
            return project_ball(X, self.ball_radius)
        out = np.zeros(X.shape)
        if self._box_w > 0:
            out += self._box_w * np.clip(X, -self.clip, self.clip)
        if self._e_w > 0:
            coef = fitter(self.geometry).solve(X, self.radius).coef
            out += self._e_w * (coef @ self.geometry.Phi.T)
        return out

    def parts(self, X, *, exact: bool = True) -> dict:
        """The per-curve work every design shares, averaged over curves (…, T).

        Keys: ``"box"`` (mean of clip(x) at this design's bounds), ``"ellipsoid"``
        (Φ times FTP's mean of fits), ``("ball", r)``, and the binding flags
        ``"box_active"``, ``"ellipsoid_active"``, ``"ball_active"`` (…,): whether
        some curve was moved.  Flags are diagnostics for simulations, never part
        of a release.  Every mean is exact up to one rounding
        (:func:`dpfda.maths.summation.fixed_point_mean`); ``exact=False`` is the
        simulations' faster sum (:func:`dpfda.simulation.design_runs.simulate_designs`; no release uses it).
        """
        out = self._parts_per_curve(self._check_X(X), exact)
        for flag in ("box_active", "ellipsoid_active", "ball_active"):
            if flag in out:
                out[flag] = out[flag].any(axis=-1)
        return out

    def _parts_per_curve(self, X, exact: bool) -> dict:
        """:meth:`parts` with per-curve flags (…, n): which curves each part moved."""
        out: dict = {}
        if self._box_w > 0:
            out["box"] = ptf_clipped_mean(X, self.clip, exact=exact)
            out["box_active"] = np.any(np.abs(X) > self.clip, axis=-1)
        if self._e_w > 0:
            mean_coef, active = ftp_fit_mean(X, self.geometry, self.radius, exact=exact)
            out["ellipsoid_coef"] = mean_coef
            out["ellipsoid"] = mean_coef @ self.geometry.Phi.T
            out["ellipsoid_active"] = active
        if self.region == "ball":
            P = project_ball(X, self.ball_radius)
            out[("ball", self.ball_radius)] = (fixed_point_mean(P, self.ball_radius) if exact
                                              else P.mean(axis=-2))
            out["ball_active"] = np.any(P != X, axis=-1)
        return out

    def summarize(self, X, *, exact: bool = True):
        """(summary (…, T), moved (…, n)): the mean of the per-curve maps, and which curves moved.

        A curve is moved when some part of the map changed it (clipped, fitted onto the
        ball's boundary, projected).  ``exact=False``: the simulations' fast sum.
        """
        parts = self._parts_per_curve(self._check_X(X), exact)
        # every design has at least one part, so at least one flag
        moved = np.logical_or.reduce([parts[f] for f in ("box_active", "ellipsoid_active", "ball_active")
                                      if f in parts])
        return self.summary_from_parts(parts), moved

    def summary_from_parts(self, parts: dict) -> np.ndarray:
        """The mean of the per-curve maps, from :meth:`parts`, in the noise's coordinates.

        (…, T) for a full-rank noise; (…, d), the mean of fits θ̄, for FTP's shape L = Φ
        (whose grid means Φθ̄ are formed after the noise, :meth:`mechanism`).
        """
        if self._ftp_shaped:
            return parts["ellipsoid_coef"]
        if self.region == "ball":
            return parts[("ball", self.ball_radius)]
        if self._e_w == 0:
            return self._box_w * parts["box"]
        if self._box_w == 0:
            return parts["ellipsoid"]
        return self._box_w * parts["box"] + self._e_w * parts["ellipsoid"]

    @property
    def coefficient_noise(self) -> bool:
        """Whether the noise is added to the mean of fits θ̄ (FTP's shape L = Φ), not to grid means."""
        return self._ftp_shaped

    def grid_summary(self, X) -> np.ndarray:
        """The mean of the per-curve maps on the grid (…, T) (Φθ̄ for FTP's shape)."""
        s = self.summary(X)
        return s @ self.geometry.Phi.T if self._ftp_shaped else s

    @property
    def noise_dim(self) -> int:
        """The number k of coordinates the noise is added in (d for FTP's shape L = Φ, else T)."""
        return self.geometry.dim if self._ftp_shaped else self.geometry.T

    def summary(self, X) -> np.ndarray:
        """The non-private centre in the noise's coordinates (:meth:`summary_from_parts`)."""
        return self.summary_from_parts(self.parts(X))

    def whiten(self, v) -> np.ndarray:
        """Coordinates M·v (…, k), M = L⁻¹ (L⁺ on the span of Φ for FTP's shape): N(0, σ²I) noise.

        No pseudo-inverse: M comes from ``_Whitening`` (exact for a diagonal L, QR
        with a condition check otherwise), and each row of ``v`` is scaled by a power of
        two before the product, so it over- or underflows only where the result does.
        """
        return self._whitening.apply(v)

    # -- calibration -------------------------------------------------------------
    def sensitivity(self, n: int) -> float:
        """Δ = sup_{x, x' ∈ C} ||x − x'||_{Σ⁻¹}/n = 2R/n."""
        n = check_int(n, "n", 1)
        return 2.0 * self.extent / n

    def rounding_excess(self, n: int) -> float:
        """Proven bound ε on the relative excess of pair μ from the rounding of the summary.

        The summary y is built from means that are exact up to one rounding
        (:func:`dpfda.maths.summation.fixed_point_mean`) and, for the box, ellipsoid and
        mix, a few linear maps after the mean.  Per grid point, ``|y − m|`` is at most

        * ball: γ₄·r (the projected curves have norm <= r(1 + γ_{T+4}): the
          projection's own norm check rounds; ρ = γ_{T+4} below);
        * box part: (1−λ)·γ₈·c_j (clipping exact; the mean, the weight, the sum);
        * ellipsoid part: λ·γ_{d+8}·B'(1 + 2⁻⁴⁰)·||Φ||_F in ℓ₂ (the fits have norm
          <= B'(1 + 2⁻⁴⁰), as FTP's; the mean, Φ·θ̄ with d terms, the weight, the sum);

        plus √T·2⁻¹⁰⁷⁴ for the subnormal range, where m is the same map of the
        exact mean of the curves' points.  The exact means of neighbours move by
        at most 2R(1 + ρ)/n in the noise metric (ρ = 2⁻⁴⁰ when fits are part of
        C: they may exceed the ellipsoid by that factor), and an error e moves
        the whitened summary by at most ||L⁺||₂·||e||₂.  Hence
        ε = ρ + n·||L⁺||₂·E/R with E the ℓ₂ sum of the bounds above.  A noise
        factor L with a tiny singular value makes ε large: σ grows to cover it,
        or calibration is refused (:func:`dpfda.maths.summation.calibration_factor`).
        For FTP's shape L = Φ the noise is added to θ̄ (d) itself, and ε is FTP's
        :func:`~dpfda.mechanisms.pipelines.ftp_rounding_excess`.
        """
        n = check_int(n, "n", 1)
        geom = self.geometry
        T, d = geom.T, geom.dim
        if self._ftp_shaped:  # noise on θ̄ itself (R = B'): FTP's own excess
            return ftp_rounding_excess(n, d, self.radius)
        tiny = 2.0 * TINY_ERR  # per grid point, the subnormal range
        if self.region == "ball":
            # project_ball keeps a norm <= r up to the rounding of its own norm check; only
            # an ℓ₂ bound on the whole error vector is known
            per, total, rho = None, MEAN_ROUNDING * self.ball_radius, gamma(T + 4)
        else:
            per, rho = np.zeros(T), 0.0
            if self._box_w > 0:
                per = per + self._box_w * gamma(8) * self.clip
            if self._e_w > 0:
                rho = RECORD_SLACK
                _, e_phi, rows = _robust_norm(geom.Phi)  # ||Φ_j,:||₂ = rows·2^e, no overflow
                with np.errstate(over="ignore"):
                    per = per + (self._e_w * gamma(d + 8) * self.radius * (1.0 + rho)
                                 * np.ldexp(rows, e_phi))
        # ||L⁺ e||₂ where |e_j| <= per_j + tiny: coordinate by coordinate for a diagonal
        # L (exact reciprocals, however thin a direction), ||L⁺||₂·||e||₂ otherwise.
        with np.errstate(over="ignore", divide="ignore"):
            if self._whitening.diagonal and per is not None:
                white = (per + tiny) / np.abs(np.diag(self.L))
            else:
                s = np.linalg.svd(self.L, compute_uv=False)
                lpinv = (1.0 + 1e-6) / float(s[-1])  # ||L⁺||₂, room for the SVD's own error
                e_vec = np.sqrt(T) * tiny + (total if per is None else per)
                _, ee, ne = _robust_norm(np.atleast_1d(np.asarray(e_vec, dtype=float)))
                white = np.array([float(np.ldexp(ne * lpinv, ee))])
            _, ew, nw = _robust_norm(white)  # ||white||₂ = nw·2^ew, on mantissas and exponents
            mR, eR = math.frexp(self.extent)
            ratio = float(np.ldexp(nw / mR, int(ew) - eR))
        excess = rho + n * (1.0 + 4 * gamma(T)) * ratio  # the few roundings of this bound itself
        return excess if np.isfinite(excess) else math.inf

    def sigma(self, n: int, mu: float) -> float:
        """σ = Δ/μ = 2R/(nμ), computed on mantissas and exponents (as :func:`dpfda.ftp_sigma`).

        Refused with a ValueError naming the user's parameters when σ, or the largest
        noise standard deviation σ·max|L|, is not a normal float at most 2^960, or when
        σ < 2^-40·R (n·μ above about 10^12: rounding would erase the noise).
        σ covers the rounding of the summary as well (:meth:`rounding_excess`): it is
        multiplied by :func:`dpfda.maths.summation.calibration_factor` (exactly the formula
        while that excess is below 2⁻³¹).
        """
        return self._calibrate(check_int(n, "n", 1), check_positive(mu, "mu"))

    def _calibrate(self, n: int, mu: float) -> float:
        """:meth:`sigma` for checked n and μ: :func:`~dpfda.mechanisms.calibration.noise_scale` of R."""
        R = self.extent
        mR, eR = math.frexp(R)
        with np.errstate(over="ignore", under="ignore"):
            ratio = float(np.ldexp(mR / math.frexp(self.radius)[0], eR - math.frexp(self.radius)[1]))
        what = (f"for radius={self.radius!r}, n={n} and mu={mu!r} (this design's radius in the noise "
                f"metric is R = {ratio:.4g}·radius)")
        excess = self.rounding_excess(n)
        calibration_factor(excess, "this design's summary")  # refused by name before σ is formed
        try:
            sigma = float(noise_scale(R, None, n, mu, "R", excess, what=what, public_bound=False))
        except ValueError as exc:
            raise ValueError(f"{exc}; lower the radius (or clip / ball_radius) or change mu") from None
        mL, eL = math.frexp(float(np.max(np.abs(self.L))))
        with np.errstate(over="ignore"):
            top = float(np.ldexp(sigma * mL, eL))
        if not np.isfinite(top) or top > PARAM_MAX:
            raise ValueError(
                f"the noise of this design, σ = 2R/(n·mu) times the noise shape, is too large {what}: "
                "above 2^960 ≈ 9.7e288; lower the radius (or clip / ball_radius) or raise mu"
            )
        return sigma

    # -- release -------------------------------------------------------------------
    def mechanism(self, n: int | None, mu: float, *, secure: bool = False) -> Mechanism:
        """The design as a :class:`dpfda.Mechanism` with budget μ.

        ``n``: if not None, the only number of curves it accepts (σ is checked for it
        now); ``secure``: its releases draw the noise with OpenDP by default.
        Its noise is added where the sensitivity is bounded, with a full-rank factor: on
        the grid means with L (T, T) or, for FTP's rank-d shape L = Φ, on the mean of
        fits θ̄ (d) with σI, mapped to the grid means Φ·(θ̄ + σZ) afterwards
        (:class:`~dpfda.mechanisms.mechanism.GridThenFit`; module docstring).
        """
        mu = check_secure_budget(mu) if check_secure(secure) else check_positive(mu, "mu")
        n = None if n is None else check_int(n, "n", 1)
        fit = WeightedFit(self.geometry, self.radius, self.weights, constrained=self.fit == "ball")
        mech = Mechanism(
            name=f"design ({self.name})" + (" (OpenDP)" if secure else ""), method="design",
            geometry=self.geometry, radius=self.radius, mu=mu, dim=self.noise_dim,
            per_curve=DesignMap(self), calibration=DesignCalibration(self),
            post=GridThenFit(fit) if self._ftp_shaped else fit,
            noise_factor=None if self._ftp_shaped else self.L, clip=self.clip, n=n,
            secure=check_secure(secure))
        if n is not None:
            mech.sigma(n)
        return mech

    def worst_case_pair(self, n: int, scale: float = 1.0):
        """Neighbours (X0, X1), (n, T) each, whose summaries differ by exactly Δ.

        The first curve of X0 is a + t·w, of X1 its negative, all others 0,
        where x* = argmax_{x ∈ C} ||L⁻¹x|| (computed with R), w = MᵀMx* is a
        normal of C at x* and a is x* (box, ball) or its E part (mix,
        ellipsoid).  Then the curve's map is exactly x* for every t >= t₀ (w is
        in the normal cone of each part at its point), and t = scale·t₀.
        w is formed on power-of-two-scaled M and x*, so it neither over- nor underflows.
        """
        n = check_int(n, "n", 1)
        scale = check_positive(scale, "scale")
        x_star = self._extreme["x"]
        xs, _ = _scaled(x_star)
        Ms, _ = _scaled(self._whitening.M)
        w = Ms.T @ (Ms @ xs)
        w = w / np.max(np.abs(w))
        anchor = x_star if self._extreme.get("e") is None else self._extreme["e"]
        t0 = 1.0
        if self._box_w > 0 and self._e_w > 0:
            nz = np.abs(w) > 0
            with np.errstate(over="ignore"):
                t0 = float(np.max((self.clip[nz] + np.abs(anchor[nz])) / np.abs(w[nz])))
        with np.errstate(over="ignore", invalid="ignore"):
            curve = anchor + (scale * t0) * w
        if not np.all(np.isfinite(curve)):
            raise ValueError(
                f"the worst-case curve of this design overflows at radius={self.radius!r} (scale={scale!r}): "
                "a smaller radius or scale gives a pair at the same μ"
            )
        X0 = np.zeros((n, self.geometry.T))
        X0[0] = curve
        X1 = X0.copy()
        X1[0] = -curve
        return X0, X1

    # -- exact error where no constraint binds -----------------------------------
    def unconstrained_error(self, n: int, mu: float, sigma0: float) -> tuple[float, float]:
        """(sampling part, privacy part) of the expected error when nothing binds.

        With no curve clipped or moved, the per-curve map is linear,
        x ↦ (1−λ)x + λΠx (Π the orthogonal projection onto the span of Φ), and
        an unconstrained fit is H = (ΦᵀWΦ)⁻¹ΦᵀW; so the release's error is
        Pε̄ + σHLZ with P = (1−λ)H + λ(ΦᵀΦ)⁻¹Φᵀ and ε̄ ~ N(0, σ₀²I/n).  In the
        metric Q of the space (I for IMSE, ΦᵀΦ/T for grid MSE) its mean is
        (σ₀²/n)·tr(QPPᵀ) + σ²·tr(QHLLᵀHᵀ).
        """
        M1, M2 = self._error_covariances(n, mu, sigma0)
        return float(np.trace(M1)), float(np.trace(M2))

    def unconstrained_sd(self, n: int, mu: float, sigma0: float) -> float:
        """Standard deviation of one repetition's error when nothing binds.

        The error is ||Q^{1/2}(Pε̄ + σHLZ)||², a Gaussian quadratic form with
        covariance M = M₁ + M₂ (the two terms of :meth:`unconstrained_error`), so
        its variance is 2·tr(M²) — an exact yardstick for Monte Carlo checks.
        """
        M1, M2 = self._error_covariances(n, mu, sigma0)
        M = M1 + M2
        return float(np.sqrt(2.0 * np.sum(M * M.T)))

    def _error_covariances(self, n, mu, sigma0):
        n = check_int(n, "n", 1)
        sigma0 = check_nonnegative(sigma0, "sigma0")
        geom = self.geometry
        Phi, w = geom.Phi, self.weights
        H = np.linalg.solve(Phi.T @ (w[:, None] * Phi), Phi.T * w)
        Pi = np.linalg.solve(Phi.T @ Phi, Phi.T)
        P = H if self.region == "ball" else (1.0 - self._e_w) * H + self._e_w * Pi
        Q = np.eye(geom.dim) if geom.metric == "IMSE" else Phi.T @ Phi / geom.T
        lam, V = np.linalg.eigh(Q)
        Qh = (V * np.sqrt(np.clip(lam, 0.0, None))) @ V.T
        A1, A2 = Qh @ P, Qh @ H @ self.L
        return sigma0**2 / n * (A1 @ A1.T), self.sigma(n, mu) ** 2 * (A2 @ A2.T)


@dataclass(frozen=True, eq=False)
class DesignMap:
    """A design's per-curve map into its region C, averaged (:meth:`Design.summarize`)."""

    design: Design

    def __call__(self, X, *, exact: bool = True):
        """(summary (…, T), moved (…, n))."""
        return self.design.summarize(X, exact=exact)

    def mean(self, X, *, exact: bool = True) -> np.ndarray:
        """The summary (…, T) (:meth:`Design.summary`)."""
        return self.design.summary_from_parts(self.design.parts(X, exact=exact))


@dataclass(frozen=True, eq=False)
class DesignCalibration:
    """Δ = 2R/n in the noise metric ||L⁻¹·||; σ = Δ/μ (:meth:`Design.sigma`)."""

    design: Design
    norm: str = "noise metric ||L⁻¹x||"

    def sensitivity(self, n: int) -> float:
        """Δ = 2R/n (:meth:`Design.sensitivity`)."""
        return self.design.sensitivity(n)

    def sigma(self, n: int, mu: float) -> float:
        """σ for n curves and budget μ (already checked)."""
        return self.design._calibrate(n, mu)

    def secure_noisy(self, centre, n: int, mu: float, sigma) -> np.ndarray:
        """The summary ``centre`` plus OpenDP's noise, drawn in the whitened coordinates.

        For FTP's shape ``centre`` is θ̄ and the noise σZ (d) is FTP's secure path.
        Otherwise M·centre/R, whose ℓ₂ sensitivity is 2/n (R includes its rounding bound),
        gets noise of scale 2/(nμ) (OpenDP checks ρ = μ²/2 before drawing); multiplying
        back by R and by L is post-processing.
        """
        des = self.design
        excess = des.rounding_excess(n)
        R = des.extent
        if des._ftp_shaped:
            return opendp_noise.gaussian_release(centre, sigma, mu=mu,
                                                 sensitivity=declared_sensitivity(R, n, excess))
        unit = float(noise_scale(1.0, None, n, mu, "radius", excess))  # 2/(nμ)·factor = σ/R
        white = des.whiten(centre)
        mR, eR = math.frexp(R)
        with np.errstate(under="ignore"):
            y = np.ldexp(white / mR, -eR)  # M·centre/R, entries of size at most about 1
        noisy = opendp_noise.gaussian_release(y, unit, sensitivity=declared_sensitivity(1.0, n, excess),
                                              mu=mu)
        with np.errstate(over="ignore"):
            xtilde = np.ldexp((noisy * mR) @ des.L.T, eR)
        if not np.all(np.isfinite(xtilde)):
            raise ValueError(
                f"the secure release overflows for radius={des.radius!r}, n={n}, mu={mu!r}; lower the "
                "radius or raise mu"
            )
        return xtilde
