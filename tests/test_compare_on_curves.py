"""FTP and PTF compared on latent curves of the caller's choosing (dpfda.engine.compare_on_curves)."""

import numpy as np
import pytest

import dpfda
from dpfda import engine
from dpfda import evidence as ev
from dpfda.pipelines import ftp_sigma


def _poly(n=50, m=3, seed=0):
    rng = np.random.default_rng(seed)
    curves = dpfda.polynomial_curves(n, m, rng)
    grid = dpfda.uniform_grid(10)
    return curves, grid, dpfda.LegendreSpace(m)


def test_compare_on_curves_noiseless_ftp_error_matches_theorem_10():
    # σ₀ = 0 and B' > B: FTP's IMSE is exactly σ²·m in expectation (Theorem 10).
    curves, grid, space = _poly()
    reps, radius, mu = 400, 1.1, 1.0
    out = engine.compare_on_curves(curves.values(grid), curves.mean_coef, grid, space, radius=radius,
                               mu=mu, sigma0=0.0, reps=reps, seed=7)
    exact = ftp_sigma(curves.n, radius, mu) ** 2 * space.m
    assert ev.within(out["err_ftp"], out["se_ftp"], exact)
    assert out["p_ftp_active"] == 0.0 and out["reps"] == reps


def test_compare_on_curves_is_reproducible_and_uses_both_pipelines_on_the_same_data():
    curves, grid, space = _poly(n=30)
    kw = dict(radius=1.5, mu=1.0, sigma0=0.5, reps=20, seed=3, key=(1, 2))
    a = engine.compare_on_curves(curves.values(grid), curves.mean_coef, grid, space, **kw)
    b = engine.compare_on_curves(curves.values(grid), curves.mean_coef, grid, space, **kw)
    assert a == b
    # Recompute repetition set by hand: one chunk, so one generator.
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(3, spawn_key=(1, 2, 0))))
    X = curves.values(grid) + 0.5 * rng.standard_normal((20, 30, 10))
    f = dpfda.ftp(X, grid, space, 1.5, 1.0, rng).error(curves.mean_coef)
    p = dpfda.ptf(X, grid, space, 1.5, 1.0, rng).error(curves.mean_coef)
    assert a["err_ftp"] == pytest.approx(f.mean(), rel=1e-12)
    assert a["ratio"] == pytest.approx(f.mean() / p.mean(), rel=1e-12)


def test_compare_on_curves_rejects_bad_input():
    curves, grid, space = _poly()
    F, t = curves.values(grid), curves.mean_coef
    with pytest.raises(ValueError, match="columns"):
        engine.compare_on_curves(F[:, :5], t, grid, space, radius=1, mu=1, sigma0=0, reps=5, seed=0)
    with pytest.raises(ValueError, match="target"):
        engine.compare_on_curves(F, t[:2], grid, space, radius=1, mu=1, sigma0=0, reps=5, seed=0)
    with pytest.raises(ValueError, match="reps"):
        engine.compare_on_curves(F, t, grid, space, radius=1, mu=1, sigma0=0, reps=1, seed=0)
    with pytest.raises(ValueError, match="sigma0"):
        engine.compare_on_curves(F, t, grid, space, radius=1, mu=1, sigma0=-1, reps=5, seed=0)
    with pytest.raises(ValueError, match="NaN"):
        engine.compare_on_curves(F * np.nan, t, grid, space, radius=1, mu=1, sigma0=0, reps=5, seed=0)
