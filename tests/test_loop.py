"""The one simulation loop (dpfda_book.simulation.engine.simulate_mechanisms) and its one rule for the draws.

What the published numbers rest on is checked under the determinism contract
(the README's "Determinism", :mod:`dpfda_book.simulation.engine`): bit identity
between two runs made here (a chunk against the same repetitions in two
chunks, a design alone against it among others, an audit in chunks of 70
against one chunk), and agreement with stored values across machines to the
rounding bound of each stored number (``machine_atol``).  The stored values are those of the tree before the loops of
the engine, the designs and the audit were joined into one (commit e4d82aa);
their last bits depend on the BLAS kernels' order of summation, so they are
compared with a tolerance, never bit for bit.  benchmarks/chunk_outputs.py
fingerprints every chunk of the paper's settings for before/after comparisons
on one machine.
"""

import numpy as np
import pytest

import dpfda
from dpfda.maths.rounding import fit_rtol, pair_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.pipelines import ptf_default_clip, ptf_default_weights, ptf_sigmas
from dpfda.trust import audit as A
from dpfda_book.mechanisms.designs import Design
from dpfda_book.simulation import engine, seeding
from dpfda_book.simulation.design_runs import simulate_designs
from dpfda_book.simulation.studies import Setting, get_study, paper_studies

from _support import machine_atol


