"""dpfda.practice.publish: curves from tables (wide, long, their errors) and the record of a release."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpfda
from dpfda.practice.publish import (
    CLIP_WARNING_SHARE,
    COMBINE,
    DELTAS,
    curator_diagnostics,
    diagnostics_text,
    privacy_unit,
    read_curves,
    release_record,
    space_description,
)

AGES = [1.0, 1.5, 2.0, 3.0]


def wide_table():
    return pd.DataFrame({"child": ["a", "b", "c"], "1": [70.0, 75.0, 72.0], "1.5": [80.0, 82.0, 79.0],
                         "3": [95.0, 97.0, 94.0], "2": [88.0, 90.0, 86.0]})


def test_wide_columns_are_sorted_by_point_and_rows_kept_in_order():
    points, X = read_curves(wide_table(), id="child")
    assert points.tolist() == AGES
    assert X[:, -1].tolist() == [95.0, 97.0, 94.0] and X[:, 2].tolist() == [88.0, 90.0, 86.0]


def test_long_form_equals_wide_form_and_reads_a_csv(tmp_path):
    wide = wide_table()
    long = wide.melt(id_vars="child", var_name="age", value_name="height").sample(frac=1, random_state=1)
    path = tmp_path / "long.csv"
    long.to_csv(path, index=False)
    p1, X1 = read_curves(wide, id="child")
    p2, X2 = read_curves(path, layout="long", id="child", point="age", value="height")
    assert p1.tolist() == p2.tolist()
    order = [list(dict.fromkeys(long["child"])).index(c) for c in wide["child"]]
    assert np.array_equal(X1, X2[order])


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.assign(**{"1.5": [80.0, None, 79.0]}),
     r"1 missing value\(s\) in 1 of 3 curves \(first: subject 'b' at point 1.5\)"),
    (lambda t: t.assign(**{"1.5": ["80", "x", "79"]}), r"the value 'x' \(row 2, column '1.5'\) is not a number"),
    (lambda t: t.assign(**{"1.5": [80.0, np.inf, 79.0]}), "is infinite"),
    (lambda t: t.assign(note=["", "", ""]), "column 'note' is not a grid point"),
    (lambda t: t.rename(columns={"2": "2.0", "3": "2.00"}), "the grid point 2 appears in two columns"),
    (lambda t: t.iloc[:0], "no curves"),
])
def test_wide_errors_say_what_is_wrong(edit, message):
    with pytest.raises(ValueError, match=message):
        read_curves(edit(wide_table()), id="child")


def test_missing_values_message_says_what_to_do_and_its_privacy_cost():
    t = wide_table()
    t.loc[0, "2"] = None
    with pytest.raises(ValueError) as info:
        read_curves(t, id="child")
    text = str(info.value)
    assert "public rule" in text and "guarantee is unchanged" in text
    assert "drop" in text and "n depend on the data" in text


def test_long_form_errors():
    long = wide_table().melt(id_vars="child", var_name="age", value_name="height")
    with pytest.raises(ValueError, match="long form needs the subject column"):
        read_curves(long, layout="long", point="age", value="height")
    with pytest.raises(ValueError, match="no value column 'value'"):
        read_curves(long, layout="long", id="child", point="age")
    twice = pd.concat([long, long.iloc[:1]])
    with pytest.raises(ValueError, match="subject 'a' has two values at point 1"):
        read_curves(twice, layout="long", id="child", point="age", value="height")
    own = long.assign(age=long["age"].astype(float))
    own.loc[own.child == "c", "age"] += 0.1
    with pytest.raises(ValueError, match="not supported") as info:
        read_curves(own, layout="long", id="child", point="age", value="height")
    assert "common grid" in str(info.value) and "interpolation" in str(info.value)
    gap = long.copy()
    gap.loc[3, "height"] = None
    with pytest.raises(ValueError, match="1 missing value"):
        read_curves(gap, layout="long", id="child", point="age", value="height")


def test_bad_sources():
    with pytest.raises(TypeError, match="path to a CSV file or a pandas DataFrame"):
        read_curves(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="no such file"):
        read_curves("/nonexistent/curves.csv")
    with pytest.raises(ValueError, match="layout must be 'wide' or 'long'"):
        read_curves(wide_table(), layout="tall")


def test_record_of_a_secure_ftp_release_through_a_frame():
    points, X = read_curves(wide_table(), id="child")
    frame = dpfda.PublicFrame(dpfda.LegendreSpace(2), points, dpfda.Domain(1, 3, name="age"), 50, 120)
    rel = dpfda.ftp(frame.to_unit(X), frame.grid, frame.space, frame.radius, 2.0, secure=True)
    rec = release_record(rel, [1, 2, 3], frame=frame)
    assert rec["secure"] is True and rec["mu"] == 2.0 and rec["n"] == 3
    assert [p["delta"] for p in rec["epsilon_delta"]] == list(DELTAS)
    assert rec["grid"]["points"] == pytest.approx(AGES)
    assert rec["curve"]["values"] == pytest.approx(frame.values(rel, [1, 2, 3]).tolist())
    assert rec["frame"]["scale"] == frame.scale and rec["frame"]["lower"] == [50.0] * 4
    assert rec["domain"] == {"start": 1.0, "stop": 3.0, "name": "age"}


def test_record_of_ptf_in_a_kernel_space_and_refusals():
    grid = dpfda.uniform_grid(5)
    space = dpfda.KernelSpace(dpfda.gaussian_kernel(0.3))
    X = np.zeros((20, 5))
    rel = dpfda.ptf(X, grid, space, 1.0, 1.0, np.random.default_rng(2))
    rec = release_record(rel, np.linspace(0, 1, 7), deltas=(1e-3,))
    assert rec["secure"] is False and "not publication" in rec["noise"]
    assert rec["space"] == {"kind": "gaussian-kernel", "rho": 0.3}
    assert len(rec["clip"]) == 5 and rec["frame"] is None
    assert rec["epsilon_delta"][0]["epsilon"] == pytest.approx(float(dpfda.epsilon_from_mu(1.0, 1e-3)))
    batch = dpfda.ftp(np.zeros((2, 20, 5)), grid, space, 1.0, 1.0, np.random.default_rng(2))
    with pytest.raises(ValueError, match="must be one release"):
        release_record(batch, [0.5])
    with pytest.raises(ValueError, match="must lie in"):
        release_record(rel, [1.5])
    with pytest.raises(ValueError, match=r"every delta must lie in \(0, 1\)"):
        release_record(rel, [0.5], deltas=(1.0,))
    with pytest.raises(TypeError, match="release must be a dpfda Release"):
        release_record(rec, [0.5])
    assert space_description(dpfda.KernelSpace(dpfda.brownian_kernel())) == {"kind": "brownian-kernel"}


def test_rng_may_be_left_out_only_with_secure_true():
    grid, space = dpfda.uniform_grid(4), dpfda.LegendreSpace(2)
    X = np.zeros((10, 4))
    for method in (dpfda.ftp, dpfda.ptf):
        assert method(X, grid, space, 1.0, 1.0, secure=True).secure is True
        with pytest.raises(TypeError, match="only secure=True, whose noise comes from OpenDP"):
            method(X, grid, space, 1.0, 1.0)
        assert method(X, grid, space, 1.0, 1.0, np.random.default_rng(0)).secure is False


def test_public_frame_refuses_a_kernel_space_saying_why_and_what_to_do():
    space = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))
    with pytest.raises(TypeError) as info:
        dpfda.PublicFrame(space, AGES, dpfda.Domain(1, 3), 50, 120)
    text = str(info.value)
    assert "no fitting radius" in text and "λ_min(K_T)" in text  # why
    assert "public bound on the curves' RKHS norm" in text and "dpfda.ftp or dpfda.ptf" in text  # what to do
    # The bound the message names is real: over the band |y_j| <= 1 the smallest RKHS norm of an
    # interpolant reaches sqrt(T/λ_min) at most, and a sign pattern gets near it for a smooth kernel.
    K = space.kernel.gram(dpfda.uniform_grid(12))
    lam, V = np.linalg.eigh(K)
    y = np.sign(V[:, 0])
    assert np.sqrt(y @ np.linalg.solve(K, y)) > 1e3  # a band of height 1 allows an RKHS norm above 1000
    with pytest.raises(TypeError, match="space must be a LegendreSpace, got str"):
        dpfda.PublicFrame("legendre", AGES, dpfda.Domain(1, 3), 50, 120)


def test_combine_mean_makes_one_curve_per_subject_in_both_layouts(tmp_path):
    wide = pd.DataFrame({"id": ["a", "b", "a"], "0": [1.0, 5.0, 3.0], "1": [2.0, 6.0, np.nan]})
    with pytest.raises(ValueError, match="subject 'a' appears on two rows"):
        read_curves(wide, id="id")
    points, X = read_curves(wide, id="id", combine="mean")
    assert points.tolist() == [0.0, 1.0] and X.tolist() == [[2.0, 2.0], [5.0, 6.0]]  # NaN left out
    long = wide.melt(id_vars="id", var_name="point", value_name="value")
    points_l, X_l = read_curves(long, layout="long", id="id", combine="mean")
    assert points_l.tolist() == [0.0, 1.0] and X_l.tolist() == X.tolist()
    with pytest.raises(ValueError, match=r"combine must be None \(one row per subject\) or one of \['mean'\]"):
        read_curves(wide, id="id", combine="first")
    only_gaps = wide.assign(**{"1": [np.nan, 6.0, np.nan]})
    with pytest.raises(ValueError, match="1 missing value"):  # none of a's rows has a value at 1
        read_curves(only_gaps, id="id", combine="mean")


def test_ids_are_text_and_csv_cells_follow_one_rule(tmp_path):
    path = tmp_path / "ids.csv"
    path.write_bytes("\ufeffid, 0 ,1\n007,1,2\n\n7,3,\"4\"\n".encode())  # BOM, spaces, a blank line, quotes
    points, X = read_curves(path, id="id")
    assert points.tolist() == [0.0, 1.0] and X.tolist() == [[1.0, 2.0], [3.0, 4.0]]  # 007 and 7: two subjects
    path.write_text("id,0,1\na,1,NA\nb,3,4\n")
    with pytest.raises(ValueError, match=r"1 missing value\(s\) in 1 of 2 curves \(first: subject 'a' at point 1\)"):
        read_curves(path, id="id")
    path.write_text("id,0,1\na,1,1_000\nb,3,4\n")  # Python's float() would take it; a CSV reader should not
    with pytest.raises(ValueError, match="'1_000'"):
        read_curves(path, id="id")
    path.write_text("")
    with pytest.raises(ValueError, match="the file is empty"):
        read_curves(path, id="id")


def test_the_record_states_the_privacy_unit():
    grid, space = dpfda.uniform_grid(4), dpfda.LegendreSpace(2)
    rel = dpfda.ftp(np.zeros((5, 4)), grid, space, 1.0, 1.0, np.random.default_rng(0))
    unit = release_record(rel, [0.5])["privacy_unit"]
    assert unit == privacy_unit() and "one subject's curve, replaced" in unit and "n public" in unit
    combined = release_record(rel, [0.5], combine="mean")["privacy_unit"]
    assert "all of that subject's rows" in combined and COMBINE["mean"] in combined
    with pytest.raises(ValueError, match="combine must be None or one of"):
        release_record(rel, [0.5], combine="median")


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
