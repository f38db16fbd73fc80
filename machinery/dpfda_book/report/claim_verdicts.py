"""From a claim's components to its verdict: holds, fails or inconclusive.

Each component (:class:`~dpfda_book.report.claim_encodings.Component`) is a test of
``estimate = 0`` (two-sided).  Over a family of components (all components of the whole
matrix, or one claim's components in a chapter) the p-values are corrected together, by
Holm's step-down method (default) or Bonferroni, at family level ``alpha`` (0.05).  A
component is *significant* when its corrected test rejects, in the direction of its
estimate's sign.  Then a claim, under one law,

* **holds** if every component is significant in the asserted direction;
* **fails** if at least one component is significant in the opposite direction;
* is **inconclusive** otherwise (including a claim with no component).

The verdict of a claim is the matrix's: :func:`verdicts` over every claim under every latent
law of the pooled tables of :func:`dpfda_book.report.law_runs.simulate`, one family, one verdict per
claim and law.  :func:`judge` on a chapter's tables is evidence about the latent curves of that
one draw (the conditional design, :mod:`dpfda_book.report.law_runs` says how the two designs differ),
with a declared family shared by all the claims a chapter judges (its docstring).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..simulation.models import LAW_SHIFTS, LAWS, check_law
from .claim_labels import VERDICT_MARKS
from .claim_registry import CLAIMS, Claim, claim_components, get_claim

__all__ = [
    "VERDICTS",
    "FAMILY_ALPHA",
    "FAMILY_SIZE",
    "components_table",
    "adjust",
    "verdict_counts",
    "verdicts",
    "Judgement",
    "judge",
    "verdict_matrix",
    "classify",
    "CATEGORIES",
]

VERDICTS = ("holds", "inconclusive", "fails")
"""The three verdicts, in the order of the matrix's colour scale."""

FAMILY_ALPHA = 0.05
"""The family level of the matrix's correction, and of the chapters' conditional results together."""

FAMILY_SIZE = len(CLAIMS)
"""The number of claims whose conditional results (:func:`judge` in a chapter) share ``FAMILY_ALPHA``."""


def components_table(results: Mapping[str, Mapping[str, pd.DataFrame]], claims: Iterable[Claim | str] = CLAIMS, *,
                     reference: str = "normal") -> pd.DataFrame:
    """Every component of every claim under every law, one row each.

    ``results`` maps law → (study name → results table): one
    :func:`dpfda_book.simulation.schedule.run_studies` output per law (the conditional design) or
    :func:`~dpfda_book.report.law_runs.simulate`'s pooled law-level tables.  Columns: ``claim``, ``law``,
    ``component``, ``estimate``, ``se``, ``direction``, ``z`` (the estimate over
    its standard error, signed by the asserted direction), ``df`` (NaN: a
    normal reference; a component may carry its own) and ``p`` (two-sided).

    A component's standard error is the root-sum-square of its settings' (the
    tables' ``se_*`` columns): right on one draw of the curves, whose settings draw
    independent noise.  On pooled law-level tables (a ``draws`` column, K latent
    draws) it treats settings that share their curves within a draw as independent;
    the matrix takes its components from the draws instead
    (:func:`~dpfda_book.report.law_components.components_from_draws`), and this function
    gives the earlier design's numbers there.

    ``reference="t"``: on law-level tables a component without its own df is
    referred to Student's t on K − 1 degrees of freedom, the
    Hartung–Knapp–Sidik–Jonkman reference for a standard error estimated across K
    draws.  Tables without ``draws`` (one latent draw) keep the normal reference.
    """
    if reference not in ("normal", "t"):
        raise ValueError(f"reference must be 'normal' or 't', got {reference!r}")
    from scipy.stats import norm  # here: `reproduce` draws its figures without scipy
    from scipy.stats import t as student_t  # components that carry their own df

    if not hasattr(results, "items") or not results:
        raise TypeError("results must be a non-empty mapping law -> {study: results table}")
    rows = []
    for law, tables in results.items():
        check_law(law)
        for name, df in tables.items():
            if isinstance(df, pd.DataFrame) and "law" in df.columns and not (df["law"] == law).all():
                raise ValueError(f"results[{law!r}][{name!r}] holds rows of law {sorted(set(df['law']))}")
        draws = {int(d["draws"].iloc[0]) for d in tables.values()
                 if isinstance(d, pd.DataFrame) and "draws" in d.columns and len(d)}
        law_df = min(draws) - 1 if (reference == "t" and draws) else None
        for claim in claims:
            claim = claim if isinstance(claim, Claim) else get_claim(claim)
            for c in claim_components(claim, tables):
                dof_c = c.df if c.df is not None else law_df
                z = c.direction * c.estimate / c.se
                p = 2 * (norm.sf(abs(z)) if dof_c is None else student_t.sf(abs(z), dof_c))
                rows.append({"claim": claim.id, "law": law, "component": c.label, "estimate": c.estimate,
                             "se": c.se, "direction": c.direction, "z": z,
                             "df": np.nan if dof_c is None else dof_c, "p": p})
    return pd.DataFrame(rows, columns=["claim", "law", "component", "estimate", "se", "direction", "z", "df",
                                       "p"])


