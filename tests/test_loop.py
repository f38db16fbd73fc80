"""The one simulation loop (dpfda.simulation.engine.simulate_mechanisms) and its one rule for the draws.

The pins below were computed on the tree before the loops of the engine, the
designs and the audit were joined into one (commit e4d82aa): they hold the
published numbers to bit identity.  benchmarks/chunk_outputs.py compares every
chunk of the paper's settings the same way.
"""

import hashlib

import numpy as np
import pytest

import dpfda
from dpfda.simulation import engine, seeding
from dpfda.simulation.design_runs import simulate_designs
from dpfda.simulation.studies import Setting, get_study, paper_studies
from dpfda.trust import audit as A


def _h(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(a)).tobytes()).hexdigest()[:16]


def test_draw_normals_per_repetition_streams_draw_noise_then_blocks():
    F = np.arange(6.0).reshape(2, 3)
    key = (3, 4)
    X, (z1, z2) = engine.draw_normals((seeding.generator(key, 1, r) for r in range(4)), 4, (2, 5),
                                      F=F, sigma0=0.5)
    for r in range(4):
        g = seeding.generator(key, 1, r)
        np.testing.assert_array_equal(X[r], F + 0.5 * g.standard_normal((2, 3)))
        np.testing.assert_array_equal(z1[r], g.standard_normal(2))
        np.testing.assert_array_equal(z2[r], g.standard_normal(5))
    X, (z1,) = engine.draw_normals((seeding.generator(key, 1, r) for r in range(2)), 2, (3,), F=F)
    assert X is None  # σ₀ = 0: no observation noise is drawn
    np.testing.assert_array_equal(z1[1], seeding.generator(key, 1, 1).standard_normal(3))


def test_draw_normals_one_stream_draws_all_noise_then_each_block():
    F = np.ones((2, 3))
    X, (z1, z2) = engine.draw_normals(np.random.default_rng(5), 4, (2, 5), F=F, sigma0=2.0)
    g = np.random.default_rng(5)
    np.testing.assert_array_equal(X, F + 2.0 * g.standard_normal((4, 2, 3)))
    np.testing.assert_array_equal(z1, g.standard_normal((4, 2)))
    np.testing.assert_array_equal(z2, g.standard_normal((4, 5)))


def test_draw_normals_needs_one_stream_a_repetition():
    with pytest.raises(ValueError):
        engine.draw_normals([np.random.default_rng(0)] * 2, 3, (2,))


def test_mechanisms_sharing_a_block_see_the_same_normals():
    from dpfda.mechanisms.mechanism import ftp_mechanism

    grid, space = dpfda.uniform_grid(5), dpfda.LegendreSpace(3)
    mech = ftp_mechanism(grid, space, 1.0, 1.0)
    F = np.zeros((4, 5))

    def coef(rel, parts, c):
        return {"coef": rel.coef}

    arms = [engine.Arm(name, mech, "s", block, coef) for name, block in (("a", 0), ("b", 0), ("c", 1))]
    out = engine.simulate_mechanisms(arms, np.random.default_rng(1), 3, (3, 3), n=4, F=F, sigma0=1.0,
                                     summarize=lambda X: {"s": mech.summary(X, exact=False)})
    np.testing.assert_array_equal(out["a"]["coef"], out["b"]["coef"])
    assert not np.array_equal(out["a"]["coef"], out["c"]["coef"])
    # the loop's release is the mechanism's: summary + σZ with the block's normals
    g = np.random.default_rng(1)
    X = F + g.standard_normal((3, 4, 5))
    z = g.standard_normal((3, 3))
    np.testing.assert_array_equal(out["a"]["coef"], mech.privatize(mech.summary(X, exact=False), z, 4).coef)


def test_repeat_releases_are_the_pipelines_releases():
    grid, space = dpfda.uniform_grid(6), dpfda.KernelSpace(dpfda.gaussian_kernel(0.3))
    F = np.random.default_rng(2).standard_normal((9, 6))
    target = np.zeros(6)
    for pipe in (dpfda.ftp, dpfda.ptf):
        errs, _ = engine.repeat_releases(pipe, F, grid, space, 1.0, 1.0, 5, target, np.random.default_rng(3),
                                         chunk=2 * 9 * 6)
        rng = np.random.default_rng(3)
        ref = np.concatenate([pipe(np.broadcast_to(F, (k, 9, 6)), grid, space, 1.0, 1.0, rng).error(target)
                              for k in (2, 2, 1)])
        np.testing.assert_array_equal(errs, ref)
    with pytest.raises(TypeError, match="pipeline"):
        engine.repeat_releases(len, F, grid, space, 1.0, 1.0, 5, target, np.random.default_rng(3))


