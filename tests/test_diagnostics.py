"""dpfda.practice.diagnostics: the curator's figures about the data, never in the record."""

from __future__ import annotations

import numpy as np
import pytest

import dpfda
from dpfda.practice.diagnostics import CLIP_WARNING_SHARE, curator_diagnostics, diagnostics_text
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
