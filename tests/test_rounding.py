"""Tolerances from rounding-error bounds (dpfda.maths.rounding)."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from dpfda.maths.rounding import (
    R_NDTR,
    R_NDTRI,
    eigh_rtol,
    fit_rtol,
    pair_rtol,
    product_atol,
    psd_root_rtol,
    solve_rtol,
)
from dpfda.maths.summation import U, gamma

from _support import QUICK


def test_the_bound_is_condition_number_times_gamma():
    A = np.diag([1.0, 1e-3])
    assert solve_rtol(A, 5) == pytest.approx(1e3 * gamma(40), rel=gamma(4), abs=0)  # κ of a diagonal: exact


def test_the_bound_covers_the_error_of_an_ill_conditioned_solve():
    """Hilbert matrices (κ up to 1.6e10 at d = 8): the relative error of tr(A⁻¹), computed
    in floating point against its exact value from fractions, stays below the bound."""
    from fractions import Fraction

    for d in range(2, 9):
        exact = [[Fraction(1, i + j + 1) for j in range(d)] for i in range(d)]
        A = np.array([[float(x) for x in row] for row in exact])
        inv = _exact_inverse(exact)
        trace = sum(inv[i][i] for i in range(d))
        computed = np.trace(np.linalg.inv(A))
        # A's entries are themselves rounded: a relative u per entry, inside the bound's γ_T
        assert abs(computed - float(trace)) / float(trace) <= solve_rtol(A, 2 * d), d


def _exact_inverse(M):
    from fractions import Fraction

    d = len(M)
    aug = [list(row) + [Fraction(int(i == j)) for j in range(d)] for i, row in enumerate(M)]
    for c in range(d):
        p = next(r for r in range(c, d) if aug[r][c] != 0)
        aug[c], aug[p] = aug[p], aug[c]
        piv = aug[c][c]
        aug[c] = [x / piv for x in aug[c]]
        for r in range(d):
            if r != c and aug[r][c] != 0:
                f = aug[r][c]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[c])]
    return [row[d:] for row in aug]


@pytest.mark.parametrize("A, size, word", [
    (np.ones((2, 3)), 4, "square"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), 4, "finite"),
    (np.eye(2), 0, "size"),
    (np.eye(2), 2.5, "size"),
    (np.diag([1.0, 1e-15]), 4, "ill-conditioned"),
])
def test_refusals_name_the_argument(A, size, word):
    with pytest.raises(ValueError, match=word):
        solve_rtol(A, size)


def test_product_bound_covers_exact_products_including_cancellation():
    """|fl(AB) − AB| ≤ γ_k·|A||B| entry by entry, against the exact product (fractions), on random
    matrices and on rows that cancel; a bound relative to |AB| instead would fail on the latter."""
    from fractions import Fraction

    rng = np.random.default_rng(3)
    # the last case cancels whatever the kernel does: 0.1·(1/3) and 0.1·(1/3 + ulp) round (in
    # double and in x87's 64-bit products alike) by more than γ₂ of their exact difference, in
    # either order of summation, with or without a fused multiply-add (checked in fractions);
    # a row like [1e16, 1, −1e16, 3] would not do, an extended-precision kernel adds it exactly
    cancel = (np.array([[0.1, -0.1]]), np.array([[1 / 3], [np.nextafter(1 / 3, 1.0)]]))
    cases = [(rng.standard_normal((4, 9)), rng.standard_normal((9, 3))),
             (np.array([[1e16, 1.0, -1e16, 3.0]]), np.ones((4, 1))), cancel]
    for A, B in cases:
        exact = np.array([[float(sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(row, col)))
                           for col in B.T] for row in A])
        err = np.abs(A @ B - exact)
        assert np.all(err <= product_atol(A, B))
    assert np.any(err > gamma(A.shape[1]) * np.abs(exact))  # the cancelling row: |AB| is no scale


def test_eigh_bound_covers_eigenvalues_and_orthogonality():
    """tridiag(−1, 2, −1) has eigenvalues 2 − 2cos(kπ/(n + 1)) (40 digits); numpy's eigh is within
    eigh_rtol(n)·‖A‖₂ of them and its eigenvectors orthogonal to 2·eigh_rtol(n) (exact VᵀV)."""
    import mpmath as mp

    for n in (2, 5, 10, 20):
        A = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
        lam, V = np.linalg.eigh(A)
        with mp.workdps(40):
            exact = sorted(2 - 2 * mp.cos(k * mp.pi / (n + 1)) for k in range(1, n + 1))
            err = max(abs(mp.mpf(float(a)) - b) for a, b in zip(lam, exact))
            orth = mp.mnorm(mp.matrix(V.T.tolist()) * mp.matrix(V.tolist()) - mp.eye(n), "F")
        e = eigh_rtol(n)
        assert err <= e * float(exact[-1]), n
        assert orth <= 2 * e + e * e, n


@pytest.mark.parametrize("rho, T", [(0.2, 8), (0.2, 12), (0.1, 20)])
def test_fit_bound_covers_fits_against_50_digit_fits(rho, T):
    """The library's fits (inside and outside the ball) against the audit's 50-digit fits, on
    Gaussian-kernel designs with κ(ΦᵀΦ) from 9e2 to 7e6 (the design_space chapter's T = 12):
    within fit_rtol·‖θ‖. The same bound without κ would fail at κ = 7e6 (errors near κ·u)."""
    import dpfda
    from dpfda.maths.fitting import BallLeastSquares
    from dpfda.trust.recompute import _mp_eigenbasis, _mp_fit_in_ball

    mp = pytest.importorskip("mpmath")
    Phi = dpfda.KernelSpace(dpfda.gaussian_kernel(rho)).at(dpfda.uniform_grid(T)).Phi
    A = Phi.T @ Phi
    bound, rel = fit_rtol(A, T), []
    rng = np.random.default_rng(T)
    for radius in (0.5, 1e12):  # every fit active, then none
        X = rng.standard_normal((5, T))
        fit = BallLeastSquares(Phi).solve(X, radius)
        assert np.all(fit.active) if radius < 1 else not np.any(fit.active)
        with mp.workdps(50):
            basis = _mp_eigenbasis(mp, Phi)
            for x, coef in zip(X, fit.coef):
                ref = np.array([float(v) for v in _mp_fit_in_ball(mp, basis, x, radius)])
                rel.append(np.linalg.norm(coef - ref) / np.linalg.norm(ref))
    assert max(rel) <= bound, (max(rel), bound)
    if np.linalg.cond(A) > 1e6:
        assert max(rel) > fit_rtol(np.eye(T), T)  # κ is needed: the bound at κ = 1 fails


@pytest.mark.parametrize("call", [
    lambda: eigh_rtol(0), lambda: eigh_rtol(2.0), lambda: fit_rtol(np.ones((2, 3)), 3),
    lambda: fit_rtol(np.eye(2), 0), lambda: fit_rtol(np.diag([1.0, 1e-15]), 4),
    lambda: product_atol(np.ones((2, 3)), np.ones((2, 3))), lambda: fit_rtol(np.eye(2), 3, data_ratio=np.nan),
])
def test_new_bounds_refuse_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("family, T, n", [("legendre", 8, 10), ("legendre", 8, 131_075), ("gaussian", 12, 10)])
def test_pair_bound_covers_ftp_pair_mu_at_worst_case_pairs(family, T, n):
    """FTP's pair μ at a worst-case pair with every fit on the sphere (μ exactly, in exact
    arithmetic) is within pair_rtol of μ, at κ = 7e6 and at n = 131,075 curves, where the
    means' rounding (n·γ₄) is what the bound needs: without it, the bound fails there."""
    import dpfda
    from dpfda.trust import audit as A

    space = dpfda.LegendreSpace(4) if family == "legendre" else dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))
    grid = dpfda.uniform_grid(T)
    geom = space.at(grid)
    X0, X1 = A.worst_case_pair(grid, space, 1.0, n, factor=3.0)
    err = abs(A.pair_mu(A.ftp_mechanism(grid, space, 1.0, 1.0, n=n), X0, X1) - 1.0)
    Phi_A = geom.Phi.T @ geom.Phi
    assert err <= pair_rtol(Phi_A, T, n)
    if n > 100_000:
        assert err > fit_rtol(Phi_A, T) + gamma(geom.dim + 10)


