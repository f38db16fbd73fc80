"""Figures and tables of the book; the simulation studies' drawn as the paper draws them.

How each of the paper's studies is drawn is a :class:`Layout` (:data:`LAYOUTS`, keyed by
study name; :func:`figure` draws a study in its layout):

* ``kind="ratio"`` (Figures 1, 3, 4, 6): the FTP/PTF error ratio against n on
  log–log axes, one panel per μ (Figures 1, 4) or σ₀ (Figures 3, 6), colour and
  marker by T (RKHS) or m (H_m), dashed lines at the noiseless reference 1/T
  (Corollary 15) or 1/m (Corollary 12) in the matching colour; error bars are
  the 95% confidence intervals of the ratio (:data:`dpfda.simulation.tabulate.CI_METHOD`).
  A thin grey line marks ratio 1, above which PTF is the more accurate.
* ``kind="scaled"`` (Figures 2, 5): n × MSE (or n × IMSE) against n, FTP in
  the left panel and PTF in the right, one line per radius rule; error bars
  ± 1.96 n·SE.
* ``kind="table"`` (Table 1): :func:`dpfda.report.evidence.table1_frame` computes the table, and
  :func:`pivot_n_by_mu_T` lays one of its quantities out as the paper does (rows n,
  columns T within μ).

Every table goes through :func:`table`: a numbered, captioned table (MyST
``list-table``, which Sphinx numbers "Table k.j"), headers typeset (μ, σ₀, B′, not
``mu``), every number formatted by :func:`number` (no reprs, no 16-digit floats).

The study figures take the results table of :func:`dpfda.simulation.schedule.run_study`; the other
figures of the book (the pipelines, the designs, the growth data, the claims' verdict
matrix, the interactive ratio explorer, ...) take what their chapters compute. The
figures are matplotlib figures (the explorer: a Bokeh layout); nothing is shown or saved
here (the command line, :mod:`dpfda.cli`, writes a run's files, atomically).

One style for every figure of the book (:func:`use_style`, :data:`STYLE`): figures
at most :data:`TEXT_WIDTH` inches wide (the book's content column), no text smaller
than :data:`MIN_FONT_PT` points, drawn at :data:`DPI` dots per inch, on white, and the
same colour and marker for the same quantity everywhere (:func:`level_style`,
:data:`METHOD_STYLE`). Multi-panel figures are laid out two panels to a row.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.collections import PolyCollection
from matplotlib.colors import ListedColormap, TwoSlopeNorm
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch
from matplotlib.rcsetup import cycler

from ..config import Z95, proportion_se
from ..maths.data import LAW_SHIFTS, kernel_direction, polynomial_direction
from ..maths.spaces import LegendreSpace, gaussian_kernel
from ..mechanisms.theory import ratio_limit
from ..simulation.studies import Setting, Study, check_family
from . import _layouts
from ._layouts import Layout, layout_of
from .claims import P_MARGIN, PAPER_P, VERDICT_MARKS, VERDICTS, get_claim, law_label

__all__ = [
    "Layout",
    "LAYOUTS",
    "layout_of",
    "judgement_table",
    "RULE_LABELS",
    "RULE_TEXT",
    "STYLE",
    "use_style",
    "level_style",
    "log_axes",
    "panel_grid",
    "figure",
    "ratio_map",
    "pipeline_diagram",
    "table",
    "number",
    "pivot_n_by_mu_T",
    "ratio_figure",
    "scaled_figure",
    "caption",
    "layout_problems",
    "colour_distance",
    "pipeline_run_figure",
    "design_ratio_figure",
    "release_bands_figure",
    "nested_bands_figure",
    "VERDICT_COLOURS",
    "verdict_figure",
    "law_figure",
    "activation_by_share_figure",
    "noise_collapse_figure",
    "composition_ratio_figure",
    "legendre_limit_figure",
    "kernel_eigenvalue_figure",
    "activation_figure",
    "activation_by_norm_figure",
    "EXPLORER_COLUMNS",
    "EXPLORER_NAMES",
    "ratio_explorer",
    "explorer_tables",
]

# ---------------------------------------------------------------------------
# How each study is drawn (defined in _layouts, which the command line imports alone)
# ---------------------------------------------------------------------------

LAYOUTS: dict[str, Layout] = _layouts.LAYOUTS
"""The layout of each of the paper's studies (:func:`dpfda.simulation.studies.paper_studies`), by name."""


RULE_LABELS = {
    "B": "$B$",
    "1.1B": "$1.1B$",
    "sqrt_log_n": r"$\sqrt{\log n}$",
    "log_n": r"$\log n$",
    "sqrt_n": r"$\sqrt{n}$",
    "n_2_3": r"$n^{2/3}$",
}
"""Figure labels of the named radius rules (:data:`dpfda.simulation.studies.RADIUS_RULES`; matplotlib mathtext)."""

RULE_TEXT = {
    "B": "B",
    "1.1B": "1.1B",
    "sqrt_log_n": "√(log n)",
    "log_n": "log n",
    "sqrt_n": "√n",
    "n_2_3": "n^(2/3)",
}
"""Plain-text names of the radius rules, for tables (no TeX to typeset)."""


# ---------------------------------------------------------------------------
# One style for every figure
# ---------------------------------------------------------------------------

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
# Okabe-Ito colours (safe for colour-blind readers, legible on white and in print).
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442"]
#: Width of the book's content column in inches; no figure is wider.
TEXT_WIDTH = 6.4
#: Smallest font size (points) of any text in a figure; the browser test checks that
#: this is at least 9 CSS px tall as displayed.
MIN_FONT_PT = 9.0
#: Resolution of the figures' PNGs in dots per inch, sharp on high-density screens.
DPI = 150
#: FTP and PTF drawn alike in every chapter.
METHOD_STYLE = {"ftp": {"color": COLOURS[0], "marker": "o"},
                "ptf": {"color": COLOURS[1], "marker": "s"}}

#: The matplotlib rcParams of the book's figures, applied by :func:`use_style`.
STYLE: dict[Any, Any] = {  # rcParams keys (matplotlib types them as literals)
    "figure.figsize": (TEXT_WIDTH, 3.6),
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "figure.constrained_layout.use": False,
    "font.size": 10.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 10.0,
    "xtick.labelsize": MIN_FONT_PT,
    "ytick.labelsize": MIN_FONT_PT,
    "legend.fontsize": MIN_FONT_PT,
    "legend.title_fontsize": MIN_FONT_PT,
    "figure.titlesize": 10.0,
    "legend.frameon": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.4,
    "lines.markersize": 5.0,
    "errorbar.capsize": 2.5,
    "axes.prop_cycle": cycler(color=COLOURS),
    "mathtext.fontset": "dejavusans",
}


def use_style() -> None:
    """Apply the book's figure style (:data:`STYLE`) to matplotlib's defaults.

    Every chapter calls this once, after importing pyplot.
    """
    mpl.rcParams.update(STYLE)


def level_style(value, values) -> dict:
    """Colour and marker of the ``value``-th level of a parameter (T, m, B′ rule, ...).

    The k-th level of any quantity is drawn alike in every figure.
    """
    k = list(values).index(value)
    return {"color": COLOURS[k % len(COLOURS)], "marker": MARKERS[k % len(MARKERS)]}


def log_axes(ax, *, x_base: float | None = 2, y_log: bool = True) -> None:
    """Log axes with readable tick labels.

    Sample sizes as plain integers (4, 16, ..., 4096) on a base-2 axis, and, on
    a log y axis spanning less than two decades, the 2 and 5 multiples labelled
    as plain numbers.
    """
    if x_base is not None:
        ax.set_xscale("log", base=x_base)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    if y_log:
        ax.set_yscale("log")
        lo, hi = ax.get_ylim()
        if lo > 0 and hi / lo < 100:
            ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))


def panel_grid(k: int, *, height: float = 2.7, sharey: bool = True):
    """A figure for ``k`` panels, two to a row, :data:`TEXT_WIDTH` wide.

    Returns ``(fig, axes, spare)``: the ``k`` panel axes in reading order and a spare
    axis (switched off, for the legend) when ``k`` is odd, else ``None``.
    """
    cols = 1 if k == 1 else 2
    rows = -(-k // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(TEXT_WIDTH, height * rows + 0.4),
                             sharey=sharey, squeeze=False)
    flat = list(grid.ravel())
    spare = None
    if len(flat) > k:
        spare = flat[k]
        spare.set_axis_off()
    return fig, flat[:k], spare
_SYMBOLS = {"T": "T", "m": "m", "mu": "μ", "sigma0": "σ₀", "radius_rule": "B′", "n": "n"}


