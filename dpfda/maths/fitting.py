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
underflows at any magnitude of x and B'.

**Each curve's fit is a function of that curve alone, bit for bit.**  Every
mechanism's sensitivity argument (Theorem 6; the designs' ellipsoid part; FTP of
curves on their own points) needs each curve's map into the ball to depend on that
curve only.  In floating point this has to hold for the bits, not only for the
exact values: a curve far outside span(Φ) (values up to 1.8e308) has a
least-squares fit made of rounding error, which the ball scales up to its sphere
||θ|| = B', in a direction set by that rounding — so if another record could change
how the curve is rounded, it could move the curve's fit by up to 2B' and the
released mean by up to 2B'/n beyond its own share (pair μ up to 2μ, or 3μ for a
record that changes the grouping of two others).  A BLAS product rounds a row
differently with the shape of the matrix it belongs to (``dgemv`` for one row,
``dgemm`` for several, different edge kernels, threads), so the fits never go
through a product whose shape depends on other records.  Instead:

* the design's own quantities — A = ΦᵀWΦ, its eigendecomposition V diag(λ) Vᵀ and
  P = WΦV — depend on the public grid, space and weights alone and are computed
  once, with BLAS and LAPACK;
* a curve's coordinates g = Pᵀx are T element-wise multiplies and adds in a fixed
  order (``BallLeastSquares._coordinates``), its unconstrained solution g/λ and
  norm are element-wise, the secular equation is solved by the same element-wise
  sweeps column by column (a column stops when its own Newton step stops moving it),
  and the fit is turned back by d element-wise multiplies and adds in a fixed order
  (``BallLeastSquares._rotate``, the turn
  :func:`dpfda.maths.summation.fixed_point_ball_mean` makes of each point);
* every element-wise operation — +, −, ×, ÷, √, ldexp, max — is correctly rounded in
  IEEE 754 arithmetic, whatever the vector instructions that numpy uses for it, so
  each number of a curve's fit is a fixed sequence of correctly rounded operations
  on that curve's values and the design's numbers.  The batch shape, the other rows,
  their order and how the rows are laid out in memory or cut into blocks cannot
  change it (the processor's BLAS kernel enters only through the design's own
  numbers P, V and λ, the same for every curve);
* the rows redone after scaling (those whose product with the design overflows or
  whose norm is below 2⁻⁹⁰⁰) are chosen by a test on the row itself and redone by the
  same per-row arithmetic, so which other rows are redone changes nothing.

The tests (``tests/test_record_independence.py``) check a row alone against the same
row in random batches of huge, subnormal, off-span, overflowing and repeated rows, for
every space and fitting path, bit for bit.  The cost, measured by
``benchmarks/bench_ab.py``: the T element-wise passes replace one matrix product per
batch, on the same (d, N) work arrays the Newton sweeps use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..validation import AssumptionError, as_float_array, check_grid_vector, check_positive
from .summation import fixed_point_ball_mean

