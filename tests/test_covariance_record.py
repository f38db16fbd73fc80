"""The record of a private covariance: the whole budget, public parameters, the data's units."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import dpfda
from dpfda.maths.rounding import eigh_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import covariance as cv
from dpfda.practice.covariance_record import covariance_record
from dpfda.practice.realdata import Domain, PublicFrame


def _frame():
    days = np.arange(1, 366, 7.0)
    return PublicFrame(dpfda.FourierSpace(5), days, Domain(0.5, 365.5, name="day"), lower=-40.0, upper=30.0)


@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_the_record_states_the_whole_budget_and_maps_back(method):
    frame = _frame()
    rng = np.random.default_rng(31)
    X = -5 + 10 * np.sin(2 * np.pi * (frame.points[None, :] - 20 * rng.random((40, 1))) / 365.0)
    extra = {} if method == "ftp" else {"clip": frame.clip, "weights": frame.weights}
    mech = cv.covariance_mechanism(frame.grid, frame.space, frame.radius, 2.0, method=method,
                                   mean_share=0.25, **extra)
    rel = mech.release(frame.to_unit(X), rng)
    at = np.array([10.0, 100.0, 200.0, 300.0])
    rec = json.loads(json.dumps(covariance_record(rel, at, frame=frame, components=2)))
    # μ·sqrt(share), μ·sqrt(1 − share) and hypot: 5 roundings; 2·sqrt(0.25) = 1 exactly
    assert rec["mu"] == 2.0 and math.hypot(rec["mu_mean"], rec["mu_cov"]) == pytest.approx(2.0, rel=gamma(5), abs=0)
    assert rec["mu_mean"] == 1.0 and rec["epsilon_delta"][0]["delta"] == 1e-5
    eps = dpfda.epsilon_from_mu(2.0, 1e-5)
    assert rec["epsilon_delta"][0]["epsilon"] == float(eps)  # the same scalar computation, element by element
    # the record's own calls, the same arithmetic (JSON keeps every bit)
    cov = np.array(rec["covariance"]["values"])
    unit = frame.domain.to_unit(at)
    np.testing.assert_array_equal(cov, frame.scale**2 * rel.covariance(unit, unit))
    np.testing.assert_array_equal(rec["mean"]["values"], frame.values(rel.mean, at))
    lam, _ = rel.components(2)
    assert rec["components"][0]["eigenvalue"] == frame.scale**2 * 365.0 * lam[0]
    # the eigenfunction in days has ∫ψ² = 1 over the year: trapezoid on a fine periodic grid
    x = np.arange(0.5, 365.5, 0.25)
    rec2 = covariance_record(rel, x, frame=frame, components=1)
    psi = np.array(rec2["components"][0]["values"])
    # trapezoid exact for these trigonometric polynomials: the eigenvector's norm (eigh_rtol, twice),
    # ψ's values in days (the basis, the scaling: γ_{d+8}, twice) and the sum of 1460 squares
    rtol = 2 * eigh_rtol(5) + 2 * gamma(5 + 8) + gamma(x.size + 2)
    assert np.sum(psi**2) * 0.25 == pytest.approx(1.0, rel=rtol, abs=0)
    assert rec["n"] == 40 and rec["method"] == method and (rec["clip"] is None) == (method == "ftp")


def test_the_record_refuses_what_it_cannot_state():
    grid, space = dpfda.uniform_grid(6), dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))
    mech = cv.covariance_mechanism(grid, space, 1.0, 1.0)
    X = np.random.default_rng(32).uniform(-0.3, 0.3, (20, 6))
    m, c = mech.summary(X)
    many = mech.privatize(m, c, np.zeros((3, mech.mean.noise_dim)), np.zeros((3, mech.moment_dim)), 20)
    with pytest.raises(ValueError, match="one release"):
        covariance_record(many, [0.5])
    one = mech.release(X, np.random.default_rng(33))
    with pytest.raises(ValueError, match="components"):
        covariance_record(one, [0.5], components=7)
    with pytest.raises(TypeError, match="CovarianceRelease"):
        covariance_record(one.mean, [0.5])  # type: ignore[arg-type]
    rec = covariance_record(one, [0.0, 0.5, 1.0], components=2)
    assert "grid" in rec["components_note"] and rec["space"]["kind"] == "gaussian-kernel"
