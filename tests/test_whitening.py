"""Tests of dpfda_book.mechanisms.whitening: the noise metric is formed with no pseudo-inverse
(exact for a diagonal factor, QR with a condition check otherwise), noise shapes are the
stated factors, and extents are cached on everything they depend on."""

from __future__ import annotations

import numpy as np
import pytest

from dpfda.maths.rounding import psd_root_rtol, solve_rtol
from dpfda.maths.summation import gamma
from dpfda_book.mechanisms.designs import Design
from dpfda_book.mechanisms.whitening import MAX_ROUNDING, Whitening, noise_factor, scaled

from _spaces import on_grid

GRID6 = np.linspace(0.0, 1.0, 6)
SPACES = on_grid(GRID6)  # every space of the registry (tests/_spaces.py) this grid takes


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([20261201, *key]))


def test_a_diagonal_factor_is_inverted_exactly_however_thin():
    ell = np.array([1.0, 1e-16, 3.0, 2.0**-1000])
    W = Whitening(np.diag(ell), "test")
    assert W.diagonal and W.kappa == 1.0 and W.rounding == 0.0
    assert np.array_equal(np.diag(W.M), 1.0 / ell)  # the thin directions are kept
    v = np.array([[1.0, 1e-16, 3.0, 2.0**-1000]])
    np.testing.assert_allclose(W.apply(v), [[1.0, 1.0, 1.0, 1.0]], rtol=gamma(2), atol=0)  # v·fl(1/ℓ)


def test_a_general_factor_is_solved_and_its_rounding_bounded():
    rng = _rng(3)
    L = np.linalg.cholesky(np.eye(5) + 0.5 * np.ones((5, 5)))
    W = Whitening(L, "test")
    assert not W.diagonal and 1.0 <= W.kappa < 10 and 0 < W.rounding <= MAX_ROUNDING
    v = rng.standard_normal((4, 5)) * 1e200
    # two solves with L (QR, LU): solve_rtol of LᵀL each, relative to each row's norm (taken on
    # the rows divided by their largest entry: the squares of 1e200 overflow, and an atol of inf
    # would pass anything)
    ref = np.linalg.solve(L, v.T).T
    top = np.max(np.abs(ref))
    atol = 2 * solve_rtol(L.T @ L, 2 * L.shape[0]) * top * np.linalg.norm(ref / top, axis=1).max()
    assert np.isfinite(atol) and atol < 1e-12 * top
    np.testing.assert_allclose(W.apply(v), ref, rtol=0, atol=atol)
    with pytest.raises(AssertionError):  # and it can fail: the result off by a relative 1e-10
        np.testing.assert_allclose(W.apply(v) * (1 + 1e-10), ref, rtol=0, atol=atol)


def test_an_ill_conditioned_factor_is_refused_by_name():
    T = GRID6.size
    Q, _ = np.linalg.qr(_rng(7).standard_normal((T, T)))
    S = Q @ np.diag([1.0, 1.0, 1.0, 1.0, 1.0, 1e-30]) @ Q.T  # a thin direction off the axes
    S = (S + S.T) / 2
    with pytest.raises(ValueError, match="too ill-conditioned"):
        Whitening(Q @ np.diag([1.0, 1.0, 1.0, 1.0, 1.0, 1e-15]), "given as a matrix")
    with pytest.raises(ValueError, match="noise"):
        Design(GRID6, SPACES["legendre"], 1.0, region="box", noise=S + 1e-31 * np.eye(T))


def test_scaled_is_exact():
    v = np.array([3e-300, -7e-301, 0.0])
    vs, e = scaled(v)
    assert np.array_equal(np.ldexp(vs, e), v) and 0.5 <= np.max(np.abs(vs)) < 1.0
    assert scaled(np.zeros(3))[1] == 0


@pytest.mark.parametrize("lam", [0.25, 0.5])
def test_the_matched_mix_noise_shrinks_ftps_correlations(lam):
    geom = SPACES["gaussian"].at(GRID6)
    L = noise_factor(geom, "matched", "mix", lam)
    K = geom.Phi @ geom.Phi.T
    # L from Σ_λ by a factorisation (psd_root_rtol of ||Σ||), K = ΦΦᵀ and LLᵀ formed (2T·γ_{T+1} of it)
    S = (1 - lam) * np.diag(np.diag(K)) + lam * K
    atol = (psd_root_rtol(GRID6.size) + 2 * GRID6.size * gamma(GRID6.size + 1)) * np.linalg.norm(S, 2)
    np.testing.assert_allclose(L @ L.T, S, rtol=0, atol=atol)
    assert np.array_equal(noise_factor(geom, "diagonal", "box", None), np.diag(geom.eval_norm))
    with pytest.raises(ValueError, match="rank"):
        noise_factor(SPACES["legendre"].at(GRID6), "ellipsoid", "box", None)
    with pytest.raises(ValueError, match="positive definite"):
        noise_factor(geom, -np.eye(GRID6.size), "box", None)


def test_extents_are_cached_on_the_radius_itself():
    space = SPACES["legendre"]
    small = Design(GRID6, space, 1e-3, region="mix", lam=0.5).extent
    one = Design(GRID6, space, 1.0, region="mix", lam=0.5).extent
    again = Design(GRID6, space, 1.0, region="mix", lam=0.5).extent
    assert one == again and small != one
    # each extent within its cover (10⁻¹⁰ + the whitening's rounding) of the exact one, which scales with B'
    cover = 1e-10 + Design(GRID6, space, 1.0, region="mix", lam=0.5).whitening.rounding
    np.testing.assert_allclose(small * 1e3, one, rtol=2 * cover + gamma(2), atol=0)
