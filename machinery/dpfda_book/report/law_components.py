"""The matrix's components from the per-draw tables, each standard error taken draw by draw.

Why not pool each setting first
-------------------------------
Every component of a claim is a linear form in per-setting statistics
(:class:`~dpfda_book.report.claim_encodings.Form`): a log ratio minus a constant, a difference of
two log ratios, a sum of log ratios over n, n times an error, a sum of activation shares over
T.  On one draw of the latent curves the settings draw independent noise, so the form's
standard error is the root-sum-square of its terms' (what
:func:`~dpfda_book.report.claim_verdicts.components_table` computes on a chapter's tables).  Over
K draws it is not: settings with the same latent key (the same n, and the same m in H_m, any
T, μ, σ₀ or B') share their curves within a draw, so their statistics move together from one
draw to the next, and the spread of a sum over T of four of them is not the root-sum-square of
four separately pooled errors — larger when they move together (a sum), smaller when they cancel
(a difference between two T at the same n).

Here each component is computed in every draw: with a_k, b_k the draw means of FTP's and
PTF's errors of a setting and Ā, B̄ their means over the K draws, a term's *influence value*
in draw k is its statistic's delta-method linearisation — a_k/Ā − b_k/B̄ for a log ratio,
a_k − Ā for an error, a_k/Ā − 1 for a log error, p_k − p̄ for an activation share — and a
component's is the same linear combination of its terms' (:class:`LawForms`).  Its standard
error is the standard deviation of those K values over √K (the draws are the clusters; the
estimate is the form at the pooled statistics, as on the pooled tables of
:func:`~dpfda_book.report.law_runs.pool_draws`), floored at the part the within-draw Monte Carlo
errors alone give, √(Σ a_j² w_j) with w_j the mean over draws of term j's squared
within-draw error over K (for an activation share at least the Agresti–Coull variance of
all K·R repetitions, as ``claim_encodings.p_ptf_and_se``).  For a
component of one setting this is :func:`~dpfda_book.report.law_runs.pool_draws`' standard error.
``errors="root-sum-square"`` gives instead what combining the pooled tables' errors gives
(each term's pooled, floored error, combined as if independent): the earlier design, kept
for comparison.

The computation is vectorised over the whole matrix (every claim under every law) and over
leading axes of the per-draw statistics, so that the test of the test
(:mod:`dpfda_book.report.law_null`) can run the same code on thousands of replicated matrices.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..simulation.models import check_law
from .claim_encodings import STATISTICS
from .claim_registry import CLAIMS, Claim, claim_components, get_claim

__all__ = [
    "ERRORS",
    "DrawStats",
    "LawForms",
    "draw_stats",
    "compile_forms",
    "restrict",
    "evaluate",
    "p_values",
    "components_from_draws",
]

ERRORS = ("paired", "root-sum-square")
"""How :func:`evaluate` takes a component's standard error over K draws (module notes)."""

_COLUMNS = {"a": "err_ftp", "sa": "se_ftp", "b": "err_ptf", "sb": "se_ptf", "slr": "se_log_ratio",
            "p": "p_ptf_active", "sp": "se_p_ptf_active"}
_READ = [*_COLUMNS.values(), "reps"]  # the columns draw_stats reads, in one conversion a table
_KEYS = ["n", "T", "mu", "sigma0", "radius"]  # settings of the same draws must agree in these


@dataclass(frozen=True)
class DrawStats:
    """Per-draw statistics of every row of a matrix, arrays (..., K, S): K draws, S rows.

    ``a``, ``b``: the draw means of FTP's and PTF's errors; ``sa``, ``sb``: their
    within-draw standard errors; ``slr``: that of the draw's log ratio; ``p``, ``sp``: PTF's
    activation share and its standard error; ``reps``: repetitions per draw.  Leading axes
    (``...``) hold replicated matrices (:mod:`dpfda_book.report.law_null`).
    """

    a: np.ndarray
    sa: np.ndarray
    b: np.ndarray
    sb: np.ndarray
    slr: np.ndarray
    p: np.ndarray
    sp: np.ndarray
    reps: np.ndarray  # (S,)

    @property
    def draws(self) -> int:
        """K, the number of draws."""
        return int(self.a.shape[-2])

    def first(self, k: int) -> "DrawStats":
        """The first ``k`` draws (k ≥ 2)."""
        if isinstance(k, bool) or int(k) < 2 or int(k) > self.draws:
            raise ValueError(f"first must be between 2 and the {self.draws} draws, got {k!r}")
        return DrawStats(**{f: getattr(self, f)[..., : int(k), :] for f in _COLUMNS}, reps=self.reps)

    def take(self, index: np.ndarray) -> "DrawStats":
        """The draws ``index`` of statistics (K, S): an integer array (..., K') gives (..., K', S)."""
        if self.a.ndim != 2:
            raise ValueError(f"take needs statistics of shape (K, S), got {self.a.shape}")
        index = np.asarray(index)
        return DrawStats(**{f: getattr(self, f)[index] for f in _COLUMNS}, reps=self.reps)


