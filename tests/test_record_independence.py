"""Each record moves only its own term: a curve's fit does not depend on the batch it is in.

The sensitivity argument of every mechanism (Theorem 6, Proposition 9, the designs) needs
each curve's map into the set C to be a function of that curve alone.  In floating point
that means *bit for bit*: a fit that lies on the sphere ||θ|| = B' in a direction set by
rounding (a curve of huge values off span(Φ)) moves by up to 2B' if another record can
change how it is rounded — by changing the shape of a BLAS product it is computed in.

* Property tests (hypothesis, deterministic): for every space (Legendre, Fourier, the
  Gaussian and Brownian kernels, and every family of the registry ``tests/_spaces.py``,
  Matérn included) and every fitting path — the ball fit with and without
  weights, the unconstrained fit, FTP's summary, the designs' parts, each subject on its
  own points, the projection onto a ball, the private radius's fitted norms — a row's
  result computed alone equals, bit for bit (compared as ``uint64``), its result inside
  random batches of other rows: huge (up to 1.8e308), subnormal, off-span, "odd" (whose
  product with the design overflows), zero and repeated rows, and subjects grouped with
  others on the same points.
* The two constructions that released more than μ (an odd record deciding whether a victim
  off the span is recomputed alone or with it; a subject moving between two victims' point
  sets), end to end through the API — numpy and OpenDP noise, FTP, the ellipsoid design,
  ``Curves`` on their own points — and through ``python -m dpfda release``: the realised μ of
  the pair stays at most μ(1 + 10⁻⁹).  Before the fits were made per record, these pairs
  gave 1.95–2.0 on a common grid (Legendre H_2) and 1.45–1.79 on own points, at μ = 1.

The tolerance 10⁻⁹ is the package's calibration bound: σ keeps the paper's formula while the
proven rounding excess of the mean is below 2⁻³¹ (:mod:`dpfda.maths.summation`), so pair μ
<= μ(1 + 2⁻³¹ + 4u); realised μ read off two releases under one noise stream adds the
rounding of centre + σZ, below 4u(B'/σ + max|Z|) ≈ 10⁻¹² of σ at n = 1002.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpfda
from dpfda import cli
from dpfda.cli._release import space_option
from dpfda.maths.fitting import BallLeastSquares
from dpfda.maths.summation import fixed_point_ball_mean, fixed_point_mean
from dpfda.mechanisms import secure as S
from dpfda.mechanisms.irregular import irregular_fit_mean
from dpfda.mechanisms.radius import fitted_norms
from dpfda.trust.audit import pair_mu
from dpfda_book.mechanisms.broken import broken_ftp_batched_fits
from dpfda_book.mechanisms.designs import Design
from dpfda_book.mechanisms.projections import project_ball

from _spaces import with_grids

TOL = 1e-9  # realised μ may exceed μ by this relative amount, never more: σ covers the summaries'
# rounding, so pair μ < μ(1 + 2⁻³¹ + 4u) (dpfda.maths.summation, ROUNDING_FREE)
BIG = float(np.finfo(float).max)  # 1.7976931348623157e308
PROPS = settings(derandomize=True, database=None, deadline=None, max_examples=80,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def bits(a) -> np.ndarray:
    """The float64 bits of ``a``: equal bits, not equal values (-0.0 and NaN payloads count)."""
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64)).view(np.uint64)


def same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.array_equal(bits(a), bits(b)))


# ---------------------------------------------------------------------------
# Spaces and rows
# ---------------------------------------------------------------------------


@st.composite
def geometries(draw):
    """(space, grid) for Legendre, Fourier, Gaussian-kernel and Brownian-kernel spaces."""
    kind = draw(st.sampled_from(["legendre", "fourier", "gaussian", "brownian"]))
    if kind in ("legendre", "fourier"):
        m = draw(st.integers(1, 8))
        space = dpfda.LegendreSpace(m) if kind == "legendre" else dpfda.FourierSpace(m)
        T = draw(st.integers(m + 1, m + 25))
        cells = draw(st.lists(st.integers(5, 995), min_size=T, max_size=T))
        grid = (np.arange(T) + np.asarray(cells, dtype=float) / 1000.0) / T
    elif kind == "gaussian":
        space = dpfda.KernelSpace(dpfda.gaussian_kernel(draw(st.sampled_from([0.2, 0.3, 0.5]))))
        T = draw(st.integers(2, 7))
        grid = dpfda.uniform_grid(T)
    else:
        space = dpfda.KernelSpace(dpfda.brownian_kernel())
        T = draw(st.integers(1, 16))
        grid = np.sort(np.random.default_rng(T).choice(np.arange(1, 201) / 200.0, size=T, replace=False))
    return space, grid


KINDS = ("normal", "huge", "odd", "offspan", "subnormal", "tiny", "zero", "repeat", "inside")


def make_row(kind: str, Phi: np.ndarray, rng: np.random.Generator, victim: np.ndarray | None = None,
             radius: float = 1.0) -> np.ndarray:
    """One curve on the grid of the design Phi (T, d), of the given kind."""
    T, d = Phi.shape
    if kind == "repeat" and victim is not None:
        return victim.copy()
    if kind in ("normal", "repeat"):
        x = Phi @ rng.standard_normal(d) + rng.standard_normal(T)
        return x * 10.0 ** rng.uniform(-300, 300)
    if kind == "huge":  # random signs, values up to the largest double
        return rng.choice([-1.0, 1.0], T) * rng.uniform(0.5, 1.0, T) * BIG
    if kind == "odd":  # in span(Φ), at the top of the range: its product with the design overflows
        x = Phi @ rng.standard_normal(d)
        return x / np.max(np.abs(x)) * BIG * rng.uniform(0.9, 1.0)
    if kind == "offspan":  # off span(Φ): its least-squares fit is made of rounding error
        Q, _ = np.linalg.qr(Phi)
        r = rng.standard_normal(T)
        x = r - Q @ (Q.T @ r)
        top = np.max(np.abs(x))
        if top == 0:
            return np.zeros(T)
        return np.minimum(x / top, 1.0) * min(10.0 ** rng.uniform(15, 309), BIG)
    if kind == "subnormal":
        return rng.integers(-9, 10, T) * 5e-324
    if kind == "tiny":
        return (Phi @ rng.standard_normal(d)) * 1e-300
    if kind == "inside":  # inside the ball: the unconstrained fit is the fit
        return Phi @ (rng.uniform(-0.3, 0.3, d) * radius / max(d, 1))
    return np.zeros(T)


@st.composite
def batches(draw, Phi, *, max_rows=24):
    """(victim, batch (k, T), position of the victim in the batch)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    victim_kind = draw(st.sampled_from(KINDS[:-3] + ("inside",)))
    victim = make_row(victim_kind, Phi, rng)
    others = draw(st.lists(st.sampled_from(KINDS), min_size=0, max_size=max_rows))
    rows = [make_row(k, Phi, rng, victim) for k in others]
    where = draw(st.integers(0, len(rows)))
    rows.insert(where, victim)
    return victim, np.stack(rows), where