def _setting_text(v) -> str:
    """A setting's value as given: 4.0 as "4", 0.1 as "0.1"."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


def _level_label(param: str, value) -> str:
    """A legend or panel label: "T = 4", "μ = 0.1", "B′ = log n" (mathtext)."""
    if param == "radius_rule":
        return f"B′ = {RULE_LABELS.get(value, value)}"
    return f"{_SYMBOLS.get(param, param)} = {_setting_text(value)}"


def _check_results(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` if it is a non-empty results table of run_study, else a TypeError/ValueError."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame from run_study, got {type(df).__name__}")
    need = {"n", "err_ftp", "err_ptf", "ratio", "ratio_lo", "ratio_hi", "se_ftp", "se_ptf", "metric"}
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"results table lacks columns {sorted(missing)}; pass the output of run_study")
    if df.empty:
        raise ValueError("results table is empty")
    return df


def _levels(df: pd.DataFrame, col: str) -> list:
    """The values of ``col`` in drawing order: radius rules as the study lists them, else sorted."""
    if col == "radius_rule":
        seen = []
        for v in df[col]:
            if v not in seen:
                seen.append(v)
        return seen  # keep the study's order of rules
    return sorted(df[col].dropna().unique())


def _legend(fig, axes, spare) -> None:
    handles, labels = axes[0].get_legend_handles_labels()
    if spare is not None:
        spare.legend(handles, labels, loc="center")
    else:
        fig.legend(handles, labels, loc="lower center", ncols=min(len(labels), 4))


def ratio_figure(df: pd.DataFrame, *, group: str = "T", panel: str | None = "mu",
                 reference: bool = True, title: str | None = None):
    """Error ratio FTP/PTF against n (Figures 1, 3, 4, 6), two panels to a row."""
    df = _check_results(df)
    panels = _levels(df, panel) if panel else [None]
    fig, axes, spare = panel_grid(len(panels))
    metric = df["metric"].iloc[0]
    groups = _levels(df, group)
    for ax, pv in zip(axes, panels):
        sub = df if pv is None else df[df[panel] == pv]
        for gv in groups:
            d = sub[sub[group] == gv].sort_values("n")
            if d.empty:
                continue
            look = level_style(gv, groups)
            yerr = np.vstack([d["ratio"] - d["ratio_lo"], d["ratio_hi"] - d["ratio"]])
            ax.errorbar(d["n"], d["ratio"], yerr=yerr, **look, label=_level_label(group, gv))
            if reference and group in ("T", "m"):
                ax.axhline(1.0 / float(gv), color=look["color"], ls="--", lw=1.0, alpha=0.8)
        ax.axhline(1.0, color="0.6", lw=0.8, ls=":")
        log_axes(ax)
        ax.set_xlabel("sample size $n$")
        if panel is not None and pv is not None:
            ax.set_title(_level_label(panel, pv))
    for ax in axes[::2]:
        ax.set_ylabel(f"{metric} ratio FTP / PTF")
    _legend(fig, axes, spare)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.1 if spare is None else 0, 1, 1))
    return fig


def scaled_figure(df: pd.DataFrame, *, group: str = "radius_rule", title: str | None = None):
    """n × error of FTP (left) and PTF (right) against n (Figures 2, 5)."""
    df = _check_results(df)
    metric = df["metric"].iloc[0]
    fig, axes, spare = panel_grid(2, height=3.0, sharey=False)
    groups = _levels(df, group)
    for ax, method in zip(axes, ("ftp", "ptf")):
        for gv in groups:
            d = df[df[group] == gv].sort_values("n")
            y = d["n"] * d[f"err_{method}"]
            err = Z95 * d["n"] * d[f"se_{method}"]
            ax.errorbar(d["n"], y, yerr=err, **level_style(gv, groups), label=_level_label(group, gv))
        log_axes(ax)
        ax.set_xlabel("sample size $n$")
        ax.set_title(method.upper())
    axes[0].set_ylabel(f"$n$ × {metric}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=3)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def ratio_map(df: pd.DataFrame, *, panel: str = "T", rows: str = "sigma0",
              cols: str = "n"):
    """The FTP/PTF ratio as a heat map over ``rows`` × ``cols``.

    One panel per value of ``panel``, panels stacked. Colour: log₂ of the ratio (blue: FTP more accurate, red:
    PTF); each cell is labelled with the ratio, in bold where the 95% interval excludes
    1, with "(PTF)" where PTF wins and "(?)" where the interval contains 1.
    """
    df = _check_results(df)
    verdict = np.select([df["ratio_hi"] < 1, df["ratio_lo"] > 1], ["FTP", "PTF"], "undecided")
    df = df.assign(_verdict=verdict)
    panels, rvals, cvals = (_levels(df, c) for c in (panel, rows, cols))
    fig, axes = plt.subplots(len(panels), 1, figsize=(TEXT_WIDTH, 2.9 * len(panels) + 0.4),
                             squeeze=False, layout="constrained")
    norm = TwoSlopeNorm(vmin=-3.5, vcenter=0.0, vmax=1.0)
    for ax, pv in zip(axes[:, 0], panels):
        d = df[df[panel] == pv]
        ratio = d.pivot(index=rows, columns=cols, values="ratio").loc[rvals, cvals].to_numpy()
        marks = d.pivot(index=rows, columns=cols, values="_verdict").loc[rvals, cvals].to_numpy()
        im = ax.imshow(np.log2(ratio), origin="lower", cmap="RdBu_r", norm=norm, aspect="auto")
        for (i, j), r in np.ndenumerate(ratio):
            tail = {"FTP": "", "PTF": "\n(PTF)", "undecided": "\n(?)"}[marks[i, j]]
            dark = abs(float(norm(np.log2(r))) - 0.5) > 0.35  # white text on deep colours
            ax.text(j, i, f"{r:.2f}{tail}", ha="center", va="center", fontsize=MIN_FONT_PT,
                    color="white" if dark else "black",
                    fontweight="normal" if marks[i, j] == "undecided" else "bold")
        if cols == "n":
            ax.set_xticks(range(len(cvals)), [f"{int(v)}" for v in cvals])
        else:
            ax.set_xticks(range(len(cvals)), [_setting_text(v) for v in cvals])
        ax.set_yticks(range(len(rvals)), [_setting_text(v) for v in rvals])
        if pv == panels[-1]:
            ax.set_xlabel("sample size $n$" if cols == "n" else _SYMBOLS.get(cols, cols))
        ax.set_ylabel(_SYMBOLS.get(rows, rows))
        ax.set_title(_level_label(panel, pv))
        ax.grid(False)
    fig.colorbar(im, ax=axes[:, 0], label="log₂ (ratio FTP / PTF)", shrink=0.7)
    return fig


def pipeline_diagram():
    """The two pipelines as block diagrams, one row each.

    The order in which each clips or fits, averages over the n curves, and adds
    noise (Algorithms 1 and 2).
    """
    rows = [
        ("FTP", METHOD_STYLE["ftp"]["color"], [
            "n curves\non the grid", "fit each curve\nin the ball B′",
            "average\nthe n fits", "add Gaussian\nnoise once,\nσ = 2B′/(nμ)",
            "release\nthe curve"]),
        ("PTF", METHOD_STYLE["ptf"]["color"], [
            "n curves\non the grid", "clip each value\nto ±cⱼ", "average at\neach tⱼ",
            "add noise σⱼ\nto each of\nthe T means", "fit in the\nball B′,\nrelease"]),
    ]
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH, 2.9))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.2, 4.2)
    ax.set_axis_off()
    width, height, step = 1.74, 1.2, 1.99
    for r, (name, colour, steps) in enumerate(rows):
        y = 3.0 - 2.0 * r
        tint = 0.8 + 0.2 * np.array(mpl.colors.to_rgb(colour))
        ax.text(0.0, y + 0.78, name, fontsize=11, fontweight="bold", color=colour)
        for k, label in enumerate(steps):
            x = 0.1 + k * step
            private = (name == "FTP" and k >= 3) or (name == "PTF" and k >= 3)
            ax.add_patch(FancyBboxPatch((x, y - height / 2), width, height,
                                        boxstyle="round,pad=0.02,rounding_size=0.12",
                                        facecolor=tint if private else "white",
                                        edgecolor=colour, lw=1.3))
            ax.text(x + width / 2, y, label, ha="center", va="center",
                    fontsize=MIN_FONT_PT)
            if k:
                ax.add_patch(FancyArrowPatch((x - step + width + 0.02, y), (x - 0.02, y),
                                             arrowstyle="-|>", mutation_scale=11,
                                             color="0.25", lw=1.1))
    ax.text(5.0, -0.02, "shaded: the noise, and what comes after it (post-processing, "
            "no further privacy cost)", ha="center", fontsize=MIN_FONT_PT, color="0.3")
    fig.tight_layout(pad=0.3)
    return fig


def figure(df: pd.DataFrame, study: Study | str | None = None, *, layout: Layout | None = None,
           title: str | None = None):
    """The figure of a study in its layout (ratio or scaled).

    ``study`` (a :class:`~dpfda.simulation.studies.Study` or its name) defaults to the study named
    in ``df["study"]``; its layout is :data:`LAYOUTS`' entry for it unless ``layout`` is
    given (a study of one's own needs one).
    """
    df = _check_results(df)
    if layout is None:
        layout = layout_of(str(df["study"].iloc[0]) if study is None else study)
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a plots.Layout, got {type(layout).__name__}")
    if layout.kind == "ratio":
        return ratio_figure(df, group=layout.group, panel=layout.panel, reference=layout.reference,
                            title=title)
    if layout.kind == "scaled":
        return scaled_figure(df, group=layout.group, title=title)
    raise ValueError("the layout is a table: show dpfda.report.evidence.table1_frame(df) with plots.table")


def caption(df_or_meta, layout: Layout | None = None) -> str:
    """A caption sentence stating the source, the repetitions and the seed.

    What the error bars are depends on the layout (default: :data:`LAYOUTS`' entry for
    the run's study, if it is one of the paper's).
    """
    meta = df_or_meta.attrs.get("dpfda", {}) if isinstance(df_or_meta, pd.DataFrame) else dict(df_or_meta)
    if not meta:
        raise ValueError("no run metadata: pass the DataFrame returned by run_study or its attrs['dpfda']")
    if layout is None:
        layout = LAYOUTS.get(str(meta.get("study", "")).split("__", 1)[0])
    kind = layout.kind if layout is not None else None
    src = f" ({meta['source']})" if meta.get("source") else ""
    what = "Error bars are 95% delta-method confidence intervals." if kind == "ratio" else (
        "Error bars are ±1.96 Monte Carlo standard errors." if kind == "scaled" else
        "Ratios carry 95% delta-method confidence intervals.")
    return (f"{meta.get('title', '')}{src}. Recomputed with dpfda {meta.get('dpfda_version', '?')}: "
            f"{meta['reps']} Monte Carlo repetitions per setting, seed {meta['seed']}. {what}")


# ---------------------------------------------------------------------------
# Tables for readers
# ---------------------------------------------------------------------------

#: Column and index names of the package's tables, as a reader should see them.
HEADERS = {
    "mu": "μ", "sigma0": "σ₀", "T": "T", "n": "n", "m": "m", "radius": "B′",
    "radius_rule": "B′ rule", "err_ftp": "error FTP", "err_ptf": "error PTF",
    "se_ftp": "s.e. FTP", "se_ptf": "s.e. PTF", "ratio": "ratio FTP/PTF",
    "ratio_lo": "95% CI low", "ratio_hi": "95% CI high",
    "p_ptf_active": "p̂ PTF active", "p_ftp_active": "p̂ FTP active",
    "p_ftp_active_curves": "p̂ FTP curve active", "MSE_FTP": "MSE FTP",
    "MSE_PTF": "MSE PTF", "p_PTF": "p̂ PTF", "alpha": "α", "eps": "ε", "delta": "δ",
    "kappa": "κ", "lambda_min": "λ_min", "lambda_max": "λ_max",
}
#: Columns that hold settings (shown as given, 0.1 rather than 0.100).
PARAMETERS = {"mu", "sigma0", "T", "n", "m", "radius", "alpha", "delta", "rho"}
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_GREEK = {"alpha": "α", "delta": "δ", "eps": "ε", "kappa": "κ", "lambda": "λ",
          "sigma0": "σ₀", "sigma": "σ", "tau": "τ", "theta": "θ", "rho": "ρ", "mu": "μ",
          "nu": "ν", "phi": "φ", "Phi": "Φ"}
_PRETTY: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(rf"(?<![A-Za-z]){w}(?![A-Za-z])"), g) for w, g in _GREEK.items()
] + [
    (re.compile(r"\^\((-?\d+)\)|\^(-?\d+)"),
     lambda m: (m.group(1) or m.group(2)).translate(_SUPERSCRIPT)),
    (re.compile(r"'"), "′"),
]


def pretty(name: str) -> str:
    """A plain-text column name made readable.

    Greek letters for their names, powers as superscripts
    (``tau^2 tr(A^-1)`` → ``τ² tr(A⁻¹)``), primes as ′.
    """
    name = HEADERS.get(name, name)
    for pattern, repl in _PRETTY:
        name = pattern.sub(repl, name)
    return name


def number(v, digits: int = 3) -> str:
    """A number as a reader should see it.

    Integers as integers, others to ``digits`` significant digits, very small or
    large ones as ``1.23 × 10⁻⁵``; NaN as "–".
    """
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not np.isfinite(v):
            return "–" if np.isnan(v) else ("∞" if v > 0 else "−∞")
        if v == 0:
            return "0"
        if v.is_integer() and abs(v) < 1e6:
            return str(int(v))
        exponent = int(np.floor(np.log10(abs(v))))
        if -3 <= exponent < 5:
            decimals = max(digits - 1 - exponent, 0)
            return f"{v:.{decimals}f}"
        mantissa = f"{v / 10 ** exponent:.{digits - 1}f}"
        if mantissa.startswith("10"):  # rounding carried into the next power of ten
            mantissa, exponent = f"{1:.{digits - 1}f}", exponent + 1
        return f"{mantissa} × 10{str(exponent).translate(_SUPERSCRIPT)}"
    return str(v)


def _cell_text(text: str) -> str:
    text = " ".join(str(text).split())
    return text if text else " "


def _escape(text: str) -> str:
    """Markdown's special characters in a data cell, outside $...$ math, escaped."""
    parts = re.split(r"(\$[^$]+\$)", str(text))
    return "".join(p if p.startswith("$") and p.endswith("$") and len(p) > 1
                   else re.sub(r"([\\`*_<\[\]])", r"\\\1", p) for p in parts)


class _Table:
    """A table that the book renders as a numbered table (made by :func:`table`).

    With a caption it displays (in a notebook, or glued and pasted with ``{glue:md}``
    and ``:format: myst``) as a MyST ``list-table`` with that caption and an optional
    label (``name``), which Sphinx numbers "Table k.j". Without one it is a plain pipe
    table, to be pasted with ``{glue:md}`` inside a ``:::{table}`` directive whose
    caption is written in the prose. ``str()`` gives plain text.
    """

    def __init__(self, header_rows: list[list[str]], rows: list[list[str]],
                 caption: str | None = None, name: str | None = None):
        if caption is not None and not (isinstance(caption, str) and caption.strip()):
            raise ValueError("caption must be a non-empty string or None")
        if name is not None and not (isinstance(name, str) and name.strip()):
            raise ValueError("name must be a non-empty string or None")
        if name is not None and caption is None:
            raise ValueError("name needs a caption: label the {table} directive instead")
        width = {len(r) for r in header_rows + rows}
        if len(width) != 1:
            raise ValueError(f"every row must have the same number of cells, got {sorted(width)}")
        self.header_rows, self.rows, self.caption, self.name = header_rows, rows, caption, name

    def markdown(self) -> str:
        """The table as GitHub-flavoured Markdown."""
        if self.caption is None:
            head = [", ".join(x for x in col if x.strip()) or " "
                    for col in zip(*self.header_rows)]
            lines = ["| " + " | ".join(_cell_text(h) for h in head) + " |",
                     "|" + "|".join("---:" for _ in head) + "|"]
            lines += ["| " + " | ".join(_cell_text(c).replace("|", "\\|") for c in row) + " |"
                      for row in self.rows]
            return "\n".join(lines) + "\n"
        lines = [f":::{{list-table}} {' '.join(self.caption.split())}",
                 f":header-rows: {len(self.header_rows)}"]
        if self.name:
            lines.append(f":name: {self.name}")
        lines.append("")
        for row in self.header_rows + self.rows:
            for k, cell in enumerate(row):
                lines.append(("* - " if k == 0 else "  - ") + _cell_text(cell))
        lines.append(":::")
        return "\n".join(lines) + "\n"

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        table = self.header_rows + self.rows
        widths = [max(len(r[k]) for r in table) for k in range(len(table[0]))]
        out = [self.caption] if self.caption else []
        for i, row in enumerate(table):
            out.append("  ".join(c.rjust(w) for c, w in zip(row, widths)))
            if i == len(self.header_rows) - 1:
                out.append("  ".join("-" * w for w in widths))
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.__str__()


def table(data, caption: str | None = None, *, name: str | None = None, index: bool | None = None,
          digits: int = 3, formats: dict | None = None, headers: dict | None = None) -> _Table:
    """A DataFrame or Series as a numbered, captioned table: the one way the book makes a table.

    The result displays in a notebook (and glues, ``{glue:md}`` with ``:format: myst``) as
    a MyST ``list-table`` with the caption, which Sphinx numbers "Table k.j"; without a
    caption, as a plain pipe table to paste inside a ``:::{table}`` directive of the prose.
    Its ``markdown()`` is that text, and ``str()`` plain text.

    Parameters
    ----------
    data : pandas.DataFrame or pandas.Series
        The table; a Series becomes one column. Columns with two levels get two header
        rows (the upper label written once above its group).
    caption : str, optional
        The table's caption (MyST markdown: ``$...$`` math and roles allowed). Without
        one, a pipe table to paste into a ``:::{table}`` directive of the prose.
    name : str, optional
        Label for cross-references (``{numref}`name```).
    index : bool, optional
        Show the index as the first column; by default unless it is a plain range.
    digits : int
        Significant digits of the numbers (see :func:`number`).
    formats : dict, optional
        Column -> format string (``"{:.3f}"``) or callable, overriding :func:`number`.
    headers : dict, optional
        Column or index name -> header text, overriding :data:`HEADERS`.
    """
    if isinstance(data, pd.Series):
        data = data.to_frame(name=data.name if data.name is not None else " ")
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame or Series, got {type(data).__name__}")
    if data.empty:
        raise ValueError("data is empty: there is no table to show")
    formats, names = dict(formats or {}), {**HEADERS, **(headers or {})}

    def head(x):
        if isinstance(x, tuple):
            return " ".join(head(y) for y in x)
        if x in names:
            return names[x]
        if isinstance(x, (float, np.floating, int, np.integer)):
            return _setting_text(x)
        return names[str(x)] if str(x) in names else pretty(str(x))

    if index is None:
        index = not isinstance(data.index, pd.RangeIndex)
    levels = data.columns.nlevels
    if levels > 2:
        raise ValueError(f"at most two levels of columns, got {levels}")
    if levels == 2:
        top, seen = [], None
        for a, _ in data.columns:
            top.append(head(a) if a != seen else "")
            seen = a
        header_rows = [top, [head(b) for _, b in data.columns]]
    else:
        header_rows = [[head(c) for c in data.columns]]
    if index:
        idx_names = [head(n) if n is not None else "" for n in data.index.names]
        idx_label = " · ".join(x for x in idx_names if x)
        header_rows = [[""] + r for r in header_rows[:-1]] + [[idx_label] + header_rows[-1]]
    rows = []
    for key, row in zip(data.index, data.itertuples(index=False)):
        cells = []
        for col, v in zip(data.columns, row):
            f = formats.get(col)
            if f is None and col in PARAMETERS:
                f = _setting_text  # a setting, not an estimate: 0.1, not 0.100
            text = f(v) if callable(f) else f.format(v) if f else number(v, digits)
            cells.append(_escape(text))
        if index:
            keys = key if isinstance(key, tuple) else (key,)
            cells = [" · ".join(_escape(names.get(k, k)) if isinstance(k, str) else _setting_text(k)
                                for k in keys)] + cells
        rows.append(cells)
    return _Table(header_rows, rows, caption, name)


def pivot_n_by_mu_T(table1_frame: pd.DataFrame, value: str) -> pd.DataFrame:
    """One quantity of Table 1 as the paper lays it out: rows n, columns T within μ.

    ``table1_frame`` is :func:`dpfda.report.evidence.table1_frame`'s table; the columns carry two
    header levels ("μ = 0.1" above "T = 2"), for :func:`table`.
    """
    if value not in table1_frame.columns:
        raise ValueError(f"value must be a column of table1_frame(df), one of {list(table1_frame.columns)}")
    out = table1_frame.pivot_table(index="n", columns=["mu", "T"], values=value)
    out.columns = pd.MultiIndex.from_tuples([(f"μ = {_setting_text(mu)}", f"T = {int(T)}")
                                             for mu, T in out.columns])
    return out


# ---------------------------------------------------------------------------
# Figures a reader can read: what a drawn figure gets wrong, from its own boxes
# ---------------------------------------------------------------------------

#: Two series of one figure whose colours are closer than this (CIE76 ΔE in CIELAB) look
#: alike to many readers (and in print); each must then differ in marker or line style too.
MIN_COLOUR_DELTA_E = 30.0
#: A filled band thinner than this on average (display pixels at :data:`DPI`) is not seen.
MIN_BAND_PX = 2.5


def _cielab(colour) -> np.ndarray:
    """CIELAB (D65) of a matplotlib colour."""
    rgb = np.asarray(mpl.colors.to_rgb(colour), dtype=float)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ lin / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def colour_distance(a, b) -> float:
    """CIE76 colour difference ΔE between two matplotlib colours (0: the same colour)."""
    return float(np.linalg.norm(_cielab(a) - _cielab(b)))


def _data_lines(ax) -> list:
    """Lines drawn in data coordinates (not axhline/axvline references), shown, with data."""
    return [ln for ln in ax.lines if ln.get_visible() and ln.get_transform().contains_branch(ax.transData)
            and len(ln.get_xydata()) and not ln.get_label().startswith("_child")
            and (ln.get_linestyle() not in ("None", "", " ") or ln.get_marker() not in (None, "None", "", " "))]


def _data_bands(ax) -> list:
    return [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_visible()
            and len(c.get_paths())]


def _legend_colours(legend) -> list:
    colours = []
    for handle in getattr(legend, "legend_handles", None) or getattr(legend, "legendHandles", []):
        if handle is None:
            continue
        for getter in ("get_color", "get_facecolor", "get_edgecolor"):
            if hasattr(handle, getter):
                value = getattr(handle, getter)()
                value = np.asarray(mpl.colors.to_rgba_array(value))
                colours += [tuple(v[:3]) for v in value if v[3] > 0]
    return colours


def _series_colour(artist):
    if isinstance(artist, Line2D):
        return mpl.colors.to_rgb(artist.get_color())
    face = mpl.colors.to_rgba_array(artist.get_facecolor())
    return tuple(face[0][:3]) if len(face) else None


def _overlap(a, b, pad: float = 0.5) -> bool:
    return (a.x0 + pad < b.x1 and b.x0 + pad < a.x1 and a.y0 + pad < b.y1 and b.y0 + pad < a.y1)


def _band_thickness(collection) -> float:
    """Mean thickness (display px) of a filled band: its area over its width."""
    area, width = 0.0, 0.0
    for path in collection.get_paths():
        xy = collection.get_transform().transform(path.vertices)
        x, y = xy[:, 0], xy[:, 1]
        area += 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
        width += float(np.ptp(x))
    return area / width if width > 0 else 0.0


def layout_problems(fig) -> list[str]:
    """What a reader would trip over in ``fig``, measured on matplotlib's own bounding boxes.

    The figure is drawn, then checked for:

    * **colliding text**: titles, axis labels, the figure's title and the legends must not
      overlap one another, and no text may run outside the figure;
    * **a legend over the data**: no point or line vertex of a panel's data, and no filled
      band, under a legend box;
    * **unnamed colours**: when a figure has legends, every colour of every panel's data is
      named by a legend of that panel or of the figure (a legend in a switched-off spare
      panel counts as the figure's); a panel whose data only another panel's legend explains
      is reported;
    * **mixed colours**: two translucent bands of different colours that overlap in one
      panel make a third colour no legend names;
    * **invisible data**: a filled band thinner than ``MIN_BAND_PX`` pixels on average;
    * **hidden series**: a series with markers of which half the points or more sit under
      another series' markers (within a marker's radius);
    * **look-alike series**: two labelled series closer in colour than
      ``MIN_COLOUR_DELTA_E`` with the same marker and line style.

    Returns a list of sentences, empty when nothing was found.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems: list[str] = []
    frame = fig.bbox
    data_axes = [ax for ax in fig.axes if ax.axison and ax.get_label() != "<colorbar>"]

    def name(ax) -> str:
        title = ax.get_title() or ax.get_title("left") or ax.get_ylabel()
        k = fig.axes.index(ax) + 1
        return f"panel {k}" + (f" ({title})" if title else "")

    # 1. Text boxes that collide or leave the figure.
    boxes = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        boxes.append(("figure title", fig._suptitle.get_window_extent(renderer)))
    for ax in fig.axes:
        for loc in ("left", "center", "right"):
            t = ax._left_title if loc == "left" else ax.title if loc == "center" else ax._right_title
            if t.get_visible() and t.get_text():
                boxes.append((f"title {t.get_text()!r}", t.get_window_extent(renderer)))
        if ax.axison:
            for label, what in ((ax.xaxis.label, "x label"), (ax.yaxis.label, "y label")):
                if label.get_visible() and label.get_text():
                    boxes.append((f"{what} {label.get_text()!r}", label.get_window_extent(renderer)))
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            boxes.append((f"legend of {name(ax)}", legend.get_window_extent(renderer)))
    for legend in fig.legends:
        boxes.append(("figure legend", legend.get_window_extent(renderer)))
    for what, box in boxes:
        if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1 or box.y0 < frame.y0 - 1 or box.y1 > frame.y1 + 1:
            problems.append(f"{what} runs outside the figure")
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if _overlap(box_a, box_b):
                problems.append(f"{a} overlaps {b}")
    # Tick labels under a title, a legend or another panel's text.
    for ax in data_axes:
        # Only the ticks matplotlib draws: those inside the axis' view limits.
        box_ax = ax.get_window_extent(renderer)
        ticks = [b for t in ax.get_xticklabels() if t.get_visible() and t.get_text()
                 for b in [t.get_window_extent(renderer)] if box_ax.x0 - 1 <= (b.x0 + b.x1) / 2 <= box_ax.x1 + 1]
        ticks += [b for t in ax.get_yticklabels() if t.get_visible() and t.get_text()
                  for b in [t.get_window_extent(renderer)] if box_ax.y0 - 1 <= (b.y0 + b.y1) / 2 <= box_ax.y1 + 1]
        for what, box in boxes:
            if what.startswith("legend of") or what.startswith("x label") or what.startswith("y label"):
                continue
            if any(_overlap(box, tick) for tick in ticks):
                problems.append(f"{what} overlaps the tick labels of {name(ax)}")

    # 2. Legends over data.
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    legends += [(None, lg) for lg in fig.legends]
    for owner, legend in legends:
        box = legend.get_window_extent(renderer).shrunk(0.98, 0.98)
        for ax in data_axes:
            if not _overlap(box, ax.get_window_extent(renderer), pad=0):
                continue
            covered = 0
            for line in _data_lines(ax):
                xy = line.get_transform().transform(line.get_xydata())
                xy = xy[np.isfinite(xy).all(axis=1)]
                covered += int(np.sum((xy[:, 0] > box.x0) & (xy[:, 0] < box.x1)
                                      & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)))
            for band in _data_bands(ax):
                covered += sum(bool(p.intersects_bbox(box.transformed(band.get_transform().inverted()),
                                                      filled=True)) for p in band.get_paths())
            if covered:
                where = "its own panel" if owner is ax else name(ax)
                problems.append(f"the legend of {name(owner) if owner else 'the figure'} covers data of {where}")

    # 3. Colours no legend names (only for figures that have legends at all).
    if legends:
        figure_level = [lg for ax, lg in legends if ax is None or not ax.axison]
        named_figure = [c for lg in figure_level for c in _legend_colours(lg)]
        for ax in data_axes:
            named = named_figure + (_legend_colours(ax.get_legend()) if ax.get_legend() else [])
            for artist in _data_lines(ax) + _data_bands(ax):
                colour = _series_colour(artist)
                if colour is None:
                    continue
                if not any(colour_distance(colour, c) < 1.0 for c in named):
                    kind = "band" if artist in ax.collections else "line"
                    problems.append(f"{name(ax)}: a {kind} in {mpl.colors.to_hex(colour)} that no legend "
                                    "of this panel or of the figure names")

    # 4. Translucent bands of different colours overlapping: a mixed colour without a name.
    for ax in data_axes:
        bands = [b for b in _data_bands(ax) if 0 < (b.get_alpha() if b.get_alpha() is not None
                                                     else mpl.colors.to_rgba_array(b.get_facecolor())[0][3]) < 1]
        for i, a in enumerate(bands):
            for b in bands[i + 1:]:
                ca, cb = _series_colour(a), _series_colour(b)
                if ca is None or cb is None or colour_distance(ca, cb) < 1.0:
                    continue
                ea, eb = a.get_window_extent(renderer), b.get_window_extent(renderer)
                if _overlap(ea, eb) and any(
                        pa.intersects_path(pb, filled=True)
                        for pa in (p.transformed(a.get_transform()) for p in a.get_paths())
                        for pb in (p.transformed(b.get_transform()) for p in b.get_paths())):
                    problems.append(f"{name(ax)}: translucent bands in {mpl.colors.to_hex(ca)} and "
                                    f"{mpl.colors.to_hex(cb)} overlap, mixing a colour no legend names")

    # 5. Bands too thin to see.
    for ax in data_axes:
        for band in _data_bands(ax):
            thickness = _band_thickness(band)
            if thickness < MIN_BAND_PX:
                problems.append(f"{name(ax)}: a band ({band.get_label()!r}) is {thickness:.1f} px thick "
                                "on average: a reader sees nothing")

    # 6. Series hidden under others, 7. look-alike series. An errorbar's line is named by
    # its container.
    px_per_pt = fig.dpi / 72

    def series_name(line) -> str:
        for ax in fig.axes:
            for container in ax.containers:
                if line in container.get_children():
                    return container.get_label()
        return line.get_label()

    for ax in data_axes:
        caps = {cap for c in ax.containers if hasattr(c, "lines") and len(c.lines) > 1
                for cap in (c.lines[1] or ())}  # an errorbar's caps, part of its own series
        lines = [ln for ln in _data_lines(ax) if ln.get_marker() not in (None, "None", "", " ") and ln not in caps]
        for i, low in enumerate(lines):
            xy_low = low.get_transform().transform(low.get_xydata())
            for high in lines[i + 1:]:
                if high.get_zorder() < low.get_zorder():
                    continue
                xy_high = high.get_transform().transform(high.get_xydata())
                radius = 0.5 * max(low.get_markersize(), 1.0) * px_per_pt
                d = np.min(np.linalg.norm(xy_low[:, None, :] - xy_high[None, :, :], axis=2), axis=1)
                if len(d) and np.mean(d < radius) >= 0.5:
                    problems.append(f"{name(ax)}: {series_name(low)!r} is hidden under {series_name(high)!r} "
                                    f"at {int(np.sum(d < radius))} of {len(d)} points")
    series: dict[str, Any] = {}
    for ax in data_axes:
        for ln in _data_lines(ax):
            if not series_name(ln).startswith("_"):
                series.setdefault(series_name(ln), ln)
    items = list(series.items())
    for i, (la, a) in enumerate(items):
        for lb, b in items[i + 1:]:
            if (colour_distance(a.get_color(), b.get_color()) < MIN_COLOUR_DELTA_E
                    and a.get_marker() == b.get_marker() and a.get_linestyle() == b.get_linestyle()):
                problems.append(f"{la!r} and {lb!r} look alike: colours ΔE = "
                                f"{colour_distance(a.get_color(), b.get_color()):.0f} with the same marker "
                                "and line style")
    return problems


def _tint(colour, share: float) -> tuple:
    """``colour`` mixed with white: ``share`` of the colour, the rest white (opaque)."""
    rgb = np.asarray(mpl.colors.to_rgb(colour))
    return tuple(share * rgb + (1 - share) * 1.0)


def pipeline_run_figure(rows, t):
    """One run of both pipelines (the chapter "The two pipelines"), one row per space.

    ``rows`` is a list of dicts, one per space, with ``title``; ``curves`` and ``fits``
    (a few latent curves and their fits inside the ball, evaluated at ``t``); ``grid`` and
    ``observed`` (those curves' noisy values on the grid); ``target``, ``ftp`` and ``ptf``
    (the target mean and the two releases at ``t``) and ``noisy_means`` (PTF's noisy grid
    means). Left: curves, observations and fits; right: the target and the releases.
    Every series is named in one legend under the panels, and each differs from the others
    in line style or marker as well as colour.
    """
    t = np.asarray(t, dtype=float)
    fig, axes = plt.subplots(len(rows), 2, figsize=(TEXT_WIDTH, 2.55 * len(rows) + 1.3),
                             sharex=True, squeeze=False, layout="constrained")
    ftp, ptf = METHOD_STYLE["ftp"]["color"], METHOD_STYLE["ptf"]["color"]
    for (left, right), row in zip(axes, rows):
        left.plot(t, np.asarray(row["curves"]).T, color="0.55", lw=0.8,
                  label=["latent curve"] + ["_"] * (len(row["curves"]) - 1))
        left.plot(row["grid"], np.asarray(row["observed"]).T, ".", color="0.2", ms=3,
                  label=["noisy grid value"] + ["_"] * (len(row["observed"]) - 1))
        left.plot(t, np.asarray(row["fits"]).T, color=COLOURS[2], lw=0.9, ls="--",
                  label=["its fit in the ball"] + ["_"] * (len(row["fits"]) - 1))
        left.set_title(f"{row['title']}\ncurves and their fits", fontsize=MIN_FONT_PT)
        right.plot(t, row["target"], color="k", lw=2.0, label=r"target $\bar f$")
        right.plot(t, row["ftp"], color=ftp, lw=1.3, label="FTP release")
        right.plot(t, row["ptf"], color=ptf, lw=1.3, ls="-.", label="PTF release")
        right.plot(row["grid"], row["noisy_means"], "s", color=ptf, ms=3.5, ls="none",
                   label=r"PTF's noisy means $\tilde x_j$")
        right.set_title(f"{row['title']}\ntarget and the two releases", fontsize=MIN_FONT_PT)
    for ax in axes[-1]:
        ax.set_xlabel("$t$")
    handles, labels = [], []
    for ax in axes[0]:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig


def _design_style(name: str, names) -> dict:
    """How a design of the design-space chapter is drawn.

    FTP and PTF as everywhere in the book, FTP followed by the ball fit as FTP with hollow
    markers and a dashed line, the ball in black, the other designs (the mix) in the
    remaining colours and markers.
    """
    fixed = {"PTF": dict(color=METHOD_STYLE["ptf"]["color"], marker="s", ls="-"),
             "FTP": dict(color=METHOD_STYLE["ftp"]["color"], marker="o", ls="-"),
             "FTP+fit": dict(color=METHOD_STYLE["ftp"]["color"], marker="o", ls="--", mfc="white"),
             "ball": dict(color="black", marker="X", ls=":")}
    if name in fixed:
        return fixed[name]
    others = [n for n in names if n not in fixed]
    k = others.index(name)
    palette, marks = [COLOURS[2], COLOURS[3], COLOURS[4], COLOURS[5]], ["^", "D", "v", "P"]
    return dict(color=palette[k % len(palette)], marker=marks[k % len(marks)], ls="-")


def design_ratio_figure(df: pd.DataFrame, designs, *, panel: str = "sigma0", reference: str = "PTF",
                        z: float = Z95):
    """Error of each design relative to ``reference`` against n, one panel per ``panel`` value.

    ``df`` is :func:`dpfda.simulation.design_runs.compare_designs`' table (columns ``design``, ``n``,
    ``panel``, ``ratio_<reference>``, ``se_log_ratio_<reference>``). Error bars: the paired
    confidence interval exp(±z·se_log_ratio). The designs of one n are drawn side by side
    (a small horizontal offset on the log axis), so no design hides another where their
    errors coincide; each has its own marker and line style as well as its colour, and one
    legend under the panels names them all.
    """
    if not isinstance(df, pd.DataFrame) or df.empty:
        raise ValueError("df must be a non-empty DataFrame from compare_designs")
    designs = list(designs)
    need = {"design", "n", panel, f"ratio_{reference}", f"se_log_ratio_{reference}"}
    if need - set(df.columns):
        raise ValueError(f"df lacks columns {sorted(need - set(df.columns))}")
    values = sorted(df[panel].unique())
    cols = 1 if len(values) == 1 else 2
    nrows = -(-len(values) // cols)
    fig, grid = plt.subplots(nrows, cols, figsize=(TEXT_WIDTH, 2.5 * nrows + 0.9), sharey=True,
                             squeeze=False, layout="constrained")
    axes = list(grid.ravel())
    for spare in axes[len(values):]:
        spare.set_axis_off()
    spread = 0.15  # log2 units between neighbouring designs at one n
    for ax, value in zip(axes, values):
        sub = df[df[panel] == value]
        for k, name in enumerate(designs):
            d = sub[sub["design"] == name].sort_values("n")
            if d.empty:
                continue
            r, se = d[f"ratio_{reference}"].to_numpy(float), d[f"se_log_ratio_{reference}"].to_numpy(float)
            x = d["n"].to_numpy(float) * 2.0 ** ((k - (len(designs) - 1) / 2) * spread)
            ax.errorbar(x, r, yerr=[r - r * np.exp(-z * se), r * np.exp(z * se) - r], label=name,
                        ms=3.5, lw=1.0, capsize=1.5, **_design_style(name, designs))
        ax.axhline(1.0, color="0.5", lw=0.8, ls=":")
        log_axes(ax, x_base=2)
        ax.set_title(f"$\\sigma_0 = {value:g}$" if panel == "sigma0" else f"{panel} = {value}")
        ax.set_xlabel("$n$")
    for ax in axes[:len(values):cols]:
        ax.set_ylabel(f"error / error of {reference}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=4)
    return fig


def release_bands_figure(t, truth, releases, *, detail_mu=None, unit: str = "cm",
                         ylabel: str = "mean height (cm)", xlabel: str = "age (years)"):
    """Private mean curves: the band holding 90% of the releases, FTP against PTF.

    ``releases[mu][name]`` holds the releases (one per row) of pipeline ``name`` ("FTP" or
    "PTF") at budget ``mu``, evaluated at ``t``; ``truth`` is the non-private mean at ``t``.
    Top: the curves themselves at the smallest budget (or ``detail_mu``), where the bands are
    wide enough to see on the scale of the data. Bottom, one panel per budget on its own
    scale: the bands and one release of each pipeline as differences from the non-private
    mean. FTP's band is filled, PTF's is drawn by its dashed edges, so no band hides the
    other and no mixed colour appears; one legend names everything.
    """
    t, truth = np.asarray(t, dtype=float), np.asarray(truth, dtype=float)
    mus = sorted(releases)
    detail_mu = mus[0] if detail_mu is None else detail_mu
    fig = plt.figure(figsize=(TEXT_WIDTH, 6.2), layout="constrained")
    spec = fig.add_gridspec(2, len(mus), height_ratios=(1.1, 1.0))
    top = fig.add_subplot(spec[0, :])
    bottom = [fig.add_subplot(spec[1, k], sharex=top) for k in range(len(mus))]
    ftp, ptf = METHOD_STYLE["ftp"]["color"], METHOD_STYLE["ptf"]["color"]

    def draw(ax, curves_by_name, offset, one):
        for name, colour in (("FTP", ftp), ("PTF", ptf)):
            lo, hi = np.quantile(np.asarray(curves_by_name[name], dtype=float) - offset, [0.05, 0.95], axis=0)
            if name == "FTP":
                ax.fill_between(t, lo, hi, color=_tint(colour, 0.35), lw=0, label="FTP: 90% of releases")
            else:
                ax.plot(t, lo, color=colour, lw=1.1, ls="--", label="PTF: 90% of releases (edges)")
                ax.plot(t, hi, color=colour, lw=1.1, ls="--", label="_")
            if one:
                ax.plot(t, np.asarray(curves_by_name[name], dtype=float)[0] - offset, color=colour,
                        lw=0.9, ls="-" if name == "FTP" else "-.", label=f"one {name} release")

    draw(top, releases[detail_mu], 0.0, one=False)
    top.plot(t, truth, color="k", lw=1.3, label="non-private mean")
    top.set_title(f"μ = {detail_mu:g}: the curves", fontsize=MIN_FONT_PT)
    top.set_ylabel(ylabel)
    for ax, mu in zip(bottom, mus):
        draw(ax, releases[mu], truth, one=True)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(f"μ = {mu:g}: difference (own scale)", fontsize=MIN_FONT_PT)
        ax.set_xlabel(xlabel)
    bottom[0].set_ylabel(f"difference ({unit})")
    handles, labels = top.get_legend_handles_labels()
    h2, l2 = bottom[0].get_legend_handles_labels()
    for h, lab in zip(h2, l2):
        if lab not in labels and not lab.startswith("_"):
            handles.append(h)
            labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig


def nested_bands_figure(t, panels, levels, *, label: str = "μ", ylabel: str = "", xlabel: str = "",
                        ylim=None, mark_x=None, what: str = "FTP"):
    """Bands of several levels (budgets) nested in one panel per group, opaque tints.

    ``panels[title]`` holds ``"target"`` (a curve at ``t``) and, per level in ``levels``,
    an array of curves (one per row) whose pointwise 90% band is drawn. The bands are
    opaque tints of one colour drawn widest first (smallest budget), so a narrower band
    lies on a wider one and no translucent mixture makes a colour without a name; the
    legend names each level. ``mark_x`` draws a dotted vertical line.
    """
    t = np.asarray(t, dtype=float)
    fig, axes = plt.subplots(len(panels), 1, figsize=(TEXT_WIDTH, 2.4 * len(panels) + 0.9),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    base = METHOD_STYLE["ftp"]["color"]
    shares = np.linspace(0.25, 0.75, len(levels))
    for ax, (title, data) in zip(axes[:, 0], panels.items()):
        bands = []
        for level, share in zip(levels, shares):
            lo, hi = np.quantile(np.asarray(data[level], dtype=float), [0.05, 0.95], axis=0)
            bands.append((float(np.mean(hi - lo)), level, share, lo, hi))
        for _, level, share, lo, hi in sorted(bands, key=lambda b: -b[0]):
            ax.fill_between(t, lo, hi, color=_tint(base, share), lw=0, label=f"{what}, {label} = {level:g}: 90%")
        ax.plot(t, data["target"], color="k", lw=1.4, label="non-private")
        if mark_x is not None:
            ax.axvline(mark_x, color="0.4", ls=":", lw=1)
        ax.set_title(title, fontsize=MIN_FONT_PT)
        ax.set_ylabel(ylabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
    axes[-1, 0].set_xlabel(xlabel)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: (labels[i] != "non-private", i))
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center", ncols=2)
    return fig


def activation_figure(df: pd.DataFrame):
    """p̂_PTF, the share of repetitions in which PTF's fit hit the ball, against n (Table 1).

    One panel per μ, one line per T (markers by level); error bars ±:data:`~dpfda.config.Z95`
    Agresti–Coull standard errors (:func:`dpfda.config.proportion_se`), so an observed 0
    or 1 still carries an uncertainty.  ``df`` is the results table of Table 1's (or
    Figure 1's) study.
    """
    df = _check_results(df)
    if not {"p_ptf_active", "reps", "mu", "T"} <= set(df.columns):
        raise ValueError("df must be Table 1's results table (columns p_ptf_active, reps, mu, T)")
    mus, Ts = _levels(df, "mu"), _levels(df, "T")
    fig, axes = plt.subplots(1, len(mus), figsize=(TEXT_WIDTH, 3.0), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, mu in zip(axes, mus):
        for k, T in enumerate(Ts):
            d = df[(df["T"] == T) & (df["mu"] == mu)].sort_values("n")
            se = [proportion_se(p, int(r)) for p, r in zip(d["p_ptf_active"], d["reps"])]
            ax.errorbar(d["n"], d["p_ptf_active"], yerr=Z95 * np.array(se), marker=MARKERS[k],
                        ms=4, capsize=2, label=f"T = {T}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sample size $n$")
        ax.set_title(f"μ = {mu:g}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(r"$\hat p_{\mathrm{PTF}}$")
    axes[-1].legend(frameon=False)
    fig.tight_layout()
    return fig

def noise_collapse_figure(df: pd.DataFrame, Ts=(2, 8), levels=(2, 4, 6, 8)):
    """The noisy cells of a ratio map against x = nμ²σ₀²/(4B′²), on the curves (x + 1)/(x + T).

    ``df`` is a results table with the columns ``x`` and ``free`` added (the chapter
    "Beyond the paper": ``free`` marks the cells where no constraint bound and clipping is
    negligible).  One curve per T in ``Ts``, in the colour T has among ``levels`` (the T of
    Figures 1 and 3); filled markers for the free cells, hollow ones for the others; error
    bars the 95% intervals of the ratio.
    """
    df = _check_results(df)
    if not {"x", "free", "T", "sigma0"} <= set(df.columns):
        raise ValueError("df needs the columns x and free (and T, sigma0) of the chapter's map")
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH, 3.8))
    xs = np.geomspace(1e-3, 1e4, 300)
    noisy = df[df["sigma0"] > 0]
    for T in Ts:
        c = level_style(T, levels)["color"]
        ax.plot(xs, (xs + 1) / (xs + T), color=c, lw=1.2, label=f"$(x+1)/(x+{T})$")
        d = noisy[noisy["T"] == T]
        for is_free, face in ((True, c), (False, "none")):
            e = d[d["free"] == is_free]
            yerr = np.vstack([e["ratio"] - e["ratio_lo"], e["ratio_hi"] - e["ratio"]])
            kind = "unconstrained" if is_free else "constrained or clipped"
            ax.errorbar(e["x"], e["ratio"], yerr=yerr, fmt="o", ms=4, mfc=face, mec=c, ecolor=c, lw=0.8,
                        label=f"T = {T}, {kind}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axhline(1, color="0.6", lw=0.8, ls=":")
    ax.set_xlabel(r"$x = n\mu^2\sigma_0^2/(4B'^2)$")
    ax.set_ylabel("MSE ratio FTP/PTF")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def composition_ratio_figure(ratios: pd.DataFrame):
    """PTF/FTP variance ratio for constant curves against T, under pure DP and under GDP.

    ``ratios`` is indexed by T with the columns ``"Laplace ratio"``, ``"Laplace s.e."``,
    ``"Gaussian ratio"`` and ``"Gaussian s.e."`` (the chapter "Pure DP"); the exact ratios
    T (Laplace, basic composition) and 1 (Gaussian) dashed, the simulations with ±2
    standard errors, on log₂ axes.
    """
    need = {"Laplace ratio", "Laplace s.e.", "Gaussian ratio", "Gaussian s.e."}
    if not isinstance(ratios, pd.DataFrame) or not need <= set(ratios.columns):
        raise ValueError(f"ratios must be a DataFrame indexed by T with the columns {sorted(need)}")
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    Tgrid = ratios.index.to_numpy(dtype=float)
    ax.plot(Tgrid, Tgrid, "C3--", lw=1, label=r"$\varepsilon$-DP (Laplace): $T$")
    ax.plot(Tgrid, np.ones_like(Tgrid), "C0--", lw=1, label=r"$\mu$-GDP (Gaussian): $1$")
    ax.errorbar(Tgrid, ratios["Laplace ratio"], yerr=2 * ratios["Laplace s.e."], fmt="o", color="C3", ms=4,
                label="simulation, Laplace")
    ax.errorbar(Tgrid, ratios["Gaussian ratio"], yerr=2 * ratios["Gaussian s.e."], fmt="s", color="C0", ms=4,
                label="simulation, Gaussian")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("number of grid points $T$")
    ax.set_ylabel("variance ratio PTF / FTP")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig

def activation_by_norm_figure(norms, p, se, norm_bar: float):
    """P(PTF's constraint binds) against the norm of the mean curve (Table 1's example).

    ``p[k]`` (with standard error ``se[k]``) is the probability at the mean rescaled to norm
    ``norms[k]``; error bars ±:data:`~dpfda.config.Z95` standard errors.  A dashed line
    marks ``norm_bar``, the norm of the run's own mean, and a dotted one the paper's
    0.755 (:data:`dpfda.report.claims.PAPER_P`).
    """
    norms, p, se = (np.asarray(a, dtype=float) for a in (norms, p, se))
    if not norms.shape == p.shape == se.shape or norms.ndim != 1:
        raise ValueError("norms, p and se must be one-dimensional and of the same length")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.errorbar(norms, p, yerr=Z95 * se, fmt="o-", ms=4, capsize=2, label="rescaled $\\bar f$")
    ax.axvline(norm_bar, color="C1", ls="--", label=r"our $\|\bar f\|$")
    ax.axhline(PAPER_P, color="0.5", ls=":", label="paper: 0.755")
    ax.set_xlabel(r"$\|\bar f\|_{\mathcal{H}_K}$ (grid interpolant)")
    ax.set_ylabel(r"$P$(PTF constraint active)")
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig

def legendre_limit_figure(m, limits, T: int = 20):
    """Corollary 12's limit m/(T tr A⁻¹) of the IMSE ratio against the dimension m, beside 1/m.

    ``limits[k]`` is the limit for dimension ``m[k]`` (Legendre basis on T points); log
    axes with every m labelled.
    """
    m, limits = np.asarray(m), np.asarray(limits, dtype=float)
    if m.shape != limits.shape or m.ndim != 1:
        raise ValueError("m and limits must be one-dimensional and of the same length")
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    ax.plot(m, 1 / m, "k--", lw=1, label=r"$1/m$")
    ax.plot(m, limits, "o-", ms=4, label=rf"$m/(T\,\mathrm{{tr}}A^{{-1}})$, Legendre, $T={T}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(m, [str(v) for v in m])
    ax.minorticks_off()
    ax.set_xlabel("dimension $m$")
    ax.set_ylabel("limit of IMSE ratio FTP / PTF")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def kernel_eigenvalue_figure(T, exact, double, floor: float, paper_T=(2, 8)):
    """The smallest eigenvalue of the Gaussian kernel matrix K_T against T (Assumption A.4).

    ``exact`` from high-precision arithmetic, ``double`` from double precision (drawn as
    its absolute value), the ``floor`` the package refuses to go below dashed, and the
    paper's range of T (``paper_T``) shaded.
    """
    T, exact, double = np.asarray(T), np.asarray(exact, dtype=float), np.asarray(double, dtype=float)
    if not T.shape == exact.shape == double.shape or T.ndim != 1:
        raise ValueError("T, exact and double must be one-dimensional and of the same length")
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.semilogy(T, exact, "o-", ms=3, label="60-digit arithmetic")
    ax.semilogy(T, np.abs(double), "x", ms=5, label="double precision (absolute value)")
    power = np.log10(floor)
    floor_text = f"$10^{{{int(round(power))}}}$" if np.isclose(power, round(power)) else f"{floor:g}"
    ax.axhline(floor, color="k", ls="--", lw=1, label=f"floor {floor_text}")
    ax.axvspan(*paper_T, color="0.9", label="the paper's $T$")
    ax.set_xlabel("$T$")
    ax.set_ylabel(r"$\lambda_{\min}(K_T)$")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig

# ---------------------------------------------------------------------------
# The claims' verdict matrix and the latent laws (the chapter robustness)
# ---------------------------------------------------------------------------

#: Green, grey and red for the three verdicts (each cell also carries its mark,
#: :data:`dpfda.report.claims.VERDICT_MARKS`).
VERDICT_COLOURS = {"holds": "#1b7837", "inconclusive": "#d9d9d9", "fails": "#b2182b"}


def verdict_figure(matrix: pd.DataFrame, *, width: float | None = None, fontsize: float | None = None):
    """The verdict matrix as a heatmap: claims down, laws across, coloured by verdict.

    ``matrix`` is :func:`dpfda.report.claims.verdict_matrix`'s table.  Each cell carries its
    verdict's mark (:data:`dpfda.report.claims.VERDICT_MARKS`) as well as its colour
    (:data:`VERDICT_COLOURS`).  ``width`` defaults to the book's column
    (:data:`TEXT_WIDTH`) and ``fontsize`` to its smallest legible size (:data:`MIN_FONT_PT`).
    """
    width = TEXT_WIDTH if width is None else width
    fontsize = MIN_FONT_PT if fontsize is None else fontsize
    if not isinstance(matrix, pd.DataFrame):
        raise TypeError(f"matrix must be a DataFrame from verdict_matrix, got {type(matrix).__name__}")
    bad = set(np.unique(matrix.to_numpy().astype(str))) - set(VERDICTS)
    if bad:
        raise ValueError(f"matrix holds values other than {VERDICTS}: {sorted(bad)}")
    codes = matrix.replace({v: i for i, v in enumerate(VERDICTS)}).to_numpy(dtype=float)
    rows, cols = codes.shape
    fig, ax = plt.subplots(figsize=(width, 0.44 * rows + 1.4), layout="constrained")
    ax.imshow(codes, cmap=ListedColormap([VERDICT_COLOURS[v] for v in VERDICTS]), vmin=-0.5,
              vmax=len(VERDICTS) - 0.5, aspect="auto")
    for i in range(rows):
        for j in range(cols):
            v = matrix.iat[i, j]
            ax.text(j, i, VERDICT_MARKS[v], ha="center", va="center", fontsize=fontsize,
                    color="white" if v != "inconclusive" else "0.3")
    ax.set_xticks(range(cols), [law_label(c) for c in matrix.columns], rotation=45, ha="right",
                  fontsize=fontsize)
    ax.set_yticks(range(rows), [_claim_row_label(c) for c in matrix.index], fontsize=fontsize)
    ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    for j, law in enumerate(matrix.columns[1:], start=1):  # gaps between default | shift | wave
        if law.split("-")[0] != matrix.columns[j - 1].split("-")[0]:
            ax.axvline(j - 0.5, color="white", lw=5)
    ax.set_xlabel("latent law", fontsize=fontsize)
    fig.legend(handles=[Patch(color=VERDICT_COLOURS[v], label=f"{VERDICT_MARKS[v]} {v}") for v in VERDICTS],
               loc="outside lower center", ncol=3, frameon=False, fontsize=fontsize)
    return fig


def _claim_row_label(claim_id: str) -> str:
    """A matrix row: the claim's name and its one-line statement."""
    try:
        c = get_claim(claim_id)
    except ValueError:
        return str(claim_id)
    return f"{c.name}:\n{c.statement}"


def law_figure(*, width: float | None = None, fontsize: float | None = None):
    """The mean directions h of the shift and wave laws, in the RKHS and in H_m.

    RKHS: one curve on a fine grid, with its values at the grid points t_j of each T;
    H_m: one curve for each m.

    Every law of the family moves each latent curve a share S of the way to S·B·h, so these curves
    are what "shift" and "wave" mean; the mean curve of a law is about S·B·h.
    """
    width = TEXT_WIDTH if width is None else width
    fontsize = MIN_FONT_PT if fontsize is None else fontsize
    t = np.linspace(0.0, 1.0, 401)
    kern = gaussian_kernel(0.2)
    centres = np.linspace(0.0, 1.0, 20)
    fig, axes = plt.subplots(2, 2, figsize=(width, 0.62 * width), sharex=True, layout="constrained")
    for j, shape in enumerate(("shift", "wave")):
        ax = axes[0, j]
        h = kernel_direction(shape, kern, centres) @ kern(centres[:, None], t[None, :])
        ax.plot(t, h, color="0.15", lw=1.4, label="h on [0, 1]")
        for k, T in enumerate((2, 4, 6, 8)):
            tj = np.linspace(0.0, 1.0, T)
            hj = kernel_direction(shape, kern, centres) @ kern(centres[:, None], tj[None, :])
            ax.plot(tj, hj, ls="none", marker=MARKERS[k % len(MARKERS)], ms=4, label=f"grid T = {T}")
        ax.set_title(f"RKHS, {shape}", fontsize=fontsize)
        ax.axhline(0, color="0.6", lw=0.6)
        ax = axes[1, j]
        for k, m in enumerate((2, 4, 6, 8)):
            ax.plot(t, LegendreSpace(m).evaluate(polynomial_direction(shape, m), t), lw=1.2,
                    ls=("-", "--", "-.", ":")[k], label=f"m = {m}")
        ax.set_title(f"$\\mathcal{{H}}_m$, {shape}", fontsize=fontsize)
        ax.axhline(0, color="0.6", lw=0.6)
        ax.set_xlabel("t", fontsize=fontsize)
    for ax in axes.flat:
        ax.tick_params(labelsize=fontsize)
    axes[0, 0].set_ylabel("h(t)", fontsize=fontsize)
    axes[1, 0].set_ylabel("h(t)", fontsize=fontsize)
    axes[0, 0].legend(fontsize=fontsize, frameon=False, loc="lower center", ncol=2)
    axes[1, 0].legend(fontsize=fontsize, frameon=False, loc="upper center", ncol=2)
    return fig


def activation_by_share_figure(shares: pd.DataFrame):
    """p̂_PTF of Table 1's example under each latent law, against the share S of the mean direction.

    ``shares`` is :func:`dpfda.report.claims.activation_by_share`'s table.  The shift and wave
    laws as two series (offset a little in S, so neither hides the other; circles and
    squares), error bars ±:data:`~dpfda.config.Z95` standard errors; the default law as
    a dashed line, the paper's 0.755 (:data:`dpfda.report.claims.PAPER_P`) dotted, and the
    margin of Table 1's claim 5 (:data:`dpfda.report.claims.P_MARGIN`) shaded.
    """
    if not isinstance(shares, pd.DataFrame) or not {"shape", "S", "p", "se", "law"} <= set(shares.columns):
        raise ValueError("shares must be the table of dpfda.report.claims.activation_by_share")
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH, 4.0), layout="constrained")
    for k, shape in enumerate(["shift", "wave"]):
        d = shares[shares["shape"] == shape].sort_values("S")
        ax.errorbar(d["S"] + 0.01 * (2 * k - 1), d["p"], yerr=Z95 * d["se"],
                    marker="os"[k], ms=5, capsize=3, label=f"{shape} laws")
    default = shares[shares["law"] == "default"]
    if len(default):
        ax.axhline(float(default["p"].iloc[0]), color="C2", ls="--", lw=1, label="default law")
    ax.axhline(PAPER_P, color="0.3", ls=":", lw=1.2, label="paper: 0.755")
    ax.axhspan(PAPER_P - P_MARGIN, PAPER_P + P_MARGIN, color="0.5", alpha=0.12,
               label="0.755 ± 0.1 (the claim's margin)")
    ax.set_ylim(top=PAPER_P + P_MARGIN + 0.03)
    ax.set_xlabel("share $S$ of the fixed mean direction")
    ax.set_ylabel(r"$\hat p_{\mathrm{PTF}}$  ($T=8$, $n=2^{10}$, $\mu=0.1$)")
    ax.set_xticks(LAW_SHIFTS)
    fig.legend(loc="outside lower center", ncol=2)
    return fig

