"""dpfda.practice.diagnostics: the curator's figures about the data, never in the record."""

from __future__ import annotations

import numpy as np
import pytest

import dpfda
from dpfda.practice.diagnostics import CLIP_WARNING_SHARE, curator_diagnostics, curator_report, diagnostics_text
from dpfda.practice.publish import release_record


def _fahrenheit(n=40, seed=5):
    rng = np.random.default_rng(seed)
    hours = np.linspace(0, 10, 11)
    return hours, 60 + 5 * np.sin(hours / 3) + rng.uniform(-8, 8, size=(n, hours.size))


def test_curator_diagnostics_show_wrong_units_and_are_not_in_the_record():
    hours, F = _fahrenheit()
    space, domain = dpfda.LegendreSpace(3), dpfda.Domain(0, 10, name="hour")
    frame = dpfda.PublicFrame(space, hours, domain, 30, 100)  # a band in °F
    C = (F - 32) * 5 / 9  # the file is in °C
    rel = dpfda.ftp(frame.to_unit(C), frame.grid, space, frame.radius, 1.0, np.random.default_rng(1))
    diag = curator_diagnostics(rel, C, frame=frame)
    assert diag["clipped"] == diag["values"] == C.size and diag["outside_band"] == C.size
    assert diag["data_range"] == [C.min(), C.max()] and diag["band"] == [30.0, 100.0]
    assert any("100% of the values were clipped" in w for w in diag["warnings"])
    assert "NOT private" in diag["note"]
    record = release_record(rel, [0, 10], frame=frame)
    assert not {"clipped", "shrunk", "data_range", "warnings", "diagnostics"} & set(record)
    # The right units: nothing clipped, no warning, and the release lies where its noise puts it.
    good = dpfda.ftp(frame.to_unit(F), frame.grid, space, frame.radius, 1.0, np.random.default_rng(1))
    diag = curator_diagnostics(good, F, frame=frame)
    assert diag["clipped"] == 0 and diag["shrunk"] == 0 and diag["warnings"] == []
    assert diag["noise_distance"] < 1 + 2 * np.sqrt(20 / 3) + 40 / 3
    # Forgetting frame.to_unit: the release is far from what the curves give through the frame.
    forgot = dpfda.ftp(F, frame.grid, space, frame.radius, 1.0, np.random.default_rng(1))
    assert any("frame.to_unit" in w for w in curator_diagnostics(forgot, F, frame=frame)["warnings"])
    # B' = 1 in the data's units: every fit shrunk onto the ball.
    small = dpfda.ftp(F, frame.grid, space, 1.0, 1.0, np.random.default_rng(1))
    diag = curator_diagnostics(small, F)
    assert diag["shrunk"] == len(F) and diag["band"] is None
    assert any("shrunk onto the ball of radius B' = 1" in w for w in diag["warnings"])
    text = diagnostics_text(diag)
    assert "NOT private" in text and "fits shrunk onto the ball of radius B': 40 of 40" in text
    assert "WARNING" in text


def test_curator_diagnostics_of_ptf_count_the_clipped_values():
    grid, space = dpfda.uniform_grid(5), dpfda.LegendreSpace(2)
    X = np.zeros((10, 5))
    X[:3, 0] = 2.0  # three values beyond the clip 1
    rel = dpfda.ptf(X, grid, space, 1.0, 1.0, np.random.default_rng(3), clip=1.0)
    diag = curator_diagnostics(rel, X)
    assert diag["clipped"] == diag["outside_band"] == 3 and diag["band"] == [-1.0, 1.0]
    assert diag["clipped_share"] == 3 / 50 > CLIP_WARNING_SHARE and len(diag["warnings"]) == 1
    with pytest.raises(ValueError, match="one dataset"):
        curator_diagnostics(rel, X[None])
    with pytest.raises(TypeError, match="release must be a dpfda Release"):
        curator_diagnostics(X, X)


# --- the report before a release, with or without a grid ---------------------------------


def _hourly(n=120, seed=8, unit="F"):
    """Hourly temperatures on 0..23 (°F by default), as an array and as Curves on the day's domain."""
    rng = np.random.default_rng(seed)
    hours = np.arange(24.0)
    X = 60 + 12 * np.sin(2 * np.pi * (hours - 9) / 24) + rng.normal(0, 4, (n, 24)) + rng.normal(0, 8, (n, 1))
    if unit == "C":
        X = (X - 32) * 5 / 9
    return hours, X


def _drop_hours(X, hours, seed=9):
    """Each day without one or two of its hours (its own points)."""
    rng = np.random.default_rng(seed)
    keep = [np.sort(rng.choice(24, size=24 - k, replace=False)) for k in rng.integers(1, 3, len(X))]
    return dpfda.Curves([x[k] for x, k in zip(X, keep)], [hours[k] for k in keep], (0, 24))


