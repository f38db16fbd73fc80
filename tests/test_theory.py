"""The bounds and limits of §4.2 (Theorems 10-11, 13-14, Corollaries 12 and 15).

Formulas are recomputed here from the paper's statements with matrices built
independently (scipy Legendre polynomials, kernel formulas), and the
conditions on B' are probed on both sides of their thresholds.  Two seeded
Monte Carlo checks confirm that the σ₀ > 0 bound of Theorem 10 and the lower
bound of Theorem 11 hold in settings where their conditions are met.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from dpfda import KernelSpace, LegendreSpace, brownian_kernel, ftp, gaussian_kernel, ptf, theory, uniform_grid
from dpfda.maths.rounding import eigh_rtol, psd_root_rtol, solve_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.pipelines import ftp_fit_mean, ptf_clip_bounds, ptf_default_weights, ptf_weight_vector
from dpfda_book.simulation.models import observe, polynomial_curves

from _support import mc_mean_se, reps


def phi_ref(m, t):
    return np.stack([np.sqrt(2 * k - 1) * special.eval_sh_legendre(k - 1, t)
                     for k in range(1, m + 1)], axis=1)


def A_ref(m, grid):
    Phi = phi_ref(m, grid)
    W = 1.0 / np.sum(Phi**2, axis=1)
    return Phi.T @ (W[:, None] * Phi)


def _lam_rtol(M, m):
    """Relative error of λ_min of a Gram matrix M = ΦᵀWΦ built from the basis by two routes (the
    library's recurrence, scipy's: γ_{4m} per value, three of them in each entry, m terms: 3m²·γ_{4m}
    of ||M||) and two eigensolves (2·eigh_rtol(m) of ||M||), against λ_min: times κ(M)."""
    return (3 * m * m * gamma(4 * m) + 2 * eigh_rtol(m)) * np.linalg.cond(M)


def _trinv_rtol(M, T, m):
    """Relative error of tr(M⁻¹) computed from the two routes' M: solve_rtol for each computation and
    κ(M) times the entries' difference (3m²·γ_{4m})."""
    return 2 * solve_rtol(M, T + m) + np.linalg.cond(M) * 3 * m * m * gamma(4 * m) + gamma(8)


def _expo_rtol(radius, B, lam, scale, root, rel_lam):
    """Relative error of exp(−(a)²/4), a = (B' − B)·sqrt(λ)/scale − root, when λ is off by rel_lam:
    a moves by |a + root|·rel_lam/2 (and γ₄ of |a|), the exponential by |a|/2 times that, plus its ulps."""
    a = (radius - B) * np.sqrt(lam) / scale - root
    da = abs(a + root) * rel_lam / 2 + gamma(4) * (abs(a) + root)
    return abs(a) * da / 2 + gamma(4)


# ---------------------------------------------------------------------------
# Corollaries 12 and 15: the limiting ratio
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1, 2, 3, 4, 6, 8])
@pytest.mark.parametrize("T", [8, 20, 50])
def test_legendre_ratio_limit(m, T):
    grid = uniform_grid(T)
    geom = LegendreSpace(m).at(grid)
    A = A_ref(m, grid)
    limit = theory.ratio_limit(geom)
    assert limit == pytest.approx(m / (T * np.trace(np.linalg.inv(A))), rel=_trinv_rtol(A, T, m), abs=0)
    assert theory.ratio_limit_upper(geom) == 1.0 / m  # the same division
    # tr A = T (each row of Φ weighted by its own squared norm), so by AM-HM
    # m/(T tr A⁻¹) <= 1/m, with equality exactly when all eigenvalues of A are equal.
    lam = np.linalg.eigvalsh(A)
    # tr A = T to the rounding of W and the products (γ_{T+m+4} of T), Σλ = tr A to m·eigh_rtol(m)·||A||
    assert np.sum(lam) == pytest.approx(T, rel=gamma(T + m + 4) + m * eigh_rtol(m), abs=0)
    spread = (lam[-1] - lam[0]) / lam[-1]
    if spread <= 2 * eigh_rtol(m):  # equal eigenvalues, to the eigensolver's accuracy
        assert limit == pytest.approx(1.0 / m, rel=_trinv_rtol(A, T, m), abs=0)
    else:
        assert limit < 1.0 / m * (1 - 1e-3 * spread**2)
    # The limit is the ratio of the exact noiseless FTP error to the unconstrained PTF error.
    ratio = (theory.ftp_noiseless_error(geom, 1.1, 100, 0.5)
             / theory.ptf_unconstrained_error(geom, 1.1, 100, 0.5))
    assert ratio == pytest.approx(limit, rel=gamma(16), abs=0)  # the same tr A⁻¹, and σ²/τ² = 1/T


