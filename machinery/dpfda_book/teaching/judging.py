"""Verdicts on a submission's answers, from plain numbers only.

**Simulation answers, by their distribution.** A simulation question asks for a function that
estimates something by Monte Carlo from a generator ``rng``. The grader calls it at K fresh
settings (seeds, sizes, budgets), and the key gives, for each setting, the exact law of the
intended estimator (for example σ²·χ²_{mR}/R for a mean of R squared norms of N(0, σ²I_m)
vectors). Each returned value x_i becomes z_i = Φ⁻¹(F_i(x_i)), the probability integral transform
of its law: for a correct function the z_i are independent N(0, 1), whatever the settings.
:class:`DistributionTest` then asks two things of them:

* **location**, within each group g of n_g settings: the sum of its z_i, divided by √n_g, lies in
  [−a, a]. An estimator off in its mean (μ off by 2 %, a missing factor, ``ddof=0`` where the law
  has ``ddof=1``) shifts every z_i the same way;
* **spread**, over all settings: S = Σ z_i² within [χ²_K(level), χ²_K(1 − level)]. A closed form,
  or a closed form with a tiny jitter, or a function returning the μ it is handed, has z_i near a
  constant and S near 0; an estimator with the right mean but the wrong spread has S far from K.

Each of these 2 + (number of groups) comparisons has two-sided probability ``level`` under the
law (one-sided ``level`` for each tail of S), so a correct function fails with probability at
most (groups + 2)·level (:meth:`DistributionTest.false_fail_rate` gives the exact rate by
simulation). The power against a given mistake depends on the settings; the keys state it and
``tools/grading_power.py`` computes it by simulation.

**Exact answers, at fresh random points.** A formula (a sympy expression) or an exact function is
evaluated by the probe at points drawn for this grading only, to 40 significant digits where
it is symbolic, and compared with the key's reference (:func:`agrees`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["LEVEL", "DistributionTest", "MonteCarloRate", "Verdict", "agrees", "as_floats", "chi2_z",
           "decimal_string", "same_seed_verdict", "seeded_request", "z_from_tails"]

#: Probability of each of the test's comparisons under the intended law (see the module docstring).
LEVEL = 2.5e-5


def z_from_tails(cdf: Any, sf: Any) -> np.ndarray:
    """Φ⁻¹(F) from F = ``cdf`` and 1 − F = ``sf`` (whichever is smaller, for accuracy in the tails)."""
    cdf, sf = np.asarray(cdf, dtype=float), np.asarray(sf, dtype=float)
    return np.where(cdf <= 0.5, stats.norm.ppf(cdf), stats.norm.isf(sf))


def chi2_z(values: Any, scale: Any, df: Any) -> np.ndarray:
    """z of each value under the law ``scale``·χ²_df / df (its mean is ``scale``).

    A value that is not a finite positive number gets z = −∞ (zero or less) or +∞ (otherwise),
    which fails every test.
    """
    x = np.asarray(values, dtype=float)
    scale, df = np.asarray(scale, dtype=float), np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = x / scale * df
        z = z_from_tails(stats.chi2.cdf(y, df), stats.chi2.sf(y, df))
    z = np.where(np.isfinite(x) & (x > 0), z, np.where(x > 0, np.inf, -np.inf))
    return np.where(np.isnan(x), np.inf, z)


def as_floats(answer: Any, size: int) -> np.ndarray | None:
    """``answer`` as ``size`` floats (a missing value, None, becomes NaN).

    None if ``answer`` is not a list of that many numbers.
    """
    if not isinstance(answer, list) or len(answer) != size:
        return None
    out = np.empty(size)
    for i, value in enumerate(answer):
        if value is None:
            out[i] = np.nan
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[i] = float(value)
        else:
            return None
    return out


def seeded_request(settings: Sequence[Sequence[Any]], rng: np.random.Generator, **extra: Any) -> dict[str, Any]:
    """A simulation question's request: the key's ``settings``, ``extra`` entries, a fresh seed per setting."""
    return {"settings": [list(s) for s in settings], **extra,
            "seeds": [int(s) for s in rng.integers(2**62, size=len(settings))]}


def same_seed_verdict(request: dict[str, Any], value: Any, settings: Sequence[Sequence[Any]],
                      passes: Callable[[np.ndarray], bool]) -> bool:
    """Whether a simulation answer passes.

    The request was at the key's ``settings``; the answer is ``{"values": one number per setting,
    "again": a float}`` where ``again`` (the first setting run a second time with its seed) equals
    the first value; and ``passes(values)`` (the key's test of their law) holds.
    """
    if not isinstance(value, dict) or [tuple(s) for s in request["settings"]] != [tuple(s) for s in settings]:
        return False
    values, again = as_floats(value.get("values"), len(settings)), value.get("again")
    if values is None or not isinstance(again, float) or not again == values[0]:
        return False  # the same seed must give the same value
    return bool(passes(values))


@dataclass(frozen=True)
class Verdict:
    """The outcome of a :class:`DistributionTest` on one set of z values."""

    passed: bool
    locations: tuple[float, ...]
    """Σ z / √n of each group"""
    spread: float
    """S = Σ z²"""


@dataclass(frozen=True)
class DistributionTest:
    """Location in each group and spread over all settings (see the module docstring)."""

    groups: tuple[tuple[int, ...], ...]
    level: float = LEVEL

    def __post_init__(self) -> None:
        flat = sorted(i for g in self.groups for i in g)
        if not self.groups or not all(self.groups) or flat != list(range(len(flat))):
            raise ValueError(f"groups must partition the settings 0..K-1 into non-empty groups, got {self.groups}")
        if not 0 < self.level < 0.01:
            raise ValueError(f"level must be in (0, 0.01), got {self.level}")

    @classmethod
    def one_group(cls, size: int, level: float = LEVEL) -> DistributionTest:
        """One location group of all ``size`` settings."""
        return cls((tuple(range(size)),), level)

    @property
    def size(self) -> int:
        """K, the number of settings."""
        return sum(len(g) for g in self.groups)

    @property
    def location_bound(self) -> float:
        """The two-sided ``level`` point a of N(0, 1)."""
        return float(stats.norm.isf(self.level / 2))

    @property
    def spread_bounds(self) -> tuple[float, float]:
        """The ``level`` and 1 − ``level`` points of χ²_K."""
        return float(stats.chi2.ppf(self.level, self.size)), float(stats.chi2.isf(self.level, self.size))

    def passes(self, z: np.ndarray) -> np.ndarray:
        """Whether each row of ``z`` (shape (..., K)) passes; NaN or infinite z fails."""
        z = np.asarray(z, dtype=float)
        ok = np.all(np.isfinite(z), axis=-1)
        z = np.where(np.isfinite(z), z, 0.0)
        a = self.location_bound
        for g in self.groups:
            ok &= np.abs(z[..., list(g)].sum(axis=-1)) / math.sqrt(len(g)) <= a
        lo, hi = self.spread_bounds
        s = np.sum(z**2, axis=-1)
        return ok & (s >= lo) & (s <= hi)

    def verdict(self, z: Sequence[float] | np.ndarray) -> Verdict:
        """The test on one set of K values of z."""
        values = np.asarray(z, dtype=float)
        if values.shape != (self.size,):
            raise ValueError(f"expected {self.size} values of z, got shape {values.shape}")
        locations = tuple(float(values[list(g)].sum() / math.sqrt(len(g))) for g in self.groups)
        return Verdict(bool(self.passes(values)), locations, float(np.sum(values**2)))

    def false_fail_rate(self, reps: int, rng: np.random.Generator) -> MonteCarloRate:
        """Rate at which a correct function fails: ``reps`` draws of K independent N(0, 1)."""
        fails = 0
        for start in range(0, reps, 100_000):
            k = min(100_000, reps - start)
            fails += int(np.sum(~self.passes(rng.standard_normal((k, self.size)))))
        return MonteCarloRate(fails, reps)


@dataclass(frozen=True)
class MonteCarloRate:
    """A rate estimated from ``events`` out of ``trials``, with its Monte Carlo error."""

    events: int
    trials: int

    @property
    def rate(self) -> float:
        """events / trials."""
        return self.events / self.trials

    @property
    def se(self) -> float:
        """The binomial standard error sqrt(p(1 − p)/trials)."""
        p = self.rate
        return math.sqrt(p * (1 - p) / self.trials)

    @property
    def upper95(self) -> float:
        """One-sided 95 % Clopper–Pearson upper bound on the rate."""
        if self.events >= self.trials:
            return 1.0
        return float(stats.beta.ppf(0.95, self.events + 1, self.trials - self.events))

    @property
    def lower95(self) -> float:
        """One-sided 95 % Clopper–Pearson lower bound on the rate."""
        if self.events <= 0:
            return 0.0
        return float(stats.beta.ppf(0.05, self.events, self.trials - self.events + 1))

    def __str__(self) -> str:
        if self.events == 0:
            return f"0/{self.trials} (< {self.upper95:.1e}, 95 %)"
        if self.events == self.trials:
            return f"{self.trials}/{self.trials} (> {self.lower95:.5f}, 95 %)"
        if self.rate > 0.5:
            return f"{self.rate:.5f} ± {self.se:.5f} ({self.events}/{self.trials})"
        return f"{self.rate:.1e} ± {self.se:.1e} ({self.events}/{self.trials})"


# ---- exact answers ----------------------------------------------------------------------------


def decimal_string(value: float | Decimal, digits: int = 45) -> str:
    """``value`` as a decimal string of ``digits`` significant digits (what the probe substitutes)."""
    return f"{Decimal(value):.{digits - 1}e}"


def agrees(got: Any, want: Any, rel: float) -> bool:
    """Whether ``got`` is within relative ``rel`` of ``want``; False for anything but a number.

    ``got``: a number or a decimal string from the probe; ``want``: a number, a
    ``decimal.Decimal`` or a decimal string.
    """
    if isinstance(got, bool) or not isinstance(got, (int, float, str)) or len(str(got)) > 200:
        return False
    with localcontext() as ctx:
        ctx.prec = 80
        try:
            g, w = Decimal(str(got)), Decimal(str(want))
        except (InvalidOperation, ValueError):
            return False
        if not (g.is_finite() and w.is_finite()):
            return False
        return abs(g - w) <= Decimal(rel) * abs(w)
