"""Tests of dpfda.trust.audit: the μ lower bound is a valid confidence bound, the
worst-case neighbours attain the sensitivities of Theorem 6 and Proposition 9,
calibrated FTP/PTF pass tightly, and the mechanisms broken on purpose are caught.

The pass/fail audits use 10⁵ draws per dataset whatever DPFDA_QUICK says (the
issue's requirement); they are vectorised and take well under a second each.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from scipy import special, stats

import dpfda
from dpfda.maths.rounding import pair_rtol, solve_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.pipelines import ftp_fit_mean, ptf_clipped_mean, ptf_default_clip
from dpfda.trust import audit as A
from dpfda_book.mechanisms import broken

from _spaces import on_grid

GRID = dpfda.uniform_grid(8)
N = 10
RADIUS = 1.0
MU = 1.0
SPACES = on_grid(GRID)  # every space of the registry (tests/_spaces.py) this grid takes
DRAWS = 100_000
PTF_PAIR_RTOL = gamma(GRID.size + 16)
"""PTF's pair μ at its worst-case pair: clipping exact, each mean rounded once (γ₄, exact sums of
c_j and zeros), σ by its formula (γ₅), the ratios, their squares, sum and root (γ_{T+7})."""


def _pair_rtol(space) -> float:
    """FTP's pair μ at a worst-case pair: :func:`dpfda.maths.rounding.pair_rtol` (fits through ΦᵀΦ,
    means of N curves); it also covers PTF's (:data:`PTF_PAIR_RTOL`)."""
    geom = space.at(GRID)
    return max(pair_rtol(geom.Phi.T @ geom.Phi, GRID.size, N), PTF_PAIR_RTOL)


def _rng(*key):
    return np.random.default_rng(np.random.SeedSequence([20260601, *key]))


# ---------------------------------------------------------------------------
# Clopper–Pearson and the μ lower bound
# ---------------------------------------------------------------------------


def test_clopper_pearson_matches_binomial_tails():
    n, alpha = 50, 0.05
    k = np.arange(n + 1)
    lo, up = A.clopper_pearson(k, n, alpha)
    # The upper bound p_u solves P(Bin(n, p_u) <= k) = alpha (k < n); the lower P(Bin >= k) = alpha.
    # scipy's beta quantile and binomial tails (no BLAS) to a few ulps, times the tails' relative
    # condition number in p (at most n/min(p, 1 - p) here): far below 1e-8
    assert np.allclose(stats.binom.cdf(k[:-1], n, up[:-1]), alpha, rtol=1e-8, atol=0)
    assert np.allclose(stats.binom.sf(k[1:] - 1, n, lo[1:]), alpha, rtol=1e-8, atol=0)
    assert up[-1] == 1.0 and lo[0] == 0.0
    assert np.all(lo <= k / n) and np.all(k / n <= up)


def test_single_threshold_bound_is_valid_exactly():
    """P(μ_lb > μ) <= α, computed exactly (no simulation) for one threshold."""
    mu, N_, alpha = 1.0, 400, 0.3
    t = mu / 2  # scores N(0,1) vs N(mu,1): FPR = FNR = Φ(-mu/2)
    p = special.ndtr(-mu / 2)
    k = np.arange(N_ + 1)
    _, up = A.clopper_pearson(k, N_, alpha / 2)
    with np.errstate(divide="ignore"):
        g0 = special.ndtri(1 - up)  # Φ⁻¹(1 - FPR_ub) as a function of the FP count
        g1 = special.ndtri(up)  # Φ⁻¹(FNR_ub) as a function of the FN count
    pk = stats.binom.pmf(k, N_, p)
    exceed = g0[:, None] - g1[None, :] > mu
    prob = float(pk @ exceed @ pk)
    assert 0 < prob <= alpha
    # and the library computes exactly this bound at that threshold
    rng = _rng(1)
    s0, s1 = rng.standard_normal(N_), mu + rng.standard_normal(N_)
    res = A.mu_lower_bound(s0, s1, [t], alpha=alpha)
    fp, fn = int(np.sum(s0 > t)), int(np.sum(s1 <= t))
    assert res.mu_lower == pytest.approx(max(g0[fp] - g1[fn], 0.0), abs=1e-12)


