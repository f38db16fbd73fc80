"""Positive-part James–Stein post-processing of a release, and the ball projection."""

import numpy as np
import pytest

from dpfda.maths.summation import gamma
from dpfda_book.mechanisms.postprocess import ball_projection, james_stein, james_stein_risk


def test_james_stein_shrinks_by_the_positive_part_factor():
    x = np.array([3.0, 0.0, 4.0, 0.0])  # |x|^2 = 25, m = 4
    np.testing.assert_allclose(james_stein(x, 1.0), (1 - 2 / 25) * x, rtol=gamma(8), atol=0)  # a few roundings
    np.testing.assert_array_equal(james_stein(x, 10.0), np.zeros(4))  # factor below zero
    np.testing.assert_array_equal(james_stein(np.zeros(3), 1.0), np.zeros(3))
    stack = np.vstack([x, 2 * x])
    np.testing.assert_allclose(james_stein(stack, 1.0)[1], (1 - 2 / 100) * 2 * x, rtol=gamma(8), atol=0)


def test_james_stein_dominates_the_release_for_m_at_least_3():
    rng = np.random.default_rng(np.random.SeedSequence(32))
    m, sigma, reps = 4, 0.1375, 40_000
    for norm in (0.0, 0.3, 1.0, 3.0):
        theta = np.zeros(m)
        theta[0] = norm
        x = theta + sigma * rng.standard_normal((reps, m))
        loss_js = np.sum((james_stein(x, sigma) - theta) ** 2, axis=1)
        loss_ftp = np.sum((x - theta) ** 2, axis=1)
        diff = loss_ftp - loss_js
        se = diff.std(ddof=1) / np.sqrt(reps)
        assert diff.mean() > -4 * se  # never significantly worse
        if norm <= 1.0:
            assert diff.mean() > 4 * se  # strictly better near the origin


def test_ball_projection_is_nonexpansive_towards_points_inside():
    rng = np.random.default_rng(np.random.SeedSequence(33))
    x = 3 * rng.standard_normal((200, 5))
    p = ball_projection(x, 1.1)
    assert np.all(np.linalg.norm(p, axis=1) <= 1.1 * (1 + gamma(16)))  # r·x/||x||: a norm, two roundings, a norm
    inside = np.array([0.5, 0.2, 0.0, 0.0, 0.1])
    # non-expansive: p's own rounding (γ₈ of 1.1) and the two norms' (γ₈ each)
    assert np.all(np.linalg.norm(p - inside, axis=1)
                  <= np.linalg.norm(x - inside, axis=1) * (1 + gamma(8)) + gamma(16) * 1.1 * 2)


@pytest.mark.parametrize(
    "coef, sigma, match",
    [
        (np.ones(2), 1.0, "at least 3"),
        (np.ones(4), 0.0, "sigma"),
        (np.array([1.0, np.nan, 1.0]), 1.0, "finite"),
        (np.ones((2, 2, 3)), 1.0, "shape"),
    ],
)
def test_james_stein_refuses_bad_input(coef, sigma, match):
    with pytest.raises(ValueError, match=match):
        james_stein(coef, sigma)


def test_james_stein_risk_at_the_origin_and_far_from_it():
    assert np.isclose(james_stein_risk(5, 0.3, 0.0), 2 * 0.3**2, rtol=1e-14, atol=0)  # E[1/(m − 2)]: a few ulps
    far = james_stein_risk(4, 1.0, 1e3)  # the gain (m - 2)^2 / |theta|^2 to first order
    # the first-order term of an expansion whose next is O(m/|θ|²) = 4e-6 of it; 4 − far cancels by 1e6
    assert np.isclose(4.0 - far, 4 / (1e6 + 2.0), rtol=1e-5, atol=0)
    risks = [james_stein_risk(6, 0.5, r) for r in (0.0, 0.2, 1.0, 5.0)]
    assert np.all(np.diff(risks) > 0) and risks[-1] < 6 * 0.5**2


def test_james_stein_risk_agrees_with_an_integral_and_with_simulation():
    m, sigma, norm = 5, 0.4, 0.9
    lam = 0.5 * (norm / sigma) ** 2  # E[1/(m-2+2K)] = int_0^1 t^(m-3) exp(-lam(1-t^2)) dt
    t = np.linspace(0.0, 1.0, 200_001)
    f = t ** (m - 3) * np.exp(-lam * (1 - t**2))
    h = t[1] - t[0]
    integral = float(np.sum((f[1:] + f[:-1]) / 2) * h)
    # the trapezoidal rule's error h²/12·max|f''| (f'' from the same grid's second differences) and
    # the sum's rounding (γ_N of the integral, positive terms), through (m − 2)²σ² against the risk
    f2 = float(np.max(np.abs(np.diff(f, 2)))) / h**2
    risk = james_stein_risk(m, sigma, norm)
    rel = (m - 2) ** 2 * sigma**2 * (h * h / 12 * f2 + gamma(t.size + 4) * integral) / risk + gamma(8)
    assert np.isclose(risk, sigma**2 * (m - (m - 2) ** 2 * integral), rtol=rel, atol=0)
    rng = np.random.default_rng(np.random.SeedSequence(34))
    theta = np.zeros(m)
    theta[1] = norm
    x = theta + sigma * rng.standard_normal((100_000, m))
    plain = (1 - (m - 2) * sigma**2 / np.sum(x * x, axis=1, keepdims=True)) * x
    loss = np.sum((plain - theta) ** 2, axis=1)
    se = loss.std(ddof=1) / np.sqrt(loss.size)
    assert abs(loss.mean() - james_stein_risk(m, sigma, norm)) < 4 * se
    gain = loss - np.sum((james_stein(x, sigma) - theta) ** 2, axis=1)
    assert gain.mean() > 4 * gain.std(ddof=1) / np.sqrt(gain.size)  # the positive part: better


def test_james_stein_risk_is_continuous_where_its_method_changes():
    sigma = 1e-3  # Poisson means just below and above 1e6
    below, above = (james_stein_risk(8, sigma, np.sqrt(2e6 * f) * sigma) for f in (1 - 1e-9, 1 + 1e-9))
    assert np.isclose(below, above, rtol=1e-12, atol=0)  # either method to a few ulps of λ's terms
    gain = 8 * sigma**2 - below  # about (m - 2)^2 sigma^2 / (2 lam)
    # the asymptotic term, next order O(1/λ) = 1e-6 of it; 8σ² − risk cancels by about 4e5 (1e-10 of it)
    assert np.isclose(gain, 36 * sigma**2 / 2e6, rtol=1e-5, atol=0)


@pytest.mark.parametrize(
    "args, error, match",
    [((2, 1.0, 0.5), ValueError, "m"), ((4, 0.0, 0.5), ValueError, "sigma"),
     ((4, 1.0, -0.1), ValueError, "norm"), ((4.5, 1.0, 0.5), TypeError, "m"),
     ((4, 1e-300, 1e300), ValueError, "finite")],
)
def test_james_stein_risk_refuses_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        james_stein_risk(*args)
