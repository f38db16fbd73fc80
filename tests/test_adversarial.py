"""The releases of dpfda tried as an adversary would.

μ-GDP must hold for every finite input, in floating point, and against anyone
who holds the release object or its pickle.  The tests here:

* compare releases of worst-case neighbours scaled from 1 to 1e300 (and of
  random neighbours whose curves range from 1e-300 to 1e308) under one noise
  stream, so that the difference of the two releases is exactly the
  difference of the non-private summaries: its length in the noise's metric
  must stay at μ (worst case) or below it (any pair), never above μ(1 + 1e-9);
* check that FTP's mean of fits is exact to a few ulps of B' at every scale,
  for any batch shape, against the limits the constrained fit must reach;
* walk every object reachable from a pickled release and try to rebuild the
  noise from any random-number state found there (a negative control shows the
  attack works on the construction dpfda used before);
* look for a per-person array (an axis of length n) in every release;
* audit the real FTP at scale 1e17 (no violation) beside the naive
  implementation that cancels large numbers (a violation);
* check the guards on the noise scale and the named errors for bad input.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import dpfda
from dpfda.maths.rounding import eigh_rtol, fit_rtol, pair_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.pipelines import (
    NOISE_RESOLUTION,
    PARAM_MAX,
    fitter,
    ftp_fit_mean,
    ftp_sigma,
    ptf_clipped_mean,
    ptf_sigmas,
)
from dpfda.mechanisms.release import Release
from dpfda.trust import audit as A
from dpfda_book.mechanisms import broken

from _spaces import on_grid
from _support import cancelling_mean_rtol

GRID = np.arange(1, 11) / 10  # t = 0 left out for the Brownian kernel (A.4)
N, RADIUS, MU = 13, 1.0, 1.0  # n differs from T = 10, d = 4 and the batch sizes below
SPACES = on_grid(GRID)  # every space of the registry (tests/_spaces.py) this grid takes
SCALES = [1.0, 1e3, 1e8, 1e14, 1e16, 1e17, 1e20, 1e50, 1e100, 1e200, 1e300]
TOL = 1e-9  # pair μ may exceed μ by this relative amount (rounding), never more
# (the proven bound: σ covers the summaries' rounding to 2⁻³¹ + 4u of μ, dpfda.maths.summation)


def _attain_rtol(space) -> float:
    """How far below μ a worst-case pair's μ may fall: the fits and means (pair_rtol), and the
    additions of the shared noise, a few roundings of |summary| + |σz| against the sensitivity
    (at most γ₄·(nμ/2 + 8) for |z| <= 8)."""
    geom = space.at(GRID)
    return pair_rtol(geom.Phi.T @ geom.Phi, GRID.size, N) + gamma(4) * (N * MU / 2 + 8)


def _ball_slack(d: int) -> float:
    """Relative amount by which a fit's computed norm may exceed B': the eigenbasis solution is
    scaled to norm <= 1 (γ_{d+4}), turned back by V̂ (off orthogonal by 2·eigh_rtol(d), the
    product γ_d·√d), divided by B' and its norm taken (γ_{d+2})."""
    return gamma(2 * d + 6) + 2 * eigh_rtol(d) + np.sqrt(d) * gamma(d)


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([20261130, *key]))


def _release(pipeline, X, space, seed, **kw):
    """One release with a fixed noise stream, so two datasets can be compared noise-free."""
    method = dpfda.ftp if pipeline == "ftp" else dpfda.ptf
    return method(X, GRID, space, RADIUS, MU, np.random.default_rng(seed), **kw)


def _pair_mu_of_releases(r0: Release, r1: Release) -> np.ndarray:
    """Length of the release difference in the metric of its noise (per repetition).

    Under one noise stream r1 - r0 is the difference of the summaries, so this
    is the μ at which the two release laws can be told apart (Theorem 6: FTP in
    its Cameron–Martin coordinates; Proposition 9: PTF in its noisy means).
    """
    if r0.method == "ftp":
        return np.linalg.norm(r1.coef - r0.coef, axis=-1) / r0.noise_scale
    return np.linalg.norm((r1.noisy_means - r0.noisy_means) / r0.noise_scale, axis=-1)