def _same_bits(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _close(value, stored, what: str, atol: float) -> None:
    """``value`` agrees with ``stored`` to ``atol``, the two machines' rounding bound (machine_atol)."""
    np.testing.assert_allclose(value, np.asarray(stored, dtype=float), rtol=0, atol=atol, err_msg=what)


def _setting_eps(s: Setting) -> float:
    """Relative rounding bound of one repetition's released coordinates in setting ``s``, against
    their magnitude (at least B'): FTP's fits through ΦᵀΦ of curves B·||Φ|| + σ₀(√T + 9) in size
    and PTF's through ΦᵀWΦ of means with noise σ_j(√T + 9) added (fit_rtol with that data_ratio
    against B'; ||z|| <= √T + 9 but with probability e^-40), the means (γ₄), the noise's
    addition and the error's own arithmetic (γ₄)."""
    geom = s.geometry()
    z = np.sqrt(geom.T) + 9
    eps = 0.0
    ptf_noise = ptf_sigmas(s.n, ptf_default_clip(geom, s.radius), s.mu).max()
    for w, noise in ((np.ones(geom.T), 0.0), (ptf_default_weights(geom), ptf_noise)):
        A_w = geom.Phi.T @ (w[:, None] * geom.Phi)
        size = (s.B * np.linalg.norm(geom.Phi, 2) + (s.sigma0 + noise) * z) * np.sqrt(w.max())
        eps = max(eps, fit_rtol(A_w, geom.T, data_ratio=size / (np.sqrt(np.linalg.norm(A_w, 2)) * s.radius)))
    return eps + gamma(8)


def _err_scale(err, norms, s: Setting, eps: float):
    """Scale of ``eps`` in the rounding of a squared error: |δerr| <= 2·sqrt(err)·δ + δ², δ = eps·m,
    m = B + B' + ||ŷ|| (the target is the mean of curves of norm <= B); the error's metric is no
    larger than the coordinates' (IMSE = ||θ||²; grid MSE = ||Φθ||²/T, ||Φ||₂² <= tr K = T)."""
    m = s.B + s.radius + norms
    return 2 * np.sqrt(err) * m + eps * m**2


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
    from dpfda.mechanisms.ftp_ptf import ftp_mechanism

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


# Monte Carlo summaries of the tree before the loops were joined (e4d82aa), repetitions 3..8, seed 7:
# the mean errors and mean released coordinates, and the counts of active constraints (exact).
ENGINE_STORED = {
    ("fig4", 0): {"err_ftp": 43.575558853975814, "err_ptf": 1.3840761271848951,
                  "coef_ftp": [-1.8761192229092016, -2.825344640772295],
                  "coef_ptf": [0.3979758475939014, 0.34731515428318405], "counts": (0, 0.0, 6)},
    ("fig2", 0): {"err_ftp": 0.19254732824750276, "err_ptf": 0.3041318910725042,
                  "coef_ftp": [-0.011201232453127957, 0.16039024088832807, 0.1960024636650812,
                               0.038973863871203544],
                  "coef_ptf": [0.08970634668185325, 0.352858722502426, -0.3782430276471331, 0.17242344647723554],
                  "counts": (6, 6.0, 5)},
}


def _paper_setting(study: str, i: int) -> Setting:
    return (get_study(study) if study != "fig2" else paper_studies()["fig2"]).settings[i]


@pytest.mark.parametrize("case", sorted(ENGINE_STORED))
def test_engine_chunks_are_those_published(case):
    s = _paper_setting(*case)
    out = engine.simulate_chunk(s, 7, 3, 9, keep_releases=True)
    # one machine: the same repetitions in other chunks give the same bits
    parts = [engine.simulate_chunk(s, 7, a, b, keep_releases=True) for a, b in ((3, 4), (4, 9))]
    _same_bits(out, {k: np.concatenate([p[k] for p in parts]) for k in out})
    # every machine: the published summaries, to the stated tolerance
    want = ENGINE_STORED[case]
    eps = _setting_eps(s)
    for k in ("ftp", "ptf"):
        err, coef = out[f"err_{k}"], out[f"coef_{k}"]
        norms = np.linalg.norm(coef, axis=-1)
        _close(err.mean(), want[f"err_{k}"], k, machine_atol(err, _err_scale(err, norms, s, eps), eps))
        _close(coef.mean(axis=0), want[f"coef_{k}"], k, machine_atol(coef, s.B + s.radius + norms[:, None], eps))
    counts = (int(out["ftp_any_active"].sum()), float(out["ftp_frac_active"].sum()), int(out["ptf_active"].sum()))
    assert counts == want["counts"]


# Mean error and number of unconstrained repetitions of each design (e4d82aa), 30 repetitions, seed 2026.
DESIGN_STORED = {
    0.0: {"PTF": (0.07628196299404989, 0), "mix": (0.07075814205589878, 0), "FTP": (0.025303932313723736, 30),
          "ball": (0.04301922691604201, 0)},
    1.0: {"PTF": (0.461843998122476, 0), "mix": (0.41207878432003664, 0), "FTP": (0.11999784258178486, 0),
          "ball": (0.2351432701699374, 1)},
}

DESIGN_SPECS = {"PTF": {"region": "box"}, "mix": {"region": "mix", "lam": 0.5},
                "FTP": {"region": "ellipsoid", "noise": "ellipsoid", "fit": "none"}, "ball": {"region": "ball"}}


@pytest.mark.parametrize("sigma0", sorted(DESIGN_STORED))
def test_design_simulations_are_those_published(sigma0):
    s = Setting(family="kernel", n=16, T=8, mu=1.0, sigma0=sigma0, radius_rule="1.1B" if sigma0 == 0 else "log_n")
    out = simulate_designs(s, DESIGN_SPECS, 30, 2026, chunk_values=16 * 8 * 7)  # five chunks
    # one machine: a design run alone gets the bits it gets among the others (common random numbers)
    alone = simulate_designs(s, {"mix": DESIGN_SPECS["mix"]}, 30, 2026, chunk_values=16 * 8 * 7)
    _same_bits(out["mix"], alone["mix"])
    # every machine: the published summaries. Beyond the setting's fits, a design's σ carries its
    # extent's stated rounding cover (10⁻¹⁰ + the whitening's, dpfda_book.mechanisms.whitening) and its
    # noise L·Z the product's γ_2T·κ(L). Its coordinates: a fit in the ball (norm <= B') or, for
    # FTP's fit="none", θ̄ + σZ with ||Z|| <= √d + 9 (but with probability below e^-40)
    W = [Design(s.grid(), s.space, s.radius, **spec).whitening for spec in DESIGN_SPECS.values()]
    eps = _setting_eps(s) + max(1e-10 + w.rounding + w.kappa * gamma(2 * s.T) for w in W)
    norm = s.radius * (1 + 2 / (s.n * s.mu) * (np.sqrt(s.geometry().dim) + 9))
    for name, (err, free) in DESIGN_STORED[sigma0].items():
        e = out[name]["err"]
        _close(e.mean(), err, name, machine_atol(e, _err_scale(e, norm, s, eps), eps))
        assert int(out[name]["free"].sum()) == free, name


# Mean scores of the two neighbouring datasets' draws and the μ lower bound (e4d82aa).
AUDIT_STORED = {"ftp": (-0.026341606052800445, 1.0249263333824665, 0.31274401639277216),
                "ptf": (-0.11262291697209026, 0.6461435889162082, 0.0)}


def test_audit_draws_are_those_published():
    space, grid = dpfda.LegendreSpace(3), dpfda.uniform_grid(10)
    X0, X1 = A.worst_case_pair(grid, space, 1.0, 8)
    for name, mech in (("ftp", A.ftp_mechanism(grid, space, 1.0, 1.0, n=8)),
                       ("ptf", A.ptf_mechanism(grid, space, 1.0, 1.0, n=8))):
        res = A.audit(mech, X0, X1, draws=200, rng=np.random.default_rng(9), chunk=70)
        # one machine: three chunks draw and score what one chunk does
        one = A.audit(mech, X0, X1, draws=200, rng=np.random.default_rng(9), chunk=200)
        _same_bits({"s0": res.scores0, "s1": res.scores1, "mu": res.mu_lower},
                   {"s0": one.scores0, "s1": one.scores1, "mu": one.mu_lower})
        m0, m1, mu = AUDIT_STORED[name]
        # a score is ⟨(y − s0)/σ, u⟩, y = summary + σz: y − s0 is off by fit_rtol·(2B' + σ||z||), the
        # direction u by 2·pair_rtol; with n = 8, μ = 1 and ||z|| <= √d + 9 (but with probability
        # below e^-40 a draw): eps·(nμ + 2||z|| + μ)
        A_ = space.at(grid).Phi.T @ space.at(grid).Phi
        eps = max(fit_rtol(A_, grid.size) + gamma(8), 2 * pair_rtol(A_, grid.size, 8))
        scale = 8 * 1.0 + 2 * (np.sqrt(space.m) + 9) + 1.0
        _close(res.scores0.mean(), m0, f"{name} scores0", machine_atol(res.scores0, scale, eps))
        _close(res.scores1.mean(), m1, f"{name} scores1", machine_atol(res.scores1, scale, eps))
        # a function of the counts past the thresholds (equal unless a score is within its rounding
        # of one) through scipy's special functions, no BLAS: a few ulps, far below 1e-12
        assert res.mu_lower == pytest.approx(mu, rel=1e-12, abs=0), f"{name} mu_lower"


def test_noiseless_ftp_error_matches_theorem_10():
    """σ₀ = 0 and B' > B: FTP's IMSE is σ²·m in expectation (Theorem 10), through the loop."""
    from dpfda.mechanisms.pipelines import ftp_sigma
    from dpfda_book.report import evidence as ev

    s = Setting(family="legendre", n=50, T=10, m=3, mu=1.0, sigma0=0.0, radius_rule="1.1B")
    per = engine.simulate_setting(s, 400, seed=7)
    exact = ftp_sigma(s.n, s.radius, s.mu) ** 2 * 3
    se = per["err_ftp"].std(ddof=1) / np.sqrt(400)
    assert ev.within(per["err_ftp"].mean(), se, exact)
    assert not per["ftp_any_active"].any()
