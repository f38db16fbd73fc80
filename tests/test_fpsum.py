"""Sums that round differently for neighbours, in every mechanism.

Two kinds of worst-case neighbours, on the grid (1/4, 3/4) with H_1 (Φ = (1, 1)ᵀ,
so a curve (x, x) is fitted by x and clipped at ±1):

* **binade** (the issue's): a column [±1, 2^k ones, 2^k values just above half an
  ulp of 2^k].  A sum added in order crosses 2^k with the +1 and not with the −1,
  so every small value rounds up for one neighbour and down for the other: the
  sums differ by 2 + 2^(2k−52)/2 instead of 2 (pair μ = 1 + 1.5e-8 at n = 32,769,
  1.0156 at n = 2^25 + 1).
* **division**: 0/1 data whose exact sums S ± 1 round, once divided by n, in
  opposite directions (found by search): even an exact sum leaves this last
  rounding, 1.9e-9 of the sensitivity at n ≈ 2^25 — the reason σ must cover it.

Pair μ is computed here from first principles: the summary each mechanism
hands its noise step (the stage functions, ``Design.summary``, or the vector
given to OpenDP), whitened with the release's published noise scale and noise
factor L (a triangular solve in this file, not the design's own whitening).  A
release difference under one noise stream would add the rounding of
summary + noise, which is post-processing of the Gaussian mechanism's output
and at n ≈ 2^25 alone is worth 1e-9: so the summaries are compared, and a
separate test checks that each release is exactly its summary plus its noise.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.linalg

import dpfda
from dpfda.maths.summation import gamma
from dpfda.mechanisms import secure as S
from dpfda.mechanisms.pipelines import ftp_fit_mean, ptf_clipped_mean
from dpfda_book.mechanisms.designs import Design

GRID = np.array([0.25, 0.75])
SPACE = dpfda.LegendreSpace(1)
MU, RADIUS = 1.0, 1.0
TOL = 1e-9  # the proven excess of pair μ over μ (2⁻³¹ + 4u, dpfda.maths.summation), for one-sided checks


def _column_pair(col: np.ndarray):
    X0 = np.repeat(col[:, None], 2, axis=1)
    X1 = X0.copy()
    X1[0] = -X1[0]
    return X0, X1


@functools.lru_cache(maxsize=1)
def _pair(name: str):
    if name.startswith("binade"):
        k = {"binade-32769": 14, "binade-2^25": 24}[name]
        m = 2**k
        half_ulp = 2.0 ** (k - 53) * (1 + 2.0**-20)  # just above half an ulp of 2^k
        col = np.concatenate([[1.0], np.ones(m), np.full(m, half_ulp)])
    else:  # division: S + 1 and S - 1 over n round apart (an exhaustive search found these)
        n, s = 34_257_953, 31_287_094
        col = np.zeros(n)
        col[: s + 1] = 1.0
    return _column_pair(col)


PAIRS = ["binade-32769", "binade-2^25", "division-2^25"]


def _whitened_norm(diff, sigma, L=None) -> float:
    """||(σL)⁻¹ diff||: L lower triangular (published), solved here, never by the design."""
    diff = np.asarray(diff, dtype=float)
    if L is None:
        return float(np.linalg.norm(diff / sigma))
    assert np.array_equal(L, np.tril(L)), "the noise factors used here are triangular"
    assert np.linalg.cond(L) < 1e8, "a noise factor this ill-conditioned is out of this test's scope"
    return float(np.linalg.norm(scipy.linalg.solve_triangular(L, diff, lower=True) / sigma))


DESIGNS = {
    "box": dict(region="box", noise="diagonal"),
    "box-isotropic": dict(region="box", noise="isotropic"),
    "ball": dict(region="ball", noise="isotropic"),
    "mix": dict(region="mix", lam=0.5),
}
MECHANISMS = ["ptf", "ftp", "ptf-secure", "ftp-secure", *(f"design-{k}" for k in DESIGNS)]


def _captured_release(method, X):
    """What ``ftp``/``ptf`` with ``secure=True`` hand OpenDP: (values, scale, sensitivity, mu)."""
    calls = []

    def fake(values, scale, sensitivity, mu):
        calls.append((np.array(values, dtype=float), scale, sensitivity, mu))
        return np.array(values, dtype=float)  # no noise: only the handed-over vector matters here

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S, "gaussian_release", fake)
        method(X, GRID, SPACE, RADIUS, MU, np.random.default_rng(0), secure=True)
    return calls[0]


def _pair_mu(mech: str, X0, X1) -> float:
    """Pair μ of ``mech`` on (X0, X1), from the summaries and the published noise."""
    if mech == "ptf":
        rel = dpfda.ptf(X0, GRID, SPACE, RADIUS, MU, np.random.default_rng(0))
        return _whitened_norm(ptf_clipped_mean(X1, rel.clip) - ptf_clipped_mean(X0, rel.clip), rel.noise_scale)
    if mech == "ftp":
        geom = SPACE.at(GRID)
        rel = dpfda.ftp(X0, GRID, SPACE, RADIUS, MU, np.random.default_rng(0))
        return _whitened_norm(ftp_fit_mean(X1, geom, RADIUS)[0] - ftp_fit_mean(X0, geom, RADIUS)[0],
                              rel.noise_scale)
    if mech.endswith("secure"):
        method = dpfda.ftp if mech.startswith("ftp") else dpfda.ptf
        v0, scale, sens, mu = _captured_release(method, X0)
        v1, *_ = _captured_release(method, X1)
        # OpenDP trusts the declared sensitivity: the vectors it gets must differ by no more,
        # and its map of that sensitivity must stay within the budget.
        assert sens / scale <= mu * (1 + gamma(8))  # scale = sens/μ to a few roundings
        return mu * float(np.linalg.norm((v1 - v0) / sens))
    des = Design(GRID, SPACE, RADIUS, **DESIGNS[mech.removeprefix("design-")])
    sigma = des.sigma(X0.shape[0], MU)  # what a release publishes (checked below at small n)
    return _whitened_norm(des.summary(X1) - des.summary(X0), sigma, des.L)


# Pairs outermost, so that each pair is built once (the cache holds one).  The box with
# isotropic noise averages exactly what design-box does; at n ≈ 2^25 it is left out.
# The pairs at n ≈ 2^25 take seconds each: marked slow (left out of `make test-quick`).
CASES = [pytest.param(name, mech, id=f"{name}-{mech}",
                      marks=[pytest.mark.slow] if name.endswith("2^25") else [])
         for name in PAIRS for mech in MECHANISMS
         if name == "binade-32769" or mech != "design-box-isotropic"]


@pytest.mark.parametrize(("name", "mech"), CASES)
def test_rounding_neighbours_stay_within_mu(name, mech):
    X0, X1 = _pair(name)
    mu_pair = _pair_mu(mech, X0, X1)
    assert mu_pair <= MU * (1 + TOL), f"pair mu exceeds mu by {mu_pair / MU - 1:.3g}"
    assert mu_pair >= MU * (1 - 1e-3), mu_pair  # a floor, not a rounding bound: the pair nearly attains μ


def test_each_release_is_its_summary_plus_its_noise():
    """The summaries compared above are the ones the releases add noise to (bit for bit)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((101, 2)) * 3
    geom = SPACE.at(GRID)
    z = np.random.default_rng(9).standard_normal(geom.dim)
    rel = dpfda.ftp(X, GRID, SPACE, RADIUS, MU, np.random.default_rng(9))
    np.testing.assert_array_equal(rel.coef, ftp_fit_mean(X, geom, RADIUS)[0] + rel.noise_scale * z)
    z = np.random.default_rng(9).standard_normal(GRID.size)
    rel = dpfda.ptf(X, GRID, SPACE, RADIUS, MU, np.random.default_rng(9))
    np.testing.assert_array_equal(rel.noisy_means, ptf_clipped_mean(X, rel.clip) + rel.noise_scale * z)
    for kw in DESIGNS.values():
        des = Design(GRID, SPACE, RADIUS, **kw)
        rel = des.mechanism(None, MU).release(X, np.random.default_rng(9))
        z = np.random.default_rng(9).standard_normal(des.L.shape[1])
        np.testing.assert_array_equal(rel.noisy_means, des.summary(X) + rel.noise_scale * (z @ des.L.T))
        assert rel.noise_scale == des.sigma(X.shape[0], MU)


