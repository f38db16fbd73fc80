"""The two pipelines of the paper: Fit-Then-Protect and Protect-Then-Fit.

FTP (Algorithm 1)::

    X (…, n, T) ──fit each curve in the ball B'──▶ θ̂_i (…, n, d) ──mean──▶ θ̂ (…, d) ──+σZ──▶ release

with σ = 2B'/(nμ) (Theorem 6, Corollaries 7–8).

PTF (Algorithm 2)::

    X (…, n, T) ──clip to ±c_j, mean──▶ x̄ (…, T) ──+N(0, σ_j²)──▶ x̃ ──weighted fit in the ball B'──▶ release

with σ_j = (2c_j/n)·sqrt(T)/μ (Proposition 9: each coordinate is (μ/√T)-GDP,
and T of them compose to μ-GDP; the fit is post-processing).

Each stage is also a function of its own (``ftp_fit_mean``, ``ptf_clipped_mean``
…) so the simulation engine can reuse work, e.g. fit noiseless data once.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_data, check_int, check_points, check_positive, check_rng
from .fitting import BallLeastSquares
from .spaces import GridGeometry, KernelSpace, LegendreSpace

__all__ = [
    "Release",
    "ftp",
    "ptf",
    "ftp_sigma",
    "ptf_sigmas",
    "ftp_fit_mean",
    "ptf_clipped_mean",
    "ptf_default_clip",
    "ptf_default_weights",
    "fitter",
]


# ---------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------


def ftp_sigma(n: int, radius: float, mu: float) -> float:
    """FTP noise scale σ = Δ/μ with Cameron–Martin sensitivity Δ = 2B'/n (Algorithm 1)."""
    n = check_int(n, "n", 1)
    return 2.0 * check_positive(radius, "radius") / (n * check_positive(mu, "mu"))


def ptf_sigmas(n: int, clip, mu: float) -> np.ndarray:
    """PTF noise scales σ_j = (2c_j/n)·sqrt(T)/μ (Algorithm 2; T = len(clip))."""
    n = check_int(n, "n", 1)
    c = np.asarray(clip, dtype=float)
    if c.ndim != 1 or c.size < 1 or not np.all(np.isfinite(c)) or np.any(c <= 0):
        raise ValueError("clip must be a vector of finite bounds c_j > 0, one per grid point")
    return 2.0 * c / n * np.sqrt(c.size) / check_positive(mu, "mu")


def ptf_default_clip(geometry: GridGeometry, radius: float) -> np.ndarray:
    """c_j = B'·a_j with a_j = ||φ(t_j)||_2 or sqrt(K(t_j,t_j)) (Theorems 11, 14)."""
    return check_positive(radius, "radius") * geometry.scale


def ptf_default_weights(geometry: GridGeometry) -> np.ndarray:
    """W = diag(a_j^{-2}) (Theorems 11, 14)."""
    return geometry.scale**-2.0


_FITTERS: dict = {}


def fitter(geometry: GridGeometry, weights=None) -> BallLeastSquares:
    """A cached :class:`BallLeastSquares` for this geometry and weight vector."""
    w = None if weights is None else np.asarray(weights, dtype=float)
    key = (id(geometry), None if w is None else w.tobytes())
    hit = _FITTERS.get(key)
    if hit is not None and hit[0] is geometry:
        return hit[1]
    solver = BallLeastSquares(geometry.Phi, w)
    if len(_FITTERS) > 512:
        _FITTERS.clear()
    _FITTERS[key] = (geometry, solver)
    return solver


# ---------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------


def ftp_fit_mean(X: np.ndarray, geometry: GridGeometry, radius: float):
    """Fit each curve in the ball of radius B' (W = I) and average (Algorithm 1, steps 1–2).

    Returns ``(mean_coef (…, d), active (…, n))``.
    """
    return fitter(geometry).solve_mean(X, radius)


