"""Helpers for the tests: Monte Carlo sizes and standard-error tolerances.

Every stochastic check compares a Monte Carlo mean with an exact value and
allows ``z`` standard errors, SE = (sample standard deviation) / sqrt(reps).
With z = 4 a correct implementation fails a given check with probability
about 6e-5; the seeds are fixed, so a run is reproducible.  When one test
makes k simultaneous comparisons, ``bonferroni_z(k)`` keeps the family-wise
false-alarm rate at the same level instead of loosening anything by hand.
"""

from __future__ import annotations

import os

import numpy as np
from scipy import stats

QUICK = os.environ.get("DPFDA_QUICK", "0").strip().lower() not in ("", "0", "false", "no")

Z = 4.0
_ALPHA = 2 * stats.norm.sf(Z)  # two-sided false-alarm rate of a single 4-SE check


def reps(full: int, quick: int) -> int:
    """Monte Carlo size: ``full`` normally, ``quick`` under DPFDA_QUICK=1."""
    return quick if QUICK else full


def bonferroni_z(k: int) -> float:
    """The z that keeps k simultaneous two-sided checks at the single-check rate."""
    return float(stats.norm.isf(_ALPHA / (2 * k)))


def mc_mean_se(samples, axis=0):
    """Sample mean and its standard error along ``axis``."""
    x = np.asarray(samples, dtype=float)
    r = x.shape[axis]
    return x.mean(axis=axis), x.std(axis=axis, ddof=1) / np.sqrt(r)


def assert_mc_close(samples, exact, *, z: float = Z, axis=0, what: str = "value"):
    """|mean(samples) - exact| <= z * SE, elementwise; a helpful message otherwise."""
    mean, se = mc_mean_se(samples, axis=axis)
    exact = np.asarray(exact, dtype=float)
    assert np.all(se > 0), f"{what}: zero standard error, the check would be vacuous"
    dev = np.abs(mean - exact) / se
    assert np.all(dev <= z), (
        f"{what}: Monte Carlo mean {mean} vs exact {exact}: {np.max(dev):.2f} SE apart "
        f"(allowed {z:.2f}; SE {se})"
    )
    return mean, se
