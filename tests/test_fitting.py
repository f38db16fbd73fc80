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
from dpfda.maths.rounding import eigh_rtol, fit_rtol, product_atol
from dpfda.maths.summation import gamma

EPS = np.finfo(float).eps
N_CASES = 160


def _slack(d: int) -> float:
    """Relative amount by which a fit's norm may exceed B': scaled to norm <= 1 in the eigenbasis
    (γ_{d+4}), turned back by V̂ (off orthogonal by 2·eigh_rtol(d), the product √d·γ_d), its norm
    taken (γ_{d+2})."""
    return gamma(2 * d + 6) + 2 * eigh_rtol(d) + np.sqrt(d) * gamma(d)


def _ratio(A, w, x, theta) -> float:
    """fit_rtol's data_ratio, ||x||_W/(||A||^½·||θ||), largest over the rows."""
    xw = np.array([safe_norm(v) for v in np.sqrt(w) * np.atleast_2d(x)])
    t = np.array([safe_norm(v) for v in np.atleast_2d(theta)])
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(xw > 0, xw / t, 0.0)  # no data, nothing to round
    return float(np.max(r) / np.sqrt(np.linalg.norm(A, 2)))


def _rtol(A, T, ratio) -> float:
    """fit_rtol, or the example is dropped where no first-order bound holds (κ too large)."""
    try:
        return fit_rtol(A, T, data_ratio=ratio)
    except ValueError:
        assume(False)
        raise


