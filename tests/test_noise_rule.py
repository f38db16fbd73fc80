"""The one noise rule, the one calibration and the audit that recomputes.

* Every mechanism adds its noise where the sensitivity is bounded, with a square,
  full-rank factor; lower-rank maps come after (:mod:`dpfda.mechanisms.mechanism_type`).
  The attack on the ellipsoid design with FTP's rank-d noise — single releases
  projected onto span(Φ)⊥ — separates neighbours of the mechanism broken on purpose
  (noise added on the grid) and not those of the real one, at T = 5, 20 and 60.
* A hypothesis property over designs of every region, rank and noise factor.
* :func:`dpfda.trust.recompute.recompute` catches the whole broken family, the rank-deficient
  design and σ × 0.9 included, and passes every real mechanism.
* σ, the sensitivity told to OpenDP and the limits have one home
  (:mod:`dpfda.mechanisms.calibration`); a μ whose μ²/2 underflows is refused by name.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpfda
from dpfda import KernelSpace, LegendreSpace, gaussian_kernel, uniform_grid
from dpfda.maths.rounding import fit_rtol, pair_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import calibration, ftp_ptf, pipelines, privacy, secure
from dpfda.mechanisms.ftp_ptf import Mechanism
from dpfda.trust import audit as A
from dpfda_book.mechanisms import broken, designs
from dpfda_book.mechanisms import broken as B
from dpfda_book.mechanisms.designs import Design

MU = 1.0


# ---------------------------------------------------------------------------
# The attack on the rank-deficient design
# ---------------------------------------------------------------------------


def _complement_attack(mech, X0, X1, draws, seed):
    """μ lower bound of single releases projected onto span(Φ)⊥, against the grid centres' rounding.

    The score is ⟨P⊥y, w⟩ with y a release's noisy grid means, P⊥ = I − QQᵀ (Φ = QR) and
    w = P⊥(fl(θ̄₁Φᵀ) − fl(θ̄₀Φᵀ)): the part of the neighbours' grid centres that the noise
    σΦZ does not reach.
    """
    geom = mech.geometry
    Q, _ = np.linalg.qr(geom.Phi)
    P = np.eye(geom.T) - Q @ Q.T
    grid_means = B._GridMeansOfFits(Design(geom.grid, geom.space, mech.radius, region="ellipsoid"))
    w = P @ (grid_means.mean(X1) - grid_means.mean(X0))
    w = w / np.linalg.norm(w)

    def statistic(rel):
        return (rel.noisy_means @ P.T) @ w

    return A.audit(mech, X0, X1, draws=draws, rng=np.random.default_rng(seed), statistic=statistic)


@pytest.mark.parametrize("T", [5, 20, 60])
def test_rank_deficient_attack_fails_on_the_noise_rule(T):
    grid, space = uniform_grid(T), LegendreSpace(3)
    rng = np.random.default_rng(T)
    n = 2000  # σ = 2B'/(nμ) small against the centres: their rounding is what leaks
    X0 = 0.3 * rng.standard_normal((n, T)) + 0.4
    X1 = X0.copy()
    X1[0] = 0.3 * rng.standard_normal(T) + 0.4
    fixed = Design(grid, space, 1.0, region="ellipsoid").mechanism(n, MU)
    assert fixed.noise_factor is None and fixed.dim == 3  # noise on θ̄ (d), full rank
    res = _complement_attack(fixed, X0, X1, 4000, 1)
    assert res.mu_lower <= MU, res
    # the same attack has the power to separate the mechanism that adds σΦZ on the grid
    rank_deficient = broken.broken_design_rank_deficient(grid, space, 1.0, MU, n=n)
    res_b = _complement_attack(rank_deficient, X0, X1, 4000, 1)
    assert res_b.mu_lower > MU, res_b
    # and the audit says why, from one release of each dataset
    rec = A.recompute(rank_deficient, X0, X1)
    assert rec.mu_pair == np.inf and not rec.passed
    assert any("outside its noise's range" in p for p in rec.problems)
    assert A.recompute(fixed, X0, X1).passed


def test_the_fixed_design_releases_its_noisy_coefficients_and_maps_them():
    grid, space = uniform_grid(7), LegendreSpace(3)
    des = Design(grid, space, 1.0, region="ellipsoid")
    X = 0.3 * np.random.default_rng(0).standard_normal((4, 30, 7))
    rel = des.mechanism(None, MU).release(X, np.random.default_rng(1))
    assert rel.noisy_coordinates.shape == (4, 3) and rel.coordinate_factor is None
    np.testing.assert_array_equal(rel.noisy_means, rel.noisy_coordinates @ des.geometry.Phi.T)
    # the same θ̄ + σZ as FTP's release with the same stream (FTP's mechanism, on the grid after)
    ftp = dpfda.ftp(X, grid, space, 1.0, MU, np.random.default_rng(1))
    # two computations of θ̄ (each fit to fit_rtol of B' = 1, with the data's ratio; the means γ₄)
    # and the noise's addition (γ₄ of the result)
    A_ = des.geometry.Phi.T @ des.geometry.Phi
    ratio = np.linalg.norm(X, axis=-1).max() / np.sqrt(np.linalg.norm(A_, 2))
    atol = 2 * fit_rtol(A_, grid.size, data_ratio=ratio) + gamma(4) * (np.abs(ftp.coef).max() + 1.0)
    np.testing.assert_allclose(rel.noisy_coordinates, ftp.coef, rtol=0, atol=atol)


def test_a_mechanism_with_a_noise_of_lower_rank_is_refused():
    grid, space = uniform_grid(6), LegendreSpace(3)
    good = dpfda.ptf_mechanism(grid, space, 1.0, MU)
    with pytest.raises(ValueError, match="square"):
        Mechanism(name="x", method="ptf", geometry=good.geometry, radius=1.0, mu=MU, dim=6,
                  per_curve=good.per_curve, calibration=good.calibration, post=good.post,
                  noise_factor=good.geometry.Phi)


# ---------------------------------------------------------------------------
# Every design: the rule holds, the audit passes
# ---------------------------------------------------------------------------

REGIONS = [dict(region="box"), dict(region="ball"), dict(region="ellipsoid"),
           dict(region="mix", lam=0.3), dict(region="mix", lam=1.0), dict(region="mix", lam=0.0)]
NOISES = ["matched", "diagonal", "isotropic", "ellipsoid", "custom"]


def _custom(T, seed):
    A_ = np.random.default_rng(seed).standard_normal((T, T))
    return A_ @ A_.T / T + np.eye(T)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(region=st.sampled_from(REGIONS), noise=st.sampled_from(NOISES), T=st.integers(3, 7),
       m=st.integers(1, 4), kernel=st.booleans(), n=st.integers(1, 60), seed=st.integers(0, 2**16),
       fit=st.sampled_from(["ball", "none"]))
def test_every_design_noises_full_rank_and_passes_the_audit(region, noise, T, m, kernel, n, seed, fit):
    grid = uniform_grid(T)
    space = KernelSpace(gaussian_kernel(0.3)) if kernel else LegendreSpace(min(m, T))
    noise_arg = _custom(T, seed) if noise == "custom" else noise
    try:
        des = Design(grid, space, 1.0, noise=noise_arg, fit=fit, weights=1.0, **region)
        mech = des.mechanism(n, MU)
    except ValueError as exc:  # a named refusal (rank-d noise on a full set, ill-conditioned shape)
        assert "noise" in str(exc) or "grid" in str(exc) or "lam" in str(exc), str(exc)
        return
    L = mech.noise_factor
    assert L is None or (L.shape == (mech.dim, mech.dim) and np.linalg.matrix_rank(L) == mech.dim)
    assert mech.dim == (des.geometry.dim if des.coefficient_noise else T)
    rng = np.random.default_rng(seed)
    X0, X1 = des.worst_case_pair(n)
    if seed % 2:
        X0 = X0 + 0.2 * rng.standard_normal(X0.shape)
        X1 = X0.copy()
        X1[0] = 3.0 * rng.standard_normal(T)
    rec = A.recompute(mech, X0, X1, rng=rng)
    assert rec.passed, rec
    rel = mech.release(X0, rng)
    coef, active, grid_means = mech.post(rel.noisy_coordinates)
    np.testing.assert_array_equal(coef, rel.coef)
    np.testing.assert_array_equal(grid_means, rel.noisy_means)


# ---------------------------------------------------------------------------
# The audit recomputes: the broken family is caught, the real mechanisms pass
# ---------------------------------------------------------------------------

GRID, SPACE, N = uniform_grid(6), LegendreSpace(3), 40


def _real():
    return [A.ftp_mechanism(GRID, SPACE, 1.0, MU, n=N), A.ptf_mechanism(GRID, SPACE, 1.0, MU, n=N),
            A.ftp_mechanism(GRID, KernelSpace(gaussian_kernel(0.3)), 1.0, MU, n=N)] + [
        Design(GRID, SPACE, 1.0, **kw).mechanism(N, MU) for kw in REGIONS]


@pytest.mark.parametrize("i", range(9))
def test_the_audit_passes_every_real_mechanism(i):
    mech = _real()[i]
    for pipeline in ("ftp", "ptf"):
        X0, X1 = A.worst_case_pair(GRID, mech.geometry.space, 1.0, N, pipeline=pipeline, factor=3.0)
        rec = A.recompute(mech, X0, X1, draws=1000, rng=np.random.default_rng(i))
        assert rec.passed, rec
        assert rec.noise_ratio > 0.9


def _thin_noise():
    S = np.eye(GRID.size)
    S[2, 2] = 1e-32
    return S


BROKEN = {
    "rank-deficient design": lambda: broken.broken_design_rank_deficient(GRID, SPACE, 1.0, MU, n=N),
    "FTP σ×0.9": lambda: broken.broken_sigma_too_small(A.ftp_mechanism(GRID, SPACE, 1.0, MU, n=N)),
    "PTF σ×0.9": lambda: broken.broken_sigma_too_small(A.ptf_mechanism(GRID, SPACE, 1.0, MU, n=N)),
    "design σ×0.9": lambda: broken.broken_sigma_too_small(Design(GRID, SPACE, 1.0, region="mix", lam=0.3)
                                                     .mechanism(N, MU)),
    "PTF without √T": lambda: broken.broken_ptf_no_sqrt_T(GRID, SPACE, 1.0, MU, n=N),
    "FTP grid sup-norm": lambda: broken.broken_ftp_grid_norm(GRID, KernelSpace(gaussian_kernel(0.3)), 1.0, MU,
                                                        n=N, norm="l2"),
    "FTP without the radius": lambda: broken.broken_ftp_no_radius(GRID, SPACE, 1.0, MU, n=N),
    "pinv design": lambda: broken.broken_design_pinv(GRID, SPACE, 1.0, MU, n=N, noise=_thin_noise())[0],
}


@pytest.mark.parametrize("name", BROKEN)
def test_the_audit_catches_the_broken_family(name):
    mech = BROKEN[name]()
    if name == "pinv design":
        pairs = A.probe_pairs(mech, N, GRID.size, size=1e3)
    else:
        pairs = [A.worst_case_pair(GRID, mech.geometry.space, 1.0, N, pipeline=p, factor=3.0)
                 for p in ("ftp", "ptf")]
    recs = [A.recompute(mech, X0, X1, draws=1000, rng=np.random.default_rng(3)) for X0, X1 in pairs]
    assert not all(r.passed for r in recs), recs
    assert max(r.mu_pair for r in recs) > MU * 1.05 or any(r.problems for r in recs)


def test_sigma_times_09_is_caught_by_the_formula_and_by_the_noise_itself():
    mech = broken.broken_sigma_too_small(A.ftp_mechanism(GRID, SPACE, 1.0, MU, n=N), 0.9)
    X0, X1 = A.worst_case_pair(GRID, SPACE, 1.0, N)
    rec = A.recompute(mech, X0, X1, draws=2000, rng=np.random.default_rng(4))
    geom = SPACE.at(GRID)
    assert rec.mu_pair == pytest.approx(MU / 0.9, rel=pair_rtol(geom.Phi.T @ geom.Phi, GRID.size, N) + gamma(2), abs=0)
    assert any("formula" in p for p in rec.problems) and rec.noise_ratio < 0.9
    assert rec.sigma_formula == pytest.approx(2.0 / (N * MU), rel=gamma(2), abs=0)  # 50 digits, rounded once


def test_the_audits_summaries_are_its_own_and_agree_with_the_mechanisms():
    rng = np.random.default_rng(5)
    X = 2.0 * rng.standard_normal((N, GRID.size))  # many curves outside the ball and the box
    for mech in _real():
        a, m = A.audit_summary(mech, X), mech.summary(X)
        # 50-digit (or exact) summaries against the mechanism's: its fits to fit_rtol (with the data's
        # ratio against B' = 1), its clips exact, its means rounded once, its maps Φθ̄ and projections
        # γ_{2T+8}; on the grid, values up to max a_j times that
        geom = mech.geometry
        A_ = geom.Phi.T @ geom.Phi
        ratio = np.max(np.linalg.norm(X, axis=1)) / np.sqrt(np.linalg.norm(A_, 2))
        bound = (fit_rtol(A_, GRID.size, data_ratio=ratio) + gamma(2 * GRID.size + 8)) * max(1.0, geom.eval_norm.max())
        assert np.max(np.abs(a - m)) <= bound, mech.name


def test_the_noise_law_has_no_tolerance_outside_its_range():
    Phi = LegendreSpace(3).at(uniform_grid(5)).Phi
    law = A.NoiseLaw(0.1, Phi)
    assert not law.outside(Phi[:, 0]) and not law.outside(-2.0 * Phi[:, 2])  # exactly in the span
    assert np.isfinite(law.distance(Phi[:, 1]))
    tiny = np.zeros(5)
    tiny[0] = 2.0**-1074  # far below any relative tolerance, and outside span(Φ)
    assert law.outside(tiny) and law.distance(tiny) == np.inf


# ---------------------------------------------------------------------------
# One calibration; the secure path noises the numpy path's summary; refusals
# ---------------------------------------------------------------------------


def test_one_home_for_sigma_the_limits_and_the_declared_sensitivity():
    assert dpfda.gaussian_sigma is calibration.gaussian_sigma
    for mod in (pipelines, designs, ftp_ptf, privacy, secure):
        src = inspect.getsource(mod)
        assert "2.0**960" not in src and "2.0 ** 960" not in src, mod.__name__
        assert "np.ldexp(2.0 * mR" not in src and "calibration_factor(excess)" not in src, mod.__name__
    assert pipelines.PARAM_MAX is calibration.PARAM_MAX
    assert calibration.gaussian_sigma(1e-300, 1e-300) == 1.0  # Δ/μ where 1/μ·Δ would overflow
    assert calibration.gaussian_sigma(2 * 1.0 / 100, 1.0) == dpfda.ftp_sigma(100, 1.0, 1.0)
    with pytest.raises(ValueError, match="too large"):
        calibration.gaussian_sigma(1e300, 1e-300)


@pytest.mark.parametrize("make", [
    lambda: dpfda.ftp_mechanism(GRID, SPACE, 1.0, MU),
    lambda: dpfda.ptf_mechanism(GRID, SPACE, 1.0, MU),
    lambda: Design(GRID, SPACE, 1.0, region="ellipsoid").mechanism(None, MU),
    lambda: Design(GRID, SPACE, 1.0, region="mix", lam=0.4).mechanism(None, MU),
])
def test_the_secure_path_noises_the_numpy_paths_summary(make, monkeypatch):
    mech = make()
    X = 0.7 * np.random.default_rng(6).standard_normal((N, GRID.size))
    seen = []
    real = secure.gaussian_release

    def spy(values, scale, sensitivity, mu):
        seen.append(np.array(values))
        return real(values, scale, sensitivity, mu)

    monkeypatch.setattr(secure, "gaussian_release", spy)
    mech.release(X, None, secure=True)
    centre = mech.summary(X)
    if mech.method == "ptf":
        expected = centre / mech.clip
    elif mech.noise_factor is not None:
        des = mech.per_curve.design
        expected = np.ldexp(des.whiten(centre) / np.frexp(des.extent)[0], -np.frexp(des.extent)[1])
    else:
        expected = centre
    np.testing.assert_array_equal(seen[0], expected)


def test_tiny_mu_on_the_secure_path_is_refused_by_its_cause(monkeypatch):
    def never(*a, **k):
        raise AssertionError("OpenDP was called")

    monkeypatch.setattr(secure, "gaussian_release", never)
    X = np.zeros((100, GRID.size))
    for call in (lambda: dpfda.ftp(X, GRID, SPACE, 2e-299, 1e-300, secure=True),
                 lambda: dpfda.ptf(X, GRID, SPACE, 2e-299, 1e-300, secure=True)):
        with pytest.raises(ValueError, match=r"mu=1e-300: mu is too small.*mu\^2/2") as exc:
            call()
        assert "scale=" not in str(exc.value)
        with pytest.raises(ValueError, match=r"mu\^2/2"):  # refused when the mechanism is built
            dpfda.ftp_mechanism(GRID, SPACE, 2e-299, 1e-300, secure=True)
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"mu\^2/2"):
        secure.gaussian_release(np.zeros(3), 1.0, sensitivity=1.0, mu=1e-300)
