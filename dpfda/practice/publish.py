"""From a table of curves to one published mean curve and what to publish beside it.

Two steps a practitioner needs around :func:`dpfda.ftp` and :func:`dpfda.ptf`:

* :func:`read_curves` reads curves from a CSV file or a pandas DataFrame, in wide form
  (one row per subject, one column per grid point, the header holding the points) or in
  long form (one row per measurement: subject, point, value), and returns them on one
  common grid, or stops with a ``ValueError`` that says what is wrong and what to do;
* :func:`release_record` turns a release into a plain dictionary (ready for JSON): the
  released curve on a public evaluation grid, in the data's units, and every public
  parameter a reader needs — μ with the (ε, δ) pairs it implies, B', the grid, the clipping
  bounds, the space and its dimension, the mechanism, the noise source, the library version.

The paper's curves are observed at *common* points t_1 < … < t_T (§3); the estimators need
it (PTF averages each grid point over subjects, FTP fits everyone with one design matrix).
So every subject must have a finite value at every grid point: a missing value is an error,
and so are curves measured at their own points.  See the book's chapter "Releasing your own
data" for what to do then.

``python -m dpfda release`` (:mod:`dpfda.cli`) is these two functions around one call of
:func:`dpfda.ftp` or :func:`dpfda.ptf` with ``secure=True``.
"""

from __future__ import annotations

import os

import numpy as np

from .._validation import as_float_array, check_positive
from .._version import __version__
from ..maths.curves import Curves
from ..maths.spaces import BrownianKernel, GaussianKernel, KernelSpace, OrthonormalSpace
from ..mechanisms.bands import BAND_COVERS, band_is_exact
from ..mechanisms.pipelines import Release
from ..mechanisms.privacy import epsilon_from_mu
from .realdata import Domain, PublicFrame

__all__ = ["DELTAS", "noise_record", "read_curves", "release_record", "space_description"]

DELTAS = (1e-5, 1e-6, 1e-7)
"""The δ values at which :func:`release_record` states the ε a μ-GDP release implies."""

_MISSING_HELP = (
    "dpfda needs every curve observed at every point of one common grid (the paper's "
    "setting). Either fill each gap by a public rule fixed before looking at the data and "
    "applied to each subject's own curve (e.g. linear interpolation between that subject's "
    "neighbouring values): a per-record map, so the guarantee is unchanged; or drop the "
    "incomplete subjects, which makes n depend on the data, so the number of complete curves "
    "must itself be public or released privately. FTP can also fit each subject on the points it "
    "has: read_curves(..., curves=True, domain=...), or leave out --grid on the command line"
)


def _read_table(source, what: str):
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return source, "the DataFrame"
    if isinstance(source, (str, os.PathLike)):
        try:
            return pd.read_csv(source), f"{os.fspath(source)!r}"
        except FileNotFoundError:
            raise ValueError(f"{what}: no such file {os.fspath(source)!r}") from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise ValueError(f"{what}: {os.fspath(source)!r} is not a readable CSV file ({reason})") from None
    raise TypeError(f"{what} must be a path to a CSV file or a pandas DataFrame, got {type(source).__name__}")


def _header_point(label, where: str, id_hint: str) -> float:
    try:
        value = float(label)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: column {label!r} is not a grid point (its header is not a number); "
                         f"{id_hint}") from None
    if not np.isfinite(value):
        raise ValueError(f"{where}: column {label!r} is not a finite grid point")
    return value


def _numeric_values(frame, where: str):
    import pandas as pd

    values = frame.apply(pd.to_numeric, errors="coerce")
    bad = values.isna() & frame.notna()
    if bad.to_numpy().any():
        row, col = np.argwhere(bad.to_numpy())[0]
        raise ValueError(f"{where}: the value {frame.iat[row, col]!r} (row {row + 1}, column "
                         f"{frame.columns[col]!r}) is not a number")
    arr = values.to_numpy(dtype=float)
    if np.isinf(arr).any():
        row, col = np.argwhere(np.isinf(arr))[0]
        raise ValueError(f"{where}: the value at row {row + 1}, column {frame.columns[col]!r} is "
                         "infinite; every value must be a finite number")
    return arr


