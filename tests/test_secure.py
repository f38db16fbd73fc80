"""Releases through OpenDP (``secure=True``) and accounting cross-checked against
independent libraries (dp_accounting, OpenDP).

OpenDP draws from its own secure random source, which cannot be seeded: the
distribution checks below are therefore random.  Each uses a tolerance whose
false-alarm probability is about 1e-5 (5 standard errors, or a p-value floor of
1e-5), so a correct implementation essentially never fails them.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats
from test_pipelines import _kernel_eval_atol

import dpfda
from dpfda.maths.rounding import fit_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.pipelines import ftp_fit_mean, ptf_clipped_mean
from dpfda.trust import audit as A
from dpfda_book.simulation import models

from _spaces import on_grid

opendp = pytest.importorskip("opendp", reason="the [secure] extra (opendp) is part of requirements.txt")
dp_accounting = pytest.importorskip("dp_accounting")

from dpfda.mechanisms import secure  # noqa: E402

GRID = dpfda.uniform_grid(8)
N, RADIUS, MU = 10, 1.0, 1.0
SPACES = on_grid(GRID)  # every space of the registry (tests/_spaces.py) this grid takes
REPS = 2500  # OpenDP's exact sampler costs tens of microseconds per coordinate
P_FLOOR = 1e-5
Z = 5.0


def _data(space, seed):
    rng = np.random.default_rng(seed)
    F = models.rkhs_curves(N, rng).values(GRID) if isinstance(space, dpfda.KernelSpace) else \
        models.polynomial_curves(N, space.m, rng).values(GRID)
    return models.observe(F, 0.2, rng)


def _zk(k):
    """z for k simultaneous two-sided checks at family-wise level P_FLOOR (Bonferroni)."""
    return float(stats.norm.isf(P_FLOOR / (2 * k)))


def _check_standard_normal(z, what):
    z = np.asarray(z).ravel()
    se_mean, se_var = 1 / np.sqrt(z.size), np.sqrt(2 / (z.size - 1))
    assert abs(z.mean()) <= Z * se_mean, f"{what}: mean {z.mean():.4f}"
    assert abs(z.var(ddof=1) - 1) <= Z * se_var, f"{what}: variance {z.var(ddof=1):.4f}"
    assert stats.kstest(z, "norm").pvalue > P_FLOOR, f"{what}: not N(0, 1)"


# ---------------------------------------------------------------------------
# OpenDP's privacy map
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("n", [4, 50, 1000])
def test_opendp_zcdp_map_is_mu_squared_over_two(mu, n):
    # FTP: sensitivity 2B'/n, scale 2B'/(nμ)
    meas = secure.gaussian_measurement(dpfda.ftp_sigma(n, RADIUS, mu))
    assert meas.map(2 * RADIUS / n) == pytest.approx(mu**2 / 2, rel=1e-9, abs=0)  # OpenDP rounds outward: ulps
    # PTF after dividing by c_j: sensitivity 2√T/n, scale 2√T/(nμ)
    T = GRID.size
    meas = secure.gaussian_measurement(2 * np.sqrt(T) / (n * mu))
    assert meas.map(2 * np.sqrt(T) / n) == pytest.approx(mu**2 / 2, rel=1e-9, abs=0)


def test_opendp_conversion_is_never_below_the_exact_gdp_curve():
    """ρ-zCDP → (ε, δ) (OpenDP) is valid but looser than the exact μ-GDP curve (dpfda)."""
    for mu in (0.3, 1.0, 2.0):
        meas = secure.gaussian_measurement(1.0 / mu)
        profile = opendp.prelude.c.make_zCDP_to_approxDP(meas).map(1.0)
        for delta in (1e-8, 1e-5, 1e-3):
            assert profile.epsilon(delta) >= dpfda.epsilon_from_mu(mu, delta) * (1 - 1e-9)


def test_gaussian_release_refuses_too_little_noise():
    with pytest.raises(ValueError, match="too small"):
        secure.gaussian_release(np.zeros(3), scale=0.5, sensitivity=1.0, mu=1.0)
    with pytest.raises(ValueError, match="finite"):
        secure.gaussian_release(np.array([np.nan]), scale=1.0, sensitivity=1.0, mu=1.0)


@pytest.mark.parametrize("release, budget", [(secure.gaussian_release, "mu"),
                                             (secure.laplace_release, "epsilon")])
def test_releases_name_what_is_wrong_with_their_values(release, budget):
    """Strings and object arrays gave numpy's own errors; values near the
    float maximum gave inf silently.  Each is now a named error, before anything is drawn."""
    kw = {"scale": 1.0, "sensitivity": 1.0, budget: 1.0}
    for bad in ("abc", np.array([1.0, "x"], dtype=object), np.array([1.0, None], dtype=object),
                [[1.0, 2.0], [3.0]]):
        with pytest.raises(TypeError, match="values must be"):
            release(bad, **kw)
    for big in (np.array([2.0**961]), np.full(4, np.finfo(float).max), -np.full(3, 1.5e308)):
        with pytest.raises(ValueError, match=r"values must lie in \[-2\^960, 2\^960\]"):
            release(big, **kw)
    with pytest.raises(ValueError, match="scale must be at most 2\\^960"):
        release(np.zeros(2), **dict(kw, scale=1e300, sensitivity=1e300))
    # at the edge of the domain a noisy value stays finite
    edge = release(np.full(200, 2.0**960), **dict(kw, scale=2.0**960, sensitivity=2.0**960))
    assert np.all(np.isfinite(edge))


def test_laplace_mechanism_near_the_float_maximum_is_refused_on_both_paths():
    for sec in (False, True):
        with pytest.raises(ValueError, match=r"value must lie in \[-2\^960, 2\^960\]"):
            dpfda.laplace_mechanism(np.full(5, 1.79e308), 1.0, 1.0, np.random.default_rng(0), secure=sec)
        with pytest.raises(ValueError, match="Laplace scale"):
            dpfda.laplace_mechanism(np.full(5, 1.0), 1e306, 1.0, np.random.default_rng(0), secure=sec)
    assert np.isfinite(dpfda.laplace_mechanism(np.zeros(3), 1.0, 1.0, None, secure=True)).all()


@pytest.mark.parametrize("name", list(SPACES))
def test_secure_releases_need_no_rng(name):
    """The docstring says rng is unused with secure=True; None was a TypeError."""
    space = SPACES[name]
    X = _data(space, 1)
    for pipeline in (dpfda.ftp, dpfda.ptf):
        rel = pipeline(X, GRID, space, RADIUS, MU, None, secure=True)
        assert np.all(np.isfinite(rel.coef)) and np.all(np.isfinite(rel(np.array([0.05, 0.5]))))
        with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
            pipeline(X, GRID, space, RADIUS, MU, None)  # the numpy path still needs one
        with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
            pipeline(X, GRID, space, RADIUS, MU, 42, secure=True)  # not a generator either way


def test_missing_opendp_gives_a_helpful_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "opendp", None)
    monkeypatch.setitem(sys.modules, "opendp.prelude", None)
    assert not secure.opendp_available()
    X = _data(SPACES["legendre"], 0)
    with pytest.raises(ImportError, match="pip install"):
        dpfda.ftp(X, GRID, SPACES["legendre"], RADIUS, MU, np.random.default_rng(0), secure=True)
    # the numpy path does not need OpenDP
    dpfda.ftp(X, GRID, SPACES["legendre"], RADIUS, MU, np.random.default_rng(0))


def test_secure_must_be_a_bool():
    X = _data(SPACES["legendre"], 0)
    with pytest.raises(TypeError, match="secure"):
        dpfda.ptf(X, GRID, SPACES["legendre"], RADIUS, MU, np.random.default_rng(0), secure="yes")


# ---------------------------------------------------------------------------
# Scale and distribution match the numpy path
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SPACES))
def test_secure_ftp_matches_numpy_path(name):
    space = SPACES[name]
    geom = space.at(GRID)
    X = _data(space, 1)
    Xb = np.broadcast_to(X, (REPS,) + X.shape)
    centre = ftp_fit_mean(X, geom, RADIUS)[0]
    sec = dpfda.ftp(Xb, GRID, space, RADIUS, MU, np.random.default_rng(2), secure=True)
    ref = dpfda.ftp(Xb, GRID, space, RADIUS, MU, np.random.default_rng(3))
    assert sec.noise_scale == ref.noise_scale == pytest.approx(2 * RADIUS / (N * MU), rel=gamma(4), abs=0)
    z_sec = (sec.coef - centre) / sec.noise_scale
    z_ref = (ref.coef - centre) / ref.noise_scale
    _check_standard_normal(z_sec, f"secure FTP {name}")
    assert stats.ks_2samp(z_sec.ravel(), z_ref.ravel()).pvalue > P_FLOOR
    # coordinates are independent: off-diagonal correlations vanish
    corr = np.corrcoef(z_sec, rowvar=False)
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    assert np.max(np.abs(off)) <= _zk(off.size // 2) / np.sqrt(REPS)  # SE of a correlation ≈ 1/√REPS
    # a secure release keeps no non-private value
    if isinstance(space, dpfda.KernelSpace):
        assert sec._residual_rng is not None
        # grid values carry N(0, σ²K_T) noise (Corollary 8)
        resid = sec.values - geom.values(centre)
        cov = np.cov(resid, rowvar=False) / sec.noise_scale**2
        K = geom.K
        se = np.sqrt((K**2 + np.outer(np.diag(K), np.diag(K))) / (REPS - 1))
        k = GRID.size * (GRID.size + 1) // 2
        assert np.all(np.abs(cov - K) <= _zk(k) * se)
    else:
        assert sec._residual_rng is None


def test_secure_rkhs_release_off_the_grid_is_a_consistent_path():
    space = SPACES["gaussian"]
    X = _data(space, 4)
    rel = dpfda.ftp(X, GRID, space, RADIUS, MU, np.random.default_rng(5), secure=True)
    geom = space.at(GRID)  # the kernel evaluation at the grid against Φβ (see test_pipelines)
    assert np.all(np.abs(rel(GRID) - rel.values) <= _kernel_eval_atol(geom, space.kernel, rel.coef, GRID)
                  + gamma(GRID.size) * (np.abs(rel.coef) @ np.abs(geom.Phi)))
    t = np.array([0.05, 0.33, 0.9])
    first = rel(t)
    assert np.array_equal(rel(t), first)  # the same function when asked again
    # off the grid the value is the interpolant of the release plus residual GP noise
    # the residual's draws (of standard deviation far above 1e-12 at these points) differ from 0
    assert not np.allclose(first, geom.evaluate(rel.coef, t), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(SPACES))
def test_secure_ptf_matches_numpy_path(name):
    space = SPACES[name]
    X = _data(space, 6)
    Xb = np.broadcast_to(X, (REPS,) + X.shape)
    sec = dpfda.ptf(Xb, GRID, space, RADIUS, MU, np.random.default_rng(7), secure=True)
    ref = dpfda.ptf(Xb, GRID, space, RADIUS, MU, np.random.default_rng(8))
    assert np.allclose(sec.noise_scale, ref.noise_scale, rtol=gamma(8), atol=0)  # the same formula
    assert np.allclose(sec.noise_scale, 2 * sec.clip * np.sqrt(GRID.size) / (N * MU), rtol=gamma(10), atol=0)
    xbar = ptf_clipped_mean(X, sec.clip)
    z_sec = (sec.noisy_means - xbar) / sec.noise_scale
    z_ref = (ref.noisy_means - xbar) / ref.noise_scale
    _check_standard_normal(z_sec, f"secure PTF {name}")
    # per-coordinate scale: each coordinate's standard deviation is σ_j
    sd = z_sec.std(axis=0, ddof=1)
    assert np.all(np.abs(sd - 1) <= _zk(GRID.size) / np.sqrt(2 * (REPS - 1)))
    assert stats.ks_2samp(z_sec.ravel(), z_ref.ravel()).pvalue > P_FLOOR
    # the released curve is the same weighted ball fit of x̃ as on the numpy path
    fit = dpfda.mechanisms.pipelines.fitter(space.at(GRID), sec.weights).solve(sec.noisy_means, RADIUS)
    # the same solver on the same means; other batch shapes: fit_rtol of each (with the data's ratio)
    A_w = space.at(GRID).Phi.T @ (sec.weights[:, None] * space.at(GRID).Phi)
    ratio = np.max(np.linalg.norm(np.sqrt(sec.weights) * sec.noisy_means, axis=-1)
                   / np.linalg.norm(fit.coef, axis=-1)) / np.sqrt(np.linalg.norm(A_w, 2))
    assert np.allclose(fit.coef, sec.coef, rtol=0,
                       atol=2 * fit_rtol(A_w, GRID.size, data_ratio=ratio) * np.linalg.norm(fit.coef, axis=-1).max())


def test_secure_ftp_passes_its_audit():
    """An audit of the OpenDP path (unseeded): valid and clearly informative."""
    space = SPACES["legendre"]
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    mech = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N, secure=True)
    res = A.audit(mech, X0, X1, draws=2000, rng=np.random.default_rng(9), alpha=1e-3)
    assert 0.3 * MU < res.mu_lower <= MU, res


# ---------------------------------------------------------------------------
# GDP → (ε, δ): dpfda against dp_accounting
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.2, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-8, 1e-5, 1e-3, 0.05, 0.3])
def test_epsilon_from_mu_matches_dp_accounting(sigma, delta):
    # A Gaussian mechanism with sensitivity 1 and noise σ is exactly (1/σ)-GDP.
    theirs = dp_accounting.get_epsilon_gaussian(sigma, delta)
    ours = dpfda.epsilon_from_mu(1.0 / sigma, delta)
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-9)  # dp_accounting's own bisection tolerance
    if theirs > 0:
        # and back: dpfda's inverse recovers μ from dp_accounting's (ε, δ)
        assert dpfda.mu_from_epsilon_delta(theirs, delta) == pytest.approx(1.0 / sigma, rel=1e-6, abs=0)