def test_ratio_limit_equality_case():
    """Equal eigenvalues: m = 2 at t = 1/2 ± 1/sqrt(12), where φ₂ = ∓1 and A = I."""
    grid = np.array([0.5 - 1 / np.sqrt(12), 0.5 + 1 / np.sqrt(12)])
    geom = LegendreSpace(2).at(grid)
    # the grid rounded (φ₂ = ∓1 to about 2√3·u) and ΦᵀWΦ formed: γ_16 of |Φ|ᵀW|Φ|; tr A⁻¹ of a
    # matrix that close to I: γ_32 of it
    Phi = geom.Phi
    W = ptf_default_weights(geom)
    np.testing.assert_allclose(theory.ptf_A(geom), np.eye(2), rtol=0,
                               atol=gamma(16) * np.max(np.abs(Phi).T @ (W[:, None] * np.abs(Phi))))
    assert theory.ratio_limit(geom) == pytest.approx(0.5, rel=gamma(32), abs=0)
    assert theory.ratio_limit(geom) == pytest.approx(theory.ratio_limit_upper(geom), rel=gamma(32), abs=0)
    # m = 1: A is 1x1, trivially "equal eigenvalues": ratio 1 = 1/m (A = T, a division and a product).
    assert theory.ratio_limit(LegendreSpace(1).at(uniform_grid(9))) == pytest.approx(1.0, rel=gamma(4), abs=0)


@pytest.mark.parametrize("T", [2, 4, 6, 8])
def test_kernel_ratio_limit_is_one_over_T(T):
    for space, grid in [(KernelSpace(gaussian_kernel(0.2)), uniform_grid(T)),
                        (KernelSpace(brownian_kernel()), np.arange(1, T + 1) / T)]:
        geom = space.at(grid)
        rel = T * psd_root_rtol(T) + gamma(T + 8)  # tr(Φ̂Φ̂ᵀ) against tr K = Σ K(t, t), Φ̂ = K^½ by eigh
        assert theory.ratio_limit(geom) == pytest.approx(1.0 / T, rel=rel, abs=0)
        assert theory.ratio_limit_upper(geom) == 1.0 / T
        ratio = (theory.ftp_noiseless_error(geom, 1.1, 100, 1.0)
                 / theory.ptf_unconstrained_error(geom, 1.1, 100, 1.0))
        assert ratio == pytest.approx(1.0 / T, rel=rel + gamma(8), abs=0)


# ---------------------------------------------------------------------------
# Bounds: values and conditions
# ---------------------------------------------------------------------------


def test_tau_and_chi2_tail():
    assert theory.tau(1.5, 20, 100, 0.5) == pytest.approx(2 * 1.5 * np.sqrt(20) / (100 * 0.5), rel=gamma(8), abs=0)
    for m in (1, 4, 10):
        x = np.array([0.0, 0.5, 2.0, 10.0])
        thr, bound = theory.chi2_tail_bound(m, x)
        np.testing.assert_allclose(thr, m + 2 * np.sqrt(m * x) + 2 * x, rtol=gamma(8), atol=0)  # the same formula
        np.testing.assert_allclose(bound, np.exp(-x), rtol=gamma(1), atol=0)
        assert np.all(stats.chi2.sf(thr, m) <= bound)  # Laurent–Massart (eq. 27)