def _objective_tol(Phi, w, x, theta, nu, radius, rtol) -> float:
    """How far f(θ̂) may be above f at the exact constrained minimiser: the radial part of θ̂'s
    error against the gradient −2νθ* (2ν·B'²·rtol), the rest at second order (||A||·(rtol·||θ||)²),
    and f's own evaluation (r = x − Φθ to γ_{d+1}(√d·||A||^½·||θ|| + ||x||_W), then rᵀWr)."""
    A = Phi.T @ (w[:, None] * Phi)
    t, xw = np.linalg.norm(theta), np.linalg.norm(np.sqrt(w) * x)
    f = objective(Phi, w, x, theta)
    dr = gamma(Phi.shape[1] + 1) * (np.sqrt(Phi.shape[1] * np.linalg.norm(A, 2)) * t + xw)
    evaluation = 2 * np.sqrt(f) * dr + dr**2 + gamma(Phi.shape[0] + 1) * f
    return 2 * nu * radius**2 * rtol + np.linalg.norm(A, 2) * (rtol * t) ** 2 + evaluation


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
    assert norm <= radius * (1 + _slack(d))
    # Dual feasibility and complementary slackness.
    assert nu >= 0
    if active:
        assert nu > 0
        assert abs(norm - radius) <= _slack(d) * radius
    else:
        assert nu == 0.0
        np.testing.assert_array_equal(theta, solver.unconstrained(x))
    assert abs(nu * (norm - radius)) <= _slack(d) * nu * radius
    # Stationarity: ΦᵀW(Φθ - x) + νθ = 0, to the backward errors of the fit (A formed and
    # diagonalised, V̂'s orthogonality, ν to 4 ulps) and of this check's own products, against the
    # size of the terms: ||A||·||θ||, ν||θ|| and √d·||A||^½·||x||_W
    resid = A @ theta - b + nu * theta
    e, nA = eigh_rtol(d), np.linalg.norm(A, 2)
    scale = (nA + nu) * norm + np.sqrt(d * nA) * np.linalg.norm(np.sqrt(w) * x)
    assert np.linalg.norm(resid) <= (d * gamma(T + 1) + 6 * e + np.sqrt(d) * gamma(2 * (T + d) + 16)) * scale

    # Compare with the generic optimiser.
    ts = scipy_fit(Phi, w, x, radius)
    f_ours = objective(Phi, w, x, theta)
    f_scipy = objective(Phi, w, x, ts)
    rtol = fit_rtol(A, T, data_ratio=_ratio(A, w, x, theta))
    tol = _objective_tol(Phi, w, x, theta, nu, radius, rtol) + _objective_tol(Phi, w, x, ts, 0.0, radius, 0.0)
    # SLSQP may end a hair outside the ball; weak duality accounts for that exactly:
    # f(θ*) = min_θ f(θ) + ν(||θ||² - B'²) <= f(θ_s) + ν(||θ_s||² - B'²).
    assert f_ours <= f_scipy + nu * (ts @ ts - radius**2) + tol
    # ... and against scipy's point pulled back into the ball, no correction needed.
    ts_feasible = ts * min(1.0, radius / max(np.linalg.norm(ts), 1e-300))
    assert f_ours <= objective(Phi, w, x, ts_feasible) + tol
    # The problem is strictly convex: both solvers find the same point. For the exact minimiser θ*
    # and any feasible z, f(z) − f(θ*) >= ||z − θ*||_A², so ||θ̂ − z|| <= ||θ̂ − θ*|| + sqrt(gap/λ_min)
    gap = max(objective(Phi, w, x, ts_feasible) - f_ours, 0.0) + 2 * tol
    lam_min = np.linalg.eigvalsh(A)[0]
    assert np.linalg.norm(theta - ts_feasible) <= rtol * norm + np.sqrt(gap / lam_min)


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
        # the fit through the eigenbasis of QᵀQ against X @ Q here: fit_rtol with the data's ratio
        A = Q.T @ Q
        rtol = fit_rtol(A, T, data_ratio=_ratio(A, np.ones(T), X, expect)) + product_atol(X, Q).max() / norms.min()
        np.testing.assert_allclose(fit.coef, expect, rtol=0, atol=2 * rtol * np.linalg.norm(expect, axis=1).max())
        np.testing.assert_array_equal(fit.active, norms > radius)
        # ν = ||θ_u||/B' − 1: off by what ||θ_u|| is off by (2·rtol of it), and Newton's 4 ulps
        nu = np.maximum(norms / radius - 1.0, 0.0)
        assert np.all(np.abs(fit.multiplier - nu) <= 2 * rtol * norms / radius + 8 * EPS * nu)


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
        # both roots to a few ulps of ν plus the rounding of h (γ_{d+6} of B'²) over |h'(ν)|
        dh = 2 * np.sum((s * x) ** 2 / (s**2 + nu) ** 3)
        tol_nu = 2 * gamma(d + 8) * radius**2 / dh + 8 * EPS * nu
        assert abs(fit.multiplier - nu) <= tol_nu
        # θ_k moves by θ_k·δν/(s_k² + ν), plus the fit's own rounding (fit_rtol: diag(s) is its own basis)
        expect = s * x / (s**2 + nu)
        A = np.diag(s**2)
        own = fit_rtol(A, d, data_ratio=_ratio(A, np.ones(d), x, expect)) * radius
        bound = np.abs(expect) * tol_nu / (s**2 + nu) + own
        assert np.all(np.abs(fit.coef - expect) <= bound)


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
    # the data scaled by a power of ten (u of each value): within c <= 1e8, two fits of the problem
    # (c·x₀, B'₀) to fit_rtol each (its ν, its data ratio); far outside, the fit is B'·v/||v||,
    # v = ΦᵀWx, whose direction is known to √d·γ_{T+d}·|| |Φ|ᵀW|x| ||/||v|| in each of the two
    # computations, turned by V̂ (2e + √d·γ_d), normalised (γ_{d+4}); and the limit differs from the
    # fit by at most 2||A||/ν, ν >= ||v||/B' − ||A||
    A = Phi.T @ (w[:, None] * Phi)
    if c <= 1e8:
        moderate = solver.solve(x0 * c, r0)
        ratio = _ratio(A, w, x0 * c, moderate.coef)
        rtol = 2 * fit_rtol(A, 12, data_ratio=ratio, multiplier=float(moderate.multiplier)) + gamma(2)
    else:
        b0, nA = Phi.T @ (w * x0), np.linalg.norm(A, 2)
        direction = np.sqrt(4) * gamma(16) * np.linalg.norm(np.abs(Phi).T @ (w * np.abs(x0))) / np.linalg.norm(b0)
        rtol = 2 * (direction + 2 * eigh_rtol(4) + 2 * gamma(4) + gamma(8)) + gamma(2)
        rtol += 2 * nA / (np.linalg.norm(b0) * (c / r0) - nA)
    np.testing.assert_allclose(fit.coef, expect, rtol=0, atol=rtol * safe_norm(expect))  # no underflow


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
        assert np.linalg.norm(fit.coef) <= radius * (1 + _slack(3))
        # inactive: the same computation; active at B' one ulp below ||θ_u||: ν moves θ by at most
        # κ(A)·2u of itself, plus the constrained solve's own rounding
        A = Phi.T @ Phi
        theta_u = solver.unconstrained(x)
        rtol = fit_rtol(A, 10, data_ratio=_ratio(A, np.ones(10), x, theta_u)) + np.linalg.cond(A) * gamma(2)
        np.testing.assert_allclose(fit.coef, theta_u, rtol=0, atol=rtol * np.linalg.norm(theta_u))


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
    assert np.all(np.linalg.norm(fit.coef, axis=-1) <= radius * (1 + _slack(Phi.shape[1])))
    assert np.all(fit.multiplier >= 0)
    assert np.all((fit.multiplier > 0) == fit.active)


