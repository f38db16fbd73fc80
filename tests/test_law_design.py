"""The law-level design of the claims matrix: the draws behind it, their pooling, the pilot."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from dpfda.report import claims as cl
from dpfda.report import law_design as ld


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
    needs = ld.pilot_needs({"fig1": tables, "fig3": tables}, reps_noiseless=1000, reps_noisy=150)
    lr = needs[(needs["study"] == "fig1") & (needs["statistic"] == "log ratio")]
    between = np.var([0.0, 0.2, 0.0, 0.2], ddof=1) - 0.05**2
    assert lr["between"].iloc[0] == pytest.approx(between)
    assert lr["within"].iloc[0] == pytest.approx(0.05**2 * 100)
    assert lr["need"].iloc[0] == math.ceil(1000 * between / (0.05**2 * 100))
    assert lr["need"].iloc[1] == 0 and lr["between"].iloc[1] == 0  # no spread beyond the within part
    noisy = needs[(needs["study"] == "fig3") & (needs["statistic"] == "log ratio")]
    assert noisy["reps"].iloc[0] == 150 and noisy["need"].iloc[0] == math.ceil(150 * between / 0.25)
    assert set(needs["statistic"]) == set(ld.PILOT_STATISTICS)
    # the activation share never moves: no need; log PTF error is constant: none either
    assert (needs[needs["statistic"].isin(["PTF activation", "log PTF error"])]["need"] == 0).all()


def test_pilot_needs_refuses_bad_input():
    tables = [_draw([0.0, 0.0]) for _ in range(3)]
    with pytest.raises(ValueError, match="at least three"):
        ld.pilot_needs({"fig1": tables[:2]}, reps_noiseless=10, reps_noisy=10)
    with pytest.raises(ValueError, match="equal repetitions"):
        ld.pilot_needs({"fig1": [*tables[:2], _draw([0.0, 0.0], reps=50)]}, reps_noiseless=10, reps_noisy=10)
    with pytest.raises(ValueError, match="reps_noiseless"):
        ld.pilot_needs({"fig1": tables}, reps_noiseless=0, reps_noisy=10)
    with pytest.raises(TypeError, match="mapping"):
        ld.pilot_needs([], reps_noiseless=10, reps_noisy=10)


def test_simulate_draws_keeps_each_draw_and_pool_takes_the_first():
    raw = cl.simulate_draws(["default", "shift-0.5"], reps_noiseless=30, reps_noisy=30, seed=3, draws=3,
                            n=[4], studies=["fig1", "fig3"], n_jobs=1)
    assert set(raw) == {"default", "shift-0.5"} and set(raw["default"]) == {"fig1", "fig3"}
    d = raw["default"]["fig1"]
    assert len(d) == 3 and all((t["reps"] == 10).all() for t in d)
    assert not np.allclose(d[0]["err_ptf"], d[1]["err_ptf"])  # independent latent draws
    assert (d[0]["law"] == "default").all() and (raw["shift-0.5"]["fig3"][0]["law"] == "shift-0.5").all()
    pooled = ld.pool(raw)
    assert (pooled["default"]["fig1"]["draws"] == 3).all()
    two = ld.pool(raw, first=2)["default"]["fig1"]
    pd.testing.assert_frame_equal(two, cl.pool_draws(d[:2]))
    with pytest.raises(ValueError, match="first"):
        ld.pool(raw, first=1)
    with pytest.raises(ValueError, match="fewer than"):
        ld.pool(raw, first=4)
    one = cl.simulate_draws("default", reps_noiseless=10, reps_noisy=10, seed=3, draws=1, n=[4],
                            studies="fig1", n_jobs=1)
    assert isinstance(ld.pool(one)["default"]["fig1"], pd.DataFrame)  # one draw: the table itself
    with pytest.raises(ValueError, match="studies"):
        cl.simulate_draws("default", reps_noiseless=10, reps_noisy=10, seed=3, draws=1, studies=["fig9"])
    with pytest.raises(ValueError, match="at least 2 repetitions"):
        cl.simulate_draws("default", reps_noiseless=10, reps_noisy=10, seed=3, draws=6, studies=["fig1"])


def test_pooled_interval_uses_student_t_on_k_minus_1_df():
    tables = [_draw([x, 0.0]) for x in (0.0, 0.2, 0.0, 0.2)]
    for t in tables:
        t["study"], t["seed"] = "fig1", 0
        t["p_ftp_active"] = t["p_ftp_active_curves"] = t["se_p_ftp_active"] = 0.0
    pooled = cl.pool_draws(tables)
    q = student_t.ppf(0.975, 3)
    assert np.allclose(np.log(pooled["ratio_hi"] / pooled["ratio"]), q * pooled["se_log_ratio"])
    assert q > 1.96  # wider than the normal interval on few draws
