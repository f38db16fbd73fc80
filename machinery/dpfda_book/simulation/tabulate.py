"""Tabulating simulations: Monte Carlo means, standard errors, ratios and metadata.

With per-repetition errors F_r (FTP) and P_r (PTF), r = 1…R, a row of the
results table gives the means, their standard errors sd/√R, and the ratio
F̄/P̄ with a 95% confidence interval from the delta method on the log ratio,
log(F̄/P̄) ± 1.96·sd(F_r/F̄ - P_r/P̄)/√R, which accounts for the correlation
of the two errors (both pipelines see the same data in each repetition).
Activation probabilities are proportions, with the standard error of
:func:`dpfda_book.montecarlo.proportion_se` (the one the book uses everywhere).
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from dpfda import __version__

from ..montecarlo import Z95, proportion_se
from .studies import Study

if TYPE_CHECKING:
    import pandas as pd

    from dpfda.maths.spaces import GridGeometry

__all__ = [
    "CI_METHOD",
    "RESULT_COLUMNS",
    "concat_chunks",
    "summarize",
    "summarize_many",
    "frame",
    "metadata",
    "bias_variance",
]

CI_METHOD = (
    "95% CI for the ratio of Monte Carlo means FTP/PTF by the delta method on the log ratio, "
    "log(F/P) +- 1.96 * sd(F_r/F - P_r/P)/sqrt(R), using the paired per-repetition errors "
    "(both pipelines see the same data in each repetition)"
)

RESULT_COLUMNS = [
    "study", "source", "family", "T", "m", "n", "mu", "sigma0", "B", "radius_rule", "radius",
    "rho", "kernel", "centers", "law", "reps", "seed", "metric",
    "err_ftp", "se_ftp", "err_ptf", "se_ptf",
    "ratio", "ratio_lo", "ratio_hi", "se_log_ratio",
    "p_ftp_active", "se_p_ftp_active", "p_ftp_active_curves",
    "p_ptf_active", "se_p_ptf_active",
]
"""Columns of the results table, in order (one row per setting)."""


def concat_chunks(parts: list[dict]) -> dict:
    """Join the per-repetition arrays of consecutive chunks (dicts of arrays with the same keys)."""
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def summarize(per_rep: dict) -> dict:
    """Monte Carlo means, standard errors, ratio CI and activation rates (module notes)."""
    F = np.asarray(per_rep["err_ftp"], dtype=float)
    P = np.asarray(per_rep["err_ptf"], dtype=float)
    R = F.size
    if R < 2:
        raise ValueError("need at least 2 repetitions for standard errors")
    mF, mP = F.mean(), P.mean()
    sq = math.sqrt(R)
    ratio = mF / mP
    se_log = float(np.std(F / mF - P / mP, ddof=1)) / sq
    p_any = float(np.mean(per_rep["ftp_any_active"]))
    p_ptf = float(np.mean(per_rep["ptf_active"]))
    return {
        "err_ftp": float(mF),
        "se_ftp": float(np.std(F, ddof=1)) / sq,
        "err_ptf": float(mP),
        "se_ptf": float(np.std(P, ddof=1)) / sq,
        "ratio": float(ratio),
        "ratio_lo": float(ratio * math.exp(-Z95 * se_log)),
        "ratio_hi": float(ratio * math.exp(Z95 * se_log)),
        "se_log_ratio": se_log,
        "p_ftp_active": p_any,
        "se_p_ftp_active": proportion_se(p_any, R),
        "p_ftp_active_curves": float(np.mean(per_rep["ftp_frac_active"])),
        "p_ptf_active": p_ptf,
        "se_p_ptf_active": proportion_se(p_ptf, R),
    }


def summarize_many(per_rep: list[dict]) -> dict[str, np.ndarray]:
    """:func:`summarize` of several settings with the same number of repetitions, as columns.

    The same arithmetic, row by row: every mean and standard deviation is numpy's reduction
    along one row of a stacked (settings, R) array, which sums a row as it sums the row alone
    (pairwise, in the same order), and each interval's exp is ``math.exp``'s, so every
    value is bit for bit :func:`summarize`'s (``tests/test_tabulate.py`` checks it).
    """
    R = {int(np.asarray(p["err_ftp"]).size) for p in per_rep}
    if len(R) != 1:
        raise ValueError(f"summarize_many needs the same number of repetitions for every setting, got {sorted(R)}")
    reps = R.pop()
    if reps < 2:
        raise ValueError("need at least 2 repetitions for standard errors")
    F = np.stack([np.asarray(p["err_ftp"], dtype=float) for p in per_rep])
    P = np.stack([np.asarray(p["err_ptf"], dtype=float) for p in per_rep])
    mF, mP = F.mean(axis=1), P.mean(axis=1)
    sq = math.sqrt(reps)
    ratio = mF / mP
    se_log = np.std(F / mF[:, None] - P / mP[:, None], axis=1, ddof=1) / sq
    p_any = np.stack([np.asarray(p["ftp_any_active"]) for p in per_rep]).mean(axis=1)
    p_ptf = np.stack([np.asarray(p["ptf_active"]) for p in per_rep]).mean(axis=1)
    return {
        "err_ftp": mF,
        "se_ftp": np.std(F, axis=1, ddof=1) / sq,
        "err_ptf": mP,
        "se_ptf": np.std(P, axis=1, ddof=1) / sq,
        "ratio": ratio,
        "ratio_lo": np.array([r * math.exp(-Z95 * s) for r, s in zip(ratio.tolist(), se_log.tolist())]),
        "ratio_hi": np.array([r * math.exp(Z95 * s) for r, s in zip(ratio.tolist(), se_log.tolist())]),
        "se_log_ratio": se_log,
        "p_ftp_active": p_any,
        "se_p_ftp_active": np.asarray(proportion_se(p_any, reps)),
        "p_ftp_active_curves": np.stack([np.asarray(p["ftp_frac_active"], dtype=float)
                                         for p in per_rep]).mean(axis=1),
        "p_ptf_active": p_ptf,
        "se_p_ptf_active": np.asarray(proportion_se(p_ptf, reps)),
    }


def frame(study: Study, per_setting: dict, reps: int, seed: int, started: str) -> "pd.DataFrame":
    """The results table of ``study`` from its settings' per-repetition arrays (keyed by canonical text)."""
    import pandas as pd  # here, not at the top: worker processes never need it

    params = [s.params() for s in study.settings]
    df = pd.DataFrame({"study": study.name, "source": study.source,
                       **{k: [p[k] for p in params] for k in params[0]}, "reps": reps, "seed": seed},
                      index=range(len(params)))
    for k, v in summarize_many([per_setting[s.canonical()] for s in study.settings]).items():
        df[k] = v
    df["m"] = df["m"].astype("Int64")
    df["centers"] = df["centers"].astype("Int64")
    df = df[RESULT_COLUMNS]
    df.attrs["dpfda"] = metadata(study, reps, seed, started=started)
    return df


