"""The static ratio explorer: dpfda_book.report.plots.ratio_explorer (its data, limits, checks) and
dpfda_book.report.explorer (its HTML).

The browser side (moving a slider redraws the figure, nothing leaves the page) is tested in
tests/browser/test_explorer.py on the built book.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from bokeh.models import ColumnDataSource, CustomJS, Slider

from dpfda.maths.rounding import psd_root_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import theory
from dpfda_book.report.explorer import explorer_html
from dpfda_book.report.plots import EXPLORER_NAMES as NAMES
from dpfda_book.report.plots import ratio_explorer
from dpfda_book.simulation.schedule import run_studies
from dpfda_book.simulation.studies import Setting, Study


@pytest.fixture(scope="module")
def df():
    common = dict(T=[4, 6], mu=[0.5, 2.0], sigma0=[0.0, 0.5], n=[4, 16, 64], radius_rule="1.1B")
    res = run_studies([Study.grid("er", family="kernel", **common),
                       Study.grid("ep", family="legendre", m=3, **common)], reps=20, seed=5)
    return pd.concat(res.values(), ignore_index=True)


def model(layout, name):
    found = layout.select({"name": name})
    found = list(found)
    assert len(found) == 1, name
    return found[0]


def callback_constants(layout) -> dict:
    """The JSON constants (ALL, LIM, ...) written into the widgets' JavaScript callback."""
    cb = next(iter(model(layout, NAMES["mu"]).js_property_callbacks["change:value"]))
    assert isinstance(cb, CustomJS)
    return {name: json.loads(text) for name, text in re.findall(r"const (\w+) = (.+?);\n", cb.code)
            if name in {"ALL", "LIM", "KEYS", "LABELS"}}


def test_initial_view_is_the_middle_setting_of_the_first_space(df):
    layout = ratio_explorer(df)
    shown = model(layout, NAMES["shown"])
    assert isinstance(shown, ColumnDataSource)
    # start: RKHS, T = 6 (middle of [4, 6]), mu = 2.0 (middle of [0.5, 2]), sigma0 = 0
    want = df[(df.family == "kernel") & (df["T"] == 6) & (df.mu == 2.0) & (df.sigma0 == 0.0)].sort_values("n")
    np.testing.assert_array_equal(shown.data["n"], want["n"].astype(float))
    np.testing.assert_array_equal(shown.data["ratio"], want["ratio"])
    np.testing.assert_array_equal(shown.data["lo"], want["ratio_lo"])
    np.testing.assert_array_equal(shown.data["hi"], want["ratio_hi"])
    mu = model(layout, NAMES["mu"])
    assert isinstance(mu, Slider) and (mu.start, mu.end, mu.value) == (0, 1, 1) and mu.title == "μ = 2"


def test_embedded_table_holds_every_setting_under_its_widget_key(df):
    c = callback_constants(ratio_explorer(df))
    assert c["KEYS"] == ["kernel", "legendre3"] and len(c["ALL"]["key"]) == len(df)
    for k, n, ratio in zip(c["ALL"]["key"], c["ALL"]["n"], c["ALL"]["ratio"]):
        space, iT, imu, isig = (int(v) for v in k.split("|"))
        row = df[(df.family == ("kernel", "legendre")[space]) & (df["T"] == (4, 6)[iT]) & (df.mu == (0.5, 2.0)[imu])
                 & (df.sigma0 == (0.0, 0.5)[isig]) & (df.n == n)]
        assert len(row) == 1 and row["ratio"].iloc[0] == ratio


