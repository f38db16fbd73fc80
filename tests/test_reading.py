"""dpfda.practice.reading: curves from tables (wide, long, CSV or DataFrame) and their errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpfda.maths.curves import Curves
from dpfda.practice.reading import read_curves
from dpfda.practice.realdata import Domain

AGES = [1.0, 1.5, 2.0, 3.0]


def wide_table():
    return pd.DataFrame({"child": ["a", "b", "c"], "1": [70.0, 75.0, 72.0], "1.5": [80.0, 82.0, 79.0],
                         "3": [95.0, 97.0, 94.0], "2": [88.0, 90.0, 86.0]})


def test_wide_columns_are_sorted_by_point_and_rows_kept_in_order():
    curves = read_curves(wide_table(), id="child", domain=(0, 24))
    points, X = curves.points, curves.values
    assert points.tolist() == AGES
    assert X[:, -1].tolist() == [95.0, 97.0, 94.0] and X[:, 2].tolist() == [88.0, 90.0, 86.0]


def test_long_form_equals_wide_form_and_reads_a_csv(tmp_path):
    wide = wide_table()
    long = wide.melt(id_vars="child", var_name="age", value_name="height").sample(frac=1, random_state=1)
    path = tmp_path / "long.csv"
    long.to_csv(path, index=False)
    curves = read_curves(wide, id="child", domain=(0, 24))
    p1, X1 = curves.points, curves.values
    curves = read_curves(path, layout="long", id="child", point="age", value="height", domain=(0, 24))
    p2, X2 = curves.points, curves.values
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
        read_curves(edit(wide_table()), id="child", domain=(0, 24))


def test_missing_values_message_says_what_to_do_and_its_privacy_cost():
    t = wide_table()
    t.loc[0, "2"] = None
    with pytest.raises(ValueError) as info:
        read_curves(t, id="child", domain=(0, 24))
    text = str(info.value)
    assert "public rule" in text and "guarantee is unchanged" in text
    assert "drop" in text and "n depend on the data" in text


def test_long_form_errors():
    long = wide_table().melt(id_vars="child", var_name="age", value_name="height")
    with pytest.raises(ValueError, match="long form needs the subject column"):
        read_curves(long, layout="long", point="age", value="height", domain=(0, 24))
    with pytest.raises(ValueError, match="no value column 'value'"):
        read_curves(long, layout="long", id="child", point="age", domain=(0, 24))
    twice = pd.concat([long, long.iloc[:1]])
    with pytest.raises(ValueError, match="subject 'a' has two values at point 1"):
        read_curves(twice, layout="long", id="child", point="age", value="height", domain=(0, 24))
    own = long.assign(age=long["age"].astype(float))
    own.loc[own.child == "c", "age"] += 0.1
    with pytest.raises(ValueError, match="not supported") as info:
        read_curves(own, layout="long", id="child", point="age", value="height", domain=(0, 24))
    assert "common grid" in str(info.value) and "interpolation" in str(info.value)
    gap = long.copy()
    gap.loc[3, "height"] = None
    with pytest.raises(ValueError, match="1 missing value"):
        read_curves(gap, layout="long", id="child", point="age", value="height", domain=(0, 24))


def test_bad_sources():
    with pytest.raises(TypeError, match="path to a CSV file or a pandas DataFrame"):
        read_curves(np.zeros((2, 2)), domain=(0, 24))
    with pytest.raises(ValueError, match="no such file"):
        read_curves("/nonexistent/curves.csv", domain=(0, 24))
    with pytest.raises(ValueError, match="layout must be 'wide' or 'long'"):
        read_curves(wide_table(), layout="tall", domain=(0, 24))


def test_combine_mean_makes_one_curve_per_subject_in_both_layouts(tmp_path):
    wide = pd.DataFrame({"id": ["a", "b", "a"], "0": [1.0, 5.0, 3.0], "1": [2.0, 6.0, np.nan]})
    with pytest.raises(ValueError, match="subject 'a' appears on two rows"):
        read_curves(wide, id="id", domain=(0, 24))
    curves = read_curves(wide, id="id", combine="mean", domain=(0, 24))
    points, X = curves.points, curves.values
    assert points.tolist() == [0.0, 1.0] and X.tolist() == [[2.0, 2.0], [5.0, 6.0]]  # NaN left out
    long = wide.melt(id_vars="id", var_name="point", value_name="value")
    curves = read_curves(long, layout="long", id="id", combine="mean", domain=(0, 24))
    points_l, X_l = curves.points, curves.values
    assert points_l.tolist() == [0.0, 1.0] and X_l.tolist() == X.tolist()
    with pytest.raises(ValueError, match=r"combine must be None \(one row per subject\) or one of \['mean'\]"):
        read_curves(wide, id="id", combine="first", domain=(0, 24))
    only_gaps = wide.assign(**{"1": [np.nan, 6.0, np.nan]})
    with pytest.raises(ValueError, match="1 missing value"):  # none of a's rows has a value at 1
        read_curves(only_gaps, id="id", combine="mean", domain=(0, 24))


def test_a_combined_curve_is_the_same_bits_whatever_the_order_of_the_rows():
    """A subject's mean of its own rows is a function of its values alone: every order of the table's
    rows gives the same bits (0.1 + 0.2 + 0.3 and 0.3 + 0.2 + 0.1 differ in the last bit)."""
    rows = [("a", 1, 0.1), ("a", 1, 0.2), ("a", 1, 0.3), ("a", 2, 5.0), ("b", 1, 1e16), ("b", 1, 1.0),
            ("b", 1, -1e16), ("b", 2, 2.0)]
    got, rng = set(), np.random.default_rng(5)
    for order in [range(len(rows)), range(len(rows) - 1, -1, -1)] + [rng.permutation(len(rows)) for _ in range(60)]:
        table = pd.DataFrame([rows[i] for i in order], columns=["id", "t", "v"])
        for layout, df in (("long", table), ("wide", table.pivot_table(index=[table.index, "id"], columns="t",
                                                                         values="v").reset_index(level="id"))):
            X = read_curves(df, layout=layout, id="id", point="t", value="v", combine="mean", domain=(0, 24)).values
            first = list(dict.fromkeys(table["id"]))
            got.add((layout, X[first.index("a")].tobytes(), X[first.index("b")].tobytes()))
    assert len({g for g in got if g[0] == "long"}) == 1 and len({g for g in got if g[0] == "wide"}) == 1


def test_ids_are_text_and_csv_cells_follow_one_rule(tmp_path):
    path = tmp_path / "ids.csv"
    path.write_bytes("\ufeffid, 0 ,1\n007,1,2\n\n7,3,\"4\"\n".encode())  # BOM, spaces, a blank line, quotes
    curves = read_curves(path, id="id", domain=(0, 24))
    points, X = curves.points, curves.values
    assert points.tolist() == [0.0, 1.0] and X.tolist() == [[1.0, 2.0], [3.0, 4.0]]  # 007 and 7: two subjects
    path.write_text("id,0,1\na,1,NA\nb,3,4\n")
    with pytest.raises(ValueError, match=r"1 missing value\(s\) in 1 of 2 curves \(first: subject 'a' at point 1\)"):
        read_curves(path, id="id", domain=(0, 24))
    path.write_text("id,0,1\na,1,1_000\nb,3,4\n")  # Python's float() would take it; a CSV reader should not
    with pytest.raises(ValueError, match="'1_000'"):
        read_curves(path, id="id", domain=(0, 24))
    path.write_text("")
    with pytest.raises(ValueError, match="the file is empty"):
        read_curves(path, id="id", domain=(0, 24))


# --- hints for files that are almost right ------------------------------------------------


def test_a_semicolon_separated_file_with_decimal_commas_gets_the_fix(tmp_path):
    path = tmp_path / "european.csv"
    path.write_text("station;1;2;3\nOslo;-4,3;-4,0;-0,2\nBergen;1,2;1,1;3,4\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        read_curves(path, id="station", domain=(0, 24))
    text = str(info.value)
    assert "separated by ';'" in text and "decimal=','" in text and "sep=';'" in text
    # the fix the message gives works: the converted file reads
    fixed = tmp_path / "fixed.csv"
    pd.read_csv(path, sep=";", decimal=",").to_csv(fixed, index=False)
    curves = read_curves(fixed, id="station", domain=(0, 24))
    points, X = curves.points, curves.values
    assert points.tolist() == [1.0, 2.0, 3.0] and X[0].tolist() == [-4.3, -4.0, -0.2]
    tabs = tmp_path / "tabs.csv"
    tabs.write_text("station\t1\t2\nOslo\t1\t2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="separated by tabs"):
        read_curves(tabs, id="station", domain=(0, 24))


def test_month_names_as_headers_or_points_get_the_numbers_and_the_domain(tmp_path):
    wide = tmp_path / "months.csv"
    wide.write_text("station,Jan,Feb,Mar\nOslo,-4.3,-4.0,-0.2\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        read_curves(wide, id="station", domain=(0, 24))
    text = str(info.value)
    assert "column 'Jan' is not a grid point" in text and "month names" in text
    assert "1, 2, …, 12" in text and "--domain 1,13" in text
    long = pd.DataFrame({"station": ["Oslo"] * 2, "month": ["January", "February"], "temp": [-4.3, -4.0]})
    with pytest.raises(ValueError, match="month names.*--domain 1,13"):
        read_curves(long, layout="long", id="station", point="month", value="temp", domain=(0, 24))
    with pytest.raises(ValueError) as info:  # a header that is no month: no month hint
        read_curves(pd.DataFrame({"station": ["a"], "note": [1.0]}), id="station", domain=(0, 24))
    assert "month" not in str(info.value)


def test_table_columns_are_the_header_names(tmp_path):
    from dpfda.practice.reading import table_columns

    path = tmp_path / "t.csv"
    path.write_text("\ufeff\nchild, 1,2\na,1,2\n", encoding="utf-8")  # a BOM and a blank line first
    assert table_columns(path) == ["child", "1", "2"]
    assert table_columns(wide_table()) == ["child", "1", "1.5", "3", "2"]


def test_curves_carry_the_public_domain_and_the_units():
    c = read_curves(wide_table(), id="child", domain=(1, 18), units="height (cm)")
    assert isinstance(c, Curves) and c.common and c.domain == (1.0, 18.0) and c.units == "height (cm)"
    assert c.points.tolist() == AGES and c.values[:, -1].tolist() == [95.0, 97.0, 94.0]
    assert read_curves(wide_table(), id="child", domain=Domain(1, 18, name="age")).domain == (1.0, 18.0)
    assert read_curves(wide_table(), id="child", domain=(1, 18)).units is None
    with pytest.raises(TypeError, match="units must be a string"):
        read_curves(wide_table(), id="child", domain=(1, 18), units=2.54)
    with pytest.raises(TypeError, match="curves"):  # the reader always returns Curves: no flag for it
        read_curves(wide_table(), id="child", domain=(1, 18), curves=True)  # type: ignore[call-arg]


def test_the_domain_is_public_and_checked_before_the_data_are_read():
    with pytest.raises(TypeError, match="domain"):
        read_curves(wide_table(), id="child")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"domain must be the public interval \(start, stop\)"):
        read_curves("/nonexistent/curves.csv", domain=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="domain must be finite with start < stop"):
        read_curves("/nonexistent/curves.csv", domain=(3, 1))
    with pytest.raises(ValueError, match=r"every subject has a value at the grid point 3, outside the public "
                       r"domain \[1, 2.5\]"):
        read_curves(wide_table(), id="child", domain=(1, 2.5))  # a point of the table's grid lies outside


def test_own_points_keep_each_subject_on_the_points_it_has():
    t = wide_table()
    t.loc[1, "1.5"] = None
    with pytest.raises(ValueError, match="1 missing value"):
        read_curves(t, id="child", domain=(1, 18))
    c = read_curves(t, id="child", domain=(1, 18), own_points=True)
    assert not c.common and [v.tolist() for _, v in c.subjects()] == [[70, 80, 88, 95], [75, 90, 97], [72, 79, 86, 94]]
    t.loc[1, ["1", "2", "3"]] = None
    with pytest.raises(ValueError, match="subject 'b' has no value at any point"):
        read_curves(t, id="child", domain=(1, 18), own_points=True)


def test_a_subject_whose_points_meet_on_the_unit_interval_is_named_by_its_id():
    """The distinct points 0 and 0.001 on the domain (-1e17, 1e17) both map to t = 0.5 (x - start rounds
    to 1e17): the subject is named by its id (Curves alone would say its row number)."""
    x, y = 0.0, 0.001
    start, stop = -1e17, 1e17
    assert (x - start) / (stop - start) == (y - start) / (stop - start)  # they meet
    long = pd.DataFrame({"id": ["s1", "s1", "kid-7", "kid-7"], "t": [1e16, x, x, y], "v": [1.0, 2.0, 3.0, 4.0]})
    meet = r"subject 'kid-7': the points 0 and 0.001 meet on \[0, 1\] \(both map to 0.5\)"
    with pytest.raises(ValueError, match=meet):
        read_curves(long, layout="long", id="id", point="t", value="v", domain=(start, stop), own_points=True)
    ok = read_curves(long.iloc[:3], layout="long", id="id", point="t", value="v", domain=(start, stop),
                     own_points=True)
    assert ok.n == 2
