"""Function spaces: the Legendre space H_m (Example 1), kernel spaces H_K (Example 2), and every space of the registry.

Independent references: scipy's shifted Legendre polynomials and Gauss–Legendre
quadrature for H_m; each registered family's formula written out independently in
tests/_spaces.py, for the generic tests below; closed-form Brownian-motion facts.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from numpy.polynomial import legendre as npleg
from numpy.polynomial import polynomial as nppoly
from scipy import special
from test_pipelines import _kernel_eval_atol

from dpfda import (
    AssumptionError,
    FourierSpace,
    FunctionSpace,
    GaussianKernel,
    Kernel,
    KernelSpace,
    LegendreSpace,
    OrthonormalSpace,
    gaussian_kernel,
    space_from_spec,
    uniform_grid,
)
from dpfda.maths.rounding import eigh_rtol, product_atol, psd_root_rtol, solve_rtol
from dpfda.maths.spaces import SPACE_FAMILIES
from dpfda.maths.summation import gamma

import _spaces
from _spaces import CASES, GRIDS, all_spaces, case_of, held, on_grid
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


KERNEL_ON_GRIDS = [pytest.param(space, g, id=f"{cid}-{gname}")
                   for gname, g in GRIDS.items() for cid, space in on_grid(g, KernelSpace).items()]
KERNEL_MEMBERS = [pytest.param(s, id=s.spec) for _, s in all_spaces() if isinstance(s, KernelSpace)]


@pytest.mark.parametrize("space, grid", KERNEL_ON_GRIDS)
def test_kernel_geometry(space, grid):
    geom = space.at(grid)
    kernel = space.kernel
    K = case_of(space).reference(space, grid)
    # Φ = K_T^{1/2}: symmetric, squares to K_T; Φ_inv is its inverse.
    R = space.sqrt_gram(grid)
    T, nK = grid.size, np.linalg.norm(geom.K, 2)
    k_atol = case_of(space).reference_atol  # dpfda's K against the reference's, entrywise
    # V̂√Λ̂·V̂ᵀ is symmetric up to the product's rounding, T·γ_T·||K||^½ on each side
    np.testing.assert_allclose(R, R.T, rtol=0, atol=2 * T * gamma(T) * np.sqrt(nK))
    np.testing.assert_allclose(R @ R, K, rtol=0, atol=psd_root_rtol(T) * nK + k_atol)
    # Λ̂^{-½}(V̂ᵀV̂ − I)Λ̂^{½}: V̂'s orthogonality (2e) and the products (T·γ_{T+1}), times sqrt(κ(K))
    inv_atol = 3 * (2 * eigh_rtol(T) + T * gamma(T + 1)) * np.sqrt(np.linalg.cond(geom.K))
    np.testing.assert_allclose(geom.Phi_inv @ R, np.eye(T), rtol=0, atol=inv_atol)
    np.testing.assert_allclose(geom.eval_norm, np.sqrt(np.diag(K)), rtol=gamma(1), atol=0)  # sqrt(1) or sqrt(t)
    assert geom.metric == "MSE" and geom.dim == grid.size and not geom.floored

    rng = np.random.default_rng(5)
    alpha = rng.standard_normal((4, grid.size))
    f_grid = alpha @ K  # f = Σ α_j K(t_j, ·) on the grid
    beta = geom.coef_from_values(f_grid)
    # RKHS norm of the β coordinates is sqrt(αᵀK_Tα).
    # ||β||² = (αK)Φ̂⁻²(Kα): Φ̂² off K by psd_root_rtol·||K|| and dpfda's K off the reference's by
    # T·k_atol (κ(K)/||K|| of them relative), the solve's solve_rtol, the data αK's rounding through
    # Φ̂⁻¹; the form αᵀKα rounds by γ_{T²+8} of |α|ᵀ|K||α| (amp of itself), and by k_atol·(Σ|α|)²
    q = np.einsum("ij,jk,ik->i", alpha, K, alpha)
    amp = np.einsum("ij,jk,ik->i", np.abs(alpha), np.abs(K), np.abs(alpha)) / q
    form = gamma(T * T + 8) * amp + k_atol * np.sum(np.abs(alpha), axis=1) ** 2 / q
    data = np.linalg.norm(geom.Phi_inv, 2) * gamma(T) * np.linalg.norm(np.abs(alpha) @ np.abs(K), axis=1) / np.sqrt(q)
    rel = (psd_root_rtol(T) + T * k_atol / nK) * np.linalg.cond(geom.K) + solve_rtol(geom.K, 2 * T) + data + form
    assert np.all(np.abs(np.linalg.norm(beta, axis=1) - np.sqrt(q)) <= rel * np.sqrt(q))
    assert np.all(np.abs(space.rkhs_norm(alpha, grid) - np.sqrt(q)) <= form * np.sqrt(q))
    # Grid values reproduce, on the grid and through evaluate.
    # Φ̂β̂ against αK: the solve is backward stable (γ_{8T}·||Φ||·||β||, no κ), f_grid rounds (γ_T·|α||K|),
    # K by two formulas; through evaluate, K^{-½}'s error as in test_pipelines._kernel_eval_atol
    f_atol = (gamma(8 * T) * np.linalg.norm(geom.Phi, 2) * np.linalg.norm(beta, axis=1, keepdims=True)
              + gamma(T) * (np.abs(alpha) @ np.abs(K)) + k_atol * np.sum(np.abs(alpha), axis=1, keepdims=True))
    assert np.all(np.abs(geom.values(beta) - f_grid) <= f_atol)
    assert np.all(np.abs(geom.evaluate(beta, grid) - f_grid) <= f_atol + _kernel_eval_atol(geom, kernel, beta, grid))
    # Off the grid: the interpolant Σ α_j K(t_j, t).
    t = rng.random(9)
    Kt = case_of(space).reference(space, np.concatenate([grid, t]))[:grid.size, grid.size:]
    np.testing.assert_allclose(kernel(grid[:, None], t[None, :]), Kt, rtol=0, atol=k_atol)
    # β = K^½α to rel (above) of ||β||, evaluated through K^{-½} (its bound), against αK(grid, t) (γ_T),
    # and dpfda's K(grid, t) against the reference's (k_atol per entry)
    e_atol = (_kernel_eval_atol(geom, kernel, beta, t) + gamma(T) * (np.abs(alpha) @ np.abs(Kt))
              + k_atol * np.sum(np.abs(alpha), axis=1, keepdims=True)
              + np.max(rel) * np.linalg.norm(beta, axis=1, keepdims=True) * np.linalg.norm(geom.Phi_inv, 2)
              * np.linalg.norm(Kt, axis=0))
    assert np.all(np.abs(geom.evaluate(beta, t) - alpha @ Kt) <= e_atol)
    # Grid MSE (eq. 8).
    b2 = beta[::-1]
    err = np.mean((f_grid - f_grid[::-1]) ** 2, axis=1)
    dv = 2 * f_atol + product_atol(np.abs(beta - b2), geom.Phi.T)  # both sides' values, and Φ(β − β')
    d = np.sqrt(np.mean(dv**2, axis=-1))
    assert np.all(np.abs(geom.error(beta, b2) - err) <= 2 * np.sqrt(err) * d + d**2 + gamma(T + 2) * err)


@pytest.mark.parametrize("space", KERNEL_MEMBERS)
def test_reproducing_property_bound(space):
    """|f(t)| <= ||f||_H sqrt(K(t, t)) for random f = Σ α_k K(c_k, ·)."""
    kernel = space.kernel
    rng = np.random.default_rng(6)
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
@pytest.mark.parametrize("space", [pytest.param(s, id=cid) for cid, s in on_grid(GRIDS["mid9"], KernelSpace).items()])
def test_gp_sample_covariance(space):
    """Z_K ~ GP(0, K): sample second moments match K at the points, within SE."""
    kernel = space.kernel
    rng = np.random.default_rng(7)
    t = np.array([0.0, 0.1, 0.35, 0.5, 0.9, 1.0])
    N = reps(100_000, 20_000)
    Z = space.sample_gaussian(rng, t, size=N)
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
    if kernel.diag(t)[0] == 0:
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


# ---------------------------------------------------------------------------
# Every space of the registry (tests/_spaces.py): specs, equality, nesting, formulas
# ---------------------------------------------------------------------------

MEMBERS = [pytest.param(s, id=s.spec) for _, s in all_spaces()]
EPS = np.finfo(float).eps


def family_of(space: FunctionSpace) -> str:
    return space.spec.split(":", 1)[0]


def test_every_family_has_one_case_in_the_test_registry():
    families = [family_of(c.space(8)) for c in CASES]
    assert sorted(families) == sorted(SPACE_FAMILIES), "add a SpaceCase to tests/_spaces.py for each family"
    assert len({c.id for c in CASES}) == len(CASES)
    for c in CASES:  # every member of a case is of its family
        assert {family_of(s) for s in c.members()} == {family_of(c.space(8))}
    for name, cls in SPACE_FAMILIES.items():
        assert cls.family == name and cls.spec_form.split(":")[0] == name and cls.spec_help.isascii()



def registry_mismatch(doc: str, tests: Path) -> tuple[set[str], set[str]]:
    """(modules that import the registry but the docstring does not name, modules it names that do not import it)."""
    importers = {p.name for p in tests.glob("test_*.py")
                 if re.search(r"^\s*(from _spaces import|import _spaces\b)", p.read_text(encoding="utf-8"),
                              re.MULTILINE)}
    named = set(re.findall(r"\btest_\w+\.py\b", doc))
    return importers - named, named - importers


def test_the_registry_names_every_test_module_that_uses_it():
    # what "the generic tests then cover it" means, module by module (benchmarks/new_space.py runs them)
    assert registry_mismatch(_spaces.__doc__, Path(__file__).parent) == (set(), set())


def test_a_module_left_out_of_the_registry_docstring_is_caught():
    """Negative control: the docstring without one of its modules, and with one that does not use it."""
    doc = _spaces.__doc__.replace("test_bands.py", "")
    assert registry_mismatch(doc, Path(__file__).parent) == ({"test_bands.py"}, set())
    assert registry_mismatch(doc + " test_cli.py", Path(__file__).parent)[1] == {"test_cli.py"}

@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_case_refuses_exactly_the_grids_it_names(case):
    for name, grid in GRIDS.items():
        if name in case.refuses:
            with pytest.raises(AssumptionError):
                case.space(grid.size).at(grid)
        else:
            case.space(grid.size).at(grid)
    assert set(case.refuses) <= set(GRIDS)


def assert_reads_back(space: FunctionSpace) -> None:
    """The spec reads back to an equal space holding the same numbers, with the same geometry."""
    back = space_from_spec(space.spec)
    assert type(back) is type(space) and back == space and hash(back) == hash(space)
    assert back.spec == space.spec and held(back) == held(space), (space.spec, held(back), held(space))
    assert space_from_spec(f"  {space.spec} ") == space
    # the numbers themselves, computed afresh by each (no cached geometry in between)
    for grid in GRIDS.values():
        if isinstance(space, OrthonormalSpace):
            assert np.array_equal(back.basis(grid), space.basis(grid))
        else:
            assert np.array_equal(back.kernel.gram(grid), space.kernel.gram(grid))


@pytest.mark.parametrize("space", MEMBERS)
def test_the_spec_reads_back_to_an_equal_space(space):
    assert_reads_back(space)
    assert SPACE_FAMILIES[family_of(space)].from_spec(space.spec) == space
    assert space.description["spec"] == space.spec
    assert space.description["kind"].startswith(family_of(space))


def test_a_spec_that_leaves_out_a_number_is_caught(monkeypatch):
    """Negative control: a space whose spec forgot a parameter does not read back."""
    space = LegendreSpace(8)
    assert_reads_back(space)
    monkeypatch.setattr(LegendreSpace, "spec", property(lambda self: "legendre:3"))
    with pytest.raises(AssertionError):
        assert_reads_back(space)


def equality_disagreements(spaces: list[FunctionSpace]) -> list[tuple[str, str]]:
    """Pairs whose == or hash disagrees with (class, spec): spaces are equal exactly when both match."""
    out = []
    for a in spaces:
        for b in spaces:
            same = type(a) is type(b) and a.spec == b.spec
            if (a == b) != same or (same and hash(a) != hash(b)):
                out.append((repr(a), repr(b)))
    return out


def test_spaces_are_equal_exactly_when_class_and_spec_agree():
    spaces = [s for _, s in all_spaces()]
    copies = [space_from_spec(s.spec) for s in spaces]  # equal, not identical
    assert equality_disagreements(spaces + copies) == []
    specs = [s.spec for s in spaces]
    assert len(set(specs)) == len(specs)  # the registry's members all differ


def test_equality_that_ignores_a_parameter_is_caught(monkeypatch):
    """Negative control: the comparison of old (a kernel space by its kernel only) is caught."""
    spaces = [s for _, s in all_spaces()]
    monkeypatch.setattr(KernelSpace, "__eq__", lambda self, other: isinstance(other, KernelSpace)
                        and other.kernel == self.kernel)
    assert equality_disagreements(spaces)


def test_kernels_are_equal_by_class_and_parameters():
    assert gaussian_kernel(0.2) == GaussianKernel(0.2) and gaussian_kernel(0.2) != gaussian_kernel(0.2 + 1e-16)
    assert hash(gaussian_kernel(0.2)) == hash(GaussianKernel(0.2))
    assert KernelSpace(gaussian_kernel(0.2)) != KernelSpace(gaussian_kernel(0.2), floor=1e-9)
    assert LegendreSpace(3) != FourierSpace(3) and hash(LegendreSpace(3)) != hash(FourierSpace(3))


@pytest.mark.parametrize("text, message", [
    ("spline:3", "unknown space family 'spline'"),
    ("legendre:8.5", "whole number >= 1"),
    ("legendre:3:regularize", "takes no options"),
    ("fourier", "fourier:M needs M"),
    ("gaussian:x", "RHO in gaussian:RHO must be a number"),
    ("gaussian:-1", "rho must be a finite number > 0"),
    ("gaussian:0.2,0.3", "takes 1 number"),
    ("brownian:0.2", "not an option of a kernel space"),
    ("gaussian:0.2:regularize:regularize", "given twice"),
    ("gaussian:0.2:floor=0", "floor must be a finite number > 0"),
])
def test_bad_specs_are_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        space_from_spec(text)
    with pytest.raises(TypeError, match="string"):
        space_from_spec(8)  # type: ignore[arg-type]


# -- nesting --------------------------------------------------------------------------------

POINTS = np.sort(np.random.default_rng(11).random(40))


def prefix_gap(space: OrthonormalSpace, m: int) -> float:
    """max |φ^(m)_k(t) − φ^(m−1)_k(t)| over k < m: 0 when the basis of m − 1 is the first m − 1 of m's."""
    return float(np.max(np.abs(space.with_dimension(m).basis(POINTS)[:, : m - 1]
                               - space.with_dimension(m - 1).basis(POINTS))))