# ---------------------------------------------------------------------------
# Worst-case neighbours at every scale, under one noise stream
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("pipeline", ["ftp", "ptf"])
@pytest.mark.parametrize("scale", SCALES)
def test_worst_case_neighbours_at_every_scale(space_name, pipeline, scale):
    space = SPACES[space_name]
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, pipeline=pipeline, factor=scale)
    assert np.all(np.isfinite(X0)) and np.all(np.isfinite(X1))
    r0 = _release(pipeline, X0, space, seed=7)
    r1 = _release(pipeline, X1, space, seed=7)
    assert np.all(np.isfinite(r0.coef)) and np.all(np.isfinite(r1.coef))
    mu_pair = float(_pair_mu_of_releases(r0, r1))
    assert mu_pair <= MU * (1 + TOL), mu_pair
    # The pair attains the sensitivity at every scale: the test is not vacuous.
    assert mu_pair >= MU * (1 - _attain_rtol(space)), mu_pair
    # The secure path computes the same summary (it trusts the declared sensitivity).
    mech = (A.ftp_mechanism if pipeline == "ftp" else A.ptf_mechanism)(GRID, space, RADIUS, MU, n=N)
    assert A.pair_mu(mech, X0, X1) <= MU * (1 + TOL)


@pytest.mark.parametrize("space_name", ["legendre", "gaussian"])
@pytest.mark.parametrize("radius", [1e-300, 1e-8, 1e8, 1e300])
def test_ftp_sensitivity_holds_for_every_radius_and_magnitude(space_name, radius):
    """The FTP summary of neighbours differs by at most 2B'/n, and every curve's fit lies in
    the ball, for B' from 1e-300 to 1e300 and data from 1e-300 to 1.7e308 (norms taken
    after dividing by B', so that the check itself cannot overflow)."""
    geom = SPACES[space_name].at(GRID)
    solver = fitter(geom)
    rng = _rng(5, int(np.log10(radius)) + 400)
    for magnitude in (1e-300, 1e-20, 1.0, 1e20, 1e300, 1.7e308):
        X = rng.uniform(-1.0, 1.0, (N, GRID.size)) * magnitude
        Y = X.copy()
        Y[0] = -np.sign(X[0]) * magnitude  # the first curve replaced by its far opposite
        m0, _ = ftp_fit_mean(X, geom, radius)
        m1, _ = ftp_fit_mean(Y, geom, radius)
        assert np.linalg.norm((m1 - m0) / radius) <= 2.0 / N * (1 + TOL)
        fits = solver.solve(np.vstack([X, Y]), radius).coef
        assert np.all(np.linalg.norm(fits / radius, axis=-1) <= 1.0 + _ball_slack(geom.dim))


@pytest.mark.parametrize("space_name", ["legendre", "gaussian"])
def test_random_neighbours_of_mixed_magnitude(space_name):
    """Curves from 1e-300 to 1e308 in one dataset: no pair exceeds μ, in any batch layout."""
    space = SPACES[space_name]
    rng = _rng(1, len(space_name))
    R = 40
    shape = rng.standard_normal((R, N, GRID.size))
    scale = 10.0 ** rng.uniform(-300, 307.5, size=(R, N, 1))
    X0 = shape * scale
    X1 = X0.copy()
    who = rng.integers(N, size=R)
    X1[np.arange(R), who] = rng.standard_normal((R, GRID.size)) * 10.0 ** rng.uniform(
        -300, 307.5, size=(R, 1))
    assert np.all(np.isfinite(X0)) and np.all(np.isfinite(X1))
    for pipeline in ("ftp", "ptf"):
        r0 = _release(pipeline, X0, space, seed=11)
        r1 = _release(pipeline, X1, space, seed=11)
        mu_pair = _pair_mu_of_releases(r0, r1)
        assert np.all(np.isfinite(mu_pair))
        assert mu_pair.max() <= MU * (1 + TOL), mu_pair.max()


