"""Bad inputs to a release, as a table: what each gets, and that no noise is drawn for any of them.

Every row is refused by name — in Python with the exception type and a fragment of its
message, on the command line with exit code 2, one line on stderr and no file written —
while OpenDP's sampler (``opendp.core.measurement_invoke``, through which every OpenDP
measurement is invoked) and numpy's normal draws are replaced by functions that raise.
So a refusal that came only after the noise was drawn fails the test.  The control rows
show that the replacements do catch a draw.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import opendp.core
import pandas as pd
import pytest

import dpfda
from dpfda import cli
from dpfda.practice.publish import evaluation_points, read_curves


class Drawn(Exception):
    """Noise was drawn."""


class _NoDraws(np.random.Generator):
    def standard_normal(self, *args, **kwargs):
        raise Drawn("numpy's standard_normal was called")

    def normal(self, *args, **kwargs):
        raise Drawn("numpy's normal was called")


def _no_opendp(*args, **kwargs):
    raise Drawn("OpenDP's sampler was called")


@pytest.fixture
def no_noise(monkeypatch):
    monkeypatch.setattr(opendp.core, "measurement_invoke", _no_opendp)
    monkeypatch.setattr(np.random, "default_rng", lambda seed=None: _NoDraws(np.random.PCG64(seed)))


def no_draws(seed=0):
    return _NoDraws(np.random.PCG64(seed))


GOOD = "id,0,0.5,1\na,1,2,3\nb,2,3,4\nc,0,1,2\n"
GOOD_LONG = "id,point,value\na,0,1\na,0.5,2\na,1,3\nb,0,2\nb,0.5,3\nb,1,4\n"

# name, CSV text, layout, exception type of read_curves, fragment of its message (also on stderr).
CSV_ROWS = [
    ("repeated id (wide)", "id,0,0.5,1\na,1,2,3\na,2,3,4\na,0,1,2\n", "wide", ValueError,
     "subject 'a' appears on two rows"),
    ("empty id (wide)", "id,0,0.5,1\na,1,2,3\n,2,3,4\n", "wide", ValueError,
     "row 2 (line 3) has no subject ('id' is empty)"),
    ("blank id (wide)", "id,0,0.5,1\na,1,2,3\n  ,2,3,4\n", "wide", ValueError, "has no subject"),
    ("repeated id (long)", GOOD_LONG + "a,0,5\n", "long", ValueError, "subject 'a' has two values at point 0"),
    ("empty id (long)", GOOD_LONG + ",0,5\n", "long", ValueError, "row 7 (line 8) has no subject"),
    ("booleans", "id,0,0.5,1\na,True,2,3\nb,False,3,4\n", "wide", ValueError,
     "the value 'True' (row 1 (line 2), column '0') is not a number"),
    ("dates", "id,0,0.5,1\na,2020-01-01,2,3\nb,1,3,4\n", "wide", ValueError, "'2020-01-01'"),
    ("a time span", "id,0,0.5,1\na,1 days,2,3\nb,1,3,4\n", "wide", ValueError, "'1 days'"),
    ("complex", "id,0,0.5,1\na,1+2j,2,3\nb,1,3,4\n", "wide", ValueError, "'1+2j'"),
    ("infinite", "id,0,0.5,1\na,inf,2,3\nb,1,3,4\n", "wide", ValueError, "is infinite"),
    ("ragged rows: one field more on every row", "id,0,0.5,1\na,1,2,3,9\nb,2,3,4,9\n", "wide", ValueError,
     "line 2 has 5 fields but the header has 4"),
    ("ragged rows: one field fewer", "id,0,0.5,1\na,1,2,3\nb,2,3\n", "wide", ValueError,
     "line 3 has 3 fields but the header has 4"),
    ("duplicate headers", "id,0,0.5,0.5\na,1,2,3\nb,2,3,4\n", "wide", ValueError,
     "the header '0.5' is repeated (columns 3 and 4)"),
    ("duplicate subject column", "id,id,0,0.5,1\na,a,1,2,3\n", "wide", ValueError, "the header 'id' is repeated"),
]

# name, DataFrame edit of a good table, fragment (read_curves: ValueError).
FRAME = pd.DataFrame({"id": ["a", "b", "c"], "0": [1.0, 2.0, 0.0], "0.5": [2.0, 3.0, 1.0],
                      "1": [3.0, 4.0, 2.0]})
FRAME_ROWS = [
    ("repeated id", lambda t: t.assign(id=["a", "b", "a"]), "subject 'a' appears on two rows (row 1 and row 3)"),
    ("empty id (None)", lambda t: t.assign(id=["a", None, "c"]), "row 2 has no subject"),
    ("empty id (NaN)", lambda t: t.assign(id=[1.0, np.nan, 3.0]), "row 2 has no subject"),
    ("empty id ('')", lambda t: t.assign(id=["a", "b", ""]), "row 3 has no subject"),
    ("booleans", lambda t: t.assign(**{"0": [True, False, True]}), "column '0' holds booleans"),
    ("nullable booleans", lambda t: t.assign(**{"0": pd.array([True, False, None], dtype="boolean")}),
     "column '0' holds booleans"),
    ("dates", lambda t: t.assign(**{"0": pd.to_datetime(["2020-01-01"] * 3)}), "column '0' holds dates"),
    ("time spans", lambda t: t.assign(**{"0": pd.to_timedelta([1, 2, 3], unit="D")}),
     "column '0' holds time spans"),
    ("complex", lambda t: t.assign(**{"0": [1 + 1j, 2, 3]}), "column '0' holds complex numbers"),
    ("categorical", lambda t: t.assign(**{"0": pd.Categorical([1.0, 2.0, 0.0])}), "holds dtype category"),
    ("objects", lambda t: t.assign(**{"0": pd.Series([1.0, "2", 0.0], dtype=object)}),
     "column '0' holds dtype object"),
    ("duplicate headers", lambda t: t.set_axis(["id", "0", "0.5", "0.5"], axis=1), "the header '0.5' is repeated"),
]

GRID = ("--grid", "0,0.5,1", "--space", "legendre:2", "--radius", "1", "--mu", "1")


def _run_cli(tmp_path, capsys, text, layout, *extra, secure=True):
    data = tmp_path / "data.csv"
    data.write_text(text)
    out = tmp_path / "release.json"
    opts = dict(zip(GRID[::2], GRID[1::2]))
    opts.update(dict(zip(extra[::2], extra[1::2])))
    args = ["release", str(data), "--id", "id", "--layout", layout, "--out", str(out),
            *[x for kv in opts.items() for x in kv]]
    if not secure:
        args += ["--insecure-numpy-noise", "--seed", "1"]
    code = cli.main(args)
    return code, out, capsys.readouterr()


@pytest.mark.parametrize("name, text, layout, exc, message", CSV_ROWS, ids=[r[0] for r in CSV_ROWS])
def test_bad_csv_in_python(tmp_path, no_noise, name, text, layout, exc, message):
    path = tmp_path / "data.csv"
    path.write_text(text)
    with pytest.raises(exc) as info:
        read_curves(path, layout=layout, id="id")
    assert message in str(info.value)


@pytest.mark.parametrize("secure", [True, False], ids=["opendp", "numpy"])
@pytest.mark.parametrize("name, text, layout, exc, message", CSV_ROWS, ids=[r[0] for r in CSV_ROWS])
def test_bad_csv_on_the_command_line(tmp_path, capsys, no_noise, name, text, layout, exc, message, secure):
    code, out, said = _run_cli(tmp_path, capsys, text, layout, secure=secure)
    assert code == 2 and not out.exists()
    assert said.err.startswith("dpfda: error: ") and said.err.count("\n") == 1
    assert message in said.err and said.out == ""


@pytest.mark.parametrize("name, edit, message", FRAME_ROWS, ids=[r[0] for r in FRAME_ROWS])
def test_bad_dataframes(no_noise, name, edit, message):
    with pytest.raises(ValueError) as info:
        read_curves(edit(FRAME.copy()), id="id")
    assert message in str(info.value)


# name, extra options, fragment of stderr: public choices refused before the data are read or noise drawn.
CHOICE_ROWS = [
    ("eval outside the domain", ("--eval", "0,2"), "--eval: grid point must lie in [0, 1]"),
    ("eval outside a --domain", ("--domain", "0,1", "--eval", "0.5:1.5:3"), "must lie in [0, 1]"),
    ("eval outside a frame's domain", ("--radius", None, "--lower", "0", "--upper", "5", "--eval", "0,1.5"),
     "must lie in [0, 1]"),
    ("tiny mu", ("--mu", "1e-300"), "mu is too small"),
    ("zero mu", ("--mu", "0"), "--mu: must be a finite number > 0"),
    ("radius beyond 2^960", ("--radius", "1e300"), "radius must be at most 2^960"),
    ("a space too large for the grid", ("--space", "legendre:4"), "need T >= m"),
    ("a negative clip", ("--method", "ptf", "--clip", "-1"), "clip must be finite and > 0"),
    ("a clip of the wrong length", ("--method", "ptf", "--clip", "1,1"), "clip must be a scalar or a vector"),
    ("an output folder that does not exist", ("--out", "/nonexistent/folder/r.json"), "does not exist"),
]


@pytest.mark.parametrize("secure", [True, False], ids=["opendp", "numpy"])
@pytest.mark.parametrize("name, extra, message", CHOICE_ROWS, ids=[r[0] for r in CHOICE_ROWS])
def test_bad_public_choices_on_the_command_line(tmp_path, capsys, no_noise, name, extra, message, secure):
    extra = list(extra)
    if "--radius" in extra and extra[extra.index("--radius") + 1] is None:
        i = extra.index("--radius")
        del extra[i:i + 2]
        text = GOOD
        code, out, said = _run_frame(tmp_path, capsys, text, extra, secure)
    else:
        code, out, said = _run_cli(tmp_path, capsys, GOOD, "wide", *extra, secure=secure)
    assert code == 2 and not out.exists()
    assert said.err.startswith("dpfda: error: ") and said.err.count("\n") == 1
    assert message in said.err


def _run_frame(tmp_path, capsys, text, extra, secure):
    data = tmp_path / "data.csv"
    data.write_text(text)
    out = tmp_path / "release.json"
    args = ["release", str(data), "--id", "id", "--grid", "0,0.5,1", "--space", "legendre:2", "--mu", "1",
            "--out", str(out), *extra] + ([] if secure else ["--insecure-numpy-noise"])
    return cli.main(args), out, capsys.readouterr()


def test_bad_choices_in_python_draw_no_noise(no_noise):
    X = np.zeros((3, 3))
    grid, space = np.array([0.0, 0.5, 1.0]), dpfda.LegendreSpace(2)
    with pytest.raises(ValueError, match="must lie in"):
        evaluation_points([0.0, 2.0], domain=dpfda.Domain(0, 1))  # checkable before the release
    for secure, rng in ((True, None), (False, no_draws())):
        with pytest.raises(ValueError, match="mu is too small"):
            dpfda.ftp(X, grid, space, 1.0, 1e-300, rng, secure=secure)
        with pytest.raises(ValueError, match="mu is too small"):
            dpfda.ptf(X, grid, space, 1.0, 1e-300, rng, secure=secure)
        with pytest.raises(ValueError, match="mu must be a finite number > 0"):
            dpfda.ftp(X, grid, space, 1.0, 0.0, rng, secure=secure)


def test_the_replacements_catch_a_draw(tmp_path, capsys, no_noise):
    """The control: good input reaches the sampler, which raises, on every path the table uses."""
    for secure in (True, False):
        for text, layout in ((GOOD, "wide"), (GOOD_LONG, "long")):
            with pytest.raises(Drawn):
                _run_cli(tmp_path, capsys, text, layout, secure=secure)
    X = np.zeros((3, 3))
    grid, space = np.array([0.0, 0.5, 1.0]), dpfda.LegendreSpace(2)
    for method in (dpfda.ftp, dpfda.ptf):
        with pytest.raises(Drawn):
            method(X, grid, space, 1.0, 1.0, secure=True)
        with pytest.raises(Drawn):
            method(X, grid, space, 1.0, 1.0, no_draws())


VALUE_ROWS = [r for r in FRAME_ROWS if r[2].startswith("column '0' holds") or "category" in r[2]]


def test_the_value_rows_are_the_dtype_rows():
    assert [r[0] for r in VALUE_ROWS] == ["booleans", "nullable booleans", "dates", "time spans", "complex",
                                          "categorical", "objects"]


@pytest.mark.parametrize("name, edit, message", VALUE_ROWS, ids=[r[0] for r in VALUE_ROWS])
def test_dataframes_given_to_a_mechanism_follow_the_same_rules(no_noise, name, edit, message):
    """The same tables as data of dpfda.ftp/ptf (the arrays' rules): refused, naming the column."""
    values = edit(FRAME.copy()).drop(columns="id")
    grid, space = np.array([0.0, 0.5, 1.0]), dpfda.LegendreSpace(2)
    with pytest.raises(TypeError, match=r"X's column '0' holds"):
        dpfda.ftp(values, grid, space, 1.0, 1.0, secure=True)
    with pytest.raises(TypeError, match=r"X's column '0' holds"):
        dpfda.ptf(values, grid, space, 1.0, 1.0, no_draws())
    good = dpfda.ftp(FRAME.drop(columns="id"), grid, space, 1.0, 1.0, np.random.Generator(np.random.PCG64(0)))
    assert good.n == 3  # a table of real numbers is data like an array


# --- messages a curator can act on: the file once, the subject by its id, the true reason ---

def _long(ids, points, values):
    return "id,point,value\n" + "".join(f"{i},{p},{v}\n" for i, p, v in zip(ids, points, values))


def test_the_command_line_names_the_file_once(tmp_path, capsys, no_noise):
    text = _long(["a", "a", "a", "a"], [0, 0.5, 1, 1], [1, 2, 3, 4])  # subject a twice at 1
    code, out, said = _run_cli(tmp_path, capsys, text, "long")
    assert code == 2 and not out.exists()
    assert "subject 'a' has two values at point 1" in said.err
    assert said.err.count("data.csv") == 1, said.err
    # the same file name once for a file that is not there
    missing = cli.main(["release", str(tmp_path / "absent.csv"), "--id", "id", "--out", str(out), *GRID])
    err = capsys.readouterr().err
    assert missing == 2 and err.count("absent.csv") == 1, err


def test_a_point_off_the_grid_names_the_subject_that_has_it(tmp_path, capsys, no_noise):
    ids = [f"c{k}" for k in range(8) for _ in range(3)] + ["c7"]
    points = [0, 0.5, 1] * 8 + [0.3]
    text = _long(ids, points, np.arange(25.0) / 25)
    for said in (_run_cli(tmp_path, capsys, text, "long")[2].err,
                 pytest.raises(ValueError, read_curves, tmp_path / "data.csv", layout="long", id="id")
                 .value.args[0]):
        assert "subject 'c7' has a value at 0.3" in said, said
        assert "'c0'" not in said and "0, 0.5, 1" in said  # the points every other subject has
        assert "fill each gap" not in said  # the missing-values help is for missing values
    said = _run_cli(tmp_path, capsys, text, "long")[2].err
    assert "none; the points every subject has: 0, 0.5, 1; the public --grid: 3 points: 0, 0.5, 1). " in said


def test_a_budget_no_n_can_use_is_refused_before_the_data_are_read(tmp_path, capsys, no_noise):
    code = cli.main(["release", str(tmp_path / "absent.csv"), "--id", "id", "--out", str(tmp_path / "r.json"),
                     *GRID[:-1], "1e300"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("dpfda: error: --mu: mu=1e+300 is too large") and "absent" not in err, err


def test_a_subject_missing_a_point_is_still_named(tmp_path, no_noise):
    ids = [f"c{k}" for k in range(8) for _ in range(3)]
    points = [0, 0.5, 1] * 8
    keep = [i for i in range(24) if i != 3 * 5 + 1]  # c5 has nothing at 0.5
    text = _long([ids[i] for i in keep], [points[i] for i in keep], [0.1] * len(keep))
    (tmp_path / "data.csv").write_text(text)
    with pytest.raises(ValueError, match="subject 'c5' has 2 of them and none at 0.5"):
        read_curves(tmp_path / "data.csv", layout="long", id="id")


def test_a_point_outside_the_domain_names_the_subject_by_its_id(no_noise):
    table = pd.DataFrame({"id": ["k1", "k1", "k9", "k9"], "point": [0.0, 1.0, 0.5, 1.5],
                          "value": [1.0, 2.0, 3.0, 4.0]})
    with pytest.raises(ValueError) as info:
        read_curves(table, layout="long", id="id", curves=True, domain=(0, 1))
    assert "subject 'k9'" in str(info.value) and "1.5" in str(info.value)
    assert "subject 1" not in str(info.value)
    ok = read_curves(table[table.id == "k1"], layout="long", id="id", curves=True, domain=(0, 1))
    assert ok.n == 1  # control: within the domain, read


def test_the_mean_of_values_near_the_largest_float_does_not_overflow(no_noise):
    big = np.finfo(float).max
    a, b = 0.95 * big, 0.97 * big  # their sum overflows, their mean does not
    table = pd.DataFrame({"id": ["s", "s", "s", "t"], "point": [0.0, 0.0, 1.0, 0.0], "value": [a, b, 1.0, 2.0]})
    _, X = read_curves(table.assign(point=[0.0, 0.0, 1.0, 1.0]).iloc[[0, 1, 2]], layout="long", id="id",
                       combine="mean")
    exact = (Fraction(a) + Fraction(b)) / 2
    # two roundings (the sum of the halves, the division), each within half an ulp: 2 eps relative
    assert np.isfinite(X[0, 0]) and abs(Fraction(X[0, 0]) - exact) <= 2 * np.finfo(float).eps * exact
    # row order does not matter (each cell summed in increasing order)
    _, Y = read_curves(table.iloc[[1, 0, 2]], layout="long", id="id", combine="mean")
    assert Y[0, 0] == X[0, 0]
    # ordinary values keep the plain mean, bit for bit
    _, Z = read_curves(pd.DataFrame({"id": ["s"] * 3, "point": [0.0] * 3, "value": [0.1, 0.7, 0.2]}),
                       layout="long", id="id", combine="mean")
    assert Z[0, 0] == (0.1 + 0.2 + 0.7) / 3


def test_a_mean_near_the_largest_float_reaches_the_report(tmp_path, capsys, no_noise):
    """The mean of values whose sum overflows is read, and the curator's report shows it (no noise: --check)."""
    big = np.finfo(float).max
    data = tmp_path / "data.csv"
    values = [repr(float(big * 0.96)), repr(float(big * 0.98)), 1, 2]
    data.write_text(_long(["a", "a", "a", "a"], [0, 0, 0.5, 1], values))
    code = cli.main(["release", str(data), "--id", "id", "--layout", "long", "--combine", "mean", "--check",
                     "--out", str(tmp_path / "r.json"), *GRID])
    err = capsys.readouterr().err
    assert code == 0 and "NaN" not in err and "1.74376e+308" in err, err
