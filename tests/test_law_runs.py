"""The claims under every latent law: dpfda_book.report.law_runs.

K latent draws, pooled: the standard error includes the between-draw part; the t reference on
K - 1 df; the true level of the law-level test under its null.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from dpfda.maths.summation import gamma
from dpfda_book.report import claim_encodings as enc
from dpfda_book.report import claim_verdicts as cv
from dpfda_book.report import law_runs as runs
from dpfda_book.simulation.studies import get_study

from _claim_tables import fig6_table, results_table


def test_draw_seeds():
    assert runs.draw_seeds(5, 1) == [5]
    s = runs.draw_seeds(5, 4)
    assert len(set(s)) == 4 and s == runs.draw_seeds(5, 4)
    with pytest.raises(ValueError, match="draws"):
        runs.draw_seeds(5, 0)


def test_pooled_standard_error_matches_a_brute_force_nested_simulation():
    """Toy setting (Figure 1, T = 6, μ = 0.1, n = 4: the latent draw matters). Repeat the whole
    K-draw experiment M times: the spread of the pooled log ratio across the M experiments is
    what its standard error must estimate. The within-draw standard error alone falls short."""
    from dpfda_book.simulation.schedule import run_study

    study = get_study("fig1", n=[4]).subset(T=6, mu=0.1)
    K, R, M = 5, 100, 60
    est, se_pooled, se_within = [], [], []
    for j in range(M):
        draws = [run_study(study, reps=R, seed=s) for s in runs.draw_seeds(1000 + j, K)]
        pooled = runs.pool_draws(draws).iloc[0]
        est.append(math.log(pooled["ratio"]))
        se_pooled.append(pooled["se_log_ratio"])
        se_within.append(math.sqrt(np.mean([d["se_log_ratio"].iloc[0] ** 2 for d in draws]) / K))
    sd = float(np.std(est, ddof=1))
    rms = float(np.sqrt(np.mean(np.square(se_pooled))))
    rel = 1 / math.sqrt(2 * (M - 1))  # relative standard error of a standard deviation from M values
    assert abs(rms / sd - 1) < 4 * rel * 1.5, (rms, sd)
    assert float(np.sqrt(np.mean(np.square(se_within)))) < 0.8 * sd  # between-draw variance is real here


def test_pool_draws_columns_and_floor():
    a = results_table("fig6", 1.0, se=0.05, reps=10)
    b = results_table("fig6", 1.0, se=0.05, reps=10)
    pooled = runs.pool_draws([a, b, a])
    assert (pooled["draws"] == 3).all() and (pooled["reps"] == 30).all()
    assert np.allclose(pooled["ratio"], 1.0, rtol=gamma(8), atol=0)  # the pooled log of equal ratios
    # identical draws: the across-draw spread is 0, the floor keeps the within part
    assert np.allclose(pooled["se_log_ratio"], 0.05 / math.sqrt(3), rtol=gamma(16), atol=0)  # the floor's formula
    with pytest.raises(ValueError, match="at least two"):
        runs.pool_draws([a])
    with pytest.raises(ValueError, match="equal repetitions"):
        runs.pool_draws([a, results_table("fig6", 1.0, reps=20)])


def test_law_level_components_use_the_pooled_standard_error():
    """A law-level table's component carries the pooled (across-draw) standard error; a component
    that states its own degrees of freedom is tested with Student's t."""
    t5 = fig6_table({2: 0.5, 4: 0.5, 6: 0.5, 8: 2.0}.get)
    t5["err_ftp"] = t5["ratio"] * t5["err_ptf"]  # pooling recomputes the ratio from the errors
    spread = t5.copy()
    spread["err_ftp"] = spread["err_ftp"] * 1.3  # a second kind of draw: the ratio moves by 1.3
    pooled = runs.pool_draws([t5, spread, t5, spread, t5])
    comp = cv.components_table({"default": {"fig6": pooled}}, claims=["fig6-claim-6"])
    row = pooled[(pooled["sigma0"] == 10.0) & (pooled["n"] == 4096) & (pooled["m"] == 8)].iloc[0]
    assert comp["se"].iloc[-1] == pytest.approx(row["se_log_ratio"], rel=gamma(4), abs=0)  # the same number
    assert row["se_log_ratio"] > 0.01 / math.sqrt(5)  # the between-draw spread, above the within floor
    assert comp["df"].isna().all()  # a normal reference, as random-effects meta-analysis uses
    with pytest.raises(ValueError, match="df must be"):
        enc.Component("x", 3.0, 1.0, 1, df=0.5)


