"""Tests of dpfda_book.mechanisms.broken: every mechanism broken on purpose is caught by the audit.

Each constructor fails its guarantee in one known way (a missing √T, a grid norm, no radius,
a cancelling mean, a pseudo-inverse, rank-deficient noise on the grid); the audit's μ lower
bound or its recomputation exceeds μ, while the correct mechanism beside it passes.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_audit import GRID, MU, PTF_PAIR_RTOL, RADIUS, SPACES, N, _pair_rtol  # the audit's neighbours

import dpfda
from dpfda.maths.rounding import eigh_rtol, fit_rtol, pair_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.pipelines import fitter
from dpfda.trust import audit as A
from dpfda_book.mechanisms import broken as B
from dpfda_book.mechanisms.designs import Design

from _support import cancelling_mean_rtol


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([20260601, *key]))


def _thin_noise(T=6, j=2, var=1e-32):
    S = np.eye(T)
    S[j, j] = var
    return S


def test_the_librarys_audit_holds_none_of_them():
    """The broken mechanisms are the book's (dpfda_book); the audit of dpfda checks any Mechanism."""
    assert B.__all__ and not [name for name in B.__all__ if hasattr(A, name)]


# ---------------------------------------------------------------------------
# Fail: mechanisms broken on purpose are caught (μ_lb > μ)
# ---------------------------------------------------------------------------

FAIL_DRAWS = 20_000


@pytest.mark.parametrize("name", list(SPACES))
def test_ptf_without_sqrt_T_is_caught(name):
    space = SPACES[name]
    mech = B.broken_ptf_no_sqrt_T(GRID, space, RADIUS, MU, n=N)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, pipeline="ptf")
    assert A.pair_mu(mech, X0, X1) == pytest.approx(np.sqrt(GRID.size) * MU, rel=PTF_PAIR_RTOL + gamma(1), abs=0)
    for stat in ("lr", "blackbox"):
        res = A.audit(mech, X0, X1, draws=FAIL_DRAWS, rng=_rng(10, len(name)), statistic=stat)
        assert res.violation and res.mu_lower > MU, res


def test_ftp_calibrated_to_grid_l2_norm_is_caught_in_rkhs():
    space = SPACES["gaussian"]
    geom = space.at(GRID)
    factor = B.grid_norm_factor(geom, "l2")
    # λ_max of ΦᵀΦ against that of K = ΦΦᵀ: two eigensolves (eigh_rtol each), Φ = K^½ from a third,
    # and forming ΦᵀΦ (T·γ_{T+1}); the root halves it
    T = GRID.size
    assert factor == pytest.approx(np.sqrt(np.linalg.eigvalsh(geom.K)[-1] / T), rel=4 * eigh_rtol(T) + T * gamma(T + 1),
                                   abs=0)
    assert factor < 1
    mech = B.broken_ftp_grid_norm(GRID, space, RADIUS, MU, n=N, norm="l2")
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    assert A.pair_mu(mech, X0, X1) == pytest.approx(MU / factor, rel=_pair_rtol(space), abs=0)  # the same factor
    res = A.audit(mech, X0, X1, draws=FAIL_DRAWS, rng=_rng(11))
    assert res.mu_lower > MU, res


def test_ftp_calibrated_to_grid_sup_norm_is_caught_when_grid_misses_the_peak():
    # Brownian kernel observed on (0, 1/2]: |f(t_j)| <= ||f|| sqrt(t_j) <= ||f|| / sqrt(2).
    grid = np.linspace(1 / 16, 1 / 2, 8)
    space = dpfda.KernelSpace(dpfda.brownian_kernel())
    factor = B.grid_norm_factor(space.at(grid), "sup")
    assert factor == pytest.approx(np.sqrt(0.5), rel=gamma(1), abs=0)  # sqrt(K(t, t)) = sqrt(1/2), rounded once
    mech = B.broken_ftp_grid_norm(grid, space, RADIUS, MU, n=N, norm="sup")
    X0, X1 = A.worst_case_pair(grid, space, RADIUS, N)
    res = A.audit(mech, X0, X1, draws=FAIL_DRAWS, rng=_rng(12))
    geom = space.at(grid)
    assert res.mu_pair == pytest.approx(np.sqrt(2) * MU, rel=pair_rtol(geom.Phi.T @ geom.Phi, grid.size, N) + gamma(2),
                                        abs=0)
    assert res.mu_lower > MU, res


