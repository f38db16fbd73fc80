"""The Monte Carlo engine (the studies are checked in test_studies.py, their streams in test_seeding.py).

* One engine repetition *is* the published algorithms: it equals calling
  ``observe`` and the stage functions of ``dpfda.ftp`` and ``dpfda.ptf`` (with
  the engine's fast sums, ``exact=False``) on that repetition's data with a
  generator in the same state, bit for bit, and both pipelines see the same X;
  the public releases, which sum exactly, agree with it within the
  proven rounding of the two sums.
* Results are bit-identical for any chunk size and any number of workers
  (the Dask backend is checked in test_dask.py).
* The summaries (standard errors, the delta-method ratio interval) are what
  their docstrings say, and the noiseless FTP error matches Theorems 10/13.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import dpfda
from dpfda.maths.rounding import solve_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import theory
from dpfda.mechanisms.pipelines import (
    add_noise,
    ftp_fit_mean,
    ftp_privatize,
    ptf_clipped_mean,
    ptf_default_clip,
    ptf_default_weights,
    ptf_fit,
    ptf_sigmas,
)
from dpfda_book.simulation import engine, schedule, seeding, tabulate
from dpfda_book.simulation.models import observe
from dpfda_book.simulation.studies import (
    Setting,
    Study,
    get_study,
    kernel_study,
)

from _support import assert_mc_close, bonferroni_z

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------
# One repetition is the published algorithms
# ---------------------------------------------------------------------------

CASES = [
    Setting("legendre", n=64, T=20, m=4, mu=1.0, sigma0=1.0, radius_rule="sqrt_log_n"),
    Setting("legendre", n=32, T=20, m=6, mu=0.1, sigma0=0.0, radius_rule="1.1B"),
    Setting("kernel", n=48, T=6, mu=1.0, sigma0=10.0, radius_rule="log_n"),
    Setting("kernel", n=16, T=8, mu=0.1, sigma0=0.0, radius_rule="1.1B"),
    Setting("kernel", n=40, T=4, mu=1.0, sigma0=1.0, radius_rule="B"),
    Setting("kernel", n=24, T=6, mu=1.0, sigma0=10.0, radius_rule="log_n", kernel="matern:0.5,0.2"),
    Setting("kernel", n=16, T=8, mu=0.1, sigma0=0.0, radius_rule="1.1B", kernel="matern:2.5,0.2"),
]


U = 2.0**-53


def _err_atol(err, dc, c, t, geom):
    """How far a squared error ||c − t||² (IMSE, or grid MSE) may move when c moves by ``dc`` (in
    the coordinates' norm, which bounds the error's metric: ||Φ||₂² <= tr K = T), plus each
    evaluation's own rounding: the difference (u of |c| + |t|) and Φ times it (γ_d·√d·max a_j/√T
    of the same, for grid MSE), both at most γ_{d+2}·√d·max(1, a_j)·(||c|| + ||t||)."""
    g = gamma(geom.dim + 2) * math.sqrt(geom.dim) * max(1.0, float(np.max(geom.eval_norm))) * (
        np.linalg.norm(c, axis=-1) + np.linalg.norm(t))
    delta = dc + 2 * g
    return 2 * np.sqrt(err) * delta + delta**2


def _case_id(s: Setting) -> str:
    return f"{s.family}-T{s.T}-s{s.sigma0}" + ("" if s.kernel is None else f"-{s.kernel}")


@pytest.mark.parametrize("setting", CASES, ids=_case_id)
def test_engine_repetition_equals_public_pipelines(setting):
    """The engine is the published algorithms, stage by stage, bit for bit with its own sums.

    The engine averages with the stage functions' fast path (``exact=False``): it
    estimates errors and releases nothing, so the published numbers keep their bits.
    A public release averages exactly and rounds once (``dpfda.maths.summation``).  The two
    means differ by at most (γ_{n+1} + γ₄)·max|v| per coordinate (the ordinary sum's
    bound γ_{n−1}Σ|v_i| over n, one division, the exact mean's γ₄) plus the turn to the
    original coordinates (γ_d per coordinate); the noise is the same draw.  FTP's
    coefficients are the mean plus the noise; PTF's are the weighted ball fit of the
    noisy means, the A-norm projection of the unconstrained fit H·x̃ (nonexpansive in
    the A-norm), so they move by at most √cond(A)·||H||₂ times the noisy means' change.
    """
    seed, reps = 11, 7
    out = engine.simulate_chunk(setting, seed, 0, reps, keep_releases=True)
    curves = engine.latent_curves(setting, seed)
    grid, space = setting.grid(), setting.space
    F = curves.values(grid)
    geom = space.at(grid)
    n, d, T, radius, mu = setting.n, geom.dim, geom.T, setting.radius, setting.mu
    target = curves.mean_coef if setting.family == "legendre" else geom.coef_from_values(curves.mean_values(grid))
    clip, w = ptf_default_clip(geom, radius), ptf_default_weights(geom)
    A = geom.Phi.T @ (w[:, None] * geom.Phi)
    H = np.linalg.solve(A, geom.Phi.T * w)
    lip = math.sqrt(np.linalg.cond(A)) * np.linalg.norm(H, 2)
    any_active = []
    for r in range(reps):
        # (a) the stages with the engine's sums: bit for bit
        rng = seeding.rep_generator(setting, seed, r)
        X = observe(F, setting.sigma0, rng)  # the repetition's data, shared by both pipelines
        mean_fast, ftp_active = ftp_fit_mean(X, geom, radius, exact=False)
        a = ftp_privatize(mean_fast, geom, radius, mu, n, rng)
        xbar_fast = ptf_clipped_mean(X, clip, exact=False)
        b = ptf_fit(add_noise(xbar_fast, ptf_sigmas(n, clip, mu), rng.standard_normal(T)), geom, radius, w)
        np.testing.assert_array_equal(out["coef_ftp"][r], a.coef)
        np.testing.assert_array_equal(out["coef_ptf"][r], b.coef)
        assert out["err_ftp"][r] == a.error(target)
        assert out["err_ptf"][r] == geom.error(b.coef, target)
        assert out["ptf_active"][r] == b.active
        # which curves hit the ball is a simulation diagnostic, from the stage function
        assert out["ftp_any_active"][r] == ftp_active.any()
        assert out["ftp_frac_active"][r] == ftp_active.mean()
        # (b) the public releases, exact sums: within the proven rounding of the two sums
        rng = seeding.rep_generator(setting, seed, r)
        X = observe(F, setting.sigma0, rng)
        f = dpfda.ftp(X, grid, space, radius, mu, rng)
        p = dpfda.ptf(X, grid, space, radius, mu, rng)
        assert f.active is None  # a release carries no per-curve flag
        tol_ftp = (2 * (n + 1) + 8 + 2 * d) * U * radius * math.sqrt(d)
        assert np.linalg.norm(f.coef - out["coef_ftp"][r]) <= tol_ftp
        tol_means = np.linalg.norm((2 * (n + 1) + 10) * U * (clip + np.abs(p.noisy_means)))
        assert np.linalg.norm(p.coef - out["coef_ptf"][r]) <= lip * tol_means
        err_f, err_p = out["err_ftp"][r], out["err_ptf"][r]
        assert f.error(target) == pytest.approx(err_f, rel=0, abs=_err_atol(err_f, tol_ftp, f.coef, target, geom))
        dp = lip * tol_means
        assert p.error(target) == pytest.approx(err_p, rel=0, abs=_err_atol(err_p, dp, p.coef, target, geom))
        any_active.append(bool(ftp_active.any()) or bool(p.active))
    if setting.sigma0 == 10.0:
        assert all(any_active)  # the constrained branch of the fit was exercised


@pytest.mark.parametrize("setting", [s for s in CASES if s.family == "kernel"], ids=_case_id)
def test_the_latent_curves_of_a_kernel_setting_live_in_its_own_rkhs(setting):
    """Sections of the setting's kernel at 20 equally spaced centres, each of norm at most B in that RKHS.

    The kernel is recomputed from its closed form (Matérn: exp(−a)·(1 + a + a²/3) and its
    kin; Gaussian: eq. 1), not read from the curves.  The norms are B·U_i with U_i uniform
    on (0, 1), so they lie strictly inside the ball.
    """
    curves = engine.latent_curves(setting, 5)
    kernel = setting.space.kernel
    assert curves.kernel == kernel and curves.centers.size == setting.centers == 20
    np.testing.assert_array_equal(curves.centers, np.linspace(0.0, 1.0, 20))
    r = np.abs(curves.centers[:, None] - setting.grid()[None, :])
    if kernel.family == "gaussian":
        a = r**2 / (2 * setting.rho**2)
        gram = np.exp(-a)
    else:
        a = math.sqrt(2 * kernel.nu) * r / kernel.rho
        poly = {0.5: 1.0, 1.5: 1.0 + a, 2.5: 1.0 + a + a**2 / 3}[kernel.nu]
        gram = poly * np.exp(-a)
    # Rounding, not an agreement found by trying: each side sums 20 products (γ_20 ≈ 20u);
    # the exponent a is computed in another order (relative 4u, so exp(−a) moves by 4a·u more
    # than its own u), the polynomial and the product a few u: (48 + 4 max a)·u·Σ|α_k g_k|.
    u = 2.0**-53
    values = curves.alpha @ gram
    bound = (48 + 4 * float(a.max())) * u * (np.abs(curves.alpha) @ np.abs(gram))
    assert np.all(np.abs(curves.values(setting.grid()) - values) <= bound)
    norms = curves.norms()
    assert np.all(norms > 0) and np.all(norms <= setting.B * (1 + 1e-12))


def test_engine_error_is_against_the_sample_mean_of_the_latent_curves():
    s = CASES[0]
    curves = engine.latent_curves(s, 3)
    assert curves.theta.shape == (s.n, s.m)
    out = engine.simulate_chunk(s, 3, 0, 4, keep_releases=True)
    # the same differences, squared and summed, perhaps in another order: γ_m of a sum of squares
    np.testing.assert_allclose(out["err_ftp"], np.sum((out["coef_ftp"] - curves.theta.mean(0)) ** 2, -1),
                               rtol=gamma(s.m), atol=0)
    r = CASES[4]
    rc = engine.latent_curves(r, 3)
    o = engine.simulate_chunk(r, 3, 0, 4, keep_releases=True)
    geom = r.geometry()
    fbar = rc.values(geom.grid).mean(0)
    # the engine measures against t = Φ⁺f̄ (a least-squares solve: Φt within ||Φ||·solve_rtol·||t|| of
    # f̄) and rounds Φ(c − t); here Φc − f̄: γ_{d+1} of |c|·|Φ| and |t|·|Φ| per point
    t = geom.coef_from_values(fbar)
    dv = (gamma(geom.dim + 1) * (np.abs(o["coef_ptf"]) + np.abs(t)) @ np.abs(geom.Phi.T)
          + np.linalg.norm(geom.Phi, 2) * solve_rtol(geom.Phi.T @ geom.Phi, geom.T + geom.dim) * np.linalg.norm(t))
    delta = np.sqrt(np.mean(dv**2, axis=-1))
    bound = 2 * np.sqrt(o["err_ptf"]) * delta + delta**2
    assert np.all(np.abs(o["err_ptf"] - np.mean((o["coef_ptf"] @ geom.Phi.T - fbar) ** 2, -1)) <= bound)


# ---------------------------------------------------------------------------
# Bit-identical for any chunking and any number of workers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("setting", CASES[::2], ids=lambda s: f"{s.family}-T{s.T}-s{s.sigma0}")
def test_results_do_not_depend_on_chunk_size(setting):
    ref = engine.simulate_setting(setting, 23, seed=2, keep_releases=True)
    for chunk in (1, 2, 5, 23, 100):
        other = engine.simulate_setting(setting, 23, seed=2, chunk_reps=chunk, keep_releases=True)
        for k in ref:
            np.testing.assert_array_equal(ref[k], other[k], err_msg=f"{k}, chunk_reps={chunk}")


def _small_study():
    fig3 = get_study("fig3").subset(n=[16, 256], T=[2, 8])
    fig5 = get_study("fig5").subset(n=[8, 128])
    return Study("small", fig3.settings + fig5.settings)


def test_parallel_and_chunked_runs_are_identical_to_serial():
    study = _small_study()
    serial = schedule.run_study(study, 12, seed=9)
    chunked = schedule.run_study(study, 12, seed=9, chunk_reps=5)
    parallel = schedule.run_study(study, 12, seed=9, n_jobs=2, chunk_reps=4)
    pd.testing.assert_frame_equal(serial, chunked, check_exact=True)
    pd.testing.assert_frame_equal(serial, parallel, check_exact=True)
    other_seed = schedule.run_study(study, 12, seed=10)
    assert not np.array_equal(serial["err_ftp"], other_seed["err_ftp"])


def test_shared_settings_get_the_same_numbers_in_every_study():
    fig1 = get_study("fig1").subset(n=[4, 32])
    table = get_study("table1").subset(n=[4, 32])
    res = schedule.run_studies([fig1, table], 10, seed=1)
    cols = ["err_ftp", "err_ptf", "ratio", "p_ptf_active"]
    pd.testing.assert_frame_equal(res["fig1"][cols], res["table1"][cols], check_exact=True)
    alone = schedule.run_study(table, 10, seed=1)
    pd.testing.assert_frame_equal(alone[cols], res["table1"][cols], check_exact=True)


# ---------------------------------------------------------------------------
# The laws of a setting: common random numbers, drawn once
# ---------------------------------------------------------------------------

LAW_CASES = ("default", "shift-0", "wave-0.9", "shift-0.5")


@pytest.mark.parametrize("setting", CASES, ids=lambda s: f"{s.family}-T{s.T}-s{s.sigma0}")
def test_the_laws_of_a_setting_run_together_exactly_as_alone(setting):
    """simulate_laws draws a repetition's noise once for all laws and gives each law, bit for
    bit, what simulate_chunk gives it alone; the laws share the noise (common random numbers)
    and differ in their latent curves."""
    laws = [replace(setting, law=law) for law in LAW_CASES]
    together = engine.simulate_laws(laws, 5, 3, 11, keep_releases=True)
    assert len(together) == len(laws)
    for s, out in zip(laws, together):
        alone = engine.simulate_chunk(s, 5, 3, 11, keep_releases=True)
        assert out.keys() == alone.keys()
        for k in alone:
            np.testing.assert_array_equal(out[k], alone[k], err_msg=f"{s.law}: {k}")
    gens = [seeding.rep_generator(s, 5, 3) for s in laws]
    first = [g.standard_normal(4) for g in gens]
    assert all(np.array_equal(first[0], f) for f in first[1:])  # the same noise for every law
    curves = [engine.latent_curves(s, 5) for s in laws]
    coords = [c.theta if setting.family == "legendre" else c.alpha for c in curves]
    assert not any(np.array_equal(coords[0], c) for c in coords[1:])  # each law its own curves
    assert not np.array_equal(together[0]["coef_ftp"], together[2]["coef_ftp"])


def test_simulate_laws_refuses_settings_that_differ_in_more_than_their_law():
    a = CASES[0]
    with pytest.raises(ValueError, match="differ only in their latent law"):
        engine.simulate_laws([a, replace(a, mu=0.5, law="wave-0.5")], 1, 0, 3)
    with pytest.raises(TypeError, match="non-empty sequence of Setting"):
        engine.simulate_laws([], 1, 0, 3)
    with pytest.raises(ValueError, match="start < stop"):
        engine.simulate_laws([a, replace(a, law="shift-0")], 1, 3, 3)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_run_of_several_laws_is_one_task_per_chunk_and_the_numbers_of_each_law_alone(n_jobs, tmp_path,
                                                                                      monkeypatch):
    """plan() groups the laws of a setting into one task (the first law's key, members() all of
    them); run_studies gives every law the table it gets run alone, with the results store
    off and on."""
    from dpfda_book.simulation import store

    laws = ("default", "wave-0.75", "shift-0.25")
    base = _small_study().subset(n=[16]).settings
    studies = [Study(f"s_{i}", tuple(replace(x, law=law) for x in base)) for i, law in enumerate(laws)]
    settings, tasks = schedule.plan(studies, 12, chunk_reps=5)
    per_law = len(studies[0].settings)
    assert len(settings) == per_law * len(laws)
    assert len(tasks) == per_law * 3  # chunks of 5, 5 and 2 repetitions, each for all three laws
    yielded = {k for k, _, _ in tasks}
    assert len(yielded) == per_law
    for k in yielded:
        assert [settings[m].law for m in tasks.members(k)] == list(laws)
    together = schedule.run_studies(studies, 12, seed=4, n_jobs=n_jobs, chunk_reps=5)
    monkeypatch.setenv("DPFDA_STORE", str(tmp_path / "store"))
    stored = store.run_studies(studies, 12, seed=4, n_jobs=n_jobs, chunk_reps=5)
    monkeypatch.delenv("DPFDA_STORE")
    cols = ["err_ftp", "err_ptf", "ratio", "p_ptf_active", "p_ftp_active"]
    for st in studies:
        alone = schedule.run_study(st, 12, seed=4, chunk_reps=5)
        pd.testing.assert_frame_equal(together[st.name][cols], alone[cols], check_exact=True)
        pd.testing.assert_frame_equal(stored[st.name][cols], alone[cols], check_exact=True)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_each_study_is_handed_on_as_soon_as_it_is_done(n_jobs):
    """on_study: once per study, with the table run_studies returns, while later studies
    still have work left (the tasks come study by study); an exception from it stops the run."""
    studies = [get_study("fig1").subset(n=[4, 8]), get_study("fig5").subset(n=[4, 8]),
               get_study("table1").subset(n=[4, 8])]
    settings, tasks = schedule.plan(studies, 6, chunk_reps=2)
    first = {}
    for key in settings:
        first[key] = next(i for i, st in enumerate(studies) if key in {s.canonical() for s in st.settings})
    assert [first[k] for k, _, _ in tasks] == sorted(first[k] for k, _, _ in tasks)
    seen, chunks = [], []
    res = schedule.run_studies(studies, 6, seed=3, n_jobs=n_jobs, chunk_reps=2,
                             on_chunk=lambda: chunks.append(1),
                             on_study=lambda name, df: seen.append((name, len(chunks), df)))
    assert [name for name, _, _ in seen] == ["fig1", "table1", "fig5"]  # table1 = fig1's settings
    if n_jobs == 1:  # fig1 is handed on with its own last chunk, before any of fig5's has run
        fig1_tasks = sum(first[k] == 0 for k, _, _ in tasks)
        assert seen[0][1] == seen[1][1] == fig1_tasks - 1 < len(tasks) - 1
    for name, _, df in seen:
        pd.testing.assert_frame_equal(df, res[name], check_exact=True)

    def fail(name, df):
        raise RuntimeError(f"stop after {name}")

    with pytest.raises(RuntimeError, match="stop after fig1"):
        schedule.run_studies(studies, 6, seed=3, n_jobs=n_jobs, chunk_reps=2, on_study=fail)
    with pytest.raises(TypeError, match="on_study"):
        schedule.run_studies(studies, 6, seed=3, on_study="draw")


def test_chunks_respect_the_memory_budget():
    big = get_study("fig6").subset(n=4096, m=8, sigma0=10.0).settings[0]
    size = engine.chunk_size(big, None)
    assert size * big.n * big.T * 8 <= engine.CHUNK_BYTES
    settings, tasks = schedule.plan([get_study("fig6")], 1000)
    assert len(settings) == 132
    by_setting = {}
    for key, a, b in tasks:
        by_setting.setdefault(key, []).append((a, b))
    for key, spans in by_setting.items():
        spans.sort()
        assert spans[0][0] == 0 and spans[-1][1] == 1000
        assert all(b1 == a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))  # a partition of 0..999
        s = settings[key]
        assert all((b - a) * s.n * s.T * 8 <= max(engine.CHUNK_BYTES, s.n * s.T * 8) for a, b in spans)


# ---------------------------------------------------------------------------
# The results table
# ---------------------------------------------------------------------------


def test_result_table_columns_and_summaries():
    study = get_study("fig2").subset(n=[16, 64])
    df = schedule.run_study(study, 40, seed=4)
    assert list(df.columns) == tabulate.RESULT_COLUMNS
    assert len(df) == len(study) and (df["metric"] == "MSE").all() and (df["reps"] == 40).all()
    assert df["m"].isna().all()
    meta = df.attrs["dpfda"]
    assert meta["reps"] == 40 and meta["seed"] == 4 and "delta method" in meta["ci_method"]
    # Recompute one row by hand from the per-repetition errors.
    row = df.iloc[3]
    s = study.settings[3]
    per = engine.simulate_setting(s, 40, seed=4)
    F, P = per["err_ftp"], per["err_ptf"]
    # the same 40 positive errors, summed in any order: means to γ_R, standard errors to γ_{R+8} (the
    # mean's rounding enters the squared deviations at second order), ratios to γ_{2R+2}
    R = 40
    assert row["err_ftp"] == pytest.approx(F.mean(), rel=gamma(R), abs=0)
    assert row["se_ftp"] == pytest.approx(F.std(ddof=1) / math.sqrt(40), rel=gamma(R + 8), abs=0)
    assert row["se_ptf"] == pytest.approx(P.std(ddof=1) / math.sqrt(40), rel=gamma(R + 8), abs=0)
    ratio = F.mean() / P.mean()
    # Delta method for g(a, b) = log a - log b at the sample means, with the sample covariance.
    C = np.cov(np.vstack([F, P]), ddof=1)
    grad = np.array([1 / F.mean(), -1 / P.mean()])
    se_log = math.sqrt(grad @ C @ grad / 40)
    # gᵀCg rounds by γ_{R+8} of |g|ᵀ|C||g|, which the covariance term can cancel against: relative to
    # gᵀCg that is amp, and the root halves it
    rel_se = gamma(R + 8) * (np.abs(grad) @ np.abs(C) @ np.abs(grad)) / (grad @ C @ grad)
    assert row["ratio"] == pytest.approx(ratio, rel=gamma(2 * R + 2), abs=0)
    assert row["se_log_ratio"] == pytest.approx(se_log, rel=rel_se, abs=0)
    rel_ci = gamma(2 * R + 8) + 1.96 * se_log * rel_se  # the ratio, z·se_log's error, the exponential
    assert row["ratio_lo"] == pytest.approx(ratio * math.exp(-1.959963984540054 * se_log), rel=rel_ci, abs=0)
    assert row["ratio_hi"] == pytest.approx(ratio * math.exp(1.959963984540054 * se_log), rel=rel_ci, abs=0)
    assert row["p_ptf_active"] == pytest.approx(per["ptf_active"].mean(), rel=gamma(1), abs=0)  # count/R
    assert 0 <= row["p_ftp_active_curves"] <= row["p_ftp_active"] <= 1
    poly = schedule.run_study(get_study("fig4").subset(n=8, m=[2, 4], mu=1.0), 5, seed=1)
    assert (poly["metric"] == "IMSE").all() and list(poly["m"]) == [2, 4]


def test_noiseless_ftp_error_matches_theorems_10_and_13():
    """σ₀ = 0, B' = 1.1 > B: no curve's fit is ever shrunk and E[error] = σ²·(m or tr K_T/T)."""
    settings = [get_study("fig1").subset(n=64, T=6, mu=1.0).settings[0],
                get_study("fig4").subset(n=128, m=8, mu=0.1).settings[0],
                kernel_study(kernels="matern:0.5,0.2").subset(n=64, T=8, mu=1.0).settings[0]]
    z = bonferroni_z(len(settings))
    for s in settings:
        per = engine.simulate_setting(s, 400, seed=8)
        assert not per["ftp_any_active"].any()
        exact = theory.ftp_noiseless_error(s.geometry(), s.radius, s.n, s.mu)
        assert_mc_close(per["err_ftp"], exact, z=z, what=f"FTP error {s.family}")


def test_bad_arguments_are_rejected():
    study = _small_study()
    for reps, exc in [(1, ValueError), (0, ValueError), (-5, ValueError), (2.5, TypeError)]:
        with pytest.raises(exc, match="reps"):
            schedule.run_study(study, reps, seed=1)
    with pytest.raises(ValueError, match="n_jobs"):
        schedule.run_study(study, 5, seed=1, n_jobs=0)
    with pytest.raises(ValueError, match="seed"):
        schedule.run_study(study, 5, seed=-1)
    with pytest.raises(ValueError, match="chunk_reps"):
        schedule.run_study(study, 5, seed=1, chunk_reps=0)
    with pytest.raises(TypeError, match="study"):
        schedule.run_study("fig1", 5, seed=1)


@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_repeat_releases_matches_a_loop_and_reads_activity_from_the_stages(method):
    pipeline = getattr(dpfda, method)
    grid, space = dpfda.uniform_grid(6), dpfda.LegendreSpace(3)
    geom = space.at(grid)
    F = 2.0 * np.random.default_rng(1).standard_normal((9, 6))  # some curves outside the ball
    target = np.zeros(3)
    errs, act = engine.repeat_releases(pipeline, F, grid, space, 1.0, 1.0, 5, target,
                                       np.random.default_rng(2), chunk=2 * 9 * 6)
    rng = np.random.default_rng(2)
    ref_e, ref_a = [], []
    for k in (2, 2, 1):  # the chunks of at most 2 repetitions
        rel = pipeline(np.broadcast_to(F, (k, 9, 6)), grid, space, 1.0, 1.0, rng)
        ref_e.append(rel.error(target))
        flag = rel.active if method == "ptf" else ftp_fit_mean(F, geom, 1.0)[1].any()
        ref_a.append(np.broadcast_to(flag, (k,)))
    np.testing.assert_array_equal(errs, np.concatenate(ref_e))
    np.testing.assert_array_equal(act, np.concatenate(ref_a))
    if method == "ftp":
        assert act.all()  # noiseless data outside the ball: every repetition binds
    X = F + 0.1 * np.random.default_rng(3).standard_normal((4, 9, 6))
    errs3, act3 = engine.repeat_releases(pipeline, X, grid, space, 1.0, 1.0, 4, target,
                                         np.random.default_rng(4))
    assert errs3.shape == act3.shape == (4,)
