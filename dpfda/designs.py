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
  2R/n, R = max_{x ∈ C} ||L⁺x|| (C is symmetric): the Gaussian mechanism in
  the whitened coordinates L⁺x̃, μ-GDP (Theorem 6 with an identity covariance
  after whitening); the fit is post-processing.  R per set: box with diagonal
  L, ||c/ℓ||; ball of radius r, r·||L⁺||₂; ellipsoid, B'·||L⁺Φ||₂; box with a
  general L and the mix, the maximum over the 2^(T−1) sign vectors s of a
  trust-region problem max_{||u|| <= 1} ||L⁺((1−λ)c∘s + λB'Φu)|| solved
  through its convex dual (a guaranteed upper bound, tight to rounding).
* The fit is dpfda's weighted ball-constrained least squares (default PTF's
  W = diag(a_j⁻²) and radius B'); ``fit="none"`` reads off the unconstrained
  weighted least-squares coordinates instead.

With the same noise stream, ``Design(set="mix", lam=0)`` releases what
:func:`dpfda.ptf` releases, and ``Design(set="ellipsoid", noise="ellipsoid",
fit="none")`` what :func:`dpfda.ftp` releases (on the grid), to rounding.  None
of this is in the paper; it answers §6's question about structured
perturbations with one family and an honest comparison.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ._validation import (
    _as_float_array,
    check_data,
    check_int,
    check_nonnegative,
    check_positive,
    check_rng,
)
from .pipelines import (
    Release,
    check_radius,
    fitter,
    ftp_fit_mean,
    ftp_sigma,
    ptf_clip_bounds,
    ptf_clipped_mean,
    ptf_weight_vector,
)
from .spaces import GridGeometry, KernelSpace, LegendreSpace

__all__ = ["SETS", "NOISES", "FITS", "Design", "project_ball", "simulate_designs", "compare_designs", "ratio_panels"]

SETS = ("box", "ball", "ellipsoid", "mix")
NOISES = ("matched", "diagonal", "isotropic", "ellipsoid")
FITS = ("ball", "none")
_EXTENTS: dict = {}

_SAFETY = 1.0 + 1e-10
"""Radii computed by SVD or the trust-region dual are raised by this factor (rounding)."""

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
    X = _as_float_array(X, "X")
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


def _trust_region_max(g: np.ndarray, G: np.ndarray):
    """max over ||u|| <= 1 of ||g_s + G u||² for each row g_s of ``g`` (N, k); G (k, d).

    Through the convex dual (S-lemma): for every η >= α_max(GᵀG),
    ||g + Gu||² <= ||g||² + η + bᵀ(ηI − GᵀG)⁻¹b with b = Gᵀg, with equality
    at the minimising η.  The dual is minimised by bisection on its
    derivative 1 − Σ β_k²/(η − α_k)²; the value is taken at the upper end of
    the final bracket, so it is never below the true maximum (safe for
    privacy) and exceeds it by rounding only.  Returns (values (N,), u (N, d)):
    the maximisers (hard case included), for worst-case neighbours.
    """
    A = G.T @ G
    alpha, V = np.linalg.eigh((A + A.T) / 2.0)
    alpha = np.maximum(alpha, 0.0)
    amax = alpha[-1]
    beta = (g @ G) @ V  # (N, d)
    b2 = beta * beta
    bnorm = np.sqrt(b2.sum(axis=-1))
    lo = np.full(g.shape[0], amax)
    hi = amax + bnorm + 1e-300
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            psi = np.sum(np.where(b2 > 0, b2 / (mid[:, None] - alpha) ** 2, 0.0), axis=-1)
        right = ~(psi > 1.0)  # derivative >= 0: the minimiser is at or left of mid
        hi = np.where(right, mid, hi)
        lo = np.where(right, lo, mid)
        if np.all(hi - lo <= 4 * np.finfo(float).eps * np.maximum(hi, 1e-300)):
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


class Design:
    """Map each curve into a convex set C, average, add N(0, σ²Σ), fit (module docstring).

    Parameters
    ----------
    space : LegendreSpace or KernelSpace
    grid : array (T,)
        Public grid points of [0, 1].
    radius : float
        B', the radius of FTP's ellipsoid E and of the final fit.
    set : {"box", "ball", "ellipsoid", "mix"}
    lam : float in [0, 1]
        The mix parameter λ (``set="mix"`` only): 0 is PTF's box, 1 FTP's E.
    clip : float or array (T,), optional
        Box bounds c_j (``"box"`` and ``"mix"``); default B'a_j (Theorems 11, 14).
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

    def __init__(self, space, grid, radius, *, set="mix", lam=None, clip=None, ball_radius=None,
                 noise="matched", weights=None, fit="ball"):
        if not isinstance(space, (LegendreSpace, KernelSpace)):
            raise TypeError(f"space must be a LegendreSpace or KernelSpace, got {type(space).__name__}")
        geom = space.at(grid)
        self.geometry: GridGeometry = geom
        self.radius = check_radius(radius)
        if not isinstance(set, str) or set not in SETS:
            raise ValueError(f"set must be one of {', '.join(SETS)}, got {set!r}")
        self.set = set
        if set == "mix":
            if lam is None or not isinstance(lam, numbers.Real) or isinstance(lam, bool):
                raise TypeError(f"lam must be a real number in [0, 1] for set='mix', got {lam!r}")
            lam = float(lam)
            if not 0.0 <= lam <= 1.0:
                raise ValueError(f"lam must lie in [0, 1], got {lam!r}")
        elif lam is not None:
            raise ValueError("lam applies to set='mix' only")
        self.lam = lam
        self._box_w, self._e_w = self._parts_weights()
        if clip is not None and self._box_w == 0.0:
            raise ValueError(f"clip applies to a set with a box part, not set={set!r}")
        self.clip = ptf_clip_bounds(geom, self.radius, clip) if self._box_w > 0 else None
        if set == "ball":
            default = self.radius * float(np.linalg.norm(geom.Phi, 2))
            self.ball_radius = default if ball_radius is None else check_radius(ball_radius)
        elif ball_radius is not None:
            raise ValueError("ball_radius applies to set='ball' only")
        else:
            self.ball_radius = None
        self.weights = ptf_weight_vector(geom, weights)
        if not isinstance(fit, str) or fit not in FITS:
            raise ValueError(f"fit must be 'ball' or 'none', got {fit!r}")
        self.fit = fit
        self.noise = noise if isinstance(noise, str) else "custom"
        self.L = self._noise_factor(noise)
        self._Lpinv = np.linalg.pinv(self.L)
        self.extent, self._extreme = self._cached_extent()

    # -- the set --------------------------------------------------------------
    def _parts_weights(self):
        """(weight of the box part, weight of the E part) of the per-curve map."""
        if self.set == "box":
            return 1.0, 0.0
        if self.set == "ellipsoid":
            return 0.0, 1.0
        if self.set == "ball":
            return 0.0, 0.0
        return 1.0 - self.lam, self.lam

    @property
    def name(self) -> str:  # noqa: D102 - the design's label, documented in the class docstring
        what = f"mix λ={self.lam:g}" if self.set == "mix" else self.set
        return f"{what}, {self.noise} noise, fit={self.fit}"

    def __repr__(self):
        return f"Design({self.name}, space={self.geometry.space!r}, T={self.geometry.T}, radius={self.radius})"

    def _noise_factor(self, noise) -> np.ndarray:
        geom = self.geometry
        T, a, Phi = geom.T, geom.eval_norm, geom.Phi
        if not isinstance(noise, str):
            S = _as_float_array(noise, "noise")
            if S.shape != (T, T) or not np.all(np.isfinite(S)) or not np.allclose(S, S.T):
                raise ValueError(f"noise must be a symmetric finite (T, T) matrix with T={T}")
            try:
                return np.linalg.cholesky(S)
            except np.linalg.LinAlgError:
                raise ValueError("noise must be positive definite") from None
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {', '.join(NOISES)} or a (T, T) matrix, got {noise!r}")
        if noise == "matched":
            noise = {"box": "diagonal", "ball": "isotropic", "ellipsoid": "ellipsoid"}.get(self.set)
            if noise is None:  # the mix
                noise = "diagonal" if self.lam == 0 else "ellipsoid" if self.lam == 1 else None
            if noise is None:
                K = Phi @ Phi.T
                S = (1.0 - self.lam) * np.diag(np.diag(K)) + self.lam * K
                return np.linalg.cholesky((S + S.T) / 2.0)
        if noise == "diagonal":
            return np.diag(a)
        if noise == "isotropic":
            return np.eye(T)
        if geom.dim < T and self.set != "ellipsoid" and not (self.set == "mix" and self.lam == 1):
            raise ValueError(
                f"noise='ellipsoid' has rank d={geom.dim} < T={T}: it can only protect a set inside "
                "the span of Φ (set='ellipsoid'); choose a full-rank noise shape"
            )
        return Phi.copy()

    def _cached_extent(self):
        """:meth:`_extent`, reused across radii.

        C scales with B' when its bounds are proportional to B' (the defaults), so R/B'
        depends on the shape only.
        """
        B = self.radius
        key = (id(self.geometry), self.set, self.lam, self.L.tobytes(),
               None if self.clip is None else (self.clip / B).tobytes(),
               None if self.ball_radius is None else self.ball_radius / B)
        hit = _EXTENTS.get(key)
        if hit is not None and hit[0] is self.geometry:
            R1, ext1 = hit[1]
            return R1 * B, {k: (None if v is None else v * B) for k, v in ext1.items()}
        R, ext = self._extent()
        if len(_EXTENTS) > 256:
            _EXTENTS.clear()
        _EXTENTS[key] = (self.geometry, (R / B, {k: (None if v is None else v / B) for k, v in ext.items()}))
        return R, ext

    def _extent(self):
        """R = max_{x ∈ C} ||L⁺x|| and a maximiser (for worst-case neighbours)."""
        Lp, geom = self._Lpinv, self.geometry
        if self.set == "ball":
            _, s, Vt = np.linalg.svd(Lp)
            return self.ball_radius * float(s[0]) * _SAFETY, {"x": self.ball_radius * Vt[0]}
        if self.set == "ellipsoid" or (self.set == "mix" and self.lam == 1.0):
            G = Lp @ geom.Phi
            _, s, Vt = np.linalg.svd(G)
            e = self.radius * (geom.Phi @ Vt[0])
            if self.L.shape == geom.Phi.shape and np.array_equal(self.L, geom.Phi):
                return self.radius, {"x": e, "e": e}  # L⁺Φ = I: R = B' exactly (FTP)
            return self.radius * float(s[0]) * _SAFETY, {"x": e, "e": e}
        c = self.clip
        if np.count_nonzero(self.L - np.diag(np.diag(self.L))) == 0 and self._e_w == 0.0:
            ell = np.diag(self.L)
            return float(np.linalg.norm(c / ell)), {"x": c.copy()}
        signs = _sign_vectors(geom.T)
        g = (self._box_w * signs * c) @ Lp.T  # (N, k)
        G = self._e_w * self.radius * (Lp @ geom.Phi)  # (k, d)
        # Prune: ||g + Gu||² <= ||g||² + 2||Gᵀg|| + ||G||₂² for ||u|| <= 1, so a sign vector
        # whose bound is below a value attained by another cannot hold the maximum.
        gG = g @ G
        gGnorm = np.sqrt(np.einsum("ij,ij->i", gG, gG))
        u0 = gG / np.maximum(gGnorm, 1e-300)[:, None]
        r0 = g + u0 @ G.T
        lower = float(np.max(np.einsum("ij,ij->i", r0, r0)))
        upper = np.einsum("ij,ij->i", g, g) + 2.0 * gGnorm + np.linalg.norm(G, 2) ** 2
        keep = np.flatnonzero(upper >= lower * (1.0 - 1e-9))
        values, u = _trust_region_max(g[keep], G)
        best = int(np.argmax(values))
        u, best = u[best:best + 1], int(keep[best])
        b = self._box_w * signs[best] * c
        e = self._e_w * self.radius * (geom.Phi @ u[0])
        return float(np.sqrt(np.max(values))) * _SAFETY, {"x": b + e, "e": e / self._e_w if self._e_w else None}

    # -- per-curve maps and the summary ----------------------------------------
    def _check_X(self, X):
        return check_data(X, self.geometry.T)

    def project(self, X) -> np.ndarray:
        """Each curve mapped into C: shape (…, n, T)."""
        X = self._check_X(X)
        if self.set == "ball":
            return project_ball(X, self.ball_radius)
        out = np.zeros(X.shape)
        if self._box_w > 0:
            out += self._box_w * np.clip(X, -self.clip, self.clip)
        if self._e_w > 0:
            coef = fitter(self.geometry).solve(X, self.radius).coef
            out += self._e_w * (coef @ self.geometry.Phi.T)
        return out

    def parts(self, X) -> dict:
        """The per-curve work every design shares, averaged over curves (…, T).

        Keys: ``"box"`` (mean of clip(x) at this design's bounds), ``"ellipsoid"``
        (Φ times FTP's mean of fits), ``("ball", r)``, and the binding flags
        ``"box_active"``, ``"ellipsoid_active"``, ``"ball_active"`` (…,): whether
        some curve was moved.  Flags are diagnostics for simulations, never part
        of a release.
        """
        X = self._check_X(X)
        out: dict = {}
        if self._box_w > 0:
            out["box"] = ptf_clipped_mean(X, self.clip)
            out["box_active"] = np.any(np.abs(X) > self.clip, axis=(-2, -1))
        if self._e_w > 0:
            mean_coef, active = ftp_fit_mean(X, self.geometry, self.radius)
            out["ellipsoid"] = mean_coef @ self.geometry.Phi.T
            out["ellipsoid_active"] = active.any(axis=-1)
        if self.set == "ball":
            P = project_ball(X, self.ball_radius)
            out[("ball", self.ball_radius)] = P.mean(axis=-2)
            out["ball_active"] = np.any(P != X, axis=(-2, -1))
        return out

    def summary_from_parts(self, parts: dict) -> np.ndarray:
        """The mean of the per-curve maps, from :meth:`parts` (…, T)."""
        if self.set == "ball":
            return parts[("ball", self.ball_radius)]
        if self._e_w == 0:
            return self._box_w * parts["box"]
        if self._box_w == 0:
            return parts["ellipsoid"]
        return self._box_w * parts["box"] + self._e_w * parts["ellipsoid"]

    def summary(self, X) -> np.ndarray:
        """Mean over curves of each curve's point in C (…, T): the non-private centre."""
        return self.summary_from_parts(self.parts(X))

    def whiten(self, v) -> np.ndarray:
        """Coordinates L⁺v (…, k) in which the noise is N(0, σ²I): the audited coordinates."""
        return np.asarray(v, dtype=float) @ self._Lpinv.T

    # -- calibration -------------------------------------------------------------
    def sensitivity(self, n: int) -> float:
        """Δ = sup_{x, x' ∈ C} ||x − x'||_{Σ⁻¹}/n = 2R/n."""
        n = check_int(n, "n", 1)
        return 2.0 * self.extent / n

    def sigma(self, n: int, mu: float) -> float:
        """σ = Δ/μ = 2R/(nμ), with the guards of :func:`dpfda.pipelines.ftp_sigma`."""
        n = check_int(n, "n", 1)
        mu = check_positive(mu, "mu")
        try:
            return ftp_sigma(n, self.extent, mu)
        except ValueError as exc:
            raise ValueError(
                f"cannot calibrate the noise for this design (R = {self.extent!r}, the radius of C "
                f"in the noise metric; n={n}, mu={mu!r}): {exc}"
            ) from None

    # -- release -------------------------------------------------------------------
    def privatize(self, summary, n: int, mu: float, rng: np.random.Generator) -> Release:
        """x̃ = summary + σLZ, fitted: a :class:`~dpfda.pipelines.Release` (method "design")."""
        sigma = self.sigma(n, mu)
        rng = check_rng(rng)
        summary = np.asarray(summary, dtype=float)
        Z = rng.standard_normal(summary.shape[:-1] + (self.L.shape[1],))
        xtilde = summary + sigma * (Z @ self.L.T)
        solver = fitter(self.geometry, self.weights)
        if self.fit == "ball":
            fit = solver.solve(xtilde, self.radius)
            coef, active = fit.coef, fit.active
        else:
            coef, active = solver.unconstrained(xtilde), None
        return Release(method="design", geometry=self.geometry, coef=coef, mu=float(mu),
                       radius=self.radius, n=n, noise_scale=sigma, active=active, clip=self.clip,
                       weights=self.weights, noisy_means=xtilde)

    def release(self, X, mu: float, rng: np.random.Generator) -> Release:
        """The design on data ``X`` (n, T) or (reps, n, T): μ-GDP (module docstring)."""
        X = self._check_X(X)
        rng = check_rng(rng)
        n = X.shape[-2]
        self.sigma(n, mu)  # calibration errors before any data are touched
        return self.privatize(self.summary(X), n, mu, rng)

    def mechanism(self, n: int, mu: float):
        """The design as :class:`dpfda.audit.Mechanism`, audited in the whitened coordinates."""
        from .audit import Mechanism

        n = check_int(n, "n", 1)
        mu = check_positive(mu, "mu")
        return Mechanism(name=f"design ({self.name})", release=lambda X, rng: self.release(X, mu, rng),
                         summary=lambda X: self.whiten(self.summary(X)),
                         coordinates=lambda rel: self.whiten(rel.noisy_means),
                         noise_scale=self.sigma(n, mu), mu=mu, n=n)

    def worst_case_pair(self, n: int, scale: float = 1.0):
        """Neighbours (X0, X1), (n, T) each, whose summaries differ by exactly Δ.

        The first curve of X0 is a + t·w, of X1 its negative, all others 0,
        where x* = argmax_{x ∈ C} ||L⁺x|| (computed with R), w = (L⁺)ᵀL⁺x* is a
        normal of C at x* and a is x* (box, ball) or its E part (mix,
        ellipsoid).  Then the curve's map is exactly x* for every t >= t₀ (w is
        in the normal cone of each part at its point), and t = scale·t₀.
        """
        n = check_int(n, "n", 1)
        scale = check_positive(scale, "scale")
        x_star = self._extreme["x"]
        w = self._Lpinv.T @ (self._Lpinv @ x_star)
        w = w / np.max(np.abs(w))
        anchor = x_star if self._extreme.get("e") is None else self._extreme["e"]
        t0 = 1.0
        if self._box_w > 0 and self._e_w > 0:
            nz = np.abs(w) > 0
            t0 = float(np.max((self.clip[nz] + np.abs(anchor[nz])) / np.abs(w[nz])))
        curve = anchor + (scale * t0) * w
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
        P = H if self.set == "ball" else (1.0 - self._e_w) * H + self._e_w * Pi
        Q = np.eye(geom.dim) if geom.metric == "IMSE" else Phi.T @ Phi / geom.T
        lam, V = np.linalg.eigh(Q)
        Qh = (V * np.sqrt(np.clip(lam, 0.0, None))) @ V.T
        A1, A2 = Qh @ P, Qh @ H @ self.L
        return sigma0**2 / n * (A1 @ A1.T), self.sigma(n, mu) ** 2 * (A2 @ A2.T)


# ---------------------------------------------------------------------------
# Monte Carlo over designs, sharing the per-curve work
# ---------------------------------------------------------------------------


def simulate_designs(setting, designs: dict, reps: int, seed: int, *, chunk_values: int = 2_000_000):
    """Errors of several designs on one simulation setting of the engine, paired.

    ``setting`` is a :class:`dpfda.studies.Setting` (latent curves, grid, n,
    μ, σ₀, B' as in :mod:`dpfda.engine`); ``designs`` maps a name to the
    keyword arguments of :class:`Design`.  Every repetition draws fresh
    observation noise and one set of privacy normals (Z_T, Z_d) shared by all
    designs (common random numbers, so differences between designs are
    measured precisely); the curves' projections are computed once per
    repetition and shared.  Streams: ``SeedSequence(seed, spawn_key=stream_key(setting)
    + (1014, chunk))`` (:func:`dpfda.engine.stream_key`) with chunks fixed by the setting, so results do not
    depend on anything but (seed, setting, reps).

    Returns a dict name -> dict of per-repetition arrays ``err`` (IMSE or grid
    MSE against f̄) and ``free`` (no curve clipped or projected and the final
    fit not constrained).
    """
    from .engine import _prepare, stream_key

    reps = check_int(reps, "reps", 2)
    prep = _prepare(setting, seed)
    geom, F, target = prep.geometry, prep.F, prep.target
    n, T, d = setting.n, geom.T, geom.dim
    built = {name: Design(geom.space, geom.grid, setting.radius, **kw) for name, kw in designs.items()}
    per_chunk = max(1, chunk_values // (n * T))
    out = {name: {"err": np.empty(reps), "free": np.empty(reps, dtype=bool)} for name in built}
    noiseless = None
    for k, start in enumerate(range(0, reps, per_chunk)):
        c = min(per_chunk, reps - start)
        ss = np.random.SeedSequence(seed, spawn_key=stream_key(setting) + (1014, k))
        rng = np.random.Generator(np.random.PCG64(ss))
        if setting.sigma0 > 0:
            X = F + setting.sigma0 * rng.standard_normal((c, n, T))
            parts = _shared_parts(built, X)
        else:
            if noiseless is None:
                noiseless = _shared_parts(built, F[None])
            parts = noiseless
        Z = {T: rng.standard_normal((c, T)), "d": rng.standard_normal((c, d))}
        for name, des in built.items():
            S = des.summary_from_parts(parts[id(des)])
            z = Z["d"] if des.L.shape[1] == d and des.L.shape[1] != T else Z[T]
            xt = S + des.sigma(n, setting.mu) * (z @ des.L.T)
            solver = fitter(geom, des.weights)
            if des.fit == "ball":
                fit = solver.solve(xt[:, None, :], des.radius)
                coef, fit_active = fit.coef[:, 0], fit.active[:, 0]
            else:
                coef, fit_active = solver.unconstrained(xt), np.zeros(c, dtype=bool)
            moved = np.zeros(c, dtype=bool)
            for flag in ("box_active", "ellipsoid_active", "ball_active"):
                if flag in parts[id(des)]:
                    moved |= np.broadcast_to(parts[id(des)][flag], (c,))
            out[name]["err"][start:start + c] = geom.error(coef[:, None, :], target)[:, 0]
            out[name]["free"][start:start + c] = ~(moved | fit_active)
    return out


def _shared_parts(built: dict, X) -> dict:
    """Each design's :meth:`Design.parts`, computing each distinct piece of work once."""
    pieces: dict = {}
    out: dict = {}
    for des in built.values():
        parts: dict = {}
        if des.clip is not None:
            key = ("box", des.clip.tobytes())
            if key not in pieces:
                pieces[key] = (ptf_clipped_mean(X, des.clip), np.any(np.abs(X) > des.clip, axis=(-2, -1)))
            parts["box"], parts["box_active"] = pieces[key]
        if des._e_w > 0:
            if "ellipsoid" not in pieces:
                mean_coef, active = ftp_fit_mean(X, des.geometry, des.radius)
                pieces["ellipsoid"] = (mean_coef @ des.geometry.Phi.T, active.any(axis=-1))
            parts["ellipsoid"], parts["ellipsoid_active"] = pieces["ellipsoid"]
        if des.set == "ball":
            key = ("ball", des.ball_radius)
            if key not in pieces:
                sub = des.parts(X)
                pieces[key] = (sub[key], sub["ball_active"])
            parts[key], parts["ball_active"] = pieces[key]
        out[id(des)] = parts
    return out


def compare_designs(settings, designs: dict, reps: int, seed: int, *, references=("PTF", "FTP")):
    """A results table: one row per (setting, design), with paired ratios to the references.

    Columns: the setting's parameters (``family``, ``T``, ``m``, ``n``, ``sigma0``,
    ``radius`` …), ``design``, ``err`` and ``se`` (Monte Carlo mean and standard
    error), ``free`` (share of repetitions in which no constraint bound),
    ``formula`` (:meth:`Design.unconstrained_error`, exact when nothing binds) with
    ``formula_se`` (:meth:`Design.unconstrained_sd` over √reps: the exact standard
    error of ``err`` when nothing binds), and
    for each reference R in ``references`` ``ratio_R`` = err/err_R with
    ``se_log_ratio_R``, the delta-method standard error of its logarithm from
    the paired repetitions, sd(e_r/ē − e_R,r/ē_R)/√reps (as the engine's
    FTP/PTF ratio).
    """
    import pandas as pd

    reps = check_int(reps, "reps", 2)
    rows = []
    for setting in settings:
        out = simulate_designs(setting, designs, reps, seed)
        geom = setting.geometry()
        for name, kw in designs.items():
            e = out[name]["err"]
            des = Design(geom.space, geom.grid, setting.radius, **kw)
            sampling, privacy = des.unconstrained_error(setting.n, setting.mu, setting.sigma0)
            sd = des.unconstrained_sd(setting.n, setting.mu, setting.sigma0)
            row = dict(setting.params(), design=name, reps=reps, err=float(e.mean()),
                       se=float(e.std(ddof=1) / math.sqrt(reps)), free=float(out[name]["free"].mean()),
                       formula=sampling + privacy, formula_se=sd / math.sqrt(reps))
            for ref in references:
                f = out[ref]["err"]
                rel = e / e.mean() - f / f.mean()
                row[f"ratio_{ref}"] = float(e.mean() / f.mean())
                row[f"se_log_ratio_{ref}"] = float(rel.std(ddof=1) / math.sqrt(reps))
            rows.append(row)
    return pd.DataFrame(rows)


def ratio_panels(df, designs, *, panel="sigma0", reference="PTF", z: float = 1.959963984540054):
    """Error ratio of each design to ``reference`` against n, one panel per ``panel`` value.

    Error bars: the paired confidence interval exp(±z·se_log_ratio) (95% by
    default). Drawn by :func:`dpfda.plots.design_ratio_figure` (the book's style; the
    designs of one n side by side, each with its own marker and line style); returns the
    figure.
    """
    from . import plots

    return plots.design_ratio_figure(df, designs, panel=panel, reference=reference, z=z)