def test_reference_lines_are_the_noiseless_limits_of_the_theory(df):
    lim = callback_constants(ratio_explorer(df))["LIM"]
    for j, T in enumerate((4, 6)):
        # Gaussian kernel: exactly 1/T, computed as tr(Φ̂Φ̂ᵀ)/(T·Σ K(t, t)) with Φ̂ = K^½ (psd_root_rtol)
        assert lim[f"0|{j}"] == pytest.approx(1 / T, rel=T * psd_root_rtol(T) + gamma(T + 4), abs=0)
        geom = Setting(family="legendre", n=4, T=T, mu=1.0, sigma0=0.0, radius_rule="B", m=3).geometry()
        assert lim[f"1|{j}"] == theory.ratio_limit(geom)  # the same function, here, through JSON's exact round trip
        assert lim[f"1|{j}"] < 1 / 3


def test_html_is_self_contained(df):
    html = explorer_html(ratio_explorer(df))
    assert not re.search(r"<script[^>]+\bsrc=", html), "a script would be fetched"
    assert not re.search(r"<link[^>]+\bhref=", html), "a stylesheet would be fetched"
    assert "Bokeh" in html and html.count("<script") >= 3  # BokehJS, widgets, the figure
    assert NAMES["plot"] in html


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.drop(columns="ratio_hi"), "missing columns"),
    (lambda d: d.iloc[:0], "no rows"),
    (lambda d: d.assign(ratio=np.where(d.index == 3, np.nan, d.ratio)), "non-finite"),
    (lambda d: d.drop(index=d.index[5]), "lacks some n"),
    (lambda d: d.rename(columns={"family": "space"}), r"missing columns \['family'\]$"),
    (lambda d: d.assign(family=d.family.replace({"legendre": "poly"})),
     "df's column family must be one of .*got 'poly'$"),
    # a simulation of another orthonormal family is not drawn as if it were Legendre's
    (lambda d: d.assign(family=d.family.replace({"legendre": "fourier"})),
     "the explorer draws the paper's spaces .*got 'fourier'$"),
])
def test_bad_tables_are_refused(df, mutate, match):
    with pytest.raises(ValueError, match=match):
        ratio_explorer(mutate(df))


def test_text_alternative_tables_hold_every_number_and_the_verdict(df):
    """The explorer's text alternative: one table per space, every setting a row,
    every n a column with the ratio and its interval, and the figure's sentence."""
    from dpfda_book.report import plots
    from dpfda_book.report.plots import explorer_tables

    tables = explorer_tables(df)
    assert len(tables) == 2
    assert "RKHS" in tables[0].caption and "Legendre" in tables[1].caption
    settings = df.groupby(["family", "T", "mu", "sigma0"]).ngroups
    assert sum(len(t.rows) for t in tables) == settings
    row = df[(df["family"] == "kernel") & (df["T"] == 4) & (df["mu"] == 0.5) & (df["sigma0"] == 0.0)]
    first = tables[0].rows[0]  # T = 4, mu = 0.5, sigma0 = 0 sorts first
    assert first[:3] == ["4", "0.5", "0"]
    for k, (_, r) in enumerate(row.sort_values("n").iterrows()):
        mark = " ▼" if r["ratio_hi"] < 1 else " ▲" if r["ratio_lo"] > 1 else ""
        assert first[3 + k] == plots.number(r["ratio"], 2) + mark
    hi = row.sort_values("n")["ratio_hi"].to_numpy()
    below = np.flatnonzero(np.cumprod((hi < 1)[::-1])[::-1])
    expected = f"from n = {int(row.sort_values('n')['n'].iloc[below[0]])}" if len(below) else "not at any n shown"
    assert first[-1] == expected
    marks = "".join("".join(r) for t in tables for r in t.rows)
    assert "▼" in marks or "▲" in marks  # the 20-repetition fixture decides some settings
    assert ":::{list-table}" in tables[0].markdown()


def test_html_label_names_the_figure_for_assistive_technology(df):
    html = explorer_html(ratio_explorer(df), label='The ratio "FTP/PTF" against n')
    assert 'role="figure" aria-label="The ratio &quot;FTP/PTF&quot; against n"' in html
    with pytest.raises(ValueError, match="label must be a non-empty string"):
        explorer_html(ratio_explorer(df), label="  ")
