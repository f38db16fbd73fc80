"""Curves as data: values with the points they were measured at and the public domain.

The input twin of :class:`dpfda.Release`.  A :class:`Curves` holds either

* curves on **one common grid** (the paper's setting, §3): ``values`` (n, T), or
  (reps, n, T) with a batch axis for simulations, and the grid's ``points`` (T,); or
* curves measured **each at its own points** (irregular sampling, or a common grid with
  missing values): for each subject, its points and its values.

The points are in the data's units; the public ``domain`` (start, stop) maps them onto
[0, 1], where the function spaces live (t = (x - start)/(stop - start)).  The domain is a
public choice, fixed before the data are seen (never the range of the observed points).

:func:`as_curves` is the one way in for data: every function of dpfda that takes curves
passes what it is given through it (an array on a public grid is turned into a Curves
there), so the checks and their messages are this class's.  :func:`dpfda.ftp`,
:func:`dpfda.ptf` and :meth:`dpfda.Mechanism.release` accept a Curves;
FTP fits each subject on the points it has (:mod:`dpfda.mechanisms.irregular`), PTF needs
a common grid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..validation import as_float_array, check_data, check_grid

__all__ = ["Curves", "as_curves"]


def _domain(domain: Any) -> tuple[float, float]:
    try:
        start, stop = (float(v) for v in domain)
    except (TypeError, ValueError):
        raise TypeError(f"domain must be two numbers (start, stop), got {domain!r}") from None
    if not (np.isfinite(start) and np.isfinite(stop) and start < stop):
        raise ValueError(f"domain must be finite with start < stop, got ({start!r}, {stop!r})")
    return start, stop


def _units(units: object) -> str | None:
    if units is not None and not isinstance(units, str):
        raise TypeError(f"units must be a string such as 'height (cm)', or None, got {type(units).__name__}")
    return units


def _show(x: float) -> str:
    """A number as short as it reads back exactly (``20``, or ``19.999999999999996`` 1 ulp below)."""
    short = f"{float(x):g}"
    return short if float(short) == float(x) else repr(float(x))


def _per_subject(points: Any) -> bool:
    """Whether ``points`` lists each subject's own points (a sequence of vectors, or an (n, k) array)."""
    if isinstance(points, np.ndarray):
        return points.ndim == 2
    if isinstance(points, (list, tuple)) and len(points) > 0:
        return all(np.ndim(p) == 1 for p in points)
    return False