def ptf_clipped_mean(X: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Coordinate-wise mean of the clipped values, x̄_j^(clip) (Algorithm 2)."""
    return np.clip(X, -clip, clip).mean(axis=-2)


# ---------------------------------------------------------------------------
# Releases
# ---------------------------------------------------------------------------


class Release:
    """A private estimate of the mean function, as returned by :func:`ftp` and :func:`ptf`.

    Call it on points of [0, 1] to evaluate the released function: ``rel(t)``
    has shape (…, len(t)), where … are the repetition axes of the input.

    Attributes
    ----------
    method : {"ftp", "ptf"}
    space, geometry, grid
        The function space and its geometry on the public grid.
    coef : ndarray (…, d)
        Cameron–Martin coordinates of the released function (restricted to the
        grid span for an RKHS FTP release; see ``__call__``).
    values : ndarray (…, T)
        The release on the grid.
    mu, radius, n
        Privacy budget, fitting radius B', number of curves.
    noise_scale : float or ndarray (T,)
        σ for FTP, (σ_1, …, σ_T) for PTF.
    active : ndarray of bool
        FTP: (…, n), whether each curve's fit hit the ball; PTF: (…,), whether
        the final fit did.
    clip, weights : ndarray (T,) or None
        PTF's clipping bounds and weights.
    """

    def __init__(self, *, method, geometry, coef, mu, radius, n, noise_scale, active,
                 clip=None, weights=None, noisy_means=None, residual_rng=None):
        self.method = method
        self.geometry = geometry
        self.coef = coef
        self.mu = mu
        self.radius = radius
        self.n = n
        self.noise_scale = noise_scale
        self.active = active
        self.clip = clip
        self.weights = weights
        self.noisy_means = noisy_means
        # Only an RKHS FTP release has a random part off the grid (see __call__).
        self._residual = None
        self._residual_rng = residual_rng

    space = property(lambda self: self.geometry.space)
    grid = property(lambda self: self.geometry.grid)

    @property
    def values(self) -> np.ndarray:
        return self.geometry.values(self.coef)

    @property
    def shape(self) -> tuple:
        """Repetition axes of the release (() for a single dataset)."""
        return self.coef.shape[:-1]

    def error(self, target_coef) -> np.ndarray:
        """IMSE (H_m) or grid MSE (H_K) against the target coordinates (e.g. θ̄)."""
        return self.geometry.error(self.coef, target_coef)

    def __repr__(self):
        return (f"Release(method={self.method!r}, space={self.space!r}, T={self.geometry.T}, "
                f"n={self.n}, mu={self.mu}, radius={self.radius}, shape={self.shape})")

    def __call__(self, t) -> np.ndarray:
        """Evaluate the released function at points ``t`` in [0, 1].

        Exact for H_m and for every PTF release.  An RKHS FTP release is
        f̂ + σZ_K with Z_K a Gaussian process path (Corollary 8).  Given the
        grid values, Z_K(t) is Gaussian with mean K(t, grid)K_T⁻¹Z_K(grid) and
        the covariance of the residual process R = Z_K - E[Z_K | grid]; since f̂
        lies in span{K(t_j, ·)}, f̂(t) + σE[Z_K(t) | grid] is the kernel
        interpolant of the released grid values.  So the release off the grid
        is ``evaluate(coef, t) + σR(t)``, with R drawn lazily, independently of
        the data, and conditional on every residual value drawn so far, so that
        repeated calls describe one consistent function.  On the grid R = 0 and
        the release equals ``values``.  No non-private quantity is stored.
        """
        t = check_points(t)
        base = self.geometry.evaluate(self.coef, t)
        if self._residual_rng is None:
            return base
        if self._residual is None:
            self._residual = _ResidualGP(self.space.kernel, self.grid, self.shape,
                                         self._residual_rng)
        return base + self.noise_scale * self._residual(t)


class _ResidualGP:
    """R = Z_K - E[Z_K | Z_K(grid)], drawn lazily at new points (zero on the grid)."""

    def __init__(self, kernel, grid, batch_shape, rng):
        self.kernel = kernel
        self.points = np.asarray(grid, dtype=float)
        self.values = np.zeros(tuple(batch_shape) + (self.points.size,))
        self.rng = rng

    def __call__(self, t):
        new = np.unique(t[~np.isin(t, self.points)])
        if new.size:
            P = self.points
            Kpp = self.kernel.gram(P)
            lam, V = np.linalg.eigh((Kpp + Kpp.T) / 2)
            keep = lam > lam[-1] * 1e-12
            Kpp_pinv = (V[:, keep] / lam[keep]) @ V[:, keep].T
            Ksp = self.kernel(new[:, None], P[None, :])
            mean = self.values @ (Ksp @ Kpp_pinv).T  # (..., s)
            cov = self.kernel.gram(new) - Ksp @ Kpp_pinv @ Ksp.T
            lc, Vc = np.linalg.eigh((cov + cov.T) / 2)
            root = (Vc * np.sqrt(np.clip(lc, 0.0, None))) @ Vc.T
            z = self.rng.standard_normal(self.values.shape[:-1] + (new.size,))
            draw = mean + z @ root.T
            self.points = np.concatenate([P, new])
            self.values = np.concatenate([self.values, draw], axis=-1)
        order = np.argsort(self.points)
        pos = order[np.searchsorted(self.points[order], t)]
        return self.values[..., pos]


def _child_rng(rng: np.random.Generator) -> np.random.Generator:
    try:
        return rng.spawn(1)[0]
    except (TypeError, AttributeError):  # a bit generator built without a SeedSequence
        return np.random.default_rng(rng.integers(0, 2**63))


def _check_secure(secure) -> bool:
    if not isinstance(secure, (bool, np.bool_)):
        raise TypeError(f"secure must be True or False, got {type(secure).__name__}")
    return bool(secure)


def _setup(X, grid, space, radius, mu, rng):
    if not isinstance(space, (LegendreSpace, KernelSpace)):
        raise TypeError(
            f"space must be a LegendreSpace or KernelSpace, got {type(space).__name__}"
        )
    geometry = space.at(grid)
    X = check_data(X, geometry.T)
    radius = check_positive(radius, "radius")
    mu = check_positive(mu, "mu")
    rng = check_rng(rng)
    return X, geometry, radius, mu, rng


def ftp(X, grid, space, radius, mu, rng, *, secure=False) -> Release:
    """Fit-Then-Protect (Algorithm 1), μ-GDP by Theorem 6 and Corollaries 7–8.

    Each curve is fitted by least squares (W = I) inside the ball of radius B'
    of the Cameron–Martin space; the fits are averaged; the average gets σZ
    with σ = 2B'/(nμ).  Z is N(0, I_m) on the coefficients for H_m (Corollary 7)
    and GP(0, K) for an RKHS — N(0, σ²K_T) on the grid (Corollary 8).

    Parameters
    ----------
    X : array (n, T) or (reps, n, T)
        Observed curves, one per row (samples × grid points), on ``grid``.
    grid : array (T,)
        Public, strictly increasing points of [0, 1].
    space : LegendreSpace or KernelSpace
    radius : float
        Fitting radius B' > 0.
    mu : float
        Privacy budget μ > 0.
    rng : numpy.random.Generator
        Source of the privacy noise (with ``secure=True``: only of the
        data-independent part of an RKHS release off the grid).
    secure : bool, default False
        Draw the privacy noise with OpenDP's vector Gaussian mechanism
        (:mod:`dpfda.secure`) instead of numpy: on the coefficients for H_m, on
        the β-coordinates for an RKHS.  Such a release cannot be reproduced
        from a seed, and it keeps no non-private value.  Needs ``opendp``.

    Returns
    -------
    Release
    """
    X, geometry, radius, mu, rng = _setup(X, grid, space, radius, mu, rng)
    secure = _check_secure(secure)
    n = X.shape[-2]
    mean_coef, active = ftp_fit_mean(X, geometry, radius)
    sigma = ftp_sigma(n, radius, mu)
    if secure:
        from .secure import gaussian_release

        coef = gaussian_release(mean_coef, sigma, sensitivity=2.0 * radius / n, mu=mu)
    else:
        coef = mean_coef + sigma * rng.standard_normal(mean_coef.shape)
    # Off the grid an RKHS release also needs the GP residual, drawn from its own stream.
    child = _child_rng(rng) if isinstance(space, KernelSpace) else None
    return Release(method="ftp", geometry=geometry, coef=coef, mu=mu, radius=radius, n=n,
                   noise_scale=sigma, active=active, residual_rng=child)


def ptf(X, grid, space, radius, mu, rng, clip=None, weights=None, *, secure=False) -> Release:
    """Protect-Then-Fit (Algorithm 2), μ-GDP by Proposition 9.

    Coordinate j is clipped to [-c_j, c_j], averaged over curves, and released
    with N(0, σ_j²) noise, σ_j = (2c_j/n)·sqrt(T)/μ; the noisy vector is then
    fitted with the weighted loss (eq. 4) inside the ball of radius B'.

    Parameters
    ----------
    X, grid, space, radius, mu, rng
        As for :func:`ftp`.
    clip : float or array (T,), optional
        Clipping bounds c_j > 0; a scalar means the same bound at every point.
        Default c_j = B'·||φ(t_j)||_2 (H_m) or B'·sqrt(K(t_j,t_j)) (H_K).
    weights : array (T,), optional
        Diagonal of W, all > 0.  Default W = diag(||φ(t_j)||_2^{-2}) or
        diag(K(t_j,t_j)^{-1}).
    secure : bool, default False
        Draw the noise with OpenDP's vector Gaussian mechanism: the clipped
        means are divided by c_j (common sensitivity 2/n per coordinate, 2√T/n
        in ℓ₂), noised with scale 2√T/(nμ) and multiplied back by c_j
        (:mod:`dpfda.secure`).  Not reproducible from a seed.  Needs ``opendp``.

    Returns
    -------
    Release
    """
    X, geometry, radius, mu, rng = _setup(X, grid, space, radius, mu, rng)
    secure = _check_secure(secure)
    n, T = X.shape[-2], geometry.T
    if clip is None:
        c = ptf_default_clip(geometry, radius)
    else:
        c = np.asarray(clip, dtype=float)
        if c.ndim == 0:
            c = np.full(T, float(c))
        if c.ndim != 1 or c.size != T:
            raise ValueError(f"clip must be a scalar or a vector of length T={T}, got shape {np.shape(clip)}")
        if not np.all(np.isfinite(c)) or np.any(c <= 0):
            raise ValueError("clip bounds must be finite and > 0 at every grid point")
    if weights is None:
        w = ptf_default_weights(geometry)
    else:
        w = np.asarray(weights, dtype=float)
        if w.ndim != 1 or w.size != T:
            raise ValueError(f"weights must be a vector of length T={T}, got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("weights must be finite and > 0 at every grid point")
    xbar = ptf_clipped_mean(X, c)
    sig = ptf_sigmas(n, c, mu)
    if secure:
        from .secure import gaussian_release

        common = 2.0 * np.sqrt(T) / (n * mu)  # = σ_j / c_j for every j
        xtilde = c * gaussian_release(xbar / c, common, sensitivity=2.0 * np.sqrt(T) / n, mu=mu)
    else:
        xtilde = xbar + sig * rng.standard_normal(xbar.shape)
    fit = fitter(geometry, w).solve(xtilde, radius)
    return Release(method="ptf", geometry=geometry, coef=fit.coef, mu=mu, radius=radius, n=n,
                   noise_scale=sig, active=fit.active, clip=c, weights=w, noisy_means=xtilde)