def _check_complete(X: np.ndarray, labels, points: np.ndarray, where: str, extra: str = "") -> None:
    missing = np.isnan(X)
    if missing.any():
        i, j = np.argwhere(missing)[0]
        raise ValueError(f"{where}: {int(missing.sum())} missing value(s) in {int(missing.any(axis=1).sum())} "
                         f"of {X.shape[0]} curves (first: subject {labels[i]!r} at point {points[j]:g}){extra}. "
                         + _MISSING_HELP)


def read_curves(source, *, layout: str = "wide", id=None, point: str = "point", value: str = "value",
                curves: bool = False, domain=None):
    """Curves on one common grid from a CSV file or a DataFrame: ``(points, X)``.

    Parameters
    ----------
    source : str, os.PathLike or pandas.DataFrame
        A CSV file (read with ``pandas.read_csv``) or a DataFrame.
    layout : {"wide", "long"}
        ``"wide"``: one row per subject and one column per grid point, whose header is the
        point (e.g. ``1,1.25,1.5,...`` for ages), plus at most the subject column ``id``.
        ``"long"``: one row per measurement, with the columns ``id``, ``point`` and ``value``.
    id : str, optional
        Name of the subject column.  Wide form: optional (without it every column must be
        a grid point).  Long form: required.
    point, value : str
        Long form: the names of the grid-point and value columns.
    curves : bool, default False
        Return a :class:`dpfda.Curves` instead: subjects measured at their own points (long
        form) and empty cells (wide form) are then kept, each subject with the points it has.
    domain : (float, float)
        With ``curves=True``: the public interval of the points (never read from the data).

    Returns
    -------
    points : ndarray (T,)
        The grid points, increasing, in the data's units.
    X : ndarray (n, T)
        One row per subject, in the order of first appearance.

    Raises
    ------
    ValueError
        A header that is not a number, a value that is not a finite number, the same point
        twice, a missing value, or (long form) a subject measured at its own points: the
        message says what to do.
    TypeError
        ``source`` is neither a path nor a DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> wide = pd.DataFrame({"child": ["a", "b"], "1": [75.0, 80.0], "2": [85.0, 88.0]})
    >>> points, X = read_curves(wide, id="child")
    >>> points, X.shape
    (array([1., 2.]), (2, 2))
    >>> long = wide.melt(id_vars="child", var_name="age", value_name="height")
    >>> points2, X2 = read_curves(long, layout="long", id="child", point="age", value="height")
    >>> bool((points2 == points).all() and (X2 == X).all())
    True
    """
    if layout not in ("wide", "long"):
        raise ValueError(f"layout must be 'wide' or 'long', got {layout!r}")
    if curves and domain is None:
        raise ValueError("curves=True needs the public domain=(start, stop) of the points")
    table, where = _read_table(source, "source")
    if layout == "wide":
        points, X = _read_wide(table, where, id, missing_ok=curves)
    else:
        points, X = _read_long(table, where, id, point, value, missing_ok=curves)
    return Curves.from_masked(points, X, domain) if curves else (points, X)


def _read_wide(table, where: str, id, missing_ok: bool = False):
    columns = list(table.columns)
    if id is not None:
        if id not in columns:
            raise ValueError(f"{where}: no subject column {id!r} (columns: {columns[:8]})")
        labels = table[id].tolist()
        columns.remove(id)
    else:
        labels = list(range(1, len(table) + 1))
    hint = ("name the subject column with id=... (--id on the command line)" if id is None
            else "wide form holds the subject column and one column per grid point, nothing else")
    points = np.array([_header_point(c, where, hint) for c in columns], dtype=float)
    if points.size == 0:
        raise ValueError(f"{where}: no grid-point columns")
    if len(table) == 0:
        raise ValueError(f"{where}: no curves (the table has no rows)")
    if np.unique(points).size != points.size:
        dup = points[np.argmax([np.sum(points == p) > 1 for p in points])]
        raise ValueError(f"{where}: the grid point {dup:g} appears in two columns")
    X = _numeric_values(table[columns], where)
    order = np.argsort(points, kind="stable")
    points, X = points[order], X[:, order]
    if not missing_ok:
        _check_complete(X, labels, points, where)
    return points, X


