"""Property-based test: pair μ <= μ(1 + 1e-9) for every public mechanism.

Hypothesis draws a function space (H_m, a Gaussian-kernel or Brownian RKHS), a
grid, a radius, a budget, a sample size, a magnitude and a kind of data, and a
mechanism — ``ftp``, ``ptf``, their secure paths, and every ``Design`` set
with every noise shape it accepts — and builds neighbouring datasets: random
curves with one replaced (by its negative, by a far-away curve, or by the
mechanism's own worst case), binade-rounding columns (ones and values just
above half an ulp of the running sum), and the worst-case pairs that attain
the sensitivity.

Pair μ is computed here, from first principles: the summary each mechanism
adds its noise to (the stage functions, ``Design.summary``, or the vector given
to OpenDP), and the covariance the release publishes — σ²I on FTP's
coordinates, diag(σ_j²) on PTF's noisy means, σ²LLᵀ on a design's — solved in
this file (a triangular solve, or least squares on the span of a rank-deficient
L, with the condition number checked), never through the mechanism's own
whitening.  The run is deterministic (``derandomize=True``, no example
database), so CI sees the same examples every time.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpfda
from dpfda.mechanisms import secure as S
from dpfda.mechanisms.pipelines import ftp_fit_mean, ptf_clipped_mean
from dpfda_book.mechanisms.designs import Design

TOL = 1e-9  # the proven excess of pair μ over μ (2⁻³¹ + 4u, dpfda.maths.summation), one-sided
SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=150,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclasses.dataclass
class Case:
    space: object
    grid: np.ndarray
    radius: float
    mu: float
    n: int
    magnitude: float
    data: str
    who: int
    seed: int

    def __repr__(self):  # what hypothesis prints for a failing example
        return (f"Case({self.space!r}, grid={self.grid.tolist()}, radius={self.radius!r}, mu={self.mu!r}, "
                f"n={self.n}, magnitude={self.magnitude!r}, data={self.data!r}, who={self.who}, seed={self.seed})")


@st.composite
def cases(draw, *, radius_exp=(-300.0, 288.0)):
    kind = draw(st.sampled_from(["legendre", "gaussian", "brownian"]))
    if kind == "legendre":
        m = draw(st.integers(1, 5))
        space = dpfda.LegendreSpace(m)
        T = draw(st.integers(max(m, 2), m + 3))
    else:
        T = draw(st.integers(2, 6))
        space = dpfda.KernelSpace(dpfda.gaussian_kernel(draw(st.sampled_from([0.1, 0.2, 0.5])))
                                  if kind == "gaussian" else dpfda.brownian_kernel())
    # one point in each of T equal cells (jittered): spread enough for assumptions A.3/A.4
    jitter = draw(st.lists(st.integers(5, 995), min_size=T, max_size=T))
    grid = (np.arange(T) + np.asarray(jitter, dtype=float) / 1000.0) / T
    radius = 10.0 ** draw(st.floats(*radius_exp))
    mu = 10.0 ** draw(st.floats(-1.0, 1.0))
    n = draw(st.one_of(st.integers(1, 16), st.integers(17, 4000), st.integers(2**15, 2**16)))
    magnitude = 10.0 ** draw(st.floats(-300.0, 307.0))
    data = draw(st.sampled_from(["gauss", "mixed", "binade", "far", "worst"]))
    who = draw(st.integers(0, n - 1))
    seed = draw(st.integers(0, 2**32 - 1))
    return Case(space, grid, radius, mu, n, magnitude, data, who, seed)


def _neighbours(case: Case, worst):
    """(X0, X1): one curve differs.  ``worst`` is the mechanism's own worst-case pair (n, T)."""
    rng = np.random.default_rng(case.seed)
    n, T = case.n, case.grid.size
    if case.data == "worst":
        return worst()
    if case.data == "binade":
        # The construction in every column: the first curve at ±c_j (PTF's default
        # clip, B'·a_j: the box's corner, the worst case of PTF), then 2^k copies of a power
        # of two b <= c_j/2 and 2^k values just above half an ulp of 2^k·b, so that the
        # running sum crosses a power of two for one neighbour and not for the other.
        k = max(int(np.log2(max(n - 1, 2) / 2)), 0)
        c = case.radius * case.space.at(case.grid).eval_norm
        base = 2.0 ** (np.frexp(np.min(c))[1] - 2)  # a power of two, so the binades line up
        X0 = np.zeros((n, T))
        X0[1 : 2**k + 1] = base
        X0[2**k + 1 : 2 ** (k + 1) + 1] = base * 2.0 ** (k - 53) * (1 + 2.0**-20)
        X0[0] = c
        X1 = X0.copy()
        X1[0] = -c
        return X0, X1
    X0 = rng.standard_normal((n, T)) * case.magnitude / 8
    if case.data == "mixed":
        X0 *= 10.0 ** rng.uniform(-30, 0, (n, 1))
    X1 = X0.copy()
    if case.data == "far":
        X1[case.who] = rng.standard_normal(T) * 1e300
    else:
        X1[case.who] = -X0[case.who]
    return X0, X1