@dataclass(frozen=True)
class LawForms:
    """The components of the claims under every law, as one set of sparse linear forms.

    Component i is ``const[i] + Σ coef·x[stat, row]`` over its terms; the terms of all
    components are held sorted by component (``start[i]`` is the first of component i's),
    with their statistic (an index into :data:`~dpfda_book.report.claim_encodings.STATISTICS`),
    row (a column of :class:`DrawStats`) and coefficient.  ``rows`` names each row
    (law, study, position in the study's table); ``claim``, ``law``, ``label`` and
    ``direction`` describe each component, in the order of
    :func:`~dpfda_book.report.claim_verdicts.components_table`.
    """

    claim: np.ndarray
    law: np.ndarray
    label: np.ndarray
    direction: np.ndarray
    const: np.ndarray
    start: np.ndarray
    stat: np.ndarray
    row: np.ndarray
    coef: np.ndarray
    rows: tuple

    def __len__(self) -> int:
        return int(self.const.size)

    def frame(self) -> pd.DataFrame:
        """The components' identities: columns ``claim``, ``law``, ``component``, ``direction``."""
        return pd.DataFrame({"claim": self.claim, "law": self.law, "component": self.label,
                             "direction": self.direction})


def _draw_lists(draws: Mapping[str, Mapping[str, Sequence[pd.DataFrame]]], first: int | None
                ) -> dict[str, dict[str, list[pd.DataFrame]]]:
    """``draws`` checked (law → study → K ≥ 2 tables of equal settings), the first ``first`` draws of each."""
    if not hasattr(draws, "items") or not draws:
        raise TypeError("draws must be a non-empty mapping law -> {study: list of draw tables}")
    if first is not None and (isinstance(first, bool) or int(first) < 2):
        raise ValueError(f"first must be None or >= 2, got {first!r}")
    out: dict[str, dict[str, list[pd.DataFrame]]] = {}
    ks = set()
    for law, studies in draws.items():
        check_law(law)
        if not hasattr(studies, "items"):
            raise TypeError(f"draws[{law!r}] must map study names to lists of draw tables")
        out[law] = {}
        for name, tables in studies.items():
            tables = list(tables)
            if first is not None:
                if len(tables) < int(first):
                    raise ValueError(f"{law}/{name} has {len(tables)} draws, fewer than first={first}")
                tables = tables[: int(first)]
            if len(tables) < 2:
                raise ValueError(f"{law}/{name}: a law-level component needs at least two draws, got {len(tables)}")
            if not all(isinstance(t, pd.DataFrame) for t in tables):
                raise TypeError(f"draws[{law!r}][{name!r}] must hold results DataFrames")
            base = tables[0][_KEYS].to_numpy(float)
            for t in tables[1:]:
                if not np.array_equal(t[_KEYS].to_numpy(float), base):
                    raise ValueError(f"{law}/{name}: the draws must hold the same settings in the same order")
            ks.add(len(tables))
            out[law][name] = tables
    if len(ks) != 1:
        raise ValueError(f"every law and study must have the same number of draws, got {sorted(ks)}")
    return out