# ---------------------------------------------------------------------------
# The exact mean itself
# ---------------------------------------------------------------------------


def test_fixed_point_mean_is_within_its_bound_of_the_exact_mean():
    from fractions import Fraction

    from dpfda.maths.summation import MEAN_ROUNDING, fixed_point_mean

    rng = np.random.default_rng(20261201)
    for _ in range(150):
        n, k = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        b = 10.0 ** rng.uniform(-310, 300)
        V = rng.uniform(-1, 1, (2, n, k)) * b * 10.0 ** rng.uniform(-40, 0, (2, n, 1))
        y = fixed_point_mean(V, b)
        for i in range(2):
            for j in range(k):
                exact = sum(Fraction(float(v)) for v in V[i, :, j]) / n
                err = abs(Fraction(float(y[i, j])) - exact)
                # one rounding of the exact mean, the cut at 2^(E-90) (E: 2^E >= 2b) and the subnormal range
                allowed = (Fraction(MEAN_ROUNDING) * abs(exact) + Fraction(1, 2**1075)
                           + Fraction(b) * Fraction(2.0**-88))
                assert err <= allowed


def test_fixed_point_mean_ignores_order_and_batch_layout():
    from dpfda.maths.summation import fixed_point_mean

    rng = np.random.default_rng(5)
    V = rng.standard_normal((4, 999, 3)) * 10.0 ** rng.uniform(-20, 0, (4, 999, 1))
    ref = fixed_point_mean(V, 50.0)
    perm = rng.permutation(999)
    np.testing.assert_array_equal(fixed_point_mean(V[:, perm], 50.0), ref)
    for r in range(4):
        np.testing.assert_array_equal(fixed_point_mean(V[r], 50.0), ref[r])


