"""The Mechanism type (dpfda.mechanisms.mechanism_type, dpfda.mechanisms.ftp_ptf): every constructor, one contract.

* ``release`` of ``ftp``/``ptf``/``Design.mechanism(n, mu).release`` is bit for bit the
  composition of the stage functions (summary, the normals drawn right after it
  from the same generator, σ, the fit) — what they released before the type
  existed (the releases of e4d82aa were compared hash by hash when it was written).
* ``privatize(summary, normals, n)`` with the normals ``release`` would draw gives
  the same release; σ, the sensitivity and the privacy map agree with the
  pipelines' calibration functions.
* A mechanism is immutable, holds no data and no generator, and pickles.
* Bad input gets a named error.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

import dpfda
from dpfda.maths.summation import gamma
from dpfda.mechanisms.ftp_ptf import Mechanism, ftp_mechanism, ptf_mechanism
from dpfda.mechanisms.pipelines import (
    add_noise,
    ftp_fit_mean,
    ftp_rounding_excess,
    ftp_sigma,
    ptf_clipped_mean,
    ptf_default_clip,
    ptf_default_weights,
    ptf_fit,
    ptf_rounding_excess,
    ptf_sigmas,
)
from dpfda.trust import audit as A
from dpfda_book.mechanisms import broken
from dpfda_book.mechanisms.designs import Design

from _spaces import on_grid

GRID = (np.arange(9) + 0.5) / 9
SPACES = on_grid(GRID)  # every space of the registry (tests/_spaces.py) this grid takes
RADIUS, MU = 1.3, 0.7


def _data(shape, seed=0, scale=2.0):
    return scale * np.random.default_rng(seed).standard_normal(shape)


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ---------------------------------------------------------------------------
# Bit for bit the stage functions
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("shape", [(40, 9), (3, 40, 9)])
def test_ftp_release_is_the_stage_functions_bit_for_bit(name, shape):
    space, X = SPACES[name], _data(shape)
    geom = space.at(GRID)
    n = shape[-2]
    rel = dpfda.ftp(X, GRID, space, RADIUS, MU, np.random.default_rng(5))
    mean_coef, _ = ftp_fit_mean(X, geom, RADIUS)
    sigma = ftp_sigma(n, RADIUS, MU, rounding=ftp_rounding_excess(n, geom.dim, RADIUS))
    rng = np.random.default_rng(5)
    _same(rel.coef, add_noise(mean_coef, sigma, rng.standard_normal(mean_coef.shape)))
    assert rel.noise_scale == sigma and rel.method == "ftp" and rel.n == n
    # the mechanism's own release is the same, and so is privatize with those normals
    mech = ftp_mechanism(GRID, space, RADIUS, MU)
    _same(mech.release(X, np.random.default_rng(5)).coef, rel.coef)
    normals = np.random.default_rng(5).standard_normal(mean_coef.shape)
    _same(mech.privatize(mech.summary(X), normals, n).coef, rel.coef)
    assert mech.sigma(n) == sigma and mech.noise_dim == geom.dim


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("shape", [(40, 9), (3, 40, 9)])
@pytest.mark.parametrize("kw", [{}, {"clip": 1.1, "weights": 2.0}])
def test_ptf_release_is_the_stage_functions_bit_for_bit(name, shape, kw):
    space, X = SPACES[name], _data(shape, 1)
    geom = space.at(GRID)
    n = shape[-2]
    rel = dpfda.ptf(X, GRID, space, RADIUS, MU, np.random.default_rng(6), **kw)
    c = ptf_default_clip(geom, RADIUS) if "clip" not in kw else np.full(geom.T, kw["clip"])
    w = ptf_default_weights(geom) if "weights" not in kw else np.full(geom.T, kw["weights"])
    xbar = ptf_clipped_mean(X, c)
    sig = ptf_sigmas(n, c, MU, rounding=ptf_rounding_excess(n, c))
    xtilde = add_noise(xbar, sig, np.random.default_rng(6).standard_normal(xbar.shape))
    fit = ptf_fit(xtilde, geom, RADIUS, w)
    _same(rel.noisy_means, xtilde)
    _same(rel.coef, fit.coef)
    _same(rel.active, fit.active)
    _same(rel.noise_scale, sig)
    _same(rel.clip, c)
    _same(rel.weights, w)
    mech = ptf_mechanism(GRID, space, RADIUS, MU, **kw)
    _same(mech.sigma(n), sig)
    normals = np.random.default_rng(6).standard_normal(xbar.shape)
    via = mech.privatize(mech.summary(X), normals, n)
    _same(via.coef, rel.coef)
    _same(via.noisy_means, rel.noisy_means)


# ---------------------------------------------------------------------------
# The privacy map
# ---------------------------------------------------------------------------


def test_privacy_map_refuses_where_no_sigma_keeps_the_guarantee():
    f = ftp_mechanism(GRID, SPACES["legendre"], RADIUS, 1e12)
    with pytest.raises(ValueError, match="2\\^-40"):
        f.privacy(10**6)
    with pytest.raises(ValueError, match="2\\^-40"):
        f.release(_data((10**6, 9)), np.random.default_rng(0))


# ---------------------------------------------------------------------------
# Every constructor keeps one contract
# ---------------------------------------------------------------------------


def _thin_noise():
    S = np.eye(6)
    S[2, 2] = 1e-12
    return S


def _constructors():
    leg, gau = SPACES["legendre"], SPACES["gaussian"]
    grid6 = (np.arange(6) + 0.5) / 6
    return {
        "ftp": lambda: ftp_mechanism(GRID, gau, RADIUS, MU),
        "ptf": lambda: ptf_mechanism(GRID, gau, RADIUS, MU, clip=1.5),
        "audit.ftp": lambda: A.ftp_mechanism(GRID, leg, RADIUS, MU, n=40),
        "audit.ptf": lambda: A.ptf_mechanism(GRID, leg, RADIUS, MU, n=40),
        "design box": lambda: Design(GRID, gau, RADIUS, region="box").mechanism(40, MU),
        "design ball": lambda: Design(GRID, leg, RADIUS, region="ball").mechanism(40, MU),
        "design ellipsoid": lambda: Design(GRID, leg, RADIUS, region="ellipsoid").mechanism(40, MU),
        "design mix": lambda: Design(GRID, gau, RADIUS, region="mix", lam=0.3, fit="none").mechanism(40, MU),
        "no sqrt T": lambda: broken.broken_ptf_no_sqrt_T(GRID, gau, RADIUS, MU, n=40),
        "grid norm": lambda: broken.broken_ftp_grid_norm(GRID, gau, RADIUS, MU, n=40, norm="sup"),
        "no radius": lambda: broken.broken_ftp_no_radius(GRID, leg, RADIUS, MU, n=40),
        "cancellation": lambda: broken.broken_ftp_cancellation(GRID, leg, RADIUS, MU, n=40),
        "pinv": lambda: broken.broken_design_pinv(grid6, leg, RADIUS, MU, n=40, noise=_thin_noise())[0],
    }


@pytest.mark.parametrize("which", list(_constructors()))
def test_every_constructor_release_privatize_sigma_agree(which):
    mech = _constructors()[which]()
    assert isinstance(mech, Mechanism)
    T = mech.geometry.T
    X = _data((2, 40, T), 4)
    n = 40
    rel = mech.release(X, np.random.default_rng(11))
    centre, moved = mech.summarize(X)
    assert moved.shape[:-1] == (2,)
    normals = np.random.default_rng(11).standard_normal((2, mech.noise_dim))
    via = mech.privatize(centre, normals, n)
    _same(via.coef, rel.coef)
    _same(mech.coordinates(via), mech.coordinates(rel))
    _same(rel.noise_scale, mech.sigma(n))
    assert rel.mu == mech.mu == mech.privacy(n) and rel.n == n and rel.method == mech.method
    if mech.noise_factor is not None:
        _same(rel.noise_factor, mech.noise_factor)
    # the noisy coordinates are the summary plus σ·L·normals
    L = np.eye(mech.noise_dim) if mech.noise_factor is None else mech.noise_factor
    # the same sum by two routes: each to γ_{d+2} of |centre| + σ|normals||L|ᵀ (the product's d terms,
    # the scaling, the sum)
    sig = np.asarray(mech.sigma(n))
    atol = 2 * gamma(mech.noise_dim + 2) * (np.abs(centre) + sig * (np.abs(normals) @ np.abs(L).T))
    assert np.all(np.abs(mech.coordinates(rel) - (centre + sig * (normals @ L.T))) <= atol)


@pytest.mark.parametrize("which", list(_constructors()))
def test_every_mechanism_is_frozen_and_pickles_without_data(which):
    mech = _constructors()[which]()
    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.mu = 2 * mech.mu  # type: ignore[misc]
    blob = pickle.dumps(mech)
    back = pickle.loads(blob)
    assert back.mu == mech.mu and back.name == mech.name and back.n == mech.n
    T = mech.geometry.T
    X = _data((40, T), 5)
    _same(back.release(X, np.random.default_rng(2)).coef, mech.release(X, np.random.default_rng(2)).coef)
    # no data and no generator anywhere inside it
    X_mark = np.full((40, T), 0.123456789)
    mech.release(X_mark, np.random.default_rng(3))
    assert np.float64(0.123456789).tobytes() not in pickle.dumps(mech)
    assert b"Generator" not in blob and b"PCG64" not in blob and b"SeedSequence" not in blob


# ---------------------------------------------------------------------------
# Named errors
# ---------------------------------------------------------------------------


def test_bad_input_raises_named_errors():
    space = SPACES["legendre"]
    with pytest.raises(TypeError, match="space"):
        ftp_mechanism(GRID, "legendre", RADIUS, MU)
    with pytest.raises(ValueError, match="radius"):
        ftp_mechanism(GRID, space, -1.0, MU)
    with pytest.raises(ValueError, match="mu"):
        ptf_mechanism(GRID, space, RADIUS, 0.0)
    with pytest.raises(ValueError, match="clip"):
        ptf_mechanism(GRID, space, RADIUS, MU, clip=[1.0, 2.0])
    with pytest.raises(TypeError, match="secure"):
        ftp_mechanism(GRID, space, RADIUS, MU, secure="yes")
    with pytest.raises(ValueError, match="n"):
        ftp_mechanism(GRID, space, RADIUS, MU, n=0)
    mech = ftp_mechanism(GRID, space, RADIUS, MU)
    X = _data((20, 9))
    with pytest.raises(TypeError, match="rng"):
        mech.release(X, None)
    with pytest.raises(TypeError, match="rng"):
        mech.release(X, 3)
    with pytest.raises(ValueError, match="grid has 9 points"):
        mech.release(_data((20, 8)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="noise_dim"):
        mech.privatize(mech.summary(X), np.zeros(9), 20)
    fixed = ftp_mechanism(GRID, space, RADIUS, MU, n=20)
    with pytest.raises(ValueError, match="calibrated for n=20"):
        fixed.release(_data((21, 9)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="calibrated for n=20"):
        fixed.privatize(fixed.summary(X), np.zeros(4), 21)


def test_privatize_refuses_a_summary_of_the_wrong_coordinates():
    mech = ptf_mechanism(GRID, SPACES["legendre"], RADIUS, MU)
    with pytest.raises(ValueError, match="summary must have 9 entries"):
        mech.privatize(np.zeros(4), np.zeros(9), 20)


def test_design_refuses_an_unknown_keyword():
    with pytest.raises(TypeError, match="unexpected keyword argument 'set'"):
        Design(GRID, SPACES["legendre"], RADIUS, set="box")
    with pytest.raises(TypeError, match="unexpected keyword argument 'sett'"):
        Design(GRID, SPACES["legendre"], RADIUS, sett="box")
    assert Design(GRID, SPACES["legendre"], RADIUS, region="box").region == "box"


@pytest.mark.parametrize("kw", [dict(region="box"), dict(region="ball"), dict(region="mix", lam=0.4),
                                dict(region="ellipsoid", noise="ellipsoid", fit="none"),
                                dict(region="ellipsoid", noise="isotropic")])
def test_design_release_is_its_parts_bit_for_bit(kw):
    space = SPACES["gaussian"]
    X = _data((3, 40, 9), 7)
    des = Design(GRID, space, RADIUS, **kw)
    mech = des.mechanism(None, MU)
    rel = mech.release(X, np.random.default_rng(8))
    summary, sigma = des.summary(X), des.sigma(40, MU)
    Z = np.random.default_rng(8).standard_normal((3, mech.noise_dim))
    if des.L.shape[1] == des.geometry.dim and mech.noise_factor is None:  # FTP's shape: noise on θ̄
        noisy = summary + sigma * Z
        xtilde = noisy @ des.geometry.Phi.T
    else:
        noisy = summary + sigma * (Z @ des.L.T)
        xtilde = noisy
    _same(rel.noisy_coordinates, noisy)
    _same(rel.noisy_means, xtilde)
    solver = dpfda.mechanisms.pipelines.fitter(des.geometry, des.weights)
    _same(rel.coef, solver.solve(xtilde, RADIUS).coef if des.fit == "ball" else solver.unconstrained(xtilde))
    assert rel.noise_scale == sigma and rel.noise_factor is des.L
    _same(des.mechanism(40, MU).privatize(summary, Z, 40).coef, rel.coef)
