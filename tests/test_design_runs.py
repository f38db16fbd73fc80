"""dpfda_book.simulation.design_runs: paired Monte Carlo of several designs, and their results table.

(The exactness of the unconstrained error and the published bits are checked in test_designs.py
and test_loop.py.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfda_book.simulation.design_runs import compare_designs, simulate_designs
from dpfda_book.simulation.studies import Setting

SPECS = {"PTF": {"region": "box"}, "mix": {"region": "mix", "lam": 0.5},
         "FTP": {"region": "ellipsoid", "noise": "ellipsoid", "fit": "none"}}
SETTING = Setting(family="kernel", n=16, T=4, mu=1.0, sigma0=1.0, radius_rule="log_n")


def test_one_array_of_errors_and_flags_per_design_and_repetition():
    out = simulate_designs(SETTING, SPECS, 12, 5)
    assert set(out) == set(SPECS)
    for arrays in out.values():
        assert arrays["err"].shape == (12,) and arrays["free"].dtype == bool
        assert np.all(np.isfinite(arrays["err"])) and np.all(arrays["err"] >= 0)


def test_results_depend_on_the_seed_and_the_designs_share_their_random_numbers():
    a = simulate_designs(SETTING, SPECS, 12, 5)
    again = simulate_designs(SETTING, SPECS, 12, 5)
    alone = simulate_designs(SETTING, {"mix": SPECS["mix"]}, 12, 5)
    other = simulate_designs(SETTING, SPECS, 12, 6)
    for name in SPECS:
        np.testing.assert_array_equal(again[name]["err"], a[name]["err"])
    # common random numbers, one machine: the same bits (as tests/test_loop.py checks for another setting)
    np.testing.assert_array_equal(alone["mix"]["err"], a["mix"]["err"])
    assert not np.array_equal(other["mix"]["err"], a["mix"]["err"])


def test_reps_must_be_an_integer_of_at_least_two():
    for reps, exc in [(1, ValueError), (2.5, TypeError)]:
        with pytest.raises(exc, match="reps"):
            simulate_designs(SETTING, SPECS, reps, 0)
        with pytest.raises(exc, match="reps"):
            compare_designs([SETTING], SPECS, reps, 0)


def test_compare_designs_tabulates_paired_ratios_to_the_references():
    table = compare_designs([SETTING], SPECS, 10, 3)
    assert table["design"].tolist() == list(SPECS) and set(table["n"]) == {16}
    out = simulate_designs(SETTING, SPECS, 10, 3)
    row = table.set_index("design").loc["mix"]
    e, p = out["mix"]["err"], out["PTF"]["err"]
    # the same numbers through the same numpy calls on one machine: equal, bit for bit
    assert row["err"] == e.mean()
    assert row["se"] == e.std(ddof=1) / math.sqrt(10)
    assert row["ratio_PTF"] == e.mean() / p.mean()
    sd = (e / e.mean() - p / p.mean()).std(ddof=1) / math.sqrt(10)
    assert row["se_log_ratio_PTF"] == sd
    ref = table.set_index("design").loc["PTF"]
    assert ref["ratio_PTF"] == 1.0 and ref["se_log_ratio_PTF"] == 0.0
    assert 0 <= row["free"] <= 1 and row["formula"] > 0 and row["formula_se"] > 0


def test_a_reference_must_be_one_of_the_designs():
    with pytest.raises(KeyError):
        compare_designs([SETTING], {"mix": SPECS["mix"]}, 4, 0)
