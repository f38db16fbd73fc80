"""Curves as data and FTP on curves measured at their own points: the sensitivity whatever the points."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfda
from dpfda import Curves, FourierSpace, LegendreSpace
from dpfda.maths.fitting import BallLeastSquares
from dpfda.maths.rounding import fit_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.irregular import IrregularPTFError, irregular_fit_mean
from dpfda.mechanisms.pipelines import ftp_rounding_excess

from _spaces import of_size

SPACES = list(of_size(10).values())  # the registry's orthonormal spaces (tests/_spaces.py)


def _fits_atol(space, grid, X, radius) -> float:
    """Two computations of a mean of fits on one grid (per curve, and in a batch): each fit to fit_rtol
    (with its data's ratio) of its norm <= B', and each mean rounded once (γ₄ of B')."""
    Phi = space.basis(grid)
    A = Phi.T @ Phi
    fits = BallLeastSquares(Phi).solve(X, radius).coef
    norms = np.linalg.norm(fits, axis=-1)
    ratio = np.max(np.linalg.norm(X, axis=-1) / norms) / np.sqrt(np.linalg.norm(A, 2))
    return 2 * (fit_rtol(A, grid.size, data_ratio=ratio) * norms.max() + gamma(4) * radius)


def random_subject(rng, scale):
    k = int(rng.integers(1, 12))
    points = np.sort(rng.choice(np.linspace(0, 1, 40), size=k, replace=False))
    return points, scale * rng.standard_normal(k)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.sampled_from([1e-3, 1.0, 1e6, 1e300]),
       st.sampled_from(SPACES), st.floats(0.01, 100.0))
def test_neighbours_whose_points_differ_move_the_mean_by_at_most_2B_over_n(seed, n, scale, space, radius):
    rng = np.random.default_rng(seed)
    subjects = [random_subject(rng, 1.0) for _ in range(n)]
    other = random_subject(rng, scale)  # the replaced subject: other points, other values, any size
    a = Curves([v for _, v in subjects], [p for p, _ in subjects], domain=(0, 1))
    b = Curves([other[1]] + [v for _, v in subjects[1:]], [other[0]] + [p for p, _ in subjects[1:]],
               domain=(0, 1))
    ma, mb = irregular_fit_mean(a, space, radius), irregular_fit_mean(b, space, radius)
    bound = 2 * radius / n * (1 + ftp_rounding_excess(n, space.m, radius))
    assert np.linalg.norm(ma - mb) <= bound
    assert np.linalg.norm(ma) <= radius * (1 + 2**-40)


@pytest.mark.parametrize("space", SPACES)
def test_the_bound_is_reached_by_neighbours_on_different_points(space):
    # Subject 0 on 5 points of its own with data x = c·Φ M⁻¹e_1 (so Φᵀx = c·e_1), its replacement on 9
    # other points with -c·Φ M⁻¹e_1: for large c both fits sit on the ball's boundary at ±B'e_1, so the
    # means differ by 2B'/n, the bound (up to O(||M||·B'/c)).
    n, radius, c = 5, 1.5, 1e12

    def far(points, sign):
        Phi = space.basis(points)
        return sign * c * Phi @ np.linalg.solve(Phi.T @ Phi, np.eye(space.m)[0])

    rest_p = [np.linspace(0.1, 0.9, 6)] * (n - 1)
    rest_v = [np.zeros(6)] * (n - 1)
    p0, p1 = np.array([0.05, 0.3, 0.5, 0.7, 0.93]), np.linspace(0.02, 0.98, 9)
    a = Curves([far(p0, 1)] + rest_v, [p0] + rest_p, domain=(0, 1))
    b = Curves([far(p1, -1)] + rest_v, [p1] + rest_p, domain=(0, 1))
    gap = np.linalg.norm(irregular_fit_mean(a, space, radius) - irregular_fit_mean(b, space, radius))
    # both fits are normalised onto the sphere at ±B'(e_1 + δ), δ ⟂ e_1 of order ||M||·B'/c plus the
    # fit's rounding: the gap moves at second order in δ; the means add n·γ₄, the norm γ_{d+10}
    M = max(np.linalg.norm(space.basis(p).T @ space.basis(p), 2) for p in (p0, p1))
    delta = M * radius / c + max(fit_rtol(space.basis(p).T @ space.basis(p), p.size, multiplier=c / radius)
                                 for p in (p0, p1))
    assert gap == pytest.approx(2 * radius / n, rel=n * gamma(4) + gamma(space.m + 10) + 2 * delta**2, abs=0)
    assert gap <= 2 * radius / n * (1 + ftp_rounding_excess(n, space.m, radius))


@pytest.mark.parametrize("space", SPACES)
def test_on_a_common_grid_the_own_points_fit_is_the_common_fit(space):
    grid = np.linspace(0, 1, 11)
    X = np.random.default_rng(2).normal(0, 1, (30, 11))
    c = Curves(list(X), [grid] * 30, domain=(0, 1))
    common = dpfda.ftp_mechanism(grid, space, 0.7, 1.0).summary(X)
    assert np.allclose(irregular_fit_mean(c, space, 0.7), common, rtol=0, atol=_fits_atol(space, grid, X, 0.7))


def test_a_subject_that_cannot_determine_a_function_contributes_zero():
    space = LegendreSpace(3)
    c = Curves([[10.0], [1.0, 2.0]], [[0.5], [0.2, 0.8]], domain=(0, 1))  # 1 and 2 points < m = 3
    assert np.array_equal(irregular_fit_mean(c, space, 1.0), np.zeros(3))


def test_ftp_ptf_and_the_mechanism_accept_curves():
    rng = np.random.default_rng(3)
    space = FourierSpace(5)
    pts = [np.sort(rng.choice(24, size=int(rng.integers(20, 25)), replace=False)) for _ in range(50)]
    vals = [np.cos(2 * np.pi * p / 24) + rng.normal(0, 0.1, p.size) for p in pts]
    c = Curves(vals, pts, domain=(0, 24))
    rel = dpfda.ftp(c, None, space, 2.0, 1.0, np.random.default_rng(4))
    assert rel.n == 50 and rel.noise_scale == 2 * 2.0 / 50 and rel.grid.size == 101
    with pytest.raises(IrregularPTFError, match="PTF needs every curve on one common grid"):
        dpfda.ptf(c, None, space, 2.0, 1.0, np.random.default_rng(4))
    grid = np.arange(24) / 24
    on = c.on_grid(grid, periodic=True)
    assert on.common and np.array_equal(on.grid, grid)
    p = dpfda.ptf(on, None, space, 2.0, 1.0, np.random.default_rng(5))
    assert p.noisy_means.shape == (24,)
    mech = dpfda.ftp_mechanism(grid, space, 2.0, 1.0)
    same = mech.release(on, np.random.default_rng(6))
    again = mech.release(on.values, np.random.default_rng(6))
    assert np.array_equal(same.coef, again.coef)  # a common-grid Curves is its array
    with pytest.raises(ValueError, match="not the mechanism's public grid"):
        dpfda.ptf_mechanism(np.linspace(0, 1, 24), space, 2.0, 1.0).release(on, np.random.default_rng(6))
    # FTP fits common-grid curves on another grid on their own points: the same fit as on theirs
    other = dpfda.ftp_mechanism(np.linspace(0, 1, 24), space, 2.0, 1.0)
    assert np.allclose(irregular_fit_mean(on, space, 2.0), mech.summary(on.values), rtol=0,
                       atol=_fits_atol(space, grid, on.values, 2.0))
    assert other.release(on, np.random.default_rng(6)).n == 50
    with pytest.raises(TypeError, match="orthonormal space"):
        dpfda.ftp(c, None, dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), 2.0, 1.0, np.random.default_rng(4))