def test_theorem_10_bound():
    m, T, B, n, mu = 4, 20, 1.0, 50, 1.0
    grid = uniform_grid(T)
    geom = LegendreSpace(m).at(grid)
    # σ₀ = 0: exact 4mB'²/(n²μ²), condition B' >= B.
    for radius, holds in [(1.1, True), (1.0, True), (0.9, False)]:
        b = theory.ftp_imse_bound(geom, B, radius, n, mu, 0.0)
        assert b.value == pytest.approx(4 * m * radius**2 / (n**2 * mu**2), rel=gamma(8), abs=0)
        assert b.holds is holds and b.theorem == "Theorem 10"
        assert float(b) == b.value
    with pytest.raises(ValueError, match="Theorem 10"):
        theory.ftp_imse_bound(geom, B, 0.9, n, mu, 0.0).require()
    assert theory.ftp_imse_bound(geom, B, 1.1, n, mu, 0.0).require().holds
    # σ₀ > 0: eq. (32) with κ(M), tr(M⁻¹), λ_min(M) from an independent M.
    s0 = 0.2
    M = phi_ref(m, grid).T @ phi_ref(m, grid)
    lam = np.linalg.eigvalsh(M)
    kappa, trMinv = lam[-1] / lam[0], np.trace(np.linalg.inv(M))
    need = B + np.sqrt(m) * s0 / np.sqrt(lam[0])
    for radius in [need * (1 - 1e-9), need * (1 + 1e-9), 2.0 * need]:
        b = theory.ftp_imse_bound(geom, B, radius, n, mu, s0)
        expo = np.exp(-0.25 * ((radius - B) * np.sqrt(lam[0]) / s0 - np.sqrt(m)) ** 2)
        value = (4 * m * radius**2 / (n**2 * mu**2) + kappa * s0**2 * trMinv / n
                 + (1 - 1 / n) * kappa * np.sqrt(3) * s0**2 * trMinv * expo)
        # each term positive: κ (two λ's), tr M⁻¹ and the exponential's relative errors add up
        rl = _lam_rtol(M, m)
        rel = 2 * rl + _trinv_rtol(M, T, m) + _expo_rtol(radius, B, lam[0], s0, np.sqrt(m), rl) + gamma(16)
        assert b.value == pytest.approx(value, rel=rel, abs=0)
        assert b.holds is (radius >= need)
        assert "B'" in b.condition


def test_theorem_11_bound():
    m, T, B, n, mu = 4, 20, 1.0, 200, 1.0
    grid = uniform_grid(T)
    geom = LegendreSpace(m).at(grid)
    A = A_ref(m, grid)
    lam_min = np.linalg.eigvalsh(A)[0]
    for radius in [1.01, 1.5, 3.0]:
        tau = 2 * radius * np.sqrt(T) / (n * mu)
        need = B + tau * np.sqrt(m) / np.sqrt(lam_min)
        b = theory.ptf_imse_lower_bound(geom, B, radius, n, mu)
        expo = np.exp(-0.25 * ((radius - B) * np.sqrt(lam_min) / tau - np.sqrt(m)) ** 2)
        # tr A⁻¹'s error, and 1 − √3·expo's: √3·expo·(its relative error)/(1 − √3·expo)
        e_rel = _expo_rtol(radius, B, lam_min, tau, np.sqrt(m), _lam_rtol(A, m))
        rel = _trinv_rtol(A, T, m) + np.sqrt(3) * expo * e_rel / abs(1 - np.sqrt(3) * expo) + gamma(16)
        assert b.value == pytest.approx(tau**2 * np.trace(np.linalg.inv(A)) * (1 - np.sqrt(3) * expo),
                                        rel=rel, abs=0)
        assert b.holds is (radius >= need)
        assert b.value <= theory.ptf_unconstrained_error(geom, radius, n, mu)
    with pytest.raises(ValueError, match="Theorem 11"):
        theory.ptf_imse_lower_bound(geom, B, 1.0001, 10, 0.1).require()


def test_theorems_13_and_14_bounds():
    T, B, n, mu = 6, 1.0, 100, 1.0
    grid = uniform_grid(T)
    geom = KernelSpace(gaussian_kernel(0.2)).at(grid)
    K = np.exp(-(np.subtract.outer(grid, grid) ** 2) / (2 * 0.04))
    lamK = np.linalg.eigvalsh(K)[0]
    # Theorem 13, σ₀ = 0: exact 4B'² tr(K_T)/(n²μ²T), condition B' >= B.
    b = theory.ftp_mse_bound(geom, B, 1.2, n, mu, 0.0)
    assert b.value == pytest.approx(4 * 1.2**2 * np.trace(K) / (n**2 * mu**2 * T), rel=T * psd_root_rtol(T) + gamma(8),
                                    abs=0)  # tr(Φ̂Φ̂ᵀ) against tr K
    assert b.holds and not theory.ftp_mse_bound(geom, B, 0.8, n, mu, 0.0).holds
    # Theorem 13, σ₀ > 0.
    s0 = 0.05
    need = B + s0 * np.sqrt(T) / np.sqrt(lamK)
    for radius in [need * 0.99, need * 1.01]:
        b = theory.ftp_mse_bound(geom, B, radius, n, mu, s0)
        expo = np.exp(-0.25 * ((radius - B) * np.sqrt(lamK) / s0 - np.sqrt(T)) ** 2)
        value = (4 * radius**2 * np.trace(K) / (n**2 * mu**2 * T) + s0**2 / n
                 + (1 - 1 / n) * s0**2 * np.sqrt((T + 2) / T) * expo)
        # λ_min(K) by two eigensolves of K's formula (ulps of exp: γ₄ of the entries), κ(K) times it
        rl = (2 * eigh_rtol(T) + T * gamma(4)) * np.linalg.cond(K)
        rel = T * psd_root_rtol(T) + _expo_rtol(radius, B, lamK, s0, np.sqrt(T), rl) + gamma(16)
        assert b.value == pytest.approx(value, rel=rel, abs=0)
        assert b.holds is (radius >= need)
    with pytest.raises(ValueError, match="Theorem 13"):
        theory.ftp_mse_bound(geom, B, need * 0.99, n, mu, s0).require()
    # Theorem 14: A = K^{1/2} W K^{1/2} = K_T for the Gaussian kernel (W = I).
    np.testing.assert_allclose(theory.ptf_A(geom), K, rtol=0, atol=psd_root_rtol(T) * np.linalg.norm(K, 2) + gamma(4))
    for radius in [1.05, 2.0]:
        tau = 2 * radius * np.sqrt(T) / (n * mu)
        need = B + tau * np.sqrt(T) / np.sqrt(lamK)
        b = theory.ptf_mse_lower_bound(geom, B, radius, n, mu)
        expo = np.exp(-0.25 * ((radius - B) * np.sqrt(lamK) / tau - np.sqrt(T)) ** 2)
        e_rel = _expo_rtol(radius, B, lamK, tau, np.sqrt(T), (2 * eigh_rtol(T) + T * gamma(4)) * np.linalg.cond(K))
        rel = np.sqrt(3) * expo * e_rel / abs(1 - np.sqrt(3) * expo) + gamma(16)
        assert b.value == pytest.approx(tau**2 * (1 - np.sqrt(3) * expo), rel=rel, abs=0)  # tr(W⁻¹) = T
        assert b.holds is (radius >= need)


