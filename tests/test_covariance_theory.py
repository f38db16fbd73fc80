"""The closed forms of dpfda.mechanisms.covariance_theory against simulation and against algebra.

The expected Hilbert–Schmidt error of the unprojected release is exact where no constraint
binds: its Monte Carlo mean must agree within z standard errors (Bonferroni over the cases).
The limits of the ratio in the two designs where they have a closed form: a Fourier space
on a periodic uniform grid (ΦᵀΦ = T·I, ||φ(t_j)||² = m, so the moment's ratio is 1/m² and the
mean's 1/m) and the Gaussian-kernel RKHS (unit diagonal: the moment's ratio is
(T² + ||K_T||_F²)/(T²(T² + T)), the mean's (1 + âᵀK_Tâ/T)/(T + 1)).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpfda
from dpfda.maths.rounding import psd_root_rtol, solve_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import covariance as cv
from dpfda.mechanisms import covariance_theory as th

from _support import bonferroni_z, reps


def _curves(space, grid, n, rng):
    """Noiseless curves of norm at most 0.9 with a non-zero mean, in the space's coordinates."""
    geom = space.at(grid)
    d = geom.dim
    z = rng.standard_normal((n, d))
    z *= (0.5 * rng.random(n) ** (1 / d) / np.linalg.norm(z, axis=1))[:, None]
    coef = z * np.linspace(1.0, 0.3, d) + 0.4 * np.ones(d) / math.sqrt(d)
    return coef, geom.values(coef)


CASES = [
    ("legendre", dpfda.LegendreSpace(3), dpfda.uniform_grid(20), 200),
    ("gaussian", dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), dpfda.uniform_grid(6), 400),
]


@pytest.mark.slow
def test_the_expected_error_is_exact_where_no_constraint_binds():
    R = reps(4000, 800)
    z = bonferroni_z(2 * len(CASES))
    for name, space, grid, n in CASES:
        rng = np.random.default_rng(11)
        coef, X = _curves(space, grid, n, rng)
        target = cv.sample_covariance(coef)
        for method in ("ftp", "ptf"):
            mech = cv.covariance_mechanism(grid, space, 1.1, 1.0, method=method)
            m, c = mech.summary(X)
            rel = mech.privatize(m, c, rng.standard_normal((R, mech.mean.noise_dim)),
                                 rng.standard_normal((R, mech.moment_dim)), n)
            if rel.mean.active is not None:
                assert not np.any(rel.mean.active), f"{name} {method}: PTF's mean fit bound; pick a larger n"
            err = cv.hs_error(rel.unprojected, target, mech.geometry)
            exact = th.expected_hs_error(mech, n, coef.mean(axis=0))
            se = err.std(ddof=1) / math.sqrt(R)
            assert abs(err.mean() - exact) <= z * se, (name, method, err.mean(), exact, se)


@pytest.mark.slow
def test_the_first_order_angle_holds_where_the_noise_is_small_against_the_gaps():
    R = reps(4000, 1000)
    space, grid = dpfda.LegendreSpace(3), dpfda.uniform_grid(20)
    rng = np.random.default_rng(12)
    coef, X = _curves(space, grid, 20000, rng)
    target = cv.sample_covariance(coef)
    for method in ("ftp", "ptf"):
        mech = cv.covariance_mechanism(grid, space, 1.1, 1.0, method=method)
        m, c = mech.summary(X, exact=False)
        rel = mech.privatize(m, c, rng.standard_normal((R, mech.mean.noise_dim)),
                             rng.standard_normal((R, mech.moment_dim)), 20000)
        s2 = np.sin(rel.angles(target, 1)[..., 0]) ** 2
        pred = th.first_order_angles(mech, 20000, target, coef.mean(axis=0), 1)[0]
        assert pred < 1e-3  # the regime where the first order is accurate (relative error ~ sin θ)
        se = s2.std(ddof=1) / math.sqrt(R)
        # sin θ is about 0.004 (FTP) and 0.012 (PTF) here: the neglected orders fall below the Monte Carlo error
        assert abs(s2.mean() - pred) <= bonferroni_z(2) * se, (method, s2.mean(), pred, se)


def _ratio_rtol(ptf) -> float:
    """Relative error of a ratio of two mechanisms' error_terms (FTP's over PTF's), from rounding.

    S = G^½ by eigh (S² off G by psd_root_rtol(d)·||G||, κ(G) of it relative; none for H_m,
    where S = I), P by solves with ΦᵀWΦ (solve_rtol of T + d); the terms are quartic in S and
    P (squares of traces of QQᵀ), so four times those; the products, traces and sums round by
    γ_{d²+T+16}; and a ratio holds two terms.
    """
    geom = ptf.geometry
    d, T, w = geom.dim, geom.T, np.asarray(ptf.weights, dtype=float)
    G = geom.Phi.T @ geom.Phi / T
    root = 0.0 if geom.metric == "IMSE" else psd_root_rtol(d) * np.linalg.cond(G)
    return 2 * (4 * (root + solve_rtol(geom.Phi.T @ (w[:, None] * geom.Phi), T + d)) + gamma(d * d + T + 16))