def _whitened(diff, sigma, L=None) -> float:
    """||(σL)⁻¹ diff|| from the published noise in its coordinates: L None or square, full rank."""
    diff = np.asarray(diff, dtype=float)
    if L is None:
        return float(np.linalg.norm(diff / sigma))
    assert L.shape[0] == L.shape[1], "the noise's coordinates carry a square (full-rank) factor"
    assert np.linalg.cond(L) < 1e10, "outside this test's scope (designs refuse thin noise: h19a)"
    if np.array_equal(L, np.tril(L)):  # triangular, exactly
        w = scipy.linalg.solve_triangular(L, diff, lower=True)
    else:
        w = np.linalg.solve(L, diff)
    return float(np.linalg.norm(w / sigma))  # scaled first: no overflow in the squares


def _check(mu_pair: float, mu: float, case: Case):
    assert np.isfinite(mu_pair), case
    assert mu_pair <= mu * (1 + TOL), f"pair mu exceeds mu by {mu_pair / mu - 1:.3g}: {case!r}"


# ---------------------------------------------------------------------------
# FTP and PTF
# ---------------------------------------------------------------------------


def _try(call):
    """Run a release; a named calibration refusal (ValueError) is a legitimate outcome."""
    try:
        return call()
    except ValueError as exc:
        msg = str(exc)
        assert "noise scale" in msg or "floating point" in msg or "radius must be" in msg, msg
        return None


@SETTINGS
@given(case=cases(), pipeline=st.sampled_from(["ftp", "ptf"]))
def test_ftp_and_ptf(case, pipeline):
    from dpfda.trust import audit

    geom = case.space.at(case.grid)
    method = dpfda.ftp if pipeline == "ftp" else dpfda.ptf

    def worst():
        return audit.worst_case_pair(case.grid, case.space, case.radius, case.n, pipeline=pipeline,
                                     factor=1.0 + 1e3 * (case.seed % 2))

    X0, X1 = _neighbours(case, worst)
    rel = _try(lambda: method(X0, case.grid, case.space, case.radius, case.mu, np.random.default_rng(0)))
    if rel is None:
        return
    if pipeline == "ftp":
        d = ftp_fit_mean(X1, geom, case.radius)[0] - ftp_fit_mean(X0, geom, case.radius)[0]
    else:
        d = ptf_clipped_mean(X1, rel.clip) - ptf_clipped_mean(X0, rel.clip)
    _check(_whitened(d, rel.noise_scale), case.mu, case)


@SETTINGS
@given(case=cases(), pipeline=st.sampled_from(["ftp", "ptf"]))
def test_secure_paths_hand_opendp_a_true_sensitivity(case, pipeline):
    from dpfda.trust import audit

    method = dpfda.ftp if pipeline == "ftp" else dpfda.ptf

    def worst():
        return audit.worst_case_pair(case.grid, case.space, case.radius, case.n, pipeline=pipeline)

    X0, X1 = _neighbours(case, worst)
    calls = []

    def fake(values, scale, sensitivity, mu):
        calls.append((np.array(values, dtype=float), scale, sensitivity, mu))
        return np.array(values, dtype=float)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S, "gaussian_release", fake)
        for X in (X0, X1):
            if _try(lambda X=X: method(X, case.grid, case.space, case.radius, case.mu,
                                       np.random.default_rng(0), secure=True)) is None:
                return
    (v0, scale, sens, mu), (v1, *_) = calls
    assert sens / scale <= mu * (1 + 8 * 2.0**-53)  # scale = sens/μ to a few roundings
    _check(mu * float(np.linalg.norm((v1 - v0) / sens)), mu, case)


# ---------------------------------------------------------------------------
# Every design set × noise shape
# ---------------------------------------------------------------------------

DESIGN_KINDS = [
    dict(region="box", noise="diagonal"), dict(region="box", noise="isotropic"), dict(region="box", noise="matched"),
    dict(region="ball", noise="isotropic"), dict(region="ball", noise="diagonal"), dict(region="ball", noise="matched"),
    dict(region="ellipsoid", noise="ellipsoid"), dict(region="ellipsoid", noise="isotropic"),
    dict(region="ellipsoid", noise="diagonal"),
    dict(region="mix", lam=0.3, noise="matched"), dict(region="mix", lam=0.7, noise="diagonal"),
    dict(region="mix", lam=0.5, noise="isotropic"), dict(region="mix", lam=1.0, noise="ellipsoid"),
    dict(region="mix", lam=0.0, noise="matched"),
]

# Radii (log10) over which the designs are checked: the range ftp and ptf accept
# (1e-300 … 1e288); every design accepts it or refuses with a named error.
DESIGN_RADII = (-300.0, 288.0)


def _build_design(case, kw):
    try:
        return Design(case.grid, case.space, case.radius, **kw)
    except ValueError as exc:  # e.g. ellipsoid noise of rank d < T on a full-dimensional set
        assert "noise" in str(exc) or "T=" in str(exc), str(exc)
        return None


@SETTINGS
@given(case=cases(radius_exp=DESIGN_RADII), kw=st.sampled_from(DESIGN_KINDS))
def test_designs(case, kw):
    des = _build_design(case, kw)
    if des is None:
        return

    def worst():
        return des.worst_case_pair(case.n, scale=1.0 + 1e3 * (case.seed % 2))

    X0, X1 = _neighbours(case, worst)
    sigma = _try(lambda: des.sigma(case.n, case.mu))
    if sigma is None:
        return
    rel = des.mechanism(None, case.mu).release(X0, np.random.default_rng(0))
    assert rel.noise_scale == sigma  # the published scale is the calibrated one
    _check(_whitened(des.summary(X1) - des.summary(X0), rel.noise_scale, rel.coordinate_factor), case.mu, case)
