"""B' chosen without looking (a public rule) or privately (OpenDP's quantile), and the composed guarantee."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import dpfda
from dpfda.maths.summation import gamma
from dpfda.mechanisms.radius import (
    fitted_norms,
    ftp_private_radius,
    gdp_of_pure_dp,
    private_radius,
    public_radius,
)

ALPHA = np.concatenate([np.geomspace(1e-12, 1e-3, 100), np.linspace(1e-3, 1 - 1e-9, 1000)])


def rr_tradeoff(alpha, eps):
    """f_{ε,0}: the trade-off function of ε-DP (randomised response)."""
    return np.maximum.reduce([np.zeros_like(alpha), 1 - np.exp(eps) * alpha, np.exp(-eps) * (1 - alpha)])


def gdp_below_pure_dp(mu: float, eps: float) -> bool:
    """Whether G_μ <= f_{ε,0} at every level of the grid and at f's kink, decided to 50 digits.

    The check is about a mechanism passing (randomised response with ε is μ-GDP), so no rounding
    may pass a violation: G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) and f_{ε,0}(α) = max(0, 1 − e^ε α, e^-ε(1 − α))
    are computed from the exact doubles α, μ, ε in 50 significant digits, G raised and f lowered
    by 1e-40 of themselves (more than those digits' rounding: G's erfinv near ±1 costs about
    1e-43 relative), so any slack is on the side of refusing. The ends are exact (G(0) = f(0) = 1,
    G(1) = f(1) = 0). In doubles the two curves touch at the kink α* = 1/(1 + e^ε), where
    G_μ(α*) = α* for the smallest μ: a deficit of μ shows there and nowhere else, within
    (e^ε − 1)·|α − α*| of it, so the grid starts with the double nearest α* and its neighbours.
    """
    kink = 1.0 / (1.0 + math.exp(eps))
    near = [np.nextafter(kink, 0.0), kink, np.nextafter(kink, 1.0)]
    with mpmath.workdps(50):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        raise_, lower = 1 + mpmath.mpf(10) ** -40, 1 - mpmath.mpf(10) ** -40
        for a in np.concatenate([near, ALPHA]):
            a = mpmath.mpf(float(a))
            if a <= 0 or a >= 1:
                continue  # both curves are exactly 1 at α = 0 and 0 at α = 1
            g = mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * a) - m)
            f = max(1 - mpmath.exp(e) * a, mpmath.exp(-e) * (1 - a))
            if g * raise_ > f * lower:
                return False
    return True


@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 3.0])
def test_pure_dp_implies_the_stated_gdp_and_not_much_less(eps):
    mu = gdp_of_pure_dp(eps)
    # an independent check, on trade-off functions: G_μ <= f_{ε,0} on a grid and at the kink, exactly
    assert gdp_below_pure_dp(mu, eps)
    # and μ is the smallest: 0.99 μ, μ one part in 10⁶ short, and the exact μ one part in 10¹² short
    # (gdp_of_pure_dp rounds up by 2⁻⁴⁰ ≈ 9.1e-13, so 2e-12 below its value is below the exact one) fail
    for short in (0.99 * mu, mu * (1 - 1e-6), mu * (1 - 2e-12)):
        assert not gdp_below_pure_dp(short, eps), short
    # what the doubles with a slack of 1e-12 on the old grid (no kink) let pass: μ one part in 10⁶ short
    old_grid = np.concatenate([np.geomspace(1e-12, 1e-3, 400), np.linspace(1e-3, 1 - 1e-9, 4000)])
    assert np.all(dpfda.tradeoff(old_grid, mu * (1 - 1e-6)) <= rr_tradeoff(old_grid, eps) + 1e-12)


def test_the_public_rule_bounds_every_projection():
    rng = np.random.default_rng(0)
    lower, upper = -3.0, 5.0
    R = public_radius(lower, upper)
    assert R == 5.0
    for space in (dpfda.LegendreSpace(8), dpfda.FourierSpace(9)):
        top = space.project(lambda t: np.full_like(t, upper))
        # the constant at the bound: the rule is tight (quadrature exact; its sum γ_N of |φ| <= sqrt(2m − 1))
        assert np.linalg.norm(top) == pytest.approx(R, rel=gamma(80) * 17, abs=0)
        for _ in range(50):  # smooth curves within the range
            k, phase, w = rng.integers(1, 6), rng.uniform(0, 2 * np.pi), rng.uniform(0, 1)
            coef = space.project(lambda t: lower + (upper - lower) * (w + (1 - w) * np.sin(2 * np.pi * k * t + phase)
                                                                      ** 2))
            assert np.linalg.norm(coef) <= R * (1 + 1e-9)
    with pytest.raises(ValueError, match="lower < upper"):
        public_radius(2.0, 1.0)


def test_fitted_norms_are_per_record_values_in_the_public_ball():
    grid = np.linspace(0, 1, 12)
    X = np.random.default_rng(1).normal(0, 3, (40, 12))
    norms = fitted_norms(X, grid, dpfda.LegendreSpace(4), 2.0)
    assert norms.shape == (40,) and np.all((0 <= norms) & (norms <= 2.0))
    Y = X.copy()
    Y[7] = 1e9  # one record replaced changes one entry only
    changed = norms != fitted_norms(Y, grid, dpfda.LegendreSpace(4), 2.0)
    assert changed.sum() <= 1 and not changed[np.arange(40) != 7].any()
    c = dpfda.Curves([X[0, :5], X[1]], [grid[:5], grid], domain=(0, 1))
    assert fitted_norms(c, None, dpfda.LegendreSpace(4), 2.0).shape == (2,)


def test_private_quantile_picks_a_candidate_near_the_quantile():
    norms = np.full(200, 0.5)
    cands = np.linspace(0.1, 1.0, 10)
    picks = [private_radius(norms, cands, 30.0, 0.5) for _ in range(5)]  # ε large: near-deterministic
    assert all(p in cands for p in picks) and np.median(picks) == pytest.approx(0.5, rel=gamma(2), abs=0)


def test_ftp_with_a_private_radius_composes_to_the_budget():
    grid = np.linspace(0, 1, 10)
    X = dpfda.LegendreSpace(3).at(grid).values([0.8, 0.3, 0.1]) + np.random.default_rng(2).normal(0, .1, (300, 10))
    out = ftp_private_radius(X, grid, dpfda.LegendreSpace(3), 1.0, radius_max=10.0, share=0.2,
                             secure=False, rng=np.random.default_rng(3))
    # μ·sqrt(share), μ·sqrt(1 − share) composed: 4 roundings; the quantile's μ <= μ·sqrt(share) as compared
    assert out.mu_total <= 1 + gamma(4)
    assert out.mu_total == pytest.approx(dpfda.compose(out.mu_quantile, out.mu_release), rel=gamma(1), abs=0)  # same
    # FTP gets the rest of μ² after the quantile's exact μ_q (at most μ·sqrt(share), rounded up):
    # sqrt((μ − μ_q)(μ + μ_q)) to 3 roundings, stepped down until the two compose within μ
    assert out.release.mu == out.mu_release
    rest = math.sqrt((1 - out.mu_quantile) * (1 + out.mu_quantile))
    assert rest * (1 - gamma(4)) <= out.mu_release <= rest and dpfda.compose(out.mu_quantile, out.mu_release) <= 1
    assert out.mu_release >= np.sqrt(0.8) * (1 - gamma(4))  # never less than FTP's share
    assert out.mu_quantile <= np.sqrt(0.2) and gdp_of_pure_dp(out.epsilon_quantile) == out.mu_quantile
    assert out.release.radius == out.radius and 0.01 <= out.radius <= 10.0
    # The ε-DP step's GDP μ really dominates: G_{μ_q} <= f_{ε_q,0}
    assert gdp_below_pure_dp(out.mu_quantile, out.epsilon_quantile)