@pytest.mark.slow
def test_audit_coverage_monte_carlo():
    """The whole audit (split, quantile thresholds, Bonferroni) rarely exceeds the true μ."""
    space = SPACES["legendre"]
    mech = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    alpha, R = 0.2, 200
    rng = _rng(2)
    lbs = np.array([A.audit(mech, X0, X1, draws=600, rng=rng, alpha=alpha).mu_lower
                    for _ in range(R)])
    exceed = int(np.sum(lbs > MU))
    # With P(exceed) <= alpha, more than this many exceedances has probability < 1e-4.
    assert exceed <= stats.binom.ppf(1 - 1e-4, R, alpha)
    assert np.mean(lbs) > 0.3 * MU  # informative, not a vacuous zero


def test_bound_from_point_estimates_would_fail_coverage():
    """Sanity of the coverage test above: plug-in values exceed μ half of the time."""
    rng = _rng(3)
    pts = []
    for _ in range(200):
        s0, s1 = rng.standard_normal(600), MU + rng.standard_normal(600)
        pts.append(A.mu_lower_bound(s0, s1, [MU / 2]).mu_point)
    assert 0.35 < np.mean(np.array(pts) > MU) < 0.65


def test_empirical_tradeoff_endpoints_and_monotone():
    rng = _rng(4)
    fpr, fnr = A.empirical_tradeoff(rng.standard_normal(500), 1 + rng.standard_normal(400))
    assert fpr[0] == 1 and fnr[0] == 0 and fpr[-1] == 0 and fnr[-1] == 1
    assert np.all(np.diff(fpr) <= 0) and np.all(np.diff(fnr) >= 0)


# ---------------------------------------------------------------------------
# Worst-case neighbours attain the sensitivities
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("factor", [1.0, 3.0])
def test_worst_case_pair_ftp_attains_cm_sensitivity(name, factor):
    space = SPACES[name]
    geom = space.at(GRID)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, factor=factor)
    assert np.sum(np.any(X0 != X1, axis=1)) == 1
    d = ftp_fit_mean(X1, geom, RADIUS)[0] - ftp_fit_mean(X0, geom, RADIUS)[0]
    # Coordinates are Cameron–Martin coordinates: the CM norm is the Euclidean norm.
    rtol = pair_rtol(geom.Phi.T @ geom.Phi, GRID.size, N)  # two fits through ΦᵀΦ, two means, the norm
    assert np.linalg.norm(d) == pytest.approx(2 * RADIUS / N, rel=rtol, abs=0)
    assert A.pair_mu(A.ftp_mechanism(GRID, space, RADIUS, MU, n=N), X0, X1) == pytest.approx(MU, rel=rtol, abs=0)


@pytest.mark.parametrize("name", list(SPACES))
def test_worst_case_pair_ptf_attains_every_coordinate(name):
    space = SPACES[name]
    c = ptf_default_clip(space.at(GRID), RADIUS)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, pipeline="ptf", factor=2.0)
    d = ptf_clipped_mean(X0, c) - ptf_clipped_mean(X1, c)
    assert np.allclose(d, 2 * c / N, rtol=1e-14, atol=0)  # exact clips, means rounded once: γ₅ < 1e-14
    mech = A.ptf_mechanism(GRID, space, RADIUS, MU, n=N)
    assert A.pair_mu(mech, X0, X1) == pytest.approx(MU, rel=PTF_PAIR_RTOL, abs=0)


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.slow
def test_random_neighbours_never_exceed_mu(name):
    """Theorem 6 / Proposition 9: no pair beats the worst case (random pairs, large curves)."""
    space = SPACES[name]
    ftp_m = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    ptf_m = A.ptf_mechanism(GRID, space, RADIUS, MU, n=N)
    rng = _rng(5)
    for _ in range(200):
        X0 = 3 * rng.standard_normal((N, GRID.size))
        X1 = X0.copy()
        X1[rng.integers(N)] = 3 * rng.standard_normal(GRID.size)
        assert A.pair_mu(ftp_m, X0, X1) <= MU * (1 + 1e-9)
        assert A.pair_mu(ptf_m, X0, X1) <= MU * (1 + 1e-9)


