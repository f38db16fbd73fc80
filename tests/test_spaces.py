"""Function spaces: the Legendre space H_m (Example 1) and kernel spaces H_K (Example 2).

Independent references: scipy's shifted Legendre polynomials and Gauss–Legendre
quadrature for H_m; the kernel formulas written out here (eq. 1, min(s, t))
for H_K; closed-form Brownian-motion facts.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.polynomial import legendre as npleg
from numpy.polynomial import polynomial as nppoly
from scipy import integrate, special

from dpfda import (
    KernelSpace,
    LegendreSpace,
    brownian_kernel,
    gaussian_kernel,
    uniform_grid,
)

from _support import bonferroni_z, reps


def gl_nodes(k=64):
    """Gauss–Legendre nodes and weights on [0, 1]."""
    x, w = npleg.leggauss(k)
    return (x + 1) / 2, w / 2


def phi_ref(k, t):
    """φ_k(t) = sqrt(2k - 1)·P*_{k-1}(t) with scipy's shifted Legendre polynomial."""
    return np.sqrt(2 * k - 1) * special.eval_sh_legendre(k - 1, t)


def gauss_ref(s, t, rho):
    return np.exp(-((np.subtract.outer(s, t)) ** 2) / (2 * rho**2))


# ---------------------------------------------------------------------------
# Legendre space
# ---------------------------------------------------------------------------


def test_uniform_grid():
    np.testing.assert_allclose(uniform_grid(5), [0, 0.25, 0.5, 0.75, 1.0], atol=0)
    for T in (2, 7, 20):
        g = uniform_grid(T)
        np.testing.assert_allclose(g, (np.arange(1, T + 1) - 1) / (T - 1), rtol=0, atol=2e-16)
        assert g[0] == 0.0 and g[-1] == 1.0 and np.all(np.diff(g) > 0)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 12])
def test_legendre_basis_is_orthonormal_in_L2(m):
    t, w = gl_nodes(64)
    B = LegendreSpace(m).basis(t)
    assert B.shape == (64, m)
    np.testing.assert_allclose(B.T @ (w[:, None] * B), np.eye(m), atol=1e-12)
    # Against scipy's shifted Legendre polynomials.
    ref = np.stack([phi_ref(k, t) for k in range(1, m + 1)], axis=1)
    np.testing.assert_allclose(B, ref, rtol=1e-12, atol=1e-12)


def test_legendre_degrees():
    """φ_k is a polynomial of degree exactly k - 1 (appendix, polynomial setup)."""
    t = np.linspace(0, 1, 40)
    B = LegendreSpace(8).basis(t)
    for k in range(1, 9):
        coefs = nppoly.polyfit(t, B[:, k - 1], deg=k - 1)
        np.testing.assert_allclose(nppoly.polyval(t, coefs), B[:, k - 1], atol=1e-9)
        # Leading coefficient of sqrt(2k-1)·P_{k-1}(2t-1) is sqrt(2k-1)·C(2(k-1), k-1).
        lead = np.sqrt(2 * k - 1) * special.comb(2 * (k - 1), k - 1, exact=True)
        assert coefs[-1] == pytest.approx(lead, rel=1e-6)
        if k > 1:  # one degree less cannot represent it
            low = nppoly.polyfit(t, B[:, k - 1], deg=k - 2)
            assert np.max(np.abs(nppoly.polyval(t, low) - B[:, k - 1])) > 1e-3


def test_legendre_m2_is_one_and_root12_t_minus_half():
    t = np.linspace(0, 1, 11)
    B = LegendreSpace(2).basis(t)
    np.testing.assert_allclose(B[:, 0], 1.0, atol=1e-15)
    np.testing.assert_allclose(B[:, 1], np.sqrt(12) * (t - 0.5), atol=1e-14)