# ---------------------------------------------------------------------------
# FTP's mean of fits: exact at every scale, for any batch shape
# ---------------------------------------------------------------------------


def _reference_fit(solver, x, radius):
    """The constrained fit of one curve from its limits, independent of the secular solver.

    Far outside the ball (|x| >= 1e20·B') the fit is B'·v/||v|| with v = ΦᵀWx in
    the coefficients' metric (the multiplier dominates every eigenvalue); far
    inside (|x| <= 1e-20·B') it is the unconstrained fit.  Both are computed on
    x divided by a power of two, which is exact.
    """
    top = np.max(np.abs(x))
    _, e = np.frexp(top)
    xs = np.ldexp(x, -e)
    if top >= 1e20 * radius:
        v = solver.Phi.T @ (solver.weights * xs)
        return radius * v / np.linalg.norm(v)
    assert top <= 1e-20 * radius
    return np.ldexp(solver.unconstrained(xs), e)


def _far_fit_atol(solver, X, radius) -> float:
    """How far the library's mean of fits of curves far from the sphere may be from the reference's.

    Far outside, both are B'·v/||v||, v = ΦᵀWx, through different products: the direction of v is
    known to √d·γ_{T+d}·c_x in each, c_x = || |Φ|ᵀW|x| ||/||v|| (Higham (3.5)); the library's goes
    through V̂ and back (2·eigh_rtol(d) + √d·γ_d) and is normalised (γ_{d+4}); the two means add
    γ_{n+4}. Far inside, each fit is off by fit_rtol of its own (tiny) size.
    """
    d, T = solver.dim, solver.T
    top = np.max(np.abs(X), axis=1, keepdims=True)
    Xs = X / top  # the direction of v does not depend on the scale of x
    w = solver.weights / np.max(solver.weights)
    c = np.linalg.norm(np.abs(Xs) * w @ np.abs(solver.Phi), axis=1) / np.linalg.norm(Xs * w @ solver.Phi, axis=1)
    far = top[:, 0] >= 1e20 * radius
    per_curve = 2 * (np.sqrt(d) * gamma(T + d) * c + 2 * eigh_rtol(d) + np.sqrt(d) * gamma(d) + gamma(d + 4))
    with np.errstate(over="ignore"):  # inf only on the far rows, which use per_curve
        inside = 2 * fit_rtol(solver.Phi.T @ (solver.weights[:, None] * solver.Phi), T) * np.linalg.norm(
            solver.unconstrained(Xs), axis=1) * (top[:, 0] / radius)  # each fit to fit_rtol of its own size
    return radius * (np.mean(np.where(far, per_curve, inside)) + gamma(X.shape[0] + 4))


@pytest.mark.parametrize("space_name", ["legendre", "gaussian"])
def test_ftp_mean_exact_to_a_few_ulps_of_the_radius(space_name):
    geom = SPACES[space_name].at(GRID)
    solver = fitter(geom)
    rng = _rng(2, len(space_name))
    for radius in (1e-200, 1.0, 1e200):
        exps = np.concatenate([rng.uniform(-300, -21, 6), rng.uniform(21, 307.5, 7)])
        X = rng.standard_normal((N, GRID.size)) * (10.0 ** exps)[:, None]
        # keep every curve at least 1e20·B' away from the sphere, where the limits hold
        far = np.abs(np.log10(np.max(np.abs(X), axis=1)) - np.log10(radius)) >= 20
        X = X[far]
        ref = np.mean([_reference_fit(solver, x, radius) for x in X], axis=0)
        got, active = ftp_fit_mean(X, geom, radius)
        assert np.all(np.isfinite(got))
        assert np.max(np.abs(got - ref)) <= _far_fit_atol(solver, X, radius), (radius, got - ref)
        # every per-curve fit is inside the ball, whatever the magnitude of the curve
        fits = solver.solve(X, radius).coef
        # (to rounding: the rotation out of the eigenbasis and the norm itself round)
        top = np.max(np.abs(fits), axis=1, keepdims=True)  # norms without overflow
        norms = top[:, 0] * np.linalg.norm(fits / np.where(top > 0, top, 1.0), axis=1)
        assert np.all(norms <= radius * (1 + _ball_slack(geom.dim)))
        assert np.array_equal(active, np.max(np.abs(X), axis=1) > radius)


