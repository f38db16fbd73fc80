"""The design space between PTF and FTP (dpfda_book.mechanisms.designs, issue #14).

* the identities: FTP = projection onto E + noise N(0, σ²ΦΦᵀ), PTF = the box
  member, release for release under one noise stream, in both spaces;
* the projections are Euclidean projections (variational inequality);
* calibration: σ = 2R/(nμ) with R the radius of C in the noise metric, in
  closed form where there is one, never exceeded by any point of C, and
  attained by the explicit worst-case neighbours;
* every member audited at its worst-case neighbours (tight);
* adversarial magnitudes 1 … 1e300 and 1e-300 … 1e308, nothing per-person or
  random-number state in a release;
* the exact error where no constraint binds, against simulation;
* bad input.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import dpfda
from dpfda.maths.rounding import eigh_rtol, fit_rtol, pair_rtol, product_atol, solve_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import theory
from dpfda.trust import audit as A
from dpfda_book.mechanisms.designs import Design, below_ftp
from dpfda_book.report import evidence as ev
from dpfda_book.simulation.design_runs import simulate_designs
from dpfda_book.simulation.studies import Setting

from _spaces import on_grid

GRID = np.linspace(0.0, 1.0, 6)
RADIUS, MU, N = 1.1, 1.0, 7
SPACES = on_grid(GRID)  # every space of the registry (tests/_spaces.py) this grid takes
MEMBERS = {
    "box": dict(region="box"),
    "box-isotropic": dict(region="box", noise="isotropic"),
    "ball": dict(region="ball"),
    "ellipsoid": dict(region="ellipsoid"),
    "ellipsoid-isotropic": dict(region="ellipsoid", noise="isotropic"),
    "mix-0.3": dict(region="mix", lam=0.3),
    "mix-0.7": dict(region="mix", lam=0.7),
    "mix-0.5-diagonal": dict(region="mix", lam=0.5, noise="diagonal"),
    "ftp": dict(region="ellipsoid", noise="ellipsoid", fit="none"),
}
SCALES = [1.0, 1e3, 1e8, 1e16, 1e17, 1e50, 1e100, 1e200, 1e300]
TOL = 1e-9  # the proven excess of pair μ over μ (2⁻³¹ + 4u, dpfda.maths.summation): one-sided checks only


def _cover(des) -> float:
    """Relative error of a design's extent R, and the amount it is raised by: 10⁻¹⁰ plus the
    whitening's 8·T·κ²·2⁻⁵² (dpfda_book.mechanisms.whitening)."""
    return 1e-10 + des.whitening.rounding


def _attain_rtol(des) -> float:
    """How far a design's worst-case pair may be from its sensitivity: R raised by the cover and
    computed to within it (2·cover), the whitening's solve (κ(L)·γ_2T), FTP's fits and the means
    (pair_rtol)."""
    geom = des.geometry
    return (2 * _cover(des) + des.whitening.kappa * gamma(2 * geom.T)
            + pair_rtol(geom.Phi.T @ geom.Phi, geom.T, N))


def _ls_gain(geom, w) -> float:
    """||(ΦᵀWΦ)⁻¹ΦᵀW||₂: how much a weighted least-squares fit moves when its data move."""
    return float(np.linalg.norm(np.linalg.solve(geom.Phi.T @ (w[:, None] * geom.Phi), geom.Phi.T * w), 2))


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([20261201, *key]))


def _design(space_name, member, radius=RADIUS):
    return Design(GRID, SPACES[space_name], radius, **MEMBERS[member])


