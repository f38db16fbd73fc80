"""The private covariances (dpfda.mechanisms.covariance): maps, sensitivity, releases, refusals.

The privacy checks here are computed outside the code they check: the sensitivity of the
packed second moment from the records' own outer products (numpy's ``np.outer`` and the
Frobenius norm, never ``pack_outer``), the batch-independence of one record's map by
calling the map on the record alone and inside batches of other records (hypothesis),
with a map that depends on its batch as the negative control.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpfda
from dpfda.maths.rounding import eigh_rtol
from dpfda.maths.summation import ROUNDING_FREE, gamma
from dpfda.mechanisms import covariance as cv
from dpfda.mechanisms import secure as S

from _spaces import with_grids

SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=40,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SPACES = with_grids("mid9")  # every space of the registry (tests/_spaces.py): {id: (space, grid)}


# ---------------------------------------------------------------------------
# Free coordinates of symmetric matrices
# ---------------------------------------------------------------------------


def test_packing_keeps_the_frobenius_norm_and_round_trips():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 5, 5))
    A = A + np.swapaxes(A, -1, -2)
    p = cv.pack_symmetric(A)
    assert p.shape == (3, 15) and cv.packed_size(5) == 15
    # p's entries to 2u (fl(√2), the product); each norm's sum of squares γ_K and its square root
    np.testing.assert_allclose(np.linalg.norm(p, axis=-1), np.linalg.norm(A, axis=(-2, -1)),
                               rtol=gamma(2) + gamma(15 + 25 + 2), atol=0)
    np.testing.assert_allclose(cv.unpack_symmetric(p), A, rtol=0, atol=4 * np.finfo(float).eps * np.abs(A).max())
    v = rng.standard_normal(5)
    np.testing.assert_array_equal(cv.pack_outer(v), cv.pack_symmetric(np.outer(v, v)))  # v_j·v_l, then ·fl(√2)
    with pytest.raises(ValueError, match="k\\(k\\+1\\)/2"):
        cv.unpack_symmetric(np.zeros(4))
    with pytest.raises(ValueError, match="square"):
        cv.pack_symmetric(np.zeros((2, 3)))


def test_the_free_coordinates_carry_the_right_noise_law():
    """Noise N(0, σ²) on the packed coordinates is N(0, σ²) on the diagonal and N(0, σ²/2) off it."""
    rng = np.random.default_rng(1)
    Z = cv.unpack_symmetric(rng.standard_normal((40000, cv.packed_size(3))))
    var = Z.var(axis=0)
    # sample variance of 40000 normals: relative standard error sqrt(2/39999)
    se = math.sqrt(2 / 39999)
    assert np.all(np.abs(np.diag(var) - 1.0) <= 4.5 * se)
    off = var[np.triu_indices(3, 1)]
    assert np.all(np.abs(off - 0.5) <= 4.5 * se * 0.5)


# ---------------------------------------------------------------------------
# Sensitivity, from the records' outer products
# ---------------------------------------------------------------------------


def _frobenius(v: np.ndarray, w: np.ndarray) -> float:
    return float(np.linalg.norm(np.outer(v, v) - np.outer(w, w)))


def test_outer_products_of_the_ball_move_by_at_most_sqrt2_r_squared():
    rng = np.random.default_rng(2)
    r = 1.7
    for d in (1, 2, 5):
        worst = 0.0
        for _ in range(2000):
            v, w = rng.standard_normal((2, d))
            v *= r * rng.random() ** (1 / d) / np.linalg.norm(v)
            w *= r * rng.random() ** (1 / d) / np.linalg.norm(w)
            worst = max(worst, _frobenius(v, w))
        # ||v|| <= r to γ_{d+6} (the norm, the scaling's roundings), the outer products and their
        # difference to 2u of |vvᵀ| + |wwᵀ|, the Frobenius norm γ_{d²}: within γ_{d²+2d+16}
        assert worst <= math.sqrt(2) * r * r * (1 + gamma(d * d + 2 * d + 16))
    u, w = np.array([r, 0.0]), np.array([0.0, r])  # orthogonal, on the sphere: attained
    assert _frobenius(u, w) == pytest.approx(math.sqrt(2) * r * r, rel=gamma(6), abs=0)  # r² and √2·r·r


@pytest.mark.parametrize("T", [2, 3, 4, 5, 6])
def test_the_cube_attains_sqrt2_T_when_T_is_even(T):
    """max over corners of ||uuᵀ − vvᵀ||_F is sqrt(2T² − 2(T mod 2)²): √2·T exactly when T is even."""
    corners = np.array(np.meshgrid(*([[-1.0, 1.0]] * T))).reshape(T, -1).T
    best = max(_frobenius(u, v) for u in corners for v in corners)
    assert best == math.sqrt(2 * T * T - 2 * (T % 2))  # integers summed exactly, one correctly rounded sqrt
    assert best <= math.sqrt(2) * T


@pytest.mark.parametrize("kind", sorted(SPACES))
@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_neighbours_move_the_moment_by_at_most_its_sensitivity(kind, method):
    space, grid = SPACES[kind]
    n = 37
    mech = cv.covariance_mechanism(grid, space, 1.3, 1.0, method=method)
    rng = np.random.default_rng(3)
    X0 = 3.0 * rng.standard_normal((n, grid.size))
    worst = 0.0
    for replacement in (-X0[0], 100.0 * rng.standard_normal(grid.size), np.zeros(grid.size), X0[1]):
        X1 = X0.copy()
        X1[0] = replacement
        (_, c0), (_, c1) = mech.summary(X0), mech.summary(X1)
        worst = max(worst, float(np.linalg.norm(c1 - c0)))
        # the moment from the records alone: np.outer of each record's first part
        first0, _ = mech.records(X0)
        first1, _ = mech.records(X1)
        if method == "ptf":
            first0, first1 = first0 / mech.clip, first1 / mech.clip
        direct = _frobenius(first0[0], first1[0]) / n
        # the records' and the two means' roundings: at most moment_excess of the sensitivity (its
        # proof: the rounding part of the neighbours' bound); direct's own (the division by the clip,
        # outer products, norm: γ_{k²+8}) and the norm of c1 − c0 (γ_{K+2})
        tol = (mech.moment_sensitivity(n) * mech.moment_excess(n) + gamma(first0.shape[1] ** 2 + 8) * direct
               + gamma(mech.moment_dim + 2) * float(np.linalg.norm(c1 - c0)))
        assert abs(float(np.linalg.norm(c1 - c0)) - direct) <= tol
    assert worst <= mech.moment_sensitivity(n) * (1 + mech.moment_excess(n))
    assert mech.moment_excess(n) < ROUNDING_FREE  # σ keeps its formula at this n


# ---------------------------------------------------------------------------
# One record's map depends on that record alone (hypothesis), with a negative control
# ---------------------------------------------------------------------------


def batch_independent(rows, X: np.ndarray, order: np.ndarray) -> bool:
    """Whether each row of ``rows(X)`` is bit for bit ``rows`` of that record alone, and in another order."""
    whole = rows(X)
    alone = np.concatenate([rows(X[i : i + 1]) for i in range(X.shape[0])])
    shuffled = rows(X[order])
    return bool(np.array_equal(whole, alone) and np.array_equal(shuffled, whole[order]))


@st.composite
def datasets(draw):
    kind = draw(st.sampled_from(sorted(SPACES)))
    space, grid = SPACES[kind]
    n = draw(st.integers(1, 9))
    exps = draw(st.lists(st.integers(-300, 300), min_size=n, max_size=n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, grid.size)) * np.ldexp(1.0, np.asarray(exps))[:, None]
    return kind, X, rng.permutation(n), draw(st.sampled_from(["ftp", "ptf"]))


@SETTINGS
@given(datasets())
def test_a_records_map_is_a_function_of_that_record_alone(case):
    kind, X, order, method = case
    space, grid = SPACES[kind]
    mech = cv.covariance_mechanism(grid, space, 2.0, 1.0, method=method)
    assert batch_independent(lambda Y: mech.records(Y)[1], X, order)
    assert batch_independent(lambda Y: mech.records(Y)[0], X, order)
    # the simulations' one call for the batch gives the release's bits
    for fast, alone in zip(mech.records(X, exact=False), mech.records(X)):
        assert np.array_equal(fast.view(np.uint64), alone.view(np.uint64))
    # the summaries: any order, any grouping into a batch of datasets
    m, c = mech.summary(X)
    m2, c2 = mech.summary(X[order])
    mb, cb = mech.summary(np.stack([X[order], X]))
    assert np.array_equal(m, m2) and np.array_equal(c, c2)
    assert np.array_equal(mb[1], m) and np.array_equal(cb[0], c)


def test_the_batch_check_catches_a_map_that_reads_its_batch():
    """Negative control: clipping at the batch's largest value is not a per-record map."""
    X = np.random.default_rng(4).standard_normal((5, 6))
    leaky = lambda Y: cv.pack_outer(Y / np.max(np.abs(Y)))  # noqa: E731
    assert not batch_independent(leaky, X, np.arange(5)[::-1])
    assert batch_independent(lambda Y: cv.pack_outer(cv.unit_clipped(Y, 0.5)), X, np.arange(5)[::-1])


