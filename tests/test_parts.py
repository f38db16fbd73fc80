"""The parts of a mechanism (dpfda.mechanisms.parts): maps, calibrations, post-processings.

* Each part computes what the pipelines' stage functions compute, bit for bit.
* The mechanisms' σ, sensitivity, summaries and moved flags are those of their parts.
* Every part is also importable from dpfda.mechanisms.ftp_ptf, and a pickle that names
  the parts and the type there loads.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import dpfda
from dpfda.mechanisms import ftp_ptf, mechanism_type, parts
from dpfda.mechanisms.ftp_ptf import ftp_mechanism, ptf_mechanism
from dpfda.mechanisms.parts import (
    ClipToBox,
    FitInBall,
    FTPCalibration,
    GridThenFit,
    Identity,
    PTFCalibration,
    WeightedFit,
)
from dpfda.mechanisms.pipelines import (
    fitter,
    ftp_fit_mean,
    ftp_rounding_excess,
    ftp_sigma,
    ptf_clipped_mean,
    ptf_default_clip,
    ptf_rounding_excess,
    ptf_sigmas,
)
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
# Each part is its stage function
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("exact", [True, False])
def test_the_per_curve_maps_are_the_stage_functions(exact):
    geom = SPACES["legendre"].at(GRID)
    X = _data((2, 30, 9), 4)
    centre, moved = FitInBall(geom, RADIUS)(X, exact=exact)
    ref, active = ftp_fit_mean(X, geom, RADIUS, exact=exact)
    _same(centre, ref)
    _same(moved, active)
    _same(FitInBall(geom, RADIUS).mean(X, exact=exact), ref)
    clip = np.full(9, 4.0)
    centre, moved = ClipToBox(clip)(X, exact=exact)
    _same(centre, ptf_clipped_mean(X, clip, exact=exact))
    _same(ClipToBox(clip).mean(X, exact=exact), centre)
    _same(moved, np.any(np.abs(X) > clip, axis=-1))
    assert moved.any() and not moved.all()


@pytest.mark.parametrize("n", [1, 100, 3_000_000])
def test_the_calibrations_are_the_pipelines_sigma(n):
    geom = SPACES["gaussian"].at(GRID)
    ftp_cal = FTPCalibration(geom, RADIUS)
    eps = ftp_rounding_excess(n, geom.dim, RADIUS)
    assert ftp_cal.excess(n) == eps and ftp_cal.sigma(n, MU) == ftp_sigma(n, RADIUS, MU, rounding=eps)
    assert FTPCalibration(geom, RADIUS, factor=0.9).sigma(n, MU) == 0.9 * ftp_cal.sigma(n, MU)
    c = ptf_default_clip(geom, RADIUS)
    ptf_cal = PTFCalibration(c)
    _same(ptf_cal.sigma(n, MU), ptf_sigmas(n, c, MU, rounding=ptf_rounding_excess(n, c)))
    _same(ptf_cal.sensitivity(n), 2 * c / n)
    # x̄_j/c_j adds one rounding, u = 2⁻⁵³ of each mean, n·u of the sensitivity 2/n
    assert ptf_cal.secure_excess(n) == ptf_rounding_excess(n, c) + n * 2.0**-53


def test_the_post_processings_are_the_fits():
    geom = SPACES["gaussian"].at(GRID)
    w = np.linspace(0.5, 2.0, 9)
    noisy = _data((3, 9), 5)
    coef, active, grid = Identity()(noisy)
    assert coef is noisy and active is None and grid is None
    solver = fitter(geom, w)
    fit = solver.solve(noisy, RADIUS)
    coef, active, grid = WeightedFit(geom, RADIUS, w)(noisy)
    _same(coef, fit.coef)
    _same(active, fit.active)
    assert grid is noisy
    coef, active, _ = WeightedFit(geom, RADIUS, w, constrained=False)(noisy)
    _same(coef, solver.unconstrained(noisy))
    assert active is None
    theta = _data((3, geom.dim), 6)
    then = GridThenFit(WeightedFit(geom, RADIUS, w))
    coef, active, grid = then(theta)
    _same(grid, theta @ geom.Phi.T)
    _same(coef, solver.solve(theta @ geom.Phi.T, RADIUS).coef)
    assert then.grid_factor is geom.Phi and then.weights is w


# ---------------------------------------------------------------------------
# Through the mechanisms
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 100, 3_000_000])
def test_calibration_is_the_pipelines_calibration(n):
    space = SPACES["gaussian"]
    geom = space.at(GRID)
    f = ftp_mechanism(GRID, space, RADIUS, MU)
    p = ptf_mechanism(GRID, space, RADIUS, MU)
    c = ptf_default_clip(geom, RADIUS)
    assert f.sigma(n) == ftp_sigma(n, RADIUS, MU, rounding=ftp_rounding_excess(n, geom.dim, RADIUS))
    _same(p.sigma(n), ptf_sigmas(n, c, MU, rounding=ptf_rounding_excess(n, c)))
    assert f.sensitivity(n) == 2 * RADIUS / n and f.norm == "Cameron–Martin"
    _same(p.sensitivity(n), 2 * c / n)
    # the privacy map: μ for every n it accepts, and the (ε, δ) of that μ
    assert f.privacy(n) == MU == p.privacy(n)
    assert f.epsilon(n, 1e-6) == dpfda.epsilon_from_mu(MU, 1e-6)


def test_summaries_and_moved_flags():
    space = SPACES["legendre"]
    geom = space.at(GRID)
    X = _data((2, 30, 9), 3)
    f, p = ftp_mechanism(GRID, space, RADIUS, MU), ptf_mechanism(GRID, space, RADIUS, MU)
    centre, moved = f.summarize(X)
    ref, active = ftp_fit_mean(X, geom, RADIUS)
    _same(centre, ref)
    _same(moved, active)
    fast, _ = f.summarize(X, exact=False)
    _same(fast, ftp_fit_mean(X, geom, RADIUS, exact=False)[0])
    c = ptf_default_clip(geom, RADIUS)
    centre, moved = p.summarize(X, exact=False)
    _same(centre, ptf_clipped_mean(X, c, exact=False))
    _same(moved, np.any(np.abs(X) > c, axis=-1))
    assert moved.shape == (2, 30) and moved.any() and not moved.all()
    rel = p.release(X, np.random.default_rng(0))
    _same(p.coordinates(rel), rel.noisy_means)
    _same(f.coordinates(f.release(X, np.random.default_rng(0))), ftp_mechanism(
        GRID, space, RADIUS, MU).release(X, np.random.default_rng(0)).coef)


# ---------------------------------------------------------------------------
# One public home, pickles that name it
# ---------------------------------------------------------------------------


def test_the_parts_are_importable_from_the_ftp_ptf_module():
    assert set(parts.__all__) <= set(ftp_ptf.__all__)
    for name in parts.__all__:
        assert getattr(ftp_ptf, name) is getattr(parts, name), name
    assert ftp_ptf.Mechanism is mechanism_type.Mechanism is dpfda.Mechanism


def _named_in_ftp_ptf(blob: bytes) -> bytes:
    """A protocol-0 pickle with every class named in dpfda.mechanisms.ftp_ptf, which re-exports them."""
    for home in (b"dpfda.mechanisms.parts\n", b"dpfda.mechanisms.mechanism_type\n"):
        blob = blob.replace(home, b"dpfda.mechanisms.ftp_ptf\n")
    return blob


@pytest.mark.parametrize("which", ["ftp", "ptf", "design"])
def test_a_pickle_naming_the_ftp_ptf_module_loads(which):
    space = SPACES["gaussian"]
    mech = {"ftp": lambda: ftp_mechanism(GRID, space, RADIUS, MU),
            "ptf": lambda: ptf_mechanism(GRID, space, RADIUS, MU),
            "design": lambda: Design(GRID, space, RADIUS, region="ellipsoid").mechanism(40, MU)}[which]()
    blob = pickle.dumps(mech, protocol=0)
    old = _named_in_ftp_ptf(blob)
    assert b"dpfda.mechanisms.parts" in blob and b"dpfda.mechanisms.parts" not in old
    back = pickle.loads(old)
    assert type(back) is type(mech) and type(back.post) is type(mech.post)
    X = _data((40, 9), 7)
    _same(back.release(X, np.random.default_rng(3)).coef, mech.release(X, np.random.default_rng(3)).coef)
