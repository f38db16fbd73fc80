"""Ball-constrained weighted least squares, exactly and for any batch shape.

Both pipelines fit a curve by solving (eqs. 3–4)

    minimise (x - Φθ)ᵀ W (x - Φθ)   subject to ||θ||_2 <= B'.

With A = ΦᵀWΦ = V diag(λ) Vᵀ positive definite and g = Vᵀ ΦᵀW x, the
solution is θ(ν) = V (g / (λ + ν)) where ν = 0 if the unconstrained solution
is feasible, and otherwise ν > 0 is the unique root of the secular equation

    Σ_k g_k² / (λ_k + ν)² = B'²

(the Lagrange multiplier of the norm constraint; proofs of Theorems 10 and 13,
eqs. 15–16 and 39–42).  We solve it to machine precision by Newton's method on
ψ(ν) = 1/B' - 1/||θ(ν)||, kept inside a shrinking bracket and falling back to
bisection whenever a Newton step would leave it (the safeguarded scheme of
Moré and Sorensen for trust-region steps), in variables rescaled by max|g|
so that no square over- or underflows at any magnitude of x and B'.  The
eigendecomposition of A is done once per design; each batch costs one matrix
product plus a few vectorised Newton sweeps over the active problems — there
is no Python loop over curves or repetitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import AssumptionError, check_positive

__all__ = ["BallFit", "BallLeastSquares", "fit_ball"]

_MAX_ITER = 200


@dataclass(frozen=True)
class BallFit:
    """Result of a ball-constrained fit.

    Attributes
    ----------
    coef : ndarray (..., d)
        The minimiser θ̂.
    active : ndarray (...,) of bool
        Whether the constraint binds (the unconstrained solution has norm > B').
    multiplier : ndarray (...,)
        The Lagrange multiplier ν >= 0 of the constraint (0 where inactive).
    """

    coef: np.ndarray
    active: np.ndarray
    multiplier: np.ndarray


class BallLeastSquares:
    """A fixed design Φ (T, d) and weights W = diag(w), prepared for many fits.

    Parameters
    ----------
    Phi : array (T, d)
        Design matrix with full column rank.
    weights : array (T,), optional
        Positive weights (the diagonal of W); ``None`` means W = I.
    """

    def __init__(self, Phi, weights=None):
        Phi = np.asarray(Phi, dtype=float)
        if Phi.ndim != 2:
            raise ValueError(f"Phi must be a 2-D design matrix (T, d), got shape {Phi.shape}")
        if not np.all(np.isfinite(Phi)):
            raise ValueError("Phi contains NaN or inf")
        T, d = Phi.shape
        if weights is None:
            w = np.ones(T)
        else:
            w = np.asarray(weights, dtype=float)
            if w.ndim != 1 or w.size != T:
                raise ValueError(
                    f"weights must be a vector of length T={T} (the diagonal of W), got shape {w.shape}"
                )
            if not np.all(np.isfinite(w)) or np.any(w <= 0):
                raise ValueError("weights must be finite and > 0 at every grid point")
        A = Phi.T @ (w[:, None] * Phi)
        lam, V = np.linalg.eigh((A + A.T) / 2.0)
        if lam[0] <= 1e-13 * max(lam[-1], 1e-300):
            raise AssumptionError(
                f"A = ΦᵀWΦ is singular (smallest eigenvalue {lam[0]:.3g}); the design needs full "
                "column rank (Assumption A.3 / A.4)"
            )
        self.Phi = Phi
        self.weights = w
        self.eigenvalues = lam
        self.eigenvectors = V
        self._P = (w[:, None] * Phi) @ V  # x @ _P = Vᵀ Φᵀ W x

    @property
    def T(self) -> int:
        return self.Phi.shape[0]

    @property
    def dim(self) -> int:
        return self.Phi.shape[1]

    def unconstrained(self, X) -> np.ndarray:
        """The weighted least-squares solution A⁻¹ΦᵀWx for each row of X."""
        g = np.asarray(X, dtype=float) @ self._P
        return (g / self.eigenvalues) @ self.eigenvectors.T

    def solve(self, X, radius) -> BallFit:
        """Fit every curve in ``X`` (..., T) inside the ball of radius ``radius``."""
        radius = check_positive(radius, "radius")
        X = np.asarray(X, dtype=float)
        if X.shape[-1] != self.T:
            raise ValueError(f"X's last axis has length {X.shape[-1]}, expected T={self.T}")
        g = X @ self._P  # (..., d) in the eigenbasis of A
        if not np.all(np.isfinite(g)):
            raise ValueError("X contains NaN or inf (or values too large for floating point)")
        lam = self.eigenvalues
        z = g / lam
        active = _scaled_norm(z) > radius
        nu = np.zeros(active.shape)
        if np.any(active):
            ga = g[active]
            # The secular equation is homogeneous: with u = g/max|g| and ρ = B'/max|g| it
            # reads Σ u²/(ρλ + ω)² = 1 in ω = ρν, whose terms are O(1) whatever the
            # magnitudes of x and B' (no overflow or underflow from squaring them).
            gmax = np.max(np.abs(ga), axis=-1)
            u = ga / gmax[:, None]
            rho = radius / gmax
            lam_rows = rho[:, None] * lam
            omega = _secular_root(u, lam_rows)
            zt = u / (lam_rows + omega[:, None])  # θ/B' in the eigenbasis of A
            # Remove the last rounding error so the solution is exactly feasible.
            zt *= np.minimum(1.0, 1.0 / _scaled_norm(zt))[:, None]
            z[active] = radius * zt
            with np.errstate(over="ignore", divide="ignore"):
                nu[active] = omega / rho  # ν = ω/ρ (inf only beyond the float range)
        coef = z @ self.eigenvectors.T
        return BallFit(coef=coef, active=active, multiplier=nu)


def _scaled_norm(v: np.ndarray) -> np.ndarray:
    """Euclidean norm over the last axis, without overflow or underflow in the squares."""
    vmax = np.max(np.abs(v), axis=-1)
    safe = np.where(vmax > 0, vmax, 1.0)
    w = v / safe[..., None]
    return vmax * np.sqrt(np.einsum("...k,...k->...", w, w))


def _secular_root(u: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Root ω >= 0 of Σ_k u_k²/(λ_k + ω)² = 1 for each row (all rows active).

    Row-wise inputs: ``u`` (k, d) with max |u| = 1, and ``lam`` (k, d) the row's
    scaled eigenvalues ρλ in increasing order, so every quantity below is O(1).
    """
    u2 = u * u
    unorm = np.sqrt(u2.sum(axis=-1))
    # ||θ(ω)|| lies between ||u||/(λ_max+ω) and ||u||/(λ_min+ω), which brackets the root.
    lo = np.maximum(unorm - lam[:, -1], 0.0)
    hi = np.maximum(unorm - lam[:, 0], lo)
    om = lo.copy()
    todo = np.ones(om.shape, dtype=bool)
    for _ in range(_MAX_ITER):
        idx = np.nonzero(todo)[0]
        if idx.size == 0:
            break
        v = om[idx]
        den = lam[idx] + v[:, None]
        q = u2[idx] / den**2
        h = q.sum(axis=-1)  # ||θ(ω)||²
        s = np.sqrt(h)
        psi = 1.0 - 1.0 / s  # > 0 left of the root (norm too large), < 0 right of it
        # Tighten the bracket with the sign of ψ.
        left = psi > 0
        lo_i = np.where(left, v, lo[idx])
        hi_i = np.where(left, hi[idx], v)
        # Newton step: ψ'(ω) = -(Σ u²/(λ+ω)³) / ||θ||³.
        dpsi = -(q / den).sum(axis=-1) / (h * s)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = -psi / dpsi
        cand = v + step
        bad = ~np.isfinite(cand) | (cand <= lo_i) | (cand >= hi_i)
        cand = np.where(bad, 0.5 * (lo_i + hi_i), cand)
        converged = (np.abs(s - 1.0) <= 4 * np.finfo(float).eps) | (
            hi_i - lo_i <= 4 * np.finfo(float).eps * np.maximum(hi_i, 1e-300)
        )
        lo[idx], hi[idx] = lo_i, hi_i
        om[idx] = np.where(converged, v, cand)
        todo[idx] = ~converged
    return om


def fit_ball(X, Phi, radius, weights=None) -> BallFit:
    """argmin (x - Φθ)ᵀW(x - Φθ) subject to ||θ||_2 <= radius, for each curve.

    Parameters
    ----------
    X : array (..., T)
        Observed values on the grid; any leading batch axes.
    Phi : array (T, d)
        Design matrix (``space.at(grid).Phi``).
    radius : float
        The fitting radius B' > 0.
    weights : array (T,), optional
        Diagonal of W (eq. 4); ``None`` for W = I.

    Returns
    -------
    BallFit
        ``coef`` (..., d), ``active`` (...,), ``multiplier`` (...,).
    """
    return BallLeastSquares(Phi, weights).solve(X, radius)
