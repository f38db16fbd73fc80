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

__all__ = ["fig6_table", "results_table", "verdict"]


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