def _periodic_fourier(m: int, T: int):
    space, grid = dpfda.FourierSpace(m), np.arange(T) / T
    ftp = cv.covariance_mechanism(grid, space, 1.0, 1.0, method="ftp")
    ptf = cv.covariance_mechanism(grid, space, 1.0, 1.0, method="ptf")
    return space.at(grid), ftp, ptf


@pytest.mark.parametrize("m,T", [(3, 8), (5, 12), (7, 30)])
def test_a_uniform_design_gives_one_over_m_squared_and_one_over_m(m, T):
    geom, ftp, ptf = _periodic_fourier(m, T)
    # φ = √2 cos or sin of 2πft, the angle to γ₄ (j/T, 2π, the products), so φ to √2(2πf + 1)γ₄ with
    # f < m; T products of values |φ| <= √2 and their sum (γ_T)
    np.testing.assert_allclose(geom.Phi.T @ geom.Phi, T * np.eye(m), rtol=0,
                               atol=T * (4 * (2 * np.pi * m + 1) * gamma(4) + 2 * gamma(T)))
    mean = np.random.default_rng(13).standard_normal(m)
    f, p = th.error_terms(ftp, 50, mean), th.error_terms(ptf, 50, mean)
    rtol = _ratio_rtol(ptf)
    assert f["moment"] / p["moment"] == pytest.approx(1 / m**2, rel=rtol, abs=0)
    assert f["mean_linear"] / p["mean_linear"] == pytest.approx(1 / m, rel=rtol, abs=0)
    limit = th.limit_ratio(ftp, ptf, mean)
    assert 1 / m**2 <= limit * (1 + rtol) and limit <= (1 / m) * (1 + rtol)


@pytest.mark.parametrize("T", [2, 4, 8])
def test_the_gaussian_kernel_ratios_have_their_closed_forms(T):
    space, grid = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), dpfda.uniform_grid(T)
    ftp = cv.covariance_mechanism(grid, space, 1.0, 1.0, method="ftp")
    ptf = cv.covariance_mechanism(grid, space, 1.0, 1.0, method="ptf")
    K = space.at(grid).K
    # the closed forms against K_T^{1/2} computed by eigh: rounding within κ(K_T)·γ_{8T} <= 7e-12 (T = 8)
    mean = np.random.default_rng(14).standard_normal(T)
    f, p = th.error_terms(ftp, 30, mean), th.error_terms(ptf, 30, mean)
    rtol = _ratio_rtol(ptf) + gamma(T * T + 8)  # and the closed form's own sums
    assert f["moment"] / p["moment"] == pytest.approx((T**2 + np.sum(K * K)) / (T**2 * (T**2 + T)), rel=rtol, abs=0)
    S, _ = cv.metric_root(space.at(grid))
    a = S @ mean
    a /= np.linalg.norm(a)
    assert f["mean_linear"] / p["mean_linear"] == pytest.approx((1 + a @ K @ a / T) / (T + 1), rel=rtol, abs=0)
    assert f["moment"] / p["moment"] <= 2 / (T * (T + 1)) * (1 + rtol)


def test_recovery_n_is_where_the_first_order_angle_reaches_the_target():
    space, grid = dpfda.LegendreSpace(3), dpfda.uniform_grid(20)
    coef, _ = _curves(space, grid, 500, np.random.default_rng(15))
    target = cv.sample_covariance(coef)
    mech = cv.covariance_mechanism(grid, space, 1.1, 1.0, method="ftp")
    n_star = th.recovery_n(mech, target, coef.mean(axis=0), math.radians(10))
    n = int(round(n_star))
    pred = th.first_order_angles(mech, n, target, coef.mean(axis=0), 1)[0]
    # n_star rounded to an integer: sqrt(pred) ∝ 1/sqrt(n) moves by at most 1/(4n) relative, within 2/n
    assert math.sqrt(pred) == pytest.approx(math.sin(math.radians(10)), rel=2 / n, abs=0)
    with pytest.raises(ValueError, match="angle"):
        th.recovery_n(mech, target, coef.mean(axis=0), 2.0)
    with pytest.raises(ValueError, match="not simple"):
        th.first_order_angles(mech, 10, np.eye(3), coef.mean(axis=0), 1)
