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
from scipy import special
from test_pipelines import _kernel_eval_atol

from dpfda import (
    KernelSpace,
    LegendreSpace,
    brownian_kernel,
    gaussian_kernel,
    uniform_grid,
)
from dpfda.maths.rounding import eigh_rtol, product_atol, psd_root_rtol, solve_rtol
from dpfda.maths.summation import gamma

from _support import bonferroni_z, reps


def gl_nodes(k=64):
    """Gauss–Legendre nodes and weights on [0, 1]."""
    x, w = npleg.leggauss(k)
    return (x + 1) / 2, w / 2


def phi_ref(k, t):
    """φ_k(t) = sqrt(2k - 1)·P*_{k-1}(t) with scipy's shifted Legendre polynomial."""
    return np.sqrt(2 * k - 1) * special.eval_sh_legendre(k - 1, t)


def _basis_atol(m):
    """The shifted Legendre basis by two routes (recurrences of degree <= m − 1): the forward
    recurrence's error grows at most like k² ulps of |P_k| <= 1, times sqrt(2k − 1)."""
    return gamma(4 * m * m) * np.sqrt(2 * m - 1)


def _gauss_rtol(s, t, rho):
    """The Gaussian kernel by two formulas: exp's ulps and the argument's rounding times its size."""
    return gamma(4) * (1 + float(np.max(np.subtract.outer(s, t) ** 2)) / (2 * rho**2))


def gauss_ref(s, t, rho):
    return np.exp(-((np.subtract.outer(s, t)) ** 2) / (2 * rho**2))


# ---------------------------------------------------------------------------
# Legendre space
# ---------------------------------------------------------------------------


def test_uniform_grid():
    np.testing.assert_allclose(uniform_grid(5), [0, 0.25, 0.5, 0.75, 1.0], rtol=0, atol=0)  # exact in binary
    for T in (2, 7, 20):
        g = uniform_grid(T)
        np.testing.assert_allclose(g, (np.arange(1, T + 1) - 1) / (T - 1), rtol=0, atol=2e-16)  # one rounding of <= 1
        assert g[0] == 0.0 and g[-1] == 1.0 and np.all(np.diff(g) > 0)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8, 12])
def test_legendre_basis_is_orthonormal_in_L2(m):
    t, w = gl_nodes(64)
    B = LegendreSpace(m).basis(t)
    assert B.shape == (64, m)
    # 64 Gauss nodes are exact for degree <= 2m − 2; the basis (its recurrence) and the product round
    gram_atol = (2 * _basis_atol(m) + gamma(64)) * np.max(np.abs(B).T @ (w[:, None] * np.abs(B)))
    np.testing.assert_allclose(B.T @ (w[:, None] * B), np.eye(m), rtol=0, atol=gram_atol)
    # Against scipy's shifted Legendre polynomials.
    ref = np.stack([phi_ref(k, t) for k in range(1, m + 1)], axis=1)
    np.testing.assert_allclose(B, ref, rtol=0, atol=2 * _basis_atol(m))


def test_legendre_degrees():
    """φ_k is a polynomial of degree exactly k - 1 (appendix, polynomial setup)."""
    t = np.linspace(0, 1, 40)
    B = LegendreSpace(8).basis(t)
    for k in range(1, 9):
        coefs = nppoly.polyfit(t, B[:, k - 1], deg=k - 1)
        # a consistent least-squares fit, backward stable: the fitted values are off by γ_{8(N+k)} of
        # ||V||·||c|| (no condition number), Horner's rule by γ_{2k} of |V||c|, the values by the basis'
        V = nppoly.polyvander(t, k - 1)
        atol = (gamma(8 * (t.size + k)) * np.linalg.norm(V, 2) * np.linalg.norm(coefs)
                + gamma(2 * k) * (np.abs(V) @ np.abs(coefs)) + _basis_atol(8))
        assert np.all(np.abs(nppoly.polyval(t, coefs) - B[:, k - 1]) <= atol)
        # Leading coefficient of sqrt(2k-1)·P_{k-1}(2t-1) is sqrt(2k-1)·C(2(k-1), k-1).
        lead = np.sqrt(2 * k - 1) * special.comb(2 * (k - 1), k - 1, exact=True)
        # the coefficients themselves: solve_rtol of VᵀV (κ(V)², generous for lstsq's κ(V)) of ||c||
        rel = solve_rtol(V.T @ V, t.size + k) * np.linalg.norm(coefs) / lead
        assert coefs[-1] == pytest.approx(lead, rel=rel, abs=0)
        if k > 1:  # one degree less cannot represent it
            low = nppoly.polyfit(t, B[:, k - 1], deg=k - 2)
            assert np.max(np.abs(nppoly.polyval(t, low) - B[:, k - 1])) > 1e-3