def test_fixed_point_mean_refuses_points_outside_their_set():
    from dpfda.maths.summation import fixed_point_mean

    with pytest.raises(ValueError, match="outside the bound"):
        fixed_point_mean(np.array([[1.0], [2.5]]), 2.0)
    with pytest.raises(ValueError, match="at least one curve"):
        fixed_point_mean(np.zeros((0, 2)), 1.0)


def _first_principles_mean(V, bound):
    """The documented result of fixed_point_mean, in Python integers: cut, exact sum, one rounding."""
    import math
    from fractions import Fraction

    n, k = V.shape
    out = []
    for j in range(k):
        E = math.frexp(bound[j])[1] + 1  # 2^E >= 2·bound
        N = sum(int(Fraction(float(v)) * 2 ** (90 - E)) for v in V[:, j])  # int() truncates towards 0
        a = abs(N)
        f = (float(a >> 60) * 2.0**60 + float((a >> 30) & (2**30 - 1)) * 2.0**30) + float(a & (2**30 - 1))
        y = math.ldexp(f / n, E - 90)
        out.append(-y if N < 0 else y)
    return np.array(out)


@pytest.mark.parametrize("n", [1, 255, 256, 257, 4096, 40000])
@pytest.mark.parametrize("bounds", ["mixed", "one scale"])
def test_fixed_point_mean_is_the_cut_summed_exactly_then_rounded_once(n, bounds):
    """Every limb near its largest (values at the bound, the grid's last bits set), across groups and chunks."""
    from dpfda.maths.summation import fixed_point_mean

    rng = np.random.default_rng(n)
    bound = np.array([1.0, 3.0, 2.0**-1000, 2.0**950] if bounds == "mixed" else [1.5, 1.0, 1.75, 1.25])
    ulps = rng.integers(0, 2**20, (n, 4)) * 2.0**-52  # values within 2^-32 of ±bound·(1 + 2^-20)
    V = rng.choice([-1.0, 1.0], (n, 4)) * bound * (1.0 + 2.0**-20) * (1.0 - ulps)
    V[::3] *= 2.0 ** -rng.integers(1, 100, V[::3].shape)  # and many whose cut truncates
    y = fixed_point_mean(V, bound)
    np.testing.assert_array_equal(y, _first_principles_mean(V, bound))
    np.testing.assert_array_equal(fixed_point_mean(V[::-1], bound), y)
    P = np.abs(V)  # one sign: the largest partial sums of limbs
    np.testing.assert_array_equal(fixed_point_mean(P, bound), _first_principles_mean(P, bound))
    # Sums that cancel but for the last units of the grid, where a wrong cut or an inexact
    # partial sum (of a group of limbs, a chunk) would show: x, then -x moved by a few ulps.
    m = n // 2
    x = np.abs(V[:m]) * rng.choice([1.0, 2.0**-40], (m, 4))
    C = np.zeros((n, 4))
    C[:m], C[m : 2 * m] = x, -(x + rng.integers(-3, 4, (m, 4)) * np.spacing(x))
    np.testing.assert_array_equal(fixed_point_mean(C, bound), _first_principles_mean(C, bound))


def _rotated_in_order(Z, Vt):
    """Each row of Z turned by Vt on its own, products added in the order of the basis."""
    W = Z[..., :1] * Vt[0]
    for k in range(1, Vt.shape[0]):
        W += Z[..., k : k + 1] * Vt[k]
    return W