def test_bounds_reject_the_wrong_space():
    leg = LegendreSpace(3).at(uniform_grid(10))
    ker = KernelSpace(gaussian_kernel(0.2)).at(uniform_grid(5))
    with pytest.raises(TypeError):
        theory.ftp_imse_bound(ker, 1.0, 1.1, 10, 1.0, 0.0)
    with pytest.raises(TypeError):
        theory.ptf_imse_lower_bound(ker, 1.0, 1.1, 10, 1.0)
    with pytest.raises(TypeError):
        theory.ftp_mse_bound(leg, 1.0, 1.1, 10, 1.0, 0.0)
    with pytest.raises(TypeError):
        theory.ptf_mse_lower_bound(leg, 1.0, 1.1, 10, 1.0)
    with pytest.raises(TypeError, match="geometry"):
        theory.ftp_noiseless_error(np.eye(3), 1.0, 10, 1.0)


# ---------------------------------------------------------------------------
# Monte Carlo: the bounds hold where their conditions do
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_theorem_10_bound_holds_with_observation_noise():
    m, T, B, n, mu, s0 = 4, 20, 1.0, 30, 1.0, 0.3
    grid = uniform_grid(T)
    space = LegendreSpace(m)
    geom = space.at(grid)
    rng = np.random.default_rng(40)
    curves = polynomial_curves(n, m, rng, B=B)
    # The smallest radius that meets the condition: the constraint is active now and then.
    M = geom.Phi.T @ geom.Phi
    radius = B + np.sqrt(m) * s0 / np.sqrt(np.linalg.eigvalsh(M)[0])
    bound = theory.ftp_imse_bound(geom, B, radius, n, mu, s0).require()
    R = reps(4000, 1000)
    X = observe(curves.values(grid), s0, rng, reps=R)
    rel = ftp(X, grid, space, radius, mu, rng)
    assert ftp_fit_mean(X, geom, radius)[1].any()  # the constraint binds for some curves
    mean, se = mc_mean_se(rel.error(curves.mean_coef))
    assert mean <= bound.value + 4 * se, (mean, se, bound.value)


@pytest.mark.slow
def test_theorem_11_lower_bound_holds():
    m, T, B, n, mu = 4, 20, 1.0, 100, 1.0
    grid = uniform_grid(T)
    space = LegendreSpace(m)
    geom = space.at(grid)
    rng = np.random.default_rng(41)
    curves = polynomial_curves(n, m, rng, B=B)
    radius = 1.5
    bound = theory.ptf_imse_lower_bound(geom, B, radius, n, mu).require()
    R = reps(4000, 1000)
    X = np.broadcast_to(curves.values(grid), (R, n, T))
    rel = ptf(X, grid, space, radius, mu, rng)
    mean, se = mc_mean_se(rel.error(curves.mean_coef))
    assert mean >= bound.value - 4 * se, (mean, se, bound.value)


