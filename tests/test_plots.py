"""dpfda.plots: the book's figure style and its tables (issue #11)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from dpfda import plots


@pytest.mark.parametrize("value, text", [
    (0.1, "0.100"), (1.0, "1"), (4096.0, "4096"), (0.75512, "0.755"), (12.345, "12.3"),
    (1.2345e-5, "1.23 × 10⁻⁵"), (2.5e7, "2.50 × 10⁷"), (np.float64(0.9999998), "1.000"),
    (np.int64(7), "7"), (np.nan, "–"), (np.inf, "∞"), (0.0, "0"), (True, "yes"),
    (9.9996e-4, "1.00 × 10⁻³"), ("text", "text"),
])
def test_number(value, text):
    assert plots.number(value) == text


def test_pretty_headers():
    assert plots.pretty("tau^2 tr(A^-1)") == "τ² tr(A⁻¹)"
    assert plots.pretty("4mB'^2/(n mu)^2") == "4mB′²/(n μ)²"
    assert plots.pretty("lambda_min(A)") == "λ_min(A)"
    assert plots.pretty("sigma0") == "σ₀" and plots.pretty("mu") == "μ"
    assert plots.pretty("sqrt_log_n") == "sqrt_log_n"  # words are left alone


def test_table_is_a_numbered_list_table_with_typeset_headers():
    df = pd.DataFrame({"mu": [0.1, 1.0], "n": [4, 4096], "ratio": [1.23456, 0.1254]})
    md = plots.table(df, "A caption with $\\mu$.", name="tab-x").markdown()
    assert md.startswith(":::{list-table} A caption with $\\mu$.\n:header-rows: 1\n:name: tab-x")
    assert "* - μ\n  - n\n  - ratio FTP/PTF" in md
    assert "1.23" in md and "0.125" in md and "1.23456" not in md
    assert "4096" in md and "4096.0" not in md
    assert "* - 0.1\n" in md  # a setting as given, not to three digits
    assert md.rstrip().endswith(":::")


def test_table_without_caption_is_a_pipe_table_and_escapes_markdown():
    df = pd.DataFrame({"rule": ["sqrt_log_n", "*x*"], "value": [1.0, 2.5]})
    md = plots.table(df).markdown()
    lines = md.splitlines()
    assert lines[0] == "| rule | value |" and lines[1] == "|---:|---:|"
    assert "sqrt\\_log\\_n" in md and "\\*x\\*" in md


def test_table_two_header_levels_and_overrides():
    t1 = pd.DataFrame({"mu": [0.1, 0.1, 1.0, 1.0], "T": [2, 4, 2, 4], "n": [4] * 4,
                       "ratio": [1.2, 0.5, 0.3, 0.2]})
    laid = plots.table1_layout(t1, "ratio")
    assert list(laid.index) == [4]
    md = plots.table(laid, "Table 1.").markdown()
    assert ":header-rows: 2" in md and "μ = 0.1" in md and "T = 4" in md
    md = plots.table(pd.DataFrame([[1.0, 2.0]], columns=[2, 4]), headers={2: "T = 2"}).markdown()
    assert md.startswith("| T = 2 | 4 |")


def test_table_rejects_bad_input():
    with pytest.raises(TypeError, match="data must be a pandas DataFrame"):
        plots.table([[1, 2]], "c")
    with pytest.raises(ValueError, match="data is empty"):
        plots.table(pd.DataFrame(), "c")
    with pytest.raises(ValueError, match="caption must be a non-empty string"):
        plots.table(pd.DataFrame({"a": [1]}), "  ")
    with pytest.raises(ValueError, match="name needs a caption"):
        plots.table(pd.DataFrame({"a": [1]}), name="x")
    with pytest.raises(ValueError, match="value must be a column"):
        plots.table1_layout(pd.DataFrame({"mu": [1], "T": [2], "n": [4]}), "ratio")


def test_no_reprs_in_a_table():
    df = pd.DataFrame({"x": [np.float64(0.1 + 0.2), np.float32(1e-9)]})
    text = plots.table(df, "c").markdown() + str(plots.table(df, "c"))
    assert "np.float" not in text and "dtype" not in text and "0.30000000000000004" not in text


def test_ratio_figure_is_two_panels_to_a_row_at_column_width():
    plots.use_style()
    rows = [dict(sigma0=s, T=T, n=n, ratio=1 / T, ratio_lo=0.9 / T, ratio_hi=1.1 / T,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for s in (0.1, 1.0, 10.0) for T in (2, 8) for n in (4, 64, 4096)]
    fig = plots.ratio_figure(pd.DataFrame(rows), group="T", panel="sigma0")
    width, height = fig.get_size_inches()
    assert width <= plots.TEXT_WIDTH + 1e-9 and height > width / 2  # 2 x 2, not 1 x 3
    data_axes = [ax for ax in fig.axes if ax.axison]
    assert len(data_axes) == 3 and all(ax.get_xscale() == "log" for ax in data_axes)
    fig.canvas.draw()
    labels = [t.get_text() for t in data_axes[0].get_xticklabels() if t.get_text()]
    assert "4096" in labels and all(label.isdigit() for label in labels), labels
    # the same level drawn alike: T = 8 is the second level in both calls
    assert plots.level_style(8, (2, 8)) == plots.level_style(4, (2, 4))


def test_pipeline_diagram_and_ratio_map_fit_the_column():
    plots.use_style()
    assert plots.pipeline_diagram().get_size_inches()[0] <= plots.TEXT_WIDTH
    rows = [dict(T=T, sigma0=s, n=n, ratio=r, ratio_lo=r * 0.9, ratio_hi=r * 1.1,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for T in (2, 8) for s in (0.1, 1.0) for n, r in ((4, 2.0), (64, 0.5))]
    fig = plots.ratio_map(pd.DataFrame(rows))
    assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH
