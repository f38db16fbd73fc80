"""The audit of the private covariances: worst-case neighbours, recomputation, empirical bound, a broken variant.

``recompute_covariance`` recomputes both summaries from the definitions (50-digit fits,
exact rational clipping and products), σ from the formulas and the composition of the
budget split; the worst-case pairs attain each sensitivity; the mechanism broken on
purpose (calibrated for added or removed records) is caught by the recomputation and by
the empirical lower bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpfda
from dpfda.maths.rounding import pair_rtol, product_atol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import covariance as cv
from dpfda.trust import audit as au
from dpfda_book.mechanisms import broken

from _spaces import with_grids
from _support import reps

SPACES = [
    (dpfda.LegendreSpace(3), dpfda.uniform_grid(8)),
    (dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), dpfda.uniform_grid(4)),
]
"""The two settings of the tests below that are not over every space."""


def _pair_rtols(mech, n):
    """Relative error bounds of a worst-case pair's μ (mean, second moment) against the sensitivity.

    FTP: the curves are B'u's values rounded (γ_d of |Φ||B'u|), which moves their exact fits by
    ||Φ⁺|| times that; the audit's fits are exact, the mechanism's and the means' round as in
    pair_rtol; the outer products double the fits' relative error. PTF: the curves are ±c,
    so u = ±1 and every product is exact; the means round by n·γ₄ each (the two of a pair),
    the packing's √2, σ's formula and the norms by γ_{K+10}.
    """
    geom = mech.geometry
    if mech.method == "ptf":
        return 2 * n * gamma(4) + gamma(geom.T + 10), 2 * n * gamma(4) + gamma(mech.moment_dim + 10)
    A = geom.Phi.T @ geom.Phi
    u = np.full(geom.dim, 1 / np.sqrt(geom.dim))
    data = gamma(geom.dim) * np.linalg.norm(np.abs(geom.Phi) @ u) / np.sqrt(np.linalg.eigvalsh(A)[0])
    mean = pair_rtol(A, geom.T, n) + data
    return mean, 2 * mean


@pytest.mark.parametrize("space,grid", with_grids("right4").values(), ids=with_grids("right4").keys())
@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_the_worst_pairs_attain_each_sensitivity_and_pass(space, grid, method):
    n = 20
    mech = cv.covariance_mechanism(grid, space, 1.1, 1.0, method=method, n=n)
    rec = au.recompute_covariance(mech, *au.worst_case_covariance_pair(grid, space, 1.1, n, method=method))
    assert rec.passed, rec.problems
    # orthogonal records: the second moment's full sensitivity, the mean's 1/√2 of it
    rtol_m, rtol_c = _pair_rtols(mech, n)
    assert rec.mu_cov_pair == pytest.approx(mech.mu_cov, rel=rtol_c, abs=0)
    assert rec.mu_mean_pair == pytest.approx(mech.mu_mean / math.sqrt(2), rel=rtol_m + gamma(2), abs=0)
    opposite = au.recompute_covariance(
        mech, *au.worst_case_covariance_pair(grid, space, 1.1, n, method=method, angle=math.pi))
    assert opposite.passed and opposite.mu_mean_pair == pytest.approx(mech.mu_mean, rel=rtol_m, abs=0)
    # fits ±f + δ (sin π ≠ 0, the fits' errors): ||ffᵀ − (f − δ)(f − δ)ᵀ|| <= 2B'||δ|| + ||δ||², √2 of them
    assert opposite.mu_cov_pair <= 2 * rtol_c * mech.mu_cov
    assert rec.mu_composed == pytest.approx(mech.mu, rel=gamma(5), abs=0)  # the split's 4 roundings, 1 more


def test_the_joint_worst_pair_of_the_composition():
    """μ_pair² = μ_m²(1 − κ)/2 + μ_c²(1 − κ²) at its maximum κ = −μ_m²/(4μ_c²): below sqrt(μ_m² + μ_c²)."""
    space, grid = SPACES[0]
    mech = cv.covariance_mechanism(grid, space, 1.1, 1.0, method="ftp", n=20)
    angle = au.joint_worst_angle(mech.mu_mean, mech.mu_cov)
    rec = au.recompute_covariance(mech, *au.worst_case_covariance_pair(grid, space, 1.1, 20, angle=angle))
    k = math.cos(angle)
    expected = math.sqrt(mech.mu_mean**2 * (1 - k) / 2 + mech.mu_cov**2 * (1 - k * k))
    # the pair's two μ (_pair_rtols) and the formula's roundings (cos of the angle: a few ulps)
    rtol = _pair_rtols(mech, 20)[1] + gamma(16)
    assert rec.mu_pair == pytest.approx(expected, rel=rtol, abs=0)
    assert expected == pytest.approx(math.sqrt(25 / 32), rel=gamma(16), abs=0)  # an even split, μ = 1: κ = −1/4
    for other in np.linspace(0.1, math.pi, 25):
        r = au.recompute_covariance(mech, *au.worst_case_covariance_pair(grid, space, 1.1, 20, angle=other))
        assert r.mu_pair <= rec.mu_pair * (1 + 2 * rtol)


@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_the_broken_covariance_is_caught(method):
    space, grid = SPACES[0]
    bad = broken.broken_covariance_add_remove(grid, space, 1.1, 1.0, method=method, n=20)
    pair = au.worst_case_covariance_pair(grid, space, 1.1, 20, method=method)
    rec = au.recompute_covariance(bad, *pair)
    assert not rec.passed and rec.mu_pair > bad.mu
    assert rec.mu_cov_pair == pytest.approx(math.sqrt(2) * bad.mu_cov, rel=_pair_rtols(bad, 20)[1] + gamma(2), abs=0)
    assert any("noise scale" in p for p in rec.problems)


@pytest.mark.slow
def test_the_empirical_audit_bounds_the_good_and_refutes_the_broken():
    space, grid = SPACES[1]
    draws = reps(60000, 30000)
    good = cv.covariance_mechanism(grid, space, 1.1, 1.0, method="ftp", n=20)
    bad = broken.broken_covariance_add_remove(grid, space, 1.1, 1.0, method="ftp", n=20)
    pair = au.worst_case_covariance_pair(grid, space, 1.1, 20, method="ftp")
    res = au.audit_covariance(good, *pair, draws=draws, rng=np.random.default_rng(21))
    assert not res.violation and 0 < res.mu_lower <= res.mu_pair
    caught = au.audit_covariance(bad, *pair, draws=draws, rng=np.random.default_rng(22))
    assert caught.violation, (caught.mu_lower, caught.mu_pair)


def test_the_audit_summaries_are_computed_from_the_definitions():
    """FTP: noiseless curves inside the ball are their own fits; PTF: exact rational moments."""
    space, grid = SPACES[0]
    rng = np.random.default_rng(23)
    theta = rng.standard_normal((6, 3)) * 0.2
    X = space.evaluate(theta, grid)
    mech = cv.covariance_mechanism(grid, space, 1.1, 1.0, method="ftp")
    mean, moment = au.audit_covariance_summary(mech, X)
    # X is Φθ rounded (product_atol), whose exact fit is θ moved by ||Φ⁺|| times that; the means round (γ₇)
    geom = mech.geometry
    delta = np.linalg.norm(product_atol(theta, geom.Phi.T), axis=1).max() / np.sqrt(
        np.linalg.eigvalsh(geom.Phi.T @ geom.Phi)[0])
    np.testing.assert_allclose(mean, theta.mean(axis=0), rtol=0, atol=delta + gamma(7) * np.abs(theta).max())
    direct = np.mean([cv.pack_symmetric(np.outer(t, t)) for t in theta], axis=0)
    big = np.abs(theta).max()
    moment_atol = np.sqrt(2) * ((2 * big + delta) * delta + gamma(10) * big**2)  # θθᵀ moved by δ, rounded
    np.testing.assert_allclose(moment, direct, rtol=0, atol=moment_atol)
    ptf = cv.covariance_mechanism(grid, space, 1.1, 1.0, method="ptf")
    X2 = np.array([[3.0] * 8, [-0.25] * 8])
    _, moment2 = au.audit_covariance_summary(ptf, X2)
    u = np.clip(X2, -ptf.clip, ptf.clip) / ptf.clip
    # the audit's exact mean rounded once against u's division, the product, fl(√2)·, the mean (5 roundings)
    np.testing.assert_allclose(moment2, np.mean([cv.pack_symmetric(np.outer(v, v)) for v in u], axis=0),
                               rtol=gamma(6), atol=0)
    with pytest.raises(ValueError, match="neighbouring"):
        au.recompute_covariance(mech, X, X[::-1] + 1.0)
