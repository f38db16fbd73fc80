"""dpfda_book.report.style: one style for every figure, and the helpers the figures share."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpfda_book.report import style


def test_use_style_sets_the_books_sizes():
    style.use_style()
    assert plt.rcParams["savefig.dpi"] == plt.rcParams["figure.dpi"] == style.DPI
    assert min(float(plt.rcParams[k]) for k in ("font.size", "xtick.labelsize", "ytick.labelsize",
                                               "legend.fontsize")) >= style.MIN_FONT_PT


def test_level_style_gives_each_value_its_own_colour_and_marker():
    values = [2, 4, 6, 8]
    looks = [style.level_style(v, values) for v in values]
    assert len({d["color"] for d in looks}) == len({d["marker"] for d in looks}) == len(values)
    assert style.level_style(6, [8, 6, 4, 2]) == looks[1]  # the k-th level given, drawn alike everywhere


@pytest.mark.parametrize("k, rows, spare", [(1, 1, False), (2, 1, False), (3, 2, True), (4, 2, False)])
def test_panel_grid_two_panels_to_a_row_at_column_width(k, rows, spare):
    fig, axes, extra = style.panel_grid(k)
    assert len(axes) == k and (extra is not None) == spare
    assert fig.get_size_inches()[0] == style.TEXT_WIDTH
    assert len({round(ax.get_position().y0, 6) for ax in axes}) == rows
    plt.close(fig)


def test_labels_and_levels():
    assert style.level_label("mu", 1.0) == "μ = 1" and style.level_label("sigma0", 0.1) == "σ₀ = 0.1"
    assert style.level_label("radius_rule", "log_n") == "B′ = " + style.RULE_LABELS["log_n"]
    df = pd.DataFrame({"radius_rule": ["log_n", "B", "log_n"], "T": [8, 2, 4]})
    assert style.levels_of(df, "radius_rule") == ["log_n", "B"]  # the study's order of rules
    assert style.levels_of(df, "T") == [2, 4, 8]
    assert style.setting_text(np.float64(4.0)) == "4"


def test_check_results_refuses_what_is_not_a_results_table():
    with pytest.raises(TypeError, match="pandas DataFrame"):
        style.check_results({"n": [4]})
    with pytest.raises(ValueError, match="lacks columns"):
        style.check_results(pd.DataFrame({"n": [4]}))
