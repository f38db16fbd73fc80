"""The book's settings, read from the environment: one place for each, so every chapter and test reads them alike.

* :func:`quick` — quick mode, from the environment variable ``DPFDA_QUICK``
  (``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``/unset):
  Monte Carlo sizes shrink for tests, tolerances do not.
* :func:`n_jobs` — how many worker processes a chapter gives
  :func:`dpfda_book.simulation.schedule.run_study`, from ``DPFDA_JOBS`` (default: the cores
  available, at most :data:`MAX_DEFAULT_JOBS`).  Results never depend on it.
* :func:`store_folder` — the folder of the results store
  (:mod:`dpfda_book.simulation.store`), from ``DPFDA_STORE``; None (no store) when unset.

The Monte Carlo tolerances the chapters assert with are in :mod:`dpfda_book.montecarlo`.

>>> import os
>>> saved = os.environ.pop("DPFDA_STORE", None)
>>> store_folder() is None
True
>>> if saved is not None: os.environ["DPFDA_STORE"] = saved
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "MAX_DEFAULT_JOBS",
    "STORE_ENV",
    "n_jobs",
    "quick",
    "store_folder",
]

MAX_DEFAULT_JOBS = 8
"""The most worker processes :func:`n_jobs` chooses by itself (``DPFDA_JOBS`` may ask more)."""

STORE_ENV = "DPFDA_STORE"
"""The environment variable that names the results store's folder; no store when it is unset or empty."""

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


def store_folder() -> Path | None:
    """The results store's folder, from ``DPFDA_STORE``; None when the store is off (unset or empty)."""
    text = os.environ.get(STORE_ENV, "").strip()
    return Path(text) if text else None
