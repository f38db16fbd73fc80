"""The ball-constrained weighted least-squares fit (eqs. 3-4, 15-17, 39-42).

minimise f(θ) = (x - Φθ)ᵀW(x - Φθ) subject to ||θ||_2 <= B'.

Checked three ways:

* against a generic constrained optimiser (scipy SLSQP) on 160 random problems
  (random designs, Legendre and kernel designs; random weights; radii on both
  sides of the unconstrained norm), with the KKT conditions verified directly;
* against closed forms (orthonormal designs, diagonal designs solved by an
  independent bracketing root finder);
* by hypothesis property tests: feasibility, scale and rotation equivariance,
  exactness when the ball does not bind, batch = row by row, and the metric
  projection picture of eqs. (16)-(17) (variational inequality and
  non-expansiveness in the A-norm).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import optimize, stats

from dpfda import (
    AssumptionError,
    BallLeastSquares,
    KernelSpace,
    LegendreSpace,
    brownian_kernel,
    fit_ball,
    gaussian_kernel,
    uniform_grid,
)

EPS = np.finfo(float).eps
N_CASES = 160


# ---------------------------------------------------------------------------
# Random problems
# ---------------------------------------------------------------------------


def make_problem(case: int):
    """A reproducible random problem (Phi, weights, x, radius, family) for ``case``."""
    rng = np.random.default_rng([20260101, case])
    family = ("random", "legendre", "gaussian", "brownian")[case % 4]
    if family == "random":
        T = int(rng.integers(1, 25))
        d = int(rng.integers(1, min(T, 8) + 1))
        while True:
            Phi = rng.standard_normal((T, d)) * rng.lognormal(0.0, 1.0, size=d)
            if np.linalg.cond(Phi) < 1e6:
                break
    elif family == "legendre":
        m = int(rng.integers(1, 9))
        T = int(rng.integers(m, 25))
        grid = np.sort(rng.choice(np.linspace(0.0, 1.0, 401), size=T, replace=False))
        Phi = LegendreSpace(m).at(grid).Phi
    elif family == "gaussian":
        rho = float(rng.uniform(0.15, 0.5))
        T = int(rng.integers(2, 8))
        Phi = KernelSpace(gaussian_kernel(rho)).at(uniform_grid(T)).Phi
    else:
        T = int(rng.integers(1, 16))
        grid = np.sort(rng.choice(np.arange(1, 201) / 200.0, size=T, replace=False))
        Phi = KernelSpace(brownian_kernel()).at(grid).Phi
    T, d = Phi.shape
    weights = rng.lognormal(0.0, 1.0, size=T) if rng.random() < 0.7 else None
    # Data: a curve in the span plus noise, at a random overall scale.
    x = (Phi @ rng.standard_normal(d) + rng.standard_normal(T)) * rng.lognormal(0.0, 2.0)
    theta_u = BallLeastSquares(Phi, weights).unconstrained(x)
    # Radii on both sides of ||θ_u||: the ball binds about half the time.
    radius = float(np.linalg.norm(theta_u) * np.exp(rng.uniform(-np.log(20.0), np.log(20.0))))
    return Phi, weights, x, radius, family


def objective(Phi, w, x, theta):
    r = x - Phi @ theta
    return float(r @ (w * r))


def scipy_fit(Phi, w, x, radius):
    """The same problem handed to a generic SLSQP solver with tight tolerances."""
    d = Phi.shape[1]
    A = Phi.T @ (w[:, None] * Phi)
    b = Phi.T @ (w * x)
    c = float(x @ (w * x))
    res = optimize.minimize(
        lambda t: float(t @ A @ t - 2 * t @ b + c),
        np.zeros(d),
        jac=lambda t: 2 * (A @ t - b),
        constraints=[{"type": "ineq", "fun": lambda t: radius**2 - t @ t, "jac": lambda t: -2 * t}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    return res.x


@pytest.mark.parametrize("case", range(N_CASES))
def test_fit_satisfies_kkt_and_beats_scipy(case):
    Phi, weights, x, radius, family = make_problem(case)
    T, d = Phi.shape
    w = np.ones(T) if weights is None else weights
    solver = BallLeastSquares(Phi, weights)
    fit = solver.solve(x, radius)
    theta, nu, active = fit.coef, float(fit.multiplier), bool(fit.active)
    A = Phi.T @ (w[:, None] * Phi)
    b = Phi.T @ (w * x)
    norm = np.linalg.norm(theta)

    # Primal feasibility (up to rounding).
    assert norm <= radius * (1 + 4 * EPS)
    # Dual feasibility and complementary slackness.
    assert nu >= 0
    if active:
        assert nu > 0
        assert abs(norm - radius) <= 1e-12 * radius
    else:
        assert nu == 0.0
        np.testing.assert_array_equal(theta, solver.unconstrained(x))
    assert abs(nu * (norm - radius)) <= 1e-12 * nu * radius
    # Stationarity: ΦᵀW(Φθ - x) + νθ = 0, relative to the size of its terms.
    resid = A @ theta - b + nu * theta
    scale = np.linalg.norm(A @ theta) + np.linalg.norm(b) + nu * norm
    assert np.linalg.norm(resid) <= 1e-10 * scale

    # Compare with the generic optimiser.
    ts = scipy_fit(Phi, w, x, radius)
    f_ours = objective(Phi, w, x, theta)
    f_scipy = objective(Phi, w, x, ts)
    tol = 1e-12 * (abs(f_scipy) + float(x @ (w * x)) + 1e-300)
    # SLSQP may end a hair outside the ball; weak duality accounts for that exactly:
    # f(θ*) = min_θ f(θ) + ν(||θ||² - B'²) <= f(θ_s) + ν(||θ_s||² - B'²).
    assert f_ours <= f_scipy + nu * (ts @ ts - radius**2) + tol
    # ... and against scipy's point pulled back into the ball, no correction needed.
    ts_feasible = ts * min(1.0, radius / max(np.linalg.norm(ts), 1e-300))
    assert f_ours <= objective(Phi, w, x, ts_feasible) + tol
    # The problem is strictly convex: both solvers find the same point.
    assert np.linalg.norm(theta - ts) <= 1e-5 * (norm + radius)


def test_random_problems_cover_both_regimes_and_all_designs():
    active = []
    families = set()
    for case in range(N_CASES):
        Phi, weights, x, radius, family = make_problem(case)
        active.append(bool(BallLeastSquares(Phi, weights).solve(x, radius).active))
        families.add(family)
    assert families == {"random", "legendre", "gaussian", "brownian"}
    frac = np.mean(active)
    assert 0.3 < frac < 0.7, frac


# ---------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------


def test_orthonormal_design_is_radial_scaling():
    """With ΦᵀΦ = I and W = I the fit is θ_u · min(1, B'/||θ_u||), ν = ||θ_u||/B' - 1."""
    rng = np.random.default_rng(1)
    for T, d in [(1, 1), (5, 3), (20, 4), (30, 30)]:
        Q, _ = np.linalg.qr(rng.standard_normal((T, d)))
        X = rng.standard_normal((50, T)) * 3
        theta_u = X @ Q
        norms = np.linalg.norm(theta_u, axis=1)
        radius = float(np.median(norms))
        fit = fit_ball(X, Q, radius)
        expect = theta_u * np.minimum(1.0, radius / norms)[:, None]
        np.testing.assert_allclose(fit.coef, expect, rtol=1e-12, atol=1e-14 * radius)
        np.testing.assert_array_equal(fit.active, norms > radius)
        np.testing.assert_allclose(fit.multiplier, np.maximum(norms / radius - 1.0, 0.0),
                                   rtol=1e-10, atol=1e-14)


def test_diagonal_design_matches_independent_root_finder():
    """Φ = diag(s): θ_k = s_k x_k / (s_k² + ν), ν the root of Σ s²x²/(s²+ν)² = B'² (brentq)."""
    rng = np.random.default_rng(2)
    for _ in range(30):
        d = int(rng.integers(1, 7))
        s = rng.lognormal(0.0, 1.5, size=d)
        x = rng.standard_normal(d) * 10
        radius = float(np.linalg.norm(x / s) * rng.uniform(0.01, 0.9))  # always active
        fit = fit_ball(x, np.diag(s), radius)
        assert fit.active

        def h(nu):
            return np.sum((s * x / (s**2 + nu)) ** 2) - radius**2

        nu = optimize.brentq(h, 0.0, np.linalg.norm(s * x) / radius + 1.0, xtol=1e-300, rtol=4 * EPS)
        np.testing.assert_allclose(fit.multiplier, nu, rtol=1e-9)
        np.testing.assert_allclose(fit.coef, s * x / (s**2 + nu), rtol=1e-9, atol=1e-15 * radius)


@pytest.mark.parametrize("x_scale", [1e-200, 1e-150, 1e-8, 1.0, 1e8, 1e150, 1e200])
@pytest.mark.parametrize("r_scale", [1e-200, 1e-150, 1e-8, 1.0, 1e8, 1e150, 1e200])
def test_extreme_scales(x_scale, r_scale):
    """Far-out magnitudes of x and B' give the right answer, not a silent zero or NaN.

    The fit is homogeneous, θ̂(x·s, B'·s) = s·θ̂(x, B'), so the answer at any scale is
    known from a moderate one: with c = x_scale / r_scale, θ̂ = r_scale·θ̂(c·x₀, B'₀).
    For c <= 1e-8 the ball cannot bind (θ̂ = θ_u); for c >= 1e16 the multiplier
    dwarfs the spectrum of A and θ̂ = B'·ΦᵀWx/||ΦᵀWx|| to double precision.
    """
    rng = np.random.default_rng(3)
    Phi = rng.standard_normal((12, 4)) * np.array([1.0, 3.0, 0.3, 10.0])
    w = rng.lognormal(0.0, 1.0, size=12)
    solver = BallLeastSquares(Phi, w)
    x0 = rng.standard_normal(12)
    r0 = 0.5 * float(np.linalg.norm(solver.unconstrained(x0)))
    fit = solver.solve(x0 * x_scale, r0 * r_scale)
    c = x_scale / r_scale
    if c <= 1e-8:
        expect = solver.unconstrained(x0 * x_scale)
        assert not fit.active
    elif c <= 1e8:
        expect = r_scale * solver.solve(x0 * c, r0).coef
        assert fit.active
    else:
        b = Phi.T @ (w * x0)
        expect = r_scale * r0 * b / np.linalg.norm(b)
        assert fit.active
    assert np.all(np.isfinite(fit.coef))
    np.testing.assert_allclose(fit.coef, expect, rtol=1e-9 if c <= 1e8 else 1e-7, atol=0)


def test_boundary_and_zero_data():
    rng = np.random.default_rng(4)
    Phi = rng.standard_normal((10, 3))
    solver = BallLeastSquares(Phi)
    fit0 = solver.solve(np.zeros(10), 1.0)
    np.testing.assert_array_equal(fit0.coef, np.zeros(3))
    assert not fit0.active and fit0.multiplier == 0
    # On the sphere: the unconstrained solution is returned (inactive, up to rounding of its norm).
    x = rng.standard_normal(10)
    r = float(np.linalg.norm(solver.unconstrained(x)))
    for radius in (r, np.nextafter(r, 0), np.nextafter(r, np.inf)):
        fit = solver.solve(x, radius)
        assert np.linalg.norm(fit.coef) <= radius * (1 + 4 * EPS)
        np.testing.assert_allclose(fit.coef, solver.unconstrained(x), rtol=1e-13)


def test_batch_shapes_and_singular_design():
    rng = np.random.default_rng(5)
    Phi = rng.standard_normal((7, 3))
    for shape in [(7,), (4, 7), (2, 5, 7), (2, 1, 3, 7)]:
        fit = fit_ball(rng.standard_normal(shape), Phi, 0.5)
        assert fit.coef.shape == shape[:-1] + (3,)
        assert fit.active.shape == shape[:-1] and fit.multiplier.shape == shape[:-1]
    with pytest.raises(AssumptionError, match="singular"):
        BallLeastSquares(np.ones((5, 2)))


# ---------------------------------------------------------------------------
# Property-based tests (hypothesis)
# ---------------------------------------------------------------------------

PROPS = settings(max_examples=60, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@st.composite
def problems(draw, batch=False):
    T = draw(st.integers(1, 10))
    d = draw(st.integers(1, T))
    E = draw(hnp.arrays(np.float64, (T, d), elements=st.floats(-5, 5, width=64)))
    Phi = E + 10.0 * np.eye(T, d)
    assume(np.linalg.cond(Phi) < 1e6)
    weights = draw(st.one_of(
        st.none(), hnp.arrays(np.float64, (T,), elements=st.floats(0.01, 100.0))))
    shape = (draw(st.integers(1, 4)), T) if batch else (T,)
    x = draw(hnp.arrays(np.float64, shape, elements=st.floats(-1e3, 1e3)))
    radius = draw(st.floats(1e-3, 1e3))
    return Phi, weights, x, radius


def safe_norm(v):
    """||v||_2 without underflow (hypothesis likes values like 1e-250)."""
    vmax = float(np.max(np.abs(v)))
    return vmax * float(np.linalg.norm(v / vmax)) if vmax > 0 else 0.0


def a_norm(A, v):
    return np.sqrt(np.maximum(np.einsum("...i,ij,...j->...", v, A, v), 0.0))


@PROPS
@given(problems(batch=True))
def test_feasible_for_any_input(problem):
    Phi, weights, X, radius = problem
    fit = fit_ball(X, Phi, radius, weights)
    assert np.all(np.isfinite(fit.coef))
    assert np.all(np.linalg.norm(fit.coef, axis=-1) <= radius * (1 + 4 * EPS))
    assert np.all(fit.multiplier >= 0)
    assert np.all((fit.multiplier > 0) == fit.active)


@PROPS
@given(problems(), st.floats(1e-3, 1e3))
def test_scaling_x_and_radius_scales_the_fit(problem, c):
    Phi, weights, x, radius = problem
    a = fit_ball(x, Phi, radius, weights)
    b = fit_ball(c * x, Phi, c * radius, weights)
    np.testing.assert_allclose(b.coef, c * a.coef, rtol=1e-9, atol=1e-12 * c * radius)


@PROPS
@given(problems(), st.floats(0.0, 10.0))
def test_feasible_unconstrained_solution_is_returned_exactly(problem, slack):
    Phi, weights, x, _ = problem
    solver = BallLeastSquares(Phi, weights)
    theta_u = solver.unconstrained(x)
    radius = max(safe_norm(theta_u) * (1 + slack), 1e-300) * (1 + 8 * EPS)
    fit = solver.solve(x, radius)
    assert not fit.active and fit.multiplier == 0.0
    np.testing.assert_array_equal(fit.coef, theta_u)


@PROPS
@given(problems(batch=True))
def test_batch_equals_row_by_row(problem):
    Phi, weights, X, radius = problem
    solver = BallLeastSquares(Phi, weights)
    batch = solver.solve(X, radius)
    rows = [solver.solve(x, radius) for x in X]
    # Equal to rounding: x @ P for one row and X @ P for a stack may take different BLAS
    # paths (dot vs gemm), which can differ in the last bit.
    np.testing.assert_allclose(batch.coef, np.stack([r.coef for r in rows]), rtol=1e-12,
                               atol=1e-13 * radius)
    np.testing.assert_allclose(batch.multiplier, [r.multiplier for r in rows], rtol=1e-10)
    # A 3-D batch is the same computation as the flattened 2-D one.
    X3 = np.stack([X, X[::-1]])
    fit3 = solver.solve(X3, radius)
    np.testing.assert_array_equal(fit3.coef[0], batch.coef)


@PROPS
@given(problems(), problems())
def test_fit_is_the_a_metric_projection_and_nonexpansive(p1, p2):
    """Eq. (16): θ̂ = P^A_C(θ_u); eq. (17): ||θ̂(x) - θ̂(y)||_A <= ||θ_u(x) - θ_u(y)||_A."""
    Phi, weights, x, radius = p1
    y = p2[2]
    assume(y.shape == x.shape)
    solver = BallLeastSquares(Phi, weights)
    w = solver.weights
    A = Phi.T @ (w[:, None] * Phi)
    tx, ty = solver.solve(x, radius).coef, solver.solve(y, radius).coef
    ux, uy = solver.unconstrained(x), solver.unconstrained(y)
    scale = a_norm(A, ux) + a_norm(A, uy) + 1e-300
    assert a_norm(A, tx - ty) <= a_norm(A, ux - uy) * (1 + 1e-9) + 1e-10 * scale
    # Variational inequality of the projection: <θ_u - θ̂, z - θ̂>_A <= 0 for every z in the ball.
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((64, Phi.shape[1]))
    Z *= (radius * rng.random(64) ** (1 / Phi.shape[1]) / np.linalg.norm(Z, axis=1))[:, None]
    Z = np.vstack([Z, ty[None, :]])
    vi = (Z - tx) @ A @ (ux - tx)
    assert np.all(vi <= 1e-9 * scale * (a_norm(A, Z - tx) + 1e-300))


@PROPS
@given(problems(), st.integers(0, 2**32 - 1))
def test_rotating_the_coordinates_rotates_the_fit(problem, seed):
    """The ball is rotation invariant: Φ ↦ ΦQ gives θ̂ ↦ Qᵀθ̂."""
    Phi, weights, x, radius = problem
    d = Phi.shape[1]
    Q = stats.ortho_group.rvs(d, random_state=np.random.default_rng(seed)) if d > 1 else np.eye(1)
    a = fit_ball(x, Phi, radius, weights)
    b = fit_ball(x, Phi @ Q, radius, weights)
    np.testing.assert_allclose(b.coef, Q.T @ a.coef, rtol=1e-8, atol=1e-9 * radius)


@PROPS
@given(problems(), st.floats(1.0, 10.0))
def test_larger_ball_never_fits_worse(problem, factor):
    Phi, weights, x, radius = problem
    w = np.ones(Phi.shape[0]) if weights is None else weights
    small = fit_ball(x, Phi, radius, weights).coef
    big = fit_ball(x, Phi, radius * factor, weights).coef
    f_small, f_big = objective(Phi, w, x, small), objective(Phi, w, x, big)
    assert f_big <= f_small + 1e-12 * (f_small + float(x @ (w * x)))
    assert np.linalg.norm(big) >= np.linalg.norm(small) * (1 - 1e-12)