# ---------------------------------------------------------------------------
# Pass: calibrated pipelines at worst-case neighbours, 10⁵ draws
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("pipeline", ["ftp", "ptf"])
def test_calibrated_pipelines_pass_tightly(name, pipeline):
    space = SPACES[name]
    build = A.ftp_mechanism if pipeline == "ftp" else A.ptf_mechanism
    mech = build(GRID, space, RADIUS, MU, n=N)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, pipeline=pipeline)
    res = A.audit(mech, X0, X1, draws=DRAWS, rng=_rng(6, len(name), len(pipeline)))
    assert res.mu_pair == pytest.approx(MU, rel=_pair_rtol(space), abs=0)
    assert res.mu_lower <= MU, res  # valid at 95% confidence
    assert res.mu_lower >= 0.8 * MU, res  # the analysis is tight
    assert not res.violation
    # the simultaneous bands contain the point estimates and G_μ is not refuted anywhere
    assert np.all(res.fpr_lower <= res.fpr) and np.all(res.fpr <= res.fpr_upper)
    assert above_tradeoff(np.clip(res.fpr_upper, 0, 1), res.fnr_upper, MU)


def above_tradeoff(fpr, fnr, mu) -> bool:
    """Whether every corner (fpr, fnr) lies on or above G_μ, decided against G_μ to 50 digits.

    A corner below G_μ refutes the claim, so no rounding may pass one: G_μ(α) = Φ(Φ⁻¹(1 − α) − μ)
    from the exact doubles in 50 significant digits, raised by 1e-40 of itself (more than those
    digits' rounding); α so small that 1 − α rounds to 1 gives G = 1, above the exact value.
    (scipy's double G_μ is off by up to ~1e-14 relative near α = 1, where G is small.)
    """
    import mpmath as mp

    with mp.workdps(50):
        for a, b in zip(np.ravel(fpr), np.ravel(fnr)):
            a = mp.mpf(float(a))
            inside = 0 < a < 1  # Φ⁻¹(1 − α) = ±∞ at the ends: G = 1 at α = 0, 0 at α = 1
            g = mp.ncdf(mp.sqrt(2) * mp.erfinv(1 - 2 * a) - mp.mpf(mu)) if inside else mp.mpf(a <= 0)
            if mp.mpf(float(b)) < (g * (1 + mp.mpf(10) ** -40) if inside else g):  # the ends are exact
                return False
    return True


def test_the_corner_check_refuses_a_corner_just_below_the_curve():
    """Negative control: 1e-13 below G_μ is refused (the old check, G_μ − 1e-12, passed it); on it or above passes."""
    alpha = np.array([1e-3, 0.05, 0.3, 0.9, 0.999])
    g = dpfda.tradeoff(alpha, MU)
    assert above_tradeoff(alpha, g * (1 + 1e-13), MU)
    for j in range(alpha.size):
        below = g.copy()
        below[j] *= 1 - 1e-13
        assert not above_tradeoff(alpha, below, MU)
        assert np.all(below >= dpfda.tradeoff(alpha, MU) - 1e-12)  # what the old check accepted
    assert above_tradeoff([0.0, 1.0], [1.0, 0.0], MU)  # the ends are exact: G(0) = 1, G(1) = 0
    assert not above_tradeoff([0.0], [np.nextafter(1.0, 0.0)], MU)


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("pipeline", ["ftp", "ptf"])
def test_blackbox_statistic_is_valid_and_nearly_tight(name, pipeline):
    space = SPACES[name]
    build = A.ftp_mechanism if pipeline == "ftp" else A.ptf_mechanism
    mech = build(GRID, space, RADIUS, MU, n=N)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N, pipeline=pipeline)
    res = A.audit(mech, X0, X1, draws=DRAWS, rng=_rng(7, len(name), len(pipeline)),
                  statistic="blackbox")
    assert res.statistic == "blackbox" and res.mu_pair is None
    assert 0.8 * MU <= res.mu_lower <= MU, res


