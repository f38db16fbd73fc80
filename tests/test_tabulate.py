"""dpfda_book.simulation.tabulate: summaries of per-repetition errors, the results table, metadata."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpfda
from dpfda.maths.summation import gamma
from dpfda_book.montecarlo import Z95, proportion_se
from dpfda_book.simulation import tabulate
from dpfda_book.simulation.studies import Setting, Study
from dpfda_book.simulation.tabulate import bias_variance, concat_chunks, summarize


def _per_rep(R, seed=0):
    rng = np.random.default_rng(seed)
    F = 1.0 + 0.1 * rng.standard_normal(R)
    P = 2.0 + 0.3 * rng.standard_normal(R)
    return {"err_ftp": F, "err_ptf": P, "ftp_any_active": rng.random(R) < 0.3,
            "ftp_frac_active": rng.random(R) * 0.5, "ptf_active": rng.random(R) < 0.6}


def test_summarize_is_the_means_standard_errors_and_delta_method_interval():
    d = _per_rep(50)
    F, P = d["err_ftp"], d["err_ptf"]
    out = summarize(d)
    # 50 positive errors summed in any order: means to γ_R, standard errors to γ_{R+8}, ratios to
    # γ_{2R+2}; the standard deviation of F/F̄ − P/P̄ to γ_{R+8} of the mean of |F/F̄| + |P/P̄| over it
    R = 50
    assert out["err_ftp"] == pytest.approx(F.mean(), rel=gamma(R), abs=0)
    assert out["se_ptf"] == pytest.approx(P.std(ddof=1) / math.sqrt(50), rel=gamma(R + 8), abs=0)
    ratio = F.mean() / P.mean()
    diff = F / F.mean() - P / P.mean()
    se_log = np.std(diff, ddof=1) / math.sqrt(50)
    rel_se = gamma(R + 8) * np.mean(np.abs(F / F.mean()) + np.abs(P / P.mean())) / np.std(diff, ddof=1)
    assert out["ratio"] == pytest.approx(ratio, rel=gamma(2 * R + 2), abs=0)
    assert out["se_log_ratio"] == pytest.approx(se_log, rel=rel_se, abs=0)
    rel_ci = gamma(2 * R + 8) + Z95 * se_log * rel_se
    assert out["ratio_lo"] == pytest.approx(ratio * math.exp(-Z95 * se_log), rel=rel_ci, abs=0)
    assert out["ratio_hi"] == pytest.approx(ratio * math.exp(Z95 * se_log), rel=rel_ci, abs=0)
    p = d["ftp_any_active"].mean()
    assert out["p_ftp_active"] == p and out["se_p_ftp_active"] == proportion_se(p, 50)
    assert out["p_ftp_active_curves"] == pytest.approx(d["ftp_frac_active"].mean(), rel=gamma(50), abs=0)
    assert all(isinstance(v, float) for v in out.values())


def test_summarize_needs_two_repetitions():
    with pytest.raises(ValueError, match="at least 2 repetitions"):
        summarize(_per_rep(1))


@pytest.mark.parametrize("R", [2, 7, 15, 100, 129, 1000])
def test_summarize_many_is_summarize_bit_for_bit(R):
    """A study's table is tabulated from stacked repetitions (one reduction per row of a
    (settings, R) array); every value is exactly what summarize gives for the setting alone."""
    per = [_per_rep(R, seed) for seed in range(5)]
    per[1]["err_ftp"] = per[1]["err_ftp"] * 1e-12  # magnitudes far apart change no order of summation
    many = tabulate.summarize_many(per)
    for i, d in enumerate(per):
        for k, v in summarize(d).items():
            assert many[k][i] == v, (k, i)
    with pytest.raises(ValueError, match="same number of repetitions"):
        tabulate.summarize_many([_per_rep(3), _per_rep(4)])
    with pytest.raises(ValueError, match="at least 2 repetitions"):
        tabulate.summarize_many([_per_rep(1)])


def test_concat_chunks_joins_consecutive_chunks_in_order():
    a, b = _per_rep(3, 1), _per_rep(4, 2)
    out = concat_chunks([a, b])
    assert set(out) == set(a)
    np.testing.assert_array_equal(out["err_ftp"], np.concatenate([a["err_ftp"], b["err_ftp"]]))


def test_frame_has_the_result_columns_and_the_run_in_its_metadata():
    settings = (Setting("legendre", n=8, T=20, m=3, mu=1.0, sigma0=0.0, radius_rule="B"),
                Setting("legendre", n=16, T=20, m=3, mu=1.0, sigma0=0.0, radius_rule="B"))
    study = Study("tiny", settings, title="A tiny study", source="here")
    per = {s.canonical(): _per_rep(10, k) for k, s in enumerate(settings)}
    df = tabulate.frame(study, per, 10, 3, "2026-01-01T00:00:00+00:00")
    assert list(df.columns) == tabulate.RESULT_COLUMNS and len(df) == 2
    assert df["n"].tolist() == [8, 16] and set(df["study"]) == {"tiny"} and set(df["seed"]) == {3}
    assert df["err_ftp"].iloc[1] == summarize(per[settings[1].canonical()])["err_ftp"]
    meta = df.attrs["dpfda"]
    assert meta["study"] == "tiny" and meta["reps"] == 10 and meta["settings"] == 2
    assert meta["started"] == "2026-01-01T00:00:00+00:00" and meta["ci_method"] == tabulate.CI_METHOD
    assert meta["dpfda_version"] == dpfda.__version__ and meta["laws"] == ["default"]


def test_bias_variance_splits_the_error_and_gives_standard_errors():
    rng = np.random.default_rng(5)
    geom = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)).at(dpfda.uniform_grid(4))
    target = np.array([0.3, -0.2, 0.1, 0.0])
    bias = np.array([0.05, 0.0, -0.02, 0.01])
    R = 20_000
    coef = target + bias + 0.1 * rng.standard_normal((R, 4))
    d = bias_variance(coef, target, geom)
    Q = geom.Phi.T @ geom.Phi / geom.T
    # the decomposition reproduces the mean error exactly
    # sums of R quadratic forms in Q (γ_{R+2T+16} of their absolute forms |v|ᵀ|Φ|ᵀ|Φ||v|/T, amp times
    # the forms); the split itself is exact
    v = coef - target
    amp = np.mean(np.abs(v) @ (np.abs(geom.Phi).T @ np.abs(geom.Phi) / geom.T) * np.abs(v)) / np.mean((v @ Q) * v)
    assert np.isclose(d["bias2"] + d["var"] * R / (R - 1), geom.error(coef, target).mean(),
                      rtol=gamma(R + 2 * geom.T + 16) * amp, atol=0)
    # ... and estimates the truth within its standard errors
    se_b = d["bias2_if"].std(ddof=1) / np.sqrt(R)
    se_v = d["var_if"].std(ddof=1) / np.sqrt(R)
    assert abs(d["bias2"] - bias @ Q @ bias) <= 4 * se_b
    assert abs(d["var"] - 0.01 * np.trace(Q)) <= 4 * se_v
    with pytest.raises(ValueError, match="coef"):
        bias_variance(coef[:1], target, geom)
    with pytest.raises(ValueError, match="target"):
        bias_variance(coef, target[:3], geom)
    with pytest.raises(ValueError, match="finite"):
        bias_variance(np.full((3, 4), np.nan), target, geom)
