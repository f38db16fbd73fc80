"""Every figure and table of the book, from one place: the names of the report modules.

``from dpfda_book.report import plots`` and then ``plots.figure``, ``plots.table``, ... reach
every figure and table of the book; each is defined, and documented, in the module of its
one job:

* :mod:`dpfda_book.report.style`: one style for every figure (colours, markers, fonts, sizes)
  and the helpers the figures share;
* :mod:`dpfda_book.report.tables`: tables for readers (:func:`~dpfda_book.report.tables.table`,
  :func:`~dpfda_book.report.tables.number`);
* :mod:`dpfda_book.report.study_figures`: the paper's studies drawn as the paper draws them
  (:func:`~dpfda_book.report.study_figures.figure`), in the layout each study carries
  (:class:`dpfda_book.simulation.studies.Layout`);
* :mod:`dpfda_book.report.chapter_figures`: the figures of single chapters;
* :mod:`dpfda_book.report.figure_checks`: what a drawn figure gets wrong
  (:func:`~dpfda_book.report.figure_checks.layout_problems`);
* :mod:`dpfda_book.report.explorer`: the interactive ratio explorer.

Nothing is shown or saved here (the command line, :mod:`dpfda_book.cli`, writes a run's files).
"""

from __future__ import annotations

from ..simulation.studies import LAYOUTS, Layout, layout_of
from . import chapter_figures, explorer, figure_checks, study_figures, style, tables
from .chapter_figures import *  # noqa: F403
from .explorer import *  # noqa: F403
from .figure_checks import *  # noqa: F403
from .study_figures import *  # noqa: F403
from .style import *  # noqa: F403
from .tables import *  # noqa: F403

__all__ = ["Layout", "LAYOUTS", "layout_of"] + [
    name for module in (style, tables, study_figures, chapter_figures, figure_checks, explorer)
    for name in module.__all__]