# ---------------------------------------------------------------------------
# Property tests: alone == in any batch, bit for bit
# ---------------------------------------------------------------------------


@PROPS
@given(geo=geometries(), data=st.data(), weighted=st.booleans(), log_radius=st.floats(-3, 3))
def test_a_rows_ball_fit_alone_is_its_fit_in_any_batch(geo, data, weighted, log_radius):
    space, grid = geo
    Phi = space.at(grid).Phi
    w = np.random.default_rng(grid.size).lognormal(0.0, 1.0, grid.size) if weighted else None
    solver = BallLeastSquares(Phi, w)
    radius = 10.0**log_radius
    victim, X, i = data.draw(batches(Phi))
    alone = solver.solve(victim, radius)
    alone2 = solver.solve(victim[None], radius)
    batch = solver.solve(X, radius)
    for got in (alone2, batch):
        row = 0 if got is alone2 else i
        assert same_bits(got.coef[row], alone.coef), (got.coef[row], alone.coef)
        assert same_bits(got.multiplier[row], alone.multiplier)
        assert bool(got.active[row]) == bool(alone.active)
    # a leading repetition axis, and the rows in reverse order, change nothing either
    stacked = solver.solve(np.stack([X, X[::-1]]), radius)
    assert same_bits(stacked.coef[0, i], alone.coef) and same_bits(stacked.coef[1, len(X) - 1 - i], alone.coef)


REGISTERED = with_grids("uniform20", "right10", "uniform8")  # every family of dpfda, new ones included


@pytest.mark.parametrize("case", sorted(REGISTERED))
@settings(derandomize=True, database=None, deadline=None, max_examples=25,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_registered_space_fits_a_row_alone_as_in_any_batch(case, data):
    space, grid = REGISTERED[case]
    solver = BallLeastSquares(space.at(grid).Phi)
    victim, X, i = data.draw(batches(solver.Phi))
    alone, batch = solver.solve(victim[None], 1.0), solver.solve(X, 1.0)
    assert same_bits(batch.coef[i], alone.coef[0]) and same_bits(batch.multiplier[i], alone.multiplier[0])


@PROPS
@given(geo=geometries(), data=st.data())
def test_a_rows_unconstrained_fit_alone_is_its_fit_in_any_batch(geo, data):
    space, grid = geo
    solver = BallLeastSquares(space.at(grid).Phi)
    victim, X, i = data.draw(batches(solver.Phi))
    with np.errstate(over="ignore", invalid="ignore"):
        alone, batch = solver.unconstrained(victim[None])[0], solver.unconstrained(X)[i]
    assert same_bits(batch, alone)


@PROPS
@given(geo=geometries(), data=st.data(), log_radius=st.floats(-3, 3))
def test_ftp_summary_is_the_exact_mean_of_fits_each_computed_alone(geo, data, log_radius):
    """The release's summary (numpy and OpenDP paths noise it) from per-record fits alone."""
    space, grid = geo
    geom = space.at(grid)
    radius = 10.0**log_radius
    _, X, _ = data.draw(batches(geom.Phi))
    solver = BallLeastSquares(geom.Phi)
    alone = np.stack([solver.solve(x[None], radius).coef[0] for x in X])
    expected = fixed_point_ball_mean(alone, np.eye(geom.dim), radius)
    mech = dpfda.ftp_mechanism(grid, space, radius, 1.0)
    assert same_bits(mech.summary(X), expected)
    # the ellipsoid design with FTP's noise shape adds its noise to the same mean of fits
    if isinstance(space, (dpfda.LegendreSpace, dpfda.KernelSpace)) and len(X) > 0:
        des = Design(grid, space, radius, region="ellipsoid", noise="ellipsoid")
        assert same_bits(des.parts(X)["ellipsoid_coef"], expected)


@PROPS
@given(geo=geometries(), data=st.data())
def test_design_parts_are_means_of_maps_each_computed_alone(geo, data):
    space, grid = geo
    if not isinstance(space, (dpfda.LegendreSpace, dpfda.KernelSpace)):
        space = dpfda.LegendreSpace(space.m)  # designs take Legendre and kernel spaces
    geom = space.at(grid)
    _, X, _ = data.draw(batches(geom.Phi))
    radius = 1.0
    solver = BallLeastSquares(geom.Phi)
    fits = np.stack([solver.solve(x[None], radius).coef[0] for x in X])
    # the parts every design is made of (a mix is (1 − λ)·box + λ·ellipsoid of these)
    ell = Design(grid, space, radius, region="ellipsoid", noise="isotropic")
    assert same_bits(ell.parts(X)["ellipsoid_coef"], fixed_point_ball_mean(fits, np.eye(geom.dim), radius))
    box = Design(grid, space, radius, region="box", noise="diagonal")
    assert same_bits(box.parts(X)["box"], fixed_point_mean(np.clip(X, -box.clip, box.clip), box.clip))
    # the per-curve map itself, row by row
    with np.errstate(over="ignore", invalid="ignore"):
        assert same_bits(ell.project(X), np.stack([ell.project(x[None, None])[0, 0] for x in X]))
    ball = Design(grid, space, radius, region="ball", noise="isotropic")
    alone = np.stack([project_ball(x[None], ball.ball_radius)[0] for x in X])
    assert same_bits(project_ball(X, ball.ball_radius), alone)
    assert same_bits(ball.parts(X)[("ball", ball.ball_radius)], fixed_point_mean(alone, ball.ball_radius))


@PROPS
@given(data=st.data(), m=st.integers(1, 6), fourier=st.booleans(), log_radius=st.floats(-3, 3))
def test_own_points_fits_do_not_depend_on_who_shares_the_points(data, m, fourier, log_radius):
    """Subjects on shared point sets (fitted in groups) against each fitted alone."""
    space = dpfda.FourierSpace(m) if fourier else dpfda.LegendreSpace(m)
    radius = 10.0**log_radius
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    sets = [np.sort(rng.choice(np.arange(1, 400) / 400.0, size=int(rng.integers(max(m - 1, 1), m + 12)),
                               replace=False)) for _ in range(data.draw(st.integers(1, 3)))]
    kinds = data.draw(st.lists(st.sampled_from(KINDS[:-1]), min_size=1, max_size=12))
    where = data.draw(st.lists(st.integers(0, len(sets) - 1), min_size=len(kinds), max_size=len(kinds)))
    points, values, alone = [], [], []
    for kind, s in zip(kinds, where):
        t = sets[s]
        Phi = space.basis(t)
        x = make_row(kind, Phi, rng)
        points.append(t)
        values.append(x)
        full_rank = t.size >= m and np.linalg.eigvalsh(Phi.T @ Phi)[0] > 1e-12 * max(
            np.linalg.eigvalsh(Phi.T @ Phi)[-1], 1.0)
        alone.append(BallLeastSquares(Phi).solve(x[None], radius).coef[0] if full_rank else np.zeros(m))
    curves = dpfda.Curves(values, points, domain=(0.0, 1.0))
    expected = fixed_point_ball_mean(np.stack(alone), np.eye(m), radius)
    assert same_bits(irregular_fit_mean(curves, space, radius), expected)


@PROPS
@given(geo=geometries(), data=st.data())
def test_private_radius_norms_are_per_record(geo, data):
    space, grid = geo
    if not isinstance(space, (dpfda.LegendreSpace, dpfda.FourierSpace)):
        space = dpfda.LegendreSpace(1)
    victim, X, i = data.draw(batches(space.at(grid).Phi))
    assert same_bits(fitted_norms(X, grid, space, 2.0)[i], fitted_norms(victim[None], grid, space, 2.0)[0])


# ---------------------------------------------------------------------------
# The constructions, end to end
# ---------------------------------------------------------------------------


def _odd(geom, u):
    """An in-span curve in direction u whose product with the design overflows (an odd record)."""
    c = geom.values(u)
    return c / np.max(np.abs(c)) * BIG * 0.999


def _offspan(geom, rng):
    Q, _ = np.linalg.qr(geom.Phi)
    r = rng.standard_normal(geom.T)
    v = r - Q @ (Q.T @ r)
    return v / np.max(np.abs(v)) * BIG * 0.999


def _common_grid_pair(space, T, n, *, candidates=60, seed=0, grid=None, aim=None):
    """The common-grid construction: (X0, X1) of n curves, worst over the candidate victims.

    A victim v off span(Φ) at the top of the float range; the other record is odd in X0
    (its product with the design overflows) and ordinary in X1.  The victim's shift between
    the two is measured through FTP's summary (n·ΔS minus the other record's own change)
    and the other record is chosen along it, so that both changes add up.  A per-record fit
    has no shift, and the pair's μ is then exactly μ.  ``grid``: T points (default: evenly
    spaced from 0 to 1, both ends included); ``aim``: the mechanism whose shift is measured
    (default: dpfda's FTP at B' = 1, μ = 1; the old batched fits to build the old code's worst pair).
    """
    grid = dpfda.uniform_grid(T) if grid is None else np.asarray(grid, dtype=float)
    geom = space.at(grid)
    mech = dpfda.ftp_mechanism(grid, space, 1.0, 1.0) if aim is None else aim
    rng = np.random.default_rng(seed)
    u = np.ones(geom.dim) / np.sqrt(geom.dim)
    best = (-1.0, None)
    for _ in range(candidates):
        v = _offspan(geom, rng)
        with_odd = mech.summary(np.stack([v, _odd(geom, u)]))
        with_ordinary = mech.summary(np.stack([v, geom.values(-10 * u)]))
        shift = 2 * (with_odd - with_ordinary) - 2 * u  # the victim's move, the other's taken out
        size = float(np.linalg.norm(shift))
        if size > best[0]:
            best = (size, v, shift)
    _, v, shift = best
    h = shift / np.linalg.norm(shift) if np.linalg.norm(shift) > 1e-6 else u
    X0 = np.zeros((n, T))
    X0[0], X0[1] = v, _odd(geom, h)
    X1 = X0.copy()
    X1[1] = geom.values(-10 * h)
    return grid, X0, X1


def _own_points_curves(space, n, *, candidates=200, seed=2):
    """The own-points construction: Curves (D0, D1) of n subjects.

    Victims vA on points A and vB on points B, off the span of their designs and large
    (values 1e20, fits of norm 1 made of rounding error); a third subject sits on A in D0
    and on B in D1, with its fit chosen along the victims' total shift; the others are zero
    curves on points of their own.
    """
    rng = np.random.default_rng(seed)
    A, B = np.sort(rng.uniform(0, 1, 20)), np.sort(rng.uniform(0, 1, 23))
    PA, PB = space.basis(A), space.basis(B)
    one = np.ones(space.m) / np.sqrt(space.m)

    def victim(Phi):
        Q, _ = np.linalg.qr(Phi)
        solver, best = BallLeastSquares(Phi), (-1.0, None, None)
        for _ in range(candidates):
            r = rng.standard_normal(Phi.shape[0])
            v = (r - Q @ (Q.T @ r)) * 1e20
            a = solver.solve(v[None], 1.0).coef[0]
            b = solver.solve(np.stack([v, Phi @ one]), 1.0).coef[0]
            if np.linalg.norm(b - a) > best[0]:
                best = (float(np.linalg.norm(b - a)), v, b - a)
        return best[1], best[2]

    vA, sA = victim(PA)
    vB, sB = victim(PB)
    shift = sB - sA  # D0: vA grouped, vB alone; D1: vA alone, vB grouped
    h = shift / np.linalg.norm(shift) if np.linalg.norm(shift) > 1e-6 else one
    rest_t = [np.array([0.5 + 0.001 * k]) for k in range(n - 3)]
    rest_x = [np.zeros(1)] * (n - 3)

    def curves(on_a):
        pts = [A, B, A if on_a else B] + rest_t
        vals = [vA, vB, PA @ (-10 * h) if on_a else PB @ (10 * h)] + rest_x
        return dpfda.Curves(vals, pts, domain=(0.0, 1.0))

    return curves(True), curves(False)


def _opendp_vectors(release):
    """The vectors handed to OpenDP by two calls of ``release`` (numpy noise patched out)."""
    calls = []

    def fake(values, scale, sensitivity, mu):
        calls.append((np.array(values, dtype=float), float(scale), float(sensitivity), float(mu)))
        return np.array(values, dtype=float)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S, "gaussian_release", fake)
        release()
    return calls


