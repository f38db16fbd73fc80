"""The law-level design of the claims matrix: the latent draws behind it and how many it needs.

:func:`simulate_draws` runs the paper's studies under each latent law with K
independent draws of the curves and keeps every draw's table; :func:`pool`
pools them (all of them, or the first few) with
:func:`dpfda.report.claims.pool_draws`.  :func:`pilot_needs` reads a pilot's
draws: per setting and statistic, the variance between draws, the variance of
one repetition within a draw, and the number of draws the matrix needs for the
first to be no larger than the second.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..maths.data import check_law
from ..simulation.store import run_studies
from ..simulation.studies import PAPER_N, STUDY_NAMES, paper_studies

__all__ = ["simulate_draws", "pool", "pilot_needs", "PILOT_STATISTICS"]

PILOT_STATISTICS = ("log ratio", "log FTP error", "log PTF error", "PTF activation")
"""The statistics :func:`pilot_needs` reads: those the claims' components are built from."""

_KEYS = ["T", "m", "mu", "sigma0", "radius_rule", "n"]


def simulate_draws(laws, *, reps_noiseless: int, reps_noisy: int, seed: int, draws: int, n_jobs=2, n=None,
                   studies=STUDY_NAMES) -> dict:
    """Every study of ``studies`` under each law, one table per latent draw: law → study → list.

    The K = ``draws`` seeds are :func:`dpfda.report.claims.draw_seeds`'s; each draw has
    ``reps_noiseless // K`` repetitions in a noiseless study and ``reps_noisy // K``
    in a noisy one.  Per draw, two :func:`dpfda.simulation.store.run_studies` calls
    cover every law: the noiseless studies and the noisy ones (settings they share
    are simulated once).  ``n`` narrows the grid of sample sizes.
    """
    from . import claims as cl  # here: claims imports this module

    laws = [check_law(law) for law in ([laws] if isinstance(laws, str) else laws)]
    if not laws:
        raise ValueError("laws must name at least one law of dpfda.maths.data.LAWS")
    studies = [studies] if isinstance(studies, str) else list(studies)
    if not studies or any(k not in STUDY_NAMES for k in studies):
        raise ValueError(f"studies must name studies of {', '.join(STUDY_NAMES)}; got {studies}")
    draws = int(draws)
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    per = {"quiet": int(reps_noiseless) // draws, "noisy": int(reps_noisy) // draws}
    if min(per.values()) < 2:
        raise ValueError(f"each of the {draws} draws needs at least 2 repetitions; got {per}")
    tag = {law: law.replace("-", "_").replace(".", "p") for law in laws}
    groups: dict = {"quiet": [], "noisy": []}
    for law in laws:
        grid = paper_studies(PAPER_N if n is None else n, law)
        for k in studies:
            st = replace(grid[k], name=f"{k}__{tag[law]}")
            groups["quiet" if k in cl.NOISELESS_STUDIES else "noisy"].append((law, k, st))
    runs: dict = {law: {k: [] for k in studies} for law in laws}
    for s in cl.draw_seeds(seed, draws):
        for g, items in groups.items():
            if not items:
                continue
            res = run_studies([st for _, _, st in items], per[g], s, n_jobs=n_jobs)
            for law, k, st in items:
                runs[law][k].append(res[st.name].assign(study=k))
    return runs


def pool(draw_tables: dict, first: int | None = None) -> dict:
    """Law-level tables from :func:`simulate_draws`' output: law → study → pooled table.

    ``first`` pools only the first draws of each list (at least two); one draw
    is returned as it is (the conditional design).
    """
    from . import claims as cl  # here: claims imports this module

    if first is not None and int(first) < 2:
        raise ValueError(f"first must be None or >= 2, got {first}")
    out: dict = {}
    for law, tables in draw_tables.items():
        out[law] = {}
        for k, ts in tables.items():
            ts = list(ts)[:first] if first is not None else list(ts)
            if first is not None and len(ts) < int(first):
                raise ValueError(f"{law}/{k} has {len(ts)} draws, fewer than first={first}")
            out[law][k] = ts[0] if len(ts) == 1 else cl.pool_draws(ts)
    return out


def _estimates(d: pd.DataFrame, statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """One draw's estimate of ``statistic`` per setting and its within-draw standard error."""
    if statistic == "log ratio":
        return np.log(d["ratio"].to_numpy(float)), d["se_log_ratio"].to_numpy(float)
    if statistic in ("log FTP error", "log PTF error"):
        e, s = ("err_ftp", "se_ftp") if "FTP" in statistic else ("err_ptf", "se_ptf")
        err = d[e].to_numpy(float)
        return np.log(err), d[s].to_numpy(float) / err
    return d["p_ptf_active"].to_numpy(float), d["se_p_ptf_active"].to_numpy(float)


def pilot_needs(draws_by_study: dict, *, reps_noiseless: int, reps_noisy: int) -> pd.DataFrame:
    """Per setting and statistic, how many latent draws the matrix needs, from a pilot.

    ``draws_by_study`` maps study → list of K ≥ 3 tables of one law, one per latent
    draw (one law of :func:`simulate_draws`' output).  For each setting and each
    statistic of :data:`PILOT_STATISTICS`, with x_k the draw's estimate and s_k its
    within-draw standard error from R_p repetitions:

    * ``between`` = max(var_k x_k − mean_k s_k², 0), the variance between draws
      (method of moments);
    * ``within`` = R_p · mean_k s_k², the variance of one repetition;
    * ``reps``: the matrix's repetitions for the study (``reps_noiseless`` or
      ``reps_noisy``), and ``need`` = ⌈reps · between / within⌉, the number of draws
      K for which the between part of a law-level estimate's variance,
      between/K, is no larger than the within part, within/reps.

    A statistic with no within-draw variance (an activation share of 0 or 1 in
    every draw) has ``need`` 0 when it does not move between draws either.
    """
    from . import claims as cl  # here: claims imports this module

    if not hasattr(draws_by_study, "items") or not draws_by_study:
        raise TypeError("draws_by_study must be a non-empty mapping study -> list of draw tables")
    if int(reps_noiseless) < 1 or int(reps_noisy) < 1:
        raise ValueError(f"reps_noiseless and reps_noisy must be >= 1, got {reps_noiseless}, {reps_noisy}")
    rows = []
    for study, tables in draws_by_study.items():
        tables = list(tables)
        if len(tables) < 3:
            raise ValueError(f"{study}: a pilot needs at least three draws, got {len(tables)}")
        r_p = {int(d["reps"].iloc[0]) for d in tables}
        if len(r_p) != 1:
            raise ValueError(f"{study}: the draws must have equal repetitions, got {sorted(r_p)}")
        reps = int(reps_noiseless) if study in cl.NOISELESS_STUDIES else int(reps_noisy)
        keys = tables[0][[c for c in _KEYS if c in tables[0].columns]].reset_index(drop=True)
        for stat in PILOT_STATISTICS:
            x, s = map(np.stack, zip(*(_estimates(d, stat) for d in tables)))
            se2 = np.mean(s**2, axis=0)
            between = np.maximum(x.var(axis=0, ddof=1) - se2, 0.0)
            within = se2 * next(iter(r_p))
            with np.errstate(divide="ignore", invalid="ignore"):
                need = np.where(between > 0, np.ceil(reps * between / within), 0.0)
            rows.append(keys.assign(study=study, statistic=stat, between=between, within=within, reps=reps,
                                    need=need))
    out = pd.concat(rows, ignore_index=True)
    return out[["study", *keys.columns, "statistic", "between", "within", "reps", "need"]]
