"""The labels of the verdict matrix: a mark for each verdict, a short name for each law.

The chapter book/robustness.ipynb shows the matrix; its figures are in
:mod:`dpfda_book.report.chapter_figures`.
"""

from __future__ import annotations

from ..simulation.models import check_law

__all__ = ["VERDICT_MARKS", "law_label"]

VERDICT_MARKS = {"holds": "✓", "inconclusive": "?", "fails": "✗"}
"""The marks of the verdicts (with :data:`dpfda_book.report.chapter_figures.VERDICT_COLOURS`); they keep the
matrix readable without colour."""


def law_label(law: str) -> str:
    """Short column label: ``default``, ``shift 0.25``, ``wave 0.9``."""
    check_law(law)
    if law == "default":
        return "default"
    shape, share = law.split("-", 1)
    return f"{shape} {share}"
