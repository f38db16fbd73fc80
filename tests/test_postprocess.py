"""Positive-part James–Stein post-processing of a release, and the ball projection."""

import numpy as np
import pytest

from dpfda.mechanisms.postprocess import ball_projection, james_stein


def test_james_stein_shrinks_by_the_positive_part_factor():
    x = np.array([3.0, 0.0, 4.0, 0.0])  # |x|^2 = 25, m = 4
    np.testing.assert_allclose(james_stein(x, 1.0), (1 - 2 / 25) * x)
    np.testing.assert_array_equal(james_stein(x, 10.0), np.zeros(4))  # factor below zero
    np.testing.assert_array_equal(james_stein(np.zeros(3), 1.0), np.zeros(3))
    stack = np.vstack([x, 2 * x])
    np.testing.assert_allclose(james_stein(stack, 1.0)[1], (1 - 2 / 100) * 2 * x)


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
    assert np.all(np.linalg.norm(p, axis=1) <= 1.1 * (1 + 1e-12))
    inside = np.array([0.5, 0.2, 0.0, 0.0, 0.1])
    assert np.all(np.linalg.norm(p - inside, axis=1) <= np.linalg.norm(x - inside, axis=1) + 1e-12)


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
