"""A record states the whole budget: what each step spent, and what was chosen from the data.

* ``release_record`` of an FTP release whose B' was chosen privately
  (:func:`dpfda.mechanisms.radius.ftp_private_radius`) gives μ in total — the budget — with
  its (ε, δ), each step's μ and share of μ², and names B' as chosen privately and how.
  Before, the record of ``PrivateRadius.release`` stated the FTP step alone (μ = 0.894,
  ε(10⁻⁵) = 3.85 where the release spent μ = 1, ε = 4.38) and listed B' as public; that
  step alone is now refused by name (:class:`~dpfda.practice.publish.PartialBudgetError`).
* ``gdp_of_pure_dp`` against the exact 2Φ⁻¹(e^ε/(1 + e^ε)) in 50-digit arithmetic: never
  below it, and within a relative 10⁻¹² (it was 0.9–3.1 × 10⁻⁴ above, where it promised
  10⁻⁶).
"""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest

import dpfda
from dpfda.maths.summation import gamma
from dpfda.mechanisms.radius import epsilon_of_gdp, ftp_private_radius, gdp_of_pure_dp
from dpfda.practice.publish import PartialBudgetError, release_record

EPS = [1e-9, 1e-6, 1e-3, 0.05, 0.3, 0.5, 1.0, 2.0, 3.0, 7.5, 20.0, 100.0, 700.0]


def digits(eps: float) -> int:
    """50 significant digits in 1 − 2α, α = 1/(1 + e^ε) ≈ e^-ε: ε/ln 10 more for large ε."""
    return 50 + int(eps / 2.3)


def exact_gdp(eps: float) -> mpmath.mpf:
    """2Φ⁻¹(e^ε/(1 + e^ε)) to 50 digits: G_μ meets f_{ε,0} at its kink α = 1/(1 + e^ε)."""
    with mpmath.workdps(digits(eps)):
        alpha = 1 / (1 + mpmath.exp(mpmath.mpf(eps)))
        return 2 * mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * alpha)


@pytest.mark.parametrize("eps", EPS)
def test_gdp_of_pure_dp_is_the_exact_formula_rounded_up(eps):
    mu = gdp_of_pure_dp(eps)
    exact = exact_gdp(eps)
    with mpmath.workdps(digits(eps)):
        assert mpmath.mpf(mu) >= exact, (mu, exact)  # never below: every ε-DP mechanism is μ-GDP
        # raised by 2⁻⁴⁰ ≈ 9.1e-13 over a few ulps of erfinv/erfcinv: within 1e-12 (the docstring's bound)
        assert (mpmath.mpf(mu) - exact) / exact <= mpmath.mpf("1e-12"), float((mu - exact) / exact)


@pytest.mark.parametrize("mu", [1e-6, 0.01, 0.2, 0.5, 1.0, 3.0, 30.0])
def test_epsilon_of_gdp_is_the_largest_epsilon_within_mu(mu):
    eps = epsilon_of_gdp(mu)
    assert gdp_of_pure_dp(eps) <= mu
    # and the next ones do not fit: ε is lowered in relative steps of 2⁻³⁸ ≈ 3.6e-12; d log μ/d log ε
    # of 2Φ⁻¹(e^ε/(1 + e^ε)) lies between 1/2 (large ε) and 1 (small ε), so ε(1 + 1e-9) raises μ by
    # at least 5e-10 relative, far above the steps and gdp_of_pure_dp's raise (1e-12)
    assert gdp_of_pure_dp(eps * (1 + 1e-9)) > mu * (1 - 1e-12)


def test_gdp_of_pure_dp_refuses_what_floats_cannot_state():
    with pytest.raises(ValueError, match="epsilon"):
        gdp_of_pure_dp(0.0)
    with pytest.raises(ValueError, match="epsilon"):
        gdp_of_pure_dp(800.0)


def _private_release(mu=1.0, share=0.2, seed=3):
    grid = np.linspace(0, 1, 10)
    space = dpfda.LegendreSpace(3)
    X = space.at(grid).values([0.8, 0.3, 0.1]) + np.random.default_rng(2).normal(0, 0.1, (300, 10))
    return ftp_private_radius(X, grid, space, mu, radius_max=10.0, share=share, secure=False,
                              rng=np.random.default_rng(seed))


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_the_private_radius_spends_exactly_the_budget(mu):
    out = _private_release(mu)
    # μ_r = sqrt((μ − μ_q)(μ + μ_q)) to γ₄, stepped down one ulp at a time only while compose (γ₃)
    # exceeds μ: μ_total within γ₈ of μ
    assert out.mu_total <= mu and out.mu_total >= mu * (1 - gamma(8))
    assert dpfda.compose(out.mu_quantile, out.mu_release) == out.mu_total
    assert out.release.mu == out.mu_release and gdp_of_pure_dp(out.epsilon_quantile) == out.mu_quantile
    assert out.mu_quantile <= mu * math.sqrt(0.2)


def test_the_record_of_a_private_radius_states_the_whole_budget():
    out = _private_release(1.0)
    record = release_record(out, np.linspace(0, 1, 5))
    json.dumps(record)  # JSON-ready
    assert record["mu"] == 1.0  # the budget, not the FTP step's share
    # the same root-finding, element by element, on the same (μ, δ): exactly
    assert record["epsilon_delta"][0]["epsilon"] == float(dpfda.epsilon_from_mu(1.0, 1e-5))
    budget = record["budget"]
    assert budget["mu"] == 1.0 and budget["mu_composed"] <= 1.0
    parts = {p["step"]: p for p in budget["parts"]}
    assert set(parts) == {"radius", "release"}
    assert parts["radius"]["mu"] == out.mu_quantile and parts["radius"]["epsilon"] == out.epsilon_quantile
    assert parts["release"]["mu"] == out.mu_release == out.release.mu
    # μ_total within γ₈ of μ (above); the shares (μ_i/μ)² add 3 roundings each and the sum one: γ₂₄
    assert sum(p["share_of_mu_squared"] for p in budget["parts"]) == pytest.approx(1.0, rel=0, abs=gamma(24))
    # hypot against compose's sqrt(a² + b²): γ₃ each, on μ_total's γ₈
    assert math.hypot(parts["radius"]["mu"], parts["release"]["mu"]) == pytest.approx(1.0, rel=gamma(14), abs=0)
    chosen = record["chosen_privately"]
    assert set(chosen) == {"radius"} and chosen["radius"]["value"] == out.radius == record["radius"]
    assert "quantile" in chosen["radius"]["how"] and chosen["radius"]["radius_max"] == 10.0
    assert record["noise_scale"] == out.release.noise_scale  # σ of the release step, at μ_r


def test_the_release_step_alone_is_refused_by_name():
    out = _private_release(1.0)
    with pytest.raises(PartialBudgetError, match="ftp_private_radius"):
        release_record(out.release, np.linspace(0, 1, 5))
    assert issubclass(PartialBudgetError, ValueError)


def test_an_ordinary_record_states_its_budget_and_that_nothing_was_chosen_privately():
    grid = np.linspace(0, 1, 6)
    X = np.zeros((40, 6))
    rel = dpfda.ftp(X, grid, dpfda.LegendreSpace(2), 1.0, 0.7, np.random.default_rng(0))
    record = release_record(rel, grid)
    assert record["mu"] == 0.7 and record["chosen_privately"] == {}
    assert record["budget"] == {"mu": 0.7, "mu_composed": 0.7, "composition": None,
                                "parts": [{"step": "release", "what": record["mechanism"], "mu": 0.7,
                                           "share_of_mu_squared": 1.0}]}