@pytest.mark.parametrize("rho, T", [(0.2, 4), (0.2, 8), (0.1, 12)])
def test_psd_root_bound_covers_the_kernel_geometrys_square_root(rho, T):
    """Φ̂ = K^½ of a Gaussian kernel's Gram matrix (the library's geometry): Φ̂Φ̂ᵀ against K, entry
    by entry in 40-digit arithmetic, within psd_root_rtol(T)·‖K‖₂, and the trace within T times it."""
    import mpmath as mp

    import dpfda

    geom = dpfda.KernelSpace(dpfda.gaussian_kernel(rho)).at(dpfda.uniform_grid(T))
    K, Phi = geom.K, geom.Phi
    with mp.workdps(40):
        P = mp.matrix(Phi.tolist())
        E = P * P.T - mp.matrix(K.tolist())
        worst = max(abs(E[i, j]) for i in range(T) for j in range(T))
        trace = abs(sum(E[i, i] for i in range(T)))
    bound = psd_root_rtol(T) * np.linalg.norm(K, 2)
    assert worst <= bound and trace <= T * bound


def test_fit_bound_needs_the_data_ratio_off_the_span():
    """A curve with a residual 1e8 times its fitted part (H_4 on 20 points): the fit's rounding
    follows ||x||, not ||θ||; the bound with data_ratio covers it, without it the bound fails."""
    import dpfda
    from dpfda.maths.fitting import BallLeastSquares
    from dpfda.trust.recompute import _mp_eigenbasis, _mp_fit_in_ball

    mp = pytest.importorskip("mpmath")
    Phi = dpfda.LegendreSpace(4).at(dpfda.uniform_grid(20)).Phi
    A = Phi.T @ Phi
    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(np.hstack([Phi, rng.standard_normal((20, 16))]))
    failed_without = False
    for _ in range(3):
        x = Phi @ rng.standard_normal(4) + 1e8 * Q[:, 4:] @ rng.standard_normal(16)
        coef = BallLeastSquares(Phi).solve(x, 1e30).coef
        with mp.workdps(50):
            ref = np.array([float(v) for v in _mp_fit_in_ball(mp, _mp_eigenbasis(mp, Phi), x, 1e30)])
        rel = np.linalg.norm(coef - ref) / np.linalg.norm(ref)
        ratio = np.linalg.norm(x) / (np.sqrt(np.linalg.norm(A, 2)) * np.linalg.norm(ref))
        assert rel <= fit_rtol(A, 20, data_ratio=ratio)
        failed_without |= rel > fit_rtol(A, 20)
    assert failed_without