# ---------------------------------------------------------------------------
# Releases
# ---------------------------------------------------------------------------


def _data(kind: str, n: int, seed: int = 5) -> np.ndarray:
    space, grid = SPACES[kind]
    rng = np.random.default_rng(seed)
    return rng.uniform(-0.4, 0.4, (n, grid.size))


@pytest.mark.parametrize("kind", sorted(SPACES))
@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_a_release_is_its_two_gaussian_outputs_and_their_post_processing(kind, method):
    space, grid = SPACES[kind]
    X = _data(kind, 30)
    mech = cv.covariance_mechanism(grid, space, 1.5, 2.0, method=method, mean_share=0.3)
    # μ·sqrt(share), μ·sqrt(1 − share) and hypot: 5 roundings
    assert mech.mu == 2.0 and math.hypot(mech.mu_mean, mech.mu_cov) == pytest.approx(2.0, rel=gamma(5), abs=0)
    rel = mech.release(X, np.random.default_rng(6))
    # the release's draw order: both summaries, then the mean's normals, then the moment's
    rng = np.random.default_rng(6)
    m, c = mech.summary(X)
    again = mech.privatize(m, c, rng.standard_normal(mech.mean.noise_dim), rng.standard_normal(mech.moment_dim), 30)
    assert np.array_equal(again.coef, rel.coef) and np.array_equal(again.noisy_moment, rel.noisy_moment)
    # every array is a function of the Gaussian outputs
    post = mech.post(mech.mean.post_process(rel.mean.noisy_coordinates, 30), rel.noisy_moment, 30)
    assert np.array_equal(post.coef, rel.coef) and np.array_equal(post.unprojected, rel.unprojected)
    # nothing with an axis of length n; the pickle holds the same, and loads
    for obj in (rel, rel.mean):
        for name, value in vars(obj).items():
            assert not (isinstance(value, np.ndarray) and 30 in value.shape), name
    back = pickle.loads(pickle.dumps(rel))
    assert np.array_equal(back.coef, rel.coef) and back.mu == rel.mu
    # the projected operator is positive semidefinite in the metric; components are orthonormal there
    S, _ = cv.metric_root(mech.geometry)
    lam = np.linalg.eigvalsh(S @ rel.coef @ S)
    # VΛ₊Vᵀ and S·S⁻¹(·)S⁻¹·S are congruences of a PSD matrix (PSD whatever V's orthogonality): only the
    # products round, d·γ_{2d+2}·κ(S)² of the norm each (three of them), and eigvalsh's backward error
    d = S.shape[0]
    floor = (3 * d * gamma(2 * d + 2) * np.linalg.cond(S) ** 2 + eigh_rtol(d)) * np.abs(lam).max()
    assert lam.min() >= -floor
    vals, vecs = rel.components()
    # SS⁻¹U: U's orthonormality (eigh_rtol) and S·S⁻¹ − I (eigh's, √κ(G) = κ(S), and the products' γ_{2d+2})
    k_s = np.linalg.cond(S)
    np.testing.assert_allclose((S @ vecs).T @ (S @ vecs), np.eye(vecs.shape[1]), rtol=0,
                               atol=4 * (2 * eigh_rtol(d) + d * gamma(2 * d + 2)) * k_s**2)
    assert np.all(np.diff(vals) <= 0)
    assert rel.eigenfunctions(np.linspace(0, 1, 7), 2).shape == (2, 7)
    assert rel.covariance([0.1, 0.5], np.linspace(0, 1, 3)).shape == (2, 3)