def _realised(v0, v1, scale):
    return float(np.linalg.norm((np.asarray(v1) - np.asarray(v0)) / scale))


@pytest.mark.parametrize("space_name", ["legendre:2", "legendre:4", "fourier:5"])
@pytest.mark.parametrize("n", [2, 1002])
def test_an_odd_record_cannot_move_a_victims_fit_through_the_api(space_name, n):
    space = space_option(space_name)
    grid, X0, X1 = _common_grid_pair(space, 50, n)
    mu = 1.0
    # numpy noise: one noise stream, so the releases differ by the summaries' difference
    r0 = dpfda.ftp(X0, grid, space, 1.0, mu, np.random.default_rng(7))
    r1 = dpfda.ftp(X1, grid, space, 1.0, mu, np.random.default_rng(7))
    assert _realised(r0.coef, r1.coef, r0.noise_scale) <= mu * (1 + TOL)
    # OpenDP noise: the vectors OpenDP is handed, against the sensitivity it is told
    (v0, _, sens, _), = _opendp_vectors(lambda: dpfda.ftp(X0, grid, space, 1.0, mu, secure=True))
    (v1, *_), = _opendp_vectors(lambda: dpfda.ftp(X1, grid, space, 1.0, mu, secure=True))
    assert mu * _realised(v0, v1, sens) <= mu * (1 + TOL)
    # a Mechanism, and the ellipsoid design with FTP's noise shape
    mech = dpfda.ftp_mechanism(grid, space, 1.0, mu, n=n)
    assert _realised(mech.summary(X0), mech.summary(X1), mech.sigma(n)) <= mu * (1 + TOL)
    if isinstance(space, dpfda.LegendreSpace):
        des = Design(grid, space, 1.0, region="ellipsoid", noise="ellipsoid").mechanism(n, mu)
        assert _realised(des.summary(X0), des.summary(X1), des.sigma(n)) <= mu * (1 + TOL)


