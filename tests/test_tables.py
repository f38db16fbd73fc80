"""dpfda_book.report.tables: tables for readers (numbers, headers, captions)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from dpfda_book.report import tables


@pytest.mark.parametrize("value, text", [
    (0.1, "0.100"), (1.0, "1"), (4096.0, "4096"), (0.75512, "0.755"), (12.345, "12.3"),
    (1.2345e-5, "1.23 × 10⁻⁵"), (2.5e7, "2.50 × 10⁷"), (np.float64(0.9999998), "1.000"),
    (np.int64(7), "7"), (np.nan, "–"), (np.inf, "∞"), (0.0, "0"), (True, "yes"),
    (9.9996e-4, "1.00 × 10⁻³"), ("text", "text"),
])
def test_number(value, text):
    assert tables.number(value) == text


def test_pretty_headers():
    assert tables.pretty("tau^2 tr(A^-1)") == "τ² tr(A⁻¹)"
    assert tables.pretty("4mB'^2/(n mu)^2") == "4mB′²/(n μ)²"
    assert tables.pretty("lambda_min(A)") == "λ_min(A)"
    assert tables.pretty("sigma0") == "σ₀" and tables.pretty("mu") == "μ"
    assert tables.pretty("sqrt_log_n") == "sqrt_log_n"  # words are left alone


def test_table_is_a_numbered_list_table_with_typeset_headers():
    df = pd.DataFrame({"mu": [0.1, 1.0], "n": [4, 4096], "ratio": [1.23456, 0.1254]})
    md = tables.table(df, "A caption with $\\mu$.", name="tab-x").markdown()
    assert md.startswith(":::{list-table} A caption with $\\mu$.\n:header-rows: 1\n:name: tab-x")
    assert "* - μ\n  - n\n  - ratio FTP/PTF" in md
    assert "1.23" in md and "0.125" in md and "1.23456" not in md
    assert "4096" in md and "4096.0" not in md
    assert "* - 0.1\n" in md  # a setting as given, not to three digits
    assert md.rstrip().endswith(":::")


def test_table_without_caption_is_a_pipe_table_and_escapes_markdown():
    df = pd.DataFrame({"rule": ["sqrt_log_n", "*x*"], "value": [1.0, 2.5]})
    md = tables.table(df).markdown()
    lines = md.splitlines()
    assert lines[0] == "| rule | value |" and lines[1] == "|---:|---:|"
    assert "sqrt\\_log\\_n" in md and "\\*x\\*" in md


def test_table_two_header_levels_and_overrides():
    t1 = pd.DataFrame({"mu": [0.1, 0.1, 1.0, 1.0], "T": [2, 4, 2, 4], "n": [4] * 4,
                       "ratio": [1.2, 0.5, 0.3, 0.2]})
    laid = tables.pivot_n_by_mu_T(t1, "ratio")
    assert list(laid.index) == [4]
    md = tables.table(laid, "Table 1.").markdown()
    assert ":header-rows: 2" in md and "μ = 0.1" in md and "T = 4" in md
    md = tables.table(pd.DataFrame([[1.0, 2.0]], columns=[2, 4]), headers={2: "T = 2"}).markdown()
    assert md.startswith("| T = 2 | 4 |")


def test_table_rejects_bad_input():
    with pytest.raises(TypeError, match="data must be a pandas DataFrame"):
        tables.table([[1, 2]], "c")
    with pytest.raises(ValueError, match="data is empty"):
        tables.table(pd.DataFrame(), "c")
    with pytest.raises(ValueError, match="caption must be a non-empty string"):
        tables.table(pd.DataFrame({"a": [1]}), "  ")
    with pytest.raises(ValueError, match="name needs a caption"):
        tables.table(pd.DataFrame({"a": [1]}), name="x")
    with pytest.raises(ValueError, match="value must be a column"):
        tables.pivot_n_by_mu_T(pd.DataFrame({"mu": [1], "T": [2], "n": [4]}), "ratio")


def test_no_reprs_in_a_table():
    df = pd.DataFrame({"x": [np.float64(0.1 + 0.2), np.float32(1e-9)]})
    text = tables.table(df, "c").markdown() + str(tables.table(df, "c"))
    assert "np.float" not in text and "dtype" not in text and "0.30000000000000004" not in text


def test_table1_frame_is_the_data_and_the_pivot_its_layout():
    from dpfda_book.report import evidence

    rows = [dict(mu=mu, T=T, n=n, err_ftp=1.0 * T, err_ptf=2.0, ratio=T / 2, ratio_lo=T / 3, ratio_hi=T,
                 p_ptf_active=0.5, extra="x")
            for mu in (1.0, 0.1) for T in (4, 2) for n in (16, 4)]
    t1 = evidence.table1_frame(pd.DataFrame(rows))
    assert list(t1.columns) == ["mu", "T", "n", "MSE_FTP", "MSE_PTF", "ratio", "ratio_lo", "ratio_hi", "p_PTF"]
    assert list(t1[["mu", "T", "n"]].itertuples(index=False, name=None))[:3] == [(0.1, 2, 4), (0.1, 2, 16),
                                                                                (0.1, 4, 4)]
    laid = tables.pivot_n_by_mu_T(t1, "ratio")
    assert list(laid.index) == [4, 16] and laid.columns[0] == ("μ = 0.1", "T = 2")
    with pytest.raises(ValueError, match="lacks columns"):
        evidence.table1_frame(pd.DataFrame(rows).drop(columns="p_ptf_active"))