# ---------------------------------------------------------------------------
# The interactive ratio explorer (Bokeh; embedded in a page by dpfda.report.explorer.explorer_html)
# ---------------------------------------------------------------------------

EXPLORER_COLUMNS = ("family", "T", "m", "rho", "n", "mu", "sigma0", "ratio", "ratio_lo", "ratio_hi")
"""Columns the ratio explorer (:func:`ratio_explorer`) reads from an engine results table."""

#: Model names of the explorer's Bokeh document, for the page's script (:mod:`dpfda.report.explorer`)
#: and the browser test.
EXPLORER_NAMES = {"space": "explorer-space", "T": "explorer-T", "mu": "explorer-mu", "sigma0": "explorer-sigma0",
                  "shown": "explorer-shown", "plot": "explorer-plot", "summary": "explorer-summary"}


def _explorer_space_key(row) -> str:
    """The space a widget button selects: "kernel", or "legendre" and m (e.g. "legendre3")."""
    family = check_family(row["family"], "df's column family")
    return family if family == "kernel" else f"legendre{int(row['m'])}"


def _explorer_space_label(key: str) -> str:
    """A space's name on the explorer's buttons and in its tables: "Legendre H₃"."""
    if key == "kernel":
        return "RKHS (Gaussian kernel)"
    sub = key.removeprefix("legendre").translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
    return f"Legendre H{sub}"