def test_a_wide_table_with_gaps_becomes_curves_on_own_points():
    X = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    c = Curves.from_masked(X, [0, 1, 2], domain=(0, 2))
    assert not c.common and [t.tolist() for t, _ in c.subjects()] == [[0.0, 1.0], [0.0, 0.5, 1.0]]
    assert Curves.from_masked(X[1:], [0, 1, 2], domain=(0, 2)).common
    with pytest.raises(ValueError, match="no value at any point"):
        Curves.from_masked(np.array([[np.nan] * 3]), [0, 1, 2], domain=(0, 2))


def test_one_constructor_one_argument_order_values_then_points():
    points, values = [[0, 12], [6, 12, 18]], [[1.0, 2.0], [3.0, 4.0, 5.0]]
    one = Curves(values, points, (0, 24))
    assert not one.common and one.n == 2 and one.domain == (0.0, 24.0)
    assert [(t.tolist(), x.tolist()) for t, x in one.subjects()] == [([0.0, 0.5], [1.0, 2.0]),
                                                                    ([0.25, 0.5, 0.75], [3.0, 4.0, 5.0])]
    same = Curves(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.0, 6.0], [12.0, 18.0]]), (0, 24))
    assert not same.common and [t.tolist() for t, _ in same.subjects()] == [[0.0, 0.25], [0.5, 0.75]]
    # no constructor takes the points first: the one that did is gone
    assert not hasattr(Curves, "irregular")
    table = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    masked = Curves.from_masked(table, [0, 12, 24], (0, 24))
    assert [x.tolist() for _, x in masked.subjects()] == [[1.0, 3.0], [4.0, 5.0, 6.0]]