def test_ftp_mean_is_batch_invariant_for_mixed_magnitudes():
    geom = SPACES["legendre"].at(GRID)
    rng = _rng(3)
    X = rng.standard_normal((5, N, GRID.size)) * 10.0 ** rng.uniform(-300, 307, (5, N, 1))
    whole, active = ftp_fit_mean(X, geom, RADIUS)
    for r in range(5):
        alone, alone_active = ftp_fit_mean(X[r], geom, RADIUS)
        assert np.array_equal(alone, whole[r]) and np.array_equal(alone_active, active[r])
    stacked, _ = ftp_fit_mean(X.reshape(1, 5, N, GRID.size), geom, RADIUS)
    assert np.array_equal(stacked[0], whole)


def test_moderate_rows_are_not_rescaled():
    """Rows of ordinary magnitude keep their bits: the same fit as before the scaling fix."""
    geom = SPACES["gaussian"].at(GRID)
    X = _rng(4).standard_normal((N, GRID.size)) * 3.0
    X_big = X.copy()
    X_big[0] *= 1e200  # a far-away curve in the same batch changes no other curve's fit
    fit, fit_big = fitter(geom).solve(X, RADIUS), fitter(geom).solve(X_big, RADIUS)
    assert np.array_equal(fit.coef[1:], fit_big.coef[1:])


def test_every_finite_dataset_is_releasable():
    """Whether a release happens must not depend on one person's data."""
    for space in SPACES.values():
        X = _rng(5).standard_normal((N, GRID.size))
        for value in (np.finfo(float).max, -np.finfo(float).max, 5e-324, 0.0):
            Y = X.copy()
            Y[3] = value
            for pipeline in ("ftp", "ptf"):
                rel = _release(pipeline, Y, space, seed=1)
                assert np.all(np.isfinite(rel.coef)) and np.all(np.isfinite(rel.values))
                assert np.all(np.isfinite(rel(np.array([0.05, 0.5, 0.95]))))


# ---------------------------------------------------------------------------
# What a release (or its pickle) carries
# ---------------------------------------------------------------------------


def _reachable(obj, seen=None):
    """Every object reachable from ``obj`` through attributes, containers and arrays."""
    seen = set() if seen is None else seen
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (str, bytes, int, float, bool, type(None), type)):
            continue
        seen.add(id(o))
        yield o
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif isinstance(o, np.random.Generator):
            stack.append(o.bit_generator)
        elif isinstance(o, np.random.BitGenerator):
            stack.append(getattr(o, "seed_seq", None))
            stack.append(o.state)
        elif isinstance(o, np.random.SeedSequence):
            stack.extend([o.entropy, o.spawn_key, o.pool_size, o.n_children_spawned])
        elif hasattr(o, "__dict__"):
            stack.extend(vars(o).values())
        if hasattr(type(o), "__slots__"):
            stack.extend(getattr(o, s) for s in type(o).__slots__ if hasattr(o, s))


