"""Conventions shared by the package, the book's chapters and the tests.

One place for each of them, so that every chapter and test reads them the
same way:

* :func:`quick` — quick mode, from the environment variable ``DPFDA_QUICK``
  (``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``/unset):
  Monte Carlo sizes shrink for tests, tolerances do not.
* :func:`n_jobs` — how many worker processes a chapter gives
  :func:`dpfda.simulation.schedule.run_study`, from ``DPFDA_JOBS`` (default: the cores
  available, at most :data:`MAX_DEFAULT_JOBS`).  Results never depend on it.
* :data:`Z` — the Monte Carlo tolerance: a claim is asserted with a margin of
  ``Z`` standard errors.  A single check of a correct computation then fails
  with probability :data:`ALPHA` = 2·(1 − Φ(4)) ≈ 6.3e-5.
* :func:`bonferroni_z` — the tolerance for k simultaneous checks at the same
  family-wise rate (``bonferroni_z(1) == Z``).
* :func:`proportion_se` — the standard error of an observed proportion.
* :data:`Z95` — the 95% normal quantile of the confidence intervals of the
  results tables and of the error bars of the figures.

>>> Z, bonferroni_z(1) == Z
(4.0, True)
"""

from __future__ import annotations

import math
import os
from typing import overload

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_int, check_positive

__all__ = [
    "ALPHA",
    "MAX_DEFAULT_JOBS",
    "Z",
    "Z95",
    "bonferroni_z",
    "n_jobs",
    "proportion_se",
    "quick",
]

Z = 4.0
"""Monte Carlo tolerance of one check, in standard errors."""

ALPHA = math.erfc(Z / math.sqrt(2.0))
"""Two-sided false-alarm rate of one check at :data:`Z` standard errors (≈ 6.3e-5)."""

Z95 = 1.959963984540054
"""Φ⁻¹(0.975), the half-width, in standard errors, of a two-sided 95% normal interval."""

MAX_DEFAULT_JOBS = 8
"""The most worker processes :func:`n_jobs` chooses by itself (``DPFDA_JOBS`` may ask more)."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def quick() -> bool:
    """Whether quick mode is on: the environment variable ``DPFDA_QUICK``.

    Raises ``ValueError`` for a value that is neither on nor off, rather
    than guessing.

    >>> import os
    >>> saved = os.environ.pop("DPFDA_QUICK", None)
    >>> os.environ["DPFDA_QUICK"] = "1"; quick()
    True
    >>> os.environ["DPFDA_QUICK"] = "0"; quick()
    False
    >>> del os.environ["DPFDA_QUICK"]; quick()
    False
    >>> if saved is not None: os.environ["DPFDA_QUICK"] = saved
    """
    text = os.environ.get("DPFDA_QUICK", "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(
        f"DPFDA_QUICK must be 1/true/yes/on or 0/false/no/off (or unset), got {text!r}"
    )


def n_jobs() -> int:
    """Worker processes for a chapter's simulations: ``DPFDA_JOBS``, or a default.

    ``DPFDA_JOBS`` is a positive integer or -1 (all cores).  Unset, it is the
    number of cores joblib may use (CPU affinity and cgroup quota counted), at
    most :data:`MAX_DEFAULT_JOBS`.  Results are the same for any value.

    >>> import os
    >>> saved = os.environ.pop("DPFDA_JOBS", None)
    >>> os.environ["DPFDA_JOBS"] = "3"; n_jobs()
    3
    >>> del os.environ["DPFDA_JOBS"]; 1 <= n_jobs() <= MAX_DEFAULT_JOBS
    True
    >>> if saved is not None: os.environ["DPFDA_JOBS"] = saved
    """
    text = os.environ.get("DPFDA_JOBS", "").strip()
    if not text:
        from joblib import cpu_count

        return max(1, min(int(cpu_count()), MAX_DEFAULT_JOBS))
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1 and value != -1:
        raise ValueError(f"DPFDA_JOBS must be a positive integer or -1 (all cores), got {text!r}")
    return value


def bonferroni_z(k: int, alpha: float | None = None) -> float:
    """Two-sided normal quantile for k simultaneous checks at family-wise rate ``alpha``.

    ``alpha`` defaults to :data:`ALPHA`, the rate of one check at :data:`Z`
    standard errors, so ``bonferroni_z(1)`` is ``Z`` and k checks together
    keep the rate of one.

    >>> round(bonferroni_z(1, 0.05), 3)
    1.96
    >>> round(bonferroni_z(10), 2)
    4.51
    """
    from scipy.special import ndtri  # here: importing dpfda (a simulation worker) needs no scipy

    k = check_int(k, "k", 1)
    if alpha is None:
        alpha = ALPHA
    alpha = check_positive(alpha, "alpha")
    if alpha >= 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return float(-ndtri(alpha / (2 * k)))


@overload
def proportion_se(p: float, reps: int) -> float: ...
@overload
def proportion_se(p: ArrayLike, reps: int) -> float | np.ndarray: ...
def proportion_se(p: ArrayLike, reps: int) -> float | np.ndarray:
    """Standard error of observed proportion(s) ``p`` from ``reps`` trials (Agresti–Coull).

    Uses p̃ = (x + 2)/(R + 4) with x = pR: sqrt(p̃(1 − p̃)/(R + 4)).  ``p`` may be
    a number (a float is returned) or an array.

    The package's one standard error of a proportion (the results tables'
    ``se_p_*`` columns, the claims, the chapters).  Why this one: the proportions
    the book reports — how often a ball constraint binds, how often a release
    recovers a feature — are often 0 or 1, where the Wald error sqrt(p(1 − p)/R)
    is 0 and any check against it would claim certainty from finitely many
    repetitions; Agresti–Coull stays positive there (about 1.4/R at 0 of R) and
    is within a few per cent of Wald once pR and (1 − p)R exceed a few dozen.  A
    floor such as max(p(1 − p), 1/R) does the same job ad hoc.

    >>> round(proportion_se(0.5, 1000), 5)
    0.01578
    >>> proportion_se(0.0, 1000) > 0
    True
    """
    arr = np.asarray(p, dtype=float)
    if not np.all((arr >= 0.0) & (arr <= 1.0)):
        raise ValueError(f"p must be a proportion in [0, 1], got {p!r}")
    reps = check_int(reps, "reps", 1)
    pt = (arr * reps + 2.0) / (reps + 4.0)
    se = np.sqrt(pt * (1.0 - pt) / (reps + 4.0))
    return float(se) if se.ndim == 0 else se