@pytest.mark.parametrize("name,norm", [("legendre", "sup"), ("legendre", "l2"), ("gaussian", "sup")])
def test_grid_norm_calibration_that_overestimates_passes(name, norm):
    """Where the grid norm's sensitivity is >= the CM one, the audit must not cry wolf."""
    space = SPACES[name]
    geom = space.at(GRID)
    factor = B.grid_norm_factor(geom, norm)
    assert factor >= 1 - (eigh_rtol(geom.dim) + gamma(GRID.size + geom.dim))  # >= 1 exactly; eigh, row norms
    mech = B.broken_ftp_grid_norm(GRID, space, RADIUS, MU, n=N, norm=norm)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    res = A.audit(mech, X0, X1, draws=FAIL_DRAWS, rng=_rng(13, len(name), len(norm)))
    assert res.mu_lower <= MU


@pytest.mark.parametrize("name", list(SPACES))
def test_ftp_without_radius_is_caught(name):
    space = SPACES[name]
    mech = B.broken_ftp_no_radius(GRID, space, RADIUS, MU, n=N)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, factor=2.0)
    assert A.pair_mu(mech, X0, X1) == pytest.approx(2 * MU, rel=_pair_rtol(space), abs=0)
    res = A.audit(mech, X0, X1, draws=FAIL_DRAWS, rng=_rng(14, len(name)))
    assert res.mu_lower > MU, res
    # ... while the same pair is harmless for the calibrated FTP
    ok = A.audit(A.ftp_mechanism(GRID, space, RADIUS, MU, n=N), X0, X1, draws=FAIL_DRAWS,
                 rng=_rng(15, len(name)))
    assert ok.mu_lower <= MU


def test_pinv_design_is_caught_and_the_real_design_passes():
    """A design whitened by a pseudo-inverse: the audit's own solve sees the thin direction."""
    grid, space = np.linspace(0.0, 1.0, 6), dpfda.LegendreSpace(3)
    broken, des = B.broken_design_pinv(grid, space, RADIUS, MU, n=N, noise=_thin_noise())
    assert des.extent < 10  # the pinv dropped the thin direction
    pairs = A.probe_pairs(broken, N, grid.size, size=1e3)
    mus = [A.pair_mu(broken, *p) for p in pairs]
    assert max(mus) > 1e15
    X0, X1 = pairs[int(np.argmax(mus))]
    assert np.isclose(X0[0] @ np.eye(6)[2], 1e3, rtol=gamma(1), atol=0)  # the thin grid point, found by the audit
    res = A.audit(broken, X0, X1, draws=20_000, rng=_rng(30))
    assert res.violation and res.mu_pair > 1e15
    # The score an adversary needs: the sign of the thin coordinate of the noisy means.
    sign = A.audit(broken, X0, X1, draws=20_000, rng=_rng(31), statistic=lambda rel: -rel.noisy_means[..., 2:3])
    assert sign.violation
    # What the audit saw when it whitened with the design's own pinv: nothing.
    L = des.L
    d = des.summary(X1) - des.summary(X0)
    assert np.linalg.norm(np.linalg.pinv(L) @ d) / broken.sigma(N) < 1e-6
    # The real design, same noise, same pairs: at most μ, and tight at its worst case.
    real = Design(grid, space, RADIUS, region="ball", noise=_thin_noise()).mechanism(N, MU)
    assert max(A.pair_mu(real, *p) for p in pairs) <= MU * (1 + 1e-9)  # proven: 2⁻³¹ + 4u
    ok = A.audit(real, X0, X1, draws=20_000, rng=_rng(32))
    assert not ok.violation and ok.mu_lower > 0.8 * MU


def _section_pair(space, s):
    """n copies of s·B'·h and the first negated; h of norm 1, its grid values point by point."""
    h = space.basis(GRID)[:, 1] if isinstance(space, dpfda.LegendreSpace) else space.kernel(GRID, GRID[4])
    X0 = np.tile(s * RADIUS * h, (N, 1))
    X1 = X0.copy()
    X1[0] = -X0[0]
    return X0, X1


# The cancelling mean's pair μ at the audit chapter's neighbours in H_4: rounding errors, but
# made in a fixed order from data with the same bits everywhere (a polynomial's values), so the
# same on every machine up to the fit of the mean curve (below). The kernel's values come from
# numpy's exp, whose last bit depends on the CPU's vector instructions, and the leak follows those
# bits: no value is pinned there (test_the_cancelling_mean_leaks_in_the_kernel_space_on_any_machine).
CANCELLING_LEAK = {("legendre", 1e17): 45.2034751002621, ("legendre", 1e20): 14673.7040570031}


