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
from numpy.typing import ArrayLike

from .._validation import AssumptionError, as_float_array, check_grid_vector, check_positive
from .summation import fixed_point_ball_mean

__all__ = ["BallFit", "BallLeastSquares", "fit_ball"]

_MAX_ITER = 200
_BLOCK = 8192
"""Active rows solved together: a block's (d, 8192) work arrays (at most 0.5 MB each for
d = 8) stay in the processor's caches during the Newton sweeps (the result does not depend on
the block size; how it was chosen: CHANGELOG.md, "Measurements history")."""


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

    def __init__(self, Phi: ArrayLike, weights: ArrayLike | None = None) -> None:
        Phi = as_float_array(Phi, "Phi")
        if Phi.ndim != 2:
            raise ValueError(f"Phi must be a 2-D design matrix (T, d), got shape {Phi.shape}")
        if not np.all(np.isfinite(Phi)):
            raise ValueError("Phi contains NaN or inf")
        T, d = Phi.shape
        w, self._weight_exp = _weight_vector(weights, T)
        A = Phi.T @ (w[:, None] * Phi)
        lam, V = np.linalg.eigh((A + A.T) / 2.0)
        if lam[0] <= 1e-13 * max(lam[-1], 1e-300):
            raise AssumptionError(
                f"A = ΦᵀWΦ is singular (smallest eigenvalue {lam[0]:.3g}); the design needs full "
                "column rank (Assumption A.3 / A.4)"
            )
        if not np.all(np.isfinite(A)):
            raise ValueError(
                "Phi and weights are too large: ΦᵀWΦ overflows floating point (rescale the design)"
            )
        self.Phi = Phi
        self.weights = np.ldexp(w, self._weight_exp)  # as given (the solver uses w, scaled by 2^-e)
        self.eigenvalues = lam
        self.eigenvectors = V
        self._P = (w[:, None] * Phi) @ V  # x @ _P = Vᵀ Φᵀ W x
        self._rows: dict[int, np.ndarray] = {}  # λ tiled to (n, d), by n (_eigenvalue_rows)

    def _eigenvalue_rows(self, shape: tuple[int, ...]) -> np.ndarray:
        """λ repeated for each of the n rows of a (..., n, d) array, or λ itself.

        Dividing by a contiguous (n, d) array gives the same quotients as
        dividing by λ with broadcasting, but numpy then runs one long inner loop
        instead of one of length d per row.
        """
        if len(shape) < 2 or shape[-2] < 2:
            return self.eigenvalues
        rows = self._rows.get(shape[-2])
        if rows is None:
            if len(self._rows) >= 8:
                self._rows.clear()
            rows = self._rows[shape[-2]] = np.tile(self.eigenvalues, (shape[-2], 1))
        return rows

    @property
    def T(self) -> int:
        """Number of grid points (rows of Phi)."""
        return self.Phi.shape[0]

    @property
    def dim(self) -> int:
        """Number of coordinates d (columns of Phi)."""
        return self.Phi.shape[1]

    def unconstrained(self, X: ArrayLike) -> np.ndarray:
        """The weighted least-squares solution A⁻¹ΦᵀWx for each row of X."""
        g = np.asarray(X, dtype=float) @ self._P
        return (g / self.eigenvalues) @ self.eigenvectors.T

    def _prepare(self, X: ArrayLike, radius: float
                 ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Scaled eigenbasis coordinates of every row, and which rows are active.

        Returns ``(radius, g, z, e, active)``: row i's coordinates Vᵀ ΦᵀW x_i
        and unconstrained solution in the eigenbasis of A are ``g[i]·2**e[i]``
        and ``z[i]·2**e[i]``.  A row whose product with the design overflows, or
        comes out near the subnormal range, is redone after dividing it by a
        power of two (exact), so no finite row over- or underflows, and its
        comparison with B' is made in the same units.  Other rows keep e = 0;
        whether a row is redone depends on that row alone, so no row's result
        depends on the other rows.
        """
        radius = check_positive(radius, "radius")
        X = as_float_array(X, "X")
        if X.shape[-1:] != (self.T,):
            raise ValueError(f"X's last axis has length {X.shape[-1:] or 0}, expected T={self.T}")
        with np.errstate(over="ignore", invalid="ignore"):  # such rows are redone below
            g = X @ self._P  # (..., d) in the eigenbasis of A
            z = g / self._eigenvalue_rows(g.shape)
            norm = _norm_rows(z)
        e = np.zeros(norm.shape, dtype=np.int64)
        # Rows whose products overflowed (non-finite) or fell towards the subnormal range
        # are redone on the row divided by a power of two (exact); the others are left as
        # they are, so checking costs nothing for data of ordinary size.
        if norm.size == 0 or (np.max(norm) < _NORM_HIGH and np.min(norm) >= _NORM_LOW):
            return radius, g, z, e, norm > radius  # no row is odd: two reductions instead of a mask
        odd = ~(norm < _NORM_HIGH) | ((norm < _NORM_LOW) & (norm > 0))
        if not np.any(odd):  # every norm finite and normal: e = 0, B' in the rows' units
            return radius, g, z, e, norm > radius
        e[odd] = _row_exponents(X[odd])
        Xs = np.ldexp(X[odd], -e[odd][..., None])
        # row by row: one BLAS path (a vector times P) whatever the number of rows redone, so a
        # row's bits do not depend on how many others are redone with it
        g[odd] = np.stack([x @ self._P for x in Xs])
        z[odd] = g[odd] / self.eigenvalues
        norm[odd] = _norm_rows(z[odd])
        if not np.all(np.isfinite(norm)):  # finite rows always give finite, scaled z
            raise ValueError("X contains NaN or inf; every value must be a finite number")
        with np.errstate(over="ignore"):
            bound = np.ldexp(radius, -e)  # B' in the row's units (inf: the row is far inside)
        return radius, g, z, e, norm > bound

    def _solve_active(self, g: np.ndarray, z: np.ndarray, e: np.ndarray, active: np.ndarray,
                      radius: float, nu: np.ndarray | None = None) -> None:
        """Overwrite the active rows of ``z`` with their constrained solutions.

        ``g``, ``z`` (..., d) and ``e``, ``active`` (...) come from
        :meth:`_prepare` (``g``, ``z`` are fresh C-contiguous arrays, so the
        reshapes below are views).  Row i's coordinates Vᵀ ΦᵀW x are ``g[i]``
        in its own units 2**e[i]; its solution has Euclidean norm at most B'
        (up to one rounding): a unit vector multiplied by B', whatever the
        magnitude of the data.  Where ``nu`` (shaped like ``active``) is given,
        the multipliers of the active rows are written into it.  The rows are
        gathered (whole, then transposed) into the (d, b) layout of
        :meth:`_active_block` and solved in blocks of :data:`_BLOCK`, so that a block's work arrays stay
        in the processor's cache; each row's arithmetic is the same in any block.
        """
        d = self.dim
        rows = np.flatnonzero(active)
        gf, zf, ef = g.reshape(-1, d), z.reshape(-1, d), e.reshape(-1)
        nuf = None if nu is None else nu.reshape(-1)
        for a in range(0, rows.size, _BLOCK):
            block = rows[a : a + _BLOCK]
            # rows gathered whole, then transposed: much faster than gathering columns
            G = np.ascontiguousarray(np.take(gf, block, axis=0).T)
            zt, nu_block = self._active_block(G, ef[block], radius)
            zf[block] = zt.T
            if nuf is not None:
                nuf[block] = nu_block

    def _active_block(self, G: np.ndarray, e_active: np.ndarray, radius: float
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Constrained solutions of one block of active rows, transposed: (θ (d, b), ν (b,)).

        ``G`` (d, b) holds the rows' coordinates in the eigenbasis, one row per
        column, so that every step below is an elementwise operation on
        contiguous length-b rows.
        """
        lam = self.eigenvalues
        # The secular equation is homogeneous: with u = g/max|g| and ρ = B'/max|g| it
        # reads Σ u²/(ρλ + ω)² = 1 in ω = ρν, whose terms are O(1) whatever the
        # magnitudes of x and B' (no overflow or underflow from squaring them).  For
        # data far outside the ball ρ may underflow to 0; the root is then ω = ||u||
        # and the fit B'·u/||u||, the limit of the constrained fit.  The units 2**e
        # cancel in u and enter only ρ.
        gmax = np.abs(G[0])
        for row in G[1:]:
            np.maximum(gmax, np.abs(row), out=gmax)
        u = G / gmax
        with np.errstate(under="ignore"):
            rho = np.ldexp(radius / gmax, -e_active)
        L = lam[:, None] * rho
        omega = _secular_root(u, L)
        zt = u / (L + omega)  # θ/B' in the eigenbasis of A, norm 1 up to rounding
        # Remove the last rounding error so the solution is exactly feasible.
        zt *= np.minimum(1.0, 1.0 / np.sqrt(_sum_rows(zt * zt)))
        zt *= radius
        with np.errstate(over="ignore", divide="ignore"):
            nu = np.ldexp(omega / rho, self._weight_exp)  # ν = ω/ρ in the caller's weights
        return zt, nu

    def solve(self, X: ArrayLike, radius: float) -> BallFit:
        """Fit every curve in ``X`` (..., T) inside the ball of radius ``radius``."""
        radius, g, z, e, active = self._prepare(X, radius)
        nu = np.zeros(active.shape)
        if np.any(active):
            self._solve_active(g, z, e, active, radius, nu)
        if np.any(e):
            inactive = ~active
            z[inactive] = np.ldexp(z[inactive], e[inactive][:, None])
        coef = z @ self.eigenvectors.T
        return BallFit(coef=coef, active=active, multiplier=nu)

    def solve_mean(self, X: ArrayLike, radius: float, *,
                   exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The average of the ball-constrained fits of the curves in ``X`` (..., n, T).

        Returns ``(mean_coef (..., d), active (..., n))``: the mean of
        ``solve(X, radius).coef`` over the curves (Algorithm 1, steps 1–2).
        Every curve contributes its own fit, of norm at most B' — the
        unconstrained solution where it lies in the ball, the constrained one
        where it does not — so the sum never subtracts large numbers, for
        curves of any finite magnitude.

        ``exact=True`` (what a release uses), by
        :func:`dpfda.maths.summation.fixed_point_ball_mean`: each fit is turned
        to the original coordinates on its own (a fixed-order sum over the
        eigenbasis, so a curve's result does not depend on its batch), its norm
        is checked to be at most B'(1 + 2⁻⁴⁰) with a rigorous bound (the check
        of :func:`dpfda.maths.summation.bound_ball_rows`), and the fits are
        averaged as :func:`dpfda.maths.summation.fixed_point_mean` averages,
        exactly up to one rounding whatever the order of the curves.  Two datasets that differ in
        one curve then give means that differ by at most
        (2B'/n)(1 + ε), ε = :func:`dpfda.maths.summation.ball_mean_excess` — the
        floating-point sensitivity that ``dpfda.ftp`` calibrates to.

        ``exact=False`` (the simulation engine's fast path, which releases
        nothing): the fits are summed in the eigenbasis with a BLAS product and
        turned once; about as accurate on average, but its rounding can differ
        for neighbours by up to n²·2⁻⁵⁴ of the sensitivity.
        """
        X = as_float_array(X, "X")
        if X.ndim < 2:
            raise ValueError(f"X must hold curves along its second-to-last axis, got shape {X.shape}")
        radius, g, z, e, active = self._prepare(X, radius)
        n, d = X.shape[-2], self.dim
        batch = z.shape[:-2]
        if np.any(active):
            self._solve_active(g, z, e, active, radius)
        if np.any(e):
            inactive = ~active
            z[inactive] = np.ldexp(z[inactive], e[inactive][:, None])
        # Back to the original coordinates, summed in a fixed order so the result of a
        # repetition does not depend on how many are processed together (a BLAS
        # product would pick different kernels for one row and for many).
        Vt = self.eigenvectors.T
        if not exact:
            mean_z = (np.ones(n) @ z).reshape(batch + (d,)) / n  # Σ_i of the fits, per repetition
            coef = mean_z[..., :1] * Vt[0]
            for k in range(1, d):
                coef += mean_z[..., k : k + 1] * Vt[k]
            return coef, active
        return fixed_point_ball_mean(z.reshape(batch + (n, d)), Vt, radius), active


_EXP_LOW, _EXP_HIGH = -400, 400  # rows with max |x| in [2^-400, 2^400) are used as they are
_NORM_LOW, _NORM_HIGH = 2.0**-900, np.inf  # unconstrained norms outside: redo the row scaled


def _row_exponents(X: np.ndarray) -> np.ndarray:
    """Power-of-two exponent e of each row's largest |entry|, or 0 where it is moderate.

    ``X·2^-e`` then has entries of magnitude below 1 for the rows with e != 0,
    so products with the design stay within the float range.  Rows of
    ordinary magnitude (and zero rows) get e = 0: scaling them would change no
    bit, and leaving them alone spares the common case a pass over the data.
    """
    top = np.maximum(np.max(X, axis=-1), -np.min(X, axis=-1))
    _, e = np.frexp(top)
    e = np.asarray(e, dtype=np.int64)
    return np.where((e > _EXP_LOW) & (e < _EXP_HIGH), 0, e)


def _weight_vector(weights: ArrayLike | None, T: int) -> tuple[np.ndarray, int]:
    """The diagonal of W as a checked vector, and a power of two to divide it by.

    A scalar means the same weight at every grid point.  The weighted fit does
    not change when W is multiplied by a constant, so weights far from 1 are
    scaled by 2^-e (exact) before ΦᵀWΦ is formed: W = 1e308·I then works like I.
    """
    if weights is None:
        return np.ones(T), 0
    w = check_grid_vector(weights, "weights", T)
    _, exp = np.frexp(np.max(w))
    exp = int(exp) if not (_EXP_LOW < exp < _EXP_HIGH) else 0
    scaled = np.ldexp(w, -exp)
    if np.any(scaled == 0) or np.any(scaled < np.finfo(float).tiny):
        raise ValueError(
            "weights span too many orders of magnitude: after dividing by the largest, some "
            "fall below the smallest normal float (use weights within a ratio of 1e300)"
        )
    return scaled, exp


def _sum_rows(a: np.ndarray) -> np.ndarray:
    """Σ over the first axis of a (d, k) array, added in a fixed order.

    An explicit loop rather than ``a.sum(axis=0)``: numpy may switch to pairwise
    summation when k = 1, and a row's result must not depend on how many rows
    are solved together (``batch = row by row``, bit for bit).
    """
    if a.shape[0] == 1:
        return a[0].copy()
    out = a[0] + a[1]
    for row in a[2:]:
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
    if ss.size == 0 or (np.min(ss) > _SS_LOW and np.max(ss) < _SS_HIGH):  # False for NaN
        return norm  # no row is odd (two reductions instead of a mask)
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
    idx = np.arange(om.size)  # the columns still in the work arrays
    live = np.ones(om.size, dtype=bool)
    uw, Lw, w, hw = u2, L, om.copy(), hi
    eps4 = 4 * np.finfo(float).eps
    # Every update is done in place (the same operations, in the same order, as
    # the plain expressions in the comments): a sweep is about twenty numpy
    # calls on arrays of one block, so fewer temporaries matter.
    for _ in range(_MAX_ITER):
        inv = Lw + w
        np.reciprocal(inv, out=inv)
        q = uw * inv
        q *= inv
        h = _sum_rows(q)  # ||θ(ω)||²
        q *= inv
        h3 = _sum_rows(q)  # Σ u²/(L + ω)³ = -ψ'(ω)·||θ||³
        step = np.sqrt(h)  # the Newton step -ψ/ψ' = (√h - 1)·h/h3
        step -= 1.0
        step *= h
        step /= h3
        new = w + step  # min(w + step, hw)
        np.minimum(new, hw, out=new)
        moved = step > eps4 * new  # ... & live; False for NaN: nothing left to gain
        moved &= live
        np.copyto(w, new, where=moved)
        live = step > 1e-9 * new  # ... & moved
        live &= moved
        n_live = np.count_nonzero(live)
        if n_live == 0:
            break
        if n_live < 0.75 * live.size:  # drop finished columns from the work arrays
            om[idx] = w
            keep = np.nonzero(live)[0]
            idx, uw, Lw, w, hw, live = idx[keep], uw[:, keep], Lw[:, keep], w[keep], hw[keep], live[keep]
    om[idx] = w
    return om


def fit_ball(X: ArrayLike, Phi: ArrayLike, radius: float,
             weights: ArrayLike | None = None) -> BallFit:
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
