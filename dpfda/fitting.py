"""Ball-constrained weighted least squares, exactly and for any batch shape.

Both pipelines fit a curve by solving (eqs. 3–4)

    minimise (x - Φθ)ᵀ W (x - Φθ)   subject to ||θ||_2 <= B'.

With A = ΦᵀWΦ = V diag(λ) Vᵀ positive definite and g = Vᵀ ΦᵀW x, the
solution is θ(ν) = V (g / (λ + ν)) where ν = 0 if the unconstrained solution
is feasible, and otherwise ν > 0 is the unique root of the secular equation

    Σ_k g_k² / (λ_k + ν)² = B'²

(the Lagrange multiplier of the norm constraint; proofs of Theorems 10 and 13,
eqs. 15–16 and 39–42).  We solve it to machine precision by Newton's method on
ψ(ν) = 1/B' - 1/||θ(ν)|| (the scheme of Moré and Sorensen for trust-region
steps): ψ is convex and decreasing, so Newton iterates started at a lower
bound of the root rise monotonically to it, capped by an upper bound against
rounding.  The variables are rescaled by max|g| so that no square over- or
underflows at any magnitude of x and B'.  The eigendecomposition of A is done
once per design; each batch costs one matrix product plus a few vectorised
Newton sweeps over the active problems (laid out so that every sweep is a
handful of elementwise operations on contiguous arrays) — there is no Python
loop over curves or repetitions, and a curve's result does not depend on the
other curves in its batch.
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

    def _prepare(self, X, radius):
        """Eigenbasis coordinates g, unconstrained z = g/λ, and the active mask."""
        radius = check_positive(radius, "radius")
        X = np.asarray(X, dtype=float)
        if X.shape[-1] != self.T:
            raise ValueError(f"X's last axis has length {X.shape[-1]}, expected T={self.T}")
        g = X @ self._P  # (..., d) in the eigenbasis of A
        z = g / self.eigenvalues
        norm = _norm_rows(z)
        if not np.all(np.isfinite(norm)):  # NaN or inf in X (finite g always has a finite norm)
            raise ValueError("X contains NaN or inf (or values too large for floating point)")
        return radius, g, z, norm > radius

    def _active_solution(self, g_active, radius):
        """Constrained solutions of the active rows: (z (d, k), ν (k,)), transposed."""
        lam = self.eigenvalues
        # Active rows, transposed to (d, k) so that every step below is an
        # elementwise operation on contiguous length-k rows.
        G = np.ascontiguousarray(g_active.T)
        # The secular equation is homogeneous: with u = g/max|g| and ρ = B'/max|g| it
        # reads Σ u²/(ρλ + ω)² = 1 in ω = ρν, whose terms are O(1) whatever the
        # magnitudes of x and B' (no overflow or underflow from squaring them).
        gmax = np.abs(G[0])
        for row in G[1:]:
            np.maximum(gmax, np.abs(row), out=gmax)
        u = G / gmax
        rho = radius / gmax
        L = lam[:, None] * rho
        omega = _secular_root(u, L)
        zt = u / (L + omega)  # θ/B' in the eigenbasis of A, norm 1 up to rounding
        # Remove the last rounding error so the solution is exactly feasible.
        zt *= np.minimum(1.0, 1.0 / np.sqrt(_sum_rows(zt * zt)))
        zt *= radius
        with np.errstate(over="ignore", divide="ignore"):
            nu = omega / rho  # ν = ω/ρ (inf only beyond the float range)
        return zt, nu

    def solve(self, X, radius) -> BallFit:
        """Fit every curve in ``X`` (..., T) inside the ball of radius ``radius``."""
        radius, g, z, active = self._prepare(X, radius)
        nu = np.zeros(active.shape)
        if np.any(active):
            zt, nu_act = self._active_solution(g[active], radius)
            z[active] = zt.T
            nu[active] = nu_act
        coef = z @ self.eigenvectors.T
        return BallFit(coef=coef, active=active, multiplier=nu)

    def solve_mean(self, X, radius):
        """The average of the ball-constrained fits of the curves in ``X`` (..., n, T).

        Returns ``(mean_coef (..., d), active (..., n))``: the same numbers as
        ``solve(X, radius).coef.mean(axis=-2)`` up to rounding, computed without
        expanding every curve's fit.  An inactive curve's fit is linear in the
        data, so the mean is the unconstrained mean of all curves plus, for the
        active curves only, the difference between their constrained and
        unconstrained solutions (Algorithm 1, steps 1–2).
        """
        X = np.asarray(X, dtype=float)
        if X.ndim < 2:
            raise ValueError(f"X must hold curves along its second-to-last axis, got shape {X.shape}")
        radius, g, z, active = self._prepare(X, radius)
        n, d = X.shape[-2], self.dim
        batch = z.shape[:-2]
        total = (np.ones(n) @ z).reshape(-1, d)  # Σ_i z_i for each repetition
        if np.any(active):
            zt, _ = self._active_solution(g[active], radius)
            correction = zt.T - z[active]  # (k, d), rows in C order of the batch
            which = np.flatnonzero(active) // n  # the repetition each active row belongs to
            for k in range(d):
                total[:, k] += np.bincount(which, weights=correction[:, k], minlength=total.shape[0])
        mean_z = total.reshape(batch + (d,)) / n
        # Back to the original coordinates, summed in a fixed order so the result of a
        # repetition does not depend on how many are processed together (a BLAS
        # product would pick different kernels for one row and for many).
        Vt = self.eigenvectors.T
        coef = mean_z[..., :1] * Vt[0]
        for k in range(1, d):
            coef += mean_z[..., k : k + 1] * Vt[k]
        return coef, active


def _sum_rows(a: np.ndarray) -> np.ndarray:
    """Σ over the first axis of a (d, k) array, added in a fixed order.

    An explicit loop rather than ``a.sum(axis=0)``: numpy may switch to pairwise
    summation when k = 1, and a row's result must not depend on how many rows
    are solved together (``batch = row by row``, bit for bit).
    """
    out = a[0].copy()
    for row in a[1:]:
        out += row
    return out


def _norm_rows(v: np.ndarray) -> np.ndarray:
    """Euclidean norm over the last axis, without overflow or underflow in the squares.

    The plain sqrt(Σv²) is exact to rounding whenever Σv² is a normal number far
    from the overflow threshold; the other rows are rescaled by their largest
    entry first.  NaN or inf in ``v`` give a non-finite norm.
    """
    ss = np.asarray(np.einsum("...k,...k->...", v, v))
    norm = np.sqrt(ss, out=np.empty(ss.shape))
    odd = np.asarray(~((ss > _SS_LOW) & (ss < _SS_HIGH)))  # under/overflow risk, zero, NaN or inf
    if np.any(odd):
        w = v[odd]
        vmax = np.max(np.abs(w), axis=-1)
        safe = np.where(vmax > 0, vmax, 1.0)
        with np.errstate(invalid="ignore"):  # inf/inf: such rows get a NaN norm, as they should
            w = w / safe[..., None]
            norm[odd] = vmax * np.sqrt(np.einsum("...k,...k->...", w, w))
    return norm


_SS_LOW = 1e-280  # above the subnormal range with margin: no precision lost in the squares
_SS_HIGH = 1e280  # far below overflow


def _secular_root(u: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Root ω >= 0 of Σ_k u_k²/(L_k + ω)² = 1 for each column (all active).

    Column-wise inputs, transposed for speed: ``u`` (d, k) with max |u| = 1 in
    each column, and ``L`` (d, k) the column's scaled eigenvalues ρλ in
    increasing order, so every quantity below is O(1).

    ψ(ω) = 1 - 1/||θ(ω)|| is convex and decreasing (1/||θ(ω)|| is concave,
    Moré and Sorensen 1983), so Newton's method started left of the root
    increases monotonically to it and never overshoots.  The start is the lower
    bound ω₀ = ||u|| - Σ_k p_k L_k with p_k = u_k²/||u||², from Jensen's
    inequality Σ p_k (L_k + ω)⁻² >= (Σ p_k (L_k + ω))⁻²; ω <= ||u|| - L_min
    caps the iterates against rounding.  A column stops when its Newton step
    no longer moves it; once a step is below 1e-9 of ω, quadratic convergence
    puts the next iterate within rounding of the root and the column stops
    after taking it.
    """
    u2 = u * u
    unorm2 = _sum_rows(u2)
    unorm = np.sqrt(unorm2)
    lbar = _sum_rows(u2 * L) / unorm2
    om = np.maximum(unorm - lbar, 0.0)
    hi = np.maximum(unorm - L[0], om)
    idx = np.arange(om.size)
    live = np.ones(om.size, dtype=bool)
    uw, Lw, w, hw = u2, L, om.copy(), hi
    eps4 = 4 * np.finfo(float).eps
    for _ in range(_MAX_ITER):
        inv = Lw + w
        np.reciprocal(inv, out=inv)
        q = uw * inv
        q *= inv
        h = _sum_rows(q)  # ||θ(ω)||²
        q *= inv
        h3 = _sum_rows(q)  # Σ u²/(L + ω)³ = -ψ'(ω)·||θ||³
        step = (np.sqrt(h) - 1.0) * h / h3  # the Newton step -ψ/ψ'
        new = np.minimum(w + step, hw)
        moved = live & (step > eps4 * new)  # False for NaN: nothing left to gain
        w = np.where(moved, new, w)
        om[idx] = w
        live = moved & (step > 1e-9 * new)
        n_live = np.count_nonzero(live)
        if n_live == 0:
            break
        if n_live < 0.75 * live.size:  # drop finished columns from the work arrays
            keep = np.nonzero(live)[0]
            idx, uw, Lw, w, hw, live = idx[keep], uw[:, keep], Lw[:, keep], w[keep], hw[keep], live[keep]
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
