"""The release path of a ReleaseSpec, held to the privacy rules by an adversary choosing their own record.

``FTP(spec).release(curves)`` maps each record into the public frame of ``lower``/``upper``
(:meth:`dpfda.PublicFrame.to_unit`) before the library's mechanism sees it, and curves on
their own points (a :class:`dpfda.Curves`) are mapped subject by subject.  The library's
mechanisms are tested for per-record maps in ``test_record_independence.py``; these tests
check the step in front of them, the one a practitioner's data go through:

* what the mechanism is handed for a victim is the same bits (compared as ``uint64``)
  whatever the other records are, their number and their order: records at ±1e300, ±the
  largest float, ±the smallest subnormal, exactly at the band's ends and one ulp outside
  them, subjects with one point, points exactly at the domain's ends, a periodic domain;
* a pair of datasets that differ in the adversary's record, worst-case values on either
  side, gives OpenDP two vectors no further apart than the sensitivity it is told (realised
  μ at most μ(1 + 10⁻⁹), the package's calibration bound: see ``test_record_independence``);
* neither the release nor the mechanism, nor their pickles, holds an array with an axis of
  length n or a random generator.

The negative control is a frame map that is plausible and wrong: it divides by the batch's
largest deviation from the centre (a "scale from the data" so that nothing overflows), a
map that depends on the other records.  Both checks see it.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_adversarial import _candidate_generators, _noise_rebuilt

import dpfda
from dpfda import FTP, PTF, Curves, PublicFrame, ReleaseSpec
from dpfda.mechanisms import secure as S
from dpfda.mechanisms.mechanism_type import Mechanism
from dpfda.mechanisms.pipelines import ftp_fit_mean

# Worst-case records lie far outside any range: the curator's warning about them is expected, and what
# it changes (nothing in the release) is tested in test_specification.py.
pytestmark = pytest.mark.filterwarnings("ignore::dpfda.CuratorWarning")

TOL = 1e-9  # realised μ may exceed μ by this relative amount (test_record_independence: the calibration bound)
BIG = float(np.finfo(float).max)
TINY = float(np.nextafter(0.0, 1.0))  # the smallest subnormal, 5e-324
DOMAIN = (0.0, 20.0)
GRID = np.array([0.0, 1.0, 2.5, 4.0, 6.0, 8.0, 10.0, 12.5, 15.0, 17.5])  # no 20: a periodic space's stop is its start
LOWER, UPPER = 60.0, 210.0
EXTREMES = [1e300, -1e300, BIG, -BIG, TINY, -TINY, 0.0, LOWER, UPPER,
            float(np.nextafter(UPPER, np.inf)), float(np.nextafter(LOWER, -np.inf))]
PROPS = settings(derandomize=True, database=None, deadline=None, max_examples=40,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _spec(space: str, *, grid: bool = True, vector_band: bool = False, secure: bool = False) -> ReleaseSpec:
    lower, upper = (LOWER + GRID, UPPER - GRID) if vector_band else (LOWER, UPPER)
    return ReleaseSpec(space=space, domain=DOMAIN, grid=GRID if grid else None, lower=lower, upper=upper,
                       mu=1.0, secure=secure)


def _handed(release: Callable[[], object]) -> list:
    """What the specified mechanism hands the library's Mechanism.release in ``release()``."""
    seen: list = []
    original = Mechanism.release

    def spy(self: Mechanism, X: object, rng: object, **kwargs: object) -> object:
        seen.append(X)
        return original(self, X, rng, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Mechanism, "release", spy)
        release()
    return seen


def _opendp_vectors(release: Callable[[], object]) -> list:
    """The vectors (values, scale, sensitivity, μ) handed to OpenDP by ``release()``, no noise added."""
    calls: list = []

    def fake(values: object, scale: float, sensitivity: float, mu: float) -> np.ndarray:
        calls.append((np.array(values, dtype=float), float(scale), float(sensitivity), float(mu)))
        return np.array(values, dtype=float)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S, "gaussian_release", fake)
        release()
    return calls


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float).view(np.uint64)


def _victim_row(spec: ReleaseSpec, method: Callable, X: np.ndarray, i: int) -> np.ndarray:
    """The bits the mechanism is handed for row ``i`` of ``X`` (an (n, T) array on the grid)."""
    (mapped,) = _handed(lambda: method(spec).release(X, np.random.default_rng(0)))
    return _bits(np.asarray(mapped)[i])


