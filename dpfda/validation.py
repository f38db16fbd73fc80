"""Argument checks shared by every module of dpfda (and used by the book's package).

Each helper raises ``TypeError`` or ``ValueError`` with a message that names
the argument and the rule it broke, so a mistake is caught where it is made
rather than surfacing later as a NaN or a silently broadcast array.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = [
    "AssumptionError",
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_reps",
    "check_optional_int",
    "check_jobs",
    "check_rng",
    "check_grid",
    "check_data",
    "check_points",
    "check_grid_vector",
    "check_secure",
    "as_float_array",
    "non_real_dtype",
    "to_float",
    "FLOAT64_MAX",
]

FLOAT64_MAX = float(np.finfo(np.float64).max)
"""The largest finite double, about 1.8e308 (every computation of dpfda is in float64)."""


class AssumptionError(ValueError):
    """A modelling assumption of the paper (A.3 or A.4) fails on the given grid."""


def _is_real_scalar(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) or (
        isinstance(x, np.ndarray) and x.ndim == 0 and np.issubdtype(x.dtype, np.number)
        and not np.issubdtype(x.dtype, np.bool_) and not np.iscomplexobj(x)
    )


def _describe(value: object) -> str:
    """A short text for a number too large to print or convert (10**400 has 401 digits)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, np.integer):
        digits = len(str(abs(int(value))))
        if digits > 20:
            return f"an integer of {digits} digits"
    if isinstance(value, np.floating):
        return np.format_float_scientific(value, precision=3, trim="-")
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def to_float(value: Any, name: str) -> float:
    """``float(value)`` for a real scalar, with a named error where it overflows.

    ``float(10**400)`` raises ``OverflowError`` and ``float(np.longdouble("1e400"))``
    gives inf: both mean a value beyond the float64 range, which dpfda computes in.
    """
    try:
        out = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number within the float64 range "
                         f"(|{name}| <= 1.8e308), got {_describe(value)}") from None
    if math.isinf(out) and np.isfinite(value):
        raise ValueError(f"{name} must be a finite number within the float64 range "
                         f"(|{name}| <= 1.8e308), got {_describe(value)}")
    return out