def draw_stats(draws: Mapping[str, Mapping[str, Sequence[pd.DataFrame]]], *, first: int | None = None
               ) -> tuple[DrawStats, tuple]:
    """The per-draw statistics of every row of ``draws`` (law → study → K tables), and the rows' names.

    Rows come law by law, study by study, in each table's order; a row's name is
    (law, study, position).  ``first`` keeps the first draws only.
    """
    lists = _draw_lists(draws, first)
    names: list[tuple] = []
    cols: dict[str, list[np.ndarray]] = {k: [] for k in _COLUMNS}
    reps = []
    for law, studies in lists.items():
        for study, tables in studies.items():
            names += [(law, study, i) for i in range(len(tables[0]))]
            values = np.stack([t[_READ].to_numpy(float) for t in tables])  # (K, rows, columns): one read a table
            for j, k in enumerate(_COLUMNS):
                cols[k].append(values[:, :, j])
            r = values[:, :, -1]
            if not (r == r[0]).all():
                raise ValueError(f"{law}/{study}: the draws must have equal repetitions")
            reps.append(r[0].astype(int))
    stats = {k: np.concatenate(v, axis=1) for k, v in cols.items()}
    return DrawStats(**stats, reps=np.concatenate(reps)), tuple(names)


def compile_forms(draws: Mapping[str, Mapping[str, Sequence[pd.DataFrame]]],
                  claims: Iterable[Claim | str] = CLAIMS) -> LawForms:
    """The components of ``claims`` under each law of ``draws``, as linear forms over :func:`draw_stats`' rows.

    The forms are read from each law's first draw (which rows and weights a component uses
    never depends on the results: ``tests/test_claim_encodings.py`` checks it), so they
    hold for every draw and for any pooling of them.
    """
    lists = _draw_lists(draws, None)
    position, offset, law_start = {}, 0, {}
    for law, studies in lists.items():
        law_start[law] = offset
        for study, tables in studies.items():
            for i, label in enumerate(tables[0].index):
                position[law, study, label] = offset + i
            offset += len(tables[0])
    chosen = [c if isinstance(c, Claim) else get_claim(c) for c in claims]
    meta: dict[str, list] = {"claim": [], "law": [], "label": [], "direction": [], "const": []}
    start: list[int] = []
    stat: list[int] = []
    row: list[int] = []
    coef: list[float] = []
    template: tuple | None = None  # (law, its settings, its components): other laws' are the same forms
    for law, studies in lists.items():
        settings = {study: tables[0][_SETTING].reset_index(drop=True) for study, tables in studies.items()}
        if template is not None and list(settings) == list(template[1]) and all(
                settings[k].equals(template[1][k]) for k in settings):
            shift = law_start[law] - law_start[template[0]]
            comps = [(cid, label, direction, const, [(st, r + shift, a) for st, r, a in terms])
                     for cid, label, direction, const, terms in template[2]]
        else:
            comps = _law_components(chosen, law, studies, position)
            if template is None:
                template = (law, settings, comps)
        for cid, label, direction, const, terms in comps:
            meta["claim"].append(cid)
            meta["law"].append(law)
            meta["label"].append(label)
            meta["direction"].append(direction)
            meta["const"].append(const)
            start.append(len(coef))
            for st, r, a in terms:
                stat.append(st)
                row.append(r)
                coef.append(a)
    names = tuple((law, study, i) for law, studies in lists.items() for study, tables in studies.items()
                  for i in range(len(tables[0])))
    return LawForms(claim=np.array(meta["claim"], dtype=object), law=np.array(meta["law"], dtype=object),
                    label=np.array(meta["label"], dtype=object), direction=np.array(meta["direction"], dtype=int),
                    const=np.array(meta["const"], dtype=float), start=np.array(start, dtype=np.intp),
                    stat=np.array(stat, dtype=np.intp), row=np.array(row, dtype=np.intp),
                    coef=np.array(coef, dtype=float), rows=names)


_SETTING = ["family", "n", "T", "m", "mu", "sigma0", "radius_rule", "radius", "B"]


def _law_components(claims: list[Claim], law: str, studies: Mapping[str, list[pd.DataFrame]],
                    position: dict) -> list[tuple]:
    """(claim id, label, direction, constant, [(statistic index, row, coefficient)]) of each component."""
    first_draw = {study: tables[0] for study, tables in studies.items()}
    out = []
    for claim in claims:
        for comp in claim_components(claim, first_draw):
            if comp.form is None or not comp.form.coef:
                raise ValueError(f"component {comp.label!r} of {claim.id} carries no linear form")
            terms = [(STATISTICS.index(statistic), position[law, study, label], a)
                     for (study, label, statistic), a in comp.form.coef.items()]
            out.append((claim.id, comp.label, comp.direction, comp.form.const, terms))
    return out