def _read_long(table, where: str, id, point: str, value: str, missing_ok: bool = False):
    if id is None:
        raise ValueError("long form needs the subject column: id=... (--id on the command line)")
    for name, role in ((id, "subject"), (point, "point"), (value, "value")):
        if name not in table.columns:
            raise ValueError(f"{where}: no {role} column {name!r} (columns: {list(table.columns)[:8]})")
    if len(table) == 0:
        raise ValueError(f"{where}: no curves (the table has no rows)")
    pts = _numeric_values(table[[point]], where)[:, 0]
    vals = _numeric_values(table[[value]], where)[:, 0]
    if np.isnan(pts).any():
        row = int(np.argmax(np.isnan(pts)))
        raise ValueError(f"{where}: row {row + 1} has no grid point ({point!r} is empty)")
    subjects = table[id]
    if subjects.isna().any():
        raise ValueError(f"{where}: row {int(np.argmax(subjects.isna().to_numpy())) + 1} has no subject "
                         f"({id!r} is empty)")
    keys = list(zip(subjects.tolist(), pts.tolist()))
    seen: set = set()
    for k in keys:
        if k in seen:
            raise ValueError(f"{where}: subject {k[0]!r} has two values at point {k[1]:g}; "
                             "a curve has one value per grid point")
        seen.add(k)
    labels = list(dict.fromkeys(subjects.tolist()))
    points = np.unique(pts)
    row_of = {s: i for i, s in enumerate(labels)}
    rows = np.array([row_of[s] for s in subjects.tolist()], dtype=int)
    cols = np.searchsorted(points, pts)
    present = np.zeros((len(labels), points.size), dtype=bool)
    present[rows, cols] = True
    if not present.all() and not missing_ok:
        i, j = np.argwhere(~present)[0]
        raise ValueError(
            f"{where}: the subjects are not measured at the same points (together they use "
            f"{points.size} distinct points; subject {labels[i]!r} has {int(present[i].sum())} of them and "
            f"none at {points[j]:g}). dpfda needs one common grid: curves measured at their own "
            "points are not supported (the "
            "paper assumes common points; PTF averages each point over subjects) except by FTP, "
            "which fits each subject on its own points: read_curves(..., curves=True, domain=...), "
            "or leave out --grid on the command line. For PTF, put every curve "
            "on one public grid first, by a public rule applied to each subject's own curve (e.g. "
            "linear interpolation); if only a few values are absent: " + _MISSING_HELP)
    X = np.full(present.shape, np.nan)
    X[rows, cols] = vals
    if not missing_ok:
        _check_complete(X, labels, points, where)
    return points, X


def _number(x) -> float | list:
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def space_description(space) -> dict:
    """The public description of a function space: its kind and parameters (for JSON).

    Examples
    --------
    >>> from dpfda import LegendreSpace
    >>> space_description(LegendreSpace(8))
    {'kind': 'legendre', 'dimension': 8}
    """
    if isinstance(space, OrthonormalSpace):  # LegendreSpace, FourierSpace
        return {"kind": space.kind, "dimension": space.m}
    if isinstance(space, KernelSpace):
        kernel = space.kernel
        if isinstance(kernel, GaussianKernel):
            return {"kind": "gaussian-kernel", "rho": kernel.rho}
        if isinstance(kernel, BrownianKernel):
            return {"kind": "brownian-kernel"}
        return {"kind": "kernel", "kernel": repr(kernel)}
    raise TypeError(f"space must be a LegendreSpace, FourierSpace or KernelSpace, got {type(space).__name__}")