# ---------------------------------------------------------------------------
# The rounding of G_μ and Φ (scipy's ndtri and ndtr)
# ---------------------------------------------------------------------------


def _mp():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    return mp


def _exact_g(mp, a, mu):
    """G_μ(a) = Φ(Φ⁻¹(1 − a) − μ) with 50 digits (a and μ taken as the exact values of the doubles)."""
    q = mp.sqrt(2) * mp.erfinv(2 * (1 - mp.mpf(a)) - 1)
    return mp.ncdf(q - mp.mpf(mu))


def _levels(n):
    """n levels from 1e-12 to 1/2 and n from 1/2 to 1 − 1e-12, the ends 0 and 1 and the middle."""
    low = np.logspace(-12, np.log10(0.5), n)
    return np.unique(np.concatenate([[0.0, 1.0], low, 1 - low]))


@pytest.mark.parametrize("mu", [0.0, 0.5, 1.0, 2.0, 3.0, 5.0])
def test_tradeoff_bound_covers_scipys_curve_against_50_digits(mu):
    """scipy's G (dpfda.tradeoff) is within tradeoff_atol of G computed with 50 digits, level by
    level, and at a level known only to within a_err of the one given."""
    from dpfda import tradeoff
    from dpfda.maths.rounding import tradeoff_atol

    mp = _mp()
    a = _levels(60 if QUICK else 300)
    g, bound = tradeoff(a, mu), tradeoff_atol(a, mu)
    err = np.array([float(abs(mp.mpf(float(gi)) - _exact_g(mp, ai, mu))) for ai, gi in zip(a, g)])
    assert np.all(err <= bound), (a[err > bound], err[err > bound], bound[err > bound])
    assert bound[0] == bound[-1] == 0.0 and err[0] == err[-1] == 0.0  # exact at the ends
    inner = a[(a > 1e-6) & (a < 1 - 1e-6)][:: 5 if QUICK else 20]
    a_err = 1e-9 * np.minimum(inner, 1 - inner)
    with_err = tradeoff_atol(inner, mu, a_err)
    for ai, ei, bi, gi in zip(inner, a_err, with_err, tradeoff(inner, mu)):
        for shifted in (mp.mpf(ai) - mp.mpf(ei), mp.mpf(ai) + mp.mpf(ei)):
            assert abs(mp.mpf(float(gi)) - _exact_g(mp, shifted, mu)) <= bi, (ai, mu)