def test_legendre_project_recovers_coefficients():
    rng = np.random.default_rng(0)
    for m in (1, 3, 6, 10):
        space = LegendreSpace(m)
        theta = rng.standard_normal((5, m))
        for th in theta:
            np.testing.assert_allclose(space.project(lambda t: space.evaluate(th, t)), th,
                                       atol=1e-12)
    # A non-polynomial function: θ_k = ∫ f φ_k, compared with adaptive quadrature.
    space = LegendreSpace(5)
    got = space.project(np.exp)
    ref = [integrate.quad(lambda s: np.exp(s) * phi_ref(k, s), 0, 1, epsabs=1e-14)[0]
           for k in range(1, 6)]
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_legendre_geometry():
    space = LegendreSpace(4)
    grid = uniform_grid(20)
    geom = space.at(grid)
    Phi_ref = np.stack([phi_ref(k, grid) for k in range(1, 5)], axis=1)
    np.testing.assert_allclose(geom.Phi, Phi_ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(space.design(grid), geom.Phi)
    np.testing.assert_allclose(geom.eval_norm, np.linalg.norm(Phi_ref, axis=1), rtol=1e-13)
    np.testing.assert_allclose(geom.M, Phi_ref.T @ Phi_ref, rtol=1e-12, atol=1e-12)
    assert geom.metric == "IMSE" and geom.T == 20 and geom.dim == 4
    # Values, coef_from_values (exact for f in H_m), evaluate.
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((3, 4))
    np.testing.assert_allclose(geom.values(theta), theta @ Phi_ref.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(geom.coef_from_values(geom.values(theta)), theta, atol=1e-12)
    t = rng.random(7)
    np.testing.assert_allclose(geom.evaluate(theta, t), space.evaluate(theta, t))
    # A.3 holds with exactly T = m distinct points, also off the uniform grid.
    assert LegendreSpace(3).at([0.1, 0.5, 0.9]).Phi.shape == (3, 3)
    # Geometry is cached and read-only.
    assert space.at(grid) is geom
    with pytest.raises(ValueError):
        geom.Phi[0, 0] = 1.0


def test_legendre_error_is_the_imse():
    """GridGeometry.error for H_m is ∫(f - g)² (eq. 7), checked by quadrature."""
    rng = np.random.default_rng(2)
    space = LegendreSpace(6)
    geom = space.at(uniform_grid(20))
    t, w = gl_nodes(64)
    for _ in range(5):
        a, b = rng.standard_normal(6), rng.standard_normal(6)
        imse = np.sum(w * (space.evaluate(a, t) - space.evaluate(b, t)) ** 2)
        assert geom.error(a, b) == pytest.approx(imse, rel=1e-12)
    assert space.norm(a) == pytest.approx(np.sqrt(np.sum(w * space.evaluate(a, t) ** 2)),
                                          rel=1e-12)


@pytest.mark.slow
def test_legendre_gaussian_element_has_identity_covariance():
    rng = np.random.default_rng(3)
    N = reps(100_000, 20_000)
    xi = LegendreSpace(3).sample_gaussian(rng, size=N)
    assert xi.shape == (N, 3)
    prods = xi[:, :, None] * xi[:, None, :]
    se = prods.std(axis=0, ddof=1) / np.sqrt(N)
    assert np.all(np.abs(prods.mean(axis=0) - np.eye(3)) <= bonferroni_z(9) * se)


# ---------------------------------------------------------------------------
# Kernel spaces
# ---------------------------------------------------------------------------


def test_gaussian_gram_symmetric_pd_unit_diagonal():
    k = gaussian_kernel(0.2)
    for grid in (uniform_grid(8), np.sort(np.random.default_rng(4).random(6))):
        K = KernelSpace(k).gram(grid)
        np.testing.assert_allclose(K, gauss_ref(grid, grid, 0.2), rtol=1e-14)
        np.testing.assert_array_equal(K, K.T)
        np.testing.assert_allclose(np.diag(K), 1.0, atol=0)
        assert np.linalg.eigvalsh(K)[0] > 0
    np.testing.assert_allclose(k.diag(np.linspace(0, 1, 5)), 1.0)


@pytest.mark.parametrize("kernel, grid", [
    (gaussian_kernel(0.2), uniform_grid(8)),
    (gaussian_kernel(0.5), uniform_grid(5)),
    (brownian_kernel(), np.arange(1, 11) / 10),
])
def test_kernel_geometry(kernel, grid):
    space = KernelSpace(kernel)
    geom = space.at(grid)
    K = np.minimum.outer(grid, grid) if kernel.name == "brownian" else gauss_ref(grid, grid, kernel.rho)
    # Φ = K_T^{1/2}: symmetric, squares to K_T; Φ_inv is its inverse.
    R = space.sqrt_gram(grid)
    np.testing.assert_allclose(R, R.T, atol=1e-14)
    np.testing.assert_allclose(R @ R, K, atol=1e-12)
    np.testing.assert_allclose(geom.Phi_inv @ R, np.eye(grid.size), atol=1e-8)
    np.testing.assert_allclose(geom.eval_norm, np.sqrt(np.diag(K)), rtol=1e-14)
    assert geom.metric == "MSE" and geom.dim == grid.size and not geom.floored

    rng = np.random.default_rng(5)
    alpha = rng.standard_normal((4, grid.size))
    f_grid = alpha @ K  # f = Σ α_j K(t_j, ·) on the grid
    beta = geom.coef_from_values(f_grid)
    # RKHS norm of the β coordinates is sqrt(αᵀK_Tα).
    np.testing.assert_allclose(np.linalg.norm(beta, axis=1),
                               np.sqrt(np.einsum("ij,jk,ik->i", alpha, K, alpha)), rtol=1e-8)
    np.testing.assert_allclose(space.rkhs_norm(alpha, grid),
                               np.sqrt(np.einsum("ij,jk,ik->i", alpha, K, alpha)), rtol=1e-12)
    # Grid values reproduce, on the grid and through evaluate.
    np.testing.assert_allclose(geom.values(beta), f_grid, atol=1e-9)
    np.testing.assert_allclose(geom.evaluate(beta, grid), f_grid, atol=1e-9)
    # Off the grid: the interpolant Σ α_j K(t_j, t).
    t = rng.random(9)
    Kt = np.minimum.outer(grid, t) if kernel.name == "brownian" else gauss_ref(grid, t, kernel.rho)
    np.testing.assert_allclose(geom.evaluate(beta, t), alpha @ Kt, atol=1e-8)
    # Grid MSE (eq. 8).
    b2 = beta[::-1]
    np.testing.assert_allclose(geom.error(beta, b2), np.mean((f_grid - f_grid[::-1]) ** 2, axis=1),
                               rtol=1e-9)


@pytest.mark.parametrize("kernel", [gaussian_kernel(0.2), gaussian_kernel(0.05), brownian_kernel()])
def test_reproducing_property_bound(kernel):
    """|f(t)| <= ||f||_H sqrt(K(t, t)) for random f = Σ α_k K(c_k, ·)."""
    rng = np.random.default_rng(6)
    space = KernelSpace(kernel)
    t = np.linspace(0, 1, 201)
    for _ in range(50):
        c = rng.random(int(rng.integers(1, 12)))
        alpha = rng.standard_normal(c.size) * rng.lognormal(0, 2)
        f = alpha @ kernel(c[:, None], t[None, :])
        norm = space.rkhs_norm(alpha, c)
        assert np.all(np.abs(f) <= norm * np.sqrt(kernel.diag(t)) * (1 + 1e-10) + 1e-300)
    # Equality at t = c for a single section K(c, ·) with K(c, c) > 0.
    c = np.array([0.3])
    assert abs(kernel(c, c)[0]) == pytest.approx(space.rkhs_norm(np.ones(1), c) * np.sqrt(kernel.diag(c)[0]))


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [gaussian_kernel(0.2), brownian_kernel()])
def test_gp_sample_covariance(kernel):
    """Z_K ~ GP(0, K): sample second moments match K at the points, within SE."""
    rng = np.random.default_rng(7)
    t = np.array([0.0, 0.1, 0.35, 0.5, 0.9, 1.0])
    N = reps(100_000, 20_000)
    Z = KernelSpace(kernel).sample_gaussian(rng, t, size=N)
    assert Z.shape == (N, t.size)
    K = kernel.gram(t)
    prods = Z[:, :, None] * Z[:, None, :]
    mean = prods.mean(axis=0)
    se = prods.std(axis=0, ddof=1) / np.sqrt(N)
    iu = np.triu_indices(t.size)
    nz = se[iu] > 0
    z = bonferroni_z(int(nz.sum()))
    assert np.all(np.abs(mean[iu][nz] - K[iu][nz]) <= z * se[iu][nz])
    # Degenerate directions stay degenerate: Brownian motion is exactly 0 at t = 0.
    if kernel.name == "brownian":
        assert np.all(Z[:, 0] == 0)


def test_regularize_floors_small_eigenvalues():
    grid = uniform_grid(20)
    geom = KernelSpace(gaussian_kernel(0.2), regularize=True).at(grid)
    assert geom.floored
    assert geom.eigenvalues.min() >= 1e-8
    np.testing.assert_allclose(geom.Phi @ geom.Phi, geom.K, atol=1e-7)
    assert KernelSpace(gaussian_kernel(0.2)) != KernelSpace(gaussian_kernel(0.2), regularize=True)
