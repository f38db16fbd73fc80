"""The shared conventions (dpfda_book.settings) and the function-space interface."""

import math

import numpy as np
import pytest
from scipy import stats

import dpfda
from dpfda.maths.rounding import product_atol, psd_root_rtol
from dpfda.maths.spaces import FunctionSpace, KernelGeometry, LegendreGeometry
from dpfda.maths.summation import gamma
from dpfda.mechanisms import theory
from dpfda_book import montecarlo, settings
from dpfda_book.report import evidence


@pytest.mark.parametrize("text, on", [("1", True), ("yes", True), (" On ", True), ("0", False),
                                      ("false", False), ("", False)])
def test_quick_reads_dpfda_quick(monkeypatch, text, on):
    monkeypatch.setenv("DPFDA_QUICK", text)
    assert settings.quick() is on


def test_quick_refuses_an_unclear_value(monkeypatch):
    monkeypatch.setenv("DPFDA_QUICK", "maybe")
    with pytest.raises(ValueError, match="DPFDA_QUICK"):
        settings.quick()


def test_n_jobs_reads_dpfda_jobs(monkeypatch):
    monkeypatch.setenv("DPFDA_JOBS", "-1")
    assert settings.n_jobs() == -1
    monkeypatch.delenv("DPFDA_JOBS")
    assert 1 <= settings.n_jobs() <= settings.MAX_DEFAULT_JOBS
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv("DPFDA_JOBS", bad)
        with pytest.raises(ValueError, match="DPFDA_JOBS"):
            settings.n_jobs()


def test_one_tolerance_and_one_bonferroni_rule():
    assert evidence.Z is montecarlo.Z and evidence.bonferroni_z is montecarlo.bonferroni_z
    # scipy's normal tails and quantiles (no BLAS): a few ulps each, far below 1e-12
    assert montecarlo.ALPHA == pytest.approx(2 * stats.norm.sf(montecarlo.Z), rel=1e-12, abs=0)
    assert montecarlo.bonferroni_z(1) == pytest.approx(montecarlo.Z, rel=1e-12, abs=0)
    # k checks at the family rate of one: each at ALPHA/k
    assert montecarlo.bonferroni_z(8) == pytest.approx(stats.norm.isf(montecarlo.ALPHA / 16), rel=1e-12, abs=0)
    assert montecarlo.Z95 == pytest.approx(stats.norm.isf(0.025), rel=1e-15, abs=0)  # the same quantile


def test_proportion_se_is_vectorised_and_checked():
    p = np.array([0.0, 0.5, 1.0])
    se = montecarlo.proportion_se(p, 100)
    assert se.shape == (3,) and np.all(se > 0)
    assert se[1] == pytest.approx(math.sqrt(0.25 / 104), rel=gamma(8), abs=0)  # p̃(1 − p̃)/(R + 4): a few roundings
    assert montecarlo.proportion_se(0.5, 100) == pytest.approx(se[1], rel=gamma(8), abs=0)
    with pytest.raises(ValueError, match="proportion"):
        montecarlo.proportion_se([0.2, 1.5], 10)
    with pytest.raises(ValueError, match="reps"):
        montecarlo.proportion_se(0.5, 0)


def test_spaces_implement_the_interface_and_geometries_carry_typed_fields():
    grid = dpfda.uniform_grid(6)
    leg = dpfda.LegendreSpace(3).at(grid)
    ker = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)).at(grid)
    assert isinstance(dpfda.LegendreSpace(3), FunctionSpace)
    assert isinstance(leg, LegendreGeometry) and isinstance(ker, KernelGeometry)
    # two products of the same factors: γ_T·|Φ|ᵀ|Φ| each (Higham (3.13))
    np.testing.assert_allclose(leg.M, leg.Phi.T @ leg.Phi, rtol=0, atol=2 * product_atol(leg.Phi.T, leg.Phi).max())
    # Φ = K^½ by eigh: psd_root_rtol(T)·||K||₂ covers Φ̂Φ̂ (Φ̂ symmetric) against K
    atol = psd_root_rtol(grid.size) * np.linalg.norm(ker.K, 2)
    np.testing.assert_allclose(ker.K, ker.Phi @ ker.Phi, rtol=0, atol=atol)
    np.testing.assert_array_equal(ker.eval_norm, 1.0)  # sqrt(K(t, t)) = sqrt(1), exactly
    # a_j bounds |f(t_j)| on the unit ball, with equality for the right f
    theta = leg.Phi[2] / np.linalg.norm(leg.Phi[2])
    assert leg.values(theta)[2] == pytest.approx(leg.eval_norm[2], rel=gamma(3 * 3 + 4), abs=0)  # norms, a product


def test_an_incomplete_space_cannot_be_made_and_foreign_objects_are_refused():
    class Half(FunctionSpace):
        metric = "IMSE"

        def _geometry(self, grid):
            raise NotImplementedError

    with pytest.raises(TypeError, match="abstract"):
        Half()
    X = np.zeros((3, 4))
    with pytest.raises(TypeError, match="FunctionSpace"):
        dpfda.ftp(X, dpfda.uniform_grid(4), "legendre", 1.0, 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="geometry"):
        theory.ratio_limit_upper(object())


def test_quad_form_moments_match_a_chi_square():
    mean, sd = theory.quad_form_moments(np.eye(4), scale=0.5)
    assert (mean, sd) == pytest.approx((0.5 * 4, 0.5 * math.sqrt(8)), rel=gamma(8), abs=0)  # exact traces, a root
    with pytest.raises(ValueError, match="square"):
        theory.quad_form_moments(np.ones((2, 3)))