def test_legendre_m2_is_one_and_root12_t_minus_half():
    t = np.linspace(0, 1, 11)
    B = LegendreSpace(2).basis(t)
    np.testing.assert_allclose(B[:, 0], 1.0, rtol=0, atol=0)  # sqrt(1)·P_0, exactly
    np.testing.assert_allclose(B[:, 1], np.sqrt(12) * (t - 0.5), rtol=0, atol=gamma(8) * np.sqrt(3))  # √3(2t − 1)


def test_legendre_project_recovers_coefficients():
    rng = np.random.default_rng(0)
    for m in (1, 3, 6, 10):
        space = LegendreSpace(m)
        theta = rng.standard_normal((5, m))
        for th in theta:
            # Gauss nodes exact for the degree; f by the basis (2·_basis_atol of Σ|θ|) and the
            # weighted sum (γ_N of Σ w|f||φ|), |φ_k| <= sqrt(2m − 1)
            atol = (2 * _basis_atol(m) + gamma(max(2 * m, 32))) * np.abs(th).sum() * (2 * m - 1)
            np.testing.assert_allclose(space.project(lambda t: space.evaluate(th, t)), th,
                                       rtol=0, atol=atol)
    # A non-polynomial function: θ_k = ∫ f φ_k, compared with adaptive quadrature.
    space = LegendreSpace(5)
    got = space.project(np.exp)
    import mpmath as mp

    with mp.workdps(30):  # the integrals in 30 digits
        ref = [float(mp.quad(lambda s: mp.exp(s) * mp.sqrt(2 * k - 1) * mp.legendre(k - 1, 2 * s - 1), [0, 1]))
               for k in range(1, 6)]
    # 32 Gauss nodes on an entire integrand: below rounding; the sum γ_32 of ∫e·|φ| <= e·3, the basis
    np.testing.assert_allclose(got, ref, rtol=0, atol=(gamma(32) + 2 * _basis_atol(5)) * np.e * 3)