def test_law_level_components_with_the_t_reference_use_k_minus_1_df():
    t5 = fig6_table({2: 0.5, 4: 0.5, 6: 0.5, 8: 2.0}.get)
    t5["err_ftp"] = t5["ratio"] * t5["err_ptf"]
    spread = t5.copy()
    spread["err_ftp"] = spread["err_ftp"] * 1.3
    pooled = runs.pool_draws([t5, spread, t5, spread, t5])
    res = {"default": {"fig6": pooled}}
    normal = cv.components_table(res, claims=["fig6-claim-6"])
    t = cv.components_table(res, claims=["fig6-claim-6"], reference="t")
    assert (t["df"] == 4).all() and np.allclose(t["z"], normal["z"], rtol=gamma(1), atol=0)  # the same z
    assert (t["p"] > normal["p"]).all()  # t on 4 df has the heavier tails
    # one latent draw (no draws column): the normal reference stays
    single = cv.components_table({"default": {"fig6": t5}}, claims=["fig6-claim-6"], reference="t")
    assert single["df"].isna().all()
    with pytest.raises(ValueError, match="reference"):
        cv.components_table(res, claims=["fig6-claim-6"], reference="z")


@pytest.mark.parametrize("draws", [5, 20])
@pytest.mark.parametrize("rho", [0.0, 0.2])
def test_law_level_test_keeps_its_level_at_the_holm_threshold(draws, rho):
    """The test of the test: simulate the pooled statistic under its null (known truth) and count
    rejections at a Holm threshold alpha / k. With Student's t on K - 1 df the rate is not above
    nominal beyond Monte Carlo error; with the normal reference at K = 5 it is (the defect the t
    reference repairs), and the quadrature agrees with the simulation."""
    rng = np.random.default_rng(np.random.SeedSequence([32, draws, int(10 * rho)]))
    level, reps = 0.05 / 100, 400_000  # a family of 100 components: Holm's first threshold
    rate, se = runs.law_level_null_size(level, draws, rho, reference="t", reps=reps, rng=rng)
    assert rate <= level + 3 * se, (rate, se)
    exact, _ = runs.law_level_null_size(level, draws, rho, reference="t")
    assert exact <= level * (1 + 1e-6) and abs(rate - exact) <= 4 * se
    if draws == 5:
        naive, se_n = runs.law_level_null_size(level, draws, rho, reference="normal", reps=reps, rng=rng)
        assert naive > level + 4 * se_n, (naive, se_n)
        # a rate known to three decimals
        assert runs.law_level_null_size(0.05, 5, 0.0, reference="normal")[0] == pytest.approx(0.1216, rel=0, abs=1e-3)


def test_law_level_null_size_refuses_bad_input():
    with pytest.raises(ValueError, match="draws"):
        runs.law_level_null_size(0.05, 1, 0.0, reference="t")
    with pytest.raises(ValueError, match="reference"):
        runs.law_level_null_size(0.05, 5, 0.0, reference="z")
    with pytest.raises(TypeError, match="Generator"):
        runs.law_level_null_size(0.05, 5, 0.0, reference="t", reps=10)


