"""dpfda_book.report.plots: one place from which every figure and table of the book is reached."""

from __future__ import annotations

import importlib

import pytest

from dpfda_book.report import plots

MODULES = ["style", "tables", "study_figures", "chapter_figures", "figure_checks", "explorer"]

# Names the chapters, the tests and the command line use as plots.X.
USED = """Layout LAYOUTS layout_of judgement_table RULE_LABELS RULE_TEXT STYLE use_style level_style
log_axes panel_grid figure ratio_map pipeline_diagram table number pretty pivot_n_by_mu_T ratio_figure
scaled_figure caption layout_problems colour_distance pipeline_run_figure design_ratio_figure
release_bands_figure nested_bands_figure VERDICT_COLOURS verdict_figure law_figure
activation_by_share_figure noise_collapse_figure composition_ratio_figure legendre_limit_figure
kernel_eigenvalue_figure activation_figure activation_by_norm_figure EXPLORER_COLUMNS EXPLORER_NAMES
ratio_explorer explorer_tables TEXT_WIDTH MIN_FONT_PT DPI METHOD_STYLE HEADERS COLOURS MARKERS
MIN_COLOUR_DELTA_E MIN_BAND_PX""".split()


def test_every_name_of_the_report_modules_is_reached_from_plots_once():
    names = [n for m in MODULES for n in importlib.import_module(f"dpfda_book.report.{m}").__all__]
    assert len(names) == len(set(names)), "two report modules define the same public name"
    assert set(plots.__all__) == set(names) | {"Layout", "LAYOUTS", "layout_of"}
    assert len(plots.__all__) == len(set(plots.__all__))
    for m in MODULES:
        module = importlib.import_module(f"dpfda_book.report.{m}")
        for n in module.__all__:
            assert getattr(plots, n) is getattr(module, n), (m, n)


@pytest.mark.parametrize("name", USED)
def test_the_names_in_use_are_still_there(name):
    assert name in plots.__all__
    exec(f"from dpfda_book.report.plots import {name}", {})


def test_layouts_are_the_studies():
    from dpfda_book.simulation import studies

    assert plots.Layout is studies.Layout and plots.LAYOUTS is studies.LAYOUTS
    assert plots.layout_of is studies.layout_of