# ---------------------------------------------------------------------------
# The identities
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("space_name", SPACES)
def test_ftp_is_projection_onto_E_plus_E_shaped_noise(space_name):
    space = SPACES[space_name]
    X = 3.0 * _rng(1).standard_normal((4, 20, GRID.size))
    ftp = dpfda.ftp(X, GRID, space, RADIUS, MU, np.random.default_rng(5))
    des = Design(GRID, space, RADIUS, region="ellipsoid", noise="ellipsoid", fit="none")
    rel = des.mechanism(None, MU).release(X, np.random.default_rng(5))
    assert des.extent == RADIUS and des.sigma(20, MU) == ftp.noise_scale
    # the same θ̄ + σZ on both sides; Φ times it in products of other shapes (γ_d·|θ||Φ| each), and
    # the coordinates read back by a weighted least-squares solve (fit_rtol, and the values' rounding
    # times the solve's gain)
    geom = space.at(GRID)
    v_atol = 2 * product_atol(ftp.coef, geom.Phi.T).max()
    np.testing.assert_allclose(rel.noisy_means, ftp.values, rtol=0, atol=v_atol)
    A_w = geom.Phi.T @ (des.weights[:, None] * geom.Phi)
    c_atol = (fit_rtol(A_w, GRID.size) * np.linalg.norm(ftp.coef, axis=-1).max()
              + _ls_gain(geom, des.weights) * np.sqrt(GRID.size) * v_atol)
    np.testing.assert_allclose(rel.coef, ftp.coef, rtol=0, atol=c_atol)


@pytest.mark.parametrize("member", MEMBERS)
def test_public_weights_are_those_of_the_per_curve_map(member):
    """box_weight·clip(x) + ellipsoid_weight·(FTP's fit of x) is the summary's per-curve map."""
    des = _design("legendre", member)
    kw = MEMBERS[member]
    lam = {"box": 0.0, "ellipsoid": 1.0, "ball": None}.get(kw["region"], kw.get("lam"))
    expect = (0.0, 0.0) if lam is None else (1.0 - lam, lam)
    assert (des.box_weight, des.ellipsoid_weight) == expect
    assert des.whitening.M.shape[1] == GRID.size
    X = 3.0 * _rng(9).standard_normal((5, GRID.size))
    if kw["region"] != "ball":
        parts = des.parts(X)
        direct = sum(w * parts[k] for w, k in ((des.box_weight, "box"), (des.ellipsoid_weight, "ellipsoid")) if w)
        # the weights' products and their sum (γ₄ of the terms), and Φθ̄ formed twice (γ_d·√d·a_j·B' each)
        geom = des.geometry
        bound = gamma(4) * sum(np.abs(w * parts[k]) for w, k in ((des.box_weight, "box"),
                                                                  (des.ellipsoid_weight, "ellipsoid")) if w)
        bound = bound + des.ellipsoid_weight * 2 * gamma(geom.dim) * np.sqrt(geom.dim) * geom.eval_norm * RADIUS
        assert np.all(np.abs(des.grid_summary(X) - direct) <= bound)


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("member", [dict(region="box"), dict(region="mix", lam=0.0)])
def test_ptf_is_the_box_member(space_name, member):
    space = SPACES[space_name]
    X = 3.0 * _rng(2).standard_normal((4, 20, GRID.size))
    ptf = dpfda.ptf(X, GRID, space, RADIUS, MU, np.random.default_rng(6))
    des = Design(GRID, space, RADIUS, **member)
    rel = des.mechanism(None, MU).release(X, np.random.default_rng(6))
    # the same exact clipped means and normals; σ_j by two formulas ((T + 2)·2⁻⁵³ and a few roundings):
    # γ_{T+8} of |σz| + |mean| <= |noisy mean| + 2c_j; the fits of the two (W-norm non-expansive)
    # move by at most the solve's gain times that, plus fit_rtol each
    geom = space.at(GRID)
    dx = gamma(GRID.size + 8) * (np.abs(ptf.noisy_means) + 2 * ptf.clip)
    assert np.all(np.abs(rel.noisy_means - ptf.noisy_means) <= dx)
    w = np.asarray(ptf.weights, dtype=float)
    A_w = geom.Phi.T @ (w[:, None] * geom.Phi)
    ratio = np.max(np.linalg.norm(np.sqrt(w) * ptf.noisy_means, axis=-1)
                   / (np.sqrt(np.linalg.norm(A_w, 2)) * np.linalg.norm(ptf.coef, axis=-1)))
    c_atol = (2 * fit_rtol(A_w, GRID.size, data_ratio=ratio) * np.linalg.norm(ptf.coef, axis=-1).max()
              + _ls_gain(geom, w) * np.linalg.norm(dx, axis=-1).max())
    np.testing.assert_allclose(rel.coef, ptf.coef, rtol=0, atol=c_atol)


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("member", ["box", "ball", "ellipsoid"])
def test_maps_are_euclidean_projections(space_name, member):
    """p = P_C(x) iff (x − p)ᵀ(y − p) <= 0 for every y in C (tested on many y)."""
    des = _design(space_name, member)
    X = 4.0 * _rng(3).standard_normal((1, 50, GRID.size))
    P = des.project(X)[0]
    Y = des.project(5.0 * _rng(4).standard_normal((1, 400, GRID.size)))[0]  # points of C
    Y = np.vstack([Y, 0.5 * Y])
    gaps = np.einsum("ik,ijk->ij", X[0] - P, Y[None, :, :] - P[:, None, :])
    assert np.max(gaps) <= 1e-9 * max(1.0, np.max(np.abs(X)))


