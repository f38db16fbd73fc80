"""The test of the matrix's test: dpfda_book.report.law_null.

The whole procedure — pooled components with their draw-by-draw errors and floors, Holm's
full step-down over every component, the sign decisions and the verdicts — replicated in a
world whose truth is known.  The negative control is kept: the earlier design (K = 5 draws,
the normal reference, root-sum-square errors) makes family-wise errors far more often than
α, the matrix's (K = 20, t on 19 df, paired errors) no more often than α within its Monte
Carlo error; and the normal reference alone, at the matrix's K, is caught too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpfda_book.report import claim_verdicts as cv
from dpfda_book.report import law_components as lc
from dpfda_book.report import law_null as ln

from _claim_tables import random_draws

MATRIX = ln.Procedure(20, "t", "paired")
EARLIER = ln.Procedure(5, "normal", "root-sum-square")


@pytest.fixture(scope="module")
def population():
    """Twenty draws of one law, every study, with a latent factor shared by the settings of each n."""
    return random_draws(np.random.default_rng(2026), 20, shared_sd=0.3)


@pytest.fixture(scope="module")
def worlds(population):
    return {w: ln.null_world(population, w) for w in ln.WORLDS}


def test_the_matrix_keeps_its_level_and_the_earlier_design_does_not(worlds):
    """Negative control: the earlier design's family-wise error rate exceeds α by more than four
    Monte Carlo standard errors in both worlds; the matrix's is at most α within two."""
    rng = np.random.default_rng(1)
    for name, world in worlds.items():
        runs = {(name, p.label): ln.replicate_errors(world, p, 400, rng) for p in (MATRIX, EARLIER)}
        rates = ln.error_rates(runs)
        good, bad = rates.loc[(name, MATRIX.label)], rates.loc[(name, EARLIER.label)]
        assert good["fwer"] <= 0.05 + 2 * good["fwer_se"], (name, good["fwer"])
        assert bad["fwer"] > 0.05 + 4 * bad["fwer_se"], (name, bad["fwer"])


def test_the_normal_reference_alone_is_caught(worlds):
    """Negative control at the matrix's K: the same draws and paired errors referred to the normal
    instead of Student's t make family-wise errors far more often than α where the draws matter
    most (PTF against itself)."""
    normal = ln.Procedure(20, "normal", "paired")
    rates = ln.error_rates({("ptf-self", normal.label): ln.replicate_errors(
        worlds["ptf-self"], normal, 400, np.random.default_rng(1))}).loc[("ptf-self", normal.label)]
    assert rates["fwer"] > 0.05 + 4 * rates["fwer_se"], rates["fwer"]


def test_ftp_compared_with_itself_makes_every_ratio_comparison_a_true_null(worlds):
    world = worlds["ftp-self"]
    nulls = world.true_sign == 0
    forms = world.forms
    only_ratios = np.array([(forms.stat[a:b] == lc.STATISTICS.index("log_ratio")).all()
                            for a, b in zip(forms.start, np.append(forms.start[1:], forms.stat.size))])
    # θ = 0 exactly where a component compares log ratios with each other or with log 1
    assert nulls.sum() > 50
    np.testing.assert_array_equal(nulls, only_ratios & (forms.const == 0))
    # and the draws' own world has none: its truth is the pooled estimate of the population
    assert (worlds["draws"].true_sign != 0).all()


def test_one_replicate_is_the_matrix_procedure(worlds):
    """A replicate's counts are what components → verdicts give on the same replicated draws."""
    world = worlds["draws"]
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    counts = ln.replicate_errors(world, MATRIX, 1, rng_a)
    stats = ln._replicates(world, MATRIX.draws, 1, rng_b)
    est, se = lc.evaluate(world.forms, stats)
    comps = world.forms.frame().assign(estimate=est[0], se=se[0])
    comps["z"] = comps["direction"] * comps["estimate"] / comps["se"]
    comps["p"] = lc.p_values(comps["z"].to_numpy(), MATRIX.draws - 1)
    long = cv.verdicts(comps, alpha=MATRIX.alpha)
    c = long.attrs["components"]
    assert counts["rejections"].iloc[0] == int(c["significant"].sum())
    truth = np.sign(world.forms.direction * world.truth)
    assert counts["sign_errors"].iloc[0] == int(((c["agrees"] != 0) & (c["agrees"] == -truth)).sum())
    assert counts["decided"].iloc[0] == int((long["verdict"] != "inconclusive").sum())


def test_error_rates_and_procedure_validation():
    d = pd.DataFrame({"rejections": [3, 4] * 4, "false_rejections": [0, 1] * 4, "sign_errors": [0] * 8,
                      "wrong_verdicts": [0, 1] * 4, "decided": [2] * 8})
    r = ln.error_rates({("w", "p"): d}).loc[("w", "p")]
    # √(r(1 − r)/R): a few roundings
    assert r["fwer"] == 0.5 and r["fwer_se"] == pytest.approx(0.5 / np.sqrt(8), rel=1e-15, abs=0)
    zero = ln.error_rates({("w", "p"): d.iloc[:1]}).loc[("w", "p")]
    assert zero["fwer"] == 0 and zero["fwer_se"] == 1.0  # never shown as exact: √(1/R)/√R
    assert MATRIX.label == "K = 20, t on 19 df, paired errors"
    for bad in ({"draws": 1}, {"draws": 5, "reference": "z"}, {"draws": 5, "errors": "rss"},
                {"draws": 5, "alpha": 1.5}):
        with pytest.raises(ValueError):
            ln.Procedure(**bad)


def test_bad_input(population, worlds):
    with pytest.raises(ValueError, match="world must be"):
        ln.null_world(population, "uniform")
    with pytest.raises(TypeError, match="World"):
        ln.replicate_errors("draws", MATRIX, 1, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        ln.replicate_errors(worlds["draws"], MATRIX, 1, 0)