@pytest.mark.parametrize("swapped, message", [
    # heights taken for ages fall outside the domain, and the message gives the order
    (lambda: Curves([[1, 2], [1, 2, 3]], [[80.0, 90.0], [85.0, 95.0, 99.0]], (1, 18)),
     r"values first, then points\): the point 80 lies outside the public domain"),
    # a common grid's points and table swapped
    (lambda: Curves([0, 6, 12], np.ones((4, 3)), (0, 24)), "values first, then points"),
    (lambda: Curves([0, 6, 12], np.ones((3, 3)), (0, 24)), "values first, then points"),
    (lambda: Curves.from_masked([0, 12, 24], np.ones((2, 3)), (0, 24)), "values first, then points"),
])
def test_points_given_before_values_are_refused_with_the_order(swapped, message):
    with pytest.raises(ValueError, match=message):
        swapped()


def test_as_curves_keeps_an_arrays_grid_and_values_and_names_what_it_refuses():
    from dpfda.maths.curves import as_curves

    grid = np.array([0.0, 0.3, 1.0 - 2.0**-52, 1.0 - 2.0**-53])  # near 1, where Curves(...) would snap
    X = np.arange(8.0).reshape(2, 4)
    c = as_curves(X, grid)
    assert c.common and c.n == 2 and np.shares_memory(c.values, X) and np.array_equal(c.grid, grid)
    assert as_curves(c, None) is c
    with pytest.raises(TypeError, match="grid is needed for curves given as an array"):
        as_curves(X, None)
    with pytest.raises(ValueError, match="proxy's last axis has length 4 but the grid has 3 points"):
        as_curves(X, grid[:3], name="proxy")
    with pytest.raises(ValueError, match="curves contains NaN or inf.*Curves.from_masked"):
        as_curves(np.where(X > 6, np.nan, X), grid, name="curves")
    with pytest.raises(ValueError, match="X must be 2-D"):
        as_curves(np.zeros((1, 2, 2, 4)), grid)
    with pytest.raises(ValueError, match="grid must be strictly increasing"):
        as_curves(X, grid[::-1])


def test_curves_that_are_not_values_are_refused_by_name():
    with pytest.raises(TypeError, match="^values: "):
        Curves(3.0, [[0, 12], [6, 12, 18]], (0, 24))


