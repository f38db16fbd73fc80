"""The one release path: ReleaseSpec checks every public choice before any data, and FTP(spec)/PTF(spec)
release exactly what the library's ftp/ptf release on the mapped data, with the same generator."""

from __future__ import annotations

import json
import pickle
import warnings
from collections.abc import Callable

import numpy as np
import pytest

import dpfda
import dpfda.mechanisms.radius as radius_module
from dpfda import FTP, PTF, Curves, Domain, LegendreSpace, PublicFrame, ReleaseSpec, SpecError
from dpfda.practice.publish import release_record

AGES = np.array([1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0])


class Untouchable:
    """Data that fail loudly the moment anything reads them."""

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("the data were read")

    def __len__(self) -> int:
        raise AssertionError("the data were read")

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the data were read ({name})")


def heights(n: int = 60, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 75 + 5.5 * AGES + rng.normal(0, 4, size=(n, AGES.size))


def spec(**changes: object) -> ReleaseSpec:
    choices: dict = dict(space=LegendreSpace(4), domain=Domain(1, 18, name="age"), grid=AGES,
                         lower=60, upper=210, mu=1.0, secure=False)
    choices.update(changes)
    return ReleaseSpec(**choices)


@pytest.mark.parametrize("changes, argument", [
    (dict(mu=-1.0), "mu"),
    (dict(mu=float("nan")), "mu"),
    (dict(mu=None), "mu"),
    (dict(mu=1.0, epsilon=1.0, delta=1e-6), "mu"),
    (dict(mu=None, epsilon=1.0), "delta"),
    (dict(mu=None, epsilon=-1.0, delta=1e-6), "epsilon"),
    (dict(mu=None, epsilon=1.0, delta=1.5), "delta"),
    (dict(space="legendre:x"), "space"),
    (dict(space=3), "space"),
    (dict(domain=(18, 1)), "domain"),
    (dict(grid=AGES[::-1]), "grid"),
    (dict(grid=np.r_[AGES, 30.0]), "grid"),
    (dict(grid=AGES[:3]), "grid"),            # T = 3 < m = 4 (Assumption A.3)
    (dict(upper=None), "upper"),
    (dict(lower=200.0, upper=100.0), "lower, upper"),
    (dict(lower=np.zeros(3)), "lower, upper"),  # not one bound per grid point
    (dict(clip=1.0), "clip"),                  # a range gives the clip
    (dict(radius=-2.0), "radius"),
    (dict(lower=None, upper=None), "radius"),  # neither a range nor B'
    (dict(space="gaussian:0.2"), "radius"),    # a range bounds no RKHS norm
    (dict(grid=None, space="gaussian:0.2", radius=1.0), "grid"),
    (dict(grid=None, lower=np.zeros(10), upper=np.ones(10)), "lower"),
    (dict(space="fourier:5", domain=(1, 18)), "domain"),  # grid from start to stop: 1 and 18 one instant
    (dict(secure=1), "secure"),
    (dict(units=3), "units"),
    (dict(lower="60"), "lower"),               # text is not a number, even text that reads as one
    (dict(grid=[str(a) for a in AGES]), "grid"),
    (dict(upper=np.full(10, True)), "upper"),  # booleans are not bounds
    (dict(domain=(-1e308, 1e308)), "domain"),  # its length overflows: every point would map to 0
    (dict(secure=True, mu=1e-200), "mu"),      # OpenDP's rho = mu^2/2 underflows
    (dict(radius_share=0.3), "radius_share"),  # describes a private radius not asked for
    (dict(radius_quantile=0.5), "radius_quantile"),
    (dict(private_radius=True, radius_share=1.0), "radius_share"),
    (dict(private_radius=True, radius_quantile=0.0), "radius_quantile"),
    (dict(private_radius=1), "private_radius"),
    (dict(private_radius=True, space="gaussian:0.2", radius=1.0), "private_radius"),  # norms of an orthonormal fit
    (dict(private_radius=True, lower=None, upper=None), "radius"),  # no public cap
])
def test_a_bad_choice_is_refused_by_name_before_the_data(changes: dict, argument: str) -> None:
    with pytest.raises(SpecError) as info:
        FTP(spec(**changes)).release(Untouchable(), np.random.default_rng(0))
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}: ")