@pytest.mark.parametrize("space_name", ["legendre:2", "legendre:4", "fourier:5"])
@pytest.mark.parametrize("n", [3, 23])
def test_a_subject_moving_between_point_sets_cannot_move_others_through_the_api(space_name, n):
    space = space_option(space_name)
    D0, D1 = _own_points_curves(space, n)
    mu = 1.0
    r0 = dpfda.ftp(D0, None, space, 1.0, mu, np.random.default_rng(5))
    r1 = dpfda.ftp(D1, None, space, 1.0, mu, np.random.default_rng(5))
    assert _realised(r0.coef, r1.coef, r0.noise_scale) <= mu * (1 + TOL)
    (v0, _, sens, _), = _opendp_vectors(lambda: dpfda.ftp(D0, None, space, 1.0, mu, secure=True))
    (v1, *_), = _opendp_vectors(lambda: dpfda.ftp(D1, None, space, 1.0, mu, secure=True))
    assert mu * _realised(v0, v1, sens) <= mu * (1 + TOL)


def _write_wide(path, grid, X):
    lines = [",".join(["subject"] + [repr(float(t)) for t in grid])]
    lines += [",".join([f"s{i}"] + [repr(float(v)) for v in row]) for i, row in enumerate(X)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_long(path, curves):
    lines = ["subject,point,value"]
    for i, (t, x) in enumerate(curves.subjects()):
        lines += [f"s{i},{float(a)!r},{float(b)!r}" for a, b in zip(t, x)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _cli_vector(tmp_path, name, args):
    out = tmp_path / f"{name}.json"
    got = _opendp_vectors(lambda: cli.main(["release", *map(str, args), "--out", str(out)]))
    assert json.loads(out.read_text())["mu"] == 1.0
    (v, scale, sens, mu), = got
    return v, sens


@pytest.mark.parametrize("space_name", ["legendre:2", "fourier:5"])
def test_the_common_grid_construction_through_the_command_line(tmp_path, space_name, capsys):
    space = space_option(space_name)
    # a periodic space's grid stops one step short of the period (the command refuses 0 and 1 as one instant)
    grid = np.arange(50) / 50 if space_name.startswith("fourier") else dpfda.uniform_grid(50)
    old = broken_ftp_batched_fits(grid, space, 1.0, 1.0, n=2)  # the old code, to aim the pair at
    grid, X0, X1 = _common_grid_pair(space, 50, 2, grid=grid, aim=old)
    assert pair_mu(old, X0, X1) > 1.2  # control: the pair is one the old code leaks on
    common = ["--id", "subject", "--space", space_name, "--radius", "1", "--mu", "1", "--domain", "0,1",
              "--grid", ",".join(repr(float(t)) for t in grid)]
    v0, sens = _cli_vector(tmp_path, "a", [_write_wide(tmp_path / "a.csv", grid, X0), *common])
    v1, _ = _cli_vector(tmp_path, "b", [_write_wide(tmp_path / "b.csv", grid, X1), *common])
    assert _realised(v0, v1, sens) <= 1.0 * (1 + TOL)


@pytest.mark.parametrize("space_name", ["legendre:4", "fourier:5"])
def test_the_own_points_construction_through_the_command_line(tmp_path, space_name, capsys):
    space = space_option(space_name)
    D0, D1 = _own_points_curves(space, 3)
    common = ["--layout", "long", "--id", "subject", "--space", space_name, "--radius", "1", "--mu", "1",
              "--domain", "0,1"]
    v0, sens = _cli_vector(tmp_path, "a", [_write_long(tmp_path / "a.csv", D0), *common])
    v1, _ = _cli_vector(tmp_path, "b", [_write_long(tmp_path / "b.csv", D1), *common])
    assert _realised(v0, v1, sens) <= 1.0 * (1 + TOL)