@pytest.mark.parametrize("shape", [(1, 4), (3, 300, 4), (2, 40000, 4), (5, 7, 9), (700, 1)])
@pytest.mark.parametrize("radius", [1.1, 2.0**-1000, 2.0**900])
def test_fixed_point_ball_mean_is_the_mean_of_the_rotated_points(shape, radius):
    """Bit for bit the mean of each point rotated on its own, then fixed_point_mean; any batch layout."""
    from dpfda.maths.summation import bound_ball_rows, fixed_point_ball_mean, fixed_point_mean

    rng = np.random.default_rng(sum(shape))
    d = shape[-1]
    Vt = np.linalg.qr(rng.standard_normal((d, d)))[0].T
    Z = rng.standard_normal(shape)
    Z *= radius * rng.uniform(0, 1, shape[:-1] + (1,)) / np.linalg.norm(Z, axis=-1, keepdims=True)
    Z[..., ::3, :] *= 10.0 ** rng.uniform(-300, 0, Z[..., ::3, :1].shape)
    W = _rotated_in_order(Z, Vt)
    assert np.array_equal(bound_ball_rows(W.copy(), radius), W)  # all inside: nothing scaled
    y = fixed_point_ball_mean(Z, Vt, radius)
    np.testing.assert_array_equal(y, fixed_point_mean(W, radius))
    if len(shape) == 3:
        for b in range(shape[0]):
            np.testing.assert_array_equal(fixed_point_ball_mean(Z[b], Vt, radius), y[b])
        perm = rng.permutation(shape[1])
        np.testing.assert_array_equal(fixed_point_ball_mean(Z[:, perm], Vt, radius), y)


def test_fixed_point_ball_mean_brings_points_outside_the_ball_inside():
    from fractions import Fraction

    from dpfda.maths.summation import RECORD_SLACK, fixed_point_ball_mean

    rng = np.random.default_rng(3)
    for radius in (1.0, 0.7, 2.0**-1060, 2.0**959):
        for d in (1, 3, 8):
            Vt = np.linalg.qr(rng.standard_normal((d, d)))[0].T
            z = rng.standard_normal((1, d))
            z *= radius * (1.0 + 2.0 ** rng.uniform(-38, 1)) / np.linalg.norm(z)  # just or far outside
            y = fixed_point_ball_mean(z, Vt, radius)  # n = 1: the mean is the (cut) point itself
            norm2 = sum(Fraction(float(v)) ** 2 for v in y)
            tiny = Fraction(d) * Fraction(2.0**-1074) ** 2 * 4
            assert norm2 <= (Fraction(radius) * (1 + Fraction(RECORD_SLACK))) ** 2 + tiny


def test_fixed_point_ball_mean_refuses_what_is_not_a_point():
    from dpfda.maths.summation import fixed_point_ball_mean

    with pytest.raises(ValueError, match="not finite"):
        fixed_point_ball_mean(np.array([[0.1, np.nan], [0.0, 0.2]]), np.eye(2), 1.0)
    with pytest.raises(ValueError, match="basis"):
        fixed_point_ball_mean(np.zeros((3, 2)), np.eye(3), 1.0)
    with pytest.raises(ValueError, match="at least one curve"):
        fixed_point_ball_mean(np.zeros((0, 2)), np.eye(2), 1.0)
    with pytest.raises(ValueError, match="radius"):
        fixed_point_ball_mean(np.zeros((3, 2)), np.eye(2), 0.0)


def test_calibration_keeps_the_formula_below_the_free_excess_and_covers_it_above():
    from dpfda.mechanisms.pipelines import ftp_rounding_excess, ftp_sigma, ptf_rounding_excess, ptf_sigmas

    # n = 10^5: excess ≈ 4e-11, σ is the paper's formula bit for bit
    assert ftp_sigma(10**5, 1.0, 1.0, rounding=ftp_rounding_excess(10**5, 4, 1.0)) == ftp_sigma(10**5, 1.0, 1.0)
    # n = 2^25: excess ≈ 1.5e-8, σ grows by that much and no more
    n = 2**25
    eps = ptf_rounding_excess(n, [1.0, 1.0])
    assert 1e-8 < eps < 2e-8
    ratio = ptf_sigmas(n, [1.0, 1.0], 1.0, rounding=eps) / ptf_sigmas(n, [1.0, 1.0], 1.0)
    assert np.all(ratio >= 1 + eps) and np.all(ratio <= 1 + 2 * eps)
    # a radius far too small for floating point at this n is refused, before any data
    with pytest.raises(ValueError, match="cannot resolve the sensitivity"):
        dpfda.ftp(np.zeros((1000, 2)), GRID, SPACE, 1e-318, 1e-14, np.random.default_rng(0))