def _explorer_rows(df):
    """``df`` checked for the explorer (every column, positive finite ratios), with a column ``key``."""
    missing = [c for c in EXPLORER_COLUMNS if c not in df.columns]
    if missing:
        hint = " (the column 'space' is now 'family')" if "family" in missing and "space" in df.columns else ""
        raise ValueError(f"df must be an engine results table; missing columns {missing}{hint}")
    if len(df) == 0:
        raise ValueError("df has no rows")
    bad = ~np.isfinite(df[["ratio", "ratio_lo", "ratio_hi"]].to_numpy(dtype=float)).all(axis=1)
    if bad.any() or (df["ratio_lo"] <= 0).any():
        raise ValueError("df has non-finite or non-positive ratios (a setting without error?)")
    return df.assign(key=[_explorer_space_key(r) for _, r in df.iterrows()])


def _noiseless_limit(row, T: int) -> float:
    """The noiseless large-n ratio of the setting's space on T uniform points (theory.ratio_limit)."""
    kw = dict(m=int(row["m"])) if row["family"] == "legendre" else dict(rho=float(row["rho"]))
    setting = Setting(family=row["family"], n=4, T=int(T), mu=1.0, sigma0=0.0, radius_rule="B", **kw)
    return float(ratio_limit(setting.geometry()))