@pytest.mark.parametrize("case", sorted(CANCELLING_LEAK), ids=str)
def test_the_cancelling_mean_leaks_the_same_everywhere(case):
    key, scale = case
    space = SPACES[key]
    geom = space.at(GRID)
    naive = B.broken_ftp_cancellation(GRID, space, RADIUS, MU, n=N)
    real = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    pair = _section_pair(space, scale)
    # Where the machine can enter: each fitted value (BLAS, off by fit_rtol + γ_d, about 1e-13 of itself) is
    # absorbed by a curve value more than twice its size in ulps, fl(fitted − x) = −x whatever its
    # last bits; the curve sums are elementwise, in a fixed order. So the mean curve has the same
    # bits everywhere, and only its fit (fit_rtol of each summary s) and the norm (γ_{d+10}) differ.
    for X in pair:
        fitted = geom.values(fitter(geom).solve(X, RADIUS).coef)
        assert np.all(np.abs(fitted) * (1 + 1e-6) < np.spacing(np.abs(X)) / 2)
    s0, s1 = naive.summary(pair[0]), naive.summary(pair[1])
    eps = fit_rtol(geom.Phi.T @ geom.Phi, GRID.size) * (np.linalg.norm(s0) + np.linalg.norm(s1)) / np.linalg.norm(
        s1 - s0) + gamma(geom.dim + 10)
    assert A.pair_mu(naive, *pair) == pytest.approx(CANCELLING_LEAK[case], rel=2 * eps + gamma(1), abs=0)
    assert A.pair_mu(real, *pair) == pytest.approx(MU, rel=_pair_rtol(space), abs=0)
    # at scale 1 nothing cancels: the broken mean is FTP's mean
    X0, X1 = _section_pair(space, 1.0)
    rtol = cancelling_mean_rtol(geom, N)  # against the sensitivity 2B'/n, which bounds each summary's error
    np.testing.assert_allclose(naive.summary(X0), real.summary(X0), rtol=0, atol=rtol * 2 * RADIUS / N)
    assert A.pair_mu(naive, X0, X1) == pytest.approx(MU, rel=rtol, abs=0)


@pytest.mark.parametrize("scale", [1e20, 1e100, 1e300])
def test_the_cancelling_mean_leaks_in_the_kernel_space_on_any_machine(scale):
    """Whatever the last bits of the kernel's values: the chapter's pair and six neighbours of it
    (one value moved by one unit in its last place) leak by orders of magnitude at 1e20 and
    beyond, all but a rare one that cancels exactly; dpfda's FTP keeps μ at every one."""
    space = SPACES["gaussian"]
    naive = B.broken_ftp_cancellation(GRID, space, RADIUS, MU, n=N)
    real = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    leaks = 0
    for j in (None, 0, 1, 2, 3, 5, 7):
        X0, X1 = _section_pair(space, scale)
        if j is not None:
            X0[:, j] = np.nextafter(X0[:, j], np.inf)
            X1 = X0.copy()
            X1[0] = -X0[0]
        leaks += A.pair_mu(naive, X0, X1) > 100 * MU
        assert A.pair_mu(real, X0, X1) == pytest.approx(MU, rel=_pair_rtol(space), abs=0)
    assert leaks >= 5, leaks


def test_the_cancelling_mean_at_1e300_warns_nothing():
    space = SPACES["legendre"]
    naive = B.broken_ftp_cancellation(GRID, space, RADIUS, MU, n=N)
    pair = A.worst_case_pair(GRID, space, RADIUS, N, factor=1e300)
    with np.errstate(over="raise"):
        mu = A.pair_mu(naive, *pair)
    assert mu > MU


@pytest.mark.parametrize("make", [
    lambda g, s: B.broken_design_pinv(g, s, RADIUS, MU, n=N, noise=_thin_noise()),
    lambda g, s: B.broken_design_rank_deficient(g, s, RADIUS, MU, n=N),
], ids=["broken_design_pinv", "broken_design_rank_deficient"])
def test_broken_designs_refuse_the_space_then_grid_order_by_name(make):
    grid, space = np.linspace(0.0, 1.0, 6), dpfda.LegendreSpace(3)
    with pytest.raises(TypeError, match=r"takes \(grid, space, \.\.\.\): got a space as `grid`"):
        make(space, grid)
    with pytest.raises(TypeError, match="got an array as `space`"):
        make(grid, grid)
    assert make(grid, space) is not None