def _candidate_generators(obj):
    """Generators an attacker can build from the random-number state reachable from ``obj``."""
    for o in _reachable(obj):
        if isinstance(o, np.random.SeedSequence) and o.entropy is not None:
            key = tuple(o.spawn_key)
            for k in range(len(key) + 1):  # the sequence itself and each of its ancestors
                yield np.random.Generator(np.random.PCG64(
                    np.random.SeedSequence(o.entropy, spawn_key=key[:k])))
        if isinstance(o, np.random.BitGenerator):
            clone = type(o)()
            clone.state = o.state
            yield np.random.Generator(clone)


def _noise_rebuilt(rel, noise, gens) -> bool:
    # (coef − mean)/σ gives z back to a few roundings of |mean|/σ + |z| <= nμ/2 + 8: below 1e-14
    for g in gens:
        for _ in range(4):  # the noise may come after a few draws of other things
            if np.allclose(g.standard_normal(noise.shape), noise, rtol=0, atol=1e-12):
                return True
    return False


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("pipeline", ["ftp", "ptf"])
def test_pickled_release_does_not_give_back_its_noise(space_name, pipeline):
    space = SPACES[space_name]
    geom = space.at(GRID)
    X = _rng(6).standard_normal((N, GRID.size))
    rng = np.random.default_rng()  # OS entropy, as a release of real data should use
    rel = pickle.loads(pickle.dumps((dpfda.ftp if pipeline == "ftp" else dpfda.ptf)(
        X, GRID, space, RADIUS, MU, rng)))
    rel(np.array([0.123, 0.77]))  # draw some of the RKHS residual first: more state to attack
    if pipeline == "ftp":
        noise = (rel.coef - ftp_fit_mean(X, geom, RADIUS)[0]) / rel.noise_scale
    else:
        noise = (rel.noisy_means - ptf_clipped_mean(X, rel.clip)) / rel.noise_scale
    assert not _noise_rebuilt(rel, noise, _candidate_generators(rel))


def test_the_noise_rebuilding_attack_works_on_the_old_construction():
    """Negative control: a release holding ``rng.spawn(1)[0]`` (dpfda 0.1.0) gives its noise away."""
    space = SPACES["gaussian"]
    geom = space.at(GRID)
    X = _rng(7).standard_normal((N, GRID.size))
    rng = np.random.default_rng()
    old_child = rng.spawn(1)[0]  # what 0.1.0 stored in Release._residual_rng
    rel = dpfda.ftp(X, GRID, space, RADIUS, MU, rng)
    rel._residual_rng = old_child
    leaky = pickle.loads(pickle.dumps(rel))
    noise = (leaky.coef - ftp_fit_mean(X, geom, RADIUS)[0]) / leaky.noise_scale
    assert _noise_rebuilt(leaky, noise, _candidate_generators(leaky))


def test_secure_release_residual_is_not_tied_to_rng():
    pytest.importorskip("opendp")
    space = SPACES["gaussian"]
    X = _rng(8).standard_normal((N, GRID.size))
    a = dpfda.ftp(X, GRID, space, RADIUS, MU, np.random.default_rng(0), secure=True)
    b = dpfda.ftp(X, GRID, space, RADIUS, MU, np.random.default_rng(0), secure=True)
    t = np.array([0.05, 0.51])
    # the same rng, yet independent residual streams (from the OS's secure source)
    # independent draws of sd about 0.1 agree to 1e-8 with probability about 1e-7
    assert not np.allclose(a(t) - a.geometry.evaluate(a.coef, t), b(t) - b.geometry.evaluate(b.coef, t),
                           rtol=0, atol=1e-8)