@pytest.mark.parametrize("space", MEMBERS)
def test_nests_says_whether_the_family_nests(space):
    assert isinstance(space.nests, bool)
    if isinstance(space, KernelSpace):
        assert space.nests is False  # no dimension to choose: the grid's T points
        return
    # two evaluations of one function agree to a few ulps of |φ_k| <= sqrt(2m − 1) when the bases nest
    nested = [prefix_gap(space, m) <= 16 * EPS * np.sqrt(2 * m - 1) for m in range(2, 13)]
    assert all(nested) if space.nests else not all(nested), space
    assert all(space.with_dimension(m).spec == f"{family_of(space)}:{m}" for m in range(1, 13))


class ReversedLegendre(LegendreSpace):
    """Negative control: the Legendre functions in reverse order claim to nest, and do not."""

    def basis(self, t):
        return super().basis(t)[:, ::-1]


def test_a_false_claim_to_nest_is_caught():
    assert prefix_gap(LegendreSpace(1), 5) == 0.0
    assert prefix_gap(ReversedLegendre(1), 5) > 1.0
    with pytest.raises(AssertionError):
        test_nests_says_whether_the_family_nests(ReversedLegendre(4))


# -- formulas against independent references -----------------------------------------------


@pytest.mark.parametrize("space", [p for p in MEMBERS if isinstance(p.values[0], OrthonormalSpace)])
def test_orthonormal_bases_against_their_reference_and_orthonormal(space):
    case = case_of(space)
    t, w = gl_nodes(200)  # exact for the degree and frequencies of the registry (< 2·200)
    B = space.basis(t)
    np.testing.assert_allclose(B, case.reference(space, t), rtol=0, atol=case.reference_atol)
    # Gauss–Legendre is exact for these products: the basis to ref = case.reference_atol (the registry's
    # stated accuracy) moves Σ_q w_q φ_jφ_k by at most 2·ref + ref² (Σw = 1, Σwφ² = 1), the 200-term sums
    # round by γ_{202} of Σw|φ_j||φ_k| <= 1
    ref = case.reference_atol
    np.testing.assert_allclose(B.T @ (w[:, None] * B), np.eye(space.m), rtol=0,
                               atol=2 * ref + ref**2 + gamma(t.size + 2))
    theta = np.random.default_rng(12).standard_normal(space.m)
    # projection by a rule exact here: f = Σθ_jφ_j to γ_m·|θ||φ| + ref·Σ|θ|, against φ_k (to ref) and
    # summed over N nodes (γ_N), |φ| <= phi_max
    phi_max = np.abs(B).max()
    atol = np.abs(theta).sum() * phi_max * (phi_max * gamma(space.m + 64 + 2 * space.m + 2) + 2 * ref)
    np.testing.assert_allclose(space.project(lambda x: space.evaluate(theta, x)), theta, rtol=0, atol=atol)


