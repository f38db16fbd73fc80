"""Tests of dpfda_book.mechanisms.projections: the ball projection is feasible at every
magnitude, the trust-region maximum is an upper bound that its maximiser attains, and
the sign vectors cover a symmetric box once each."""

from __future__ import annotations

import numpy as np
import pytest

from dpfda.maths.rounding import eigh_rtol
from dpfda.maths.summation import gamma
from dpfda_book.mechanisms.projections import (
    MAX_ENUMERATION_T,
    project_ball,
    robust_norm,
    sign_vectors,
    trust_region_max,
)


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([20261201, *key]))


def test_project_ball_is_exactly_feasible_at_every_magnitude():
    rng = _rng(9)
    for e in (-300, -100, 0, 100, 300, 307):
        X = rng.standard_normal((100, 8)) * 10.0**e
        P = project_ball(X, 0.7)
        top = np.max(np.abs(P), axis=-1, keepdims=True)
        norms = top[:, 0] * np.linalg.norm(P / np.where(top > 0, top, 1.0), axis=-1)
        assert np.all(norms <= 0.7)


def test_project_ball_leaves_rows_inside_unchanged_and_refuses_nan():
    X = np.array([[0.1, -0.2, 0.3], [3.0, 4.0, 0.0]])
    P = project_ball(X, 1.0)
    assert np.array_equal(P[0], X[0])
    # r·x/||x|| (||x|| = 5 exactly), then pulled 4ε = 8u inside the ball on purpose
    np.testing.assert_allclose(P[1], [0.6, 0.8, 0.0], rtol=gamma(16), atol=0)
    with pytest.raises(ValueError, match="NaN"):
        project_ball(np.array([[np.nan, 1.0]]), 1.0)


def test_robust_norm_scales_by_powers_of_two_exactly():
    X = np.array([[3e300, 4e300], [3e-310, 4e-310], [0.0, 0.0]])
    U, e, norm = robust_norm(X)
    assert np.array_equal(np.ldexp(U, e[:, None]), X)  # exact: X = U·2^e
    assert np.all(np.abs(U) <= 1.0) and e[2] == 0 and norm[2] == 0.0
    # the literals 3e-310, 4e-310, 5e-310 are subnormal: each off by up to 2⁻¹⁰⁷⁵, 1e-14 of them
    np.testing.assert_allclose(np.ldexp(norm[:2], e[:2]) / np.array([5e300, 5e-310]), 1.0,
                               rtol=gamma(8) + 3 * 2.0**-1074 / 3e-310, atol=0)


@pytest.mark.parametrize("seed", range(4))
def test_trust_region_max_is_an_upper_bound_attained_by_its_maximiser(seed):
    rng = _rng(2, seed)
    g = rng.standard_normal((3, 5))
    G = rng.standard_normal((5, 2))
    values, u = trust_region_max(g, G)
    angles = np.linspace(0.0, 2 * np.pi, 20001)
    U = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # the unit circle, where the maximum is
    dense = np.max(np.sum((g[:, None, :] + U @ G.T) ** 2, axis=-1), axis=-1)
    # an upper bound up to its eigendecomposition's rounding (eigh_rtol(d) of ||G||², 4 times over), and
    # the dense evaluation's own (γ_{k+d+4}); a grid of 20 001 angles misses the top by h²/2 of the curvature
    assert np.all(dense <= values * (1 + 4 * eigh_rtol(2) + gamma(12)))
    assert np.all(dense >= values * (1 - 1e-6))  # h = 3e-4: below 1e-7 of the value
    attained = np.sum((g + u @ G.T) ** 2, axis=-1)
    # 200 halvings leave η within ulps; the primal-dual gap η·|1 − ||u||²| is then second order in η's error,
    # amplified by the dual's curvature (η − α_max)⁻²: 1e-9 covers it
    np.testing.assert_allclose(attained, values, rtol=1e-9, atol=0)
    np.testing.assert_allclose(np.linalg.norm(u, axis=-1), 1.0, rtol=gamma(8), atol=0)  # normalised


def test_sign_vectors_cover_each_pair_plus_minus_once():
    S = sign_vectors(5)
    assert S.shape == (16, 5) and np.all(S[:, 0] == 1.0) and set(np.unique(S)) == {-1.0, 1.0}
    rows = {tuple(r) for r in S}
    assert len(rows) == 16 and not any(tuple(-np.array(r)) in rows for r in rows)
    with pytest.raises(ValueError, match=r"2\^\(T-1\)"):
        sign_vectors(MAX_ENUMERATION_T + 1)
