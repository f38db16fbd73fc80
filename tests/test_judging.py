"""dpfda_book.teaching.judging: z values of a law, the distribution test, exact comparisons."""

import math
from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from dpfda.maths.summation import gamma
from dpfda_book.teaching.judging import (
    LEVEL,
    DistributionTest,
    MonteCarloRate,
    agrees,
    as_floats,
    chi2_z,
    decimal_string,
    z_from_tails,
)


def test_chi2_z_of_draws_from_the_law_is_standard_normal():
    rng = np.random.default_rng(1)
    df, mean = 37.0, 2.5
    x = mean * rng.chisquare(df, 20_000) / df
    z = chi2_z(x, mean, df)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # and off the law it is not: 4 % more
    assert stats.kstest(chi2_z(1.04 * x, mean, df), "norm").pvalue < 1e-6


def test_chi2_z_in_the_tails_and_of_invalid_values():
    z = chi2_z([1e-300, 0.0, -1.0, np.nan, np.inf, 1e300], 1.0, 10.0)
    assert z[0] < -8 and np.all(z[1:3] == -np.inf) and z[3] == np.inf and z[4] == np.inf and z[5] > 8
    # accuracy in the upper tail: sf, not 1 - cdf
    # the same isf on the same tail: ulps (1 - cdf would be off by 1e-4 relative here)
    assert z_from_tails(1 - 1e-12, 1e-12) == pytest.approx(stats.norm.isf(1e-12), rel=1e-12, abs=0)


def test_as_floats():
    assert as_floats([1, 2.5, None], 3)[2] != as_floats([1, 2.5, None], 3)[2]  # NaN
    assert as_floats([1, 2], 3) is None and as_floats("12", 2) is None
    assert as_floats([True, 1.0], 2) is None and as_floats([[1.0], 2.0], 2) is None


def test_the_distribution_test_fails_a_correct_function_at_its_stated_rate():
    """(groups + 2)·level by the union bound; the simulated rate is within it."""
    test = DistributionTest(((0, 1, 2, 3, 4, 5), tuple(range(6, 24))))
    rate = test.false_fail_rate(2_000_000, np.random.default_rng(2))
    assert rate.rate <= 4 * LEVEL and rate.upper95 < 4 * LEVEL * 1.3
    assert rate.lower95 > 2 * LEVEL  # the bound is nearly attained: the test is not conservative by much


def test_the_distribution_test_catches_a_shift_and_a_missing_spread():
    test = DistributionTest.one_group(24)
    rng = np.random.default_rng(3)
    z = rng.standard_normal((10_000, 24))
    assert test.passes(z).mean() > 0.999
    assert test.passes(z + 1.5).mean() < 0.01  # every setting shifted by 1.5 sd
    assert not test.passes(np.full(24, 0.1)) and not test.passes(np.zeros(24))  # a constant: no spread
    assert not test.passes(2.5 * z[0])  # too much spread
    assert not test.passes(np.r_[z[0, :23], np.inf]) and not test.passes(np.r_[z[0, :23], np.nan])
    verdict = test.verdict(z[0])
    # sums of 24 terms in any order: γ₂₄ of the sum of |terms| (a square root and a division add γ₂)
    assert verdict.passed and verdict.spread == pytest.approx(float(np.sum(z[0] ** 2)), rel=gamma(24), abs=0)
    loc_atol = gamma(26) * float(np.abs(z[0]).sum()) / math.sqrt(24)
    assert verdict.locations == (pytest.approx(z[0].sum() / math.sqrt(24), rel=0, abs=loc_atol),)


def test_groups_must_partition_the_settings():
    for groups in ((), ((0, 1), (1, 2)), ((0, 2),), ((0,), ())):
        with pytest.raises(ValueError, match="partition"):
            DistributionTest(groups)
    with pytest.raises(ValueError, match="level"):
        DistributionTest.one_group(3, level=0.5)
    with pytest.raises(ValueError, match="expected 3"):
        DistributionTest.one_group(3).verdict([0.0, 1.0])


def test_the_bounds_are_the_stated_quantiles():
    test = DistributionTest.one_group(24)
    # a quantile and its tail each to about 1e-15 relative (scipy's special functions), the round
    # trip amplified by the tail's elasticity x·f(x)/F(x), about 20 at 2.5e-5: 1e-12 covers it
    assert stats.norm.sf(test.location_bound) * 2 == pytest.approx(LEVEL, rel=1e-12, abs=0)
    lo, hi = test.spread_bounds
    assert stats.chi2.cdf(lo, 24) == pytest.approx(LEVEL, rel=1e-12, abs=0)
    assert stats.chi2.sf(hi, 24) == pytest.approx(LEVEL, rel=1e-12, abs=0)


def test_monte_carlo_rates():
    assert str(MonteCarloRate(0, 1000)).startswith("0/1000 (< 3.0e-03")
    assert str(MonteCarloRate(1000, 1000)).startswith("1000/1000 (> 0.997")
    r = MonteCarloRate(30, 100_000)
    assert r.rate == 3e-4 and r.se == pytest.approx(math.sqrt(3e-4 * (1 - 3e-4) / 1e5), rel=gamma(8), abs=0)
    assert r.lower95 < r.rate < r.upper95


def test_agrees_at_high_precision_and_refuses_what_is_not_a_number():
    want = Decimal(2).sqrt(__import__("decimal").Context(prec=60))
    assert agrees(str(want)[:42], want, 1e-30)
    assert not agrees("1.4142135623731", want, 1e-30)  # a float approximation is not the expression
    assert agrees(1.4142135623730951, want, 1e-15)
    for bad in (True, None, [1.4], "sqrt(2)", "nan", "inf", "1" * 300):
        assert not agrees(bad, want, 1.0)
    assert decimal_string(0.1, 5) == "1.0000e-1"


def test_seeded_request_and_the_same_seed_verdict():
    from dpfda_book.teaching.judging import same_seed_verdict, seeded_request

    settings = [(20, 1.0), (30, 0.5), (40, 2.0)]
    request = seeded_request(settings, np.random.default_rng(3), bandwidth={"8": 0.2})
    assert request["settings"] == [[20, 1.0], [30, 0.5], [40, 2.0]] and request["bandwidth"] == {"8": 0.2}
    assert len(set(request["seeds"])) == 3 and all(isinstance(s, int) and 0 <= s < 2**62 for s in request["seeds"])
    seen = []

    def passes(values):
        seen.append(values)
        return bool(np.all(values > 0))

    good = {"values": [1.5, 2, 3.0], "again": 1.5}
    assert same_seed_verdict(request, good, settings, passes) and np.array_equal(seen[-1], [1.5, 2.0, 3.0])
    # negative controls: each condition alone fails the answer, before the law is looked at
    calls = len(seen)
    assert not same_seed_verdict(request, {**good, "again": 1.5000001}, settings, passes)  # another value
    assert not same_seed_verdict(request, {**good, "again": None}, settings, passes)
    assert not same_seed_verdict(request, {"values": [1.5, 2.0], "again": 1.5}, settings, passes)  # too few
    assert not same_seed_verdict(request, {"values": [1.5, "2", 3.0], "again": 1.5}, settings, passes)
    assert not same_seed_verdict(request, [1.5, 2.0, 3.0], settings, passes)
    assert not same_seed_verdict(request, good, [(20, 1.0), (30, 0.5), (40, 2.5)], passes)  # other settings
    assert len(seen) == calls
    assert not same_seed_verdict(request, {"values": [1.5, -2.0, 3.0], "again": 1.5}, settings, passes)  # the law