def ratio_explorer(df, *, width: int = 660, height: int = 400):
    """A Bokeh layout: ratio FTP/PTF against n, with widgets for space, T, μ and σ₀.

    The Monte Carlo error ratio with its 95% interval as a band, the noiseless limit and
    the ratio 1 as reference lines.  Every setting's numbers are embedded and the redraw
    is a small JavaScript callback: nothing is computed or fetched when a reader moves a
    slider.  Needs the optional dependency ``bokeh``; :func:`dpfda.report.explorer.explorer_html`
    embeds the layout in a page, :func:`explorer_tables` is its text alternative.

    Parameters
    ----------
    df : pandas.DataFrame
        Results of :func:`dpfda.simulation.schedule.run_study`; every combination of the widgets'
        values that a reader can select must be present for every n (checked).
    width, height : int
        Size of the plot in pixels.

    Returns
    -------
    bokeh.models.LayoutDOM
    """
    from bokeh.layouts import column
    from bokeh.models import Band, ColumnDataSource, CustomJS, Div, RadioButtonGroup, Slider
    from bokeh.plotting import figure as bokeh_figure

    tab = _explorer_rows(df)
    keys = sorted(tab["key"].unique(), key=lambda k: (k != "kernel", k))
    Ts = sorted(int(v) for v in tab["T"].unique())
    mus = sorted(float(v) for v in tab["mu"].unique())
    sigmas = sorted(float(v) for v in tab["sigma0"].unique())
    ns = sorted(int(v) for v in tab["n"].unique())
    for key in keys:
        for T in Ts:
            for mu in mus:
                for s in sigmas:
                    got = tab[(tab.key == key) & (tab["T"] == T) & (tab["mu"] == mu) & (tab["sigma0"] == s)]
                    if sorted(got["n"].astype(int)) != ns:
                        raise ValueError(f"df lacks some n for the space {key}, T={T}, mu={mu}, sigma0={s}: "
                                         "the explorer needs the full grid of settings")
    tab = tab.sort_values(["key", "T", "mu", "sigma0", "n"])
    limits = {f"{i}|{j}": _noiseless_limit(tab[tab.key == key].iloc[0], T)
              for i, key in enumerate(keys) for j, T in enumerate(Ts)}
    allsrc = {
        # settings keyed by the widgets' indices: no number formatting has to agree with JS
        "key": [f"{keys.index(k)}|{Ts.index(int(T))}|{mus.index(float(mu))}|{sigmas.index(float(s))}"
                for k, T, mu, s in zip(tab["key"], tab["T"], tab["mu"], tab["sigma0"])],
        "n": tab["n"].astype(float).tolist(),
        "ratio": tab["ratio"].astype(float).tolist(),
        "lo": tab["ratio_lo"].astype(float).tolist(),
        "hi": tab["ratio_hi"].astype(float).tolist(),
    }
    start = {"key": keys[0], "T": Ts[len(Ts) // 2], "mu": mus[len(mus) // 2], "sigma0": sigmas[0]}
    want = f"0|{Ts.index(start['T'])}|{mus.index(start['mu'])}|0"
    sel = [i for i, k in enumerate(allsrc["key"]) if k == want]
    shown = ColumnDataSource({c: [allsrc[c][i] for i in sel] for c in ("n", "ratio", "lo", "hi")},
                             name=EXPLORER_NAMES["shown"])

    lo_all, hi_all = min(allsrc["lo"]), max(allsrc["hi"])
    plot = bokeh_figure(width=width, height=height, x_axis_type="log", y_axis_type="log",
               x_range=(ns[0] / 1.4, ns[-1] * 1.4),
               y_range=(min(lo_all, 1 / max(Ts) / 2) / 1.5, max(hi_all, 2.0) * 1.5),
               x_axis_label="n (number of curves)", y_axis_label="error ratio FTP / PTF",
               toolbar_location=None, name=EXPLORER_NAMES["plot"])
    plot.add_layout(Band(base="n", lower="lo", upper="hi", source=shown, fill_color="#1f77b4",
                      fill_alpha=0.25, line_color=None))
    plot.line("n", "ratio", source=shown, line_width=2, color="#1f77b4", legend_label="ratio (95% band)")
    plot.scatter("n", "ratio", source=shown, size=6, color="#1f77b4")
    ends = [ns[0] / 1.4, ns[-1] * 1.4]
    limit0 = limits[f"0|{Ts.index(start['T'])}"]
    ref = ColumnDataSource({"n": ends, "y": [limit0] * 2})
    plot.line("n", "y", source=ref, color="#d62728", line_dash="dashed", line_width=1.5,
           legend_label="noiseless limit (Corollaries 12, 15)")
    plot.line(ends, [1.0, 1.0], color="grey", line_dash="dotted", line_width=1.5,
           legend_label="ratio 1: above, PTF wins")
    # Text as large as the book's figures' (9 pt = 12 px at least).
    plot.axis.axis_label_text_font_size = "14px"
    plot.axis.major_label_text_font_size = "13px"
    plot.legend.label_text_font_size = "13px"
    plot.legend.location = "top_left"
    plot.add_layout(plot.legend[0], "below")
    plot.legend.orientation = "horizontal"

    space_w = RadioButtonGroup(labels=[_explorer_space_label(k) for k in keys], active=0, name=EXPLORER_NAMES["space"])
    slider_kw = dict(width=min(width, 420), show_value=False)
    T_w = Slider(start=0, end=len(Ts) - 1, step=1, value=Ts.index(start["T"]), **slider_kw,
                 title=f"T = {start['T']}", name=EXPLORER_NAMES["T"])
    mu_w = Slider(start=0, end=len(mus) - 1, step=1, value=mus.index(start["mu"]), **slider_kw,
                  title=f"μ = {start['mu']:g}", name=EXPLORER_NAMES["mu"])
    sigma0_w = Slider(start=0, end=len(sigmas) - 1, step=1, value=0, **slider_kw,
                 title=f"σ₀ = {start['sigma0']:g}", name=EXPLORER_NAMES["sigma0"])
    summary = Div(text="", name=EXPLORER_NAMES["summary"], width=width)

    code = """
const fmt = v => String(Number(v.toPrecision(6)));
const key = KEYS[space.active], T = TS[Tw.value], mu = MUS[muw.value], s = SIGMAS[sw.value];
Tw.title = 'T = ' + T; muw.title = 'μ = ' + fmt(mu); sw.title = 'σ₀ = ' + fmt(s);
const want = space.active + '|' + Tw.value + '|' + muw.value + '|' + sw.value;
const d = {n: [], ratio: [], lo: [], hi: []};
for (let i = 0; i < ALL.key.length; i++) {
  if (ALL.key[i] !== want) continue;
  d.n.push(ALL.n[i]); d.ratio.push(ALL.ratio[i]); d.lo.push(ALL.lo[i]); d.hi.push(ALL.hi[i]);
}
shown.data = d;
const lim = LIM[space.active + '|' + Tw.value];
ref.data = {n: ref.data.n, y: [lim, lim]};
let from = null;
for (let i = d.n.length - 1; i >= 0 && d.hi[i] < 1; i--) from = d.n[i];
if (window.dpfdaLabelSliders) window.dpfdaLabelSliders();
summary.text = '<b>' + LABELS[space.active] + '</b>, T = ' + T + ', μ = ' + fmt(mu) + ', σ₀ = ' + fmt(s) +
  ': noiseless limit ' + lim.toFixed(3) + '. ' +
  (from === null ? 'FTP is not clearly better at any n shown up to ' + d.n[d.n.length - 1] + '.'
                 : 'FTP is clearly better (whole 95% band below 1) from n = ' + from + ' on.');
"""
    args = dict(space=space_w, Tw=T_w, muw=mu_w, sw=sigma0_w, shown=shown, ref=ref, summary=summary)
    prelude = (f"const ALL = {json.dumps(allsrc)};\nconst KEYS = {json.dumps(keys)};\n"
               f"const LABELS = {json.dumps([_explorer_space_label(k) for k in keys])};\n"
               f"const LIM = {json.dumps(limits)};\n"
               f"const TS = {json.dumps(Ts)}; const MUS = {json.dumps(mus)}; "
               f"const SIGMAS = {json.dumps(sigmas)};\n")
    callback = CustomJS(args=args, code=prelude + code)
    space_w.js_on_change("active", callback)
    for w in (T_w, mu_w, sigma0_w):
        w.js_on_change("value", callback)
    # Fill the summary once, in Python, with the same words the callback would use.
    first = shown.data
    from_n = None
    for n_, hi_ in zip(reversed(first["n"]), reversed(first["hi"])):
        if hi_ >= 1:
            break
        from_n = int(n_)
    verdict = (f"FTP is not clearly better at any n shown up to {int(first['n'][-1])}." if from_n is None
               else f"FTP is clearly better (whole 95% band below 1) from n = {from_n} on.")
    summary.text = (f"<b>{_explorer_space_label(start['key'])}</b>, T = {start['T']}, μ = {start['mu']:g}, "
                    f"σ₀ = {start['sigma0']:g}: noiseless limit {limit0:.3f}. " + verdict)
    return column(space_w, T_w, mu_w, sigma0_w, plot, summary)


def explorer_tables(df, *, digits: int = 2) -> list:
    """The explorer's numbers as tables: its text alternative (a canvas is not read aloud).

    One :func:`table` per function space, a row per setting (columns T, μ, σ₀)
    and a column per n holding the ratio FTP/PTF, marked "▼" where its whole 95% interval
    lies below 1 (FTP clearly more accurate) and "▲" where it lies above 1 (PTF clearly more
    accurate); a last column says what the sentence under the figure says: from which n on
    FTP is clearly better, or "not at any n shown". The captions say which space and what
    the marks mean, so the marks never carry meaning alone.
    """
    df = _explorer_rows(df)
    num = functools.partial(number, digits=digits)
    out = []
    for key in sorted(df["key"].unique(), key=lambda k: (k != "kernel", k)):
        sub = df[df["key"] == key]
        rows = []
        for (T, mu, s0), g in sub.groupby(["T", "mu", "sigma0"], sort=True):
            g = g.sort_values("n")
            row: dict[str, object] = {"T": int(T), "mu": float(mu), "sigma0": float(s0)}
            for n, r, lo, hi in zip(g["n"], g["ratio"], g["ratio_lo"], g["ratio_hi"]):
                row[f"n = {int(n)}"] = num(r) + (" ▼" if hi < 1 else " ▲" if lo > 1 else "")
            start = None
            for n, hi in zip(reversed(g["n"].tolist()), reversed(g["ratio_hi"].tolist())):
                if hi >= 1:
                    break
                start = int(n)
            row["FTP clearly better"] = f"from n = {start}" if start is not None else "not at any n shown"
            rows.append(row)
        frame = pd.DataFrame(rows)
        text = [c for c in frame.columns if c not in ("T", "mu", "sigma0")]
        out.append(table(
            frame, f"The explorer's numbers, {_explorer_space_label(key)}: ratio FTP/PTF by setting and $n$ "
                   "(below 1: FTP more accurate). ▼: the whole 95% interval lies below 1 (FTP clearly "
                   "more accurate); ▲: above 1 (PTF clearly more accurate); no mark: undecided.",
            index=False, formats={c: str for c in text}))
    return out


def judgement_table(judgement) -> "_Table":
    """A claim's registry record beside its verdict, as a captioned table for a chapter.

    ``judgement`` is a :class:`dpfda.report.claims.Judgement` (:func:`dpfda.report.claims.judge`).
    """
    return table(judgement.record(), f"The registry's record of {judgement.claim.name} "
                 f"(`dpfda.report.claims`) and its verdict on these tables ({judgement.law} law).")