def check_positive(value: object, name: str) -> float:
    """Return ``value`` as a float after checking it is a finite number > 0."""
    if not _is_real_scalar(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = to_float(value, name)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


def check_nonnegative(value: object, name: str) -> float:
    """Return ``value`` as a float after checking it is a finite number >= 0."""
    if not _is_real_scalar(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = to_float(value, name)
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return value


def check_int(value: object, name: str, minimum: int) -> int:
    """Return ``value`` as an int after checking it is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def check_reps(reps: object, name: str = "reps") -> int:
    """Return ``reps`` as an int after checking it is an integer >= 2 (a standard error needs two)."""
    if isinstance(reps, bool) or not isinstance(reps, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(reps).__name__}")
    reps = int(reps)
    if reps < 2:
        raise ValueError(f"{name} must be at least 2 (standard errors need two repetitions), got {reps}")
    return reps


def check_optional_int(value: object, name: str, minimum: int) -> int | None:
    """``None``, or ``value`` as an int after checking it is an integer >= ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer >= {minimum} or None, got {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum} or None, got {value}")
    return value


def check_jobs(n_jobs: object, name: str = "n_jobs") -> int | None:
    """A joblib worker count: ``None`` (joblib's configuration), 1 (serial), k > 1, or -1 (all cores)."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer (or None), got {type(n_jobs).__name__}")
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError(f"{name} must not be 0 (use 1 for serial, k > 1 for k workers, -1 for all cores)")
    return n_jobs


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """Insist on an explicit ``numpy.random.Generator`` (no global state)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


_NOT_REAL = {"b": "booleans", "M": "dates", "m": "time spans", "c": "complex numbers"}


def non_real_dtype(dtype: object) -> str | None:
    """What a column of ``dtype`` holds if it is not real numbers ("booleans", "dates", …), else None.

    Real numbers are integers and real floats, numpy's or pandas' nullable ones
    (``Int64``, ``Float64``); booleans, dates, time spans, complex numbers,
    categories, text and other objects are not.
    """
    kind = getattr(dtype, "kind", "O")
    return None if kind in "iuf" else _NOT_REAL.get(kind, f"dtype {dtype}")


def _from_table(x: Any, name: str) -> object:
    """A pandas DataFrame or Series, column by column by :func:`non_real_dtype`; anything else as is.

    ``np.asarray`` would turn a categorical column into its categories' values and
    mixed columns into objects: the rule is applied to each column instead, and pandas'
    nullable numbers become floats with NaN for a missing value.
    """
    if hasattr(x, "dtypes") and hasattr(x, "columns"):  # a DataFrame
        dtypes = list(zip(x.columns, x.dtypes))
    elif hasattr(x, "dtype") and hasattr(x, "to_numpy") and not isinstance(x.dtype, np.dtype):
        dtypes = [(getattr(x, "name", None), x.dtype)]  # a Series or array of a pandas dtype
    else:
        return x
    for column, dtype in dtypes:
        what = non_real_dtype(dtype)
        if what is not None:
            where = f"{name}'s column {column!r}" if column is not None else name
            raise TypeError(f"{where} holds {what}, not real numbers; convert it to numbers by a "
                            "public rule first (e.g. pd.to_numeric, or days since a public date)")
    if all(isinstance(dtype, np.dtype) for _, dtype in dtypes):
        return x
    return x.to_numpy(dtype=float, na_value=np.nan)


def as_float_array(x: object, name: str) -> np.ndarray:
    """``x`` as a float64 array, or a named error saying what to change.

    Refused, each with its own message: a masked array with masked entries (the
    mask would be dropped silently), ragged nesting, strings and other
    non-numbers (object arrays included), booleans, dates and time spans
    (``timedelta64`` counts as an integer to numpy), complex numbers, a pandas
    column of any of these or of categories (:func:`non_real_dtype`), and
    finite values of a wider float type (``longdouble``) beyond the float64
    range, which would become inf.  NaN and inf themselves are left to the
    caller's check, which says what to do about missing values.
    """
    if isinstance(x, np.ma.MaskedArray):
        masked = int(np.count_nonzero(np.ma.getmaskarray(x)))
        if masked:
            raise ValueError(
                f"{name} is a masked array with {masked} masked value(s); dpfda does not apply "
                "masks (the values under them would be used): drop or impute those values and "
                "pass a plain array"
            )
        x = np.ma.getdata(x)
    x = _from_table(x, name)
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise TypeError(
            f"{name} must be a rectangular array of real numbers (a nested list with rows of "
            f"equal length, or a numpy array): {exc}"
        ) from None
    kind = arr.dtype.kind
    if kind == "b":
        raise TypeError(f"{name} must hold real numbers, got booleans; if 0/1 values are meant, "
                        f"pass {name}.astype(float)")
    if kind in "mM":
        what = "time spans (timedelta64)" if kind == "m" else "dates (datetime64)"
        raise TypeError(f"{name} must hold real numbers, got {what}; convert them to numbers in "
                        "a unit of your choice first, e.g. x / np.timedelta64(1, 's')")
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be array-like of real numbers, got dtype {arr.dtype}; "
                        "convert it with np.asarray(..., dtype=float) after removing non-numbers")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got a complex array")
    if kind == "f" and arr.dtype.itemsize > 8 and arr.size:
        finite = arr[np.isfinite(arr)]
        if finite.size and np.max(np.abs(finite)) > FLOAT64_MAX:
            big = np.format_float_scientific(np.max(np.abs(finite)), precision=3, trim="-")
            raise ValueError(
                f"{name} holds values beyond the float64 range (largest magnitude {big} > "
                f"1.8e308); dpfda computes in float64: rescale {name} (e.g. change its unit) first"
            )
    return arr.astype(float, copy=False)


def check_grid(grid: object, name: str = "grid") -> np.ndarray:
    """A one-dimensional, strictly increasing grid of points in [0, 1]."""
    arr = as_float_array(grid, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size < 1:
        raise ValueError(f"{name} must hold at least one point")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite values (found NaN or inf)")
    if arr[0] < 0 or arr[-1] > 1 or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must lie in [0, 1], got values in [{arr.min()}, {arr.max()}]")
    if arr.size > 1 and np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing")
    return arr


def check_points(t: object, name: str = "t") -> np.ndarray:
    """Evaluation points: finite values in [0, 1] (any order, repeats allowed)."""
    arr = as_float_array(t, name)
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a scalar or one-dimensional, got shape {arr.shape}")
    arr = np.atleast_1d(arr)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite values (found NaN or inf)")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must lie in [0, 1]")
    return arr


def check_data(X: object, T: int, name: str = "X") -> np.ndarray:
    """Observed curves: shape (n, T) for one dataset or (reps, n, T) for a batch.

    The last axis must match the grid exactly; nothing is broadcast.
    """
    arr = as_float_array(X, name)
    if arr.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be 2-D (n, T) or 3-D (reps, n, T) with curves along the "
            f"second-to-last axis, got {arr.ndim}-D shape {arr.shape}"
        )
    if arr.shape[-1] != T:
        raise ValueError(
            f"{name}'s last axis has length {arr.shape[-1]} but the grid has {T} points; "
            "curves must run along the last axis (samples x grid points, as in scikit-fda)"
        )
    if arr.shape[-2] < 1:
        raise ValueError(f"{name} must hold at least one curve")
    if not _all_finite(arr):
        raise ValueError(f"{name} contains NaN or inf; remove or impute those values first, or, for curves "
                         "with missing points, give each subject on the points it has (dpfda.Curves.from_masked "
                         "reads a table with NaN where nothing was measured)")
    return arr


def _all_finite(arr: np.ndarray) -> bool:
    """Whether every value of a float array is finite, in one pass that writes nothing.

    NaN and ±inf propagate through every addition (x + NaN and inf − inf are
    NaN, inf + finite is inf), so a non-finite value makes the sum non-finite,
    in any order of summation; a non-finite sum of finite values (an overflow)
    is settled by the elementwise test.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(arr, axis=None)
    return bool(np.isfinite(total)) or bool(np.all(np.isfinite(arr)))


def check_grid_vector(value: object, name: str, T: int | None) -> np.ndarray:
    """A vector of finite values > 0, one per grid point (clip bounds, weights).

    A scalar is used at every one of the ``T`` points; ``T=None`` accepts a
    vector of any length (at least one) and no scalar.
    """
    arr = as_float_array(value, name)
    if arr.ndim == 0 and T is not None:
        arr = np.full(T, float(arr))
    if arr.ndim != 1 or arr.size < 1 or (T is not None and arr.size != T):
        want = "a vector of at least one value" if T is None else f"a scalar or a vector of length T={T}"
        raise ValueError(f"{name} must be {want} (one value per grid point), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0 at every grid point")
    return arr


def check_secure(secure: object) -> bool:
    """``secure`` as a bool: True or False (numpy's bools too), nothing else."""
    if not isinstance(secure, (bool, np.bool_)):
        raise TypeError(f"secure must be True or False, got {type(secure).__name__}")
    return bool(secure)
