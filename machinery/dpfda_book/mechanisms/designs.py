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

Floating point.  The extent R is computed with no pseudo-inverse, scale-free and with its
rounding covered, and cached on everything it depends on (:mod:`dpfda_book.mechanisms.whitening`);
σ = 2R/(nμ) is formed on mantissas and exponents as :func:`dpfda.ftp_sigma` is, and a
design whose R or σ leaves the float range is refused with a message about the radius, n
and μ.

* **the summaries.**  Each curve's point of C is computed exactly as PTF's
  clipping (exact), FTP's constrained fit (norm <= B' to a few ulps, see
  ``dpfda.ftp_fit_mean``) or :func:`~dpfda_book.mechanisms.projections.project_ball` (norm <= r for every
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

The means (:mod:`dpfda.maths.summation`): every mean over curves —
of the clipped curves, of the fits, of the projections onto the ball — is
summed exactly and rounded once (:func:`dpfda.maths.summation.fixed_point_mean`);
the box part is exact per curve, fits have norm <= B'(1 + 2⁻⁴⁰), projections
norm <= r(1 + γ_{T+4}).  The maps applied after the mean (Φ·θ̄, the weights of
a mix) round too; :meth:`Design.rounding_excess` bounds how much all of this
can add to pair μ, measured through ||L⁻¹||₂, and σ is calibrated to
Δ(1 + ε) where ε > 2⁻³¹.  FTP's noise shape L = Φ has rank d < T: following the
package's one noise rule (:mod:`dpfda.mechanisms.mechanism_type`, with its floating-point
argument), such a design adds σI_d to the mean of fits θ̄ itself and forms the grid
means Φ(θ̄ + σZ) afterwards, as post-processing — never σΦZ on rounded grid means,
whose rounding outside span(Φ) would be published without noise
(:func:`dpfda_book.mechanisms.broken.broken_design_rank_deficient`).

With the same noise stream, ``Design(..., region="mix", lam=0)`` releases what
:func:`dpfda.ptf` releases, and ``Design(..., region="ellipsoid", noise="ellipsoid",
fit="none")`` what :func:`dpfda.ftp` releases (on the grid), to rounding.  None
of this is in the paper; it answers §6's question about structured
perturbations with one family and an honest comparison.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpfda.maths.rounding import solve_rtol
from dpfda.maths.spaces import FunctionSpace, GridGeometry
from dpfda.maths.summation import (
    MEAN_ROUNDING,
    RECORD_SLACK,
    TINY_ERR,
    calibration_factor,
    fixed_point_mean,
    gamma,
)
from dpfda.mechanisms import secure as opendp_noise  # a module: its sampler is looked up at each release
from dpfda.mechanisms.calibration import PARAM_MAX, check_secure_budget, declared_sensitivity, noise_scale
from dpfda.mechanisms.ftp_ptf import GridThenFit, Mechanism, WeightedFit
from dpfda.mechanisms.pipelines import (
    check_radius,
    fitter,
    ftp_fit_mean,
    ftp_rounding_excess,
    ptf_clip_bounds,
    ptf_clipped_mean,
    ptf_weight_vector,
)
from dpfda.mechanisms.theory import ftp_unconstrained_terms
from dpfda.trust.checks import check_grid_space
from dpfda.validation import (
    check_data,
    check_int,
    check_nonnegative,
    check_positive,
    check_secure,
)

from .projections import project_ball, robust_norm
from .whitening import Whitening, cached_extent, noise_factor, scaled

__all__ = ["SETS", "NOISES", "FITS", "Design", "DesignMap", "DesignCalibration", "below_ftp", "project_ball"]

SETS = ("box", "ball", "ellipsoid", "mix")
NOISES = ("matched", "diagonal", "isotropic", "ellipsoid")
FITS = ("ball", "none")


# ---------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------