def _victim_subject(spec: ReleaseSpec, values: list, points: list, i: int) -> tuple[np.ndarray, np.ndarray]:
    """The bits (points, values) the mechanism is handed for subject ``i`` of curves on their own points."""
    curves = Curves(values, points, DOMAIN)
    (mapped,) = _handed(lambda: FTP(spec).release(curves, np.random.default_rng(0)))
    t, y = mapped.subjects()[i]
    return _bits(t), _bits(y)


def _batch_scaled(self: PublicFrame, X: object) -> object:
    """Broken on purpose: centre on r, then divide by the batch's largest deviation (not the public scale)."""
    if isinstance(X, Curves):
        subjects = X.subjects()
        dev = [x - self.centre_at(t) for t, x in subjects]
        s = max(self.scale, *(float(np.abs(d).max()) for d in dev))
        return Curves([d / s for d in dev], [t for t, _ in subjects], (0.0, 1.0))
    dev = np.asarray(X, dtype=float) - self.centre_at(self.grid)
    return dev / max(self.scale, float(np.abs(dev).max()))


# ---------------------------------------------------------------------------
# A victim's mapped record is its own, bit for bit
# ---------------------------------------------------------------------------

_values = st.one_of(st.sampled_from(EXTREMES), st.floats(LOWER - 50, UPPER + 50))


def _rows_agree(space: str, method: Callable, vector_band: bool, X: np.ndarray, others: np.ndarray) -> bool:
    """Row 0 of X is handed over as the same bits alone, in X, in X reversed, and among other rows."""
    spec = _spec(space, vector_band=vector_band)
    n = X.shape[0]
    want = _victim_row(spec, method, X[:1], 0)
    return all(np.array_equal(got, want) for got in (
        _victim_row(spec, method, X, 0),
        _victim_row(spec, method, X[::-1], n - 1),
        _victim_row(spec, method, np.concatenate([others, X[:1], others]), others.shape[0])))


@PROPS
@given(data=st.data(), space=st.sampled_from(["legendre:4", "fourier:5"]),
       method=st.sampled_from([FTP, PTF]), vector_band=st.booleans())
def test_a_victims_row_is_mapped_alone_whatever_the_others(data: st.DataObject, space: str, method: Callable,
                                                            vector_band: bool) -> None:
    n = data.draw(st.integers(2, 6), label="n")
    X = np.array(data.draw(st.lists(st.lists(_values, min_size=GRID.size, max_size=GRID.size),
                                    min_size=n, max_size=n), label="X"))
    others = np.array(data.draw(st.lists(st.lists(_values, min_size=GRID.size, max_size=GRID.size),
                                         min_size=1, max_size=4), label="others"))
    assert _rows_agree(space, method, vector_band, X, others)


def _subjects_agree(space: str, grid: bool, values: list, points: list, others_v: list, others_p: list) -> bool:
    """Subject 0 is handed over as the same bits alone, among the subjects given, and among others."""
    spec = _spec(space, grid=grid)
    want = _victim_subject(spec, values[:1], points[:1], 0)
    cases = [_victim_subject(spec, values, points, 0),
             _victim_subject(spec, values[::-1], points[::-1], len(values) - 1),
             _victim_subject(spec, others_v + values[:1] + others_v, others_p + points[:1] + others_p,
                             len(others_v))]
    return all(np.array_equal(t, want[0]) and np.array_equal(y, want[1]) for t, y in cases)


_POINTS = [0.0, 20.0, 10.0, 2.5, 1e-300, float(np.nextafter(20.0, 0.0)), 7.3, 19.0,  # domain ends among them
           15.999999999999991, 15.999999999999993]  # 1 ulp apart, one point of [0, 1]: x/20 rounds them together


def _meet_on_unit(points: list) -> bool:
    """The public rule: distinct points that the domain's map t = x/20 rounds together are refused."""
    return bool(np.any(np.diff((np.asarray(points) - DOMAIN[0]) / (DOMAIN[1] - DOMAIN[0])) <= 0))