# ---------------------------------------------------------------------------
# Calibration and sensitivity
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("space_name", SPACES)
def test_closed_form_radii(space_name):
    space = SPACES[space_name]
    geom = space.at(GRID)
    T = GRID.size
    box = Design(GRID, space, RADIUS, region="box")
    # ||c/ℓ|| with c = B'·a_j, ℓ = a_j: (T + 2)·2⁻⁵³ (dpfda_book.mechanisms.whitening), c's product, √T
    assert box.extent == pytest.approx(RADIUS * np.sqrt(T), rel=gamma(T + 4), abs=0)
    assert box.sigma(N, MU) == pytest.approx(2 * RADIUS * np.sqrt(T) / (N * MU), rel=gamma(T + 8), abs=0)
    ell = Design(GRID, space, RADIUS, region="ellipsoid")
    assert ell.extent == RADIUS
    ball = Design(GRID, space, RADIUS, region="ball", ball_radius=2.0)
    # r·||M||₂ and B'·||MΦ||₂ by SVD (eigh_rtol(T) each), raised by the cover
    assert ball.extent == pytest.approx(2.0, rel=_cover(ball) + eigh_rtol(T), abs=0)
    iso = Design(GRID, space, RADIUS, region="ellipsoid", noise="isotropic")
    assert iso.extent == pytest.approx(RADIUS * np.linalg.norm(geom.Phi, 2), rel=_cover(iso) + 2 * eigh_rtol(T), abs=0)
    assert iso.sensitivity(N) == pytest.approx(2 * iso.extent / N, rel=gamma(4), abs=0)


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("member", MEMBERS)
def test_no_point_of_C_exceeds_R_and_neighbours_attain_it(space_name, member):
    des = _design(space_name, member)
    rng = _rng(5)
    # Points of C: images of random curves of many sizes, and C's extreme points.
    X = rng.standard_normal((1, 3000, GRID.size)) * np.geomspace(1e-2, 1e3, 3000)[:, None]
    pts = des.project(X)[0]
    assert np.max(np.linalg.norm(des.whiten(pts), axis=-1)) <= des.extent * (1 + TOL)
    X0, X1 = des.worst_case_pair(N)
    diff = des.whiten(des.grid_summary(X1) - des.grid_summary(X0))
    assert np.linalg.norm(diff) == pytest.approx(des.sensitivity(N), rel=_attain_rtol(des), abs=0)


GRID3 = np.linspace(0.0, 1.0, 3)


