"""The test of the matrix's test: the whole procedure, replicated in worlds whose truth is known.

The robustness matrix decides each claim under each law from K latent draws: it pools the
draws' tables, builds every component of every claim (:mod:`dpfda_book.report.law_components`:
the estimate at the pooled statistics, the standard error from the draws' influence values,
floored at the within-draw part), refers each to Student's t on K − 1 degrees of freedom,
corrects all of them together by Holm's step-down and reads a verdict from the signs of
the significant ones.  Whether that procedure keeps its error rates is checked here by
running *all* of it — the same functions, on the same rows and forms — on replicated
matrices drawn from a world in which the true value θ of every component is known:

``"draws"``
    The matrix's own draws as the population.  A replicate draws K of the run's draws
    with replacement (each draw whole: every setting of every law, FTP and PTF together,
    so settings that share latent curves, and laws that share noise, stay together); the
    truth of a component is its value on the whole population — the matrix's own estimate.
``"ftp-self"``, ``"ptf-self"``
    A pipeline compared with itself.  A replicate pairs that pipeline's errors in K draws
    with its errors in K other draws, taken independently (with replacement) from the
    population, as the two arms; PTF's activation shares come with the first.  Every true
    ratio is then 1 exactly: every component that compares log ratios (a ratio falls,
    rises, exceeds one) has θ = 0, a true null; the others (errors against errors,
    activation shares) have θ the population's value.  FTP's error hardly depends on the
    latent curves; PTF's does, through how often its constraint binds (at small n), so
    ``"ptf-self"`` is the world where the draws matter most.

A replicate's *errors* are the components declared significant when θ = 0 (false
rejections) or with the sign opposite to θ's (sign errors), and the (claim, law) verdicts
that are wrong: "holds" when some component's true value is not in the claim's direction,
"fails" when none is against it.  :func:`error_rates` reports, for each world and
procedure (:class:`Procedure`), the share of replicates with at least one error of each
kind, with its Monte Carlo standard error.

What the two worlds leave out: both take their between-draw variability from the matrix's
own K draws (a finite population of K points), and ``"ftp-self"`` pairs draws that are
independent where FTP and PTF of one draw share their data.  They test the procedure under
the dependence the matrix actually has — not under every dependence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .claim_registry import CLAIMS
from .claim_verdicts import FAMILY_ALPHA, adjust, verdict_counts
from .law_components import ERRORS, DrawStats, LawForms, compile_forms, draw_stats, evaluate, p_values, restrict

__all__ = [
    "WORLDS",
    "Procedure",
    "World",
    "null_world",
    "replicate_errors",
    "error_rates",
]

WORLDS = ("draws", "ftp-self", "ptf-self")
"""The worlds of :func:`null_world` (module notes)."""


@dataclass(frozen=True)
class Procedure:
    """A law-level test of the whole matrix: K draws, a reference law and a kind of standard error.

    The matrix's is ``Procedure(20, "t", "paired")``; the earlier design of the chapter was
    ``Procedure(5, "normal", "root-sum-square")``.  ``alpha`` is Holm's family level.
    """

    draws: int
    reference: str = "t"
    errors: str = "paired"
    alpha: float = FAMILY_ALPHA

    def __post_init__(self) -> None:
        if isinstance(self.draws, bool) or not isinstance(self.draws, (int, np.integer)) or self.draws < 2:
            raise ValueError(f"draws must be an integer >= 2, got {self.draws!r}")
        if self.reference not in ("normal", "t"):
            raise ValueError(f"reference must be 'normal' or 't', got {self.reference!r}")
        if self.errors not in ERRORS:
            raise ValueError(f"errors must be one of {ERRORS}, got {self.errors!r}")
        if not 0 < float(self.alpha) < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha!r}")

    @property
    def label(self) -> str:
        """A short description, such as "K = 20, t on 19 df, paired errors"."""
        ref = f"t on {self.draws - 1} df" if self.reference == "t" else "normal"
        return f"K = {self.draws}, {ref}, {self.errors} errors"


@dataclass(frozen=True)
class World:
    """A population of draws, the matrix's forms, and the true value of every component."""

    name: str
    population: DrawStats  # (K_pop, S)
    forms: LawForms
    truth: np.ndarray  # (M,) the true value of each component
    groups: np.ndarray  # start of each (claim, law) group among the components

    @property
    def true_sign(self) -> np.ndarray:
        """The sign of direction · θ for each component, +1 for the claim, −1 against, 0 a true null."""
        return np.sign(self.forms.direction * self.truth).astype(int)


def null_world(draws: Mapping[str, Mapping[str, Sequence[pd.DataFrame]]], world: str = "draws", *,
               forms: LawForms | None = None, stats: DrawStats | None = None) -> World:
    """The world ``world`` (:data:`WORLDS`) made from a run's draws (law → study → K tables).

    ``forms``, ``stats``: :func:`~dpfda_book.report.law_components.compile_forms` (every claim) and
    :func:`~dpfda_book.report.law_components.draw_stats` of ``draws``, if already at hand.
    """
    if world not in WORLDS:
        raise ValueError(f"world must be one of {WORLDS}, got {world!r}")
    if forms is None:
        forms = compile_forms(draws, CLAIMS)
    elif not isinstance(forms, LawForms):
        raise TypeError(f"forms must be compile_forms' LawForms, got {type(forms).__name__}")
    if stats is None:
        stats = draw_stats(draws)[0]
    elif not isinstance(stats, DrawStats):
        raise TypeError(f"stats must be draw_stats' DrawStats, got {type(stats).__name__}")
    forms, population = restrict(forms, stats)
    if population.draws < 2:
        raise ValueError("the population needs at least two draws")
    if world == "draws":
        truth_stats = population
    else:  # one pipeline in both arms: every true ratio is 1
        arm, se = (population.a, population.sa) if world == "ftp-self" else (population.b, population.sb)
        truth_stats = DrawStats(a=arm, sa=se, b=arm, sb=se, slr=population.slr, p=population.p, sp=population.sp,
                                reps=population.reps)
    truth, _ = evaluate(forms, truth_stats)
    keys = list(zip(forms.claim, forms.law))
    groups = np.array([i for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k], dtype=np.intp)
    if len(set(keys)) != groups.size:
        raise ValueError("the components of one (claim, law) must be contiguous")
    return World(world, population, forms, truth, groups)