def test_activation_by_share_reads_table_1s_setting_under_each_law():
    def tab(law, p):
        return {"table1": results_table("table1", 1.0, p=lambda s: p if (s.T == 8 and s.mu == 0.1 and s.n == 1024)
                                        else 0.0, reps=400, law=law)}
    shares = runs.activation_by_share({"default": tab("default", 0.75), "wave-0.5": tab("wave-0.5", 0.25)})
    assert shares["law"].tolist() == ["default", "wave-0.5"] and shares["shape"].tolist() == ["default", "wave"]
    assert np.isnan(shares["S"].iloc[0]) and shares["S"].iloc[1] == 0.5
    assert shares["p"].tolist() == [0.75, 0.25] and (shares["reps"] == 400).all()
    assert shares["se"].iloc[1] == pytest.approx(enc.p_ptf_and_se(pd.Series({"p_ptf_active": 0.25, "reps": 400}))[1],
                                                 rel=gamma(4), abs=0)  # the same formula
    with pytest.raises(ValueError, match="lacks the study 'table1'"):
        runs.activation_by_share({"default": {"fig1": results_table("fig1", 1.0)}})


def test_draws_from_pilot():
    assert runs.draws_from_pilot(0.0, 1.0, 1000) == 5  # no between-draw variance: the minimum
    assert runs.draws_from_pilot(0.01, 1.0, 1000) == 10  # K >= R sigma_b^2 / sigma_w^2
    assert runs.draws_from_pilot(1.0, 1.0, 1000) == 20  # capped by the budget
    with pytest.raises(ValueError, match="within_var_per_rep"):
        runs.draws_from_pilot(0.1, 0.0, 1000)

# The law-level design: every draw kept, pooled in full or in part, and the pilot.


def _draw(log_ratio, se=0.05, reps=100, p=0.5, se_p=0.05):
    """One pilot draw of Figure 1-like settings: two settings, given log ratios."""
    lr = np.asarray(log_ratio, float)
    return pd.DataFrame({"T": [2, 4], "m": [pd.NA, pd.NA], "mu": [0.1, 0.1], "sigma0": [0.0, 0.0],
                         "radius_rule": ["1.1B", "1.1B"], "n": [4, 4], "reps": reps,
                         "ratio": np.exp(lr), "se_log_ratio": se, "err_ftp": np.exp(lr), "se_ftp": se,
                         "err_ptf": 1.0, "se_ptf": se, "p_ptf_active": p, "se_p_ptf_active": se_p})


def test_pilot_needs_is_the_method_of_moments_share_times_the_repetitions():
    # setting 1 moves between draws (0, 0.2, 0, 0.2); setting 2 does not move at all
    tables = [_draw([x, 0.0]) for x in (0.0, 0.2, 0.0, 0.2)]
    needs = runs.pilot_needs({"fig1": tables, "fig3": tables}, reps_noiseless=1000, reps_noisy=150)
    lr = needs[(needs["study"] == "fig1") & (needs["statistic"] == "log ratio")]
    between = np.var([0.0, 0.2, 0.0, 0.2], ddof=1) - 0.05**2
    # a variance of four numbers minus a square (which cancels by a factor below 2), and a product
    assert lr["between"].iloc[0] == pytest.approx(between, rel=gamma(32), abs=0)
    assert lr["within"].iloc[0] == pytest.approx(0.05**2 * 100, rel=gamma(4), abs=0)
    assert lr["need"].iloc[0] == math.ceil(1000 * between / (0.05**2 * 100))
    assert lr["need"].iloc[1] == 0 and lr["between"].iloc[1] == 0  # no spread beyond the within part
    noisy = needs[(needs["study"] == "fig3") & (needs["statistic"] == "log ratio")]
    assert noisy["reps"].iloc[0] == 150 and noisy["need"].iloc[0] == math.ceil(150 * between / 0.25)
    assert set(needs["statistic"]) == set(runs.PILOT_STATISTICS)
    # the activation share never moves: no need; log PTF error is constant: none either
    assert (needs[needs["statistic"].isin(["PTF activation", "log PTF error"])]["need"] == 0).all()