def test_plain_callable_is_refused_with_the_constructors_named():
    """A function (X, rng) -> Release does not say what to audit: TypeError naming the constructors."""
    space = SPACES["gaussian"]
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    plain = functools.partial(dpfda.ftp, grid=GRID, space=space, radius=RADIUS, mu=MU)
    for bad in (lambda X, rng: plain(X, rng=rng), "ftp"):
        with pytest.raises(TypeError, match="ftp_mechanism.*Design.*mechanism"):
            A.audit(bad, X0, X1, draws=4000, rng=_rng(8))
        with pytest.raises(TypeError, match="ftp_mechanism"):
            A.pair_mu(bad, X0, X1)
    # the mechanism behind dpfda.ftp is audited, at the pair's exact μ
    res = A.audit(dpfda.mechanisms.ftp_ptf.ftp_mechanism(GRID, space, RADIUS, MU), X0, X1, draws=4000,
                  rng=_rng(8))
    assert res.mu_pair == pytest.approx(MU, rel=_pair_rtol(space), abs=0) and 0 < res.mu_lower <= MU


def test_custom_statistic_callable():
    space = SPACES["legendre"]
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    mech = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    u = X0[0] / np.linalg.norm(X0[0])
    # projection of the released grid values on -u: the first curve flips from +u to -u
    res = A.audit(mech, X0, X1, draws=20000, rng=_rng(9), statistic=lambda rel: -rel.values @ u)
    assert 0 < res.mu_lower <= MU


# ---------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------


def test_bad_arguments_raise_clear_errors():
    space = SPACES["legendre"]
    mech = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    rng = _rng(16)
    far = X1.copy()
    far[1] = -far[1]
    with pytest.raises(ValueError, match="neighbours"):
        A.audit(mech, X0, far, draws=100, rng=rng)
    with pytest.raises(ValueError, match="calibrated for"):
        A.audit(mech, X0[:5], X1[:5], draws=100, rng=rng)
    with pytest.raises(ValueError, match="statistic"):
        A.audit(mech, X0, X1, draws=100, rng=rng, statistic="magic")
    with pytest.raises(ValueError, match="split"):
        A.audit(mech, X0, X1, draws=100, rng=rng, split=1.5)
    with pytest.raises(TypeError, match="rng"):
        A.audit(mech, X0, X1, draws=100, rng=1)
    with pytest.raises(ValueError, match="pipeline"):
        A.worst_case_pair(GRID, space, RADIUS, N, pipeline="fpt")
    with pytest.raises(ValueError, match="direction"):
        A.worst_case_pair(GRID, space, RADIUS, N, direction=np.zeros(4))
    with pytest.raises(ValueError, match="norm"):
        broken.broken_ftp_grid_norm(GRID, space, RADIUS, MU, n=N, norm="linf")
    with pytest.raises(ValueError, match="scores0"):
        A.mu_lower_bound([np.nan, 1.0], [0.0, 1.0], [0.5])
    with pytest.raises(ValueError, match="alpha"):
        A.clopper_pearson(3, 10, 1.5)


# ---------------------------------------------------------------------------
# An audit that shares no code with what it audits
# ---------------------------------------------------------------------------


def test_noise_law_refuses_ill_conditioned_and_detects_off_support():
    rng = _rng(33)
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    Q2, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    L = Q @ np.diag([1, 1, 1, 1, 1e-13]) @ Q2  # nearly dependent columns: no scaling helps
    with pytest.raises(ValueError, match="ill-conditioned"):
        A.NoiseLaw(1.0, L)
    tall = np.array([[1.0, 2.0], [-3.0, 1.0], [0.5, 0.0], [2.0, -1.0], [1.0, 1.0]])
    law = A.NoiseLaw(0.5, tall)
    # a least-squares solve by Householder QR: κ(tallᵀtall)·γ_{8·size} (solve_rtol); tall @ θ is exact
    rtol = solve_rtol(tall.T @ tall, sum(tall.shape))
    assert np.isclose(law.distance(tall @ [3.0, 4.0]), 10.0, rtol=rtol, atol=0)  # exactly in the span
    # no tolerance: a difference off the span by one subnormal is told apart with certainty
    v = tall @ [1.0, 3.0]  # (7, 0, 0.5, -1, 4)
    assert np.isclose(law.distance(v), 2 * np.sqrt(10.0), rtol=rtol + gamma(1), atol=0)
    assert law.distance(v + np.array([0.0, 2.0**-1074, 0.0, 0.0, 0.0])) == np.inf
    assert law.distance(np.eye(5)[0] - tall @ np.linalg.lstsq(tall, np.eye(5)[0], rcond=None)[0]) == np.inf
    # Diagonal laws at any magnitude, without overflow warnings (issue #23, item 1).
    with np.errstate(all="raise"):
        assert A.NoiseLaw(1e-300).distance(np.array([1e300, 1e300])) == np.inf
        # no BLAS: the literals, a division and a square per entry, their sum and the root: γ_8
        assert np.isclose(A.NoiseLaw(1e-300).distance(np.array([3e-290, 4e-290])), 5e10, rtol=gamma(8), atol=0)
        assert np.isclose(A.NoiseLaw(np.array([1e300, 1e-300])).distance(np.array([3e300, 4e-300])), 5.0,
                          rtol=gamma(8), atol=0)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _HalfPublished(dpfda.mechanisms.ftp_ptf.Mechanism):
    """Calibrated like FTP, but its releases publish σ/2 as their noise scale."""

    def release(self, X, rng, *, secure=None):
        rel = super().release(X, rng, secure=secure)
        rel.noise_scale = rel.noise_scale / 2
        return rel