@PROPS
@given(problems(), st.floats(1e-3, 1e3))
def test_scaling_x_and_radius_scales_the_fit(problem, c):
    Phi, weights, x, radius = problem
    a = fit_ball(x, Phi, radius, weights)
    b = fit_ball(c * x, Phi, c * radius, weights)
    # c·x and c·B' round by u each: two fits to fit_rtol of ||θ|| (with the data's ratio), and c·θ
    w = np.ones(Phi.shape[0]) if weights is None else weights
    A = Phi.T @ (w[:, None] * Phi)
    rtol = _rtol(A, Phi.shape[0], _ratio(A, w, x, a.coef))
    np.testing.assert_allclose(b.coef, c * a.coef, rtol=0, atol=(2 * rtol + gamma(3)) * c * np.linalg.norm(a.coef))


@PROPS
@given(problems(), st.floats(0.0, 10.0))
def test_feasible_unconstrained_solution_is_returned_exactly(problem, slack):
    Phi, weights, x, _ = problem
    solver = BallLeastSquares(Phi, weights)
    theta_u = solver.unconstrained(x)
    radius = max(safe_norm(theta_u) * (1 + slack), 1e-300) * (1 + _slack(Phi.shape[1]))  # norms here and there
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
    # Bit for bit: each row goes through the same fixed-order element-wise arithmetic whatever
    # the batch (the fitter's per-row argument), so a curve's fit and multiplier do not depend
    # on the other rows.
    bits = lambda a: np.asarray(a, dtype=float).view(np.uint64)  # noqa: E731
    assert np.array_equal(bits(batch.coef), bits(np.stack([r.coef for r in rows])))
    assert np.array_equal(bits(batch.multiplier), bits([r.multiplier for r in rows]))
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
    # each of tx, ty, ux, uy is off by its fit's bound, in the A-norm ||A||^½·rtol·||θ||, and the
    # A-norms themselves round by γ_{d²+d} of |v|ᵀ|A||v|
    d = Phi.shape[1]
    err = {k: _rtol(A, Phi.shape[0], _ratio(A, w, v, th)) * np.sqrt(np.linalg.norm(A, 2)) * np.linalg.norm(th)
           for k, v, th in (("tx", x, tx), ("ty", y, ty), ("ux", x, ux), ("uy", y, uy))}
    anorm_err = gamma(d * d + d) * (a_norm(np.abs(A), np.abs(tx - ty)) + a_norm(np.abs(A), np.abs(ux - uy)))
    assert a_norm(A, tx - ty) <= a_norm(A, ux - uy) + sum(err.values()) + anorm_err
    # Variational inequality of the projection: <θ_u - θ̂, z - θ̂>_A <= 0 for every z in the ball.
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((64, Phi.shape[1]))
    Z *= (radius * rng.random(64) ** (1 / Phi.shape[1]) / np.linalg.norm(Z, axis=1))[:, None]
    Z = np.vstack([Z, ty[None, :]])
    vi = (Z - tx) @ A @ (ux - tx)
    # <z − θ̂, θ_u − θ̂>_A with θ̂, θ_u off by err: |δ| <= ||z − θ̂||_A·(err_u + err_t) + err_t·||θ_u − θ̂||_A,
    # and the products' rounding γ_{d²+2d} of |z − θ̂|ᵀ|A||θ_u − θ̂|
    tol = (a_norm(A, Z - tx) * (err["ux"] + err["tx"]) + err["tx"] * a_norm(A, ux - tx)
           + gamma(d * d + 2 * d) * (np.abs(Z - tx) @ np.abs(A) @ np.abs(ux - tx)))
    assert np.all(vi <= tol)