def test_seeded_release_residual_is_reproducible():
    space = SPACES["gaussian"]
    X = _rng(9).standard_normal((N, GRID.size))
    t = np.array([0.05, 0.51])
    a = dpfda.ftp(X, GRID, space, RADIUS, MU, np.random.default_rng(3))
    b = dpfda.ftp(X, GRID, space, RADIUS, MU, np.random.default_rng(3))
    assert np.array_equal(a(t), b(t))
    # and the residual stream does not advance rng: the noise after it is unchanged
    rng = np.random.default_rng(3)
    dpfda.ftp(X, GRID, space, RADIUS, MU, rng)
    ref = np.random.default_rng(3)
    ref.standard_normal(a.coef.shape)
    assert rng.standard_normal() == ref.standard_normal()


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("pipeline", ["ftp", "ptf"])
@pytest.mark.parametrize("reps", [None, 3])
def test_no_array_in_a_release_has_an_axis_of_length_n(space_name, pipeline, reps):
    space = SPACES[space_name]
    shape = (N, GRID.size) if reps is None else (reps, N, GRID.size)
    X = _rng(10).standard_normal(shape) * 5  # many curves outside the ball
    rel = (dpfda.ftp if pipeline == "ftp" else dpfda.ptf)(X, GRID, space, RADIUS, MU, _rng(11))
    rel(np.array([0.2, 0.4, 0.6, 0.8, 0.9]))  # five new points: not n either
    arrays = [o for o in _reachable(pickle.loads(pickle.dumps(rel))) if isinstance(o, np.ndarray)]
    assert arrays, "the walk found no arrays at all"
    for a in arrays:
        assert N not in a.shape, a.shape
    assert rel.active is None if pipeline == "ftp" else np.shape(rel.active) == rel.shape


# ---------------------------------------------------------------------------
# The audit sees the floating-point leak, and its absence
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("space_name", ["legendre", "gaussian"])
def test_audit_at_scale_1e17_real_ftp_passes_naive_ftp_fails(space_name):
    space = SPACES[space_name]
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, factor=1e17)
    real = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    res = A.audit(real, X0, X1, draws=20_000, rng=_rng(12, len(space_name)))
    assert not res.violation and res.mu_lower <= MU
    naive = broken.broken_ftp_cancellation(GRID, space, RADIUS, MU, n=N)
    # same mechanism in exact arithmetic: at scale 1 the naive mean is right ...
    Y0, Y1 = A.worst_case_pair(GRID, space, RADIUS, N, factor=1.0)
    assert A.pair_mu(naive, Y0, Y1) == pytest.approx(MU, rel=cancelling_mean_rtol(space.at(GRID), N), abs=0)
    # ... at 1e17 it cancels, and the audit proves the violation
    assert A.pair_mu(naive, X0, X1) > 5 * MU
    bad = A.audit(naive, X0, X1, draws=2_000, rng=_rng(13, len(space_name)))
    assert bad.violation


def test_releases_through_the_audit_helper_carry_no_flags():
    for build in (A.ftp_mechanism, broken.broken_ftp_grid_norm, broken.broken_ftp_no_radius,
                  broken.broken_ftp_cancellation):
        kw = {"norm": "sup"} if build is broken.broken_ftp_grid_norm else {}
        mech = build(GRID, SPACES["legendre"], RADIUS, MU, n=N, **kw)
        X0, _ = A.worst_case_pair(GRID, SPACES["legendre"], RADIUS, N)
        assert mech(X0, _rng(14)).active is None


# ---------------------------------------------------------------------------
# The noise scale: finite, normal, within range, never erased by rounding
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n, radius, mu, culprit", [
    (10, 1.0, 1e308, "mu"),            # n·μ overflows: σ would be 0
    (10, 1.0, 5e-324, "mu"),           # subnormal μ: σ would be inf
    (10, 1e308, 1.0, "radius"),        # σ would be inf
    (10, 1e-300, 1e10, "underflows"),  # σ below the normal range
    (10**7, 1.0, 1e6, "2\\^-40"),      # σ below the resolution of the mean
    (1, 2.0**960, 1e-20, "too large"),
])
def test_noise_scale_guard(n, radius, mu, culprit):
    with pytest.raises(ValueError, match=culprit) as info:
        ftp_sigma(n, radius, mu)
    assert "mu" in str(info.value) and "radius" in str(info.value)
    clip = np.full(GRID.size, radius)
    with pytest.raises(ValueError, match="mu|clip|2\\^960"):
        ptf_sigmas(n, clip, mu)


