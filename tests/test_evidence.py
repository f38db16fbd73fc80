"""Tests of dpfda_book.report.evidence: the claim checks used by the simulation chapters."""

import math

import pandas as pd
import pytest

from dpfda.maths.summation import gamma
from dpfda_book.report import evidence as ev


def _row(ratio, se_log, n=64, err_ftp=1.0, se_ftp=0.1, err_ptf=2.0, se_ptf=0.1):
    return pd.Series({"ratio": ratio, "se_log_ratio": se_log, "n": n, "err_ftp": err_ftp,
                      "se_ftp": se_ftp, "err_ptf": err_ptf, "se_ptf": se_ptf})


def test_bonferroni_z_matches_normal_quantiles():
    assert ev.bonferroni_z(1, 0.05) == pytest.approx(1.959964, abs=1e-6)
    assert ev.bonferroni_z(8, 0.01) == pytest.approx(3.227218, abs=1e-6)  # Φ⁻¹(1 − 0.01/16)
    with pytest.raises(ValueError, match="alpha"):
        ev.bonferroni_z(2, 1.5)
    with pytest.raises(ValueError, match="k"):
        ev.bonferroni_z(0)


def test_ratio_checks_use_z_standard_errors_on_the_log_scale():
    r = _row(0.5, 0.1)
    lo, hi = ev.ratio_interval(r, z=2)
    # the same formula, a few roundings and an exponential's ulps
    assert lo == pytest.approx(0.5 * math.exp(-0.2), rel=gamma(8), abs=0)
    assert hi == pytest.approx(0.5 * math.exp(0.2), rel=gamma(8), abs=0)
    # The default z is Z = 4: 0.5·e^{0.4} = 0.746 is above 0.7 and 0.5·e^{0.5} = 0.824 below 0.85;
    # at z = 3, 0.5·e^{0.3} = 0.675 is below 0.7.
    assert ev.Z == 4.0
    assert ev.ratio_below(r, 0.85) and not ev.ratio_below(r, 0.7) and ev.ratio_below(r, 0.7, z=3)
    assert ev.ratio_above(r, 0.3) and not ev.ratio_above(r, 0.4)  # 0.5·e^{-0.4} = 0.335
    assert ev.ratio_near(r, 0.6) and not ev.ratio_near(r, 1.0)


def test_ratio_changes_combine_independent_standard_errors():
    a, b = _row(1.0, 0.03), _row(0.8, 0.04)
    # log(0.8) = -0.223; combined SE 0.05 -> 4.46 SEs.
    assert ev.ratio_falls(a, b) and not ev.ratio_falls(a, b, z=5)
    assert ev.ratio_rises(b, a) and not ev.ratio_rises(a, b)


def test_exceeds_and_within():
    assert ev.exceeds(10.0, 1.0, 4.0, 1.0)  # 6 > 4·1.414 (the default z = Z = 4)
    assert not ev.exceeds(10.0, 1.0, 5.0, 1.0) and ev.exceeds(10.0, 1.0, 5.0, 1.0, z=3)
    assert ev.within(1.07, 0.02, 1.0) and not ev.within(1.09, 0.02, 1.0)
    with pytest.raises(ValueError, match="finite"):
        ev.exceeds(float("nan"), 1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="se"):
        ev.within(1.0, -0.1, 1.0)


def test_scaled_multiplies_by_n():
    x, se = ev.scaled(_row(1, 0.1, n=100, err_ftp=0.02, se_ftp=0.001), "ftp")
    assert (x, se) == pytest.approx((2.0, 0.1), rel=gamma(2), abs=0)  # n times a decimal
    with pytest.raises(ValueError, match="method"):
        ev.scaled(_row(1, 0.1), "both")


def test_proportion_se_is_positive_at_zero_and_one():
    assert ev.proportion_se(0.0, 1000) > 0 and ev.proportion_se(1.0, 1000) > 0
    assert ev.proportion_se(0.5, 1000) == pytest.approx(math.sqrt(0.25 / 1004), rel=gamma(8), abs=0)  # p̃ = 1/2
    with pytest.raises(ValueError, match="proportion"):
        ev.proportion_se(1.2, 10)


def test_select_and_one():
    df = pd.DataFrame({"n": [8, 4, 4], "T": [2, 2, 4], "mu": [0.1, 0.1, 1.0], "ratio": [1, 2, 3]})
    assert list(ev.select(df, T=2)["n"]) == [4, 8]
    assert ev.one(df, T=4)["ratio"] == 3
    assert ev.one(df, mu=0.1, n=8)["ratio"] == 1
    with pytest.raises(ValueError, match="exactly one"):
        ev.one(df, T=2)
    with pytest.raises(ValueError, match="no setting"):
        ev.select(df, T=6)
    with pytest.raises(ValueError, match="unknown column"):
        ev.select(df, m=2)


def test_family_and_columns_are_checked():
    df = pd.DataFrame({"family": ["kernel", "legendre"], "n": [4, 4], "ratio": [1, 2]})
    assert ev.one(df, family="legendre")["ratio"] == 2
    with pytest.raises(ValueError, match="family must be one of .*got 'rkhs'$"):
        ev.select(df, family="rkhs")
    with pytest.raises(ValueError, match="family must be one of"):
        ev.select(df, family="sobolev")
    with pytest.raises(ValueError, match="unknown column 'space'; the table has"):
        ev.one(df, space="kernel")