def test_ndtr_bound_covers_scipys_cdf_against_50_digits():
    from scipy import special

    from dpfda.maths.rounding import ndtr_atol

    mp = _mp()
    x = np.linspace(-38.0, 38.0, 381 if QUICK else 3801)
    exact = [mp.ncdf(mp.mpf(v)) for v in x]
    got = special.ndtr(x)
    assert all(abs(mp.mpf(float(g)) - e) <= b for g, e, b in zip(got, exact, ndtr_atol(x)))
    x_err = 1e-7 * (1 + np.abs(x))
    for v, g, e, b in zip(x, got, x_err, ndtr_atol(x, x_err)):
        for shifted in (mp.mpf(v) - mp.mpf(e), mp.mpf(v) + mp.mpf(e)):
            assert abs(mp.mpf(float(g)) - mp.ncdf(shifted)) <= b, v


@functools.cache
def _worst_g(a: float, mu: float, a_err: float = 0.0):
    """The largest |G̃ − G_μ(a')| over |a' − a| ≤ a_err, where G̃ is computed as dpfda.tradeoff does
    but with every step off by the whole error the bound charges it (each sign tried): 1 − a by
    u·p; ndtri by R_NDTRI·|z|; z − μ by u·|z − μ|; ndtr's smaller tail by R_NDTR of itself; the
    result by u. An implementation as inaccurate as Cephes's reported peaks, not scipy's own."""
    from scipy import special

    mp = _mp()
    am, mum = mp.mpf(a), mp.mpf(mu)
    z = abs(float(special.ndtri(1 - a)))  # the |z| the bound charges R_NDTRI of
    exact = [_exact_g(mp, am + s * mp.mpf(a_err), mum) for s in (-1, 1)]
    quantiles = [mp.sqrt(2) * mp.erfinv(2 * (1 - am) * (1 + s * mp.mpf(U)) - 1) for s in (-1, 1)]
    worst = mp.mpf(0)
    for q0, s2, s3, s4, s5 in itertools.product(quantiles, *[(-1, 1)] * 4):
        w = q0 + s2 * mp.mpf(R_NDTRI) * z - mum
        w += s3 * mp.mpf(U) * abs(w)
        tail = mp.ncdf(-abs(w)) * (1 + s4 * mp.mpf(R_NDTR))
        g = (tail if w < 0 else 1 - tail) + s5 * mp.mpf(U)
        worst = max(worst, *(abs(g - e) for e in exact))
    return worst


