"""The two pipelines: FTP (Algorithm 1) and PTF (Algorithm 2), and the Release object.

Deterministic checks: shapes, batch = loop over repetitions with the same noise,
noise scales, default clipping and weights (Theorems 11 and 14), evaluation of
releases.  Seeded Monte Carlo checks (marked slow) compare the errors with the
exact values of Theorems 10 and 13 (noiseless FTP) and with the unconstrained
PTF error (eqs. 33 and 60-61), and the off-grid noise of an RKHS FTP release
with the conditional law of the Gaussian process (Corollary 8).  Tolerances
are 4 standard errors of the Monte Carlo mean.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import special

from dpfda import (
    KernelSpace,
    LegendreSpace,
    brownian_kernel,
    fit_ball,
    ftp,
    ftp_sigma,
    gaussian_kernel,
    ptf,
    ptf_sigmas,
    theory,
    uniform_grid,
)
from dpfda.maths.rounding import eigh_rtol, fit_rtol, psd_root_rtol, solve_rtol
from dpfda.maths.spaces import GaussianKernel as GaussianKernelType
from dpfda.maths.summation import gamma
from dpfda.mechanisms.pipelines import (
    ftp_fit_mean,
    ptf_clipped_mean,
    ptf_default_clip,
    ptf_default_weights,
)
from dpfda.mechanisms.release import RESIDUAL_POINTS
from dpfda_book.simulation.models import observe, polynomial_curves, rkhs_curves

from _support import assert_mc_close, bonferroni_z, reps

GAUSS = KernelSpace(gaussian_kernel(0.2))
BROWN = KernelSpace(brownian_kernel())


def phi_ref(m, t):
    """Orthonormal shifted Legendre basis from scipy: (len(t), m)."""
    t = np.atleast_1d(t)
    return np.stack([np.sqrt(2 * k - 1) * special.eval_sh_legendre(k - 1, t)
                     for k in range(1, m + 1)], axis=1)


def gauss_k(s, t, rho=0.2):
    return np.exp(-(np.subtract.outer(s, t) ** 2) / (2 * rho**2))


def brown_k(s, t):
    return np.minimum.outer(s, t)


def kernel_ref(space, s, t):
    return brown_k(s, t) if space is BROWN else gauss_k(s, t)


def _fits_atol(geom, X, radius, w=None) -> float:
    """Two computations of fits of the curves X (per curve, in a batch): each to fit_rtol of its norm,
    with the data's ratio (||x||_W/(||A||^½·||θ||)); fits have norm <= B'."""
    w = np.ones(geom.T) if w is None else np.asarray(w, dtype=float)
    A = geom.Phi.T @ (w[:, None] * geom.Phi)
    X2 = np.reshape(X, (-1, geom.T))
    fits = fit_ball(X2, geom.Phi, radius, w).coef
    norms = np.linalg.norm(fits, axis=-1)
    ratio = np.max(np.linalg.norm(np.sqrt(w) * X2, axis=-1) / norms) / np.sqrt(np.linalg.norm(A, 2))
    return 2 * fit_rtol(A, geom.T, data_ratio=ratio) * norms.max()


def _kernel_eval_atol(geom, kernel, coef, t):
    """How far the evaluation (β·K^{-1/2})·K(grid, t) may be from its exact value: the products
    round by γ_T of |β||Φ⁻¹| and |α||K(grid, t)|, and K^{-1/2} from eigh carries e = eigh_rtol(T) in
    its backward error and orthogonality (3e·||K||·||K^{-1/2}|| in K^{-1/2}K) plus its formation
    (3T·γ_{T+1} of the same), against ||β||·||K(grid, t)||."""
    T = geom.T
    Kt = kernel(geom.grid[:, None], np.atleast_1d(t)[None, :])
    alpha = coef @ geom.Phi_inv
    e = eigh_rtol(T)
    root = (3 * e + 3 * T * gamma(T + 1)) * np.linalg.norm(geom.K, 2) * np.linalg.norm(geom.Phi_inv, 2)
    return (root * np.linalg.norm(coef, axis=-1, keepdims=True) * np.linalg.norm(Kt, axis=0)
            + gamma(T) * ((np.abs(coef) @ np.abs(geom.Phi_inv)) @ np.abs(Kt) + np.abs(alpha) @ np.abs(Kt)))


def _err_bound(err, dv):
    """|δ err| for a mean square err = mean(v²) whose values v move by dv (…, T): 2·sqrt(err)·rms(dv) + rms(dv)²."""
    d = np.sqrt(np.mean(dv**2, axis=-1))
    return 2 * np.sqrt(err) * d + d**2


# (space, grid) pairs used throughout; the Brownian grid leaves out t = 0 (A.4).
CASES = {
    "legendre": (LegendreSpace(4), uniform_grid(20)),
    "gaussian": (GAUSS, uniform_grid(8)),
    "brownian": (BROWN, np.arange(1, 9) / 8),
}


def make_data(name, n, rng, *, B=1.0, sigma0=0.0, R=None):
    """Curves of the paper's models on the case's grid; returns (X, target_coef)."""
    space, grid = CASES[name]
    geom = space.at(grid)
    if name == "legendre":
        curves = polynomial_curves(n, space.m, rng, B=B)
        target = curves.mean_coef
    else:
        curves = rkhs_curves(n, rng, kernel=space.kernel, B=B)
        target = geom.coef_from_values(curves.mean_values(grid))
    X = observe(curves.values(grid), sigma0, rng, reps=R)
    return X, target


# ---------------------------------------------------------------------------
# Shapes and attributes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("method", [ftp, ptf])
def test_shapes(name, method):
    space, grid = CASES[name]
    rng = np.random.default_rng(0)
    T, d = grid.size, space.at(grid).dim
    X2, _ = make_data(name, 15, rng, sigma0=0.1)
    X3, _ = make_data(name, 15, rng, sigma0=0.1, R=6)
    t = np.array([0.0, 0.33, 0.5, 1.0, 0.5])
    for X, lead in [(X2, ()), (X3, (6,))]:
        rel = method(X, grid, space, 1.5, 0.7, rng)
        assert rel.coef.shape == lead + (d,)
        assert rel.values.shape == lead + (T,)
        assert rel.shape == lead
        assert rel(t).shape == lead + (5,)
        assert rel(0.25).shape == lead + (1,)
        assert rel.mu == 0.7 and rel.radius == 1.5 and rel.n == 15
        assert rel.space == space and np.array_equal(rel.grid, grid)
        if method is ftp:
            assert rel.method == "ftp" and rel.active is None  # no per-curve flags
            assert rel.noisy_means is None
            assert np.ndim(rel.noise_scale) == 0 and rel.clip is None and rel.weights is None
        else:
            assert rel.method == "ptf" and rel.active.shape == lead
            assert rel.noise_scale.shape == (T,) and rel.clip.shape == (T,)
            assert rel.weights.shape == (T,) and rel.noisy_means.shape == lead + (T,)
        assert np.all(np.isfinite(rel.coef))
        assert repr(rel).startswith("Release(") and len(repr(rel)) <= 100  # one short line
        assert "np." not in repr(rel) and "method=" not in repr(rel)


def test_inputs_are_not_modified_and_runs_are_reproducible():
    space, grid = CASES["legendre"]
    X, _ = make_data("legendre", 20, np.random.default_rng(1), sigma0=5.0, R=3)
    X0 = X.copy()
    for method in (ftp, ptf):
        a = method(X, grid, space, 1.0, 1.0, np.random.default_rng(7))
        b = method(X, grid, space, 1.0, 1.0, np.random.default_rng(7))
        c = method(X, grid, space, 1.0, 1.0, np.random.default_rng(8))
        np.testing.assert_array_equal(a.coef, b.coef)
        assert not np.array_equal(a.coef, c.coef)
        np.testing.assert_array_equal(X, X0)


# ---------------------------------------------------------------------------
# Batch = loop over repetitions, with the same noise
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_ftp_fit_part_batch_equals_per_repetition_exactly(name):
    space, grid = CASES[name]
    geom = space.at(grid)
    X, _ = make_data(name, 40, np.random.default_rng(2), sigma0=0.03, R=5)
    radius = 0.8
    mean_coef, active = ftp_fit_mean(X, geom, radius)
    assert 0 < active.mean() < 1  # both regimes occur
    for r in range(X.shape[0]):
        # A repetition's result does not depend on the batch it is computed in ...
        alone, alone_active = ftp_fit_mean(X[r], geom, radius)
        np.testing.assert_array_equal(mean_coef[r], alone)
        np.testing.assert_array_equal(active[r], alone_active)
        # ... and it is the average of the per-curve fits (solve_mean never expands
        # every curve's fit, so the two agree to rounding, not bit for bit).
        fit = fit_ball(X[r], geom.Phi, radius)
        np.testing.assert_array_equal(active[r], fit.active)
        atol = _fits_atol(geom, X[r], radius) + gamma(X.shape[1] + 4) * radius  # fits, and two means
        np.testing.assert_allclose(mean_coef[r], fit.coef.mean(axis=0), rtol=0, atol=atol)


def ftp_loop(X, grid, space, radius, mu, rng):
    """Algorithm 1 written as plain loops: fit each curve alone, average, add σξ."""
    geom = space.at(grid)
    out = []
    for Xr in X:
        fits = [fit_ball(x, geom.Phi, radius).coef for x in Xr]
        mean = np.mean(fits, axis=0)
        sigma = 2 * radius / (Xr.shape[0] * mu)
        out.append(mean + sigma * rng.standard_normal(geom.dim))
    return np.array(out)


def ptf_loop(X, grid, space, radius, mu, rng):
    """Algorithm 2 as plain loops, with the default clip and weights of Theorems 11/14."""
    geom = space.at(grid)
    if isinstance(space, LegendreSpace):
        a = np.linalg.norm(phi_ref(space.m, grid), axis=1)
    else:
        a = np.sqrt(np.diag(kernel_ref(space, grid, grid)))
    c, w = radius * a, a**-2.0
    n, T = X.shape[1], X.shape[2]
    out, xt = [], []
    for Xr in X:
        total = np.zeros(T)
        for x in Xr:
            total += np.clip(x, -c, c)
        sig = 2 * c / n * np.sqrt(T) / mu
        x_tilde = total / n + sig * rng.standard_normal(T)
        xt.append(x_tilde)
        out.append(fit_ball(x_tilde, geom.Phi, radius, w).coef)
    return np.array(out), np.array(xt)


@pytest.mark.parametrize("name", CASES)
def test_ftp_batch_equals_loop_with_same_noise(name):
    space, grid = CASES[name]
    X, _ = make_data(name, 25, np.random.default_rng(3), sigma0=0.3, R=4)
    rel = ftp(X, grid, space, 0.8, 0.5, np.random.default_rng(99))
    ref = ftp_loop(X, grid, space, 0.8, 0.5, np.random.default_rng(99))
    # the same noise: the fits (fit_rtol each), two means (γ_{n+4} of B'), σ and its sum (γ₄ of |coef|)
    atol = _fits_atol(space.at(grid), X, 0.8) + gamma(X.shape[1] + 4) * 0.8 + gamma(4) * np.abs(ref).max()
    np.testing.assert_allclose(rel.coef, ref, rtol=0, atol=atol)


@pytest.mark.parametrize("name", CASES)
def test_ptf_batch_equals_loop_with_same_noise(name):
    space, grid = CASES[name]
    X, _ = make_data(name, 25, np.random.default_rng(4), sigma0=0.3, R=4)
    rel = ptf(X, grid, space, 0.8, 0.5, np.random.default_rng(98))
    ref, xt = ptf_loop(X, grid, space, 0.8, 0.5, np.random.default_rng(98))
    # exact clips; the loop's running sum (γ_n of n·c) against one rounding, σ_j by two formulas and
    # its sum with the mean: γ_{n+8} of c + |x̃|; the fits of the two then differ by the solve's gain
    # times that, plus fit_rtol each
    geom = space.at(grid)
    c, w = ptf_default_clip(geom, 0.8), ptf_default_weights(geom)
    dx = gamma(X.shape[1] + 8) * (c + np.abs(xt))
    assert np.all(np.abs(rel.noisy_means - xt) <= dx)
    gain = np.linalg.norm(np.linalg.solve(geom.Phi.T @ (w[:, None] * geom.Phi), geom.Phi.T * w), 2)
    atol = _fits_atol(geom, xt, 0.8, w) + gain * np.linalg.norm(dx, axis=-1).max()
    np.testing.assert_allclose(rel.coef, ref, rtol=0, atol=atol)


# ---------------------------------------------------------------------------
# Calibration, clipping, weights
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASES)
def test_noise_scales(name):
    space, grid = CASES[name]
    X, _ = make_data(name, 30, np.random.default_rng(5))
    T = grid.size
    for radius, mu in [(1.0, 1.0), (1.1, 0.1), (7.0, 3.0)]:
        rel = ftp(X, grid, space, radius, mu, np.random.default_rng(0))
        # σ = 2B'/(nμ): two roundings here and there
        assert rel.noise_scale == pytest.approx(2 * radius / (30 * mu), rel=gamma(4), abs=0)
        assert ftp_sigma(30, radius, mu) == pytest.approx(2 * radius / (30 * mu), rel=gamma(4), abs=0)
        rel = ptf(X, grid, space, radius, mu, np.random.default_rng(0))
        # σ_j = 2c_j√T/(nμ): a root and four roundings on each side
        np.testing.assert_allclose(rel.noise_scale, 2 * rel.clip / 30 * np.sqrt(T) / mu, rtol=gamma(10), atol=0)
        c = np.linspace(0.5, 2.0, T)
        rel = ptf(X, grid, space, radius, mu, np.random.default_rng(0), clip=c)
        np.testing.assert_allclose(rel.noise_scale, 2 * c / 30 * np.sqrt(T) / mu, rtol=gamma(10), atol=0)
        np.testing.assert_allclose(ptf_sigmas(30, c, mu), 2 * c / 30 * np.sqrt(T) / mu, rtol=gamma(10), atol=0)


def test_default_clip_and_weights_follow_theorems_11_and_14():
    radius = 1.3
    # H_m: c_j = B'||φ(t_j)||, W = diag(||φ(t_j)||^{-2}).
    space, grid = CASES["legendre"]
    a = np.linalg.norm(phi_ref(4, grid), axis=1)
    geom = space.at(grid)
    # the basis by two routes (a three-term recurrence of degree <= m - 1 here, scipy's there: γ_{4m}
    # of each value), a norm of m terms and B'·a_j; the weights square it
    np.testing.assert_allclose(ptf_default_clip(geom, radius), radius * a, rtol=gamma(6 * 4), atol=0)
    np.testing.assert_allclose(ptf_default_weights(geom), a**-2, rtol=gamma(12 * 4), atol=0)
    # Gaussian kernel: K(t, t) = 1, so c_j = B' and W = I.
    geom = GAUSS.at(CASES["gaussian"][1])
    np.testing.assert_allclose(ptf_default_clip(geom, radius), radius, rtol=0, atol=0)  # a_j = sqrt(1), exactly
    np.testing.assert_allclose(ptf_default_weights(geom), 1.0, rtol=0, atol=0)
    # Brownian kernel: K(t, t) = t.
    g = CASES["brownian"][1]
    geom = BROWN.at(g)
    # a_j = sqrt(min(t, t)): one root, one product; the weights a_j⁻² against 1/t: γ₄
    np.testing.assert_allclose(ptf_default_clip(geom, radius), radius * np.sqrt(g), rtol=gamma(2), atol=0)
    np.testing.assert_allclose(ptf_default_weights(geom), 1 / g, rtol=gamma(4), atol=0)
    # ptf uses them by default.
    X, _ = make_data("brownian", 10, np.random.default_rng(6))
    rel = ptf(X, g, BROWN, radius, 1.0, np.random.default_rng(0))
    np.testing.assert_allclose(rel.clip, radius * np.sqrt(g), rtol=gamma(2), atol=0)
    np.testing.assert_allclose(rel.weights, 1 / g, rtol=gamma(4), atol=0)
    # A scalar clip is the same bound at every point.
    rel = ptf(X, g, BROWN, radius, 1.0, np.random.default_rng(0), clip=0.4)
    np.testing.assert_array_equal(rel.clip, np.full(g.size, 0.4))


def test_ptf_clips_before_averaging():
    space, grid = CASES["gaussian"]
    rng = np.random.default_rng(7)
    X, _ = make_data("gaussian", 50, rng)
    X[3] += 100.0  # an outlier far outside the clipping band
    X[7] -= 55.0
    c = np.full(grid.size, 0.9)
    clipped = np.array([np.minimum(np.maximum(x, -c), c) for x in X])
    manual = clipped.mean(axis=0)
    # exact sum rounded once (γ₄ of the mean) against numpy's (γ_n of the mean of |values|)
    dm = gamma(X.shape[0] + 4) * np.abs(clipped).mean(axis=0)
    assert np.all(np.abs(ptf_clipped_mean(X, c) - manual) <= dm)
    rel = ptf(X, grid, space, 1.0, 2.0, np.random.default_rng(3), clip=c)
    z = np.random.default_rng(3).standard_normal(grid.size)
    sz = rel.noise_scale * z
    assert np.all(np.abs(rel.noisy_means - (manual + sz)) <= dm + gamma(2) * (np.abs(manual) + np.abs(sz)))


# ---------------------------------------------------------------------------
# Evaluating releases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", [ftp, ptf])
def test_legendre_release_is_coefficients_times_basis(method):
    space, grid = CASES["legendre"]
    X, target = make_data("legendre", 30, np.random.default_rng(8), sigma0=0.2, R=3)
    rel = method(X, grid, space, 1.0, 1.0, np.random.default_rng(0))
    t = np.random.default_rng(1).random(17)
    # the basis by two routes (γ_{4m} of each value) and two products (γ_m of |θ||φ| each)
    for pts, got in ((t, rel(t)), (grid, rel.values)):
        P = phi_ref(4, pts)
        assert np.all(np.abs(got - rel.coef @ P.T) <= gamma(6 * 4) * (np.abs(rel.coef) @ np.abs(P).T))
    # error() is the IMSE ∫(f̃ - f̄)² (eq. 7), checked by Gauss–Legendre quadrature: 20 nodes are
    # exact for the degree-6 integrand; the values carry γ_{6m} of (|θ̃| + |θ̄|)·|φ|, the weighted sum γ_20
    x, w = np.polynomial.legendre.leggauss(20)
    tq, wq = (x + 1) / 2, w / 2
    Pq = phi_ref(4, tq)
    imse = ((rel(tq) - target @ Pq.T) ** 2) @ wq
    dv = gamma(6 * 4) * ((np.abs(rel.coef) + np.abs(target)) @ np.abs(Pq).T)
    assert np.all(np.abs(rel.error(target) - imse) <= 2 * np.sqrt(imse) * dv.max(axis=-1) + dv.max(axis=-1) ** 2
                  + gamma(24) * imse + gamma(6) * rel.error(target))


@pytest.mark.parametrize("name", ["gaussian", "brownian"])
def test_kernel_ftp_release_is_one_consistent_function(name):
    space, grid = CASES[name]
    X, target = make_data(name, 20, np.random.default_rng(9), R=3)
    rel = ftp(X, grid, space, 1.2, 1.0, np.random.default_rng(10))
    # On the grid, the release equals its grid values (Corollary 8's grid marginal): the kernel
    # evaluation at the grid against Φβ, to its bound (and the values' own product, γ_T·|Φ||β|)
    geom = space.at(grid)
    grid_atol = _kernel_eval_atol(geom, space.kernel, rel.coef, grid) + gamma(grid.size) * (
        np.abs(rel.coef) @ np.abs(geom.Phi))
    assert np.all(np.abs(rel(grid) - rel.values) <= grid_atol)
    t = np.array([0.07, 0.3, 0.61, 0.99])
    first = rel(t)
    np.testing.assert_array_equal(rel(t), first)  # repeated calls: the same values
    # Other point sets agree where they overlap.  The noise path is stored exactly; the
    # fitted part is re-evaluated as one matrix product, hence agreement to rounding.
    mixed = np.array([0.61, grid[2], 0.07, 0.07, 0.45])
    out = rel(mixed)
    # the same α = βΦ⁻¹, times K(grid, t) in products of other shapes: 2γ_T·|α||K(grid, t)|
    alpha = rel.coef @ geom.Phi_inv
    prod = 2 * gamma(grid.size) * (np.abs(alpha) @ np.abs(space.kernel(grid[:, None], mixed[None, :])))
    assert np.all(np.abs(out[..., 0] - first[..., 2]) <= prod[..., 0])
    assert np.all(np.abs(out[..., 2] - first[..., 0]) <= prod[..., 2])
    np.testing.assert_array_equal(out[..., 3], out[..., 2])
    assert np.all(np.abs(out[..., 1] - rel.values[..., 2]) <= grid_atol[..., 2])
    assert np.all(np.abs(rel([0.45]) - out[..., 4:5]) <= prod[..., 4:5])
    # Grid MSE (eq. 8).
    # Φ(β − t) against Φβ − Φt: γ_T of (|β| + |t|)·|Φ| in each value
    dv = 2 * gamma(grid.size + 1) * ((np.abs(rel.coef) + np.abs(target)) @ np.abs(geom.Phi))
    err = np.mean((rel.values - target @ geom.Phi) ** 2, axis=-1)
    assert np.all(np.abs(rel.error(target) - err) <= _err_bound(err, dv) + gamma(grid.size) * err)


@pytest.mark.parametrize("name", ["gaussian", "brownian"])
def test_kernel_ptf_release_is_a_kernel_interpolant(name):
    """f̃_PTF = Σ_j α_j K(t_j, ·) with K_T α = f̃(t): evaluation anywhere on [0, 1]."""
    space, grid = CASES[name]
    X, _ = make_data(name, 20, np.random.default_rng(11), sigma0=0.1, R=3)
    rel = ptf(X, grid, space, 1.2, 1.0, np.random.default_rng(12))
    K = kernel_ref(space, grid, grid)
    alpha = np.linalg.solve(K, rel.values.T).T
    t = np.linspace(0, 1, 23)
    # α by a solve with K (solve_rtol of ||α||) against β·K^{-1/2} (_kernel_eval_atol), then both times
    # K(grid, t)
    Kt = kernel_ref(space, grid, t)
    geom = space.at(grid)
    atol = (_kernel_eval_atol(geom, space.kernel, rel.coef, t)
            + solve_rtol(K, 2 * grid.size) * np.linalg.norm(alpha, axis=-1, keepdims=True) * np.linalg.norm(Kt, axis=0)
            + gamma(grid.size) * (np.abs(alpha) @ np.abs(Kt)))
    assert np.all(np.abs(rel(t) - alpha @ Kt) <= atol)
    np.testing.assert_array_equal(rel(t), rel(t))


# ---------------------------------------------------------------------------
# Monte Carlo: errors equal the paper's exact values
# ---------------------------------------------------------------------------


def chunked(method, X_one, R, chunk, grid, space, radius, mu, seed):
    """Run ``method`` on R repetitions of the fixed dataset X_one, in chunks (memory)."""
    out = []
    for i, ss in enumerate(np.random.SeedSequence(seed).spawn(-(-R // chunk))):
        k = min(chunk, R - i * chunk)
        X = np.broadcast_to(X_one, (k,) + X_one.shape)
        out.append(method(X, grid, space, radius, mu, np.random.default_rng(ss)))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mu", [1.0, 0.1])
def test_noiseless_ftp_legendre_error_is_theorem_10(mu):
    space, grid = CASES["legendre"]
    m, n, B, radius = 4, 50, 1.0, 1.1
    X, target = make_data("legendre", n, np.random.default_rng(20), B=B)
    R = reps(20_000, 4_000)
    rels = chunked(ftp, X, R, 2000, grid, space, radius, mu, seed=21)
    # Every curve lies in the ball, so no fit is constrained and θ̂ = θ̄ exactly.
    mean_coef, active = ftp_fit_mean(X, space.at(grid), radius)
    assert not active.any()
    # fits of curves in the span (fit_rtol of their norm <= B), the exact mean rounded once against
    # numpy's mean (γ_{n+4} of B)
    atol = fit_rtol(space.at(grid).Phi.T @ space.at(grid).Phi, grid.size) * B + gamma(n + 4) * B
    np.testing.assert_allclose(mean_coef, target, rtol=0, atol=atol)
    err = np.concatenate([r.error(target) for r in rels])
    exact = 4 * m * radius**2 / (n**2 * mu**2)  # Theorem 10, σ₀ = 0
    assert theory.ftp_noiseless_error(space.at(grid), radius, n, mu) == pytest.approx(exact, rel=gamma(8), abs=0)
    assert_mc_close(err, exact, what="IMSE_FTP")
    # Noise on the coefficients is N(0, σ² I_m) coordinate by coordinate.
    noise = np.concatenate([r.coef for r in rels]) - target
    assert_mc_close(noise**2, np.full(m, (2 * radius / (n * mu)) ** 2), z=bonferroni_z(m),
                    what="coefficient noise variance")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gaussian", "brownian"])
def test_noiseless_ftp_kernel_error_is_theorem_13(name):
    space, grid = CASES[name]
    n, B, radius, mu = 40, 1.0, 1.2, 1.0
    X, target = make_data(name, n, np.random.default_rng(22), B=B)
    R = reps(20_000, 4_000)
    rels = chunked(ftp, X, R, 2000, grid, space, radius, mu, seed=23)
    assert not ftp_fit_mean(X, space.at(grid), radius)[1].any()
    err = np.concatenate([r.error(target) for r in rels])
    # Theorem 13: MSE = 4B'² tr(K_T)/(n²μ²T), tr(K_T) from the kernel formula.
    exact = 4 * radius**2 * np.trace(kernel_ref(space, grid, grid)) / (n**2 * mu**2 * grid.size)
    if name == "gaussian":
        assert exact == pytest.approx(4 * radius**2 / (n**2 * mu**2), rel=gamma(8), abs=0)  # tr(K_T) = T
    T = grid.size  # the theory's tr(Φ̂Φ̂ᵀ) against tr K: T·psd_root_rtol(T)
    assert theory.ftp_noiseless_error(space.at(grid), radius, n, mu) == pytest.approx(
        exact, rel=T * psd_root_rtol(T) + gamma(8), abs=0)
    assert_mc_close(err, exact, what="MSE_FTP")


def ptf_unconstrained_check(name, space, grid, target, X, radius, mu, n, R, seed):
    geom = space.at(grid)
    rels = chunked(ptf, X, R, 2000, grid, space, radius, mu, seed=seed)
    # Neither the clipping nor the ball ever binds in this setting.
    assert np.all(np.abs(X) < rels[0].clip)
    active = np.concatenate([np.atleast_1d(r.active) for r in rels])
    assert active.size == R and active.mean() == 0.0
    max_norm = max(np.linalg.norm(r.coef, axis=-1).max() for r in rels)
    assert max_norm < 0.8 * radius  # with room to spare
    return np.concatenate([r.error(target) for r in rels]), geom


@pytest.mark.slow
def test_unconstrained_ptf_legendre_error_is_tau2_trace_Ainv():
    space, grid = CASES["legendre"]
    n, B, radius, mu = 50, 1.0, 2.0, 4.0
    X, target = make_data("legendre", n, np.random.default_rng(24), B=B)
    R = reps(20_000, 4_000)
    err, geom = ptf_unconstrained_check("legendre", space, grid, target, X, radius, mu, n, R, 25)
    Phi = phi_ref(4, grid)
    W = 1 / np.sum(Phi**2, axis=1)
    A = Phi.T @ (W[:, None] * Phi)
    tau = 2 * radius * np.sqrt(grid.size) / (n * mu)
    exact = tau**2 * np.trace(np.linalg.inv(A))  # eq. (33)
    # tr A⁻¹ twice (solve_rtol each), from bases by two routes (γ_{4m} per value, 3 of them in each
    # entry of A: κ(A)·3m·γ_{4m})
    rel = 2 * solve_rtol(A, grid.size + 4) + np.linalg.cond(A) * 3 * 4 * gamma(4 * 4) + gamma(8)
    assert theory.ptf_unconstrained_error(geom, radius, n, mu) == pytest.approx(exact, rel=rel, abs=0)
    assert_mc_close(err, exact, what="IMSE_PTF (unconstrained)")


@pytest.mark.slow
@pytest.mark.parametrize("name, T", [("gaussian", 6), ("brownian", 6)])
def test_unconstrained_ptf_kernel_error_is_tau2_trace_Winv_over_T(name, T):
    space = CASES[name][0]
    grid = uniform_grid(T) if name == "gaussian" else np.arange(1, T + 1) / T
    n, B, radius, mu = 50, 1.0, 2.0, 4.0
    rng = np.random.default_rng(26)
    curves = rkhs_curves(n, rng, kernel=space.kernel, B=B)
    X = curves.values(grid)
    target = space.at(grid).coef_from_values(curves.mean_values(grid))
    R = reps(20_000, 4_000)
    err, geom = ptf_unconstrained_check(name, space, grid, target, X, radius, mu, n, R, 27)
    tau = 2 * radius * np.sqrt(T) / (n * mu)
    exact = tau**2 * np.trace(kernel_ref(space, grid, grid)) / T  # tr(W⁻¹) = Σ K(t_j, t_j)
    # Σ a_j² = Σ sqrt(K(t, t))² against Σ K(t, t): γ_{T+8} with τ²/T
    assert theory.ptf_unconstrained_error(geom, radius, n, mu) == pytest.approx(exact, rel=gamma(T + 8), abs=0)
    assert_mc_close(err, exact, what="MSE_PTF (unconstrained)")


# ---------------------------------------------------------------------------
# Monte Carlo: the off-grid noise of an RKHS FTP release (Corollary 8)
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_brownian_ftp_off_grid_noise_is_the_brownian_bridge():
    """Off the grid, rel(t) - E[rel(t) | grid values] has the conditional variance of σZ_K.

    For Brownian motion the conditional law is explicit: linear interpolation between
    neighbouring grid values (from Z(0) = 0 on the left, flat beyond the last point)
    plus a bridge with variance (t - t_j)(t_{j+1} - t)/(t_{j+1} - t_j), or t(t_1 - t)/t_1
    left of the grid, or t - t_T right of it.  The fitted part cancels exactly in this
    residual, since it is itself a Brownian-kernel interpolant of its grid values.
    """
    grid = np.array([0.2, 0.4, 0.6, 0.8])
    n, radius, mu = 10, 1.0, 1.0
    sigma = 2 * radius / (n * mu)
    curves = rkhs_curves(n, np.random.default_rng(30), kernel=brownian_kernel())
    X = curves.values(grid)
    R = reps(20_000, 5_000)
    rel = ftp(np.broadcast_to(X, (R, n, grid.size)), grid, BROWN, radius, mu,
              np.random.default_rng(31))
    G = rel(grid)
    t = np.array([0.05, 0.3, 0.5, 0.9])
    V = rel(t)
    later = rel([0.35])[:, 0]  # drawn in a second call: must condition on the first draws
    resid = V - np.stack(interp_rows(t, grid, G), axis=1)
    var = np.array([0.05 * 0.15 / 0.2, 0.1 * 0.1 / 0.2, 0.1 * 0.1 / 0.2, 0.1]) * sigma**2
    z = bonferroni_z(2 * t.size + 2)
    assert_mc_close(resid, np.zeros(t.size), z=z, what="bridge residual mean")
    assert_mc_close(resid**2, var, z=z, what="bridge residual variance")
    # t = 0.35 given the grid and Z(0.3): bridge between 0.3 and 0.4.
    r35 = later - (V[:, 1] * (0.4 - 0.35) / 0.1 + G[:, 1] * (0.35 - 0.3) / 0.1)
    assert_mc_close(r35**2, sigma**2 * 0.05 * 0.05 / 0.1, z=z, what="sequential bridge variance")
    assert_mc_close(r35 * resid[:, 1], 0.0, z=z, what="independent bridge increments")


def interp_rows(t, grid, G):
    """For each t: E[Z(t) | Z(grid) = G] for Brownian motion, as a (reps,) array."""
    out = []
    for tt in t:
        if tt <= grid[0]:
            out.append(G[:, 0] * tt / grid[0])
        elif tt >= grid[-1]:
            out.append(G[:, -1])
        else:
            j = np.searchsorted(grid, tt) - 1
            lam = (tt - grid[j]) / (grid[j + 1] - grid[j])
            out.append((1 - lam) * G[:, j] + lam * G[:, j + 1])
    return out


@pytest.mark.slow
def test_gaussian_ftp_off_grid_covariance_is_sigma2_K():
    """With fixed data, Cov over releases of (rel(s), rel(t)) is σ²K(s, t), on or off the grid."""
    space, grid = GAUSS, uniform_grid(5)
    n, radius, mu = 10, 1.0, 1.0
    sigma = 2 * radius / (n * mu)
    curves = rkhs_curves(n, np.random.default_rng(32))
    X = curves.values(grid)
    R = reps(20_000, 5_000)
    rel = ftp(np.broadcast_to(X, (R, n, grid.size)), grid, space, radius, mu,
              np.random.default_rng(33))
    pts = np.array([0.1, 0.25, 0.6, 0.93])  # 0.25 is a grid point
    V = rel(pts)
    centred = V - V.mean(axis=0)  # the fitted part is the same in every repetition
    prods = (centred[:, :, None] * centred[:, None, :]).reshape(R, -1)
    expect = (sigma**2 * gauss_k(pts, pts)).ravel() * (R - 1) / R
    assert_mc_close(prods, expect, z=bonferroni_z(16), what="off-grid covariance")


# ---------------------------------------------------------------------------
# The cost of the off-grid residual is bounded
# ---------------------------------------------------------------------------


class _CountingGaussian(GaussianKernelType):
    """The Gaussian kernel, recording how many kernel values each evaluation computes."""

    def __init__(self, rho):
        super().__init__(rho)
        self.sizes = []

    def __call__(self, s, t):
        out = super().__call__(s, t)
        self.sizes.append(out.size)
        return out


def test_residual_work_per_call_does_not_grow_with_earlier_calls():
    """It used to eigendecompose K over every point ever evaluated, so the k-th call with
    new points cost O((T + all earlier points)³): 56 s at ~6,500 points.  Now a call's
    kernel work depends on its own points and the pivots of the residual's factor, which
    for a smooth kernel stay few however many points were drawn."""
    kernel = _CountingGaussian(0.2)
    space, grid = KernelSpace(kernel), uniform_grid(8)
    rel = ftp(np.zeros((10, 8)), grid, space, 1.0, 1.0, np.random.default_rng(40))
    rng = np.random.default_rng(41)
    work = []
    for _ in range(20):
        kernel.sizes.clear()
        rel(rng.random(100))
        work.append(sum(kernel.sizes))
    assert rel._residual.drawn == 2000
    assert max(work[10:]) <= 1.5 * max(work[:3]), work
    assert rel._residual.L.shape[0] <= 64  # the factor: grid pivots plus a few off it


def test_residual_points_are_capped_with_a_named_error_and_nothing_drawn():
    """A rough kernel (every new point a pivot) meets the cap on the points a release keeps;
    the refused call changes nothing, and the points already drawn still answer."""
    grid = np.array([0.2, 0.4, 0.6, 0.8])
    rel = ftp(np.zeros((10, 4)), grid, BROWN, 1.0, 1.0, np.random.default_rng(42))
    first = np.linspace(0.001, 0.999, RESIDUAL_POINTS - 10)
    first = first[~np.isin(first, grid)]
    seen = rel(first)
    state = rel._residual.rng.bit_generator.state
    with pytest.raises(ValueError, match=f"would pass the limit of {RESIDUAL_POINTS} per release"):
        rel(np.linspace(0.0005, 0.9995, 50))
    assert rel._residual.rng.bit_generator.state == state
    assert np.array_equal(rel(first), seen)
    assert np.array_equal(rel(first[:5]), seen[:5])


def test_residual_is_the_conditional_law_given_the_earlier_draws_exactly():
    """Deterministic check of the factor: for Brownian motion on a grid, the draws at new
    points are the bridge's conditional mean given the grid and the earlier points plus
    noise with the bridge's conditional covariance; both are computed here directly."""
    grid = np.array([0.25, 0.5, 1.0])
    rel = ftp(np.zeros((10, 3)), grid, BROWN, 1.0, 1.0, np.random.default_rng(43))
    sig = rel.noise_scale
    a = (rel(np.array([0.1, 0.3, 0.7])) - rel.geometry.evaluate(rel.coef, np.array([0.1, 0.3, 0.7]))) / sig
    res = rel._residual
    # the second call, at 0.35 between 0.3 (drawn) and 0.5 (grid, R = 0): a Brownian bridge
    eta_state = res.rng.bit_generator.state
    b = (rel(np.array([0.35])) - rel.geometry.evaluate(rel.coef, np.array([0.35]))) / sig
    g = np.random.Generator(np.random.PCG64())
    g.bit_generator.state = eta_state
    z = g.standard_normal(1)
    mean = a[1] * (0.5 - 0.35) / 0.2
    sd = np.sqrt(0.05 * 0.15 / 0.2)
    # conditioning on the 6 pivots: forms through their Gram matrix G (solve_rtol of G's scale, 1 here),
    # so the mean is off by that of |a|, the variance by that of max K(t, t) = 1 (the sd by /2sd)
    G = brown_k(np.array([0.25, 0.5, 1.0, 0.1, 0.3, 0.7]), np.array([0.25, 0.5, 1.0, 0.1, 0.3, 0.7]))
    eps = solve_rtol(G, 12)
    assert b[0] == pytest.approx(mean + sd * z[0], rel=gamma(8),
                                 abs=eps * (np.abs(a).max() + abs(z[0]) / (2 * sd)))


@pytest.mark.parametrize("kind", ["ftp", "ptf"])
def test_a_release_pickled_under_the_pipelines_module_loads(kind):
    # Release lived in dpfda.mechanisms.pipelines; a pickle that names it there still loads, the same release.
    grid, space = uniform_grid(8), KernelSpace(gaussian_kernel(0.2))
    X = polynomial_curves(20, 4, np.random.default_rng(1)).values(grid)
    rel = (ftp if kind == "ftp" else ptf)(X, grid, space, 1.1, 1.0, np.random.default_rng(2))
    blob = pickle.dumps(rel, protocol=0)
    assert b"dpfda.mechanisms.release\n" in blob
    old = blob.replace(b"dpfda.mechanisms.release\n", b"dpfda.mechanisms.pipelines\n")
    back = pickle.loads(old)
    assert type(back) is type(rel)
    assert np.array_equal(back.coef, rel.coef) and np.array_equal(back(grid), rel(grid))