def test_the_report_is_the_same_with_or_without_a_grid():
    hours, X = _hourly()
    space, domain = dpfda.FourierSpace(7), dpfda.Domain(0, 24, name="hour")
    grid_frame = dpfda.PublicFrame(space, hours, domain, 20, 110)  # a band in °F
    layout = dpfda.PublicFrame(space, np.linspace(0, 24, 101), domain, 20, 110)
    X[:5, 3] = 150.0  # five hot readings, outside the band
    wide = curator_report(X, grid_frame.geometry, grid_frame.radius, frame=grid_frame)
    own = curator_report(dpfda.Curves(X, hours, (0, 24)), layout.geometry, layout.radius, frame=layout)
    for key in ("n", "values", "clipped", "outside_band", "shrunk", "too_few_points", "data_range", "band",
                "warnings"):
        assert wide[key] == own[key], key
    assert wide["clipped"] == wide["outside_band"] == 5 and wide["noise_distance"] is None
    assert diagnostics_text(wide) == diagnostics_text(own)


def test_a_radius_in_the_wrong_units_warns_on_curves_on_their_own_points():
    """B' = 50 for °F data given to the mechanism uncentred: every day's fit is shrunk (the
    release is then some 7 °F too low); the report says so before any noise is drawn."""
    hours, X = _hourly()
    days = _drop_hours(X, hours)
    geometry = dpfda.FourierSpace(7).at(np.linspace(0, 1, 101))
    report = curator_report(days, geometry, 50.0)
    assert report["shrunk_share"] > 0.9 and report["n"] == 120 and report["values"] < 120 * 24
    assert any("shrunk onto the ball of radius B' = 50" in w for w in report["warnings"])
    right = curator_report(days, geometry, 1000.0)  # a radius no day reaches
    assert right["shrunk"] == 0 and right["warnings"] == []
    # the same days through the band: nothing clipped, nothing shrunk
    frame = dpfda.PublicFrame(dpfda.FourierSpace(7), np.linspace(0, 24, 101), dpfda.Domain(0, 24), 20, 110)
    banded = curator_report(days, frame.geometry, frame.radius, frame=frame)
    assert banded["clipped"] == banded["shrunk"] == 0 and banded["warnings"] == []
    celsius = _drop_hours(_hourly(unit="C")[1], hours)  # the file in °C against a band in °F
    wrong = curator_report(celsius, frame.geometry, frame.radius, frame=frame)
    assert wrong["clipped_share"] > 0.5 and "clipped" in wrong["warnings"][0]


def test_the_report_names_subjects_with_too_few_points_and_periodic_ends():
    hours, X = _hourly(n=10)
    space = dpfda.FourierSpace(7)
    points = [hours] * 8 + [hours[:5], np.array([0.0, 24.0])]  # two days with fewer than 7 points
    values = [X[i, :24] for i in range(8)] + [X[8, :5], X[9, [0, 0]]]
    days = dpfda.Curves(values, points, (0, 24))
    report = curator_report(days, space.at(np.linspace(0, 1, 101)), 1000.0)
    assert report["too_few_points"] == 2 and report["both_ends"] == 1
    assert any("fits each of them as the zero curve" in w for w in report["warnings"])
    assert any("both ends of the domain" in w and "domain=(1, 13)" in w for w in report["warnings"])
    legendre = curator_report(days, dpfda.LegendreSpace(7).at(np.linspace(0, 1, 101)), 1000.0)
    assert legendre["both_ends"] is None  # not periodic: two different instants


def test_the_report_changes_nothing_it_reads():
    """The report only reads the curves: the release after it is the release without it, bit for bit."""
    hours, X = _hourly()
    days = _drop_hours(X, hours)
    frame = dpfda.PublicFrame(dpfda.FourierSpace(7), np.linspace(0, 24, 101), dpfda.Domain(0, 24), 20, 110)
    before = [(t.copy(), x.copy()) for t, x in days.subjects()]
    plain = dpfda.ftp(frame.to_unit(days), frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(3))
    curator_report(days, frame.geometry, frame.radius, frame=frame)
    after = dpfda.ftp(frame.to_unit(days), frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(3))
    assert np.array_equal(plain.coef, after.coef)
    assert all(np.array_equal(t, t0) and np.array_equal(x, x0)
               for (t, x), (t0, x0) in zip(days.subjects(), before))
    # after the release: the noise distance of a release made from these days, and of one that was not
    diag = curator_diagnostics(after, days, frame=frame)
    assert diag["noise_distance"] < 1 + 2 * np.sqrt(20 / 7) + 40 / 7
    forgot = dpfda.ftp(days, frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(3))
    assert any("frame.to_unit" in w for w in curator_diagnostics(forgot, days, frame=frame)["warnings"])
