"""Monte Carlo tolerances and standard errors: how the chapters and tests assert a simulated claim.

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
from typing import overload

import numpy as np
from numpy.typing import ArrayLike

from dpfda.validation import check_int, check_positive

__all__ = [
    "ALPHA",
    "Z",
    "Z95",
    "bonferroni_z",
    "proportion_se",
]

Z = 4.0
"""Monte Carlo tolerance of one check, in standard errors."""

ALPHA = math.erfc(Z / math.sqrt(2.0))
"""Two-sided false-alarm rate of one check at :data:`Z` standard errors (≈ 6.3e-5)."""

Z95 = 1.959963984540054
"""Φ⁻¹(0.975), the half-width, in standard errors, of a two-sided 95% normal interval."""


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
    from scipy.special import ndtri  # here: importing dpfda_book (a simulation worker) needs no scipy

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

