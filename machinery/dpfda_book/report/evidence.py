"""Testing the paper's claims about its simulations, with Monte Carlo tolerances.

The book states each qualitative claim of §5 and of the appendix's polynomial
section in words and then asserts it on the results table of
:func:`dpfda_book.simulation.schedule.run_study`.  The helpers here turn "the ratio falls",
"the ratio lies below one", "this curve is flat" into comparisons whose
tolerance is a multiple ``z`` of the Monte Carlo standard error — never a
hand-picked margin.

Conventions
-----------
* A *row* is one setting of a results table (a ``pandas.Series``).  Its error
  ratio FTP/PTF is judged on the log scale, with the table's
  ``se_log_ratio`` (delta method on the paired errors; see
  :data:`dpfda_book.simulation.tabulate.CI_METHOD`).
* Two different settings have independent random streams (the engine keys
  every stream by the setting), so the standard error of a difference
  between them is ``sqrt(se_a² + se_b²)``.  FTP and PTF in the *same*
  setting share their data; compare them only through the ratio.
* ``z`` defaults to :data:`dpfda_book.montecarlo.Z` = 4 (a two-sided level of about
  6e-5 for one comparison).  When one assertion makes k comparisons, use
  :func:`~dpfda_book.montecarlo.bonferroni_z` (``bonferroni_z(1) == Z``).  Both, and
  :func:`~dpfda_book.montecarlo.proportion_se`, live in :mod:`dpfda_book.settings` and are
  re-exported here for the chapters.

This module only reads results tables; simulations are the engine's
(:mod:`dpfda_book.simulation.engine`, :mod:`dpfda_book.simulation.schedule`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd

from dpfda.validation import check_nonnegative, check_positive

from ..montecarlo import Z, bonferroni_z, proportion_se
from ..simulation.studies import check_family

__all__ = [
    "Z",
    "bonferroni_z",
    "select",
    "one",
    "log_ratio",
    "log_change",
    "ratio_interval",
    "ratio_above",
    "ratio_below",
    "ratio_near",
    "ratio_falls",
    "ratio_rises",
    "scaled",
    "table1_frame",
    "exceeds",
    "within",
    "proportion_se",
]


def _check_z(z: float) -> float:
    """``z`` if it is a positive number (a multiple of the standard error), else a ValueError."""
    return check_positive(z, "z")


# ---------------------------------------------------------------------------
# Picking settings out of a results table
# ---------------------------------------------------------------------------


def _matching_rows(df: pd.DataFrame, criteria: dict) -> pd.DataFrame:
    """The rows of ``df`` whose columns equal ``criteria``' values (floats to 1e-12)."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a results DataFrame from run_study, got {type(df).__name__}")
    mask = np.ones(len(df), dtype=bool)
    for k, v in criteria.items():
        if k not in df.columns:
            raise ValueError(f"unknown column {k!r}; the table has {list(df.columns)}")
        if k == "family":
            check_family(v)
        col = df[k]
        if isinstance(v, float) or (isinstance(v, numbers.Real) and col.dtype.kind == "f"):
            mask &= np.isclose(col.astype(float), float(v), rtol=1e-12, atol=0.0)
        else:
            mask &= (col == v).to_numpy(dtype=bool)
    return df[mask]


def select(df: pd.DataFrame, **criteria: object) -> pd.DataFrame:
    """The settings whose columns equal the given values, ordered by n.

    ``select(df, family="kernel", T=8, mu=0.1)``.  Raises ``ValueError`` if none match.
    """
    out = _matching_rows(df, criteria)
    if out.empty:
        raise ValueError(f"no setting matches {criteria}")
    return out.sort_values("n") if "n" in out.columns else out


def one(df: pd.DataFrame, **criteria: object) -> pd.Series:
    """The single setting with the given values (``ValueError`` unless exactly one)."""
    out = _matching_rows(df, criteria)
    if len(out) != 1:
        raise ValueError(f"expected exactly one setting matching {criteria}, found {len(out)}")
    return out.iloc[0]


# ---------------------------------------------------------------------------
# Ratios
# ---------------------------------------------------------------------------


def log_ratio(row: pd.Series) -> tuple[float, float]:
    """(log ratio, its standard error ``se_log_ratio``) of one setting; ``ValueError`` if not usable."""
    ratio = float(row["ratio"])
    se = float(row["se_log_ratio"])
    if not (ratio > 0 and math.isfinite(ratio)):
        raise ValueError(f"ratio must be finite and > 0, got {ratio!r}")
    if not (se >= 0 and math.isfinite(se)):
        raise ValueError(f"se_log_ratio must be finite and >= 0, got {se!r}")
    return math.log(ratio), se


