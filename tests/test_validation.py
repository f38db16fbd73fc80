"""Every bad input raises a clear TypeError/ValueError that names the argument.

A.3/A.4 failures raise ``AssumptionError`` (a ``ValueError``) naming the assumption.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpfda import (
    AssumptionError,
    BallLeastSquares,
    KernelSpace,
    LegendreSpace,
    brownian_kernel,
    compose,
    delta_from_mu,
    epsilon_from_mu,
    fit_ball,
    ftp,
    ftp_sigma,
    gaussian_kernel,
    gaussian_sigma,
    laplace_mechanism,
    laplace_scale,
    mu_from_epsilon_delta,
    ptf,
    ptf_sigmas,
    theory,
    tradeoff,
    uniform_grid,
)
from dpfda_book.simulation.models import observe, polynomial_curves, rkhs_curves, uniform_ball

GRID = uniform_grid(20)
LEG = LegendreSpace(4)
GAUSS = KernelSpace(gaussian_kernel(0.2))
GRID8 = uniform_grid(8)


def good_X(T=20, n=10, seed=0):
    return np.random.default_rng(seed).standard_normal((n, T)) * 0.1


def rng():
    return np.random.default_rng(0)


PIPELINES = [ftp, ptf]


# ---------------------------------------------------------------------------
# Privacy budget, radius, noise level
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("mu", [0, 0.0, -1.0, np.nan, np.inf, -np.inf])
def test_mu_must_be_positive_and_finite(method, mu):
    with pytest.raises(ValueError, match="mu"):
        method(good_X(), GRID, LEG, 1.0, mu, rng())


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("mu", ["1", None, [1.0], True, 1 + 0j])
def test_mu_must_be_a_real_number(method, mu):
    with pytest.raises(TypeError, match="mu"):
        method(good_X(), GRID, LEG, 1.0, mu, rng())


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("radius", [0.0, -2.0, np.nan, np.inf])
def test_radius_must_be_positive(method, radius):
    with pytest.raises(ValueError, match="radius"):
        method(good_X(), GRID, LEG, radius, 1.0, rng())
    with pytest.raises(ValueError, match="radius"):
        fit_ball(good_X(), LEG.at(GRID).Phi, radius)


@pytest.mark.parametrize("sigma0", [-0.1, -np.inf, np.nan])
def test_sigma0_must_be_nonnegative(sigma0):
    F = good_X()
    with pytest.raises(ValueError, match="sigma0"):
        observe(F, sigma0, rng())


# ---------------------------------------------------------------------------
# The data matrix X
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("shape", [(20,), (2, 3, 4, 20), ()])
def test_X_must_be_2d_or_3d(method, shape):
    X = np.zeros(shape)
    with pytest.raises(ValueError, match="X must be 2-D"):
        method(X, GRID, LEG, 1.0, 1.0, rng())


@pytest.mark.parametrize("method", PIPELINES)
def test_X_last_axis_must_match_grid(method):
    with pytest.raises(ValueError, match="X's last axis"):
        method(good_X(T=19), GRID, LEG, 1.0, 1.0, rng())
    # The transpose (grid points x curves, as in R's fda) is caught, not broadcast.
    with pytest.raises(ValueError, match="X's last axis"):
        method(good_X(T=20, n=12).T, GRID, LEG, 1.0, 1.0, rng())
    with pytest.raises(ValueError, match="X's last axis"):
        fit_ball(good_X(T=19), LEG.at(GRID).Phi, 1.0)


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_X_must_be_finite(method, bad):
    X = good_X()
    X[3, 7] = bad
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        method(X, GRID, LEG, 1.0, 1.0, rng())
    X3 = np.stack([good_X(), X])
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        method(X3, GRID, LEG, 1.0, 1.0, rng())
    # The fitting routine on its own does not let a NaN through either.
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        fit_ball(X, LEG.at(GRID).Phi, 1.0)


@pytest.mark.parametrize("method", PIPELINES)
def test_finite_X_whose_sum_overflows_is_accepted(method):
    # The finiteness check adds X up first; a sum that overflows is settled value by value.
    X = np.full((12, 20), 1.5e308)
    X[0, ::2] = -1.7e308
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(np.add.reduce(X, axis=None))
    rel = method(X, GRID, LEG, 1.0, 1.0, rng())
    assert np.all(np.isfinite(rel.coef))
    X[5, 3] = np.nan  # and a NaN among huge values is still caught
    with pytest.raises(ValueError, match="X contains NaN or inf"):
        method(X, GRID, LEG, 1.0, 1.0, rng())


@pytest.mark.parametrize("method", PIPELINES)
def test_X_must_be_numeric_and_nonempty(method):
    with pytest.raises(TypeError, match="X"):
        method(np.full((3, 20), "a"), GRID, LEG, 1.0, 1.0, rng())
    with pytest.raises(ValueError, match="X must hold at least one curve"):
        method(np.zeros((0, 20)), GRID, LEG, 1.0, 1.0, rng())


# ---------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("grid, message", [
    (GRID[::-1], "grid must be strictly increasing"),
    (np.r_[GRID[:10], GRID[9:19]], "grid must be strictly increasing"),
    (np.linspace(-0.1, 1.0, 20), r"grid must lie in \[0, 1\]"),
    (np.linspace(0.0, 1.5, 20), r"grid must lie in \[0, 1\]"),
    (np.r_[GRID[:19], np.nan], "grid must hold finite values"),
    (GRID.reshape(4, 5), "grid must be one-dimensional"),
])
def test_grid_rules(method, grid, message):
    with pytest.raises(ValueError, match=message):
        method(good_X(), grid, LEG, 1.0, 1.0, rng())


def test_grid_rules_for_spaces_and_evaluation():
    with pytest.raises(ValueError, match="grid must be strictly increasing"):
        LEG.at([0.5, 0.2, 0.9, 1.0])
    with pytest.raises(ValueError, match="grid must lie in"):
        GAUSS.at([0.1, 1.2])
    with pytest.raises(TypeError, match="grid"):
        LEG.at(["a", "b"])
    with pytest.raises(ValueError, match="T must be an integer >= 2"):
        uniform_grid(1)
    with pytest.raises(TypeError, match="T must be an integer"):
        uniform_grid(5.0)
    rel = ftp(good_X(), GRID, LEG, 1.0, 1.0, rng())
    with pytest.raises(ValueError, match=r"t must lie in \[0, 1\]"):
        rel([0.5, 1.5])
    with pytest.raises(ValueError, match="t must hold finite values"):
        rel([np.nan])
    with pytest.raises(ValueError, match="t must be a scalar or one-dimensional"):
        rel(np.zeros((2, 2)))


# ---------------------------------------------------------------------------
# Clipping bounds and weights (PTF)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("clip", [0.0, -1.0, np.full(20, -0.5), np.r_[np.ones(19), 0.0],
                                  np.r_[np.ones(19), np.nan], np.r_[np.ones(19), np.inf]])
def test_clip_must_be_positive_and_finite(clip):
    with pytest.raises(ValueError, match="clip"):
        ptf(good_X(), GRID, LEG, 1.0, 1.0, rng(), clip=clip)


@pytest.mark.parametrize("clip", [np.ones(19), np.ones(21), np.ones((20, 1)), np.ones((2, 20))])
def test_clip_must_have_length_T(clip):
    with pytest.raises(ValueError, match="clip must be a scalar or a vector of length T=20"):
        ptf(good_X(), GRID, LEG, 1.0, 1.0, rng(), clip=clip)


@pytest.mark.parametrize("weights", [np.ones(19), np.zeros(20), -np.ones(20),
                                     np.r_[np.ones(19), np.nan], np.ones((20, 1))])
def test_weights_must_be_positive_vector_of_length_T(weights):
    with pytest.raises(ValueError, match="weights"):
        ptf(good_X(), GRID, LEG, 1.0, 1.0, rng(), weights=weights)
    with pytest.raises(ValueError, match="weights"):
        BallLeastSquares(LEG.at(GRID).Phi, weights)


def test_stage_functions_validate():
    with pytest.raises((ValueError, TypeError), match="n"):
        ftp_sigma(0, 1.0, 1.0)
    with pytest.raises((ValueError, TypeError), match="n"):
        ftp_sigma(2.5, 1.0, 1.0)
    with pytest.raises(ValueError, match="mu"):
        ftp_sigma(10, 1.0, 0.0)
    with pytest.raises((ValueError, TypeError), match="n"):
        ptf_sigmas(0, np.ones(3), 1.0)
    with pytest.raises(ValueError, match="clip"):
        ptf_sigmas(10, np.array([1.0, -1.0]), 1.0)
    with pytest.raises(ValueError, match="clip"):
        ptf_sigmas(10, np.array([1.0, np.nan]), 1.0)


# ---------------------------------------------------------------------------
# Spaces and assumptions A.3 / A.4
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("m", [0, -3])
def test_m_at_least_one(m):
    with pytest.raises(ValueError, match="m must be an integer >= 1"):
        LegendreSpace(m)


@pytest.mark.parametrize("m", [2.0, 2.5, "3", True, None])
def test_m_must_be_an_integer(m):
    with pytest.raises(TypeError, match="m must be an integer"):
        LegendreSpace(m)


@pytest.mark.parametrize("rho", [0.0, -0.2, np.nan, np.inf])
def test_rho_must_be_positive(rho):
    with pytest.raises(ValueError, match="rho"):
        gaussian_kernel(rho)


def test_kernel_space_arguments():
    with pytest.raises(TypeError, match="kernel"):
        KernelSpace(lambda s, t: np.minimum(s, t))
    with pytest.raises(ValueError, match="floor"):
        KernelSpace(gaussian_kernel(0.2), floor=0.0)
    with pytest.raises(TypeError, match="regularize"):
        KernelSpace(gaussian_kernel(0.2), regularize=1)


def test_A3_T_less_than_m():
    assert issubclass(AssumptionError, ValueError)
    with pytest.raises(AssumptionError, match=r"A\.3.*T=3.*m=5"):
        LegendreSpace(5).at(uniform_grid(3))
    with pytest.raises(AssumptionError, match=r"A\.3"):
        ftp(good_X(T=3), uniform_grid(3), LegendreSpace(5), 1.0, 1.0, rng())
    with pytest.raises(AssumptionError, match=r"A\.3"):
        ptf(good_X(T=3), uniform_grid(3), LegendreSpace(5), 1.0, 1.0, rng())


def test_A4_singular_gram_at_the_floor():
    """Gaussian kernel, ρ = 0.2, 20 equally spaced points: λ_min(K_T) ≈ 2e-16 < 1e-8."""
    with pytest.raises(AssumptionError, match=r"A\.4.*K_T.*singular"):
        GAUSS.at(GRID)
    for method in PIPELINES:
        with pytest.raises(AssumptionError, match=r"A\.4"):
            method(good_X(), GRID, GAUSS, 1.0, 1.0, rng())


def test_A4_brownian_kernel_at_zero():
    brown = KernelSpace(brownian_kernel())
    with pytest.raises(AssumptionError, match=r"A\.4.*K\(t_j, t_j\).*t = 0"):
        brown.at(uniform_grid(5))
    for method in PIPELINES:
        with pytest.raises(AssumptionError, match=r"A\.4"):
            method(good_X(T=5), uniform_grid(5), brown, 1.0, 1.0, rng())
    brown.at(uniform_grid(5)[1:])  # leaving t = 0 out is fine


def test_space_must_be_a_space():
    with pytest.raises(TypeError, match="space"):
        ftp(good_X(), GRID, "legendre", 1.0, 1.0, rng())
    with pytest.raises(TypeError, match="space"):
        ptf(good_X(), GRID, gaussian_kernel(0.2), 1.0, 1.0, rng())


def test_design_must_have_full_column_rank():
    with pytest.raises(AssumptionError, match="singular"):
        fit_ball(np.zeros(4), np.ones((4, 2)), 1.0)
    with pytest.raises(ValueError, match="Phi must be a 2-D"):
        fit_ball(np.zeros(4), np.ones(4), 1.0)
    with pytest.raises(ValueError, match="Phi contains NaN"):
        fit_ball(np.zeros(2), np.array([[1.0, np.nan], [0.0, 1.0]]), 1.0)


# ---------------------------------------------------------------------------
# Random generators: explicit numpy Generators only
# ---------------------------------------------------------------------------

BAD_RNGS = [0, 12345, None, np.random.RandomState(0), np.random.SeedSequence(0), "seed"]


@pytest.mark.parametrize("bad", BAD_RNGS, ids=lambda r: type(r).__name__)
def test_rng_must_be_a_generator(bad):
    calls = [
        lambda: ftp(good_X(), GRID, LEG, 1.0, 1.0, bad),
        lambda: ptf(good_X(), GRID, LEG, 1.0, 1.0, bad),
        lambda: observe(good_X(), 0.1, bad),
        lambda: polynomial_curves(5, 2, bad),
        lambda: rkhs_curves(5, bad),
        lambda: uniform_ball(5, 2, 1.0, bad),
        lambda: laplace_mechanism(np.zeros(3), 1.0, 1.0, bad),
        lambda: LEG.sample_gaussian(bad),
        lambda: GAUSS.sample_gaussian(bad, GRID8),
    ]
    for call in calls:
        with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
            call()


# ---------------------------------------------------------------------------
# Data models
# ---------------------------------------------------------------------------


def test_data_model_arguments():
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        polynomial_curves(0, 3, rng())
    with pytest.raises(ValueError, match="m must be an integer >= 1"):
        polynomial_curves(5, 0, rng())
    with pytest.raises(ValueError, match="B must be"):
        polynomial_curves(5, 3, rng(), B=-1.0)
    with pytest.raises(ValueError, match="B must be"):
        rkhs_curves(5, rng(), B=0.0)
    with pytest.raises(ValueError, match="centers must be an integer >= 1"):
        rkhs_curves(5, rng(), centers=0)
    with pytest.raises(TypeError, match="kernel"):
        rkhs_curves(5, rng(), kernel="gaussian")
    with pytest.raises(ValueError, match="F must be 2-D"):
        observe(np.zeros(5), 0.1, rng())
    with pytest.raises(ValueError, match="reps must be an integer >= 1"):
        observe(good_X(), 0.1, rng(), reps=0)
    with pytest.raises(ValueError, match="radius"):
        uniform_ball(5, 2, -1.0, rng())


# ---------------------------------------------------------------------------
# Privacy functions
# ---------------------------------------------------------------------------


def test_privacy_arguments():
    with pytest.raises(ValueError, match="mu"):
        delta_from_mu(0.0, 1.0)
    with pytest.raises(ValueError, match="mu"):
        delta_from_mu(np.array([1.0, -1.0]), 1.0)
    with pytest.raises(ValueError, match="eps"):
        delta_from_mu(1.0, -0.1)
    with pytest.raises(ValueError, match="eps"):
        delta_from_mu(1.0, np.nan)
    for delta in (0.0, 1.0, -0.5, 2.0, np.nan):
        with pytest.raises(ValueError, match="delta"):
            epsilon_from_mu(1.0, delta)
        with pytest.raises(ValueError, match="delta"):
            mu_from_epsilon_delta(1.0, delta)
    with pytest.raises(ValueError, match="eps"):
        mu_from_epsilon_delta(-1.0, 1e-5)
    with pytest.raises(ValueError, match="alpha"):
        tradeoff(1.5, 1.0)
    with pytest.raises(ValueError, match="mu"):
        tradeoff(0.5, -1.0)
    with pytest.raises(ValueError, match="compose needs at least one mu"):
        compose()
    with pytest.raises(ValueError, match="mu"):
        compose(1.0, -1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_sigma(0.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        laplace_scale(1.0, 0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        laplace_mechanism(np.zeros(2), -1.0, 1.0, rng())
    with pytest.raises(ValueError, match="value"):
        laplace_mechanism(np.array([np.nan]), 1.0, 1.0, rng())


def test_theory_arguments():
    geom = LEG.at(GRID)
    with pytest.raises(ValueError, match="radius"):
        theory.ftp_noiseless_error(geom, 0.0, 10, 1.0)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        theory.ftp_noiseless_error(geom, 1.0, 0, 1.0)
    with pytest.raises(ValueError, match="mu"):
        theory.ptf_unconstrained_error(geom, 1.0, 10, -1.0)
    with pytest.raises(ValueError, match="sigma0"):
        theory.ftp_imse_bound(geom, 1.0, 1.1, 10, 1.0, -0.1)
    with pytest.raises(ValueError, match="B must be"):
        theory.ftp_imse_bound(geom, 0.0, 1.1, 10, 1.0, 0.0)
    with pytest.raises(ValueError, match="x must be finite and >= 0"):
        theory.chi2_tail_bound(3, -1.0)


# ---------------------------------------------------------------------------
# Inputs that were accepted silently or failed with numpy's or Python's own error
# each gets a named error that says what to change
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", PIPELINES)
def test_a_masked_array_is_refused_not_unmasked(method):
    X = good_X()
    masked = np.ma.masked_array(X, mask=np.zeros_like(X, dtype=bool))
    masked[2, 5] = np.ma.masked  # the value under the mask would have been used
    with pytest.raises(ValueError, match="X is a masked array with 1 masked value"):
        method(masked, GRID, LEG, 1.0, 1.0, rng())
    # a masked array with nothing masked is its data
    plain = method(np.ma.masked_array(X), GRID, LEG, 1.0, 1.0, rng())
    assert np.array_equal(plain.coef, method(X, GRID, LEG, 1.0, 1.0, rng()).coef)
    with pytest.raises(ValueError, match="grid is a masked array"):
        method(X, np.ma.masked_array(GRID, mask=GRID > 0.9), LEG, 1.0, 1.0, rng())


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("dtype, match", [
    (bool, "X must hold real numbers, got booleans"),
    ("m8[s]", r"X must hold real numbers, got time spans \(timedelta64\)"),
    ("M8[s]", r"X must hold real numbers, got dates \(datetime64\)"),
    (object, "X must be array-like of real numbers, got dtype object"),
])
def test_X_of_booleans_times_or_objects_is_refused(method, dtype, match):
    X = (np.abs(good_X()) * 100).astype(int).astype(dtype)
    with pytest.raises(TypeError, match=match):
        method(X, GRID, LEG, 1.0, 1.0, rng())


@pytest.mark.parametrize("method", PIPELINES)
def test_ragged_X_is_a_named_type_error(method):
    with pytest.raises(TypeError, match="X must be a rectangular array"):
        method([[0.0] * 20, [0.0] * 19], GRID, LEG, 1.0, 1.0, rng())


@pytest.mark.parametrize("method", PIPELINES)
@pytest.mark.parametrize("name", ["mu", "radius"])
@pytest.mark.parametrize("huge", [10**400, -(10**400)], ids=["10**400", "-10**400"])
def test_numbers_beyond_the_float_range_are_named(method, name, huge):
    from fractions import Fraction

    for value in (huge, Fraction(huge, 3)):
        args = {"mu": 1.0, "radius": 1.0, name: value}
        with pytest.raises(ValueError, match=f"{name} must be a finite number within the float64 range"):
            method(good_X(), GRID, LEG, args["radius"], args["mu"], rng())


@pytest.mark.skipif(np.finfo(np.longdouble).max <= np.finfo(float).max,
                    reason="longdouble is double on this platform: no value beyond float64 exists")
@pytest.mark.parametrize("method", PIPELINES)
def test_longdouble_beyond_float64_is_named_not_called_nan(method):
    X = good_X().astype(np.longdouble)
    X[4, 4] = np.longdouble("1e400")
    with pytest.raises(ValueError, match="X holds values beyond the float64 range .*rescale X"):
        method(X, GRID, LEG, 1.0, 1.0, rng())
    with pytest.raises(ValueError, match="mu must be a finite number within the float64 range"):
        method(good_X(), GRID, LEG, 1.0, np.longdouble("1e400"), rng())
    X[4, 4] = np.longdouble("1e300")  # within float64: accepted
    assert np.isfinite(method(X, GRID, LEG, 1.0, 1.0, rng()).coef).all()


@pytest.mark.parametrize("bad, err, match", [
    ("abc", TypeError, "value must be array-like of real numbers"),
    (np.array([1.0, "x"], dtype=object), TypeError, "value must be array-like of real numbers, got dtype object"),
    (np.array([True, False]), TypeError, "value must hold real numbers, got booleans"),
    (np.array([2.0**961]), ValueError, r"value must lie in \[-2\^960, 2\^960\]"),
    (np.array([0.0, -np.finfo(float).max]), ValueError, r"value must lie in \[-2\^960, 2\^960\]"),
])
def test_laplace_value_outside_its_domain_is_named(bad, err, match):
    with pytest.raises(err, match=match):
        laplace_mechanism(bad, 1.0, 1.0, rng())


def test_laplace_scale_that_could_overflow_is_refused_before_drawing():
    g = rng()
    with pytest.raises(ValueError, match="Laplace scale sensitivity/epsilon must be a normal float of at most 2"):
        laplace_mechanism(np.zeros(3), 1e306, 1.0, g)
    with pytest.raises(ValueError, match="Laplace scale"):
        laplace_mechanism(np.zeros(3), 1e300, 1e-300, g)
    assert g.standard_normal() == rng().standard_normal()  # nothing was drawn
    # at the edge of the domain, value + noise stays finite
    edge = laplace_mechanism(np.full(2000, 2.0**960), 2.0**960, 1.0, g)
    assert np.all(np.isfinite(edge))