__all__ = ["BallFit", "BallLeastSquares", "fit_ball", "row_norms"]

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
        self._P = (w[:, None] * Phi) @ V  # x @ _P = Vᵀ Φᵀ W x (a property of the design alone)
        # Columns for the per-row arithmetic (_coordinates, _rotate): P's rows and V's columns.
        self._P_cols = [np.ascontiguousarray(self._P[t][:, None]) for t in range(T)]  # (d, 1) each
        self._V_cols = [np.ascontiguousarray(V[:, k][:, None]) for k in range(d)]  # (d, 1) each
        self._lam_col = np.ascontiguousarray(lam[:, None])  # (d, 1)

    @property
    def T(self) -> int:
        """Number of grid points (rows of Phi)."""
        return self.Phi.shape[0]

    @property
    def dim(self) -> int:
        """Number of coordinates d (columns of Phi)."""
        return self.Phi.shape[1]

    # -- per-row arithmetic: every step below is element-wise on columns (one per curve) --

    def _coordinates(self, X2: np.ndarray) -> np.ndarray:
        """Vᵀ ΦᵀW x for each row x of ``X2`` (N, T), one column each: (d, N).

        Column i is fl(… fl(fl(P_0k·x_0) + fl(P_1k·x_1)) + … + fl(P_{T−1,k}·x_{T−1})) with
        P = WΦV: T element-wise multiplies and adds in a fixed order, each correctly
        rounded (IEEE 754), so it depends on x_i and P alone — not on N, on the other
        rows, on how the rows are blocked, nor on the processor's BLAS kernel.  Overflow
        gives ±inf or NaN in that column only (such rows are redone by :meth:`_prepare`).
        """
        N, T = X2.shape
        d = self.dim
        out = np.empty((d, N))
        work = np.empty((d, min(N, _BLOCK)))
        for a in range(0, N, _BLOCK):
            b = min(N, a + _BLOCK)
            Xt = np.ascontiguousarray(X2[a:b].T)  # (T, b): row t holds x_t of each curve
            acc, tmp = out[:, a:b], work[:, : b - a]
            np.multiply(self._P_cols[0], Xt[0], out=acc)
            for t in range(1, T):
                np.multiply(self._P_cols[t], Xt[t], out=tmp)
                acc += tmp
        return out

    def _rotate(self, Z: np.ndarray) -> np.ndarray:
        """θ = V z for each column z of ``Z`` (d, N), returned as rows (N, d).

        θ_i = fl(… fl(fl(V_i0·z_0) + fl(V_i1·z_1)) + … + fl(V_i,d−1·z_d−1)): a fixed-order
        element-wise sum, the same operations as the turn of each point in
        :func:`dpfda.maths.summation.fixed_point_ball_mean`, so a curve's coefficients are
        the point that a release averages, bit for bit.
        """
        d, N = Z.shape
        C = np.empty((d, N))
        tmp = np.empty((d, N))
        np.multiply(self._V_cols[0], Z[0], out=C)
        for k in range(1, d):
            np.multiply(self._V_cols[k], Z[k], out=tmp)
            C += tmp
        return np.ascontiguousarray(C.T)

    def unconstrained(self, X: ArrayLike) -> np.ndarray:
        """The weighted least-squares solution A⁻¹ΦᵀWx for each row of X (row by row, see :meth:`solve`)."""
        X = np.asarray(X, dtype=float)
        batch = X.shape[:-1]
        Z = self._coordinates(X.reshape(-1, self.T)) / self._lam_col
        return self._rotate(Z).reshape(batch + (self.dim,))

    def _prepare(self, X: ArrayLike, radius: float
                 ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
        """Scaled eigenbasis coordinates of every row, as columns, and which rows are active.

        Returns ``(radius, G, Z, e, active, batch)`` for the N rows of X (``batch`` their
        shape): row i's coordinates Vᵀ ΦᵀW x_i and unconstrained solution in the
        eigenbasis of A are ``G[:, i]·2**e[i]`` and ``Z[:, i]·2**e[i]``.  A row whose
        product with the design overflows, or comes out near the subnormal range, is
        redone after dividing it by a power of two (exact), so no finite row over- or
        underflows, and its comparison with B' is made in the same units.  Other rows keep
        e = 0.  Whether a row is redone, and how, depends on that row alone, and the redone
        rows are computed by the same per-row arithmetic (``_coordinates``), so no
        row's bits depend on the other rows — in particular not on which others are redone.
        """
        radius = check_positive(radius, "radius")
        X = as_float_array(X, "X")
        if X.shape[-1:] != (self.T,):
            raise ValueError(f"X's last axis has length {X.shape[-1:] or 0}, expected T={self.T}")
        batch = X.shape[:-1]
        X2 = X.reshape(-1, self.T)
        with np.errstate(over="ignore", invalid="ignore"):  # such rows are redone below
            G = self._coordinates(X2)
            Z = G / self._lam_col
            norm = _norm_columns(Z)
        e = np.zeros(norm.shape, dtype=np.int64)
        # Rows whose products overflowed (non-finite) or fell towards the subnormal range
        # are redone on the row divided by a power of two (exact); the others are left as
        # they are, so checking costs nothing for data of ordinary size.
        if norm.size == 0 or (np.max(norm) < _NORM_HIGH and np.min(norm) >= _NORM_LOW):
            return radius, G, Z, e, norm > radius, batch  # no row is odd: two reductions instead of a mask
        odd = ~(norm < _NORM_HIGH) | ((norm < _NORM_LOW) & (norm > 0))
        if not np.any(odd):  # every norm finite and normal: e = 0, B' in the rows' units
            return radius, G, Z, e, norm > radius, batch
        e[odd] = _row_exponents(X2[odd])
        Gs = self._coordinates(np.ldexp(X2[odd], -e[odd][:, None]))
        G[:, odd] = Gs
        Zs = Gs / self._lam_col
        Z[:, odd] = Zs
        norm[odd] = _norm_columns(Zs)
        if not np.all(np.isfinite(norm)):  # finite rows always give finite, scaled z
            raise ValueError("X contains NaN or inf; every value must be a finite number")
        with np.errstate(over="ignore"):
            bound = np.ldexp(radius, -e)  # B' in the row's units (inf: the row is far inside)
        return radius, G, Z, e, norm > bound, batch

    def _solve_active(self, G: np.ndarray, Z: np.ndarray, e: np.ndarray, active: np.ndarray,
                      radius: float, nu: np.ndarray | None = None) -> None:
        """Overwrite the active columns of ``Z`` with their constrained solutions.

        ``G``, ``Z`` (d, N) and ``e``, ``active`` (N,) come from :meth:`_prepare`.  Column
        i's coordinates Vᵀ ΦᵀW x are ``G[:, i]`` in its own units 2**e[i]; its solution has
        Euclidean norm at most B' (up to one rounding): a unit vector multiplied by B',
        whatever the magnitude of the data.  Where ``nu`` (N,) is given, the multipliers of
        the active rows are written into it.  The active columns are gathered and solved in
        blocks of :data:`_BLOCK`, so that a block's work arrays stay in the processor's
        cache; each column's arithmetic is element-wise, the same in any block.
        """
        cols = np.flatnonzero(active)
        for a in range(0, cols.size, _BLOCK):
            block = cols[a : a + _BLOCK]
            zt, nu_block = self._active_block(G[:, block], e[block], radius)
            Z[:, block] = zt
            if nu is not None:
                nu[block] = nu_block

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

    def _fit_columns(self, X: ArrayLike, radius: float, nu: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, tuple[int, ...]]:
        """(Z (d, N) the fits in the eigenbasis, active (N,), ν (N,) or None, batch shape)."""
        radius, G, Z, e, active, batch = self._prepare(X, radius)
        mult = np.zeros(active.shape) if nu else None
        if np.any(active):
            self._solve_active(G, Z, e, active, radius, mult)
        if np.any(e):
            back = ~active & (e != 0)
            Z[:, back] = np.ldexp(Z[:, back], e[back])
        return Z, active, mult, batch

    def solve(self, X: ArrayLike, radius: float) -> BallFit:
        """Fit every curve in ``X`` (..., T) inside the ball of radius ``radius``, each on its own.

        Row by row: every step is an element-wise operation in a fixed order on the row's
        own numbers and the design's (module docstring), so a curve's fit is the same,
        bit for bit, alone or in any batch, in any position, beside any other curves.
        """
        Z, active, nu, batch = self._fit_columns(X, radius, nu=True)
        assert nu is not None
        coef = self._rotate(Z).reshape(batch + (self.dim,))
        return BallFit(coef=coef, active=active.reshape(batch), multiplier=nu.reshape(batch))

    def solve_mean(self, X: ArrayLike, radius: float, *,
                   exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The average of the ball-constrained fits of the curves in ``X`` (..., n, T).

        Returns ``(mean_coef (..., d), active (..., n))``: the mean of
        ``solve(X, radius).coef`` over the curves (Algorithm 1, steps 1–2).
        Every curve contributes its own fit, of norm at most B' — the
        unconstrained solution where it lies in the ball, the constrained one
        where it does not — computed row by row (:meth:`solve`, the same bits), so
        the sum never subtracts large numbers, for curves of any finite magnitude,
        and no curve's fit depends on the others.

        ``exact=True`` (what a release uses), by
        :func:`dpfda.maths.summation.fixed_point_ball_mean`: each fit is turned
        to the original coordinates on its own (the fixed-order sum of
        :meth:`solve`), its norm is checked to be at most B'(1 + 2⁻⁴⁰) with a
        rigorous bound (the check of :func:`dpfda.maths.summation.bound_ball_rows`),
        and the fits are averaged as :func:`dpfda.maths.summation.fixed_point_mean`
        averages, exactly up to one rounding whatever the order of the curves.  Two
        datasets that differ in one curve then give means that differ by at most
        (2B'/n)(1 + ε), ε = :func:`dpfda.maths.summation.ball_mean_excess` — the
        floating-point sensitivity that ``dpfda.ftp`` calibrates to.

        ``exact=False`` (the simulation engine's fast path, which releases
        nothing): the same fits, bit for bit, summed in the eigenbasis with a BLAS
        product and turned once; about as accurate on average, but its rounding
        can differ for neighbours by up to n²·2⁻⁵⁴ of the sensitivity.
        """
        X = as_float_array(X, "X")
        if X.ndim < 2:
            raise ValueError(f"X must hold curves along its second-to-last axis, got shape {X.shape}")
        Z, active, _, batch = self._fit_columns(X, radius, nu=False)
        n, d = X.shape[-2], self.dim
        reps = batch[:-1]
        active = active.reshape(batch)
        if not exact:
            # Σ_i of the fits per repetition: one (n, d) product a repetition, the same shape
            # whatever the number of repetitions, so a repetition's sum does not depend on the chunk.
            rows = np.ascontiguousarray(Z.T).reshape((-1, n, d))
            mean_z = (np.ones(n) @ rows) / n  # (R, d)
            return self._rotate(np.ascontiguousarray(mean_z.T)).reshape(reps + (d,)), active
        Zr = Z.T.reshape(reps + (n, d))  # a view: the curves' fits in the eigenbasis, as rows
        return fixed_point_ball_mean(Zr, self.eigenvectors.T, float(radius)), active


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


def _norm_columns(v: np.ndarray) -> np.ndarray:
    """Euclidean norm of each column of a (d, N) array, without overflow or underflow in the squares.

    fl(√(fl(… fl(v_0² + v_1²) + … + v_{d−1}²))), added in a fixed order column by column
    (:func:`_sum_rows`), is exact to rounding whenever the sum of squares is a normal
    number far from the overflow threshold; the other columns are divided by their
    largest entry first.  Every step is element-wise per column, so a column's norm does
    not depend on the others.  NaN or inf in a column give a non-finite norm.
    """
    ss = _sum_rows(v * v)
    norm = np.sqrt(ss)
    if ss.size == 0 or (np.min(ss) > _SS_LOW and np.max(ss) < _SS_HIGH):  # False for NaN
        return norm  # no column is odd (two reductions instead of a mask)
    odd = ~((ss > _SS_LOW) & (ss < _SS_HIGH))  # under/overflow risk, zero, NaN or inf
    if np.any(odd):
        w = v[:, odd]
        vmax = np.abs(w[0])
        for row in w[1:]:
            vmax = np.maximum(vmax, np.abs(row))
        safe = np.where(vmax > 0, vmax, 1.0)
        with np.errstate(invalid="ignore"):  # inf/inf: such columns get a NaN norm, as they should
            w = w / safe
            norm[odd] = vmax * np.sqrt(_sum_rows(w * w))
    return norm


def row_norms(V: ArrayLike) -> np.ndarray:
    """||v|| of each row of ``V`` (…, d), row by row in a fixed order, without overflow in the squares.

    The per-record norm of a fit (:func:`dpfda.mechanisms.radius.fitted_norms`): the same
    bits for a row alone or in any batch (``_norm_columns`` on the rows as columns).
    """
    V = np.asarray(V, dtype=float)
    if V.ndim == 0:
        raise ValueError("row_norms needs rows (…, d)")
    d = V.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):
        return _norm_columns(np.ascontiguousarray(V.reshape(-1, d).T)).reshape(V.shape[:-1])


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
