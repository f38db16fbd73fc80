"""Testing the paper's claims about its simulations, with Monte Carlo tolerances.

The book states each qualitative claim of §5 and of the appendix's polynomial
section in words and then asserts it on the results table of
:func:`dpfda.engine.run_study`.  The helpers here turn "the ratio falls",
"the ratio lies below one", "this curve is flat" into comparisons whose
tolerance is a multiple ``z`` of the Monte Carlo standard error — never a
hand-picked margin.

Conventions
-----------
* A *row* is one setting of a results table (a ``pandas.Series``).  Its error
  ratio FTP/PTF is judged on the log scale, with the table's
  ``se_log_ratio`` (delta method on the paired errors; see
  :data:`dpfda.engine.CI_METHOD`).
* Two different settings have independent random streams (the engine keys
  every stream by the setting), so the standard error of a difference
  between them is ``sqrt(se_a² + se_b²)``.  FTP and PTF in the *same*
  setting share their data; compare them only through the ratio.
* ``z`` defaults to :data:`dpfda.config.Z` = 4 (a two-sided level of about
  6e-5 for one comparison).  When one assertion makes k comparisons, use
  :func:`~dpfda.config.bonferroni_z` (``bonferroni_z(1) == Z``).  Both, and
  :func:`~dpfda.config.proportion_se`, live in :mod:`dpfda.config` and are
  re-exported here for the chapters.

:func:`compare_on_curves` runs FTP and PTF with the public pipelines on
latent curves of the caller's choosing, for questions the paper's generative
models cannot ask (e.g. how the verdict depends on the law of the curves).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd

from ._validation import check_int, check_nonnegative, check_positive
from .config import Z, bonferroni_z, proportion_se

__all__ = [
    "Z",
    "bonferroni_z",
    "select",
    "one",
    "ratio_interval",
    "ratio_above",
    "ratio_below",
    "ratio_near",
    "ratio_falls",
    "ratio_rises",
    "scaled",
    "exceeds",
    "within",
    "proportion_se",
    "compare_on_curves",
]


def _z(z) -> float:
    return check_positive(z, "z")


# ---------------------------------------------------------------------------
# Picking settings out of a results table
# ---------------------------------------------------------------------------


def _match(df: pd.DataFrame, criteria: dict) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a results DataFrame from run_study, got {type(df).__name__}")
    mask = np.ones(len(df), dtype=bool)
    for k, v in criteria.items():
        if k not in df.columns:
            raise ValueError(f"unknown column {k!r}; the table has {list(df.columns)}")
        col = df[k]
        if isinstance(v, float) or (isinstance(v, numbers.Real) and col.dtype.kind == "f"):
            mask &= np.isclose(col.astype(float), float(v), rtol=1e-12, atol=0.0)
        else:
            mask &= (col == v).to_numpy(dtype=bool)
    return df[mask]


def select(df: pd.DataFrame, **criteria) -> pd.DataFrame:
    """The settings whose columns equal the given values, ordered by n.

    ``select(df, T=8, mu=0.1)``.  Raises ``ValueError`` if none match.
    """
    out = _match(df, criteria)
    if out.empty:
        raise ValueError(f"no setting matches {criteria}")
    return out.sort_values("n") if "n" in out.columns else out


def one(df: pd.DataFrame, **criteria) -> pd.Series:
    """The single setting with the given values (``ValueError`` unless exactly one)."""
    out = _match(df, criteria)
    if len(out) != 1:
        raise ValueError(f"expected exactly one setting matching {criteria}, found {len(out)}")
    return out.iloc[0]


# ---------------------------------------------------------------------------
# Ratios
# ---------------------------------------------------------------------------


def _log_ratio(row) -> tuple[float, float]:
    ratio = float(row["ratio"])
    se = float(row["se_log_ratio"])
    if not (ratio > 0 and math.isfinite(ratio)):
        raise ValueError(f"ratio must be finite and > 0, got {ratio!r}")
    if not (se >= 0 and math.isfinite(se)):
        raise ValueError(f"se_log_ratio must be finite and >= 0, got {se!r}")
    return math.log(ratio), se


def ratio_interval(row, z: float = Z) -> tuple[float, float]:
    """ratio · exp(∓ z·se_log_ratio): the interval the assertions below use."""
    lr, se = _log_ratio(row)
    z = _z(z)
    return math.exp(lr - z * se), math.exp(lr + z * se)


def ratio_above(row, value: float, z: float = Z) -> bool:
    """The ratio exceeds ``value`` by more than z standard errors (on the log scale)."""
    return ratio_interval(row, z)[0] > check_positive(value, "value")


def ratio_below(row, value: float, z: float = Z) -> bool:
    """The ratio falls short of ``value`` by more than z standard errors."""
    return ratio_interval(row, z)[1] < check_positive(value, "value")


def ratio_near(row, value: float, z: float = Z) -> bool:
    """``value`` lies within z standard errors of the ratio (log scale)."""
    lo, hi = ratio_interval(row, z)
    value = check_positive(value, "value")
    return lo <= value <= hi


def _change(a, b) -> tuple[float, float]:
    la, sa = _log_ratio(a)
    lb, sb = _log_ratio(b)
    return lb - la, math.hypot(sa, sb)


def ratio_falls(a, b, z: float = Z) -> bool:
    """Setting ``b``'s ratio is below setting ``a``'s by more than z combined SEs."""
    d, se = _change(a, b)
    return d < -_z(z) * se


def ratio_rises(a, b, z: float = Z) -> bool:
    """Setting ``b``'s ratio is above setting ``a``'s by more than z combined SEs."""
    d, se = _change(a, b)
    return d > _z(z) * se


# ---------------------------------------------------------------------------
# Errors and proportions
# ---------------------------------------------------------------------------


def scaled(row, method: str) -> tuple[float, float]:
    """(n × error, n × SE) of ``method`` ("ftp" or "ptf") in one setting (Figures 2, 5)."""
    if method not in ("ftp", "ptf"):
        raise ValueError(f"method must be 'ftp' or 'ptf', got {method!r}")
    n = float(row["n"])
    return n * float(row[f"err_{method}"]), n * float(row[f"se_{method}"])


def _est(x, se, name):
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x, check_nonnegative(se, f"se of {name}")


def exceeds(x: float, se_x: float, y: float, se_y: float, z: float = Z) -> bool:
    """x − y > z·sqrt(se_x² + se_y²): x is larger, beyond Monte Carlo error.

    For estimates from two different settings (independent streams).
    """
    x, se_x = _est(x, se_x, "x")
    y, se_y = _est(y, se_y, "y")
    return x - y > _z(z) * math.hypot(se_x, se_y)


def within(x: float, se_x: float, y: float, se_y: float = 0.0, z: float = Z) -> bool:
    """|x − y| ≤ z·sqrt(se_x² + se_y²): the two agree up to Monte Carlo error.

    With ``se_y = 0``, ``y`` is an exact value (e.g. a formula).
    """
    x, se_x = _est(x, se_x, "x")
    y, se_y = _est(y, se_y, "y")
    return abs(x - y) <= _z(z) * math.hypot(se_x, se_y)


# ---------------------------------------------------------------------------
# FTP and PTF on latent curves of one's choosing
# ---------------------------------------------------------------------------


def compare_on_curves(F, target, grid, space, *, radius: float, mu: float, sigma0: float,
                      reps: int, seed: int, key=(), chunk_bytes: int = 16 * 2**20) -> dict:
    """Monte Carlo comparison of FTP and PTF on fixed latent curves.

    Each repetition observes X = F + σ₀ε (eq. 2), then applies
    :func:`dpfda.ftp` (Algorithm 1) and :func:`dpfda.ptf` (Algorithm 2) to the
    same X and scores both releases against ``target`` — the paper's design
    (§5), run through the public pipelines rather than the engine's stages.

    Parameters
    ----------
    F : array (n, T)
        Latent curves on ``grid``.
    target : array (d,)
        Coordinates of the sample mean f̄ in ``space``'s geometry (θ̄ for
        ``LegendreSpace``; ``geometry.coef_from_values(f̄ on the grid)`` for a
        ``KernelSpace``).
    grid, space
        As for :func:`dpfda.ftp`.
    radius, mu, sigma0
        B', μ and σ₀.
    reps : int
        Repetitions (>= 2).
    seed : int, key : tuple of int
        Chunk j of repetitions draws from
        ``Generator(PCG64(SeedSequence(seed, spawn_key=key + (j,))))``: first the
        observation noise, then FTP's privacy noise, then PTF's.  Results are
        reproducible for a given ``chunk_bytes``.
    chunk_bytes : int
        Upper bound on the (chunk, n, T) observed-data array.

    Returns
    -------
    dict
        :func:`dpfda.engine.summarize` of the per-repetition errors
        (``err_ftp``, ``se_ftp``, ``err_ptf``, ``se_ptf``, ``ratio``,
        ``ratio_lo``, ``ratio_hi``, ``se_log_ratio``, activation rates) plus
        ``n``, ``reps`` and ``radius``.
    """
    from .engine import summarize
    from .pipelines import ftp_fit_mean, ftp_privatize, ptf

    F = np.asarray(F, dtype=float)
    if F.ndim != 2:
        raise ValueError(f"F must be a 2-D array (n, T) of latent curves, got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        raise ValueError("F contains NaN or inf")
    geom = space.at(grid)
    if F.shape[1] != geom.T:
        raise ValueError(f"F has {F.shape[1]} columns, expected T={geom.T} (the grid)")
    target = np.asarray(target, dtype=float)
    if target.shape != (geom.dim,):
        raise ValueError(f"target must have shape ({geom.dim},), got {target.shape}")
    radius = check_positive(radius, "radius")
    mu = check_positive(mu, "mu")
    sigma0 = check_nonnegative(sigma0, "sigma0")
    reps = check_int(reps, "reps", 2)
    seed = check_int(seed, "seed", 0)
    key = tuple(check_int(k, "key entries", 0) for k in key)
    chunk_bytes = check_int(chunk_bytes, "chunk_bytes", 1)
    n, T = F.shape
    size = max(1, chunk_bytes // (8 * n * T))
    parts = []
    for j, start in enumerate(range(0, reps, size)):
        c = min(size, reps - start)
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key + (j,))))
        X = F + sigma0 * rng.standard_normal((c, n, T)) if sigma0 > 0 else np.broadcast_to(F, (c, n, T))
        # FTP as dpfda.ftp runs it, stage by stage: the per-curve activity is a
        # simulation diagnostic that a release does not carry.
        mean_coef, active = ftp_fit_mean(X, geom, radius)
        a = ftp_privatize(mean_coef, geom, radius, mu, n, rng)
        b = ptf(X, grid, space, radius, mu, rng)
        parts.append({
            "err_ftp": a.error(target),
            "err_ptf": b.error(target),
            "ftp_any_active": active.any(axis=-1),
            "ftp_frac_active": active.mean(axis=-1),
            "ptf_active": b.active,
        })
    per_rep = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    out = summarize(per_rep)
    out.update({"n": n, "reps": reps, "radius": radius})
    return out
