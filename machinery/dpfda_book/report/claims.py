"""The paper's claims, judged: the registry and its verdicts, from one place.

``from dpfda_book.report import claims as cl`` and then ``cl.judge``, ``cl.CLAIMS``,
``cl.simulate``, ... reach every name of the claims; each is defined, and documented, in
the module of its one job:

* :mod:`dpfda_book.report.activation_bounds`: bounds on PTF's activation probability from the
  design alone (:func:`~dpfda_book.report.activation_bounds.theory_activation`, and
  :func:`~dpfda_book.report.activation_bounds.setting_activation` for any noiseless RKHS setting);
* :mod:`dpfda_book.report.claim_encodings`: each claim as signed comparisons
  (:class:`~dpfda_book.report.claim_encodings.Component`), with the margins and the one reading
  of "close to" and of "performs well";
* :mod:`dpfda_book.report.claim_registry`: one record per claim
  (:class:`~dpfda_book.report.claim_registry.Claim`,
  :data:`~dpfda_book.report.claim_registry.CLAIMS`);
* :mod:`dpfda_book.report.claim_labels`: the marks of the verdicts and the short names of the
  laws;
* :mod:`dpfda_book.report.claim_verdicts`: from components to verdicts, Holm's correction
  included (:func:`~dpfda_book.report.claim_verdicts.judge`,
  :func:`~dpfda_book.report.claim_verdicts.verdicts`);
* :mod:`dpfda_book.report.law_runs`: the studies under every latent law, K latent draws pooled
  (:func:`~dpfda_book.report.law_runs.simulate`);
* :mod:`dpfda_book.report.law_components`: the matrix's components from the K draws, each standard
  error taken draw by draw (:func:`~dpfda_book.report.law_components.components_from_draws`);
* :mod:`dpfda_book.report.law_null`: the test of the matrix's test, the whole procedure replicated
  where every truth is known (:func:`~dpfda_book.report.law_null.replicate_errors`).
"""

from __future__ import annotations

from .activation_bounds import setting_activation, theory_activation
from .claim_encodings import LOG_MARGIN, P_MARGIN, PAPER_P, QUIET_P, STATISTICS, Component, Form
from .claim_labels import VERDICT_MARKS, law_label
from .claim_registry import CLAIMS, Claim, claim_components, get_claim, registry_table
from .claim_verdicts import (
    CATEGORIES,
    FAMILY_ALPHA,
    FAMILY_SIZE,
    VERDICTS,
    Judgement,
    adjust,
    classify,
    components_table,
    judge,
    verdict_counts,
    verdict_matrix,
    verdicts,
)
from .law_components import (
    ERRORS,
    DrawStats,
    LawForms,
    compile_forms,
    components_from_draws,
    draw_stats,
    evaluate,
    p_values,
    restrict,
)
from .law_null import WORLDS, Procedure, World, error_rates, null_world, replicate_errors
from .law_runs import (
    NOISELESS_STUDIES,
    PILOT_STATISTICS,
    activation_by_share,
    draw_seeds,
    draws_from_pilot,
    law_level_null_size,
    pilot_needs,
    pool,
    pool_draws,
    simulate,
    simulate_draws,
)

__all__ = [
    "Component",
    "Claim",
    "Judgement",
    "CLAIMS",
    "VERDICTS",
    "FAMILY_ALPHA",
    "FAMILY_SIZE",
    "LOG_MARGIN",
    "P_MARGIN",
    "PAPER_P",
    "QUIET_P",
    "get_claim",
    "claim_components",
    "components_table",
    "adjust",
    "verdict_counts",
    "verdicts",
    "judge",
    "registry_table",
    "verdict_matrix",
    "classify",
    "CATEGORIES",
    "NOISELESS_STUDIES",
    "draw_seeds",
    "pool_draws",
    "simulate",
    "simulate_draws",
    "pool",
    "pilot_needs",
    "PILOT_STATISTICS",
    "draws_from_pilot",
    "law_level_null_size",
    "theory_activation",
    "setting_activation",
    "VERDICT_MARKS",
    "law_label",
    "activation_by_share",
    "Form",
    "STATISTICS",
    "ERRORS",
    "DrawStats",
    "LawForms",
    "draw_stats",
    "compile_forms",
    "restrict",
    "evaluate",
    "p_values",
    "components_from_draws",
    "WORLDS",
    "Procedure",
    "World",
    "null_world",
    "replicate_errors",
    "error_rates",
]
