"""The matrix's components from the per-draw tables: dpfda_book.report.law_components.

A component's standard error is taken draw by draw (its influence values across the K
draws), so settings that share latent curves within a draw are accounted for; for a
component of one setting it is pool_draws' standard error; ``errors="root-sum-square"`` is
what combining the pooled tables' errors gives.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpfda_book.report import claim_verdicts as cv
from dpfda_book.report import law_components as lc
from dpfda_book.report import law_runs as runs

from _claim_tables import STUDIES, random_draw, random_draws


def test_root_sum_square_is_what_the_pooled_tables_give():
    """errors="root-sum-square" reproduces components_table on pool(draws): the earlier design, exactly."""
    draws = random_draws(np.random.default_rng(5), 4)
    forms, (stats, _) = lc.compile_forms(draws), lc.draw_stats(draws)
    for first, reference in ((None, "t"), (3, "normal")):
        new = lc.components_from_draws(draws, first=first, reference=reference, errors="root-sum-square",
                                       forms=forms, stats=stats)
        old = cv.components_table(runs.pool(draws, first=first), reference=reference)
        assert new[["claim", "law", "component", "direction"]].equals(old[["claim", "law", "component", "direction"]])
        # The same sums in another order. A component has at most 44 terms, each at most 4096·e^-1.5
        # (n times an error here) in size, so two orders differ by at most γ_44·Σ|terms| < 1e-10.
        # z and p are the same functions of (estimate, se, df) on both sides.
        for c in ("estimate", "se"):
            np.testing.assert_allclose(new[c], old[c], rtol=0, atol=1e-10)
        assert new["df"].equals(old["df"])


def test_one_setting_component_has_pool_draws_standard_error():
    draws = random_draws(np.random.default_rng(6), 6)
    comp = lc.components_from_draws(draws, claims=["fig6-claim-6"])
    pooled = runs.pool_draws(draws["default"]["fig6"])
    for m, row in zip((2, 4, 6, 8), comp.itertuples()):
        r = pooled[(pooled["sigma0"] == 10.0) & (pooled["n"] == 4096) & (pooled["m"] == m)].iloc[0]
        assert row.estimate == pytest.approx(math.log(r["ratio"]), rel=1e-12, abs=1e-14)
        assert row.se == pytest.approx(r["se_log_ratio"], rel=1e-12, abs=0)  # se > 0: relative alone
        assert row.df == 5


def test_a_sum_over_settings_that_share_their_draw_takes_its_spread_across_draws():
    """Table 1's claim 4 compares sums of activation shares over T at n = 4 and at the largest n.
    When the four T of one n share a latent factor in each draw, their sum moves four times as
    far as one of them, and the spread of the per-draw sums, not the root-sum-square of the four
    pooled errors, is its standard error."""
    K = 10
    draws = random_draws(np.random.default_rng(7), K, shared_sd=0.5)
    paired = lc.components_from_draws(draws, claims=["table1-claim-4"])
    rss = lc.components_from_draws(draws, claims=["table1-claim-4"], errors="root-sum-square")
    row = paired[paired["component"] == "mu=0.1: falls with n (n=4 vs 4096)"].iloc[0]
    t = draws["default"]["table1"]
    per_draw = np.array([d.loc[(d["mu"] == 0.1) & (d["n"] == 4), "p_ptf_active"].sum()
                         - d.loc[(d["mu"] == 0.1) & (d["n"] == 4096), "p_ptf_active"].sum() for d in t])
    # a few dozen operations on shares in [0, 4]: rounding ~1e-15 of the sums, far inside 1e-12
    assert row["estimate"] == pytest.approx(per_draw.mean(), rel=1e-12, abs=1e-12)
    assert row["se"] == pytest.approx(per_draw.std(ddof=1) / math.sqrt(K), rel=1e-12, abs=0)  # se > 0
    # the negative control: combined as independent, the four shares' common factor is lost
    assert rss.loc[row.name, "se"] < 0.7 * row["se"]


def test_paired_standard_error_is_floored_at_the_within_draw_part():
    rng = np.random.default_rng(8)
    one = {s: random_draw(s, rng) for s in STUDIES}
    draws = {"default": {s: [one[s]] * 4 for s in STUDIES}}  # identical draws: no spread at all
    comp = lc.components_from_draws(draws, claims=["fig1-claim-3"])
    rss = lc.components_from_draws(draws, claims=["fig1-claim-3"], errors="root-sum-square")
    # both the within part, √(Σ se²/K); se > 0 (asserted below), so the relative bound alone
    np.testing.assert_allclose(comp["se"], rss["se"], rtol=1e-12, atol=0)
    assert (comp["se"] > 0).all()


def test_forms_are_the_same_for_every_law():
    """compile_forms reuses one law's forms for laws with the same settings: the same components as
    compiling each law alone."""
    draws = random_draws(np.random.default_rng(9), 3, laws=("default", "wave-0.25"))
    both = lc.components_from_draws(draws)
    alone = pd.concat([lc.components_from_draws({law: draws[law]}) for law in draws], ignore_index=True)
    pd.testing.assert_frame_equal(both, alone)


def test_evaluate_takes_leading_axes():
    draws = random_draws(np.random.default_rng(10), 5)
    forms = lc.compile_forms(draws)
    stats, _ = lc.draw_stats(draws)
    est, se = lc.evaluate(forms, stats)
    twice = lc.DrawStats(**{f: np.stack([getattr(stats, f)] * 2) for f in ("a", "sa", "b", "sb", "slr", "p", "sp")},
                         reps=stats.reps)
    est2, se2 = lc.evaluate(forms, twice)
    np.testing.assert_array_equal(est2[1], est)
    np.testing.assert_array_equal(se2[0], se)
    small_forms, small = lc.restrict(forms, stats)
    e3, s3 = lc.evaluate(small_forms, small)
    np.testing.assert_array_equal(e3, est)
    np.testing.assert_array_equal(s3, se)


def test_bad_input():
    draws = random_draws(np.random.default_rng(11), 3)
    with pytest.raises(ValueError, match="errors must be"):
        lc.components_from_draws(draws, errors="rss")
    with pytest.raises(ValueError, match="reference"):
        lc.components_from_draws(draws, reference="z")
    with pytest.raises(ValueError, match="first"):
        lc.components_from_draws(draws, first=1)
    with pytest.raises(ValueError, match="between 2 and the 3 draws"):
        lc.components_from_draws(draws, first=4)
    with pytest.raises(ValueError, match="at least two draws"):
        lc.components_from_draws({"default": {s: t[:1] for s, t in draws["default"].items()}})
    with pytest.raises(TypeError, match="non-empty mapping"):
        lc.components_from_draws({})
    uneven = {"default": dict(draws["default"], fig1=draws["default"]["fig1"][:2])}
    with pytest.raises(ValueError, match="same number of draws"):
        lc.components_from_draws(uneven)