# Fingerprints from the tree before the loops were joined (e4d82aa).
ENGINE_PINS = {
    ("fig4", 0): {"err_ftp": "1c06a96e3d3037e2", "err_ptf": "08ba32ce5ed11f6b", "ftp_any_active": "b0f66adc83641586",
                  "ftp_frac_active": "17b0761f87b081d5", "ptf_active": "dfea2964b5deedea",
                  "coef_ftp": "d9cc1c05c9fa6fff", "coef_ptf": "73058fd6b9aa98a6"},
    ("fig2", 0): {"err_ftp": "d8ce43762a86ca64", "err_ptf": "9a691452a7cc6c86", "ftp_any_active": "dfea2964b5deedea",
                  "ftp_frac_active": "961e76f1c44f5ce8", "ptf_active": "52217da89de80270",
                  "coef_ftp": "87c129082629dd19", "coef_ptf": "5049b4f3eeb7983f"},
}


@pytest.mark.parametrize("case", sorted(ENGINE_PINS))
def test_engine_chunks_are_those_published(case):
    study, i = case
    s = (get_study(study) if study != "fig2" else paper_studies()["fig2"]).settings[i]
    out = engine.simulate_chunk(s, 7, 3, 9, keep_releases=True)
    assert {k: _h(v) for k, v in out.items()} == ENGINE_PINS[case]


DESIGN_PINS = {
    0.0: {"PTF": ("9808ab1ba79fb168", "0679246d6c4216de"), "mix": ("64ed0c25fcefc454", "0679246d6c4216de"),
          "FTP": ("990ff137e5063f8b", "5cc7f71eb464de4b"), "ball": ("0e8d2bd3eff4c514", "0679246d6c4216de")},
    1.0: {"PTF": ("f6699674f842f3c8", "0679246d6c4216de"), "mix": ("7340833e803e72c8", "0679246d6c4216de"),
          "FTP": ("e1b66b6b592362a5", "0679246d6c4216de"), "ball": ("7015303d83e98614", "96af7e21333d4a0e")},
}


def _design_specs():
    import inspect

    from dpfda.mechanisms.designs import Design

    params = inspect.signature(Design).parameters
    key = "set" if "set" in params else "region"
    return {"PTF": {key: "box"}, "mix": {key: "mix", "lam": 0.5},
            "FTP": {key: "ellipsoid", "noise": "ellipsoid", "fit": "none"}, "ball": {key: "ball"}}


@pytest.mark.parametrize("sigma0", sorted(DESIGN_PINS))
def test_design_simulations_are_those_published(sigma0):
    s = Setting(family="kernel", n=16, T=8, mu=1.0, sigma0=sigma0, radius_rule="1.1B" if sigma0 == 0 else "log_n")
    out = simulate_designs(s, _design_specs(), 30, 2026, chunk_values=16 * 8 * 7)  # five chunks
    assert {k: (_h(v["err"]), _h(v["free"])) for k, v in out.items()} == DESIGN_PINS[sigma0]


def test_audit_draws_are_those_published():
    space, grid = dpfda.LegendreSpace(3), dpfda.uniform_grid(10)
    X0, X1 = A.worst_case_pair(space, grid, 1.0, 8)
    pins = {"ftp": ("87eb15a6b05cedfd", "d71d684e8e50054d", 0.31274401639277216),
            "ptf": ("a318d3ccd7836796", "5ea5b663434ed6c6", 0.0)}
    for name, mech in (("ftp", A.ftp_mechanism(grid, space, 1.0, 1.0, n=8)),
                       ("ptf", A.ptf_mechanism(grid, space, 1.0, 1.0, n=8))):
        res = A.audit(mech, X0, X1, draws=200, rng=np.random.default_rng(9), chunk=70)
        assert (_h(res.scores0), _h(res.scores1), res.mu_lower) == pins[name]


def test_noiseless_ftp_error_matches_theorem_10():
    """σ₀ = 0 and B' > B: FTP's IMSE is σ²·m in expectation (Theorem 10), through the loop."""
    from dpfda.mechanisms.pipelines import ftp_sigma
    from dpfda.report import evidence as ev

    s = Setting(family="legendre", n=50, T=10, m=3, mu=1.0, sigma0=0.0, radius_rule="1.1B")
    per = engine.simulate_setting(s, 400, seed=7)
    exact = ftp_sigma(s.n, s.radius, s.mu) ** 2 * 3
    se = per["err_ftp"].std(ddof=1) / np.sqrt(400)
    assert ev.within(per["err_ftp"].mean(), se, exact)
    assert not per["ftp_any_active"].any()
