"""Curves as data: values with the points they were measured at and the public domain.

The input twin of :class:`dpfda.Release`.  A :class:`Curves` holds either

* curves on **one common grid** (the paper's setting, §3): ``values`` (…, n, T) with batch
  axes for simulations, and the grid's ``points`` (T,); or
* curves measured **each at its own points** (irregular sampling, or a common grid with
  missing values): for each subject, its points and its values.

The points are in the data's units; the public ``domain`` (start, stop) maps them onto
[0, 1], where the function spaces live (t = (x - start)/(stop - start)).  The domain is a
public choice, fixed before the data are seen (never the range of the observed points).

:func:`dpfda.ftp`, :func:`dpfda.ptf` and :meth:`dpfda.Mechanism.release` accept a Curves;
FTP fits each subject on the points it has (:mod:`dpfda.mechanisms.irregular`), PTF needs
a common grid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..validation import as_float_array, check_grid

__all__ = ["Curves"]


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
    values : array (…, n, T), or a sequence of n vectors
        Common grid: one row per subject, one column per point.  Each subject on its own
        points: subject i's values.
    points : array (T,), or a sequence of n vectors
        The common grid, strictly increasing, in the data's units; or subject i's points,
        as many as its values (the same as :meth:`Curves.irregular`, in this order).
    domain : (float, float), default (0, 1)
        The public interval of the curves' argument, mapped onto [0, 1].
    units : str, optional (keyword)
        What the values are and their unit (``"height (cm)"``); a release through a
        :class:`dpfda.ReleaseSpec` refuses curves whose units are not its own.

    Every subject is checked here: finite values, points inside the domain.  One argument
    order, values then points, for both kinds; :meth:`Curves.from_masked` reads a table
    with NaN for what was not measured.

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

    def __init__(self, values: ArrayLike, points: ArrayLike,
                 domain: Iterable[float] = (0.0, 1.0), *, units: str | None = None) -> None:
        units = _units(units)
        if _per_subject(points):  # each subject on its own points
            if not isinstance(values, (list, tuple, np.ndarray)):
                raise TypeError("values: with each subject's own points, give each subject's values too "
                                f"(a sequence of n vectors), got {type(values).__name__}")
            self.__dict__.update(Curves.irregular(points, values, domain,  # type: ignore[arg-type]
                                                  units=units).__dict__)
            return
        self.units = units
        self.domain = _domain(domain)
        pts = as_float_array(points, "points")
        if pts.ndim != 1:
            raise ValueError(f"points must be one-dimensional, got shape {pts.shape}")
        vals = as_float_array(values, "values")
        if vals.ndim < 2 or vals.shape[-1] != pts.size:
            raise ValueError(f"values must have shape (…, n, T) with T = {pts.size} points, got {vals.shape}")
        if vals.shape[-2] < 1:
            raise ValueError("values must hold at least one curve")
        if not np.all(np.isfinite(vals)):
            raise ValueError("values contain NaN or inf: for curves with missing points use "
                             "Curves.from_masked or Curves.irregular")
        self._grid: np.ndarray | None = check_grid(self._unit(pts), "points mapped onto [0, 1] by the domain")
        self.points: np.ndarray | None = pts
        self.values: np.ndarray | None = vals
        self._subjects: list[tuple[np.ndarray, np.ndarray]] | None = None

    @classmethod
    def irregular(cls, points: Sequence[ArrayLike], values: Sequence[ArrayLike],
                  domain: Iterable[float], *, units: str | None = None) -> Curves:
        """Each subject on its own points: ``points[i]`` and ``values[i]``, same length, >= 1 point.

        The same as ``Curves(values, points, domain)`` with a sequence of points per subject,
        whose argument order (values first) is that of the common grid.
        """
        if len(points) != len(values):
            raise ValueError(f"points and values must list the same subjects: {len(points)} against "
                             f"{len(values)}")
        if len(points) == 0:
            raise ValueError("there must be at least one curve")
        self = cls.__new__(cls)
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
            subjects.append((self._unit(p, f"subject {i}'s points"), v))
        self._subjects = subjects
        self.units = _units(units)
        self.points = None
        self.values = None
        self._grid = None
        return self

    @classmethod
    def from_masked(cls, points: ArrayLike, values: ArrayLike,
                    domain: Iterable[float] | None, *, units: str | None = None) -> Curves:
        """A table (n, T) on ``points`` where NaN marks a point a subject was not measured at.

        Without NaN: the common grid.  With NaN: each subject on the points it has (a subject
        with no value at all is refused).
        """
        vals = as_float_array(values, "values")
        pts = as_float_array(points, "points")
        if vals.ndim != 2 or vals.shape[1] != pts.size:
            raise ValueError(f"values must have shape (n, {pts.size}), got {vals.shape}")
        seen = ~np.isnan(vals)
        if seen.all():
            return cls(vals, pts, _domain(domain), units=units)
        empty = ~seen.any(axis=1)
        if empty.any():
            raise ValueError(f"subject {int(np.argmax(empty)) + 1} has no value at any point")
        return cls.irregular([pts[s] for s in seen], [v[s] for v, s in zip(vals, seen)], _domain(domain),
                             units=units)

    def _unit(self, x: np.ndarray, what: str = "points") -> np.ndarray:
        start, stop = self.domain
        t = (x - start) / (stop - start)
        t = np.where(np.isclose(x, stop, rtol=1e-12, atol=0.0), 1.0, t)
        if np.any(t < 0.0) or np.any(t > 1.0):
            bad = x[(t < 0.0) | (t > 1.0)][0]
            raise ValueError(f"{what}: the point {bad:g} lies outside the public domain "
                             f"[{start:g}, {stop:g}]")
        return t

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
        out = Curves(np.array(rows), start + grid * (stop - start), self.domain, units=self.units)
        out._grid = grid  # exactly the public grid, not its round trip through the data's units
        return out

    def __repr__(self) -> str:
        kind = f"common grid of {self.grid.size} points" if self.common else "each on its own points"
        units = "" if self.units is None else f", units={self.units!r}"
        return f"Curves(n={self.n}, {kind}, domain={self.domain}{units})"