@PROPS
@given(problems(), st.integers(0, 2**32 - 1))
def test_rotating_the_coordinates_rotates_the_fit(problem, seed):
    """The ball is rotation invariant: Φ ↦ ΦQ gives θ̂ ↦ Qᵀθ̂."""
    Phi, weights, x, radius = problem
    d = Phi.shape[1]
    Q = stats.ortho_group.rvs(d, random_state=np.random.default_rng(seed)) if d > 1 else np.eye(1)
    a = fit_ball(x, Phi, radius, weights)
    b = fit_ball(x, Phi @ Q, radius, weights)
    # two fits (fit_rtol each), Φ @ Q rounding (√d·γ_d of Φ: κ(A) times 2√d·γ_d of θ) and Qᵀθ (√d·γ_d)
    w = np.ones(Phi.shape[0]) if weights is None else weights
    A = Phi.T @ (w[:, None] * Phi)
    rtol = 2 * _rtol(A, Phi.shape[0], _ratio(A, w, x, a.coef)) + (2 * np.linalg.cond(A) + 1) * np.sqrt(d) * gamma(d)
    np.testing.assert_allclose(b.coef, Q.T @ a.coef, rtol=0, atol=rtol * np.linalg.norm(a.coef))


@PROPS
@given(problems(), st.floats(1.0, 10.0))
def test_larger_ball_never_fits_worse(problem, factor):
    Phi, weights, x, radius = problem
    w = np.ones(Phi.shape[0]) if weights is None else weights
    small = fit_ball(x, Phi, radius, weights).coef
    big = fit_ball(x, Phi, radius * factor, weights).coef
    f_small, f_big = objective(Phi, w, x, small), objective(Phi, w, x, big)
    # in exact arithmetic f_big <= f_small; here each fit is off by its bound (_objective_tol, with
    # ν <= ||A||·(||θ_u||/B')... taken as the multipliers the fits report)
    A = Phi.T @ (w[:, None] * Phi)
    fits = [fit_ball(x, Phi, r, weights) for r in (radius, radius * factor)]
    rtol = max(_rtol(A, Phi.shape[0], _ratio(A, w, x, f.coef)) for f in fits)
    tol = sum(_objective_tol(Phi, w, x, f.coef, float(f.multiplier), r, rtol)
              for f, r in zip(fits, (radius, radius * factor)))
    assert f_big <= f_small + tol
    assert np.linalg.norm(big) >= np.linalg.norm(small) * (1 - 2 * rtol - gamma(Phi.shape[1] + 1))


def test_a_row_redone_at_a_tiny_scale_keeps_its_bits_whatever_else_is_redone():
    """Rows whose products fall towards the subnormal range are redone scaled by a power of two; a
    row's result must not depend on how many rows are redone with it (one BLAS path per row)."""
    Phi = np.array([[11.0], [1.0], [1.0], [1.0]])
    x = np.full(4, 2.33357342e-304)
    solver = BallLeastSquares(Phi)
    alone = solver.solve(x[None], 1.0).coef
    assert np.array_equal(solver.solve(np.stack([x, x]), 1.0).coef[:1], alone)
    assert np.array_equal(solver.solve(np.stack([x[None], x[None]]), 1.0).coef[0], alone)