def psd_shortfall(kernel: Kernel, points: np.ndarray) -> float:
    """How far the Gram matrix's smallest eigenvalue falls below −T·u·||K||₂ (<= 0 for a PSD kernel).

    LAPACK's symmetric eigensolver is backward stable: each computed eigenvalue is within
    p(T)·u·||K||₂ of an exact one, p a modest function of T (LAPACK Users' Guide §4.7); T is taken.
    """
    K = kernel.gram(points)
    lam = np.linalg.eigvalsh(K)
    return float(-lam[0] - points.size * EPS * max(abs(lam[-1]), 1.0))


@pytest.mark.parametrize("space", KERNEL_MEMBERS)
def test_kernels_against_their_reference_symmetric_and_positive_semidefinite(space):
    case, kernel = case_of(space), space.kernel
    rng = np.random.default_rng(13)
    for T in (2, 7, 40):
        t = np.sort(rng.random(T))
        K = kernel.gram(t)
        ref = case.reference(space, t)
        np.testing.assert_allclose(K, ref, rtol=0, atol=case.reference_atol)
        assert np.array_equal(K, K.T)
        assert np.array_equal(np.diag(K), kernel.diag(t)) and np.array_equal(kernel.diag(t), np.diag(ref))
        assert psd_shortfall(kernel, t) <= 0
    clustered = np.sort(np.concatenate([0.5 + 1e-9 * np.arange(5), rng.random(20)]))
    assert psd_shortfall(kernel, clustered) <= 0
    # on the grids it takes, K_T is positive definite above the floor: a Cholesky factor exists
    for grid in on_grid_of(space):
        assert np.all(np.linalg.eigvalsh(kernel.gram(grid)) > 0)
        np.linalg.cholesky(kernel.gram(grid))


def on_grid_of(space: KernelSpace) -> list[np.ndarray]:
    out = []
    for grid in GRIDS.values():
        try:
            space.at(grid)
        except AssumptionError:
            continue
        out.append(grid)
    return out


class Boxcar(Kernel):
    """Negative control: 1 when |s − t| < ρ, else 0 — symmetric, K(t, t) = 1, and not positive semidefinite."""

    family, spec_form, spec_help = "boxcar", "boxcar:RHO", "not a kernel"

    def __init__(self, rho: float) -> None:
        self.rho = rho

    def __call__(self, s, t):
        return (np.abs(np.asarray(s, dtype=float) - np.asarray(t, dtype=float)) < self.rho).astype(float)

    @property
    def parameters(self) -> dict[str, float]:
        return {"rho": self.rho}


def test_a_kernel_that_is_not_positive_semidefinite_is_caught():
    t = np.sort(np.random.default_rng(13).random(40))
    assert psd_shortfall(Boxcar(0.3), t) > 0.1
    assert psd_shortfall(gaussian_kernel(0.3), t) <= 0