# ---------------------------------------------------------------------------
# FTP's error for n copies of one curve, from single-curve fits
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["legendre", "gaussian"])
def test_identical_curves_error_matches_a_direct_simulation(kind):
    import dpfda
    from dpfda_book.simulation.engine import repeat_releases

    if kind == "legendre":
        space, grid = dpfda.LegendreSpace(3), dpfda.uniform_grid(10)
    else:
        space, grid = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), dpfda.uniform_grid(4)
    geom = space.at(grid)
    rng = np.random.default_rng(11)
    M = geom.Phi.T @ geom.Phi
    lam, vec = np.linalg.eigh(M)
    coef, sigma0 = vec[:, 0], 1.0  # on the unit sphere, noisiest direction
    radius = 1.0 + np.sqrt(geom.dim) * sigma0 / np.sqrt(lam[0])
    ic = theory.ftp_identical_curves(geom, radius, coef, sigma0, 200_000, rng)
    n, reps = 20, 4000
    X = observe(np.tile(geom.Phi @ coef, (n, 1)), sigma0, rng, reps=reps)
    errs, _ = repeat_releases(dpfda.ftp, X, grid, space, radius, 1.0, reps, coef, rng)
    est, se = ic.estimate(n, 1.0)
    direct_se = errs.std(ddof=1) / np.sqrt(reps)
    assert abs(errs.mean() - est) <= 4 * np.hypot(se, direct_se)
    # the bias is real: for large n the error exceeds privacy + spread / n
    assert ic.bias_sq > 4 * np.sqrt(ic.var_bias_sq)


def test_identical_curves_error_rejects_bad_input():
    import dpfda

    geom = dpfda.LegendreSpace(2).at(dpfda.uniform_grid(5))
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="coef"):
        theory.ftp_identical_curves(geom, 1.1, [1.0, 0.0, 0.0], 1.0, 100, rng)
    with pytest.raises(ValueError, match="coef"):
        theory.ftp_identical_curves(geom, 1.1, [np.nan, 0.0], 1.0, 100, rng)
    with pytest.raises(ValueError, match="sigma0"):
        theory.ftp_identical_curves(geom, 1.1, [1.0, 0.0], 0.0, 100, rng)
    with pytest.raises(ValueError, match="draws"):
        theory.ftp_identical_curves(geom, 1.1, [1.0, 0.0], 1.0, 1, rng)
    ic = theory.ftp_identical_curves(geom, 1.1, [1.0, 0.0], 1.0, 100, rng)
    with pytest.raises(ValueError, match="n"):
        ic.estimate(0, 1.0)


# ---------------------------------------------------------------------------
# Corollary 15 for every kernel of the registry; PTF's error when its noise is unbounded
# ---------------------------------------------------------------------------


def test_kernel_ratio_limit_is_one_over_T_for_every_kernel_of_the_registry():
    """tr W⁻¹ = Σ K(t_j, t_j) = tr K_T for every kernel: the leading terms are in the ratio 1/T.

    Whatever the spectrum: the Matérn kernels (eigenvalues decaying like j^−(2ν+1)), the
    Gaussian (faster) and the Brownian (j^−2, K(t, t) = t not constant) alike.  Tolerance:
    tr(ΦΦᵀ) rebuilds tr K_T from a symmetric eigendecomposition, whose T eigenvalues each
    carry a backward error of order T·ε·||K_T||₂ <= T²ε (||K_T||₂ <= T·max K(t, t) = T here).
    """
    from _spaces import with_grids

    checked = []
    for case, (space, grid) in with_grids("uniform6", "uniform8", "right10").items():
        if not isinstance(space, KernelSpace):
            continue
        geom = space.at(grid)
        T = geom.T
        tol = T**3 * np.finfo(float).eps
        assert abs(theory.ratio_limit(geom) * T - 1.0) <= tol, case
        ratio = (theory.ftp_noiseless_error(geom, 1.1, 100, 1.0)
                 / theory.ptf_unconstrained_error(geom, 1.1, 100, 1.0))
        assert abs(ratio * T - 1.0) <= tol, case
        checked.append(space.kernel.family)
    assert {"gaussian", "matern", "brownian"} <= set(checked)


def _ratio_mean_2d(a, b):
    # E[(a1 z1² + a2 z2²)/(b1 z1² + b2 z2²)] = (a1/√b1 + a2/√b2)/(√b1 + √b2): in polar coordinates
    # E[b1 z1²/(b1 z1² + b2 z2²)] = √b1/(√b1 + √b2)
    return (a[0] / np.sqrt(b[0]) + a[1] / np.sqrt(b[1])) / (np.sqrt(b[0]) + np.sqrt(b[1]))