def test_pilot_needs_refuses_bad_input():
    tables = [_draw([0.0, 0.0]) for _ in range(3)]
    with pytest.raises(ValueError, match="at least three"):
        runs.pilot_needs({"fig1": tables[:2]}, reps_noiseless=10, reps_noisy=10)
    with pytest.raises(ValueError, match="equal repetitions"):
        runs.pilot_needs({"fig1": [*tables[:2], _draw([0.0, 0.0], reps=50)]}, reps_noiseless=10, reps_noisy=10)
    with pytest.raises(ValueError, match="reps_noiseless"):
        runs.pilot_needs({"fig1": tables}, reps_noiseless=0, reps_noisy=10)
    with pytest.raises(TypeError, match="mapping"):
        runs.pilot_needs([], reps_noiseless=10, reps_noisy=10)


def test_simulate_draws_keeps_each_draw_and_pool_takes_the_first():
    raw = runs.simulate_draws(["default", "shift-0.5"], reps_noiseless=30, reps_noisy=30, seed=3, draws=3,
                            n=[4], studies=["fig1", "fig3"], n_jobs=1)
    assert set(raw) == {"default", "shift-0.5"} and set(raw["default"]) == {"fig1", "fig3"}
    d = raw["default"]["fig1"]
    assert len(d) == 3 and all((t["reps"] == 10).all() for t in d)
    # independent latent draws: errors of size 0.01-1 agree to 1e-8 with probability about 1e-8
    assert not np.allclose(d[0]["err_ptf"], d[1]["err_ptf"], rtol=0, atol=1e-8)
    assert (d[0]["law"] == "default").all() and (raw["shift-0.5"]["fig3"][0]["law"] == "shift-0.5").all()
    pooled = runs.pool(raw)
    assert (pooled["default"]["fig1"]["draws"] == 3).all()
    two = runs.pool(raw, first=2)["default"]["fig1"]
    pd.testing.assert_frame_equal(two, runs.pool_draws(d[:2]))
    with pytest.raises(ValueError, match="first"):
        runs.pool(raw, first=1)
    with pytest.raises(ValueError, match="fewer than"):
        runs.pool(raw, first=4)
    one = runs.simulate_draws("default", reps_noiseless=10, reps_noisy=10, seed=3, draws=1, n=[4],
                            studies="fig1", n_jobs=1)
    assert isinstance(runs.pool(one)["default"]["fig1"], pd.DataFrame)  # one draw: the table itself
    with pytest.raises(ValueError, match="studies"):
        runs.simulate_draws("default", reps_noiseless=10, reps_noisy=10, seed=3, draws=1, studies=["fig9"])
    with pytest.raises(ValueError, match="at least 2 repetitions"):
        runs.simulate_draws("default", reps_noiseless=10, reps_noisy=10, seed=3, draws=6, studies=["fig1"])


def test_pooled_interval_uses_student_t_on_k_minus_1_df():
    tables = [_draw([x, 0.0]) for x in (0.0, 0.2, 0.0, 0.2)]
    for t in tables:
        t["study"], t["seed"] = "fig1", 0
        t["p_ftp_active"] = t["p_ftp_active_curves"] = t["se_p_ftp_active"] = 0.0
    pooled = runs.pool_draws(tables)
    q = student_t.ppf(0.975, 3)
    # ratio·exp(q·se) and back: the exponential's and the logarithm's ulps, γ₄ of 1 + q·se
    assert np.allclose(np.log(pooled["ratio_hi"] / pooled["ratio"]), q * pooled["se_log_ratio"], rtol=gamma(4),
                       atol=gamma(4))
    assert q > 1.96  # wider than the normal interval on few draws


def test_pooled_draws_keep_the_kernel_of_each_setting_and_refuse_draws_that_differ_in_it():
    from dpfda_book.simulation.schedule import run_study
    from dpfda_book.simulation.studies import kernel_study

    study = kernel_study(n=[4]).subset(T=4, mu=1.0)
    draws = [run_study(study, reps=5, seed=s) for s in runs.draw_seeds(3, 2)]
    pooled = runs.pool_draws(draws)
    assert list(pooled["kernel"]) == [s.kernel_spec for s in study]
    swapped = draws[1].copy()
    swapped["kernel"] = list(reversed(swapped["kernel"]))
    with pytest.raises(ValueError, match="same settings in the same order"):
        runs.pool_draws([draws[0], swapped])