def test_a_good_spec_does_read_the_data() -> None:
    """Negative control of the test above: with every choice good, the release reaches the data."""
    with pytest.raises(AssertionError, match="the data were read"):
        FTP(spec()).release(Untouchable(), np.random.default_rng(0))


def test_what_only_a_mechanism_refuses_is_named_before_the_data() -> None:
    with pytest.raises(SpecError, match="^clip: ") as info:
        FTP(spec(lower=None, upper=None, radius=5.0, clip=3.0))
    assert info.value.argument == "clip"
    with pytest.raises(SpecError, match="^clip: "):
        PTF(spec(lower=None, upper=None, radius=5.0, clip=np.ones(3)))  # one bound per grid point
    with pytest.raises(SpecError, match="^grid: "):
        PTF(spec(grid=None))
    with pytest.raises(SpecError, match="^private_radius: "):
        PTF(spec(private_radius=True))  # PTF's clip is public
    with pytest.raises(TypeError, match="^rng: "):
        FTP(spec(secure=True)).release(Untouchable(), np.random.default_rng(0))


def test_the_spec_is_frozen() -> None:
    s = spec()
    with pytest.raises(AttributeError):
        s.mu = 100.0  # type: ignore[misc]
    grid, lower = AGES.copy(), np.full(AGES.size, 60.0)
    s = spec(grid=grid, lower=lower, upper=lower + 150.0)
    grid[1], lower[:] = 3.0, 0.0  # the caller's arrays change afterwards: the spec does not
    assert s.grid[1] == 2.0 and s.lower[0] == 60.0  # type: ignore[index]
    assert s.frame is not None
    for name in ("grid", "lower", "upper", "clip", "weights", "reference", "points"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(s.frame, name)[0] = 1e3
    assert not s.unit_grid.flags.writeable and not s.points.flags.writeable


@pytest.mark.parametrize("method", ["ftp", "ptf"])
def test_a_release_through_the_spec_is_the_library_release_bit_for_bit(method: str) -> None:
    X = heights()
    s = spec()
    frame = PublicFrame(LegendreSpace(4), AGES, Domain(1, 18, name="age"), 60, 210)
    mech = FTP(s) if method == "ftp" else PTF(s)
    got = mech.release(X, np.random.default_rng(11))
    if method == "ftp":
        want = dpfda.ftp(frame.to_unit(X), frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(11))
    else:
        want = dpfda.ptf(frame.to_unit(X), frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(11),
                         clip=frame.clip, weights=frame.weights)
    np.testing.assert_array_equal(got.unit_release.coef, want.coef)
    assert got.unit_release.noise_scale == pytest.approx(want.noise_scale, rel=0, abs=0)
    at = np.linspace(1, 18, 35)
    np.testing.assert_array_equal(got(at), frame.values(want, at))
    record = got.record(at)
    assert record.pop("units") == {"points": "age", "values": "value"}
    assert record == release_record(want, at, frame=frame)
    assert FTP(spec(units="height (cm)")).release(X, np.random.default_rng(11)).record(at)["units"]["values"] == \
        "height (cm)"


@pytest.mark.filterwarnings("ignore::dpfda.CuratorWarning")  # a wrong radius on purpose
def test_the_bit_for_bit_comparison_sees_a_wrong_mapping() -> None:
    """Negative control: a spec that maps the data otherwise (another range, hence another scale and
    B') or spends another budget gives another release with the same generator."""
    X = heights()
    frame = PublicFrame(LegendreSpace(4), AGES, Domain(1, 18, name="age"), 60, 210)
    want = dpfda.ftp(frame.to_unit(X), frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(11))
    for wrong in (spec(upper=211), spec(mu=1.01), spec(lower=None, upper=None, radius=frame.radius)):
        got = FTP(wrong).release(X, np.random.default_rng(11))
        assert not np.array_equal(got.unit_release.coef, want.coef)


def test_without_a_range_the_data_are_used_as_they_are() -> None:
    X = heights() / 100.0
    s = spec(lower=None, upper=None, radius=3.0)
    got = PTF(s).release(X, np.random.default_rng(5))
    unit = Domain(1, 18).to_unit(AGES)
    want = dpfda.ptf(X, unit, LegendreSpace(4), 3.0, 1.0, np.random.default_rng(5))
    np.testing.assert_array_equal(got.unit_release.coef, want.coef)
    np.testing.assert_array_equal(got([1.0, 9.5, 18.0]), want(Domain(1, 18).to_unit([1.0, 9.5, 18.0])))
    np.testing.assert_array_equal(got.noise_sd([1.0, 18.0]), want.noise_sd(Domain(1, 18).to_unit([1.0, 18.0])))


def test_curves_on_their_own_points_and_on_the_grid() -> None:
    rng = np.random.default_rng(2)
    X = heights(40)
    keep = [np.sort(rng.choice(AGES.size, size=6, replace=False)) for _ in range(40)]
    own = Curves([x[k] for x, k in zip(X, keep)], [AGES[k] for k in keep], (1, 18))
    s = spec(grid=None)
    got = FTP(s).release(own, np.random.default_rng(4))
    frame = PublicFrame(LegendreSpace(4), np.linspace(1, 18, 101), Domain(1, 18), 60, 210)
    want = dpfda.ftp_mechanism(frame.grid, frame.space, frame.radius, 1.0).release(
        frame.to_unit(own), np.random.default_rng(4))
    np.testing.assert_array_equal(got.unit_release.coef, want.coef)
    assert "own points" in got.record()["sampling"] and "sampling" not in FTP(spec()).release(
        X, np.random.default_rng(4)).record()
    common = FTP(spec()).release(Curves(X, AGES, (1, 18)), np.random.default_rng(4))
    np.testing.assert_array_equal(common.unit_release.coef,
                                  FTP(spec()).release(X, np.random.default_rng(4)).unit_release.coef)
    with pytest.raises(ValueError, match="^curves: their domain"):
        FTP(spec()).release(Curves(X, AGES, (0, 18)), np.random.default_rng(4))
    with pytest.raises(ValueError, match="^curves: their points"):
        FTP(spec()).release(Curves(X[:, 1:], AGES[1:], (1, 18)), np.random.default_rng(4))
    with pytest.raises(TypeError, match="^curves: "):
        FTP(s).release(X, np.random.default_rng(4))


def test_a_budget_as_epsilon_delta_is_stated_in_the_record() -> None:
    s = spec(mu=None, epsilon=1.0, delta=1e-6)
    assert s.budget_mu == pytest.approx(float(dpfda.mu_from_epsilon_delta(1.0, 1e-6)), rel=0, abs=0)
    record = FTP(s).release(heights(), np.random.default_rng(0)).record([1, 18])
    assert record["budget_requested"]["epsilon"] == 1.0 and record["mu"] == s.budget_mu
    assert any(d["delta"] == 1e-6 for d in record["epsilon_delta"])
    json.dumps(record)


def test_a_private_radius_is_the_library_s_and_the_record_states_both_steps(monkeypatch) -> None:
    # The quantile's noise comes from OpenDP, which cannot be seeded: a public rule stands in for it,
    # in both runs, so that they compare bit for bit.
    monkeypatch.setattr(radius_module, "private_radius", lambda norms, candidates, epsilon, quantile: float(
        np.asarray(candidates)[90]))
    X, at = heights(), np.linspace(1, 18, 9)
    s = spec(private_radius=True, radius_share=0.3, radius_quantile=0.8)
    got = FTP(s).release(X, np.random.default_rng(11))
    frame = s.frame
    want = radius_module.ftp_private_radius(frame.to_unit(X), frame.grid, frame.space, 1.0, radius_max=frame.radius,
                                            share=0.3, quantile=0.8, secure=False, rng=np.random.default_rng(11))
    np.testing.assert_array_equal(got.unit_release.coef, want.release.coef)
    np.testing.assert_array_equal(got(at), frame.values(want.release, at))
    record = got.record(at)
    assert record.pop("units") == {"points": "age", "values": "value"}
    assert record == release_record(want, at, frame=frame)
    assert got.mu == record["mu"] == 1.0 and got.private_radius is not None  # the whole budget, both steps
    assert [part["step"] for part in record["budget"]["parts"]] == ["radius", "release"]
    assert record["chosen_privately"]["radius"]["value"] == record["radius"] < frame.radius


def test_a_space_spec_string_is_the_space() -> None:
    assert spec(space="legendre:4").space == LegendreSpace(4)
    assert spec(domain=(1, 18)).domain.start == 1.0


def test_a_release_and_its_spec_survive_a_pickle() -> None:
    rel = FTP(spec()).release(heights(), np.random.default_rng(7))
    back = pickle.loads(pickle.dumps(rel))
    at = np.linspace(1, 18, 9)
    np.testing.assert_array_equal(back(at), rel(at))
    assert back.record(at) == rel.record(at) and back.spec.mu == 1.0


def test_a_periodic_space_on_a_domain_one_period_long() -> None:
    months = np.arange(1.0, 13.0)
    s = ReleaseSpec(space="fourier:5", domain=(1, 13), grid=months, lower=-30, upper=45, mu=1.0, secure=False)
    rel = FTP(s).release(np.zeros((30, 12)) + 10.0, np.random.default_rng(1))
    # One instant: t = 0 and t = 1 differ only by rounding. Each basis function's argument 2πk·t is
    # rounded once and cos/sin add an ulp, so φ_k(1) - φ_k(0) is at most √2·(2πk + 2)·u <= 12k·u;
    # summed over the m coefficients (in °C) that is at most 12·m²·u·max|c_k|, and the sum itself
    # rounds within m·u·Σ|c_k|·√2 more: 16·m²·u·max|c_k| covers both.
    coef = s.frame.reference + s.frame.scale * rel.unit_release.coef
    atol = 16 * 5**2 * np.finfo(float).eps / 2 * np.abs(coef).max()
    np.testing.assert_allclose(rel([1.0]), rel([13.0]), rtol=0, atol=atol)


def test_curves_carry_their_units_into_the_record() -> None:
    X, at = heights(), np.linspace(1, 18, 5)
    cm = Curves(X, AGES, (1, 18), units="height (cm)")
    assert FTP(spec()).release(cm, np.random.default_rng(1)).record(at)["units"]["values"] == "height (cm)"
    assert FTP(spec(units="height (cm)")).release(cm, np.random.default_rng(1)).units == "height (cm)"
    with pytest.raises(ValueError, match="^curves: their units 'height \\(in\\)'"):
        FTP(spec(units="height (cm)")).release(Curves(X / 2.54, AGES, (1, 18), units="height (in)"),
                                                np.random.default_rng(1))
    with pytest.raises(TypeError, match="^units must be a string"):
        Curves(X, AGES, (1, 18), units=2.54)
    assert Curves(X, AGES, (1, 18), units="cm").on_grid(Domain(1, 18).to_unit(AGES)).units == "cm"


@pytest.mark.parametrize("budget, argument", [({"mu": 1e300}, "mu"), ({"mu": 2.0**41 * 3}, "mu"),
                                              ({"epsilon": 1e300, "delta": 1e-6}, "epsilon")])
@pytest.mark.parametrize("secure", [True, False])
def test_a_budget_no_n_can_use_is_refused_before_any_data(budget, argument, secure):
    """σ/bound = 2·factor/(nμ) ≥ 2^-40 at every n ≥ 1 needs μ ≤ 2^41·factor; factor ≤ √T (PTF), 1 (FTP)."""
    grid = np.linspace(0, 1, 5)  # √T ≈ 2.24 < 3
    with pytest.raises(SpecError) as info:
        ReleaseSpec(space="legendre:3", domain=(0, 1), grid=grid, lower=0, upper=1, secure=secure, **budget)
    assert info.value.argument == argument and "2^-40" in str(info.value)


def test_the_largest_budget_the_spec_keeps_releases_at_n_1():
    grid = np.linspace(0, 1, 5)
    rng = np.random.default_rng(0)
    spec = ReleaseSpec(space="legendre:3", domain=(0, 1), grid=grid, lower=0, upper=1, mu=2.0**41, secure=False)
    assert np.isfinite(FTP(spec).release(np.full((1, 5), 0.5), rng=rng)(grid)).all()
    wide = ReleaseSpec(space="legendre:3", domain=(0, 1), grid=grid, lower=0, upper=1, mu=2.0**41 * 2, secure=False)
    assert np.isfinite(PTF(wide).release(np.full((1, 5), 0.5), rng=rng)(grid)).all()  # factor √5 > 2
    with pytest.raises(SpecError) as info:  # FTP's factor is 1
        FTP(wide)
    assert info.value.argument == "mu"


def test_a_table_whose_columns_are_not_the_grid_in_order_is_refused_by_name() -> None:
    """A DataFrame's header is read: columns in another order once gave a reversed mean, silently."""
    pd = pytest.importorskip("pandas")
    X = heights()
    mech = FTP(spec())
    ordered = pd.DataFrame(X, columns=AGES)
    want = mech.release(X, np.random.default_rng(1))
    got = mech.release(ordered, np.random.default_rng(1))
    assert np.array_equal(got.unit_release.coef, want.unit_release.coef)
    assert np.array_equal(mech.release(pd.DataFrame(X, columns=[f"{a:g}" for a in AGES]),
                                       np.random.default_rng(1)).unit_release.coef, want.unit_release.coef)
    with pytest.raises(ValueError, match=r"curves: the table's columns .* are not the specification's grid"):
        mech.release(ordered[ordered.columns[::-1]], np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"curves: the table's columns .* are not the specification's grid"):
        mech.release(pd.DataFrame(X[:, :-1], columns=AGES[:-1]), np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"curves: the table's column labels are not numbers.*to_numpy\(\)"):
        mech.release(pd.DataFrame(X, columns=[f"age {a:g}" for a in AGES]), np.random.default_rng(1))


def test_a_batch_of_data_sets_is_refused_up_front_by_name() -> None:
    """The spec releases one data set (n, T); a batch once passed and failed at .record()."""
    batch = np.stack([heights(), heights(seed=4)])
    for curves in (batch, Curves(batch, AGES, (1, 18))):
        with pytest.raises(ValueError, match=r"curves: a specification releases one data set \(n, T\)"
                                             r".*shape \(2, 60, 10\)"):
            FTP(spec()).release(curves, np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"curves: a specification releases one data set"):
        FTP(spec(private_radius=True)).release(batch, np.random.default_rng(1))


# The curator's warning: what the command line prints to stderr, raised by release() as a warning.

@pytest.mark.parametrize("method", [FTP, PTF])
def test_heights_in_mm_against_a_range_in_cm_warn_the_curator(method: Callable) -> None:
    """Every value in mm lies above the range in cm: the mean comes out near the band's top, and is flagged."""
    X = heights()
    with pytest.warns(dpfda.CuratorWarning) as caught:
        rel = method(spec()).release(10 * X, np.random.default_rng(5))
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "100% of the values were clipped" in text and "units" in text and "NOT private" in text
    assert "lower, upper" in text and "radius" in text and "category=dpfda.CuratorWarning" in text
    assert caught[0].filename == __file__  # points at the caller's line
    assert rel(AGES).min() > 150  # the silent wrong answer it warns about: near the band's top (210)


def test_fits_far_outside_the_ball_warn_the_curator() -> None:
    s = spec(lower=None, upper=None, radius=1.0)  # B' = 1 cm for heights of 80 to 180 cm
    with pytest.warns(dpfda.CuratorWarning, match=r"100% of the curves' fits were shrunk onto the ball of radius "
                                                  r"B' = 1 .*radius"):
        FTP(s).release(heights(), np.random.default_rng(5))


def test_a_periodic_day_with_hours_0_and_24_on_own_points_warns_the_curator() -> None:
    s = ReleaseSpec(space="fourier:5", domain=(0, 24), lower=-30, upper=45, mu=1.0, secure=False)
    rng = np.random.default_rng(3)
    hours = [np.array([0.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0])] * 30
    temps = [10 + rng.normal(0, 1, h.size) for h in hours]
    with pytest.warns(dpfda.CuratorWarning, match=r"30 curve\(s\) are observed at both ends of the domain"):
        FTP(s).release(Curves(temps, hours, (0, 24)), np.random.default_rng(5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpfda.CuratorWarning)  # hour 24 left out (the next day's 0): fine
        FTP(s).release(Curves([x[:-1] for x in temps], [h[:-1] for h in hours], (0, 24)), np.random.default_rng(5))


@pytest.mark.parametrize("method", [FTP, PTF])
def test_fine_data_do_not_warn_the_curator(method: Callable) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", dpfda.CuratorWarning)
        method(spec()).release(heights(), np.random.default_rng(5))
        method(spec(units="height (cm)")).release(Curves(heights(), AGES, (1, 18)), np.random.default_rng(5))
        if method is FTP:
            rng = np.random.default_rng(2)
            keep = [np.sort(rng.choice(AGES.size, size=6, replace=False)) for _ in range(40)]
            X = heights(40)
            method(spec(grid=None)).release(Curves([x[k] for x, k in zip(X, keep)], [AGES[k] for k in keep],
                                                   (1, 18)), np.random.default_rng(4))
            method(spec(private_radius=True)).release(heights(), np.random.default_rng(5))


@pytest.mark.parametrize("method", [FTP, PTF])
def test_the_warning_changes_no_bit_of_the_release_and_enters_no_record_or_pickle(method: Callable) -> None:
    """The same seed, warnings shown or ignored: the same release, record and pickle, none holding a diagnostic."""
    X, at = 10 * heights(), np.linspace(1, 18, 9)  # flagged: in mm
    runs = []
    for action in ("always", "ignore"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            rel = method(spec()).release(X, np.random.default_rng(8))
        runs.append((rel, [w for w in caught if issubclass(w.category, dpfda.CuratorWarning)]))
    (shown, warned), (ignored, silent) = runs
    assert len(warned) == 1 and not silent
    assert shown.unit_release.coef.tobytes() == ignored.unit_release.coef.tobytes()
    assert shown(at).tobytes() == ignored(at).tobytes()
    assert shown.record(at) == ignored.record(at)
    assert pickle.dumps(shown) == pickle.dumps(ignored)
    assert set(vars(shown)) == {"spec", "unit_release", "units", "private_radius"}
    record = json.dumps(shown.record(at))
    for word in ("clipped", "shrunk", "NOT private", "diagnostic", "CuratorWarning"):
        assert word not in record and word.encode() not in pickle.dumps(shown), word


def test_diagnostics_that_fail_never_cost_the_release(monkeypatch) -> None:
    """The report runs after the noise: its failure on some record must not decide whether a release is returned."""
    import dpfda.practice.specification as specification

    def broken(*args: object, **kwargs: object) -> dict:
        raise ValueError("curves contains NaN or inf")

    want = FTP(spec()).release(heights(), np.random.default_rng(5))
    monkeypatch.setattr(specification, "curator_report", broken)
    with pytest.warns(dpfda.CuratorWarning, match=r"could not be computed \(ValueError: curves contains NaN or inf\)"):
        got = FTP(spec()).release(heights(), np.random.default_rng(5))
    assert got.unit_release.coef.tobytes() == want.unit_release.coef.tobytes()