#: (a, μ, a_err): levels in the middle and in both tails, G near 0, 1/2 and 1.
CASES = [(a, mu, 0.0) for a in (1e-10, 1e-3, 0.3, 0.5, 0.9, 1 - 1e-6) for mu in (0.0, 1.0, 3.0)] + [
    (0.3, 1.0, 1e-9), (1e-3, 0.0, 1e-9)]

#: The relative error of computing the bound itself in doubles: its cdf term through ndtr
#: (R_NDTR), its slope φ(ndtri(·)) through ndtri (R_NDTRI·z², z² ≤ 8.3² below the levels 1e-16),
#: and about 20 roundings of its own arithmetic.
OWN_RTOL = 2 * R_NDTR + 69 * R_NDTRI + 20 * U


@pytest.mark.parametrize("term", ["a_err", "level", "quantile", "difference", "tail", "rounding"])
def test_each_term_of_the_tradeoff_bound_is_needed(term):
    """Negative controls: the computation with every step off by what the bound charges it stays
    within the bound in every case, and with any one term dropped some case leaves the bound.
    (scipy's own G is more accurate than Cephes's reported peaks: on this machine it stays inside
    the bound without the quantile, difference or tail term too; the bound is for every build.)"""
    from dpfda.maths import rounding

    out = []
    for a, mu, a_err in CASES:
        worst = _worst_g(a, mu, a_err)
        full = float(rounding.tradeoff_atol(a, mu, a_err))
        assert worst <= full * (1 + OWN_RTOL), (a, mu, a_err, worst, full)
        dropped = (float(rounding._tradeoff_bound(a, mu, 0.0)) if term == "a_err"
                   else float(rounding._tradeoff_bound(a, mu, a_err, **{term: 0.0})))
        if worst > dropped * (1 + OWN_RTOL):
            out.append((a, mu, a_err))
    assert out, f"no case needs the term {term}"


def test_each_term_of_the_cdf_bound_is_needed():
    """Negative controls of ndtr_atol: its tail term (an ndtr off by Cephes's reported R_NDTR at
    x = 0), its rounding (scipy's own ndtr at x = 8, where Φ(8) = 1 − 6.2e-16 rounds), and the
    argument's error (ndtr(0) against Φ(1e-3))."""
    from scipy import special

    from dpfda.maths import rounding

    mp = _mp()
    off = abs(mp.mpf(0.5) * (1 + mp.mpf(rounding.R_NDTR)) - mp.ncdf(0))
    assert float(rounding._ndtr_bound(0.0, 0.0, tail=0.0)) < off <= float(rounding.ndtr_atol(0.0))
    err8 = abs(mp.mpf(float(special.ndtr(8.0))) - mp.ncdf(8))
    assert float(rounding._ndtr_bound(8.0, 0.0, rounding=0.0)) < err8 <= float(rounding.ndtr_atol(8.0))
    moved = abs(mp.mpf(float(special.ndtr(0.0))) - mp.ncdf(mp.mpf("1e-3")))
    assert float(rounding.ndtr_atol(0.0)) < moved <= float(rounding.ndtr_atol(0.0, 1e-3))


@pytest.mark.parametrize("call, word", [
    (lambda f: f(1.5, 1.0), "levels in"),
    (lambda f: f(0.5, -1.0), "mu"),
    (lambda f: f(0.5, np.nan), "mu"),
    (lambda f: f(0.0, 1.0, 1e-9), "0 at the levels"),
    (lambda f: f(0.5, 1.0, -1e-9), "a_err"),
    (lambda f: f(1e-17, 1.0), "reaches 0 or 1"),
    (lambda f: f(0.5, 1.0, 0.5), "reaches 0 or 1"),
])
def test_the_tradeoff_bound_refuses_what_it_does_not_cover(call, word):
    from dpfda.maths.rounding import tradeoff_atol

    with pytest.raises(ValueError, match=word):
        call(tradeoff_atol)
