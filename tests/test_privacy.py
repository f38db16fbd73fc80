"""Gaussian differential privacy: trade-off, composition, (ε, δ) conversions, Laplace.

References computed independently of ``dpfda.mechanisms.privacy``: the (ε, δ) curve of
μ-GDP (Dong, Roth and Su, Corollary 2.13) in 80-digit arithmetic with mpmath;
the trade-off function as the type II error of the Neyman–Pearson test of
N(0, 1) against N(μ, 1) with scipy.stats; composition as the root of a sum of
squares; the Laplace law through its moments.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from dpfda import (
    compose,
    delta_from_mu,
    epsilon_from_mu,
    gaussian_sigma,
    laplace_mechanism,
    laplace_scale,
    mu_from_epsilon_delta,
    tradeoff,
)
from dpfda.maths.rounding import tradeoff_atol
from dpfda.maths.summation import U as EPS_U
from dpfda.maths.summation import gamma

from _support import reps


def delta_mp(mu, eps):
    """δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2) with 60 digits to spare.

    The two terms agree to about -log10(μ) digits, so the working precision grows
    as μ shrinks.
    """
    with mp.workdps(60 + int(max(0.0, -np.log10(float(mu))))):
        mu, eps = mp.mpf(float(mu)), mp.mpf(float(eps))
        return +(mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2))


def _round_trip_rtol(mu, eps, delta):
    """How far δ(ε) is from the δ asked for, ε found by brentq on log δ(ε) − log δ in double.

    log δ = log Φ(a) + log(1 − e^d), a = −ε/μ + μ/2, d = log(1 − δ/Φ(a)): d is ε minus μ/2 times a
    quadrature of the inverse Mills ratio, each value of which is exp of a sum whose terms (−x²/2,
    −log Φ(x)) are of size x² ≈ a² and cancel, so relative γ₈·(a² + 1); d then carries γ₈·ε·(a² + 1)
    absolutely, and δ that over |d| >= δ/Φ(a): γ₈·ε·(a² + 1)·Φ(a)/δ relative (the cancellation of δ's
    two terms, computed here). brentq stops within 2·(xtol + 2·rtol·ε) = 2e-14 + 16u·ε of the root,
    and log δ moves by at most (ε/μ + 2)/μ per unit ε (the dominant tail: its inverse Mills ratio is
    below x + 2).
    """
    with mp.workdps(60 + int(max(0.0, -np.log10(float(mu))))):
        cancel = float(mp.ncdf(-mp.mpf(eps) / mu + mp.mpf(mu) / 2) / delta_mp(mu, eps))
    a = eps / mu - mu / 2
    return gamma(8) * eps * (a * a + 1) * cancel + (eps / mu + 2) / mu * (2e-14 + 16 * EPS_U * eps)


MUS = [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
TINY_MUS = [1e-300, 1e-100, 1e-12, 1e-6, 1e-3]
EPSILONS = [0.0, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0]


# ---------------------------------------------------------------------------
# δ(ε) against high precision
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mu", TINY_MUS + MUS)
def test_delta_matches_high_precision(mu):
    for eps in EPSILONS:
        if eps > 1e6 * mu:
            continue  # δ < Φ(-10⁶): checked below to be exactly 0
        ref = delta_mp(mu, eps)
        got = delta_from_mu(mu, eps)
        if ref < mp.mpf("1e-300"):
            # Below the double range the exact value underflows; it must not go negative.
            assert 0.0 <= got <= 1e-290, (mu, eps, got)
        else:
            # no BLAS: the normal tails in double (a few ulps) times their condition here, far below 1e-9
            assert got == pytest.approx(float(ref), rel=1e-9, abs=0), (mu, eps, got, ref)
    # ε much larger than μ: δ underflows to exactly 0, never NaN.
    assert delta_from_mu(mu, 1e6 * mu + 50.0) == 0.0


def test_delta_known_values():
    # μ = 1, ε = 0: δ = 2Φ(1/2) - 1.
    # erf-based values, a few ulps each (no BLAS)
    assert delta_from_mu(1.0, 0.0) == pytest.approx(0.3829249225480262, rel=1e-14, abs=0)
    assert delta_from_mu(1.0, 0.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1, rel=1e-14, abs=0)
    # δ(0) = 2Φ(μ/2) - 1 for every μ.
    for mu in MUS:
        assert delta_from_mu(mu, 0.0) == pytest.approx(2 * stats.norm.cdf(mu / 2) - 1, rel=1e-12, abs=0)


def test_delta_extremes_finite_and_monotone():
    mus = np.geomspace(0.01, 10.0, 60)
    eps = np.linspace(0.0, 100.0, 401)
    D = delta_from_mu(mus[:, None], eps[None, :])
    assert D.shape == (60, 401)
    assert np.all(np.isfinite(D)) and np.all(D >= 0) and np.all(D < 1)
    assert np.all(np.diff(D, axis=1) <= 0), "δ(ε) must not increase with ε"
    assert np.all(np.diff(D, axis=0) >= 0), "δ(ε) must not decrease with μ"


def test_delta_is_vectorised_and_broadcasts():
    mus = np.array([0.3, 1.0, 4.0])
    eps = np.array([[0.0], [1.0]])
    D = delta_from_mu(mus, eps)
    assert D.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert D[i, j] == delta_from_mu(float(mus[j]), float(eps[i, 0]))
    assert isinstance(delta_from_mu(1.0, 1.0), float)


# ---------------------------------------------------------------------------
# ε(δ) and μ(ε, δ)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mu", MUS)
def test_epsilon_round_trip(mu):
    d0 = float(delta_mp(mu, 0))
    for delta in [1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 1e-3, 0.5 * d0, 0.99 * d0]:
        if delta >= d0:
            continue
        eps = epsilon_from_mu(mu, delta)
        assert eps > 0 and np.isfinite(eps)
        # The exact δ at that ε, in 80 digits, is the requested δ.
        rel = _round_trip_rtol(mu, eps, delta)
        assert float(delta_mp(mu, eps)) == pytest.approx(delta, rel=rel, abs=0), (mu, delta, eps)
        # And ε is the smallest such: a hair smaller ε needs a larger δ.
        assert delta_mp(mu, eps * (1 - 1e-6)) > delta


@pytest.mark.parametrize("mu", MUS)
def test_epsilon_is_zero_when_delta_at_least_delta0(mu):
    d0 = delta_from_mu(mu, 0.0)
    assert epsilon_from_mu(mu, d0) == 0.0
    for delta in [np.nextafter(d0, 1.0), min(d0 * 1.5, 0.999), 0.999]:
        if delta >= d0:
            assert epsilon_from_mu(mu, delta) == 0.0
    # Just below δ(0) the answer is a positive ε (small unless μ is large: δ(ε) is flat).
    target = d0 * (1 - 1e-6)
    eps = epsilon_from_mu(mu, target)
    assert eps > 0
    assert float(delta_mp(mu, eps)) == pytest.approx(target, rel=_round_trip_rtol(mu, eps, target), abs=0)


@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 5.0, 20.0, 100.0])
def test_mu_round_trip(eps):
    for mu in MUS:
        delta = float(delta_mp(mu, eps))
        if not 1e-300 < delta < 1:
            continue
        # brentq in μ to 1e-15 of its bracket and 8u, plus δ's evaluation (ulps, times dμ/dδ·δ/μ): 1e-9 covers
        assert mu_from_epsilon_delta(eps, delta) == pytest.approx(mu, rel=1e-9, abs=0), (eps, mu, delta)


def test_mu_for_tiny_delta_is_accurate():
    """μ(ε, δ) is the largest μ with δ_μ(ε) <= δ, to full precision even when μ is tiny.

    (ε = 0 gives μ ≈ sqrt(2π)·δ; an absolute root-finding tolerance once made this
    wrong by orders of magnitude.)
    """
    cases = [(0.0, 1e-300), (0.0, 1e-12), (0.0, 1e-9), (1e-300, 1e-300), (0.1, 1e-300),
             (1.0, 1e-200), (5.0, 1e-20), (100.0, 1e-300)]
    for eps, delta in cases:
        mu = mu_from_epsilon_delta(eps, delta)
        assert float(delta_mp(mu, eps)) == pytest.approx(delta, rel=1e-9, abs=0), (eps, delta, mu)  # as above
        assert float(delta_mp(mu * (1 + 1e-6), eps)) > delta
    # δ = 2Φ(μ/2) − 1 = μ/sqrt(2π)·(1 − O(μ²)): the first-order term is exact to 1e-24 here
    assert mu_from_epsilon_delta(0.0, 1e-12) == pytest.approx(np.sqrt(2 * np.pi) * 1e-12, rel=1e-9, abs=0)
    # Beyond the double range of μ the function refuses instead of guessing.
    with pytest.raises(ValueError, match="delta"):
        mu_from_epsilon_delta(0.0, 1e-310)


def test_conversions_vectorised():
    mus = np.array([0.5, 1.0, 2.0])
    eps = epsilon_from_mu(mus, 1e-5)
    assert eps.shape == (3,)
    np.testing.assert_array_equal(eps, [epsilon_from_mu(m, 1e-5) for m in mus])
    assert np.all(np.diff(eps) > 0)
    back = mu_from_epsilon_delta(eps, np.full(3, 1e-5))
    np.testing.assert_allclose(back, mus, rtol=1e-9, atol=0)  # two root-findings, as above


def test_epsilon_monotone_in_delta_and_mu():
    deltas = np.geomspace(1e-12, 0.3, 30)
    for mu in [0.1, 1.0, 5.0]:
        e = epsilon_from_mu(mu, deltas)
        assert np.all(np.isfinite(e)) and np.all(np.diff(e) <= 0)
    e_mu = epsilon_from_mu(np.geomspace(0.05, 10, 30), 1e-6)
    assert np.all(np.diff(e_mu) > 0)


# ---------------------------------------------------------------------------
# Trade-off function and composition
# ---------------------------------------------------------------------------


def np_type2(alpha, mu):
    """Type II error of the most powerful level-α test of N(0,1) vs N(μ,1): reject X > c."""
    c = stats.norm(0, 1).isf(alpha)
    return stats.norm(mu, 1).cdf(c)


def test_tradeoff_is_the_neyman_pearson_curve():
    alphas = np.linspace(0.0, 1.0, 101)
    for mu in [0.0, 0.1, 0.5, 1.0, 3.0, 8.0]:
        # Φ(Φ⁻¹(1 − α) − μ) both ways: np_type2 takes the same steps but the rounding of 1 − α
        # (isf(α) = −ndtri(α)), so each is within tradeoff_atol of G_μ; exact at α = 0 and 1
        assert np.all(abs(tradeoff(alphas, mu) - np_type2(alphas, mu)) <= 2 * tradeoff_atol(alphas, mu)), mu


def _convex_tol(g, a, mu, err):
    """How far below 0 the computed second differences of a convex G may fall on the grid ``a``.

    The grid's doubles are unevenly spaced, so the exact second difference is at least G'(a_k)
    times the spacing's second difference (exact, by Sterbenz), G' = −exp(μz − μ²/2) at
    z = Φ⁻¹(1 − a_k); then the three values' errors ``err`` and U of each difference.
    """
    step = np.diff(g)
    slope = np.exp(mu * stats.norm.ppf(1 - a[1:-1]) - mu**2 / 2)
    return (slope * np.abs(np.diff(a, 2)) + err[:-2] + 2 * err[1:-1] + err[2:]
            + EPS_U * (np.abs(step[1:]) + np.abs(step[:-1]) + np.abs(np.diff(step))))


def test_tradeoff_properties():
    """Theorems about G_μ checked in doubles, each within the roundings of both sides (tradeoff_atol)."""
    a = np.linspace(0.0, 1.0, 201)
    # μ = 0: Φ(Φ⁻¹(1 − α)) = 1 − α exactly; each side's rounding
    g0, err0 = tradeoff(a, 0.0), tradeoff_atol(a, 0.0)
    assert np.all(np.abs(g0 - (1 - a)) <= err0 + EPS_U * (1 - a))
    for mu in [0.5, 2.0]:
        g = tradeoff(a, mu)
        err = tradeoff_atol(a, mu)
        assert g[0] == 1.0 and g[-1] == 0.0
        assert np.all(np.diff(g) <= 0)  # decreasing by at least 2.3e-6 per step here: far above err (3e-14)
        assert np.all(g <= 1 - a + err + EPS_U * (1 - a))  # below the identity trade-off
        # symmetric: G(G(α)) = α; g is within err of G(α), so G at level g is within tradeoff_atol(g, μ, err)
        assert np.all(np.abs(tradeoff(g, mu) - a) <= tradeoff_atol(g, mu, err))
        assert np.all(np.diff(g, 2) >= -_convex_tol(g, a, mu, err))  # convex
        # negative control: G(G(α)) one part in 1e9 away from α is refused somewhere
        assert not np.all(np.abs(tradeoff(g, mu) - a * (1 + 1e-9)) <= tradeoff_atol(g, mu, err))
    # negative controls on G_0, where the bounds are tight: a value 1e-13 above the identity, and one
    # 1e-13 above the chord of its neighbours, are refused (the old convexity slack, 1e-12, passed it)
    bumped = g0.copy()
    bumped[100] = 1 - a[100] + 1e-13
    assert not np.all(bumped <= 1 - a + err0 + EPS_U * (1 - a))
    bumped = g0.copy()
    bumped[100] += 1e-13
    assert not np.all(np.diff(bumped, 2) >= -_convex_tol(bumped, a, 0.0, err0))
    assert np.all(np.diff(bumped, 2) >= -1e-12)
    # Vectorised over μ too.
    assert tradeoff(0.05, np.array([0.5, 1.0, 2.0])).shape == (3,)
    assert np.all(np.diff(tradeoff(0.05, np.array([0.5, 1.0, 2.0]))) < 0)


def test_compose_is_root_sum_of_squares():
    rng = np.random.default_rng(0)
    for k in range(1, 8):
        mus = rng.uniform(0.01, 3.0, size=k)
        expect = float(np.sqrt(np.sum(mus**2)))
        assert compose(*mus) == pytest.approx(expect, rel=gamma(2 * k + 4), abs=0)  # k squares, a sum, a root
        assert compose(mus) == pytest.approx(expect, rel=gamma(2 * k + 4), abs=0)
    # Proposition 9: T coordinates released at μ/sqrt(T) each compose to μ.
    for T in [2, 8, 20]:
        assert compose(*([0.7 / np.sqrt(T)] * T)) == pytest.approx(0.7, rel=gamma(T + 8), abs=0)


def test_gaussian_sigma():
    assert gaussian_sigma(2.0, 0.5) == 4.0
    assert gaussian_sigma(0.1, 1.0) == pytest.approx(0.1, rel=gamma(1), abs=0)  # Δ/μ, one division


# ---------------------------------------------------------------------------
# Laplace mechanism
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_laplace_noise_has_variance_two_b_squared():
    rng = np.random.default_rng(11)
    sens, eps = 3.0, 0.5
    b = laplace_scale(sens, eps)
    assert b == 6.0
    N = reps(400_000, 100_000)
    value = np.array([1.0, -2.0, 5.0, 0.0])
    out = laplace_mechanism(np.broadcast_to(value, (N, 4)), sens, eps, rng)
    noise = out - value
    sq = noise**2
    # Mean 0 and variance 2b² in every coordinate, within 4 SE (SE of a mean of squares
    # from the sample standard deviation of the squares).
    se_mean = noise.std(axis=0, ddof=1) / np.sqrt(N)
    assert np.all(np.abs(noise.mean(axis=0)) <= 4 * se_mean)
    se_var = sq.std(axis=0, ddof=1) / np.sqrt(N)
    assert np.all(np.abs(sq.mean(axis=0) - 2 * b**2) <= 4 * se_var)
    # E|noise| = b.
    ab = np.abs(noise)
    assert np.all(np.abs(ab.mean(axis=0) - b) <= 4 * ab.std(axis=0, ddof=1) / np.sqrt(N))


def test_laplace_shapes_and_reproducibility():
    v = np.zeros((3, 2))
    a = laplace_mechanism(v, 1.0, 1.0, np.random.default_rng(5))
    b = laplace_mechanism(v, 1.0, 1.0, np.random.default_rng(5))
    assert a.shape == (3, 2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, laplace_mechanism(v, 1.0, 1.0, np.random.default_rng(6)))