class Design:
    """Map each curve into a convex set C, average, add N(0, σ²Σ), fit (module docstring).

    Parameters
    ----------
    grid : array (T,)
        Public grid points of [0, 1].
    space : FunctionSpace
        Any space: an orthonormal basis (Legendre, Fourier) or a kernel space.
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

    def __init__(self, grid: ArrayLike, space: FunctionSpace, radius: float, *, region: str = "mix",
                 lam: float | None = None, clip: ArrayLike | None = None, ball_radius: float | None = None,
                 noise: str | ArrayLike = "matched", weights: ArrayLike | None = None, fit: str = "ball") -> None:
        check_grid_space(grid, space, type(self).__name__)
        if not isinstance(space, FunctionSpace):
            raise TypeError(f"space must be a dpfda FunctionSpace (e.g. LegendreSpace, FourierSpace, KernelSpace), "
                            f"got {type(space).__name__}")
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
            self.ball_radius: float | None = default if ball_radius is None else check_radius(ball_radius)
        elif ball_radius is not None:
            raise ValueError("ball_radius applies to region='ball' only")
        else:
            self.ball_radius = None
        self.weights = ptf_weight_vector(geom, weights)
        if not isinstance(fit, str) or fit not in FITS:
            raise ValueError(f"fit must be 'ball' or 'none', got {fit!r}")
        self.fit = fit
        self.noise = noise if isinstance(noise, str) else "custom"
        if isinstance(noise, str) and noise not in NOISES:
            raise ValueError(f"noise must be one of {', '.join(NOISES)} or a (T, T) matrix, got {noise!r}")
        self.L = noise_factor(geom, noise, region, lam)
        self.L.setflags(write=False)
        # FTP's own shape: noise σΦZ on the ellipsoid, whose extent is B' exactly.
        self._ftp_shaped = self.L is geom.Phi and self._box_w == 0 and self._e_w == 1.0
        label = f"noise={noise!r}" if isinstance(noise, str) else "given as a matrix"
        # FTP's shape needs no whitening for its extent (R = B'); its M serves whiten() only.
        self._whitening = Whitening(self.L, label, check=not self._ftp_shaped)
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
    def _parts_weights(self) -> tuple[float, float]:
        """(weight of the box part, weight of the E part) of the per-curve map."""
        if self.region == "box":
            return 1.0, 0.0
        if self.region == "ellipsoid":
            return 0.0, 1.0
        if self.region == "ball":
            return 0.0, 0.0
        assert self.lam is not None  # region='mix' requires it
        return 1.0 - self.lam, self.lam

    @property
    def ellipsoid_weight(self) -> float:
        """The weight of FTP's ellipsoid part in the per-curve map (λ for a mix; 1, or 0)."""
        return self._e_w

    @property
    def box_weight(self) -> float:
        """The weight of PTF's box part in the per-curve map (1 − λ for a mix; 1, or 0)."""
        return self._box_w

    @property
    def whitening(self) -> Whitening:
        """The noise metric M = L⁻¹ (:class:`~dpfda_book.mechanisms.whitening.Whitening`) of this design."""
        return self._whitening

    @property
    def name(self) -> str:  # noqa: D102 - the design's label, documented in the class docstring
        what = f"mix λ={self.lam:g}" if self.region == "mix" else self.region
        return f"{what}, {self.noise} noise, fit={self.fit}"

    def __repr__(self) -> str:
        return f"Design({self.name}, space={self.geometry.space!r}, T={self.geometry.T}, radius={self.radius})"

    def _cached_extent(self) -> tuple[float, dict[str, np.ndarray | None]]:
        """(R, maximiser) of this design's set (:func:`~dpfda_book.mechanisms.whitening.cached_extent`)."""
        return cached_extent(self)

    # -- per-curve maps and the summary ----------------------------------------
    def _check_X(self, X: ArrayLike) -> np.ndarray:
        return check_data(X, self.geometry.T)

    def project(self, X: ArrayLike) -> np.ndarray:
        """Each curve mapped into C: shape (…, n, T), each curve alone (element-wise, fixed order)."""
        X = self._check_X(X)
        if self.region == "ball":
            assert self.ball_radius is not None
            return project_ball(X, self.ball_radius)
        out = np.zeros(X.shape)
        if self._box_w > 0:
            assert self.clip is not None
            out += self._box_w * np.clip(X, -self.clip, self.clip)
        if self._e_w > 0:
            coef = fitter(self.geometry).solve(X, self.radius).coef
            Phi = self.geometry.Phi
            values = coef[..., :1] * Phi[:, 0]  # Φθ row by row, in a fixed order (no BLAS product)
            for k in range(1, Phi.shape[1]):
                values += coef[..., k : k + 1] * Phi[:, k]
            out += self._e_w * values
        return out

    def parts(self, X: ArrayLike, *, exact: bool = True) -> dict:
        """The per-curve work every design shares, averaged over curves (…, T).

        Keys: ``"box"`` (mean of clip(x) at this design's bounds), ``"ellipsoid"``
        (Φ times FTP's mean of fits), ``("ball", r)``, and the binding flags
        ``"box_active"``, ``"ellipsoid_active"``, ``"ball_active"`` (…,): whether
        some curve was moved.  Flags are diagnostics for simulations, never part
        of a release.  Every mean is exact up to one rounding
        (:func:`dpfda.maths.summation.fixed_point_mean`); ``exact=False`` is the
        simulations' faster sum (:func:`dpfda_book.simulation.design_runs.simulate_designs`; no release uses it).
        """
        out = self._parts_per_curve(self._check_X(X), exact)
        for flag in ("box_active", "ellipsoid_active", "ball_active"):
            if flag in out:
                out[flag] = out[flag].any(axis=-1)
        return out

    def _parts_per_curve(self, X: np.ndarray, exact: bool) -> dict:
        """:meth:`parts` with per-curve flags (…, n): which curves each part moved."""
        out: dict = {}
        if self._box_w > 0:
            assert self.clip is not None
            out["box"] = ptf_clipped_mean(X, self.clip, exact=exact)
            out["box_active"] = np.any(np.abs(X) > self.clip, axis=-1)
        if self._e_w > 0:
            mean_coef, active = ftp_fit_mean(X, self.geometry, self.radius, exact=exact)
            out["ellipsoid_coef"] = mean_coef
            out["ellipsoid"] = mean_coef @ self.geometry.Phi.T
            out["ellipsoid_active"] = active
        if self.region == "ball":
            assert self.ball_radius is not None
            P = project_ball(X, self.ball_radius)
            out[("ball", self.ball_radius)] = (fixed_point_mean(P, self.ball_radius) if exact
                                              else P.mean(axis=-2))
            out["ball_active"] = np.any(P != X, axis=-1)
        return out

    def summarize(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
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

    def grid_summary(self, X: ArrayLike) -> np.ndarray:
        """The mean of the per-curve maps on the grid (…, T) (Φθ̄ for FTP's shape)."""
        s = self.summary(X)
        return s @ self.geometry.Phi.T if self._ftp_shaped else s

    @property
    def noise_dim(self) -> int:
        """The number k of coordinates the noise is added in (d for FTP's shape L = Φ, else T)."""
        return self.geometry.dim if self._ftp_shaped else self.geometry.T

    def summary(self, X: ArrayLike) -> np.ndarray:
        """The non-private centre in the noise's coordinates (:meth:`summary_from_parts`)."""
        return self.summary_from_parts(self.parts(X))

    def whiten(self, v: ArrayLike) -> np.ndarray:
        """Coordinates M·v (…, k), M = L⁻¹ (L⁺ on the span of Φ for FTP's shape): N(0, σ²I) noise.

        No pseudo-inverse: M comes from :class:`~dpfda_book.mechanisms.whitening.Whitening` (exact for a diagonal L, QR
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
            assert self.ball_radius is not None
            per, total, rho = None, MEAN_ROUNDING * self.ball_radius, gamma(T + 4)
        else:
            per, rho = np.zeros(T), 0.0
            if self._box_w > 0:
                assert self.clip is not None
                per = per + self._box_w * gamma(8) * self.clip
            if self._e_w > 0:
                rho = RECORD_SLACK
                _, e_phi, rows = robust_norm(geom.Phi)  # ||Φ_j,:||₂ = rows·2^e, no overflow
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
                _, ee, ne = robust_norm(np.atleast_1d(np.asarray(e_vec, dtype=float)))
                white = np.array([float(np.ldexp(ne * lpinv, ee))])
            _, ew, nw = robust_norm(white)  # ||white||₂ = nw·2^ew, on mantissas and exponents
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
        (:class:`~dpfda.mechanisms.parts.GridThenFit`; the rule: :mod:`dpfda.mechanisms.mechanism_type`).
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

    def worst_case_pair(self, n: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
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
        assert x_star is not None
        xs, _ = scaled(x_star)
        Ms, _ = scaled(self._whitening.M)
        w = Ms.T @ (Ms @ xs)
        w = w / np.max(np.abs(w))
        anchor = x_star if self._extreme.get("e") is None else self._extreme["e"]
        t0 = 1.0
        if self._box_w > 0 and self._e_w > 0:
            nz = np.abs(w) > 0
            with np.errstate(over="ignore"):
                assert self.clip is not None and anchor is not None
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

    def _error_covariances(self, n: int, mu: float, sigma0: float) -> tuple[np.ndarray, np.ndarray]:
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

    def __call__(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(summary (…, T), moved (…, n))."""
        return self.design.summarize(X, exact=exact)

    def mean(self, X: ArrayLike, *, exact: bool = True) -> np.ndarray:
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

    def secure_noisy(self, centre: np.ndarray, n: int, mu: float, sigma: float) -> np.ndarray:
        """The summary ``centre`` plus OpenDP's noise, drawn in the whitened coordinates.

        For FTP's shape ``centre`` is θ̄ and the noise σZ (d) is FTP's secure path.
        Otherwise M·centre/R, whose ℓ₂ sensitivity is 2/n (R includes its rounding bound),
        gets noise of scale 2/(nμ) (OpenDP checks ρ = μ²/2 before drawing); multiplying
        back by R and by L is post-processing.
        """
        des = self.design
        excess = des.rounding_excess(n)
        R = des.extent
        if des.coefficient_noise:
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


def below_ftp(designs: Mapping[str, Design], n: int, mu: float, sigma0: float) -> tuple[list[str], float]:
    """The designs with an unconstrained-error term below FTP's, and the tolerance that decides it.

    Each design's two terms (:meth:`Design.unconstrained_error`) are compared with FTP's in
    closed form (:func:`dpfda.mechanisms.theory.ftp_unconstrained_terms`), never with FTP's
    computed terms: several designs equal FTP in exact arithmetic, and their computed terms
    differ from it in the last digits by amounts that depend on how the processor's BLAS
    sums. Every term goes through solves with A = ΦᵀWΦ (W a design's fit weights), so the
    tolerance is the largest rounding bound :func:`dpfda.maths.rounding.solve_rtol` of those
    matrices, with size T + d. The designs must share one grid, space and B'.
    """
    first = next(iter(designs.values()))
    geom, radius = first.geometry, first.radius
    if any(d.geometry.space != geom.space or not np.array_equal(d.geometry.grid, geom.grid)
           or d.radius != radius for d in designs.values()):
        raise ValueError("designs must share one grid, space and radius B'")
    floor = np.array(ftp_unconstrained_terms(geom, radius, n, mu, sigma0))
    rtol = max(solve_rtol(geom.Phi.T @ (d.weights[:, None] * geom.Phi), geom.T + geom.dim)
               for d in designs.values())
    below = [name for name, d in designs.items()
             if not np.all(np.array(d.unconstrained_error(n, mu, sigma0)) >= floor * (1.0 - rtol))]
    return below, rtol