def test_noise_scale_in_range_is_the_plain_formula_bit_for_bit():
    rng = _rng(15)
    for _ in range(200):
        n = int(rng.integers(1, 10**6))
        radius, mu = 10.0 ** rng.uniform(-3, 3), 10.0 ** rng.uniform(-3, 2)
        assert ftp_sigma(n, radius, mu) == 2.0 * radius / (n * mu)
        c = 10.0 ** rng.uniform(-3, 3, size=7)
        assert np.array_equal(ptf_sigmas(n, c, mu), 2.0 * c / n * np.sqrt(7) / mu)
    assert ftp_sigma(3, 2.0**900, 1.0) == 2.0**901 / 3
    assert NOISE_RESOLUTION == 2.0**-40 and PARAM_MAX == 2.0**960


def test_pipelines_refuse_bad_calibration_before_touching_data():
    X = np.full((N, GRID.size), np.nan)  # never looked at: the calibration fails first
    space = SPACES["legendre"]
    with pytest.raises(ValueError, match="mu"):
        dpfda.ftp(np.zeros((N, GRID.size)), GRID, space, RADIUS, 1e308, _rng(16))
    with pytest.raises(ValueError, match="mu"):
        dpfda.ptf(np.zeros((N, GRID.size)), GRID, space, RADIUS, 5e-324, _rng(16))
    with pytest.raises(ValueError, match="X contains NaN"):
        dpfda.ftp(X, GRID, space, RADIUS, MU, _rng(16))
    # a radius beyond 2^960 is named as the culprit (not the default clip derived from it)
    with pytest.raises(ValueError, match="radius must be at most"):
        dpfda.ptf(np.zeros((N, GRID.size)), GRID, space, 1e308, MU, _rng(16))


# ---------------------------------------------------------------------------
# Named errors for the remaining bad inputs
# ---------------------------------------------------------------------------


def test_huge_weights_are_the_same_fit_as_unit_weights():
    Phi = SPACES["legendre"].at(GRID).Phi
    X = _rng(17).standard_normal((N, GRID.size)) * 3
    ref = dpfda.fit_ball(X, Phi, RADIUS)
    for w in (1e308, np.full(GRID.size, 1e308), 1e-300):
        fit = dpfda.fit_ball(X, Phi, RADIUS, weights=w)
        # weights scaled by powers of two to mantissas other than 1: two fits, each to fit_rtol·||θ||, with
        # the data's size off the span (data_ratio = ||x||/(||A||^½·||θ||))
        A_ = Phi.T @ Phi
        ratio = np.max(np.linalg.norm(X, axis=-1) / np.linalg.norm(ref.coef, axis=-1)) / np.sqrt(np.linalg.norm(A_, 2))
        atol = 2 * fit_rtol(A_, GRID.size, data_ratio=ratio) * np.linalg.norm(ref.coef, axis=-1).max()
        np.testing.assert_allclose(fit.coef, ref.coef, rtol=0, atol=atol)
        assert np.array_equal(fit.active, ref.active)
    rel = dpfda.ptf(X, GRID, SPACES["legendre"], RADIUS, MU, _rng(18), weights=1e308)
    assert np.all(np.isfinite(rel.coef)) and rel.weights.shape == (GRID.size,)


def test_scalar_weights_equal_a_constant_vector():
    X = _rng(19).standard_normal((N, GRID.size))
    space = SPACES["gaussian"]
    a = dpfda.ptf(X, GRID, space, RADIUS, MU, _rng(20), weights=2.5)
    b = dpfda.ptf(X, GRID, space, RADIUS, MU, _rng(20), weights=np.full(GRID.size, 2.5))
    assert np.array_equal(a.coef, b.coef)