@pytest.mark.parametrize("space_name", on_grid(GRID3))
@pytest.mark.parametrize("lam", [0.2, 0.5, 0.9])
def test_mix_radius_against_a_dense_search(space_name, lam):
    """R of (1−λ)box + λE against max over sign vectors and many directions u."""
    grid = GRID3
    space = on_grid(GRID3)[space_name]
    des = Design(grid, space, RADIUS, region="mix", lam=lam)
    geom = space.at(grid)
    s = np.array([[a, b, c] for a in (1, -1) for b in (1, -1) for c in (1, -1)], float)
    u = _rng(6).standard_normal((20000, geom.dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    pts = ((1 - lam) * s * des.clip)[:, None, :] + lam * RADIUS * (u @ geom.Phi.T)[None]
    best = np.max(np.linalg.norm(des.whiten(pts), axis=-1))
    assert best <= des.extent * (1 + TOL)
    assert best >= des.extent * (1 - 1e-3)  # 20 000 random directions come within 1e-3 (a search, not rounding)


def test_sensitivity_scales_with_n_and_noise_with_mu():
    des = _design("gaussian", "mix-0.3")
    assert des.sensitivity(10) == pytest.approx(2 * des.extent / 10, rel=gamma(4), abs=0)  # a few roundings
    assert des.sigma(10, 0.5) == pytest.approx(2 * des.sigma(10, 1.0), rel=gamma(8), abs=0)


# ---------------------------------------------------------------------------
# Audits
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("member", MEMBERS)
def test_every_member_is_audited_tight_at_its_worst_case(space_name, member):
    des = _design(space_name, member)
    mech = des.mechanism(N, MU)
    X0, X1 = des.worst_case_pair(N)
    assert A.pair_mu(mech, X0, X1) == pytest.approx(MU, rel=_attain_rtol(des), abs=0)
    res = A.audit(mech, X0, X1, draws=20000, rng=_rng(7, len(member)))
    assert not res.violation
    assert res.mu_lower > 0.8 * MU  # tight: the bound reaches most of μ at 20 000 draws
    assert res.mu_pair == pytest.approx(MU, rel=_attain_rtol(des), abs=0)


# ---------------------------------------------------------------------------
# Adversarial magnitudes and what a release holds
# ---------------------------------------------------------------------------


def _pair_mu_of_releases(des, r0, r1):
    return np.linalg.norm(des.whiten(r1.noisy_means - r0.noisy_means), axis=-1) / r0.noise_scale


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("member", MEMBERS)
def test_worst_case_neighbours_at_every_scale(space_name, member):
    des = _design(space_name, member)
    for scale in SCALES:
        X0, X1 = des.worst_case_pair(N, scale=scale)
        r0 = des.mechanism(None, MU).release(X0, np.random.default_rng(11))
        r1 = des.mechanism(None, MU).release(X1, np.random.default_rng(11))
        mu = float(_pair_mu_of_releases(des, r0, r1))
        # plus the additions of the shared noise: γ₄ of |mean| + |σLz| in the whitened metric (κ(L)),
        # against the sensitivity: κ(L)·γ₄·(nμ/2 + √T + 9), ||z|| <= √T + 9 but with probability e^-40
        noise = des.whitening.kappa * gamma(4) * (N * MU / 2 + np.sqrt(GRID.size) + 9)
        assert mu == pytest.approx(MU, rel=_attain_rtol(des) + noise, abs=0), scale
        assert mu <= MU * (1 + TOL), scale
        assert np.all(np.isfinite(r0.coef)) and np.all(np.isfinite(r1.values))


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("member", MEMBERS)
def test_random_neighbours_of_mixed_magnitude(space_name, member):
    des = _design(space_name, member)
    rng = _rng(8)
    mags = 10.0 ** rng.uniform(-300, 308, size=(50, N, GRID.size))
    X0 = rng.choice([-1.0, 1.0], size=mags.shape) * mags
    X1 = X0.copy()
    X1[:, 0] = rng.choice([-1.0, 1.0], size=(50, GRID.size)) * 10.0 ** rng.uniform(-300, 308, (50, GRID.size))
    r0 = des.mechanism(None, MU).release(X0, np.random.default_rng(12))
    r1 = des.mechanism(None, MU).release(X1, np.random.default_rng(12))
    assert np.max(_pair_mu_of_releases(des, r0, r1)) <= MU * (1 + TOL)


@pytest.mark.parametrize("member", MEMBERS)
@pytest.mark.parametrize("reps", [None, 3])
def test_release_holds_nothing_per_person_and_no_random_state(member, reps):
    des = _design("gaussian", member)
    n = 11
    X = _rng(10).standard_normal((n, GRID.size) if reps is None else (reps, n, GRID.size))
    rel = des.mechanism(None, MU).release(X, _rng(13))
    blob = pickle.dumps(rel)
    assert b"PCG64" not in blob and b"Generator" not in blob
    for value in vars(rel).values():
        if isinstance(value, np.ndarray):
            assert n not in value.shape
    assert rel.method == "design" and rel.active is not None or des.fit == "none"


# ---------------------------------------------------------------------------
# Exact error where nothing binds
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["kernel", "legendre"])
def test_unconstrained_error_formula_matches_simulation(family):
    """Noiseless curves inside every set, n large enough that the final fit never binds."""
    kw = dict(T=8, radius_rule="1.1B") if family == "kernel" else dict(T=8, m=3, radius_rule="1.1B")
    setting = Setting(family=family, n=4096, mu=1.0, sigma0=0.0, **kw)
    specs = {k: MEMBERS[k] for k in ("box", "ellipsoid", "mix-0.3", "ftp")}
    out = simulate_designs(setting, specs, reps=400, seed=3)
    geom = setting.geometry()
    for name, spec in specs.items():
        err, free = out[name]["err"], out[name]["free"]
        assert free.all()
        des = Design(geom.grid, geom.space, setting.radius, **spec)
        sampling, privacy = des.unconstrained_error(setting.n, setting.mu, 0.0)
        assert sampling == 0.0
        se = err.std(ddof=1) / np.sqrt(err.size)
        assert abs(err.mean() - privacy) <= ev.bonferroni_z(len(specs)) * se, name


PAPER_SPECS = {"box": MEMBERS["box"], "mix-0.3": MEMBERS["mix-0.3"], "ftp": MEMBERS["ftp"],
               "ellipsoid": MEMBERS["ellipsoid"], "ball": MEMBERS["ball"]}
FLOOR_CASES = [("kernel", T, None) for T in (2, 8, 12)] + [("legendre", 20, 4), ("legendre", 12, 6)]


def _floor_geometry(family, T, m):
    rule = "log_n" if family == "kernel" else "sqrt_log_n"
    return Setting(family=family, n=4, T=T, m=m, mu=1.0, sigma0=1.0, radius_rule=rule).geometry()


@pytest.mark.parametrize("family, T, m", FLOOR_CASES)
def test_no_design_below_ftps_closed_form_within_the_rounding_bound(family, T, m):
    geom = _floor_geometry(family, T, m)
    designs = {k: Design(geom.grid, geom.space, RADIUS, **v) for k, v in PAPER_SPECS.items()}
    for n, sigma0 in ((4, 0.1), (99, 1.0), (4096, 10.0)):
        assert below_ftp(designs, n, MU, sigma0)[0] == []
        floor = theory.ftp_unconstrained_terms(geom, RADIUS, n, MU, sigma0)
        A = geom.Phi.T @ geom.Phi
        assert np.allclose(designs["ftp"].unconstrained_error(n, MU, sigma0), floor,
                           rtol=solve_rtol(A, geom.T + geom.dim), atol=0)


def test_the_rounding_bound_covers_the_deviation_seen_on_avx512():
    """On an AVX-512 machine (OpenBLAS's SkylakeX kernels) every design's sampling term on the
    Gaussian kernel with T = 12 was 1.0-1.4e-11 from its exact value, and a design fell
    3.8e-12 below FTP's computed term: the old rule (computed against computed, rtol 1e-12)
    failed there. The bound must exceed those deviations and still resolve a real deficit."""
    geom = _floor_geometry("kernel", 12, None)
    rtol = solve_rtol(geom.Phi.T @ geom.Phi, geom.T + geom.dim)
    assert 1.4e-11 < rtol < 1e-6


def test_a_design_below_ftp_fails_the_check(monkeypatch):
    """Negative control: a design whose noise is a relative 1e-5 too small is caught."""
    geom = _floor_geometry("kernel", 12, None)
    designs = {k: Design(geom.grid, geom.space, RADIUS, **v) for k, v in PAPER_SPECS.items()}
    assert below_ftp(designs, 99, MU, 1.0)[0] == []
    wrong = designs["ellipsoid"]
    sigma = type(wrong).sigma
    monkeypatch.setattr(type(wrong), "sigma",
                        lambda self, n, mu: sigma(self, n, mu) * (1 - 1e-5 * (self is wrong)))
    assert below_ftp(designs, 99, MU, 1.0)[0] == ["ellipsoid"]


def test_below_ftp_refuses_designs_of_different_spaces():
    geom = _floor_geometry("kernel", 8, None)
    other = _floor_geometry("legendre", 8, 3)
    designs = {"a": Design(geom.grid, geom.space, RADIUS, region="box"),
               "b": Design(other.grid, other.space, RADIUS, region="box")}
    with pytest.raises(ValueError, match="share one grid"):
        below_ftp(designs, 99, MU, 1.0)


def test_simulation_is_reproducible_and_keyed_by_seed():
    setting = Setting(family="kernel", n=16, T=4, mu=1.0, sigma0=1.0, radius_rule="log_n")
    specs = {"box": MEMBERS["box"], "mix": MEMBERS["mix-0.3"]}
    a = simulate_designs(setting, specs, reps=30, seed=1)
    b = simulate_designs(setting, specs, reps=30, seed=1)
    c = simulate_designs(setting, specs, reps=30, seed=2)
    assert np.array_equal(a["mix"]["err"], b["mix"]["err"])
    assert not np.array_equal(a["mix"]["err"], c["mix"]["err"])


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        (dict(region="cube"), ValueError, "region"),
        (dict(region="mix"), TypeError, "lam"),
        (dict(region="mix", lam=1.5), ValueError, "lam"),
        (dict(region="mix", lam="half"), TypeError, "lam"),
        (dict(region="box", lam=0.5), ValueError, "lam"),
        (dict(region="ball", clip=1.0), ValueError, "clip"),
        (dict(region="box", ball_radius=1.0), ValueError, "ball_radius"),
        (dict(region="ball", ball_radius=-1.0), ValueError, "radius"),
        (dict(region="box", noise="pink"), ValueError, "noise"),
        (dict(region="box", noise=-np.eye(6)), ValueError, "positive definite"),
        (dict(region="box", noise=np.eye(5)), ValueError, "noise"),
        (dict(region="box", fit="spline"), ValueError, "fit"),
        (dict(region="box", clip=[1.0, 2.0]), ValueError, "clip"),
        (dict(region="box", weights=0.0), ValueError, "weights"),
    ],
)
def test_bad_design_arguments(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        Design(GRID, SPACES["gaussian"], RADIUS, **kwargs)


def test_bad_space_radius_and_rank_deficient_noise():
    with pytest.raises(TypeError, match="space"):
        Design(GRID, "legendre", RADIUS)
    with pytest.raises(ValueError, match="radius"):
        Design(GRID, SPACES["gaussian"], 0.0, region="box")
    with pytest.raises(ValueError, match="rank"):
        Design(GRID, SPACES["legendre"], RADIUS, region="box", noise="ellipsoid")
    with pytest.raises(ValueError, match="2\\^\\(T-1\\)"):
        Design(np.linspace(0, 1, 24), dpfda.LegendreSpace(2), RADIUS, region="mix", lam=0.5)


def test_bad_release_arguments():
    des = _design("gaussian", "mix-0.3")
    X = np.zeros((5, GRID.size))
    with pytest.raises(TypeError, match="rng"):
        des.mechanism(None, MU).release(X, 42)
    with pytest.raises(ValueError, match="mu"):
        des.mechanism(None, -1.0).release(X, _rng(1))
    with pytest.raises(ValueError, match="NaN"):
        des.mechanism(None, MU).release(np.full((5, GRID.size), np.nan), _rng(1))
    with pytest.raises(ValueError, match="last axis"):
        des.mechanism(None, MU).release(np.zeros((5, 4)), _rng(1))
    with pytest.raises(ValueError, match="noise"):  # n·μ far too large: the noise-scale guard
        des.sigma(10**9, 1e6)
    with pytest.raises(ValueError, match="scale"):
        des.worst_case_pair(5, scale=0.0)


def test_the_space_then_grid_order_is_refused_by_name():
    space = SPACES["legendre"]
    with pytest.raises(TypeError, match=r"Design takes \(grid, space, \.\.\.\): got a space as `grid`"):
        Design(space, GRID, RADIUS, region="box")
    with pytest.raises(TypeError, match=r"Design takes \(grid, space, \.\.\.\): got an array as `space`"):
        Design(GRID, GRID, RADIUS, region="box")
    assert Design(GRID, space, RADIUS, region="box").geometry.T == GRID.size