def _rotated_atol(D, lam_min_B):
    """How far E[zᵀAz/zᵀBz] moves when A = Q·diag(D)·Qᵀ is formed in floating point (Q from QR).

    Q is orthogonal to within ‖ΔQ‖₂ <= eigh_rtol(d) (Householder QR, Higham Theorem 19.4, with
    the constant of :func:`eigh_rtol`), and the two products round by γ_{d+1} of
    |Q||diag D||Qᵀ|, whose 2-norm is at most d·Σ|D| (entries of |Q| at most 1 + e): the formed
    matrix is within (2e + e² + γ_{d+1}·d·Σ|D|/max|D|)·max|D| of the exact one in norm, and a
    perturbation F of A moves the mean by at most ‖F‖₂·E[|z|²/zᵀBz] <= ‖F‖₂/λ_min(B).
    """
    D = np.abs(np.asarray(D, dtype=float))
    d, e = D.size, eigh_rtol(D.size)
    return ((2 * e + e * e) * D.max() + gamma(d + 1) * d * D.sum() * (1 + e) ** 2) / lam_min_B


def _closed_form_2d_atol(a, b):
    """_ratio_mean_2d's own rounding: positive terms, two roots, three divisions, two sums: γ₈."""
    return gamma(8) * _ratio_mean_2d(a, b)


def test_quad_ratio_mean_is_exact_where_closed_forms_exist():
    """Each value within its stated accuracy of the closed form, plus the closed form's own rounding.

    The accuracy (:func:`theory.quad_ratio_mean_and_accuracy`) is QUADPACK's error estimate
    plus the integrand's, the eigendecomposition's and the diagonal's rounding bounds; the
    closed forms round by a few γ. Where the input matrices are formed (a rotation, a
    multiple), their rounding moves the exact expectation, by at most ``_rotated_atol`` or
    √d·u·κ(B) of the value.
    """
    rng = np.random.default_rng(4)
    for _ in range(5):
        a, b = rng.uniform(0.1, 5.0, 2), rng.uniform(0.1, 5.0, 2)
        exact = _ratio_mean_2d(a, b)
        got, acc = theory.quad_ratio_mean_and_accuracy(np.diag(a), np.diag(b))
        assert got == theory.quad_ratio_mean(np.diag(a), np.diag(b))
        assert got == pytest.approx(exact, rel=0, abs=acc + _closed_form_2d_atol(a, b))
        Q = np.linalg.qr(rng.standard_normal((2, 2)))[0]  # a common rotation changes nothing
        got, acc = theory.quad_ratio_mean_and_accuracy(Q @ np.diag(a) @ Q.T, Q @ np.diag(b) @ Q.T)
        formed = _rotated_atol(a, b.min()) + exact * _rotated_atol(b, b.min())  # A's and B's rounding
        assert got == pytest.approx(exact, rel=0, abs=acc + _closed_form_2d_atol(a, b) + formed)
    for d in (1, 3, 8):
        S = rng.standard_normal((d, d))
        A, B = S + S.T, S @ S.T + 0.1 * np.eye(d)
        got, acc = theory.quad_ratio_mean_and_accuracy(B, B)  # exactly 1 for any B: no input rounding
        assert got == pytest.approx(1.0, rel=0, abs=acc)
        got, acc = theory.quad_ratio_mean_and_accuracy(A, np.eye(d))  # tr(A)/d: its sum rounds by γ_{d+1}
        assert got == pytest.approx(np.trace(A) / d, rel=0, abs=acc + gamma(d + 1) * np.abs(np.diag(A)).sum() / d)
        # 7B rounds each entry once: zᵀ(7B)z within √d·u·κ(B) of 7zᵀBz (‖|B|‖₂ <= √d‖B‖₂); the
        # mean of |zᵀAz|/zᵀBz is at most ‖A‖₂/λ_min(B); dividing by 7 rounds once
        lam = np.linalg.eigvalsh(B)
        kappa = lam[-1] / (lam[0] - eigh_rtol(d) * lam[-1])
        got7, acc7 = theory.quad_ratio_mean_and_accuracy(A, 7.0 * B)
        got1, acc1 = theory.quad_ratio_mean_and_accuracy(A, B)
        size = np.linalg.norm(A, 2) / (lam[0] - eigh_rtol(d) * lam[-1])
        atol = acc7 + acc1 / 7.0 + (np.sqrt(d) * gamma(1) * kappa + gamma(1)) * size / 7.0
        assert got7 == pytest.approx(got1 / 7.0, rel=0, abs=atol)