@pytest.mark.parametrize("make, message", [
    (lambda: Curves([[1.0, 2.0]], [[0.0, 0.0]], (0, 1)), "appears twice"),
    (lambda: Curves([[1.0, 2.0]], [[0.0]], (0, 1)), "1 points but 2 values"),
        (lambda: Curves([[1.0, 2.0]], [[0.0, 2.0]], (0, 1)), "outside the public domain"),
    (lambda: Curves([[1.0, 2.0]], [[0.0]], (0, 1)), "1 points but 2 values"),
    (lambda: Curves([[np.nan]], [[0.0]], (0, 1)), "finite"),
    (lambda: Curves(np.zeros((2, 3)), [0, 1, 2], (2, 0)), "start < stop"),
    (lambda: Curves(np.full((2, 3), np.nan), [0, 1, 2], (0, 2)), "from_masked"),
])
def test_bad_curves_are_refused_by_name(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# -- files and the command line ------------------------------------------------------------


def hourly_long(path, days=60, seed=7):
    """Hourly values; some days miss an hour (a 23-hour day, gaps), so subjects have their own points."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(days):
        hours = np.arange(24.0)
        if d % 5 == 0:
            hours = np.delete(hours, int(rng.integers(0, 24)))
        rows += [f"{d},{h:g},{50 + 8 * np.sin(2 * np.pi * (h - 9) / 24) + rng.normal(0, 1):.4f}" for h in hours]
    path.write_text("day,hour,temp\n" + "\n".join(rows) + "\n")
    return path


def test_read_curves_keeps_own_points_and_empty_cells(tmp_path):
    from dpfda.practice.publish import read_curves

    c = read_curves(hourly_long(tmp_path / "h.csv"), layout="long", id="day", point="hour", value="temp",
                    own_points=True, domain=(-1, 23))
    assert isinstance(c, Curves) and not c.common and c.n == 60
    assert sorted({t.size for t, _ in c.subjects()}) == [23, 24]
    (tmp_path / "w.csv").write_text("id,0,1,2\na,1.0,,3.0\nb,4.0,5.0,6.0\n")
    w = read_curves(tmp_path / "w.csv", id="id", own_points=True, domain=(0, 2))
    assert [t.tolist() for t, _ in w.subjects()] == [[0.0, 1.0], [0.0, 0.5, 1.0]]
    with pytest.raises(ValueError, match="missing value"):
        read_curves(tmp_path / "w.csv", id="id", domain=(0, 2))
    with pytest.raises(TypeError, match="domain"):
        read_curves(tmp_path / "w.csv", id="id", own_points=True)  # type: ignore[call-arg]


def test_cli_releases_own_points_by_ftp_with_a_plot_and_ptf_refuses_by_name(tmp_path, capsys):
    import json

    from dpfda import cli

    data = hourly_long(tmp_path / "h.csv")
    common = ["release", str(data), "--layout", "long", "--id", "day", "--point", "hour", "--value", "temp",
              "--domain", "-1,23", "--space", "fourier:7", "--radius", "80", "--mu", "1"]
    code = cli.main([*common, "--out", str(tmp_path / "r.json"), "--plot", str(tmp_path / "r.png")])
    assert code == 0, capsys.readouterr().err
    record = json.loads((tmp_path / "r.json").read_text())
    assert len(record["noise_sd"]) == len(record["curve"]["values"]) == 101
    # a Fourier space: σ·sqrt(Σφ_k(t)²) = σ·√7 everywhere; the basis at arguments 2πk·t rounded and
    # the sum of squares: γ_{2m+8}·(1 + 2πm), m = 7
    assert np.allclose(record["noise_sd"], record["noise_sd"][0], rtol=gamma(22) * (1 + 2 * np.pi * 7), atol=0)
    assert record["n"] == 60 and "own points" in record["sampling"]
    assert (tmp_path / "r.png").read_bytes().startswith(b"\x89PNG")
    assert cli.main([*common, "--method", "ptf", "--out", str(tmp_path / "p.json")]) == 2
    assert "--grid: PTF needs a grid" in capsys.readouterr().err
    assert cli.main([*common, "--method", "ptf", "--grid", "0:23:24", "--out", str(tmp_path / "p.json")]) == 2
    assert "not measured at the same points" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()
    no_domain = [a for a in common if a not in ("--domain", "-1,23")]
    assert cli.main([*no_domain, "--out", str(tmp_path / "q.json")]) == 2
    assert "give --domain" in capsys.readouterr().err


@pytest.mark.parametrize("points, domain, shown", [
    ([15.999999999999991, 15.999999999999993], (0, 20),         # 1 ulp apart, one t: x/20 rounds them together
     r"the points 15.999999999999991 and 15.999999999999993 meet on \[0, 1\]"),
    ([20.0, 20.0 + 2.0**-48], (0, 20), "the point 20.000000000000004 lies outside"),  # once snapped to 1
])
def test_points_that_meet_on_the_unit_interval_or_pass_the_stop_are_refused_at_construction(points, domain, shown):
    """Distinct points that one map onto [0, 1] merges, or beyond stop, refused naming the subject."""
    with pytest.raises(ValueError, match=r"subject 1.*" + shown):
        Curves([[1.0], [1.0, 2.0]], [[3.0], points], domain)
    # 1 ulp below stop and stop itself stay apart on [0, 1] (the snap to 1 once merged them)
    t = Curves([[1.0, 2.0]], [[float(np.nextafter(20.0, 0.0)), 20.0]], (0, 20)).subjects()[0][0]
    assert t[0] < t[1] == 1.0


def test_the_unit_map_is_monotone_and_exact_at_the_ends_without_a_snap():
    """x = stop maps to 1.0 exactly: fl(stop - start)/fl(stop - start) = 1 (the same rounded number twice)."""
    rng = np.random.default_rng(5)
    for start, stop in zip(rng.uniform(-1e3, 1e3, 200), rng.uniform(1e3, 3e3, 200)):
        c = Curves([[0.0, 0.0, 0.0]], [[start, (start + stop) / 2, stop]], (start, stop))
        t = c.subjects()[0][0]
        assert t[0] == 0.0 and t[-1] == 1.0 and 0.0 < t[1] < 1.0
    with pytest.raises(ValueError, match="outside the public domain"):
        Curves(np.zeros((1, 2)), [0.0, float(np.nextafter(20.0, 21.0))], (0, 20))  # 1 ulp beyond: as Domain.to_unit
    with pytest.raises(ValueError, match="outside the public domain"):
        Curves(np.zeros((1, 2)), [float(np.nextafter(0.0, -1.0)), 20.0], (0, 20))
    # on_grid builds points start + t·(stop - start), which can round past stop: kept inside
    c = Curves([[1.0, 2.0]], [[0.1, 0.3]], (0.1, 0.3)).on_grid(np.linspace(0, 1, 5))
    assert c.points is not None and c.points[-1] <= 0.3 and c.grid[-1] == 1.0