def metadata(study: Study, reps: int, seed: int, *, started: str | None = None) -> dict:
    """What a caption or a sidecar file needs to say about a run."""
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return {
        "study": study.name,
        "title": study.title,
        "source": study.source,
        "reps": int(reps),
        "seed": int(seed),
        "settings": len(study.settings),
        "laws": sorted({s.law for s in study.settings}),
        "dpfda_version": __version__,
        "numpy_version": np.__version__,
        "ci_method": CI_METHOD,
        "streams": "numpy PCG64 per repetition, seeded by SeedSequence(seed, spawn_key=SHA-256 words "
                   "of the setting + (rep,)); latent curves from SeedSequence(seed, spawn_key=SHA-256 "
                   "words of the latent setting)",
        "started": started or now,
        "finished": now,
    }


def bias_variance(coef: ArrayLike, target: ArrayLike, geometry: GridGeometry) -> dict:
    """Squared bias and variance of repeated releases, with per-repetition influence values.

    ``coef`` (R, d) holds the coordinates of R releases of one setting (e.g. the
    ``coef_ftp`` of :func:`dpfda_book.simulation.engine.simulate_setting` with ``keep_releases=True``), ``target``
    (d,) the truth, in the error metric of ``geometry`` (IMSE of H_m, grid MSE of an
    RKHS).  Returns ``bias2`` (the squared bias, corrected for the Monte Carlo error of
    the mean release), ``var`` (the mean squared distance of a release from the mean
    release) and their first-order influence values ``bias2_if``/``var_if`` (R,), whose
    standard deviation over √R is each estimate's standard error.  Influence values of
    two pipelines run on the same data pair up repetition by repetition, so the
    standard error of a difference is that of the difference of the influence values.
    """
    coef = np.asarray(coef, dtype=float)
    target = np.asarray(target, dtype=float)
    if coef.ndim != 2 or coef.shape[1] != geometry.dim or coef.shape[0] < 2:
        raise ValueError(f"coef must be (R, {geometry.dim}) with R >= 2, got shape {coef.shape}")
    if target.shape != (geometry.dim,):
        raise ValueError(f"target must have shape ({geometry.dim},), got {target.shape}")
    if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(target))):
        raise ValueError("coef and target must be finite")
    R = coef.shape[0]
    Q = (np.eye(geometry.dim) if geometry.metric == "IMSE"
         else geometry.Phi.T @ geometry.Phi / geometry.T)
    centre = coef.mean(axis=0)
    dev = coef - centre
    spread = np.einsum("ij,jk,ik->i", dev, Q, dev)  # squared distance to the mean release
    var = float(spread.mean())
    b = centre - target
    bias2 = float(b @ Q @ b) - var / (R - 1)
    return {"bias2": bias2, "var": var, "bias2_if": 2 * dev @ (Q @ b), "var_if": spread - var,
            "reps": R}