def test_the_closed_form_check_sees_an_error_of_one_part_in_1e8():
    """Negative control: the tolerances above are far tighter than 1e-8 of the value."""
    a, b = np.array([4.0, 1.0]), np.array([2.0, 1.0])
    got, acc = theory.quad_ratio_mean_and_accuracy(np.diag(a), np.diag(b))
    wrong = _ratio_mean_2d(a, b) * (1 + 1e-8)
    assert abs(got - wrong) > acc + _closed_form_2d_atol(a, b)
    rng = np.random.default_rng(4)
    S = rng.standard_normal((8, 8))
    B = S @ S.T + 0.1 * np.eye(8)
    got, acc = theory.quad_ratio_mean_and_accuracy(B, B)
    assert abs(got - (1 + 1e-8)) > acc and acc < 1e-9


def test_quad_ratio_mean_matches_monte_carlo_and_the_plug_in_would_not():
    rng = np.random.default_rng(5)
    S = rng.standard_normal((5, 5))
    A = S + S.T + np.diag([8.0, 0, 0, 0, 0])
    C = rng.standard_normal((5, 5))
    B = C @ C.T + 0.05 * np.eye(5)
    z = rng.standard_normal((reps(400_000, 100_000), 5))
    q = np.einsum("ij,jk,ik->i", z, A, z) / np.einsum("ij,jk,ik->i", z, B, z)
    mean, se = mc_mean_se(q)
    value = theory.quad_ratio_mean(A, B)
    assert abs(mean - value) <= 4 * se
    # negative control: the ratio of the means, tr A / tr B, is a different number, and this test sees it
    assert abs(mean - np.trace(A) / np.trace(B)) > 4 * se


def test_quad_ratio_mean_refuses_what_it_cannot_integrate():
    with pytest.raises(ValueError, match="positive definite"):
        theory.quad_ratio_mean(np.eye(2), np.diag([1.0, 0.0]))
    with pytest.raises(ValueError, match="square matrices of one shape"):
        theory.quad_ratio_mean(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="finite"):
        theory.quad_ratio_mean(np.diag([1.0, np.nan]), np.eye(2))


def _saturated_legendre_atol(geom, radius, target):
    """ptf_saturated_error in H_m against B′² + ‖θ̄‖², from rounding.

    Q = I, so the function computes B′²·E[zᵀL²z/zᵀGz] with L = G^½ by eigh: L·L is within
    psd_root_rtol(d)·‖G‖₂ of G, which moves the ratio (exactly 1 for L² = G) by at most
    psd_root_rtol(d)·κ(G) (first order); plus the quadrature's accuracy (of the same integrand,
    taken from quad_ratio_mean_and_accuracy(G, G), whose estimate is for a value of 1); the
    radius squared and the literal B′² = 1.21 differ by γ₃; θ̄ᵀθ̄ on both sides γ_{2d}.
    """
    M = geom.Phi.T * (ptf_weight_vector(geom, None) * ptf_clip_bounds(geom, radius, None))[None, :]  # ΦᵀWD
    G = M @ M.T
    lam = np.linalg.eigvalsh(G)
    kappa = lam[-1] / (lam[0] - eigh_rtol(geom.dim) * lam[-1])
    acc = theory.quad_ratio_mean_and_accuracy(G, G)[1]
    d = geom.dim
    return radius**2 * (psd_root_rtol(d) * kappa * 1.01 + acc + gamma(3)) + gamma(2 * d) * 2 * (target @ target)


def _saturated_kernel_rtol(K):
    """ptf_saturated_error against (B′²·E[zᵀK²z/zᵀKz] + ‖f̄‖²)/T for a unit-diagonal kernel, relative.

    In exact arithmetic both sides are B′²/T·E[zᵀK²z/zᵀKz] + ‖f̄‖²/T (W = I, D = B′I, Φ = K^½).
    The function works with matrices within η‖K‖₂ of B′²K, K²: Φ̂ᵀΦ̂ against K
    (2·psd_root_rtol(T): Φ̂ is symmetric only to within its products' rounding), G = MMᵀ and
    Q = ΦᵀΦ/T formed (T·γ_{T+3} each, ‖|M||Mᵀ|‖ <= T‖MMᵀ‖), L = G^½ by eigh (eigh_rtol(T)), and
    L·Q·L formed (T·γ_{2T}). A relative perturbation η of K moves zᵀK²z by at most 2ηκ² of itself
    (2‖K‖‖δK‖|z|² against λ_min²|z|²), zᵀKz by ηκ, and G^½ by η√κ·‖G^½‖/2, which the numerator
    sees through κ(Q)^½·κ(G)^½: all within 4ηκ² to first order. κ = κ(K), raised by 1 % for
    the perturbations (< 1e-6 here).
    """
    T = K.shape[0]
    eta = 2 * psd_root_rtol(T) + 2 * T * gamma(T + 3) + eigh_rtol(T) + T * gamma(2 * T)
    kappa = 1.01 * np.linalg.cond(K)
    return 4 * eta * kappa**2