@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_the_projection_never_increases_the_error(method):
    space, grid = SPACES["legendre"]
    rng = np.random.default_rng(7)
    theta = rng.standard_normal((40, 4)) * 0.2
    X = space.evaluate(theta, grid)
    mech = cv.covariance_mechanism(grid, space, 1.5, 1.0, method=method)
    m, c = mech.summary(X)
    rel = mech.privatize(m, c, rng.standard_normal((500, mech.mean.noise_dim)),
                         rng.standard_normal((500, mech.moment_dim)), 40)
    target = cv.sample_covariance(theta)
    raw = cv.hs_error(rel.unprojected, target, mech.geometry)
    # non-expansive projection onto a convex set holding the target (S = I in H_m), of A + E: eigh's
    # backward error E and V's departure from orthogonality (3·eigh_rtol·||A||₂), VΛ₊Vᵀ's products
    # (d·γ_{d+2}·||A||₂), √d of them in Frobenius norm; each squared error rounds by γ_{d²+4}
    d = mech.geometry.dim
    delta = np.sqrt(d) * (3 * eigh_rtol(d) + d * gamma(d + 2)) * np.linalg.norm(rel.unprojected, 2, axis=(-2, -1))
    g = gamma(d * d + 4)
    assert np.all(rel.error(target) <= (np.sqrt(raw * (1 + g)) + delta) ** 2 * (1 + g))
    assert np.mean(rel.error(target) < raw) > 0.5


