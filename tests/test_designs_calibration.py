"""Calibration of dpfda_book.mechanisms.designs that no public parameter can break (issue #19, defects 1–3, 11).

Every pair μ here is computed from first principles, with nothing of the
design's own whitening: the summaries' difference d and the published noise
law N(0, σ²LLᵀ) (σ = ``release.noise_scale``, L = ``release.noise_factor``),
solved by Householder QR after exact power-of-two row and column scaling, with
a residual check (d outside the range of L: the pair is told apart with
certainty, μ = inf).  The tests:

* thin noise directions (a custom Σ with one variance 1e-32) and Brownian-kernel
  grids near 0, for every set and noise shape: every probe pair (the design's own
  worst case, ±t·e_j at every grid point, random directions) stays within
  μ(1 + 1e-9), or the design is refused with a named ValueError; the sign attack of
  defect 1 does no better than μ allows;
* radii from 1e-300 to 1e300 for every design: pair μ at the worst-case pair in
  [μ(1 − its rounding bound), μ(1 + 1e-9)] (tight and safe), or a ValueError naming the radius;
  a design at a tiny radius leaves later designs unchanged;
* ``Design.mechanism(n, mu).release(..., secure=True)`` through OpenDP.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpfda
from dpfda.maths.rounding import pair_rtol
from dpfda.maths.summation import gamma
from dpfda_book.mechanisms.designs import Design

from _spaces import on_grid

MU, N = 1.0, 7
TOL = 1e-9  # the proven excess of pair μ over μ (2⁻³¹ + 4u, dpfda.maths.summation), with room for this
# file's own solve (condition number at most 1e3, checked: κ·γ_{8T} < 1e-11)
GRID6 = np.linspace(0.0, 1.0, 6)
NEAR0 = np.array([1e-32, 0.25, 0.5, 0.75, 1.0])
SETS = {
    "box": dict(region="box"),
    "ball": dict(region="ball"),
    "ellipsoid": dict(region="ellipsoid"),
    "mix-0.3": dict(region="mix", lam=0.3),
    "mix-0.8": dict(region="mix", lam=0.8),
}
NOISES = ["matched", "diagonal", "isotropic", "ellipsoid", "thin"]


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([20261219, *key]))


def _pow2_scale(v):
    """Powers of two s with v·s of magnitude in [0.5, 1) (1 where v is 0)."""
    _, e = np.frexp(np.where(v > 0, v, 1.0))
    return np.ldexp(1.0, -e)


def first_principles_mu(d, sigma, L):
    """||z||/σ with Lz = d, or inf if d is not in the range of L (rows/columns scaled, QR)."""
    d = np.asarray(d, dtype=float)
    L = np.asarray(L, dtype=float)
    r = _pow2_scale(np.max(np.abs(L), axis=1))
    c = _pow2_scale(np.max(np.abs(L * r[:, None]), axis=0))
    Ls = L * r[:, None] * c[None, :]
    Q, R = np.linalg.qr(Ls)
    sv = np.linalg.svd(R, compute_uv=False)
    assert sv[-1] > 1e-3 * sv[0], "the test's own solve would not be within its rounding allowance"
    top = np.max(np.abs(d))
    if top == 0:
        return 0.0
    _, e = np.frexp(top)
    ds = np.ldexp(d, -e) * r
    zs = np.linalg.solve(R, Q.T @ ds)
    assert L.shape[0] == L.shape[1], "a square factor: every difference is in its range"
    z = zs * c
    _, es = np.frexp(sigma)
    return float(np.linalg.norm(z) * np.ldexp(1.0, e - es) / np.ldexp(sigma, -es))


def _attain_rtol(des) -> float:
    """How far below μ a design's worst-case pair may come out: R raised by its cover and computed to
    within it (2·(10⁻¹⁰ + the whitening's 8·T·κ²·2⁻⁵²)), the whitening's solve (κ(L)·γ_2T), FTP's fits
    and the means (pair_rtol), and this file's own solve (1e3·γ_{8T})."""
    geom = des.geometry
    return (2 * (1e-10 + des.whitening.rounding) + des.whitening.kappa * gamma(2 * geom.T)
            + pair_rtol(geom.Phi.T @ geom.Phi, geom.T, N) + 1e3 * gamma(8 * geom.T))


def pair_mu(des, X0, X1, mu=MU):
    """μ of the pair in the coordinates the noise is added to (its factor is square there)."""
    rel = des.mechanism(None, mu).release(X0, _rng(0))
    d = des.summary(X1) - des.summary(X0)
    L = rel.coordinate_factor
    return first_principles_mu(d, rel.noise_scale, np.eye(d.size) if L is None else L)


def _noise(name, T):
    if name == "thin":
        S = np.eye(T)
        S[2, 2] = 1e-32
        return S
    return name


def _probes(des, n, rng):
    """Neighbouring pairs: the design's worst case, ±t·e_j, random directions (t large)."""
    T = des.geometry.T
    yield des.worst_case_pair(n)
    big = 1e3 * des.radius * max(1.0, float(np.max(des.geometry.eval_norm)))
    for j in range(T):
        for t in (big, 1e-3 * big):
            X0 = np.zeros((n, T))
            X0[0, j] = t
            X1 = X0.copy()
            X1[0, j] = -t
            yield X0, X1
    for _ in range(4):
        v = rng.standard_normal(T)
        X0 = np.zeros((n, T))
        X0[0] = big * v
        X1 = X0.copy()
        X1[0] = -big * v
        yield X0, X1


CASES = [
    ("legendre-thin-grid", dpfda.LegendreSpace(3), GRID6),
    ("brownian-near-0", dpfda.KernelSpace(dpfda.brownian_kernel(), regularize=True), NEAR0),
    ("brownian-1e-300", dpfda.KernelSpace(dpfda.brownian_kernel(), regularize=True),
     np.array([1e-300, 1e-150, 0.5, 1.0])),
    ("brownian-1e-306", dpfda.KernelSpace(dpfda.brownian_kernel(), regularize=True),
     np.array([1e-306, 1e-200, 0.5, 1.0])),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("set_name", SETS)
@pytest.mark.parametrize("noise", NOISES)
def test_thin_directions_every_set_and_noise_shape(case, set_name, noise):
    _, space, grid = case
    try:
        des = Design(grid, space, 1.0, noise=_noise(noise, grid.size), weights=1.0, **SETS[set_name])
    except ValueError as exc:  # a named refusal that says what to change
        assert "noise" in str(exc) or "grid" in str(exc), str(exc)
        return
    rng = _rng(1)
    worst = 0.0
    for X0, X1 in _probes(des, N, rng):
        worst = max(worst, pair_mu(des, X0, X1))
    assert worst <= MU * (1 + TOL), worst
    assert pair_mu(des, *des.worst_case_pair(N)) >= MU * (1 - _attain_rtol(des))


def test_defect_1_thin_custom_noise():
    """The sign of coordinate 2 named person 0's sign 200 times of 200."""
    S = np.eye(6)
    S[2, 2] = 1e-32
    des = Design(GRID6, dpfda.LegendreSpace(3), 1.0, region="ball", noise=S)
    assert des.extent >= 3e16
    X0 = np.zeros((N, 6))
    X0[0, 2] = des.ball_radius
    X1 = -X0
    assert pair_mu(des, X0, X1) <= MU * (1 + TOL)
    reps = 400
    r0 = des.mechanism(None, MU).release(np.broadcast_to(X0, (reps, N, 6)), _rng(2))
    r1 = des.mechanism(None, MU).release(np.broadcast_to(X1, (reps, N, 6)), _rng(3))
    hits = np.sum(r0.noisy_means[:, 2] > 0) + np.sum(r1.noisy_means[:, 2] < 0)
    # Any test of a μ-GDP pair has accuracy at most Φ(μ/2) ≈ 0.69 (equal errors); 5 SE slack.
    p = 0.6915
    assert hits / (2 * reps) <= p + 5 * np.sqrt(p * (1 - p) / (2 * reps))


def test_defect_1_brownian_near_zero_ball_diagonal():
    space = dpfda.KernelSpace(dpfda.brownian_kernel(), regularize=True)
    with pytest.raises(ValueError, match="weights"):  # PTF's default weights a_j⁻² = 1e32: refused
        Design(NEAR0, space, 1.0, region="ball", noise="diagonal")
    des = Design(NEAR0, space, 1.0, region="ball", noise="diagonal", weights=1.0)
    assert des.extent >= 1e11
    X0 = np.zeros((N, NEAR0.size))
    X0[0, 0] = des.ball_radius
    assert pair_mu(des, X0, -X0) <= MU * (1 + TOL)


# ---------------------------------------------------------------------------
# Radii from 1e-300 to 1e300
# ---------------------------------------------------------------------------


RADII = [1e-300, 1e-200, 1e-163, 8.91e-163, 1e-160, 1e-155, 1e-150, 1e-120, 1e-100, 1e-82,
         1e-20, 1.0, 1e20, 1e100, 1e150, 1e155, 1e200, 1e250, 1e280, 9e288, 1e300]
MEMBERS = {
    "box": dict(region="box"),
    "box-isotropic": dict(region="box", noise="isotropic"),
    "ball": dict(region="ball"),
    "ellipsoid": dict(region="ellipsoid"),
    "ellipsoid-isotropic": dict(region="ellipsoid", noise="isotropic"),
    "mix-0": dict(region="mix", lam=0.0),
    "mix-0.3": dict(region="mix", lam=0.3),
    "mix-0.5-diagonal": dict(region="mix", lam=0.5, noise="diagonal"),
    "mix-0.7-isotropic": dict(region="mix", lam=0.7, noise="isotropic"),
    "mix-1": dict(region="mix", lam=1.0),
    "ftp": dict(region="ellipsoid", noise="ellipsoid", fit="none"),
}
SPACES = on_grid(GRID6)  # every space of the registry (tests/_spaces.py) this grid takes


@pytest.mark.parametrize("space_name", SPACES)
@pytest.mark.parametrize("member", MEMBERS)
def test_every_radius_is_calibrated_or_refused_by_name(space_name, member):
    space = SPACES[space_name]
    for B in RADII:
        try:
            des = Design(GRID6, space, B, **MEMBERS[member])
            X0, X1 = des.worst_case_pair(N)
            mu = pair_mu(des, X0, X1)
        except ValueError as exc:
            assert "radius" in str(exc), (B, str(exc))
            # ftp and ptf refuse the same radii (or the design's own noise scale is out of range)
            continue
        assert MU * (1 - _attain_rtol(des)) <= mu <= MU * (1 + TOL), (B, mu)
        rel = des.mechanism(None, MU).release(X1, _rng(4))
        assert np.all(np.isfinite(rel.coef)) and np.all(np.isfinite(rel.noisy_means))


@pytest.mark.parametrize("space_name", SPACES)
def test_designs_accept_the_radii_ftp_and_ptf_accept(space_name):
    """Where ftp and ptf release at this n and μ, the default box, ball and ellipsoid designs do."""
    space = SPACES[space_name]
    X = np.zeros((N, GRID6.size))
    accepted = []
    for B in RADII:
        try:
            dpfda.ftp(X, GRID6, space, B, MU, _rng(5))
            dpfda.ptf(X, GRID6, space, B, MU, _rng(5))
        except ValueError:
            continue
        accepted.append(B)
        for member in ("box", "ellipsoid", "mix-0", "mix-1", "ftp"):
            try:
                rel = Design(GRID6, space, B, **MEMBERS[member]).mechanism(None, MU).release(X, _rng(6))
            except ValueError as exc:
                pytest.fail(f"{member} design refused B'={B!r}, which ftp and ptf accept: {exc}")
            assert np.all(np.isfinite(rel.coef)), (member, B)
    assert accepted, f"ftp and ptf refused every radius in {RADII}: the test checked nothing"


def test_a_tiny_radius_has_no_effect_on_later_designs():
    """Defect 2: a design at B' = 8.91e-163 once poisoned every later design of its shape."""
    space = SPACES["legendre"]
    before = {m: Design(GRID6, space, 1.0, **kw).extent for m, kw in MEMBERS.items()}
    for B in (8.91e-163, 1e-300, 1e-150, 1e288):
        for kw in MEMBERS.values():
            try:
                Design(GRID6, space, B, **kw)
            except ValueError:
                pass
    after = {m: Design(GRID6, space, 1.0, **kw).extent for m, kw in MEMBERS.items()}
    assert after == before
    des = Design(GRID6, space, 1.0, region="box", noise="isotropic")
    assert des.extent == pytest.approx(5.133, rel=1e-3, abs=0)  # a value given to four digits
    assert pair_mu(des, *des.worst_case_pair(N)) <= MU * (1 + TOL)


def test_user_clip_and_ball_radius_far_from_the_radius():
    space = SPACES["gaussian"]
    for clip, B in ((1e-300, 1e280), (1e280, 1e-300), (1e-150, 1.0)):
        des = Design(GRID6, space, B, region="mix", lam=0.5, clip=clip)
        mu = pair_mu(des, *des.worst_case_pair(N))
        assert MU * (1 - _attain_rtol(des)) <= mu <= MU * (1 + TOL), (clip, B, mu)
    des = Design(GRID6, space, 1e-300, region="ball", ball_radius=1e280)
    assert pair_mu(des, *des.worst_case_pair(N)) <= MU * (1 + TOL)


# ---------------------------------------------------------------------------
# The secure path (defect 11)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("member", ["box", "ball", "mix-0.3", "ftp", "ellipsoid-isotropic"])
def test_secure_release_through_opendp(member, monkeypatch):
    pytest.importorskip("opendp")
    from dpfda.mechanisms import secure

    calls = []
    real = secure.gaussian_release

    def spy(values, scale, sensitivity, mu):
        calls.append((np.shape(values), scale, sensitivity, mu))
        return real(values, scale, sensitivity, mu)

    monkeypatch.setattr(secure, "gaussian_release", spy)
    space = SPACES["gaussian"]
    des = Design(GRID6, space, 1.0, **MEMBERS[member])
    reps = 400
    X = np.broadcast_to(0.3 * _rng(8).standard_normal((N, GRID6.size)), (reps, N, GRID6.size))
    rel = des.mechanism(None, MU).release(X, None, secure=True)
    assert len(calls) == 1
    shape, scale, sens, mu = calls[0]
    # white coordinates: σ/R and Δ/R, a few roundings each
    assert mu == MU and scale == pytest.approx(1.0 * 2 / (N * MU), rel=gamma(4), abs=0)
    assert sens == pytest.approx(2.0 / N, rel=gamma(4), abs=0)
    # Same law as the numpy path: the whitened noise is N(0, σ²I).
    from scipy import stats

    centre = des.grid_summary(X[0])
    z = np.linalg.lstsq(rel.noise_factor, (rel.noisy_means - centre).T, rcond=None)[0].T
    z = (z / rel.noise_scale).ravel()
    assert stats.kstest(z, "norm").pvalue > 1e-4
    with pytest.raises(TypeError, match="secure"):
        des.mechanism(None, MU).release(X[0], _rng(9), secure="yes")