def test_legendre_geometry():
    space = LegendreSpace(4)
    grid = uniform_grid(20)
    geom = space.at(grid)
    Phi_ref = np.stack([phi_ref(k, grid) for k in range(1, 5)], axis=1)
    np.testing.assert_allclose(geom.Phi, Phi_ref, rtol=0, atol=2 * _basis_atol(4))
    np.testing.assert_allclose(space.design(grid), geom.Phi, rtol=0, atol=0)  # the same computation
    np.testing.assert_allclose(geom.eval_norm, np.linalg.norm(Phi_ref, axis=1), rtol=2 * _basis_atol(4) + gamma(6),
                               atol=0)  # norms >= 1 of rows off by that
    M_atol = 2 * product_atol(Phi_ref.T, Phi_ref).max() + 2 * 20 * np.sqrt(7) * 2 * _basis_atol(4)
    np.testing.assert_allclose(geom.M, Phi_ref.T @ Phi_ref, rtol=0, atol=M_atol)
    assert geom.metric == "IMSE" and geom.T == 20 and geom.dim == 4
    # Values, coef_from_values (exact for f in H_m), evaluate.
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((3, 4))
    v_atol = 2 * product_atol(theta, Phi_ref.T).max() + 2 * _basis_atol(4) * np.abs(theta).sum(axis=1).max()
    np.testing.assert_allclose(geom.values(theta), theta @ Phi_ref.T, rtol=0, atol=v_atol)
    # a consistent least-squares solve: solve_rtol of ||θ||, and the values' rounding through Φ⁺
    c_atol = (solve_rtol(geom.M, 24) * np.linalg.norm(theta, axis=1).max()
              + np.linalg.norm(np.linalg.pinv(geom.Phi), 2) * np.sqrt(20) * product_atol(theta, geom.Phi.T).max())
    np.testing.assert_allclose(geom.coef_from_values(geom.values(theta)), theta, rtol=0, atol=c_atol)
    t = rng.random(7)
    np.testing.assert_allclose(geom.evaluate(theta, t), space.evaluate(theta, t), rtol=0, atol=0)  # the same call
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
        # Gauss nodes exact; f_a − f_b off by the basis and the products (df), squared and summed (γ_70)
        df = (2 * _basis_atol(6) + gamma(8)) * (np.abs(a).sum() + np.abs(b).sum()) * np.sqrt(11)
        assert geom.error(a, b) == pytest.approx(imse, rel=2 * df / np.sqrt(imse) + df**2 / imse + gamma(70), abs=0)
    df = (2 * _basis_atol(6) + gamma(8)) * np.abs(a).sum() * np.sqrt(11)
    assert space.norm(a) == pytest.approx(np.sqrt(np.sum(w * space.evaluate(a, t) ** 2)),
                                          rel=df / np.linalg.norm(a) + gamma(70), abs=0)


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
        np.testing.assert_allclose(K, gauss_ref(grid, grid, 0.2), rtol=_gauss_rtol(grid, grid, 0.2), atol=0)
        np.testing.assert_array_equal(K, K.T)
        np.testing.assert_allclose(np.diag(K), 1.0, rtol=0, atol=0)  # exp(0), exactly
        assert np.linalg.eigvalsh(K)[0] > 0
    np.testing.assert_allclose(k.diag(np.linspace(0, 1, 5)), 1.0, rtol=0, atol=0)


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
    T, nK = grid.size, np.linalg.norm(K, 2)
    k_atol = 0.0 if kernel.name == "brownian" else _gauss_rtol(grid, grid, kernel.rho)  # K by two formulas
    # V̂√Λ̂·V̂ᵀ is symmetric up to the product's rounding, T·γ_T·||K||^½ on each side
    np.testing.assert_allclose(R, R.T, rtol=0, atol=2 * T * gamma(T) * np.sqrt(nK))
    np.testing.assert_allclose(R @ R, K, rtol=0, atol=psd_root_rtol(T) * nK + k_atol)
    # Λ̂^{-½}(V̂ᵀV̂ − I)Λ̂^{½}: V̂'s orthogonality (2e) and the products (T·γ_{T+1}), times sqrt(κ(K))
    inv_atol = 3 * (2 * eigh_rtol(T) + T * gamma(T + 1)) * np.sqrt(np.linalg.cond(K))
    np.testing.assert_allclose(geom.Phi_inv @ R, np.eye(T), rtol=0, atol=inv_atol)
    np.testing.assert_allclose(geom.eval_norm, np.sqrt(np.diag(K)), rtol=gamma(1), atol=0)  # sqrt(1) or sqrt(t)
    assert geom.metric == "MSE" and geom.dim == grid.size and not geom.floored

    rng = np.random.default_rng(5)
    alpha = rng.standard_normal((4, grid.size))
    f_grid = alpha @ K  # f = Σ α_j K(t_j, ·) on the grid
    beta = geom.coef_from_values(f_grid)
    # RKHS norm of the β coordinates is sqrt(αᵀK_Tα).
    # ||β||² = (αK)Φ̂⁻²(Kα): Φ̂² off K by psd_root_rtol·||K|| (κ(K) of it relative), the solve's
    # solve_rtol, the data αK's rounding through Φ̂⁻¹; the form αᵀKα rounds by γ_{T²+8} of
    # |α|ᵀ|K||α| (amp of itself), and K by two formulas
    q = np.einsum("ij,jk,ik->i", alpha, K, alpha)
    amp = np.einsum("ij,jk,ik->i", np.abs(alpha), np.abs(K), np.abs(alpha)) / q
    form = (gamma(T * T + 8) + k_atol) * amp
    data = np.linalg.norm(geom.Phi_inv, 2) * gamma(T) * np.linalg.norm(np.abs(alpha) @ np.abs(K), axis=1) / np.sqrt(q)
    rel = psd_root_rtol(T) * np.linalg.cond(K) + solve_rtol(K, 2 * T) + data + form
    assert np.all(np.abs(np.linalg.norm(beta, axis=1) - np.sqrt(q)) <= rel * np.sqrt(q))
    assert np.all(np.abs(space.rkhs_norm(alpha, grid) - np.sqrt(q)) <= form * np.sqrt(q))
    # Grid values reproduce, on the grid and through evaluate.
    # Φ̂β̂ against αK: the solve is backward stable (γ_{8T}·||Φ||·||β||, no κ), f_grid rounds (γ_T·|α||K|),
    # K by two formulas; through evaluate, K^{-½}'s error as in test_pipelines._kernel_eval_atol
    f_atol = (gamma(8 * T) * np.linalg.norm(geom.Phi, 2) * np.linalg.norm(beta, axis=1, keepdims=True)
              + gamma(T) * (np.abs(alpha) @ np.abs(K)) + k_atol * (np.abs(alpha) @ np.abs(K)))
    assert np.all(np.abs(geom.values(beta) - f_grid) <= f_atol)
    assert np.all(np.abs(geom.evaluate(beta, grid) - f_grid) <= f_atol + _kernel_eval_atol(geom, kernel, beta, grid))
    # Off the grid: the interpolant Σ α_j K(t_j, t).
    t = rng.random(9)
    Kt = np.minimum.outer(grid, t) if kernel.name == "brownian" else gauss_ref(grid, t, kernel.rho)
    # β = K^½α to rel (above) of ||β||, evaluated through K^{-½} (its bound), against αK(grid, t) (γ_T)
    e_atol = (_kernel_eval_atol(geom, kernel, beta, t) + gamma(T) * (np.abs(alpha) @ np.abs(Kt))
              + np.max(rel) * np.linalg.norm(beta, axis=1, keepdims=True) * np.linalg.norm(geom.Phi_inv, 2)
              * np.linalg.norm(Kt, axis=0))
    assert np.all(np.abs(geom.evaluate(beta, t) - alpha @ Kt) <= e_atol)
    # Grid MSE (eq. 8).
    b2 = beta[::-1]
    err = np.mean((f_grid - f_grid[::-1]) ** 2, axis=1)
    dv = 2 * f_atol + product_atol(np.abs(beta - b2), geom.Phi.T)  # both sides' values, and Φ(β − β')
    d = np.sqrt(np.mean(dv**2, axis=-1))
    assert np.all(np.abs(geom.error(beta, b2) - err) <= 2 * np.sqrt(err) * d + d**2 + gamma(T + 2) * err)


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
        # f = αK(c, t) rounds by γ_k·|α||K|, the norm's form by γ_{k²+8}·amp of itself
        Kct = kernel(c[:, None], t[None, :])
        slack = gamma(c.size) * (np.abs(alpha) @ np.abs(Kct)) + norm * gamma(c.size**2 + 8) * (
            np.abs(alpha) @ np.abs(kernel.gram(c)) @ np.abs(alpha)) / max(norm**2, 1e-300) * np.sqrt(kernel.diag(t))
        assert np.all(np.abs(f) <= norm * np.sqrt(kernel.diag(t)) + slack + 1e-300)
    # Equality at t = c for a single section K(c, ·) with K(c, c) > 0.
    c = np.array([0.3])
    assert abs(kernel(c, c)[0]) == pytest.approx(space.rkhs_norm(np.ones(1), c) * np.sqrt(kernel.diag(c)[0]),
                                                 rel=gamma(4), abs=0)  # sqrt(K)·sqrt(K) = K, a few roundings


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
    # eigenvalues raised to the floor move Φ̂² by at most the floor (+ what they were below 0, e·||K||),
    # and the square root's own error psd_root_rtol·||K||
    nK = np.linalg.norm(geom.K, 2)
    atol = KernelSpace(gaussian_kernel(0.2), regularize=True).floor + (psd_root_rtol(20) + eigh_rtol(20)) * nK
    np.testing.assert_allclose(geom.Phi @ geom.Phi, geom.K, rtol=0, atol=atol)
    assert KernelSpace(gaussian_kernel(0.2)) != KernelSpace(gaussian_kernel(0.2), regularize=True)