def restrict(forms: LawForms, stats: DrawStats) -> tuple[LawForms, DrawStats]:
    """The forms and statistics on the rows some component reads, the others dropped (same results)."""
    used = np.unique(forms.row)
    kept = DrawStats(**{f: getattr(stats, f)[..., used] for f in _COLUMNS}, reps=stats.reps[used])
    return replace(forms, row=np.searchsorted(used, forms.row), rows=tuple(forms.rows[i] for i in used)), kept


def _plan(forms: LawForms) -> list[tuple[str, np.ndarray, Any, Any]]:
    """Per statistic read by some component: (name, the distinct rows read, C, C²).

    C is the sparse (M × rows) matrix of the terms' coefficients, so that a form's value is
    ``const + Σ_statistics C @ x[rows]``; C² holds the squared coefficients.  Kept on
    ``forms`` (computed once).
    """
    cached = forms.__dict__.get("_plan")
    if cached is not None:
        return cached
    from scipy import sparse  # here: `reproduce` draws its figures without scipy

    component = np.repeat(np.arange(len(forms)), np.diff(np.append(forms.start, forms.coef.size)))
    out = []
    for s, name in enumerate(STATISTICS):
        at = np.flatnonzero(forms.stat == s)
        if at.size:
            rows, inverse = np.unique(forms.row[at], return_inverse=True)
            shape = (len(forms), rows.size)
            c = sparse.csr_matrix((forms.coef[at], (component[at], inverse)), shape=shape)
            c2 = sparse.csr_matrix((forms.coef[at] ** 2, (component[at], inverse)), shape=shape)
            out.append((name, rows, c, c2))
    forms.__dict__["_plan"] = out
    return out


def _apply(c: Any, x: np.ndarray) -> np.ndarray:
    """C @ x along the last axis of ``x`` (..., rows): (..., M)."""
    flat = x.reshape(-1, x.shape[-1])
    return np.asarray(c @ flat.T).T.reshape(x.shape[:-1] + (c.shape[0],))


