"""dpfda.trust.draws: the audit's repeated releases of one dataset.

They must be the releases the mechanism itself makes (one summary, then a chunk's normals in
one draw from the caller's generator), and the same as the book's simulation loop draws for one
mechanism from one stream; the chunking must not change a number.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpfda
from dpfda.trust.draws import batches, repeat_mechanism, repeated
from dpfda_book.simulation.engine import Arm, simulate_mechanisms

GRID = dpfda.uniform_grid(7)
SPACES = [dpfda.LegendreSpace(3), dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))]


def _data(n=9, seed=0):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, (n, GRID.size))


def _score(rel, parts, c):
    return {"coef": rel.coef.reshape(c, -1), "noisy": rel.noisy_coordinates.reshape(c, -1)}


def test_batches_cover_the_repetitions_in_order():
    assert list(batches(5, 2)) == [(0, 2), (2, 4), (4, 5)]
    assert list(batches(4, 4)) == [(0, 4)]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("make", [dpfda.ftp_mechanism, dpfda.ptf_mechanism], ids=["ftp", "ptf"])
def test_the_draws_are_the_mechanisms_own_releases(make, space):
    """Bit for bit what ``release`` gives on copies of the data with the same generator."""
    mech = make(GRID, space, 1.0, 1.0)
    X = _data()
    out = repeat_mechanism(mech, X, 10, np.random.default_rng(3), _score, chunk=4)
    rng = np.random.default_rng(3)
    direct = [mech.release(np.broadcast_to(X, (b - a,) + X.shape), rng) for a, b in batches(10, 4)]
    np.testing.assert_array_equal(out["coef"], np.concatenate([r.coef for r in direct]))
    via = [r for r in repeated(mech.release, X, 10, 4, np.random.default_rng(3))]
    np.testing.assert_array_equal(out["noisy"], np.concatenate([r.noisy_coordinates for r in via]))


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_the_draws_are_the_simulation_loops_for_one_mechanism(space):
    """The book's loop (one arm, one generator for all chunks, noiseless data) gives the same numbers."""
    mech = dpfda.ptf_mechanism(GRID, space, 1.0, 1.0)
    X = _data(seed=1)
    out = repeat_mechanism(mech, X, 7, np.random.default_rng(5), _score, chunk=3)
    centre, moved = mech.summarize(X)
    parts = {"centre": centre, "moved": moved}
    rng = np.random.default_rng(5)
    arm = Arm("m", mech, "centre", 0, _score)
    loop = [simulate_mechanisms([arm], rng, b - a, (mech.noise_dim,), n=X.shape[0], F=X, sigma0=0.0,
                                summarize=lambda Y: parts, noiseless=lambda: parts)["m"] for a, b in batches(7, 3)]
    np.testing.assert_array_equal(out["coef"], np.concatenate([p["coef"] for p in loop]))


def test_a_batch_of_datasets_is_released_once_each():
    mech = dpfda.ftp_mechanism(GRID, SPACES[0], 1.0, 1.0)
    X = np.stack([_data(seed=s) for s in range(3)])
    out = repeat_mechanism(mech, X, 3, np.random.default_rng(2), _score, chunk=1)
    rel = mech.release(X, np.random.default_rng(2))
    np.testing.assert_array_equal(out["coef"], rel.coef)
