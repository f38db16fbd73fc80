"""The generative models of §5 and the appendix, and the observation model (eq. 2)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpfda import LegendreSpace, brownian_kernel, gaussian_kernel, uniform_grid
from dpfda.maths.rounding import product_atol
from dpfda.maths.summation import gamma
from dpfda_book.simulation.models import observe, polynomial_curves, rkhs_curves, uniform_ball

from _support import assert_mc_close, bonferroni_z, reps


@pytest.mark.parametrize("m", [1, 2, 4, 8])
def test_polynomial_curves_inside_the_ball_and_uniform(m):
    rng = np.random.default_rng(100 + m)
    B = 1.7
    n = reps(40_000, 10_000)
    curves = polynomial_curves(n, m, rng, B=B)
    theta = curves.theta
    assert theta.shape == (n, m) and curves.n == n and curves.space == LegendreSpace(m)
    norms = np.linalg.norm(theta, axis=1)
    assert np.all(norms <= B * (1 + gamma(2 * m + 8)))  # B·U^(1/m)·z/||z||: a norm, three roundings, a norm
    np.testing.assert_allclose(curves.norms(), norms, rtol=gamma(2 * m + 2), atol=0)  # two norms
    # Uniform in the ball: E||θ||² = m B²/(m + 2), mean zero, ||θ||^m/B^m ~ U(0, 1).
    assert_mc_close(norms**2, m * B**2 / (m + 2), what="E||θ||²")
    assert_mc_close(theta, np.zeros(m), z=bonferroni_z(m), what="E θ")
    assert stats.kstest((norms / B) ** m, "uniform").pvalue > 1e-4
    # The curves are θᵀφ and their mean is θ̄ᵀφ.
    t = np.linspace(0, 1, 13)
    basis = LegendreSpace(m).basis(t)  # products of other shapes may sum in another order: γ_m·|θ||φ| each
    np.testing.assert_allclose(curves.values(t)[:5], theta[:5] @ basis.T, rtol=0,
                               atol=2 * product_atol(theta[:5], basis.T).max())
    np.testing.assert_allclose(curves.mean_values(t), curves.mean_coef @ basis.T, rtol=0,
                               atol=2 * product_atol(curves.mean_coef, basis.T).max())
    np.testing.assert_array_equal(curves.mean_coef, theta.mean(axis=0))  # the same computation


def test_uniform_ball_direction_is_isotropic():
    rng = np.random.default_rng(9)
    n = reps(40_000, 10_000)
    x = uniform_ball(n, 3, 2.0, rng)
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    # E[u uᵀ] = I/3 for a uniform direction.
    prods = (u[:, :, None] * u[:, None, :]).reshape(n, 9)
    assert_mc_close(prods, (np.eye(3) / 3).ravel(), z=bonferroni_z(9), what="E uuᵀ")


@pytest.mark.parametrize("kernel", [None, gaussian_kernel(0.1), brownian_kernel()])
def test_rkhs_curves_norms_and_nonzero_mean(kernel):
    rng = np.random.default_rng(11)
    B = 1.3
    n = reps(20_000, 5_000)
    curves = rkhs_curves(n, rng, kernel=kernel, B=B)
    k = gaussian_kernel(0.2) if kernel is None else kernel
    assert curves.alpha.shape == (n, 20) and curves.centers.shape == (20,)
    np.testing.assert_array_equal(curves.centers, np.linspace(0, 1, 20))  # the same computation
    # ||f_i||_H = sqrt(α_iᵀ K_C α_i) <= B, computed here from the kernel formula.
    KC = k(curves.centers[:, None], curves.centers[None, :])
    norms = np.sqrt(np.einsum("ij,jk,ik->i", curves.alpha, KC, curves.alpha))
    # a quadratic form of 20² terms rounds by γ_400 of |α|ᵀ|K||α|, which can exceed αᵀKα (K_C is
    # ill-conditioned): relative to the norm, half of γ_408·amp, amp = |α|ᵀ|K||α|/αᵀKα
    amp = np.einsum("ij,jk,ik->i", np.abs(curves.alpha), np.abs(KC), np.abs(curves.alpha)) / norms**2
    assert np.all(norms <= B * (1 + gamma(408) * amp))
    assert np.all(np.abs(curves.norms() - norms) <= gamma(408) * amp * norms)  # two forms, half each
    # By construction ||f_i|| = B·U_i with U_i ~ U(0, 1).
    assert stats.kstest(norms / B, "uniform").pvalue > 1e-4
    # Values: Σ_k α_ik K(c_k, t); the mean function is clearly not zero.
    t = np.array([0.25, 0.5, 0.8])
    V = curves.values(t)
    Kt = k(curves.centers[:, None], t[None, :])
    np.testing.assert_allclose(V, curves.alpha @ Kt, rtol=0, atol=2 * product_atol(curves.alpha, Kt).max())
    np.testing.assert_array_equal(curves.mean_values(t), V.mean(axis=0))  # the same computation
    mean, se = V.mean(axis=0), V.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(mean) > 10 * se), (mean, se)
    assert np.all(mean > 0)  # the shared direction a = (1, ..., 1) is a positive hump


def test_observe_shapes_and_noise():
    rng = np.random.default_rng(12)
    F = polynomial_curves(30, 3, rng).values(uniform_grid(20))
    X = observe(F, 0.0, rng)
    assert X.shape == (30, 20)
    np.testing.assert_array_equal(X, F)
    assert X is not F and not np.shares_memory(X, F)
    X3 = observe(F, 0.0, rng, reps=4)
    assert X3.shape == (4, 30, 20)
    np.testing.assert_array_equal(X3, np.broadcast_to(F, (4, 30, 20)))
    X3[0, 0, 0] += 1  # writable, independent copies
    assert X3[1, 0, 0] == F[0, 0]
    # σ₀ > 0: residuals are N(0, σ₀²), fresh per repetition.
    sigma0 = 0.3
    R = reps(400, 100)
    Xn = observe(F, sigma0, rng, reps=R)
    eps = (Xn - F).ravel()
    assert_mc_close(eps, 0.0, what="noise mean")
    assert_mc_close(eps**2, sigma0**2, what="noise variance")
    assert not np.array_equal(Xn[0], Xn[1])
    # Reproducible from the seed.
    np.testing.assert_array_equal(observe(F, 1.0, np.random.default_rng(1)),
                                  observe(F, 1.0, np.random.default_rng(1)))
