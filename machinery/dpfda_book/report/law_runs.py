"""The claims under every latent law: the studies run with K latent draws, pooled.

Two designs, two questions
--------------------------
*Conditional* (the paper's, and the figures'): one draw of the latent curves
per setting, held fixed over the repetitions; standard errors are Monte Carlo
errors given that draw.  :func:`~dpfda_book.report.claim_verdicts.judge` on a chapter's
table answers "does the claim hold for these curves?".

*Law-level* (the matrix): :func:`simulate_draws` runs each law with K independent
latent draws (each with its own repetitions), and :func:`pool` pools them
(:func:`pool_draws`): estimates are pooled means, and standard errors are
computed across the draws (cluster-robust, so they include the between-draw
variability, never below the within-draw part).  That answers "does the claim
hold for this law?".  A component that reads several settings takes its standard
error across the draws as a whole (settings with the same n share their curves
within a draw: :func:`~dpfda_book.report.law_components.components_from_draws`); such a
standard error rests on K − 1 degrees of freedom where the between-draw part
dominates, so the matrix refers its components to Student's t on K − 1 df
(Hartung–Knapp–Sidik–Jonkman).  :func:`law_level_null_size` gives the true level of
one such test at one threshold when a draw's statistic is normal; the whole
procedure is tested in :mod:`dpfda_book.report.law_null`.  A pilot
(:func:`pilot_needs`) measures, setting by setting, how many draws the between-draw
variance would call for; :func:`simulate_draws` keeps every draw's table and
:func:`pool` pools all of them or only the first few.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import pandas as pd

from ..simulation.models import LAWS, check_law
from ..simulation.store import run_studies
from ..simulation.studies import PAPER_N, STUDY_NAMES, paper_studies
from . import evidence as ev
from .claim_encodings import p_ptf_and_se

__all__ = [
    "NOISELESS_STUDIES",
    "draw_seeds",
    "pool_draws",
    "simulate",
    "draws_from_pilot",
    "law_level_null_size",
    "activation_by_share",
    "simulate_draws",
    "pool",
    "pilot_needs",
    "PILOT_STATISTICS",
]

NOISELESS_STUDIES = ("fig1", "table1", "fig4")
"""The studies without observation noise (only privacy noise is drawn, so they are cheap)."""

_SETTING_COLUMNS = ["study", "source", "family", "T", "m", "n", "mu", "sigma0", "B", "radius_rule", "radius", "rho",
           "kernel", "centers", "law", "metric"]


def draw_seeds(seed: int, draws: int) -> list[int]:
    """K independent seeds for K latent draws, spawned from ``SeedSequence(seed)``.

    ``draws = 1`` gives ``[seed]`` itself: the conditional design of the chapters.
    """
    seed, draws = int(seed), int(draws)
    if seed < 0 or draws < 1:
        raise ValueError(f"seed must be >= 0 and draws >= 1, got seed={seed}, draws={draws}")
    if draws == 1:
        return [seed]
    return [int(c.generate_state(1, np.uint32)[0]) for c in np.random.SeedSequence(seed).spawn(draws)]


def pool_draws(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """One law-level results table from K tables of the same study, one per latent draw.

    Each draw has its own latent curves and its own R repetitions (equal R).
    Per setting, with a_k, b_k the draw means of FTP's and PTF's errors and
    p_k the draw's activation share:

    * ``err_*`` = mean_k of the draw means, ``se_*`` = sd_k / √K;
    * ``ratio`` = mean_k a_k / mean_k b_k, ``se_log_ratio`` = sd_k(a_k/ā − b_k/b̄) / √K
      (the delta method with the draws as clusters);
    * ``p_ptf_active`` = mean_k p_k, ``se_p_ptf_active`` = sd_k / √K;

    each standard error is floored at its within-draw part, √(mean_k se_k²/K),
    so a chance agreement of few draws cannot make it smaller than the Monte
    Carlo error alone.  These standard errors include the variability between
    latent draws (column ``draws`` = K; where the between-draw part dominates, the
    standard error rests on K − 1 degrees of freedom, and ``ratio_lo``, ``ratio_hi``
    form a 95 % interval with Student's t on K − 1 df).
    ``reps`` is the total K·R.
    """
    tables = list(tables)
    if len(tables) < 2:
        raise ValueError(f"pool_draws needs at least two draws, got {len(tables)}")
    for d in tables:
        if not isinstance(d, pd.DataFrame):
            raise TypeError(f"each draw must be a results DataFrame, got {type(d).__name__}")
    K = len(tables)
    R = {int(d["reps"].iloc[0]) for d in tables}
    if len(R) != 1:
        raise ValueError(f"the draws must have equal repetitions, got {sorted(R)}")
    keys = [c for c in _SETTING_COLUMNS if c in tables[0].columns]
    base = tables[0][keys].reset_index(drop=True)
    for d in tables[1:]:
        if not d[keys].reset_index(drop=True).equals(base):
            raise ValueError("the draws must hold the same settings in the same order")
    stack = {c: np.stack([d[c].to_numpy(float) for d in tables]) for c in
             ("err_ftp", "se_ftp", "err_ptf", "se_ptf", "se_log_ratio", "p_ftp_active", "p_ftp_active_curves",
              "p_ptf_active", "se_p_ptf_active", "se_p_ftp_active")}

    def se(x: np.ndarray, within: np.ndarray) -> np.ndarray:
        return np.maximum(x.std(axis=0, ddof=1), np.sqrt(np.mean(within**2, axis=0))) / math.sqrt(K)

    out = base.copy()
    a, b = stack["err_ftp"], stack["err_ptf"]
    A, Bm = a.mean(axis=0), b.mean(axis=0)
    out["reps"] = K * R.pop()
    out["seed"] = int(tables[0]["seed"].iloc[0])
    out["err_ftp"], out["se_ftp"] = A, se(a, stack["se_ftp"])
    out["err_ptf"], out["se_ptf"] = Bm, se(b, stack["se_ptf"])
    out["ratio"] = A / Bm
    u = a / A - b / Bm
    out["se_log_ratio"] = se(u, stack["se_log_ratio"])
    from scipy.stats import t as student_t  # here: `reproduce` draws its figures without scipy

    q = float(student_t.ppf(0.975, K - 1))  # a 95 % interval on the K - 1 df of the spread across draws
    out["ratio_lo"] = out["ratio"] * np.exp(-q * out["se_log_ratio"])
    out["ratio_hi"] = out["ratio"] * np.exp(q * out["se_log_ratio"])
    for c in ("p_ftp_active", "p_ptf_active"):
        out[c] = stack[c].mean(axis=0)
        out[f"se_{c}"] = se(stack[c], stack[f"se_{c}"])
    out["p_ftp_active_curves"] = stack["p_ftp_active_curves"].mean(axis=0)
    out["draws"] = K
    return out


def simulate(laws: str | Iterable[str] = LAWS, *, reps_noiseless: int, reps_noisy: int, seed: int, draws: int = 1,
             n_jobs: int | None = 2, n: Iterable[int] | None = None) -> dict:
    """All seven studies of the paper under each law: law → (study → results table).

    ``draws = 1``: one latent draw per setting (the paper's conditional design),
    seed ``seed``.  ``draws = K > 1``: K independent latent draws
    (:func:`draw_seeds`), the repetitions split evenly between them
    (``reps_noiseless // K`` and ``reps_noisy // K`` each), pooled by
    :func:`pool_draws` into law-level tables.  Per draw, two
    :func:`dpfda_book.simulation.store.run_studies` calls
    (:func:`dpfda_book.simulation.schedule.run_studies`, through the results store when one is
    on) cover every law: the noiseless
    studies (:data:`NOISELESS_STUDIES`; Figure 1 and Table 1 share their
    settings, simulated once) and the noisy ones.  ``n`` narrows the grid of
    sample sizes.
    """
    runs = simulate_draws(laws, reps_noiseless=reps_noiseless, reps_noisy=reps_noisy, seed=seed, draws=draws,
                          n_jobs=n_jobs, n=n)
    return pool(runs)


def draws_from_pilot(between_var: float, within_var_per_rep: float, reps: int, *, k_min: int = 5,
                     k_max: int = 20) -> int:
    """How many latent draws K to split ``reps`` repetitions over, from a pilot's variance components.

    With K draws of R/K repetitions, the variance of a law-level estimate is
    σ_b²/K + σ_w²/R (σ_b²: between draws; σ_w²: one repetition).  K is the
    smallest number, at least ``k_min``, for which the between-draw part is no
    larger than the within part (K ≥ R σ_b²/σ_w²), capped at ``k_max`` (the
    budget: each draw refits its curves).
    """
    if not (between_var >= 0 and within_var_per_rep > 0 and reps >= 1):
        raise ValueError("between_var must be >= 0, within_var_per_rep > 0 and reps >= 1")
    need = math.ceil(reps * between_var / within_var_per_rep)
    return int(min(k_max, max(k_min, need)))


def law_level_null_size(alpha: float, draws: int, rho: float, *, reference: str, reps: int | None = None,
                        rng: np.random.Generator | None = None) -> tuple[float, float]:
    """The true rejection rate of a law-level test of nominal two-sided level ``alpha`` under its null.

    Under the null a pooled component is z = N / max(√(χ²_{K−1}/(K−1)), √ρ)
    (:func:`pool_draws`: the standard error across K = ``draws`` draws, floored at
    its within-draw part; ρ = ``rho`` is the within share of a draw mean's
    variance, the within part taken as known).  The test rejects when abs(z)
    exceeds the ``reference``'s critical value: the normal's, or Student's t on
    K − 1 df.  Without ``reps`` the rate is computed by quadrature over χ²_{K−1};
    with ``reps`` it is simulated (``rng`` a numpy Generator) and the second value
    is its Monte Carlo standard error (0 for the quadrature).
    """
    from scipy import integrate, stats  # here: `reproduce` draws its figures without scipy

    alpha, draws, rho = float(alpha), int(draws), float(rho)
    if not 0 < alpha < 1 or draws < 2 or not 0 <= rho <= 1:
        raise ValueError(f"need 0 < alpha < 1, draws >= 2 and 0 <= rho <= 1; got {alpha}, {draws}, {rho}")
    if reference not in ("normal", "t"):
        raise ValueError(f"reference must be 'normal' or 't', got {reference!r}")
    dof = draws - 1
    crit = stats.norm.isf(alpha / 2) if reference == "normal" else stats.t.isf(alpha / 2, dof)
    if reps is None:
        def rate_at(c2: float) -> float:
            return 2 * stats.norm.sf(crit * max(math.sqrt(c2 / dof), math.sqrt(rho))) * stats.chi2.pdf(c2, dof)
        lo = rho * dof  # below it the floor decides and the integrand's kink sits there
        val = integrate.quad(rate_at, 0, lo, limit=200)[0] if lo > 0 else 0.0
        val += integrate.quad(rate_at, lo, np.inf, limit=200)[0]
        return float(val), 0.0
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator when reps is given")
    reps = int(reps)
    z = rng.standard_normal(reps) / np.maximum(np.sqrt(rng.chisquare(dof, reps) / dof), math.sqrt(rho))
    hit = np.abs(z) > crit
    rate = float(hit.mean())
    return rate, math.sqrt(max(rate * (1 - rate), 1.0 / reps) / reps)


def activation_by_share(results: dict, *, T: int = 8, n: int = 1024, mu: float = 0.1) -> pd.DataFrame:
    """p̂_PTF of Table 1's setting (T, n, μ) under each law, with its standard error.

    Columns ``law``, ``shape`` (default, shift, wave), ``S`` (NaN for the
    default law), ``p``, ``se`` (Agresti–Coull, or across latent draws if larger), ``reps``.
    """
    rows = []
    for law, tables in results.items():
        check_law(law)
        if "table1" not in tables:
            raise ValueError(f"results[{law!r}] lacks the study 'table1'")
        df = tables["table1"]
        row = ev.one(df, T=T, n=n, mu=mu)
        shape, S = ("default", np.nan) if law == "default" else (law.split("-")[0], float(law.split("-")[1]))
        p, se = p_ptf_and_se(row)
        rows.append({"law": law, "shape": shape, "S": S, "p": p, "se": se, "reps": int(row["reps"])})
    return pd.DataFrame(rows)


PILOT_STATISTICS = ("log ratio", "log FTP error", "log PTF error", "PTF activation")
"""The statistics :func:`pilot_needs` reads: those the claims' components are built from."""

_KEYS = ["T", "m", "mu", "sigma0", "radius_rule", "n"]


def simulate_draws(laws: str | Iterable[str], *, reps_noiseless: int, reps_noisy: int, seed: int, draws: int,
                   n_jobs: int | None = 2, n: Iterable[int] | None = None,
                   studies: str | Iterable[str] = STUDY_NAMES) -> dict:
    """Every study of ``studies`` under each law, one table per latent draw: law → study → list.

    The K = ``draws`` seeds are :func:`draw_seeds`'s; each draw has
    ``reps_noiseless // K`` repetitions in a noiseless study and ``reps_noisy // K``
    in a noisy one.  Per draw, two :func:`dpfda_book.simulation.store.run_studies` calls
    cover every law: the noiseless studies and the noisy ones (settings they share
    are simulated once).  ``n`` narrows the grid of sample sizes.
    """
    laws = [check_law(law) for law in ([laws] if isinstance(laws, str) else laws)]
    if not laws:
        raise ValueError("laws must name at least one law of dpfda_book.simulation.models.LAWS")
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
            groups["quiet" if k in NOISELESS_STUDIES else "noisy"].append((law, k, st))
    runs: dict = {law: {k: [] for k in studies} for law in laws}
    for s in draw_seeds(seed, draws):
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
    if first is not None and int(first) < 2:
        raise ValueError(f"first must be None or >= 2, got {first}")
    out: dict = {}
    for law, tables in draw_tables.items():
        out[law] = {}
        for k, ts in tables.items():
            ts = list(ts)[:first] if first is not None else list(ts)
            if first is not None and len(ts) < int(first):
                raise ValueError(f"{law}/{k} has {len(ts)} draws, fewer than first={first}")
            out[law][k] = ts[0] if len(ts) == 1 else pool_draws(ts)
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
        reps = int(reps_noiseless) if study in NOISELESS_STUDIES else int(reps_noisy)
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