def ratio_interval(row: pd.Series, z: float = Z) -> tuple[float, float]:
    """ratio · exp(∓ z·se_log_ratio): the interval the assertions below use."""
    lr, se = log_ratio(row)
    z = _check_z(z)
    return math.exp(lr - z * se), math.exp(lr + z * se)


def ratio_above(row: pd.Series, value: float, z: float = Z) -> bool:
    """The ratio exceeds ``value`` by more than z standard errors (on the log scale)."""
    return ratio_interval(row, z)[0] > check_positive(value, "value")


def ratio_below(row: pd.Series, value: float, z: float = Z) -> bool:
    """The ratio falls short of ``value`` by more than z standard errors."""
    return ratio_interval(row, z)[1] < check_positive(value, "value")


def ratio_near(row: pd.Series, value: float, z: float = Z) -> bool:
    """``value`` lies within z standard errors of the ratio (log scale)."""
    lo, hi = ratio_interval(row, z)
    value = check_positive(value, "value")
    return lo <= value <= hi


def log_change(a: pd.Series, b: pd.Series) -> tuple[float, float]:
    """(log ratio(b) − log ratio(a), root-sum-square SE): two settings, independent streams."""
    la, sa = log_ratio(a)
    lb, sb = log_ratio(b)
    return lb - la, math.hypot(sa, sb)


def ratio_falls(a: pd.Series, b: pd.Series, z: float = Z) -> bool:
    """Setting ``b``'s ratio is below setting ``a``'s by more than z combined SEs."""
    d, se = log_change(a, b)
    return d < -_check_z(z) * se


def ratio_rises(a: pd.Series, b: pd.Series, z: float = Z) -> bool:
    """Setting ``b``'s ratio is above setting ``a``'s by more than z combined SEs."""
    d, se = log_change(a, b)
    return d > _check_z(z) * se


# ---------------------------------------------------------------------------
# Errors and proportions
# ---------------------------------------------------------------------------


def scaled(row: pd.Series, method: str) -> tuple[float, float]:
    """(n × error, n × SE) of ``method`` ("ftp" or "ptf") in one setting (Figures 2, 5)."""
    if method not in ("ftp", "ptf"):
        raise ValueError(f"method must be 'ftp' or 'ptf', got {method!r}")
    n = float(row["n"])
    return n * float(row[f"err_{method}"]), n * float(row[f"se_{method}"])


# ---------------------------------------------------------------------------
# Table 1
# ---------------------------------------------------------------------------

_TABLE1_COLUMNS = {"mu": "mu", "T": "T", "n": "n", "err_ftp": "MSE_FTP", "err_ptf": "MSE_PTF",
                   "ratio": "ratio", "ratio_lo": "ratio_lo", "ratio_hi": "ratio_hi",
                   "p_ptf_active": "p_PTF"}


def table1_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1's numbers: per (μ, T, n) the two MSEs, their ratio (with its 95% CI) and p̂_PTF.

    ``df`` is the results table of the study ``table1`` (:func:`dpfda_book.simulation.schedule.run_study`).
    Rows are ordered by μ, T, n, as the settings of Figure 1; :func:`dpfda_book.report.tables.table`
    shows it, :func:`dpfda_book.report.tables.pivot_n_by_mu_T` lays one of its columns out as the paper does.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a results DataFrame from run_study, got {type(df).__name__}")
    missing = set(_TABLE1_COLUMNS) - set(df.columns)
    if missing:
        raise ValueError(f"results table lacks columns {sorted(missing)}; pass the output of run_study")
    if df.empty:
        raise ValueError("results table is empty")
    out = df[list(_TABLE1_COLUMNS)].rename(columns=_TABLE1_COLUMNS).sort_values(["mu", "T", "n"])
    out = out.reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out


def _finite_estimate(x: float, se: float, name: str) -> tuple[float, float]:
    """``(x, se)`` as floats if ``x`` is finite and ``se`` >= 0, else a ValueError naming ``name``."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x, check_nonnegative(se, f"se of {name}")


def exceeds(x: float, se_x: float, y: float, se_y: float, z: float = Z) -> bool:
    """x − y > z·sqrt(se_x² + se_y²): x is larger, beyond Monte Carlo error.

    For estimates from two different settings (independent streams).
    """
    x, se_x = _finite_estimate(x, se_x, "x")
    y, se_y = _finite_estimate(y, se_y, "y")
    return x - y > _check_z(z) * math.hypot(se_x, se_y)


def within(x: float, se_x: float, y: float, se_y: float = 0.0, z: float = Z) -> bool:
    """``|x − y| ≤ z·sqrt(se_x² + se_y²)``: the two agree up to Monte Carlo error.

    With ``se_y = 0``, ``y`` is an exact value (e.g. a formula).
    """
    x, se_x = _finite_estimate(x, se_x, "x")
    y, se_y = _finite_estimate(y, se_y, "y")
    return abs(x - y) <= _check_z(z) * math.hypot(se_x, se_y)