def release_record(release, at, *, frame=None, domain=None, deltas=DELTAS) -> dict:
    """Everything to publish about one release, as a JSON-ready dictionary.

    Parameters
    ----------
    release : Release
        One release (no repetition axes) of :func:`dpfda.ftp` or :func:`dpfda.ptf`.
    at : array (k,)
        Public evaluation points, in the data's units, where the curve is published.
    frame : PublicFrame, optional
        The public frame the data were mapped with; the curve is then mapped back to the
        data's units (:meth:`dpfda.PublicFrame.values`), and the frame's public band, reference
        curve and scale are recorded.
    domain : Domain, optional
        Without a frame: the public interval mapped onto [0, 1] (default: [0, 1] itself).
    deltas : sequence of float
        The δ values at which the implied ε is stated (:func:`dpfda.epsilon_from_mu`).

    Returns
    -------
    dict
        ``curve`` (``points`` and ``values``), ``mechanism``, ``noise``, ``mu``,
        ``epsilon_delta`` (a list of ``{"epsilon", "delta"}``), ``n``, ``radius`` (B'),
        ``noise_scale``, ``clip`` and ``weights`` (PTF; ``None`` for FTP), ``space``
        (kind and dimension or kernel), ``grid`` (the design points in the data's units and
        on [0, 1]), ``domain``, ``frame`` (or ``None``) and ``dpfda_version``.  Nothing in
        it is computed from the data except the released curve and the released
        coordinates; ``n`` is public under the paper's neighbouring relation (one record
        replaced by another).

    Raises
    ------
    ValueError
        The release holds repetitions (one release is published at a time), or a point of
        ``at`` lies outside the domain.
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpfda Release, got {type(release).__name__}")
    if release.shape != ():
        raise ValueError(f"release must be one release, got repetitions of shape {release.shape}")
    if frame is not None and not isinstance(frame, PublicFrame):
        raise TypeError(f"frame must be a dpfda PublicFrame, got {type(frame).__name__}")
    if frame is not None and domain is not None:
        raise ValueError("give frame or domain, not both (a frame has its own domain)")
    if frame is not None and not np.array_equal(frame.grid, release.grid):
        raise ValueError("the release was not made on this frame's grid")
    if domain is None:
        domain = frame.domain if frame is not None else Domain(0.0, 1.0, name="t")
    if not isinstance(domain, Domain):
        raise TypeError(f"domain must be a dpfda Domain, got {type(domain).__name__}")
    at = as_float_array(at, "at")
    if at.ndim != 1 or at.size == 0:
        raise ValueError(f"at must be a non-empty one-dimensional array of points, got shape {at.shape}")
    t = domain.to_unit(at)
    if frame is not None:
        curve = frame.values(release, at)
    else:
        curve = release(t)
    deltas = [check_positive(d, "delta") for d in deltas]
    if any(d >= 1 for d in deltas):
        raise ValueError("every delta must lie in (0, 1)")
    eps = epsilon_from_mu(release.mu, np.asarray(deltas))
    record = {
        "dpfda_version": __version__,
        "mechanism": {"ftp": "FTP (Algorithm 1: fit each curve in the ball, average, add Gaussian noise)",
                      "ptf": "PTF (Algorithm 2: clip, average, add Gaussian noise, fit)"}.get(
                          release.method, release.method),
        "method": release.method,
        "noise": ("OpenDP vector Gaussian mechanism (secure=True)" if release.secure
                  else "numpy normal draws (secure=False): for teaching and simulation, not publication"),
        "secure": release.secure,
        "mu": float(release.mu),
        "epsilon_delta": [{"epsilon": float(e), "delta": d} for e, d in zip(np.atleast_1d(eps), deltas)],
        "n": int(release.n),
        "radius": float(release.radius),
        "noise_scale": _number(release.noise_scale),
        "clip": None if release.clip is None else _number(release.clip),
        "weights": None if release.weights is None else _number(release.weights),
        "space": space_description(release.space),
        "grid": {"points": _number(domain.from_unit(release.grid)), "unit": _number(release.grid)},
        "domain": {"start": domain.start, "stop": domain.stop, "name": domain.name},
        "frame": None if frame is None else {
            "lower": _number(frame.lower), "upper": _number(frame.upper),
            "reference_coef": _number(frame.reference), "scale": frame.scale,
            "note": "data mapped to y = (x - r(t))/scale before the release; the curve is mapped back",
        },
        "curve": {"points": _number(at), "values": _number(curve)},
    }
    record.update(noise_record(release, t, 1.0 if frame is None else frame.scale))
    return record


def noise_record(release, t, scale: float) -> dict:
    """The privacy noise in the data's units: ``noise_sd`` at the points ``t`` (on [0, 1]) and σ.

    ``scale``: data units per unit of the released values (a frame's scale; 1 without a frame).
    Public: computed from σ, the space, the grid and PTF's weights (:mod:`dpfda.mechanisms.bands`).
    """
    return {
        "noise_sd": _number(scale * release.noise_sd(t)),
        "noise_scale_data_units": _number(scale * np.asarray(release.noise_scale, dtype=float)),
        "noise_sd_note": ("standard deviation of the privacy noise at each curve point, in the data's "
                          "units; a band curve ± z·noise_sd covers " + BAND_COVERS
                          + ("" if band_is_exact(release) else
                             ". This PTF fit reached the ball B': the band is that of the linear fit"))
                          + (". noise_scale_data_units is sigma times the frame's scale" if scale != 1.0
                             else ""),
    }