def test_secure_releases_go_through_opendp_with_the_declared_sensitivity():
    space, grid = SPACES["legendre"]
    X = _data("legendre", 25)
    for method in ("ftp", "ptf"):
        mech = cv.covariance_mechanism(grid, space, 1.0, 1.0, method=method, secure=True)
        rel = mech.release(X, None)
        assert rel.secure and rel.mean.secure and rel.shape == ()
        sigma = mech.moment_sigma(25)
        rho = float(S.gaussian_measurement(sigma).map(mech.declared_moment_sensitivity(25)))
        assert rho <= mech.mu_cov**2 / 2 * (1 + 1e-9)


def test_public_parameters_are_refused_by_name_before_the_data_are_read():
    space, grid = SPACES["legendre"]

    class Unreadable:
        def __array__(self, *args, **kwargs):
            raise AssertionError("the data were read")

    with pytest.raises(ValueError, match="mean_share"):
        cv.covariance_mechanism(grid, space, 1.0, 1.0, mean_share=1.0)
    with pytest.raises(ValueError, match="method"):
        cv.covariance_mechanism(grid, space, 1.0, 1.0, method="both")
    with pytest.raises(ValueError, match="'ptf' only"):
        cv.covariance_mechanism(grid, space, 1.0, 1.0, clip=1.0)
    with pytest.raises(ValueError, match="2\\^480"):
        cv.covariance_mechanism(grid, space, 2.0**500, 1.0)
    with pytest.raises(ValueError, match="mu"):
        cv.covariance_mechanism(grid, space, 1.0, -1.0)
    with pytest.raises(TypeError, match="FunctionSpace"):
        cv.covariance_mechanism(grid, "legendre", 1.0, 1.0)  # type: ignore[arg-type]
    mech = cv.covariance_mechanism(grid, space, 1.0, 1.0, n=10)
    with pytest.raises(TypeError, match="rng"):
        mech.release(Unreadable(), None)
    with pytest.raises(ValueError, match="n=10"):
        mech.release(np.zeros((11, grid.size)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="2\\^-40"):
        cv.covariance_mechanism(grid, space, 1.0, 1e13, n=10)


def test_sample_covariance_and_angles_on_a_known_case():
    geom = dpfda.LegendreSpace(3).at(dpfda.uniform_grid(5))
    G = np.diag([3.0, 2.0, 1.0])
    vals, vecs = cv.principal_components(G, geom)
    # eigh's backward error e·||G|| = 3e moves eigenvalues by as much, eigenvectors by 3e/gap + e (gap 1)
    e = eigh_rtol(3)
    np.testing.assert_allclose(vals, [3.0, 2.0, 1.0], rtol=0, atol=3 * e)
    np.testing.assert_allclose(np.abs(vecs), np.eye(3), rtol=0, atol=4 * e)
    c, s = math.cos(0.3), math.sin(0.3)
    Rot = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    # each component to 4e + Rot·G·Rotᵀ's rounding (18γ₃ over the gap 1), cos of the angle to twice that,
    # arccos amplifies by 1/sin 0.3 < 3.4; cos 0.3 and sin 0.3 round too
    tol = 7 * (4 * e + gamma(54)) + gamma(4)
    assert cv.component_angles(Rot @ G @ Rot.T, G, geom, 2) == pytest.approx([0.3, 0.3], rel=0, abs=tol)
    theta = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(cv.sample_covariance(theta), np.diag([1.0, 0.0, 0.0]))  # exact in binary


@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_curves_on_the_grid_release_the_bits_of_the_array_and_own_points_are_refused(method):
    space, grid = SPACES["legendre"]
    X = _data("legendre", 30)
    mech = cv.covariance_mechanism(grid, space, 1.5, 2.0, method=method)
    from_array = mech.release(X, np.random.default_rng(6))
    from_curves = mech.release(dpfda.Curves(X, grid), np.random.default_rng(6))
    assert np.array_equal(from_array.coef, from_curves.coef)
    assert np.array_equal(from_array.noisy_moment, from_curves.noisy_moment)
    own = dpfda.Curves([x[:-1] for x in X], [grid[:-1]] * 30)
    with pytest.raises(ValueError, match="needs every curve on the mechanism's grid"):
        mech.release(own, np.random.default_rng(6))
    with pytest.raises(ValueError, match="X's last axis has length"):
        mech.release(X[:, 1:], np.random.default_rng(6))