def test_ptf_saturated_error_in_closed_form():
    """H_m: the fit goes to the sphere, error B′² + ||θ̄||²; unit-diagonal kernel: (B′²E[zᵀK²z/zᵀKz] + ||f̄||²)/T."""
    geom = LegendreSpace(4).at(uniform_grid(20))
    target = np.array([0.3, -0.1, 0.2, 0.0])
    atol = _saturated_legendre_atol(geom, 1.1, target)
    assert theory.ptf_saturated_error(geom, 1.1, target) == pytest.approx(1.21 + target @ target, rel=0, abs=atol)
    # negative control: one part in 1e8 of the value is outside the tolerance
    assert abs(theory.ptf_saturated_error(geom, 1.1, target) - (1.21 + target @ target) * (1 + 1e-8)) > atol
    from dpfda import MaternKernel

    for kernel in (MaternKernel(0.5, 0.2), MaternKernel(2.5, 0.2), gaussian_kernel(0.2)):
        geom = KernelSpace(kernel).at(uniform_grid(8))
        K = kernel.gram(uniform_grid(8))
        fbar = 0.4 * np.sin(3 * uniform_grid(8))
        target = geom.coef_from_values(fbar)
        ratio, acc = theory.quad_ratio_mean_and_accuracy(K @ K, K)
        expect = (1.21 * ratio + fbar @ fbar) / 8
        # both sides' quadratures (the same integrand to within the perturbation: 2·acc), the
        # matrices' rounding (relative to the B′² term), and the sums and scalings: γ_{T+8}
        atol = 1.21 / 8 * (2 * acc + ratio * _saturated_kernel_rtol(K)) + gamma(16) * expect
        got = theory.ptf_saturated_error(geom, 1.1, target)
        assert got == pytest.approx(expect, rel=0, abs=atol)
        # negative control: the ball's size read as tr(K²)/tr(K) is outside the tolerance
        assert abs(got - (1.21 * np.trace(K @ K) / np.trace(K) + fbar @ fbar) / 8) > atol
    with pytest.raises(ValueError, match="target must be a finite vector of length 8"):
        theory.ptf_saturated_error(geom, 1.1, np.zeros(3))


@pytest.mark.parametrize("kind", ["matern", "brownian-weighted"])
def test_ptf_saturated_error_is_the_limit_of_the_simulated_error(kind):
    """PTF at μ = 1e-7 (noise 10⁷ times the ball) against the limit, and against a wrong limit.

    The fit is within O(B′²·||f̄||/σ) of its limit point, far below the Monte Carlo error here.
    The Brownian kernel has K(t, t) = t, and custom clip bounds and weights make W and D
    unequal: the general formula, not the unit-diagonal one.
    """
    from dpfda import MaternKernel

    rng = np.random.default_rng(6)
    if kind == "matern":
        space, grid, clip, weights = KernelSpace(MaternKernel(1.5, 0.2)), uniform_grid(6), None, None
    else:
        grid = np.arange(1, 7) / 6
        space, clip, weights = KernelSpace(brownian_kernel()), 1.1 * np.linspace(1.0, 2.0, 6), np.linspace(2.0, 0.5, 6)
    geom = space.at(grid)
    fbar = 0.3 * np.cos(2 * grid) * np.sqrt(space.kernel.diag(grid))
    target = geom.coef_from_values(fbar)
    R = reps(40_000, 10_000)
    rel = ptf(np.broadcast_to(fbar, (R, 3, 6)), grid, space, 1.1, 1e-7, rng, clip=clip, weights=weights)
    mean, se = mc_mean_se(rel.error(target))
    limit = theory.ptf_saturated_error(geom, 1.1, target, clip=clip, weights=weights)
    assert abs(mean - limit) <= 4 * se
    # negative control: the ball's size read as tr(ΦᵀΦ·Q)/d instead of the expected ratio
    K = geom.Phi @ geom.Phi.T
    wrong = (1.21 * np.trace(K @ K) / np.trace(K) + fbar @ fbar) / 6
    assert abs(mean - wrong) > 4 * se