@st.composite
def _subject(draw: st.DrawFn) -> tuple[list, list]:
    k = draw(st.integers(1, 6))  # one point is a subject too
    pts = sorted(draw(st.lists(st.one_of(st.sampled_from(_POINTS), st.floats(0.0, 20.0)),
                               min_size=k, max_size=k, unique=True)))
    return draw(st.lists(_values, min_size=k, max_size=k)), pts


@PROPS
@given(data=st.data(), space=st.sampled_from(["legendre:4", "fourier:5"]), grid=st.booleans())
def test_a_victim_on_its_own_points_is_mapped_alone_whatever_the_others(data: st.DataObject, space: str,
                                                                        grid: bool) -> None:
    subjects = data.draw(st.lists(_subject(), min_size=2, max_size=5), label="subjects")
    others = data.draw(st.lists(_subject(), min_size=1, max_size=3), label="others")
    if data.draw(st.booleans(), label="others share the victim's points"):
        others = [(v, subjects[0][1]) for v, _ in others if len(v) == len(subjects[0][1])] or others
    args = (space, grid, [v for v, _ in subjects], [p for _, p in subjects],
            [v for v, _ in others], [p for _, p in others])
    if any(_meet_on_unit(p) for _, p in subjects + others):  # refused by name, whoever the others are
        with pytest.raises(ValueError, match=r"subject \d+: the points \S+ and \S+ meet on \[0, 1\]"):
            _subjects_agree(*args)
        return
    assert _subjects_agree(*args)


def test_the_bit_checks_see_a_map_that_depends_on_the_batch() -> None:
    """Negative control: a frame that scales by the batch's largest deviation fails both checks."""
    X = np.full((3, GRID.size), 120.0)
    others = np.full((1, GRID.size), 1e300)
    values, points = [[120.0, 130.0], [100.0]], [[1.0, 5.0], [3.0]]
    assert _rows_agree("legendre:4", FTP, False, X, others)
    assert _subjects_agree("legendre:4", False, values, points, [[1e300]], [[2.0]])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PublicFrame, "to_unit", _batch_scaled)
        assert not _rows_agree("legendre:4", FTP, False, X, others)
        assert not _subjects_agree("legendre:4", False, values, points, [[1e300]], [[2.0]])


# ---------------------------------------------------------------------------
# Worst-case neighbours through FTP(spec) and PTF(spec): realised μ <= μ
# ---------------------------------------------------------------------------


def _pair_mu(release: Callable[[object], object], D0: object, D1: object) -> float:
    """μ realised by the pair: the distance of OpenDP's two vectors over the sensitivity it is told."""
    (v0, _, sens, mu), = _opendp_vectors(lambda: release(D0))
    (v1, *_), = _opendp_vectors(lambda: release(D1))
    return mu * float(np.linalg.norm((v1 - v0) / sens))


def _common_pair(adversary0: np.ndarray, adversary1: np.ndarray, n: int = 25) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    others = 180.0 + 30.0 * rng.random((n - 1, GRID.size))  # the band's top: far from its centre
    return np.vstack([adversary0, others]), np.vstack([adversary1, others])


_ADVERSARIES = {
    "1e300 against an ordinary record": (np.full(GRID.size, 1e300), np.full(GRID.size, 150.0)),
    "1e300 against -1e300": (np.full(GRID.size, 1e300), np.full(GRID.size, -1e300)),
    "largest float alternating": (np.resize([BIG, -BIG], GRID.size), np.resize([-BIG, BIG], GRID.size)),
    "subnormal against the top": (np.full(GRID.size, TINY), np.full(GRID.size, BIG)),
    "band's ends, one ulp out": (np.full(GRID.size, np.nextafter(UPPER, np.inf)),
                                  np.full(GRID.size, np.nextafter(LOWER, -np.inf))),
}


@pytest.mark.parametrize("space", ["legendre:4", "fourier:5"])
@pytest.mark.parametrize("method", [FTP, PTF], ids=["FTP", "PTF"])
@pytest.mark.parametrize("adversary", list(_ADVERSARIES))
def test_worst_case_neighbours_on_the_grid_spend_at_most_mu(space: str, method: Callable, adversary: str) -> None:
    mech = method(_spec(space, vector_band=True, secure=True))
    D0, D1 = _common_pair(*_ADVERSARIES[adversary])
    assert _pair_mu(mech.release, D0, D1) <= 1.0 * (1 + TOL)


