"""Curves from a table: a CSV file or a pandas DataFrame, wide or long, as a :class:`dpfda.Curves`.

:func:`read_curves` reads curves in wide form (one row per subject, one column per grid
point, the header holding the points) or in long form (one row per measurement: subject,
point, value), and returns them as a :class:`dpfda.Curves` with the public domain and the
units, one curve per subject, or stops with a ``ValueError`` that says what is wrong and
what to do.  It is strict: real, finite numbers
only, as many fields as headers on every row, no repeated header, no repeated or empty
subject id (unless ``combine`` states how a subject's rows make one curve, :data:`COMBINE`).

The paper's curves are observed at *common* points t_1 < … < t_T (§3); the estimators need
it (PTF averages each grid point over subjects, FTP fits everyone with one design matrix).
So every subject must have a finite value at every grid point: a missing value is an error,
and so are curves measured at their own points, unless ``own_points=True`` keeps each
subject on the points it has (FTP fits each subject on its own points).  See the book's chapter
"Releasing your own data" for what to do then.  Also importable from
:mod:`dpfda.practice.publish`.
"""

from __future__ import annotations

import csv
import numbers
import os
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..maths.curves import Curves
from ..validation import non_real_dtype
from .realdata import Domain

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COMBINE", "read_curves", "table_columns"]

_MISSING_HELP = (
    "dpfda needs every curve observed at every point of one common grid (the paper's "
    "setting). Either fill each gap by a public rule fixed before looking at the data and "
    "applied to each subject's own curve (e.g. linear interpolation between that subject's "
    "neighbouring values): a per-record map, so the guarantee is unchanged; or drop the "
    "incomplete subjects, which makes n depend on the data, so the number of complete curves "
    "must itself be public or released privately. FTP can also fit each subject on the points it "
    "has: read_curves(..., own_points=True), or leave out --grid on the command line"
)


_OWN_POINTS_HELP = (
    "dpfda needs one common grid: curves measured at their own points are not supported (the paper "
    "assumes common points; PTF averages each point over subjects) except by FTP, which fits each "
    "subject on its own points: read_curves(..., own_points=True), or leave out --grid on the "
    "command line. For PTF, put every curve on one public grid first, by a public rule applied to each "
    "subject's own curve (e.g. linear interpolation), or leave out the points off the grid by a public rule")


def _odd_one(present: np.ndarray, labels: Sequence[str], points: np.ndarray, order: np.ndarray) -> str:
    """Which subject breaks the common grid, named by its id, and the points every subject has.

    A subject with a point few others have (a point off the others' grid), or else one without a
    point most have.
    """
    held = present.sum(axis=0)
    n = present.shape[0]
    shared = points[order][held[order] == n]
    grid = f"the points every subject has: {_short(shared)}" if shared.size else "no point is common to all"
    j = int(np.argmin(held))  # the point fewest subjects have
    if 2 * held[j] <= n:  # a point off the others' grid: name a subject that has it
        i = int(np.argmax(present[:, j]))
        return (f"subject {labels[i]!r} has a value at {points[j]:g}, where {n - int(held[j])} of the {n} "
                f"subjects have none; {grid}")
    i, j = (int(k) for k in np.argwhere(~present)[0])
    return (f"subject {labels[i]!r} has {int(present[i].sum())} of them and none at {points[j]:g}, where "
            f"{int(held[j])} of the {n} subjects have one; {grid}")


def _short(points: np.ndarray) -> str:
    text = [f"{p:g}" for p in points]
    return ", ".join(text if len(text) <= 8 else text[:4] + ["…"] + text[-2:])


COMBINE = {
    "mean": "the mean of the subject's values at each grid point, missing values left out",
}
"""The rules :func:`read_curves` (``combine=``) may use to make one curve of a subject's rows."""