def _statistic(name: str, stats: DrawStats, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pooled value (..., r), influence values (..., K, r), within-draw variance of the pooled value (..., r))."""
    K = stats.draws
    if name == "p_ptf":
        p = stats.p[..., rows]
        P = p.mean(axis=-2)
        floor = _pooled_proportion_var(P, stats.reps[rows] * K)  # Agresti–Coull on all K·R repetitions
        return P, p - P[..., None, :], np.maximum(np.mean(stats.sp[..., rows] ** 2, axis=-2) / K, floor)
    a = stats.a[..., rows]
    A = a.mean(axis=-2)
    if name == "log_ratio":
        b = stats.b[..., rows]
        B = b.mean(axis=-2)
        return (np.log(A / B), a / A[..., None, :] - b / B[..., None, :],
                np.mean(stats.slr[..., rows] ** 2, axis=-2) / K)
    if name in ("err_ptf", "log_err_ptf"):
        a, A, sa = stats.b[..., rows], stats.b[..., rows].mean(axis=-2), stats.sb[..., rows]
    else:
        sa = stats.sa[..., rows]
    w = np.mean(sa**2, axis=-2) / K
    if name.startswith("log_"):
        return np.log(A), a / A[..., None, :] - 1.0, w / A**2
    return A, a - A[..., None, :], w


def evaluate(forms: LawForms, stats: DrawStats, *, errors: str = "paired") -> tuple[np.ndarray, np.ndarray]:
    """(estimate, standard error) of every component, arrays (..., M), pooled over the K draws of ``stats``.

    The estimate is each form at the pooled statistics (FTP's and PTF's errors averaged over
    the draws, their ratio, PTF's activation share); the standard error is the spread of
    the component's influence values across the draws (``errors="paired"``) or the
    root-sum-square of its terms' pooled errors (``"root-sum-square"``), floored as the
    module notes say.
    """
    if errors not in ERRORS:
        raise ValueError(f"errors must be one of {ERRORS}, got {errors!r}")
    K = stats.draws
    if K < 2:
        raise ValueError(f"a law-level component needs at least two draws, got {K}")
    lead = stats.a.shape[:-2]
    estimate = np.broadcast_to(forms.const, lead + forms.const.shape).copy()
    floor = np.zeros(lead + forms.const.shape)
    paired = errors == "paired"
    between = np.zeros(lead + (K, len(forms))) if paired else None
    for name, rows, c, c2 in _plan(forms):
        x, u, w = _statistic(name, stats, rows)
        if name != "p_ptf" and not np.all(np.isfinite(x)):
            raise ValueError("the pooled errors must be finite and > 0")
        estimate += _apply(c, x)
        if between is not None:
            between += _apply(c, u)  # each draw's influence value of the component
            floor += _apply(c2, w)
        else:  # each term's own pooled error, floored at its within part
            floor += _apply(c2, np.maximum(u.var(axis=-2, ddof=1) / K, w))
    if between is None:
        return estimate, np.sqrt(floor)
    return estimate, np.sqrt(np.maximum(between.var(axis=-2, ddof=1) / K, floor))


def _pooled_proportion_var(P: np.ndarray, reps: np.ndarray) -> np.ndarray:
    """The Agresti–Coull variance of shares P (..., r) from ``reps`` (r,) repetitions each."""
    pt = (P * reps + 2.0) / (reps + 4.0)
    return pt * (1.0 - pt) / (reps + 4.0)


def p_values(z: np.ndarray, dof: float | None) -> np.ndarray:
    """Two-sided p-values of statistics ``z``: the normal's (``dof`` None) or Student's t on ``dof``."""
    from scipy import special  # here: `reproduce` draws its figures without scipy

    z = np.abs(np.asarray(z, dtype=float))
    if dof is None:
        return special.erfc(z / math.sqrt(2.0))
    return 2.0 * special.stdtr(float(dof), -z)


def components_from_draws(draws: Mapping[str, Mapping[str, Sequence[pd.DataFrame]]],
                          claims: Iterable[Claim | str] = CLAIMS, *, first: int | None = None,
                          reference: str = "t", errors: str = "paired", forms: LawForms | None = None,
                          stats: DrawStats | None = None) -> pd.DataFrame:
    """Every component of ``claims`` under every law, pooled over the draws of ``draws``.

    ``draws`` maps law → study → the K tables of :func:`~dpfda_book.report.law_runs.simulate_draws`
    (``first`` keeps the first draws).  The columns are those of
    :func:`~dpfda_book.report.claim_verdicts.components_table` (``claim``, ``law``,
    ``component``, ``estimate``, ``se``, ``direction``, ``z``, ``df``, ``p``), in its order;
    the standard errors are taken draw by draw (``errors="paired"``, module notes), and
    ``reference="t"`` refers each component to Student's t on K − 1 degrees of freedom
    (the standard error is a standard deviation of K influence values), ``"normal"`` to
    the normal.  ``forms`` and ``stats``: :func:`compile_forms`' and :func:`draw_stats`' output
    for ``draws`` (all of its draws) and ``claims``, if already at hand (reading the tables is the
    slow part).
    """
    if reference not in ("normal", "t"):
        raise ValueError(f"reference must be 'normal' or 't', got {reference!r}")
    if errors not in ERRORS:
        raise ValueError(f"errors must be one of {ERRORS}, got {errors!r}")
    if first is not None and (isinstance(first, bool) or int(first) < 2):
        raise ValueError(f"first must be None or >= 2, got {first!r}")
    if forms is None:
        forms = compile_forms(draws, claims)
    elif not isinstance(forms, LawForms):
        raise TypeError(f"forms must be compile_forms' LawForms, got {type(forms).__name__}")
    if stats is None:
        stats, _ = draw_stats(draws)
    elif not isinstance(stats, DrawStats):
        raise TypeError(f"stats must be draw_stats' DrawStats, got {type(stats).__name__}")
    if first is not None:
        stats = stats.first(first)
    estimate, se = evaluate(forms, stats, errors=errors)
    dof = stats.draws - 1 if reference == "t" else None
    z = forms.direction * estimate / se
    out = forms.frame()
    out.insert(3, "estimate", estimate)
    out.insert(4, "se", se)
    out["z"] = z
    out["df"] = np.nan if dof is None else dof
    out["p"] = p_values(z, dof)
    return out[["claim", "law", "component", "estimate", "se", "direction", "z", "df", "p"]]