def _own_pair(space: str, other: float = -1e300) -> tuple[Curves, Curves]:
    """The adversary: one point at the domain's start at 1e300 in D0, both ends at ``other`` in D1."""
    rng = np.random.default_rng(12)
    pts = [np.sort(rng.choice(GRID, 6, replace=False)) for _ in range(20)]
    vals = [180.0 + 30.0 * rng.random(6) for _ in range(20)]  # the band's top
    ends = [0.0, 20.0] if space.startswith("legendre") else [0.0, 19.99]
    return (Curves([np.array([1e300])] + vals, [np.array([0.0])] + pts, DOMAIN),
            Curves([np.full(2, other)] + vals, [np.array(ends)] + pts, DOMAIN))


@pytest.mark.parametrize("space", ["legendre:4", "fourier:5"])
@pytest.mark.parametrize("grid", [False, True], ids=["no grid", "grid"])
@pytest.mark.parametrize("other", [-1e300, 150.0])
def test_worst_case_neighbours_on_their_own_points_spend_at_most_mu(space: str, grid: bool, other: float) -> None:
    mech = FTP(_spec(space, grid=grid, secure=True))
    assert _pair_mu(mech.release, *_own_pair(space, other)) <= 1.0 * (1 + TOL)


def test_the_pair_check_sees_a_map_that_depends_on_the_batch() -> None:
    """Negative control: the batch-scaled frame lets the adversary's record move everyone's."""
    D0, D1 = _common_pair(*_ADVERSARIES["1e300 against an ordinary record"])
    good = _pair_mu(FTP(_spec("legendre:4", secure=True)).release, D0, D1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(PublicFrame, "to_unit", _batch_scaled)
        broken = _pair_mu(FTP(_spec("legendre:4", secure=True)).release, D0, D1)
        broken_own = _pair_mu(FTP(_spec("legendre:4", grid=False, secure=True)).release,
                              *_own_pair("legendre:4", 150.0))
    assert good <= 1.0 * (1 + TOL) < 2.0 < min(broken, broken_own), (good, broken, broken_own)


# ---------------------------------------------------------------------------
# What the release is given: real numbers, refused by name otherwise
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad, what", [
    (lambda X: X + 1e-3j, "complex"),        # the imaginary part would be dropped with a warning
    (lambda X: X > 150.0, "booleans"),       # True/False would be read as 1/0
    (lambda X: X.astype(str), "dtype <U"),   # text, even text that reads as numbers
])
def test_data_that_are_not_real_numbers_are_refused_by_name(bad: Callable, what: str) -> None:
    X = np.full((5, GRID.size), 120.0)
    for method in (FTP, PTF):
        with pytest.raises(TypeError, match=f"^curves .*{what}"):
            method(_spec("legendre:4")).release(bad(X), np.random.default_rng(0))


def test_a_periodic_grid_on_both_ends_is_refused_with_both_remedies() -> None:
    """Hours 0 to 24 on (0, 24): the remedy is to leave out hour 24, not a 25-hour day."""
    with pytest.raises(dpfda.SpecError, match="^domain: ") as info:
        ReleaseSpec(space="fourier:5", domain=(0, 24), grid=np.arange(25.0), lower=-30, upper=45, mu=1.0)
    assert "leave it out of the grid" in str(info.value) and "domain (1, 13)" in str(info.value)


# ---------------------------------------------------------------------------
# The release object and its pickle hold no data, no generator
# ---------------------------------------------------------------------------


def _reachable(obj: object) -> Iterator[object]:
    """Every object reachable from ``obj`` through attributes, containers and slots."""
    seen: set[int] = set()
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        yield o
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        elif not isinstance(o, (np.ndarray, str, bytes, int, float, complex, type)):
            stack.extend(getattr(o, "__dict__", {}).values())
            for name in getattr(type(o), "__slots__", ()):
                if hasattr(o, name):
                    stack.append(getattr(o, name))


@pytest.mark.parametrize(("method", "own_points"), [(FTP, False), (PTF, False), (FTP, True)],
                         ids=["FTP-grid", "PTF-grid", "FTP-own points"])  # PTF on own points is refused by name