_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "#n/a", "<na>"})
_MONTHS = frozenset(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"])
_MONTH_HINT = ("; these look like month names: give the months as numbers (1, 2, …, 12 for January to "
               "December; rename the columns, or map the point column, by that public rule) and, for a "
               "periodic space, the domain one year long, domain=(1, 13) (--domain 1,13 on the command "
               "line), so that December "
               "and January are a month apart rather than the same instant")


def _month_hint(text: object) -> str:
    return _MONTH_HINT if isinstance(text, str) and text.strip().strip(".").lower() in _MONTHS else ""


def _separator_hint(header: list[str]) -> str:
    """A hint when a CSV's header is one field holding ';' or tabs: another separator."""
    if len(header) != 1:
        return ""
    if ";" in header[0]:
        return ("; the header is one field holding ';': the file looks separated by ';' (often with decimal "
                "commas, 12,5). dpfda reads comma-separated files with decimal points; convert it once, e.g. "
                "pandas.read_csv(PATH, sep=';', decimal=',').to_csv(NEW_PATH, index=False)")
    if "\t" in header[0]:
        return ("; the header is one field holding tabs: the file looks separated by tabs. dpfda reads "
                "comma-separated files; convert it once, e.g. "
                "pandas.read_csv(PATH, sep='\\t').to_csv(NEW_PATH, index=False)")
    return ""
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INFINITE = re.compile(r"[+-]?inf(inity)?", re.IGNORECASE)


class _CsvTable:
    """A CSV file as text cells, checked: unique headers, as many fields as headers on every row."""

    def __init__(self, path: str) -> None:
        self.where = repr(path)
        try:
            with open(path, newline="", encoding="utf-8-sig") as fh:
                rows = list(csv.reader(fh, strict=True))
        except FileNotFoundError:
            raise ValueError(f"source: no such file {path!r}") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise ValueError(f"source: {path!r} is not a readable CSV file ({reason})") from None
        lines = [i + 1 for i, row in enumerate(rows) if row]  # blank lines are skipped
        rows = [row for row in rows if row]
        if not rows:
            raise ValueError(f"{self.where}: the file is empty (no header line)")
        self.names = [name.strip() for name in rows[0]]
        seen: dict[str, int] = {}
        for k, name in enumerate(self.names):
            if name in seen:
                raise ValueError(f"{self.where}: the header {name!r} is repeated (columns {seen[name] + 1} "
                                 f"and {k + 1}); every column needs its own name")
            seen[name] = k
        hint = _separator_hint(rows[0])
        for line, row in zip(lines[1:], rows[1:]):
            if len(row) != len(self.names):
                raise ValueError(f"{self.where}: line {line} has {len(row)} fields but the header has "
                                 f"{len(self.names)}; every row needs one field per header (a field "
                                 f"too many or too few shifts the values into the wrong columns){hint}")
        if hint:  # every row has one field too: the values are not numbers either
            raise ValueError(f"{self.where}: the file has one column{hint}")
        self._rows = rows[1:]
        self._lines = lines[1:]
        self.n_rows = len(self._rows)

    def row(self, i: int) -> str:
        return f"row {i + 1} (line {self._lines[i]})"

    def labels(self, name: str) -> list[str]:
        k = self.names.index(name)
        return [row[k].strip() for row in self._rows]

    def numbers(self, name: str, text: bool = True) -> np.ndarray:
        k = self.names.index(name)
        return np.array([_cell(row[k], self, i, name) for i, row in enumerate(self._rows)], dtype=float)


def _cell(text: str, table: _CsvTable | _FrameTable, i: int, name: str) -> float:
    """A text cell as a number: decimal notation, or a missing value (NaN); anything else refused."""
    text = text.strip()
    if text.lower() in _MISSING:
        return np.nan
    if _NUMBER.fullmatch(text):
        value = float(text)
        if not np.isfinite(value):
            raise ValueError(f"{table.where}: the value {text!r} ({table.row(i)}, column {name!r}) is "
                             "beyond the float64 range; every value must be a finite number")
        return value
    if _INFINITE.fullmatch(text):
        raise ValueError(f"{table.where}: the value at {table.row(i)}, column {name!r} is infinite; "
                         "every value must be a finite number")
    raise ValueError(f"{table.where}: the value {text!r} ({table.row(i)}, column {name!r}) is not "
                     "a number (a real number in decimal notation, or empty for a missing value)"
                     + _month_hint(text))


class _FrameTable:
    """A DataFrame, read by the rules of :class:`_CsvTable`: real numbers only, unique headers."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.where = "the DataFrame"
        if frame.columns.nlevels != 1:
            raise ValueError(f"{self.where}: its columns have {frame.columns.nlevels} levels; give one "
                             "header per column")
        self.names = list(frame.columns)
        dup = frame.columns[frame.columns.duplicated()]
        if len(dup):
            raise ValueError(f"{self.where}: the header {dup[0]!r} is repeated; every column needs its own name")
        self._frame = frame
        self.n_rows = len(frame)

    def row(self, i: int) -> str:
        return f"row {i + 1}"

    def labels(self, name: str) -> list[str]:
        out = []
        for value in self._frame[name].tolist():
            try:
                missing = value is None or bool(value != value)  # NaN, NaT
            except TypeError:  # pandas.NA, whose truth value is undefined
                missing = True
            out.append("" if missing else str(value).strip())
        return out

    def numbers(self, name: str, text: bool = False) -> np.ndarray:
        """The column as floats (NaN: missing); ``text=True`` also reads text cells as a CSV's."""
        column = self._frame[name]
        dtype = column.dtype
        if text and non_real_dtype(dtype) is not None and all(isinstance(v, str) for v in column.tolist()):
            return np.array([_cell(v, self, i, name) for i, v in enumerate(column.tolist())], dtype=float)
        what = non_real_dtype(dtype)
        if what is not None:
            bad = [(i, v) for i, v in enumerate(column.tolist())
                   if not _is_real(v) and not (isinstance(v, str) and _NUMBER.fullmatch(v.strip()))]
            first = f"; the value {bad[0][1]!r} ({self.row(bad[0][0])}, column {name!r}) is not a number" if bad else ""
            raise ValueError(f"{self.where}: column {name!r} holds {what}, not real numbers{first}. Every "
                             "value must be a real number (int or float dtype): convert the column "
                             "yourself first, by a public rule (e.g. pd.to_numeric, or days since a "
                             "public date)")
        arr = column.to_numpy(dtype=float, na_value=np.nan)
        if np.isinf(arr).any():
            i = int(np.argmax(np.isinf(arr)))
            raise ValueError(f"{self.where}: the value at {self.row(i)}, column {name!r} is infinite; "
                             "every value must be a finite number")
        return arr


def _is_real(value: object) -> bool:
    return isinstance(value, (numbers.Real, np.number)) and not isinstance(value, (bool, np.bool_))


def _read_table(source: str | os.PathLike[str] | pd.DataFrame) -> _CsvTable | _FrameTable:
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return _FrameTable(source)
    if isinstance(source, (str, os.PathLike)):
        return _CsvTable(os.fspath(source))
    raise TypeError(f"source must be a path to a CSV file or a pandas DataFrame, got {type(source).__name__}")


def table_columns(source: str | os.PathLike[str] | pd.DataFrame) -> list[str]:
    """The column names of a CSV file (its first non-blank line) or a DataFrame, as text.

    Public facts about a file (its schema), read without its values: the budget ledger
    identifies a data set by them (:func:`dpfda.practice.ledger.data_identity`).
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return [str(c).strip() for c in source.columns]
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a path to a CSV file or a pandas DataFrame, got {type(source).__name__}")
    try:
        with open(os.fspath(source), newline="", encoding="utf-8-sig") as fh:
            for row in csv.reader(fh):
                if row:
                    return [name.strip() for name in row]
    except FileNotFoundError:
        raise ValueError(f"source: no such file {os.fspath(source)!r}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"source: {os.fspath(source)!r} is not a readable CSV file ({exc})") from None
    return []


def _header_point(label: str | float, where: str, id_hint: str) -> float:
    text = label.strip() if isinstance(label, str) else label
    if isinstance(text, str) and _NUMBER.fullmatch(text):
        value = float(text)
    elif _is_real(text):
        value = float(text)
    else:
        raise ValueError(f"{where}: column {label!r} is not a grid point (its header is not a number); "
                         f"{id_hint}{_month_hint(label)}")
    if not np.isfinite(value):
        raise ValueError(f"{where}: column {label!r} is not a finite grid point")
    return value


def _check_complete(X: np.ndarray, labels: Sequence[str], points: np.ndarray, where: str, extra: str = "") -> None:
    missing = np.isnan(X)
    if missing.any():
        i, j = np.argwhere(missing)[0]
        raise ValueError(f"{where}: {int(missing.sum())} missing value(s) in {int(missing.any(axis=1).sum())} "
                         f"of {X.shape[0]} curves (first: subject {labels[i]!r} at point {points[j]:g}){extra}. "
                         + _MISSING_HELP)


def _subjects(table: _CsvTable | _FrameTable, id: str, role: str) -> list[str]:
    """The subject ids of the rows, as text: an empty id is refused by name."""
    labels = table.labels(id)
    for i, label in enumerate(labels):
        if not label:
            raise ValueError(f"{table.where}: {table.row(i)} has no subject ({id!r} is empty); every "
                             f"{role} must name the subject it belongs to")
    return labels


def read_curves(source: str | os.PathLike[str] | pd.DataFrame, *,
                domain: Domain | Iterable[float], layout: str = "wide", id: str | None = None,
                point: str = "point", value: str = "value", combine: str | None = None,
                own_points: bool = False, units: str | None = None) -> Curves:
    """The curves of a CSV file or a DataFrame, one per subject, as a :class:`dpfda.Curves`.

    One subject gives one curve: the privacy unit of a release (its neighbouring datasets
    differ in one subject's curve).  A subject id that appears on two rows (wide form) or
    twice at one point (long form), or an empty id, is refused, unless ``combine`` states
    how a subject's rows make one curve.  The Curves carry the public ``domain`` and the
    ``units``; the points (``.points``) and values (``.values``) of a common grid are the
    table's, unchanged.

    Parameters
    ----------
    source : str, os.PathLike or pandas.DataFrame
        A CSV file (comma-separated, UTF-8, one header line) or a DataFrame.
    domain : (float, float) or dpfda.Domain
        The public interval of the points, in their units (never read from the data): a
        point outside it is refused, naming the subject.
    layout : {"wide", "long"}
        ``"wide"``: one row per subject and one column per grid point, whose header is the
        point (e.g. ``1,1.25,1.5,...`` for ages), plus at most the subject column ``id``.
        ``"long"``: one row per measurement, with the columns ``id``, ``point`` and ``value``.
    id : str, optional
        Name of the subject column.  Wide form: optional (without it every column must be
        a grid point and every row is one subject).  Long form: required.  Ids are read
        as text (``007`` and ``7`` are two subjects), without surrounding spaces.
    point, value : str
        Long form: the names of the grid-point and value columns.
    combine : {None, "mean"}
        ``None`` (default): a subject with more than one row (wide) or more than one value
        at a point (long) is an error.  ``"mean"``: a subject's values at each grid point
        are averaged (missing ones left out) into that subject's one curve
        (:data:`COMBINE`); a per-subject map, so the guarantee for one subject is unchanged.
    own_points : bool, default False
        ``False``: every subject must have a value at every point of one common grid (the
        paper's setting); a missing value, or a subject measured at its own points, is
        refused.  ``True``: each subject keeps the points it has (long form: its own points;
        wide form: its non-empty cells), for FTP, which fits each subject on its own points;
        a complete table still gives a common grid.
    units : str, optional
        What the values are and their unit (``"height (cm)"``), carried by the Curves (a
        release through a :class:`dpfda.ReleaseSpec` refuses curves in other units than
        its own).

    Returns
    -------
    Curves
        One curve per subject, in the order of first appearance.  On a common grid:
        ``.points`` (T,) the grid points, increasing, in the data's units, and ``.values``
        (n, T) one row per subject.

    Raises
    ------
    ValueError
        A repeated or empty subject id; a header that is not a number or is repeated; a
        CSV row with more or fewer fields than the header; a value that is not a real,
        finite number (a CSV cell: a decimal number, or empty for a missing value; a
        DataFrame column: int or float dtype, so booleans, dates, time spans, complex
        numbers, categories and objects are refused); the same point twice; a point
        outside the domain; a missing value or (long form) a subject measured at its own
        points, unless ``own_points=True``.  The message says what to do.
    TypeError
        ``source`` is neither a path nor a DataFrame; ``domain`` is not two numbers.

    Examples
    --------
    >>> import pandas as pd
    >>> wide = pd.DataFrame({"child": ["a", "b"], "1": [75.0, 80.0], "2": [85.0, 88.0]})
    >>> heights = read_curves(wide, id="child", domain=(1, 18), units="height (cm)")
    >>> heights
    Curves(n=2, common grid of 2 points, domain=(1.0, 18.0), units='height (cm)')
    >>> heights.points, heights.values.shape
    (array([1., 2.]), (2, 2))
    >>> long = wide.melt(id_vars="child", var_name="age", value_name="height")
    >>> again = read_curves(long, layout="long", id="child", point="age", value="height", domain=(1, 18))
    >>> bool((again.points == heights.points).all() and (again.values == heights.values).all())
    True
    """
    domain = _public_domain(domain)
    if layout not in ("wide", "long"):
        raise ValueError(f"layout must be 'wide' or 'long', got {layout!r}")
    if combine is not None and combine not in COMBINE:
        raise ValueError(f"combine must be None (one row per subject) or one of {sorted(COMBINE)}, "
                         f"got {combine!r}")
    table = _read_table(source)
    if layout == "wide":
        points, X, labels = _read_wide(table, id, combine, missing_ok=own_points)
    else:
        points, X, labels = _read_long(table, id, point, value, combine, missing_ok=own_points)
    _check_domain(points, X, labels, domain)
    _check_subjects(points, X, labels, domain)
    return Curves.from_masked(X, points, domain, units=units)


def _public_domain(domain: object) -> tuple[float, float]:
    """The domain as (start, stop), checked by the rules of :class:`dpfda.Curves` before the data are read."""
    if isinstance(domain, Domain):
        return domain.start, domain.stop
    try:
        start, stop = (float(v) for v in domain)  # type: ignore[attr-defined]  # not iterable: TypeError
    except (TypeError, ValueError):
        raise TypeError(f"domain must be the public interval (start, stop) of the points, or a dpfda.Domain, "
                        f"got {domain!r}") from None
    if not (np.isfinite(start) and np.isfinite(stop) and start < stop):
        raise ValueError(f"domain must be finite with start < stop, got ({start!r}, {stop!r})")
    return start, stop


def _show(x: float) -> str:
    """A number as short as it reads back exactly (``20``, or ``19.999999999999996`` 1 ulp below)."""
    short = f"{float(x):g}"
    return short if float(short) == float(x) else repr(float(x))


def _check_subjects(points: np.ndarray, X: np.ndarray, labels: Sequence[str], domain: tuple[float, float]) -> None:
    """Refuse, naming it by its id, a subject without values or whose points meet on [0, 1].

    The rules are :class:`dpfda.Curves`'s, which names a subject by its row: two distinct
    points of a subject that the map t = (x - start)/(stop - start) rounds together.
    """
    seen = ~np.isnan(X)
    empty = ~seen.any(axis=1)
    if empty.any():
        raise ValueError(f"subject {labels[int(np.argmax(empty))]!r} has no value at any point")
    if seen.all():
        return  # a common grid: its points are checked by Curves, as one grid
    start, stop = domain
    with np.errstate(over="ignore", invalid="ignore"):  # a point no subject has may lie far outside
        t = (points - start) / (stop - start)  # every point a subject has lies in the domain (checked)
    if np.all(np.diff(t) > 0):
        return
    for i in range(X.shape[0]):
        mine, ti = points[seen[i]], t[seen[i]]
        meet = np.flatnonzero(np.diff(ti) <= 0)
        if meet.size:
            j = int(meet[0])
            raise ValueError(f"subject {labels[i]!r}: the points {_show(mine[j])} and {_show(mine[j + 1])} meet "
                             f"on [0, 1] (both map to {_show(ti[j])}): give each point of a subject once, distinct "
                             "after the domain's map t = (x - start)/(stop - start)")


def _check_domain(points: np.ndarray, X: np.ndarray, labels: Sequence[str], domain: tuple[float, float]) -> None:
    """Refuse a subject with a value at a point outside the public domain, naming it by its id.

    The rule is :class:`dpfda.Curves`'s (a point 1 ulp outside is refused, a point on an end is
    kept); a point every subject has is named as the grid's.
    """
    start, stop = domain
    seen = ~np.isnan(X)
    outside = (points < start) | (points > stop)
    for j in np.flatnonzero(outside):
        if seen[:, j].any():
            i = int(np.argmax(seen[:, j]))
            who = ("every subject has a value at the grid point" if seen[:, j].all()
                   else f"subject {labels[i]!r} has a value at the point")
            raise ValueError(f"{who} {_show(points[j])}, outside the public domain [{start:g}, {stop:g}]; every "
                             "point must lie in the domain (fixed before the data are read): correct the point, "
                             "or leave it out by a public rule")


def _read_wide(table: _CsvTable | _FrameTable, id: str | None, combine: str | None,
               missing_ok: bool = False) -> tuple[np.ndarray, np.ndarray, list[str]]:
    where, columns = table.where, list(table.names)
    if id is not None:
        if id not in columns:
            raise ValueError(f"{where}: no subject column {id!r} (columns: {columns[:8]})")
        columns.remove(id)
    hint = ("name the subject column with id=... (--id on the command line)" if id is None
            else "wide form holds the subject column and one column per grid point, nothing else")
    points = np.array([_header_point(c, where, hint) for c in columns], dtype=float)
    if points.size == 0:
        raise ValueError(f"{where}: no grid-point columns")
    if table.n_rows == 0:
        raise ValueError(f"{where}: no curves (the table has no rows)")
    if np.unique(points).size != points.size:
        dup = points[np.argmax([np.sum(points == p) > 1 for p in points])]
        raise ValueError(f"{where}: the grid point {dup:g} appears in two columns")
    labels = (_subjects(table, id, "row") if id is not None
              else [str(i) for i in range(1, table.n_rows + 1)])
    X = np.column_stack([table.numbers(c) for c in columns])
    if combine is None:
        first: dict[str, int] = {}
        for i, label in enumerate(labels):
            if label in first:
                raise ValueError(
                    f"{where}: subject {label!r} appears on two rows ({table.row(first[label])} and "
                    f"{table.row(i)}); one subject must give one curve (a release protects one "
                    "curve: a subject with k curves would have only the group guarantee of k). Fix "
                    "the ids, or combine each subject's rows by a stated rule: combine='mean' "
                    "(--combine mean on the command line)")
            first[label] = i
    order = np.argsort(points, kind="stable")
    rows = np.repeat(np.arange(len(labels)), points.size)  # X.ravel(): row by row
    return _assemble([labels[r] for r in rows], np.tile(np.arange(points.size), len(labels)), X.ravel(),
                     points, where, order, missing_ok)


def _read_long(table: _CsvTable | _FrameTable, id: str | None, point: str, value: str,
               combine: str | None, missing_ok: bool = False) -> tuple[np.ndarray, np.ndarray, list[str]]:
    where = table.where
    if id is None:
        raise ValueError("long form needs the subject column: id=... (--id on the command line)")
    for name, role in ((id, "subject"), (point, "point"), (value, "value")):
        if name not in table.names:
            raise ValueError(f"{where}: no {role} column {name!r} (columns: {list(table.names)[:8]})")
    if len({id, point, value}) < 3:
        raise ValueError(f"{where}: the subject, point and value columns must be three different columns")
    if table.n_rows == 0:
        raise ValueError(f"{where}: no curves (the table has no rows)")
    pts = table.numbers(point, text=True)  # grid points may be text, like a wide table's headers
    vals = table.numbers(value)
    if np.isnan(pts).any():
        row = int(np.argmax(np.isnan(pts)))
        raise ValueError(f"{where}: {table.row(row)} has no grid point ({point!r} is empty)")
    subjects = _subjects(table, id, "measurement")
    points = np.unique(pts)
    if combine is None:
        seen: set = set()
        for s, p in zip(subjects, pts.tolist()):
            if (s, p) in seen:
                raise ValueError(f"{where}: subject {s!r} has two values at point {p:g}; a curve has one "
                                 "value per grid point (one subject, one curve). Fix the ids, or combine "
                                 "each subject's values by a stated rule: combine='mean' (--combine mean "
                                 "on the command line)")
            seen.add((s, p))
    return _assemble(subjects, np.searchsorted(points, pts), vals, points, where, np.arange(points.size),
                     missing_ok)


def _without_overflow(X: np.ndarray, total: np.ndarray, count: np.ndarray, r: np.ndarray, c: np.ndarray,
                      v: np.ndarray, labels: Sequence[str], points: np.ndarray, where: str) -> np.ndarray:
    """The means whose sums overflowed (finite values near the float64 limit), recomputed.

    Such a cell's k values are scaled by 2^-ceil(log2 k) (exact for values this large), added in
    the same increasing order, divided by k and scaled back: a function of the cell's values
    alone.  A mean still beyond the float64 range is refused with that reason.
    """
    over = (count > 0) & ~np.isfinite(total)
    if not over.any():
        return X
    scale = np.where(over, 2.0 ** -np.ceil(np.log2(np.maximum(count, 1.0))), 1.0)
    mine = over[r, c]
    scaled = np.zeros_like(total)
    with np.errstate(over="ignore", invalid="ignore"):
        np.add.at(scaled, (r[mine], c[mine]), v[mine] * scale[r[mine], c[mine]])
        X = np.where(over, scaled / np.maximum(count, 1.0) / scale, X)
    if not np.isfinite(X[over]).all():
        i, j = (int(k) for k in np.argwhere(over & ~np.isfinite(X))[0])
        raise ValueError(f"{where}: the mean of subject {labels[i]!r}'s {int(count[i, j])} values at point "
                         f"{points[j]:g} lies beyond the float64 range (about 1.8e308); rescale the values by a "
                         "public factor (change their units) before reading them")
    return X


def _assemble(subjects: Sequence[str], cols: np.ndarray, vals: np.ndarray, points: np.ndarray,
              where: str, order: np.ndarray,
              missing_ok: bool = False) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Cells (subject, point column, value) as one curve per subject, in order of first appearance.

    A subject's values at one point are averaged, missing ones left out (one value: itself,
    exactly), summed in increasing order whatever the order of the rows; the callers have
    refused repeats unless ``combine="mean"`` asked for this.  The columns come out in ``order``.
    """
    labels = list(dict.fromkeys(subjects))
    row_of = {s: i for i, s in enumerate(labels)}
    rows = np.array([row_of[s] for s in subjects], dtype=int)
    shape = (len(labels), points.size)
    present = np.zeros(shape, dtype=bool)
    present[rows, cols] = True
    finite = ~np.isnan(vals)
    # Each cell's values are added in increasing order, so that a subject's curve is a function of
    # its own values alone, not of the order of the table's rows (np.add.at adds in the order given).
    r, c, v = rows[finite], cols[finite], vals[finite]
    order_in_cell = np.lexsort((v, c, r))
    r, c, v = r[order_in_cell], c[order_in_cell], v[order_in_cell]
    total, count = np.zeros(shape), np.zeros(shape)
    with np.errstate(over="ignore", invalid="ignore"):
        np.add.at(total, (r, c), v)
    np.add.at(count, (r, c), 1.0)
    with np.errstate(invalid="ignore"):
        X = np.where(count > 0, total / np.maximum(count, 1.0), np.nan)
    X = _without_overflow(X, total, count, r, c, v, labels, points, where)
    if not present.all() and not missing_ok:
        raise ValueError(f"{where}: the subjects are not measured at the same points (together they use "
                         f"{points.size} distinct points; {_odd_one(present, labels, points, order)}). "
                         + _OWN_POINTS_HELP)
    points, X = points[order], X[:, order]
    if not missing_ok:
        _check_complete(X, labels, points, where)
    return points, X, labels