class Curves:
    """Curves with their points and public domain (common grid or each subject on its own points).

    Parameters
    ----------
    values : array (n, T) or (reps, n, T), or a sequence of n vectors
        Common grid: one row per subject, one column per point.  Each subject on its own
        points: subject i's values.
    points : array (T,), or a sequence of n vectors
        The common grid, strictly increasing, in the data's units; or subject i's points,
        as many as its values.
    domain : (float, float), default (0, 1)
        The public interval of the curves' argument, mapped onto [0, 1].
    units : str, optional (keyword)
        What the values are and their unit (``"height (cm)"``); a release through a
        :class:`dpfda.ReleaseSpec` refuses curves whose units are not its own.

    Every subject is checked here: finite values, points inside the domain.  One argument
    order, values then points, for both kinds and for :meth:`Curves.from_masked`, which
    reads a table with NaN for what was not measured; points given first are refused
    with the order in the message where the shapes or the domain show it (per-subject
    values that happen to lie in the domain, with no point repeated, cannot show it).

    Examples
    --------
    >>> import numpy as np
    >>> c = Curves(np.zeros((3, 4)), [0, 6, 12, 18], domain=(0, 24))
    >>> c.n, c.common, c.grid.tolist()
    (3, True, [0.0, 0.25, 0.5, 0.75])
    >>> d = Curves([[1.0, 2.0], [3.0, 4.0, 5.0]], [[0, 12], [6, 12, 18]], domain=(0, 24))
    >>> d.n, d.common, [t.tolist() for t, _ in d.subjects()]
    (2, False, [[0.0, 0.5], [0.25, 0.5, 0.75]])
    """

    units: str | None = None
    """What the values are and their unit, or None (not said)."""

    def __init__(self, values: ArrayLike | Sequence[ArrayLike], points: ArrayLike | Sequence[ArrayLike],
                 domain: Iterable[float] = (0.0, 1.0), *, units: str | None = None) -> None:
        units = _units(units)
        if _per_subject(points):  # each subject on its own points
            if not isinstance(values, (list, tuple, np.ndarray)):
                raise TypeError("values: with each subject's own points, give each subject's values too "
                                f"(a sequence of n vectors), got {type(values).__name__}")
            if len(values) > 0 and all(np.ndim(v) == 0 for v in values):  # one vector of numbers
                raise ValueError(
                    f"values is one vector of {len(values)} numbers but points lists each subject's own "
                    "points: the order is values first, then points, Curves(values, points, domain) "
                    "(for a common grid, values (n, T) and points (T,))")
            self._own(values, points, domain, units)  # type: ignore[arg-type]  # sequences: checked above
            return
        self._common(values, points, domain, units, "values", "points")

    def _common(self, values: object, points: object, domain: Iterable[float], units: str | None,
                values_name: str, points_name: str, grid: np.ndarray | None = None) -> None:
        """Curves on one common grid; ``grid`` (optional): the points on [0, 1] exactly (domain (0, 1))."""
        self.units = _units(units)
        self.domain = _domain(domain)
        pts = as_float_array(points, points_name)
        if pts.ndim != 1:
            raise ValueError(f"{points_name} must be one-dimensional, got shape {pts.shape}")
        vals = check_data(values, pts.size, values_name)
        self._grid: np.ndarray | None = grid if grid is not None else check_grid(
            self._unit(pts, points_name), f"{points_name} mapped onto [0, 1] by the domain")
        self.points: np.ndarray | None = pts
        self.values: np.ndarray | None = vals
        self._subjects: list[tuple[np.ndarray, np.ndarray]] | None = None

    def _own(self, values: Sequence[ArrayLike], points: Sequence[ArrayLike], domain: Iterable[float],
             units: str | None) -> None:
        """Each subject on its own points: ``values[i]`` at ``points[i]``, same length, >= 1 point."""
        if len(points) != len(values):
            raise ValueError(f"values and points must list the same subjects: {len(values)} against "
                             f"{len(points)} (the order is values first, then points)")
        if len(points) == 0:
            raise ValueError("there must be at least one curve")
        self.domain = _domain(domain)
        subjects = []
        for i, (p, v) in enumerate(zip(points, values)):
            p = as_float_array(p, f"points[{i}]").ravel()
            v = as_float_array(v, f"values[{i}]").ravel()
            if p.size != v.size or p.size == 0:
                raise ValueError(f"subject {i}: {p.size} points but {v.size} values (need the same "
                                 "number, at least one)")
            if not (np.all(np.isfinite(p)) and np.all(np.isfinite(v))):
                raise ValueError(f"subject {i}: points and values must be finite numbers")
            order = np.argsort(p, kind="stable")
            p, v = p[order], v[order]
            if np.any(np.diff(p) <= 0):
                raise ValueError(f"subject {i}: the point {p[np.argmax(np.diff(p) <= 0)]:g} appears twice")
            t = self._unit(p, f"subject {i}'s points (values first, then points)")
            if np.any(np.diff(t) <= 0):  # distinct points that the map onto [0, 1] rounds together
                j = int(np.argmax(np.diff(t) <= 0))
                raise ValueError(f"subject {i}: the points {_show(p[j])} and {_show(p[j + 1])} meet on [0, 1] "
                                 f"(both map to {_show(t[j])}): give each point of a subject once, distinct "
                                 "after the domain's map t = (x - start)/(stop - start)")
            subjects.append((t, v))
        self._subjects = subjects
        self.units = _units(units)
        self.points = None
        self.values = None
        self._grid = None

    @classmethod
    def from_masked(cls, values: ArrayLike, points: ArrayLike,
                    domain: Iterable[float] | None, *, units: str | None = None) -> Curves:
        """A table ``values`` (n, T) on ``points`` (T,) where NaN marks a point a subject was not measured at.

        Values first, then points, as for the constructor.  Without NaN: the common grid.
        With NaN: each subject on the points it has (a subject with no value at all is
        refused).
        """
        vals = as_float_array(values, "values")
        pts = as_float_array(points, "points")
        if vals.ndim != 2 or pts.ndim != 1 or vals.shape[1] != pts.size:
            raise ValueError(f"values must have shape (n, T) and points (T,), got {vals.shape} and {pts.shape} "
                             "(the order is values first, then points: Curves.from_masked(values, points, "
                             "domain))")
        seen = ~np.isnan(vals)
        if seen.all():
            return cls(vals, pts, _domain(domain), units=units)
        empty = ~seen.any(axis=1)
        if empty.any():
            raise ValueError(f"subject {int(np.argmax(empty)) + 1} has no value at any point")
        return cls([v[s] for v, s in zip(vals, seen)], [pts[s] for s in seen], _domain(domain), units=units)

    def _unit(self, x: np.ndarray, what: str = "points") -> np.ndarray:
        """t = (x - start)/(stop - start) for points x of [start, stop]; a point outside is refused.

        One rule with :meth:`dpfda.Domain.to_unit`: a point 1 ulp outside the domain is
        refused, a point on an end is kept.  No snapping is needed: rounding is monotone,
        so start <= x <= stop gives 0 <= fl(x - start) <= fl(stop - start), and dividing by
        the positive d = fl(stop - start) gives 0 <= fl(fl(x - start)/d) <= fl(d/d) = 1; at
        x = stop the numerator is d itself, so t is 1.0 exactly, and at x = start it is 0.0.
        Monotone but not strictly: distinct points can meet on [0, 1], which the callers
        refuse (a grid by ``check_grid``, a subject by name).
        """
        start, stop = self.domain
        if np.any(x < start) or np.any(x > stop):
            bad = x[(x < start) | (x > stop)][0]
            raise ValueError(f"{what}: the point {_show(bad)} lies outside the public domain "
                             f"[{start:g}, {stop:g}]")
        return (x - start) / (stop - start)

    @property
    def common(self) -> bool:
        """Whether every curve is on one common grid."""
        return self._subjects is None

    @property
    def n(self) -> int:
        """The number of curves (subjects)."""
        if self._subjects is not None:
            return len(self._subjects)
        assert self.values is not None
        return self.values.shape[-2]

    @property
    def grid(self) -> np.ndarray:
        """The common grid on [0, 1]; ``ValueError`` for curves on their own points."""
        if not self.common:
            raise ValueError("these curves are measured at their own points: they have no common grid")
        assert self._grid is not None
        return self._grid

    def subjects(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each subject's (points on [0, 1], values), in order (one dataset; no batch axes)."""
        if self._subjects is not None:
            return list(self._subjects)
        assert self.values is not None and self._grid is not None
        if self.values.ndim != 2:
            raise ValueError(f"subjects() lists one dataset; these curves have batch axes {self.values.shape[:-2]}")
        return [(self._grid, row) for row in self.values]

    def on_grid(self, grid: ArrayLike, *, periodic: bool = False) -> Curves:
        """Each subject linearly interpolated onto the public ``grid`` (points on [0, 1]): a common grid.

        A map of each record alone (its own points and values, and the public grid), so a
        mechanism applied afterwards keeps its guarantee.  Beyond a subject's first and
        last points the value is held constant, or, with ``periodic=True`` (a Fourier
        space's domain is one period), interpolated across the end of the period.  A
        subject with one point becomes a constant.
        """
        grid = check_grid(grid)
        start, stop = self.domain
        rows = [np.interp(grid, t, v, period=1.0 if periodic else None) for t, v in self.subjects()]
        points = np.clip(start + grid * (stop - start), start, stop)  # rounding can pass an end
        out = Curves.__new__(Curves)  # exactly the public grid, not its round trip through the data's units
        out._common(np.array(rows), points, self.domain, self.units, "values", "points", grid=grid)
        return out

    def __repr__(self) -> str:
        kind = f"common grid of {self.grid.size} points" if self.common else "each on its own points"
        units = "" if self.units is None else f", units={self.units!r}"
        return f"Curves(n={self.n}, {kind}, domain={self.domain}{units})"


def as_curves(X: ArrayLike | Curves, grid: ArrayLike | None, domain: Iterable[float] = (0.0, 1.0), *,
              name: str = "X", grid_name: str = "grid") -> Curves:
    """``X`` as a :class:`Curves`: the one entry of data into dpfda.

    A Curves is returned as it is (it was checked when it was made).  An array (n, T) or
    (reps, n, T) is the convenience form of curves on one common grid: ``grid`` (T,) holds
    their points in the units of ``domain`` (the default (0, 1): points of [0, 1], kept
    bit for bit), and the array is checked by the rules of :class:`Curves`, its errors
    naming ``name`` and ``grid_name``.  Nothing is copied or rounded: each record's values
    are the ones given, whatever the batch.

    Examples
    --------
    >>> import numpy as np
    >>> c = as_curves(np.zeros((3, 4)), [0.0, 0.25, 0.5, 1.0])
    >>> c.n, c.common, as_curves(c, None) is c
    (3, True, True)
    >>> as_curves(np.zeros((3, 5)), [0.0, 0.25, 0.5, 1.0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X's last axis has length 5 but the grid has 4 points; ...
    """
    if isinstance(X, Curves):
        return X
    if grid is None:
        raise TypeError(f"{grid_name} is needed for curves given as an array ({name}): give the public grid "
                        "of their points, or pass a dpfda.Curves, which carries its points")
    dom = _domain(domain)
    exact = None
    if dom == (0.0, 1.0):
        exact = check_grid(grid, grid_name)
    out = Curves.__new__(Curves)
    out._common(X, grid if exact is None else exact, dom, None, name, grid_name, grid=exact)
    return out
