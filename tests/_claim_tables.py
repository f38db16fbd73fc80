"""Synthetic results tables for the tests of the claims (tests/test_claim_*.py, test_law_runs.py).

Tables with the columns of run_studies for one of the paper's studies, whose ratios,
errors and activation shares a test chooses, and the verdict of one claim on them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpfda_book.report import claim_verdicts as cv
from dpfda_book.simulation.studies import get_study
from dpfda_book.simulation.tabulate import RESULT_COLUMNS

__all__ = ["STUDIES", "fig6_table", "random_draw", "random_draws", "results_table", "verdict"]

STUDIES = ("fig1", "table1", "fig2", "fig3", "fig4", "fig5", "fig6")


def results_table(study_name: str, ratio, p=0.0, se=0.01, err=1.0, err_se=0.001, reps=1000, law="default",
                  err_ptf=None):
    """A results table with the columns of run_studies for one of the paper's studies;
    ``ratio``, ``p``, ``err`` and ``err_ptf`` (default: ``err``) are functions of a row's
    parameters (or constants)."""
    study = get_study(study_name, law=law)
    rows = []
    call = lambda f, s: f(s) if callable(f) else f  # noqa: E731
    for s in study.settings:
        row = dict.fromkeys(RESULT_COLUMNS, np.nan)
        row.update(s.params())
        r = call(ratio, s)
        row.update(study=study_name, reps=reps, seed=0, ratio=r, se_log_ratio=se,
                   ratio_lo=r * math.exp(-1.96 * se), ratio_hi=r * math.exp(1.96 * se),
                   err_ftp=call(err, s), se_ftp=err_se, err_ptf=call(err if err_ptf is None else err_ptf, s),
                   se_ptf=err_se,
                   p_ptf_active=call(p, s), p_ftp_active=0.0)
        rows.append(row)
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def fig6_table(end_ratio):
    """Figure 6 with σ₀ = 10 ratios at n = 4096 given by end_ratio(m); 1 elsewhere."""
    return results_table("fig6", lambda s: end_ratio(s.m) if (s.sigma0 == 10.0 and s.n == 4096) else 1.0)


def verdict(claim_id, tables, law="default", **kw):
    """The verdict of one claim on one law's ``tables`` (Holm over the claim's components)."""
    comp = cv.components_table({law: tables}, claims=[claim_id])
    return cv.verdicts(comp, **kw)["verdict"].iloc[0]


_BASE: dict = {}


def random_draw(name, rng, law="default", shared=None, reps=50):
    """One draw's table of study ``name``: random errors and shares; ``shared`` (n -> factor) multiplies
    every setting's PTF activation share and FTP error at that n, as latent curves shared by the
    settings with the same n would."""
    if (name, law, reps) not in _BASE:
        _BASE[name, law, reps] = results_table(name, 1.0, law=law, reps=reps)
    t = _BASE[name, law, reps].copy()
    k = len(t)
    shared = shared or {}
    f = np.array([shared.get(int(n), 1.0) for n in t["n"]])
    t["err_ftp"] = np.exp(rng.normal(-3, 0.3, k)) * f
    t["err_ptf"] = np.exp(rng.normal(-3, 0.3, k))
    t["ratio"] = t["err_ftp"] / t["err_ptf"]
    t["se_ftp"], t["se_ptf"] = rng.uniform(1e-4, 1e-3, k), rng.uniform(1e-4, 1e-3, k)
    t["se_log_ratio"] = rng.uniform(1e-3, 1e-2, k)
    t["p_ptf_active"] = np.clip(rng.uniform(0.2, 0.4, k) * f, 0, 1)
    t["se_p_ptf_active"] = rng.uniform(1e-3, 1e-2, k)
    for c in ("p_ftp_active", "se_p_ftp_active", "p_ftp_active_curves"):
        t[c] = 0.0
    return t


def random_draws(rng, K, laws=("default",), shared_sd=0.0):
    """K draws of every study under each law (law -> study -> K tables), as simulate_draws gives;
    in each draw the settings of one n share a latent factor exp(N(0, shared_sd²))."""
    out = {law: {s: [] for s in STUDIES} for law in laws}
    for _ in range(K):
        shared = {2**k: float(np.exp(rng.normal(0, shared_sd))) for k in range(2, 13)}
        for law in laws:
            for s in STUDIES:
                out[law][s].append(random_draw(s, rng, law, shared))
    return out