def _replicates(world: World, draws: int, size: int, rng: np.random.Generator) -> DrawStats:
    """``size`` replicated sets of ``draws`` draws from the world's population, (size, draws, S)."""
    pop = world.population
    ia = rng.integers(0, pop.draws, size=(size, draws))
    if world.name == "draws":
        return pop.take(ia)
    ib = rng.integers(0, pop.draws, size=(size, draws))
    arm, se = (pop.a, pop.sa) if world.name == "ftp-self" else (pop.b, pop.sb)
    a, sa, b, sb = arm[ia], se[ia], arm[ib], se[ib]
    return DrawStats(a=a, sa=sa, b=b, sb=sb, slr=np.hypot(sa / a, sb / b), p=pop.p[ia], sp=pop.sp[ia],
                     reps=pop.reps)


def _verdict_codes(agrees: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per (claim, law) group: 1 holds, −1 fails, 0 inconclusive.

    ``groups`` holds the first component of each group (contiguous); the rule is
    :func:`~dpfda_book.report.claim_verdicts.verdict_counts`', the one
    :func:`~dpfda_book.report.claim_verdicts.verdicts` uses.
    """
    group = np.repeat(np.arange(groups.size), np.diff(np.append(groups, agrees.shape[-1])))
    return verdict_counts(agrees, group, groups.size)[0]


def replicate_errors(world: World, procedure: Procedure, reps: int, rng: np.random.Generator, *,
                     batch: int = 25) -> pd.DataFrame:
    """Run ``procedure`` on ``reps`` replicated matrices of ``world``; one row per replicate.

    Columns: ``rejections`` (components significant), ``false_rejections`` (significant
    with θ = 0), ``sign_errors`` (significant against the sign of θ ≠ 0),
    ``wrong_verdicts`` ((claim, law) verdicts contradicted by the truth), ``decided``
    (verdicts that hold or fail).
    """
    if not isinstance(world, World):
        raise TypeError(f"world must be a World (null_world), got {type(world).__name__}")
    if not isinstance(procedure, Procedure):
        raise TypeError(f"procedure must be a Procedure, got {type(procedure).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator")
    reps, batch = int(reps), int(batch)
    if reps < 1 or batch < 1:
        raise ValueError(f"reps and batch must be >= 1, got {reps}, {batch}")
    sign = world.true_sign
    true_verdict = _verdict_codes(sign, world.groups)
    dof = procedure.draws - 1 if procedure.reference == "t" else None
    rows = []
    for start in range(0, reps, batch):
        stats = _replicates(world, procedure.draws, min(batch, reps - start), rng)
        estimate, se = evaluate(world.forms, stats, errors=procedure.errors)
        z = world.forms.direction * estimate / se
        significant = adjust(p_values(z, dof), procedure.alpha)
        agrees = np.where(significant, np.sign(z), 0).astype(int)
        verdict = _verdict_codes(agrees, world.groups)
        wrong = ((verdict == 1) & (true_verdict != 1)) | ((verdict == -1) & (true_verdict != -1))
        rows.append(pd.DataFrame({
            "rejections": significant.sum(axis=-1),
            "false_rejections": (significant & (sign == 0)).sum(axis=-1),
            "sign_errors": (significant & (sign != 0) & (agrees == -sign)).sum(axis=-1),
            "wrong_verdicts": wrong.sum(axis=-1),
            "decided": (verdict != 0).sum(axis=-1),
        }))
    return pd.concat(rows, ignore_index=True)


def _rate(hits: np.ndarray) -> tuple[float, float]:
    r = float(np.mean(hits))
    return r, math.sqrt(max(r * (1.0 - r), 1.0 / hits.size) / hits.size)


def error_rates(runs: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """Family-wise error rates with Monte Carlo standard errors, one row per (world, procedure).

    ``runs`` maps (world name, procedure label) to :func:`replicate_errors`' tables.
    Columns: ``reps``; ``fwer`` (share of replicates with a false rejection or a sign
    error) and ``fwer_se``; ``false`` and ``sign`` (each kind alone), ``wrong_verdict``
    (a wrong verdict), each with ``_se``; ``mean_wrong_verdicts``, ``mean_rejections``,
    ``mean_decided``.  A standard error is √(r(1 − r)/R), and never below √(1/R)/√R
    (so a rate of 0 in R replicates is not shown as exact).
    """
    out = []
    for (world, label), d in runs.items():
        row: dict[str, object] = {"world": world, "procedure": label, "reps": len(d)}
        for name, hits in (("fwer", (d["false_rejections"] + d["sign_errors"]) > 0),
                           ("false", d["false_rejections"] > 0), ("sign", d["sign_errors"] > 0),
                           ("wrong_verdict", d["wrong_verdicts"] > 0)):
            row[name], row[f"{name}_se"] = _rate(hits.to_numpy())
        row["mean_wrong_verdicts"] = float(d["wrong_verdicts"].mean())
        row["mean_rejections"] = float(d["rejections"].mean())
        row["mean_decided"] = float(d["decided"].mean())
        out.append(row)
    return pd.DataFrame(out).set_index(["world", "procedure"])