def test_pair_mu_reads_the_published_noise_not_the_mechanism_fields():
    """A mechanism whose own calibration is right but whose releases publish another σ."""
    space = SPACES["legendre"]
    mech = A.ftp_mechanism(GRID, space, RADIUS, MU, n=N)
    X0, X1 = A.worst_case_pair(GRID, space, RADIUS, N)
    half = _HalfPublished(**{f.name: getattr(mech, f.name) for f in dataclasses.fields(mech)})
    assert half.sigma(N) == mech.sigma(N)  # the calibration code says σ ...
    rtol = _pair_rtol(space)
    assert np.isclose(A.pair_mu(mech, X0, X1), MU, rtol=rtol, atol=0)
    assert np.isclose(A.pair_mu(half, X0, X1), 2 * MU, rtol=rtol, atol=0)  # ... the audit reads σ/2


def test_worst_case_pair_refuses_the_space_then_grid_order_by_name():
    space = SPACES["legendre"]
    with pytest.raises(TypeError, match=r"worst_case_pair takes \(grid, space, \.\.\.\): got a space as `grid`"):
        A.worst_case_pair(space, GRID, RADIUS, N)
    with pytest.raises(TypeError, match="got an array as `space`"):
        A.worst_case_pair(GRID, list(GRID), RADIUS, N)
    assert A.worst_case_pair(GRID, space, RADIUS, N)[0].shape == (N, GRID.size)


# ---------------------------------------------------------------------------
# The audit's own 50-digit fit in the ball
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SPACES))
def test_extended_fit_in_ball_meets_its_optimality_conditions(name):
    """θ = argmin ||x − Φθ||² over ||θ|| <= B' exactly when g = Φᵀ(x − Φθ) = λθ with λ >= 0 and
    λ(||θ|| − B') = 0; checked in 50 digits, on curves from deep inside to far outside the ball."""
    import mpmath as mp

    from dpfda.trust import recompute as R

    geom = SPACES[name].at(GRID)
    rng = _rng(7, len(name))
    with mp.workdps(R.AUDIT_DIGITS):
        basis = R._mp_eigenbasis(mp, geom.Phi)
        Phi = mp.matrix(geom.Phi.tolist())
        tight = mp.mpf(10) ** -(R.AUDIT_DIGITS - 12)
        for scale in (1e-9, 0.01, 1.0, 3.0, 1e4, 1e12):
            for radius in (1e-3, 0.5, 2.0):
                x = rng.standard_normal(GRID.size) * scale
                theta = mp.matrix(R._mp_fit_in_ball(mp, basis, x, radius))
                g = Phi.T * (mp.matrix(x.tolist()) - Phi * theta)
                norm, B = mp.norm(theta), mp.mpf(radius)
                assert norm <= B
                lam = mp.fdot(g, theta) / mp.fdot(theta, theta)
                assert mp.norm(g - lam * theta) <= tight * (mp.norm(g) + mp.norm(Phi.T * Phi * theta))
                assert lam >= -tight * mp.norm(Phi.T * Phi)
                if lam > tight * mp.norm(Phi.T * Phi):  # the constraint binds: on the sphere
                    assert B - norm <= tight * B
