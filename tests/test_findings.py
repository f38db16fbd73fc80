"""The paper's qualitative findings (§5.1–5.3, appendix), checked in our results.

Each check compares Monte Carlo estimates with a tolerance of z standard
errors (z = 4, Bonferroni-adjusted over the comparisons a test makes; see
``_support``), never a hand-tuned margin.  The settings are the paper's; under
``DPFDA_QUICK=1`` only the number of repetitions shrinks, and the n range keeps
the ends the claims are about.

Standard errors used:

* an error ratio: the delta-method standard error of its logarithm
  (``se_log_ratio``, paired over repetitions); two ratios from different
  settings are independent, so their log-difference has variance
  se₁² + se₂²;
* an activation probability p̂ from R repetitions:
  :func:`dpfda_book.montecarlo.proportion_se` (Agresti–Coull, positive when p̂ is 0 or 1).

Where our results depart from the paper (the RKHS latent-curve law is not
specified there; ours is documented in ``dpfda_book.simulation.models``), the test says so with
a strict ``xfail`` rather than a loosened tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpfda.maths.rounding import psd_root_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import theory
from dpfda_book.montecarlo import bonferroni_z, proportion_se
from dpfda_book.simulation.schedule import run_studies
from dpfda_book.simulation.studies import get_study

from _support import Z, reps

SEED = 20260101
R_NOISELESS = reps(1000, 300)  # σ₀ = 0: only privacy noise is drawn, cheap
R_NOISY = reps(1000, 200)  # σ₀ > 0 at n up to 4096


@pytest.fixture(scope="module")
def results():
    noiseless = [get_study("fig1"), get_study("fig4")]
    out = dict(run_studies(noiseless, R_NOISELESS, SEED, n_jobs=1))
    noisy = [get_study("fig3").subset(n=[256, 4096]),
             get_study("fig2").subset(n=[64, 4096], radius_rule="log_n")]
    out.update(run_studies(noisy, R_NOISY, SEED, n_jobs=1))
    return out


def _limit(row, study):
    """theory.ratio_limit for the setting of a results row (row["T"]: Series.T is a transpose)."""
    s = next(s for s in study.settings if s.n == row["n"] and s.mu == row["mu"] and s.T == row["T"]
             and (pd.isna(row["m"]) or s.m == row["m"]))
    return theory.ratio_limit(s.geometry())


# ---------------------------------------------------------------------------
# §5.1 / Figure 1, appendix / Figure 4: noiseless ratios fall to 1/T and 1/m
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name, group", [("fig1", "T"), ("fig4", "m")])
def test_noiseless_ratio_falls_to_the_reference(results, name, group):
    """Above the limit of Corollary 15 (1/T) or 12 (m/(T tr A⁻¹) <= 1/m) at n = 4,
    at the limit at n = 4096, and clearly lower at n = 4096 than at n = 4 when μ = 0.1."""
    df, study = results[name], get_study(name)
    combos = df.groupby(["mu", group])
    z = bonferroni_z(len(combos))
    for (mu, g), d in combos:
        d = d.sort_values("n")
        first, last = d.iloc[0], d.iloc[-1]
        assert first.n == 4 and last.n == 4096
        limit = _limit(last, study)
        if name == "fig1":
            rel = g * psd_root_rtol(int(g)) + gamma(int(g) + 4)  # tr(Φ̂Φ̂ᵀ)/T, Φ̂ = K^½ by eigh
            assert limit == pytest.approx(1.0 / g, rel=rel, abs=0)
        else:
            assert limit <= 1.0 / g
        # Starts above the reference ...
        assert math.log(first.ratio / limit) > z * first.se_log_ratio, (mu, g, first.ratio, limit)
        # ... and reaches it: the largest-n ratio agrees with the limit within z SE.
        dev = math.log(last.ratio / limit) / last.se_log_ratio
        assert abs(dev) <= z, f"{name} mu={mu} {group}={g}: ratio {last.ratio:.4g} vs limit {limit:.4g} ({dev:.2f} SE)"
        if mu == 0.1:
            drop = math.log(first.ratio / last.ratio)
            assert drop > z * math.hypot(first.se_log_ratio, last.se_log_ratio)


@pytest.mark.slow
@pytest.mark.parametrize("name, group", [("fig1", "T"), ("fig4", "m")])
def test_strong_privacy_favours_ptf_at_small_n(results, name, group):
    """μ = 0.1: the FTP/PTF ratio is above one at the smallest n (PTF preferable)."""
    d = results[name].query("mu == 0.1 and n == 4")
    assert len(d) == 4
    z = bonferroni_z(len(d))
    for row in d.itertuples():
        assert math.log(row.ratio) > z * row.se_log_ratio, (getattr(row, group), row.ratio)


# ---------------------------------------------------------------------------
# Table 1: p̂_PTF falls with n, rises with T and as μ falls
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_ptf_activation_falls_with_n(results):
    df = results["fig1"]
    R = R_NOISELESS
    steps = []
    overall = []
    for (mu, T), d in df.groupby(["mu", "T"]):
        p = d.sort_values("n")["p_ptf_active"].to_numpy()
        se = proportion_se(p, R)
        steps += [(p[k + 1] - p[k]) / math.hypot(se[k], se[k + 1]) for k in range(len(p) - 1)]
        overall.append((p[0] - p[-1]) / math.hypot(se[0], se[-1]))
    # No step up beyond noise, and a clear overall fall in every (μ, T).
    assert max(steps) <= bonferroni_z(len(steps)), max(steps)
    assert min(overall) > bonferroni_z(len(overall)), overall


@pytest.mark.slow
def test_ptf_activation_grows_with_T_and_with_stronger_privacy(results):
    df = results["fig1"].set_index(["mu", "T", "n"])["p_ptf_active"]
    R = R_NOISELESS
    n_values = sorted(df.index.get_level_values("n").unique())
    pairs = []  # (larger expected, smaller expected)
    for mu in (0.1, 1.0):
        for T_lo, T_hi in ((2, 4), (4, 6), (6, 8)):
            pairs += [((mu, T_hi, n), (mu, T_lo, n)) for n in n_values]
    for T in (2, 4, 6, 8):
        pairs += [((0.1, T, n), (1.0, T, n)) for n in n_values]
    z = bonferroni_z(len(pairs))
    for big, small in pairs:  # never significantly the wrong way round
        diff = df[big] - df[small]
        assert diff >= -z * math.hypot(proportion_se(df[big], R), proportion_se(df[small], R)), (big, small)

    def summed(a_keys, b_keys):
        a = np.array([df[k] for k in a_keys])
        b = np.array([df[k] for k in b_keys])
        se = np.sqrt(np.sum(proportion_se(a, R) ** 2 + proportion_se(b, R) ** 2))
        return (a.sum() - b.sum()) / se

    strict = [summed([(mu, 8, n) for n in n_values], [(mu, 2, n) for n in n_values]) for mu in (0.1, 1.0)]
    strict += [summed([(0.1, T, n) for n in n_values], [(1.0, T, n) for n in n_values]) for T in (2, 4, 6, 8)]
    assert min(strict) > bonferroni_z(len(strict)), strict  # and clearly the right way overall


# ---------------------------------------------------------------------------
# §5.3 / Figure 3: heavy observation noise (σ₀ = 10)
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_high_noise_ratios_rise_with_n_and_ptf_wins_on_coarse_grids(results):
    d = results["fig3"].query("sigma0 == 10.0")
    z = bonferroni_z(4)
    for T, g in d.groupby("T"):
        small, large = g[g.n == 256].iloc[0], g[g.n == 4096].iloc[0]
        rise = math.log(large.ratio / small.ratio)
        assert rise > z * math.hypot(small.se_log_ratio, large.se_log_ratio), (T, small.ratio, large.ratio)
    last = d[d.n == 4096].set_index("T")
    # PTF is the more accurate at n = 4096 for T = 4, and not worse beyond noise for T = 2.
    assert math.log(last.loc[4, "ratio"]) > Z * last.loc[4, "se_log_ratio"], last.loc[4, "ratio"]
    assert math.log(last.loc[2, "ratio"]) > -Z * last.loc[2, "se_log_ratio"], last.loc[2, "ratio"]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "Departure from the paper: with our RKHS latent-curve law (dpfda_book.simulation.models; the paper leaves it "
    "open) the sigma0 = 10 ratios for T = 6 and T = 8 are still below one at n = 4096. They rise "
    "with n (checked above) and cross one later: about n = 2^13-2^14 for T = 6 and beyond 2^16 "
    "for T = 8 in our runs. Strict, so that a change that restores the paper's picture is noticed."))
def test_high_noise_every_ratio_above_one_at_largest_n(results):
    last = results["fig3"].query("sigma0 == 10.0 and n == 4096")
    assert len(last) == 4
    assert (np.log(last["ratio"]) > Z * last["se_log_ratio"]).all(), last[["T", "ratio"]]


# ---------------------------------------------------------------------------
# §5.2 / Figure 2: n × MSE_FTP near σ₀² at large n with B' = log n
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_scaled_ftp_error_near_sigma0_squared(results):
    """With B' = log n the fits rarely bind and FTP's error is ε̄'s plus the privacy
    term: E[n·MSE] = σ₀² + n·(2B'/(nμ))²·tr(K_T)/T (Theorem 13's privacy part).  At
    n = 4096 that is within 7% of σ₀², and the estimate agrees with it within z SE;
    it is also clearly closer to σ₀² than at n = 64 (the curve approaches σ₀²)."""
    d = results["fig2"]
    sigma0 = float(d["sigma0"].iloc[0])
    assert sigma0 == 1.0 and (d["radius_rule"] == "log_n").all()
    last, first = d[d.n == 4096].iloc[0], d[d.n == 64].iloc[0]
    s = get_study("fig2").subset(n=4096, radius_rule="log_n").settings[0]
    privacy = s.n * theory.ftp_noiseless_error(s.geometry(), s.radius, s.n, s.mu)
    assert privacy < 0.07 * sigma0**2
    scaled, scaled_se = last.n * last.err_ftp, last.n * last.se_ftp
    z = bonferroni_z(2)
    assert abs(scaled - (sigma0**2 + privacy)) <= z * scaled_se, (scaled, sigma0**2 + privacy, scaled_se)
    gap_first = abs(first.n * first.err_ftp - sigma0**2)
    gap_last = abs(scaled - sigma0**2)
    assert gap_first - gap_last > z * math.hypot(first.n * first.se_ftp, scaled_se), (gap_first, gap_last)