def test_a_release_and_its_pickle_hold_no_data_and_no_generator(method: Callable, own_points: bool) -> None:
    """An orthonormal space's release holds no generator at all (a kernel space's: the test below)."""
    n = 37  # no public array of the release has 37 entries along an axis
    rng = np.random.default_rng(13)
    X = LOWER + (UPPER - LOWER) * rng.random((n, GRID.size))
    data: object = X
    if own_points:
        data = Curves([row[:5] for row in X], [GRID[:5]] * n, DOMAIN)
    mech = method(_spec("legendre:4", grid=not own_points))
    rel = mech.release(data, np.random.default_rng())
    rel.record([0.0, 10.0]), rel.noise_sd([3.0])
    for obj in (rel, mech, pickle.loads(pickle.dumps(rel)), pickle.loads(pickle.dumps(mech))):
        found = list(_reachable(obj))
        arrays = [o for o in found if isinstance(o, np.ndarray)]
        assert arrays, "the walk found no arrays"
        assert not [a.shape for a in arrays if n in a.shape]
        assert not [o for o in found if isinstance(o, (np.random.Generator, np.random.BitGenerator,
                                                        np.random.SeedSequence))]
    blob = pickle.dumps(rel) + pickle.dumps(mech)
    assert not [v for v in X.ravel() if v.tobytes() in blob], "a data value is in the pickle"


@pytest.mark.parametrize("secure", [False, True], ids=["numpy", "OpenDP"])
def test_a_kernel_release_through_the_spec_does_not_give_back_its_noise(secure: bool) -> None:
    """A kernel space's release keeps a generator for its residual off the grid: not one that gives
    back the noise (the attack of test_adversarial, whose negative control shows it works)."""
    spec = ReleaseSpec(space="gaussian:0.2", domain=DOMAIN, grid=GRID, lower=LOWER, upper=UPPER, radius=50.0,
                       mu=1.0, secure=secure)
    X = 180.0 + 30.0 * np.random.default_rng(14).random((37, GRID.size))
    rel = pickle.loads(pickle.dumps(FTP(spec).release(X, None if secure else np.random.default_rng())))
    rel([3.3, 7.7])  # draw some of the residual first: more state to attack
    unit = rel.unit_release
    assert spec.frame is not None
    fit = ftp_fit_mean(spec.frame.to_unit(X), spec.space.at(spec.unit_grid), spec.unit_radius)[0]
    noise = (unit.coef - fit) / unit.noise_scale
    assert not _noise_rebuilt(unit, noise, _candidate_generators(unit))
    assert not [o.shape for o in _reachable(rel) if isinstance(o, np.ndarray) and 37 in o.shape]


def test_the_noise_check_sees_a_release_holding_a_child_of_its_generator() -> None:
    """Negative control of the test above, through the spec: the old construction gives its noise away."""
    spec = ReleaseSpec(space="gaussian:0.2", domain=DOMAIN, grid=GRID, lower=LOWER, upper=UPPER, radius=50.0,
                       mu=1.0, secure=False)
    X = 180.0 + 30.0 * np.random.default_rng(14).random((37, GRID.size))
    rng = np.random.default_rng()
    old_child = rng.spawn(1)[0]  # what dpfda 0.1.0 kept for the residual
    unit = FTP(spec).release(X, rng).unit_release
    unit._residual_rng = old_child  # type: ignore[attr-defined]
    unit = pickle.loads(pickle.dumps(unit))
    assert spec.frame is not None
    fit = ftp_fit_mean(spec.frame.to_unit(X), spec.space.at(spec.unit_grid), spec.unit_radius)[0]
    assert _noise_rebuilt(unit, (unit.coef - fit) / unit.noise_scale, _candidate_generators(unit))


def test_the_walk_finds_data_and_generators_where_they_are() -> None:
    """Negative control: a release that kept its data and its generator is caught by the same walk."""
    X = np.full((37, GRID.size), 100.0)
    rel = FTP(_spec("legendre:4")).release(X, np.random.default_rng(1))
    rel.kept = (X, np.random.default_rng(2))  # type: ignore[attr-defined]
    found = list(_reachable(pickle.loads(pickle.dumps(rel))))
    assert [o.shape for o in found if isinstance(o, np.ndarray) and 37 in o.shape]
    assert [o for o in found if isinstance(o, np.random.Generator)]