def adjust(p: ArrayLike, alpha: float = 0.05, method: str = "holm") -> np.ndarray:
    """Which two-sided p-values reject at family level ``alpha`` (Holm or Bonferroni).

    ``p`` is one family (a vector) or several, one a row along the last axis (the test of
    the test, :mod:`dpfda_book.report.law_null`, corrects thousands of replicated matrices at once).

    >>> adjust([0.01, 0.02, 0.5], alpha=0.05).tolist()
    [True, True, False]
    >>> adjust([0.01, 0.02, 0.5], alpha=0.05, method="bonferroni").tolist()
    [True, False, False]
    >>> adjust([[0.01, 0.02, 0.5], [0.02, 0.03, 0.01]]).tolist()
    [[True, True, False], [True, True, True]]
    """
    p = np.asarray(p, dtype=float)
    if p.ndim < 1:
        raise ValueError(f"p must be a vector of p-values (or rows of them), got shape {p.shape}")
    if p.size and not np.all((p >= 0) & (p <= 1)):
        raise ValueError("p must hold probabilities in [0, 1]")
    alpha = float(alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    k = p.shape[-1]
    if method == "bonferroni":
        return p <= alpha / max(k, 1)
    if method != "holm":
        raise ValueError(f"method must be 'holm' or 'bonferroni', got {method!r}")
    if k == 0:
        return np.zeros(p.shape, dtype=bool)
    order = np.argsort(p, axis=-1, kind="stable")
    thresholds = alpha / (k - np.arange(k))
    passed = np.take_along_axis(p, order, axis=-1) <= thresholds
    # the step-down stops at the first failure: reject the smallest `stop` p-values of each family
    stop = np.where(passed.all(axis=-1), k, np.argmin(passed, axis=-1))
    out = np.empty(p.shape, dtype=bool)
    np.put_along_axis(out, order, np.arange(k) < stop[..., None], axis=-1)
    return out


def verdict_counts(agrees: np.ndarray, group: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(verdict codes, components for, components against) of each group, arrays (..., ``groups``).

    ``agrees`` (..., M) holds each component's sign decision (+1 significant as asserted, −1
    significant the other way, 0 neither), ``group`` (M,) its (claim, law) group, 0 to
    ``groups`` − 1.  A group's code is −1 (fails) if some component is against, 1 (holds) if
    every one is for, 0 (inconclusive) otherwise, also for a group without components.
    Leading axes hold replicated matrices (:mod:`dpfda_book.report.law_null` reads verdicts
    with this function, as :func:`verdicts` does).
    """
    agrees = np.asarray(agrees)
    group = np.asarray(group, dtype=np.intp)
    member = np.zeros((group.size, int(groups)))
    member[np.arange(group.size), group] = 1.0  # counts of 0/1 values: exact in any order
    n_for = ((agrees > 0) @ member).astype(int)
    n_against = ((agrees < 0) @ member).astype(int)
    size = member.sum(axis=0).astype(int)
    codes = np.where(n_against > 0, -1, np.where((n_for == size) & (size > 0), 1, 0))
    return codes, n_for, n_against


_VERDICT_OF_CODE = {1: "holds", 0: "inconclusive", -1: "fails"}


def verdicts(components: pd.DataFrame, alpha: float = FAMILY_ALPHA, method: str = "holm") -> pd.DataFrame:
    """One verdict per (claim, law) from :func:`components_table` (module notes).

    Adds columns ``significant`` (the corrected test rejects) and ``agrees``
    (+1 significant as asserted, −1 significant the other way, 0 neither) to a
    copy of the components, and returns the long table of verdicts with columns
    ``claim``, ``law``, ``verdict``, ``components``, ``for``, ``against``.
    """
    if not isinstance(components, pd.DataFrame) or not {"claim", "law", "z", "p"} <= set(components.columns):
        raise TypeError("components must be the DataFrame of components_table")
    sig = adjust(components["p"].to_numpy(), alpha, method)
    agrees = np.where(sig, np.sign(components["z"].to_numpy()), 0).astype(int)
    comp = components.assign(significant=sig, agrees=agrees)
    keys = pd.MultiIndex.from_frame(comp[["claim", "law"]]) if len(comp) else pd.MultiIndex.from_tuples(
        [], names=["claim", "law"])
    group, first_seen = pd.factorize(keys, sort=False)
    codes, n_for, n_against = verdict_counts(agrees, group, len(first_seen))
    out = pd.DataFrame({"claim": [k[0] for k in first_seen], "law": [k[1] for k in first_seen],
                        "verdict": [_VERDICT_OF_CODE[int(v)] for v in codes],
                        "components": np.bincount(group, minlength=len(first_seen)).astype(int),
                        "for": n_for, "against": n_against})
    out.attrs["components"] = comp
    out.attrs["alpha"], out.attrs["method"], out.attrs["k"] = alpha, method, len(comp)
    return out


@dataclass(frozen=True)
class Judgement:
    """One claim judged under one law on given tables, with the components it rests on.

    ``alpha`` is the family level, ``family_size`` the number of claims that share it
    (each claim's components corrected at ``alpha / family_size``, :func:`judge`) and
    ``method`` the correction within the claim.
    """

    claim: Claim
    law: str
    verdict: str
    components: pd.DataFrame = field(repr=False)
    alpha: float = 0.05
    family_size: int = 1
    method: str = "holm"

    @property
    def level(self) -> float:
        """The level of the correction within the claim, ``alpha / family_size``."""
        return self.alpha / self.family_size

    @property
    def against(self) -> list[str]:
        """Labels of the components significant in the direction opposite to the claim."""
        return list(self.components.loc[self.components["agrees"] < 0, "component"])

    @property
    def undecided(self) -> list[str]:
        """Labels of the components that are not significant."""
        return list(self.components.loc[self.components["agrees"] == 0, "component"])

    def family_text(self) -> str:
        """The multiplicity family in words, for a caption or a record."""
        how = "Holm" if self.method == "holm" else "Bonferroni"
        if self.family_size == 1:
            return f"{how} within the claim at α = {self.alpha:g}"
        return (f"{how} within the claim at α/{self.family_size} = {self.level:.2g}; "
                f"the {self.family_size} claims' conditional results together at {self.alpha:g}")

    def record(self) -> pd.DataFrame:
        """The claim's registry record beside this run's result, one row per field (for a chapter)."""
        c, comp = self.claim, self.components
        n_for, n_against = int((comp["agrees"] > 0).sum()), int((comp["agrees"] < 0).sum())
        rows = {
            "the paper": c.where,
            "we test": " ".join(c.test.split("\n", 1)[-1].split()),
            "thresholds and why": "; ".join(f"{t}: {why}" for t, why in c.thresholds),
            "this run (one draw of the curves, conditional design)":
                f"{VERDICT_MARKS[self.verdict]} {self.verdict}: {n_for} of {len(comp)} components for, "
                f"{n_against} against ({self.family_text()})",
        }
        return pd.Series(rows, name=c.name).rename_axis("").to_frame()

    def summary(self) -> pd.DataFrame:
        """One row for the reader: name, the paper's location, result (mark and word), counts."""
        c = self.components
        weakest = c.loc[c["z"].abs().idxmin()] if len(c) else None
        return pd.DataFrame([{
            "claim": self.claim.name, "paper": self.claim.where,
            "verdict": f"{VERDICT_MARKS[self.verdict]} {self.verdict}",
            "components": len(c), "for": int((c["agrees"] > 0).sum()), "against": int((c["agrees"] < 0).sum()),
            "smallest |z|": float(abs(weakest["z"])) if weakest is not None else np.nan,
        }]).set_index("claim")


def judge(claim: Claim | str, tables: Mapping[str, pd.DataFrame], *, law: str = "default",
          alpha: float = FAMILY_ALPHA, method: str = "holm", family_size: int = FAMILY_SIZE) -> Judgement:
    """``claim`` (a :class:`~dpfda_book.report.claim_registry.Claim` or an id) judged on one law's ``tables``.

    On a chapter's tables (one latent draw held fixed) the result is about that
    draw, the conditional design: evidence beside the claim's verdict, which is
    the matrix's (:func:`verdicts` over every claim and law at once, chapter
    ``robustness``), not a second verdict.

    The family of these conditional results is declared and common: the
    chapters of Part II judge ``family_size`` claims (by default
    ``FAMILY_SIZE``, all of the registry's claims), one at a time, and each claim's
    components are corrected together (``method``, Holm by default) at level
    ``alpha / family_size``.  Holm keeps each claim's familywise error at most
    ``alpha / family_size``, and by the union bound the chance that any of the
    ``family_size`` claims has a false rejection is at most ``alpha``: all the
    conditional results together keep family level ``alpha``, whatever the
    dependence between claims that read the same tables.  ``family_size=1``
    gives the claim's own family at ``alpha``.
    """
    if isinstance(family_size, bool) or not isinstance(family_size, (int, np.integer)) or family_size < 1:
        raise ValueError(f"family_size must be a positive integer (the number of claims sharing the "
                         f"family level alpha), got {family_size!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    claim = claim if isinstance(claim, Claim) else get_claim(claim)
    alpha, family_size = float(alpha), int(family_size)
    comp = components_table({check_law(law): tables}, claims=[claim])
    long = verdicts(comp, alpha=alpha / family_size, method=method)
    verdict = long["verdict"].iloc[0] if len(long) else "inconclusive"
    return Judgement(claim, law, verdict, long.attrs["components"] if len(long) else comp,
                     alpha=alpha, family_size=family_size, method=method)


def verdict_matrix(long: pd.DataFrame, claims: Iterable[Claim | str] = CLAIMS,
                   laws: Iterable[str] = LAWS) -> pd.DataFrame:
    """The verdicts as a claims × laws table (rows in the book's order)."""
    ids = [c.id if isinstance(c, Claim) else get_claim(c).id for c in claims]
    mat = long.pivot(index="claim", columns="law", values="verdict")
    return mat.reindex(index=ids, columns=[law for law in laws if law in mat.columns])


CATEGORIES = ("robust", "norm", "shape", "shape and norm", "undecided", "default only", "none")
"""How a claim's verdict depends on the law (:func:`classify`)."""


def _law_at(shape: str, S: float) -> str:
    """The law of ``shape`` at share S: ``shift-0`` is the centred law of both shapes."""
    return "shift-0" if S == 0 else f"{shape}-{S:g}"


def classify(matrix: pd.DataFrame) -> pd.Series:
    """Sort each claim of a verdict matrix (every law of :data:`~dpfda_book.simulation.models.LAWS`) into a category.

    Only decisive contrasts count (a law where the claim holds against one where
    it fails); a difference between "holds" and "inconclusive" may be a matter
    of Monte Carlo power.  In this order:

    * ``"robust"``: holds under every law;
    * ``"none"``: holds under no law;
    * ``"default only"``: holds under the default law and under no shift/wave law;
    * ``"shape and norm"``: both of the next two dependences are found;
    * ``"shape"``: at some share S it holds under one of ``shift-S``, ``wave-S``
      and fails under the other (and no dependence on the norm is found);
    * ``"norm"``: for some shape it holds at one S and fails at another (and no
      dependence on the shape is found; S = 0 is ``shift-0`` for both shapes);
    * ``"undecided"``: otherwise — it holds under some laws, and the laws where
      it does not give no decisive contrast of the two kinds above.
    """
    if not isinstance(matrix, pd.DataFrame):
        raise TypeError(f"matrix must be a DataFrame from verdict_matrix, got {type(matrix).__name__}")
    missing = [law for law in LAWS if law not in matrix.columns]
    if missing:
        raise ValueError(f"matrix lacks the laws {missing}; classify needs the whole family")
    out = {}
    for claim, row in matrix.iterrows():
        v = {law: row[law] for law in LAWS}
        family = [law for law in LAWS if law != "default"]
        by_shape = {shape: [v[_law_at(shape, S)] for S in LAW_SHIFTS] for shape in ("shift", "wave")}
        if all(x == "holds" for x in v.values()):
            cat = "robust"
        elif not any(x == "holds" for x in v.values()):
            cat = "none"
        elif not any(v[law] == "holds" for law in family):
            cat = "default only"
        else:
            shape = any({a, b} == {"holds", "fails"} for a, b in zip(by_shape["shift"], by_shape["wave"]))
            norm = any({"holds", "fails"} <= set(xs) for xs in by_shape.values())
            cat = {(True, True): "shape and norm", (True, False): "shape", (False, True): "norm",
                   (False, False): "undecided"}[shape, norm]
        out[claim] = cat
    return pd.Series(out, name="category")