def test_weights_over_too_many_orders_of_magnitude():
    w = np.ones(GRID.size)
    w[0] = 1e-300
    w[1] = 1e300
    with pytest.raises(ValueError, match="weights span too many orders"):
        dpfda.fit_ball(np.zeros((2, GRID.size)), SPACES["legendre"].at(GRID).Phi, 1.0, weights=w)


@pytest.mark.parametrize("bad", ["1.0", np.array(["1"] * 10), np.array([1j] * 10),
                                 np.array([object()] * 10), [None] * 10])
@pytest.mark.parametrize("arg", ["clip", "weights"])
def test_ptf_rejects_non_real_clip_and_weights(bad, arg):
    X = np.zeros((N, GRID.size))
    with pytest.raises(TypeError, match=arg):
        dpfda.ptf(X, GRID, SPACES["legendre"], RADIUS, MU, _rng(21), **{arg: bad})


@pytest.mark.parametrize("X, Phi, radius, weights, name", [
    (np.array([["a"] * 3]), np.eye(3), 1.0, None, "X"),
    (np.ones((2, 3), complex), np.eye(3), 1.0, None, "X"),
    (np.array([[object()] * 3]), np.eye(3), 1.0, None, "X"),
    (np.ones((2, 3)), "abc", 1.0, None, "Phi"),
    (np.ones((2, 3)), np.eye(3) * 1j, 1.0, None, "Phi"),
    (np.ones((2, 3)), np.eye(3), "1", None, "radius"),
    (np.ones((2, 3)), np.eye(3), 1.0, "abc", "weights"),
])
def test_fit_ball_rejects_non_real_input(X, Phi, radius, weights, name):
    with pytest.raises(TypeError, match=name):
        dpfda.fit_ball(X, Phi, radius, weights=weights)


def test_gaussian_kernel_bandwidth_out_of_range():
    for rho in (1e300, 1e-300):
        with pytest.raises(ValueError, match="rho must lie in"):
            dpfda.KernelSpace(dpfda.gaussian_kernel(rho)).at(GRID)


def test_epsilon_from_mu_beyond_the_float_range():
    with pytest.raises(ValueError, match="mu=1e\\+300 is too large"):
        dpfda.epsilon_from_mu(1e300, 1e-10)
    assert np.isfinite(dpfda.epsilon_from_mu(1e150, 1e-10))


def test_ptf_errors_name_mu_or_clip_not_x():
    X = _rng(22).standard_normal((N, GRID.size))
    space = SPACES["legendre"]
    for kw, culprit in ((dict(mu=1e-320), "mu"), (dict(clip=1e300, mu=1e-300), "mu|clip"),
                        (dict(clip=1e300), "clip must be at most")):
        args = dict(mu=MU)
        args.update(kw)
        mu = args.pop("mu")
        with pytest.raises(ValueError, match=culprit) as info:
            dpfda.ptf(X, GRID, space, RADIUS, mu, _rng(23), **args)
        assert "X " not in str(info.value)


def test_secure_laplace_checks_its_map_and_adds_noise():
    pytest.importorskip("opendp")
    y = dpfda.laplace_mechanism(np.zeros(4000), 0.1, 1.0, None, secure=True)
    assert y.shape == (4000,) and np.all(np.isfinite(y))
    # Laplace(b = 0.1): mean absolute deviation b, within 5 standard errors (sd of |Y| is b)
    assert abs(np.mean(np.abs(y)) - 0.1) <= 5 * 0.1 / np.sqrt(4000)
    with pytest.raises(TypeError, match="secure"):
        dpfda.laplace_mechanism(np.zeros(3), 1.0, 1.0, _rng(24), secure="yes")
    with pytest.raises(TypeError, match="rng"):
        dpfda.laplace_mechanism(np.zeros(3), 1.0, 1.0, None)
    from dpfda.mechanisms.secure import laplace_release

    with pytest.raises(ValueError, match="privacy map"):
        laplace_release(np.zeros(3), 0.5, sensitivity=1.0, epsilon=1.0)
