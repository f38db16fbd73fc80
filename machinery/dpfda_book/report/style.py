"""One style for every figure of the book, and the helpers the figures share.

Figures at most :data:`TEXT_WIDTH` inches wide (the book's content column), no text smaller
than :data:`MIN_FONT_PT` points, drawn at :data:`DPI` dots per inch, on white, and the
same colour and marker for the same quantity everywhere (:func:`level_style`,
:data:`METHOD_STYLE`); :func:`use_style` sets it (:data:`STYLE`). Multi-panel figures
are laid out two panels to a row (:func:`panel_grid`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.rcsetup import cycler

__all__ = [
    "use_style",
    "level_style",
    "log_axes",
    "panel_grid",
    "setting_text",
    "level_label",
    "check_results",
    "levels_of",
    "shared_legend",
    "RULE_LABELS",
    "RULE_TEXT",
    "MARKERS",
    "COLOURS",
    "TEXT_WIDTH",
    "MIN_FONT_PT",
    "DPI",
    "METHOD_STYLE",
    "STYLE",
    "SYMBOLS",
]



RULE_LABELS = {
    "B": "$B$",
    "1.1B": "$1.1B$",
    "sqrt_log_n": r"$\sqrt{\log n}$",
    "log_n": r"$\log n$",
    "sqrt_n": r"$\sqrt{n}$",
    "n_2_3": r"$n^{2/3}$",
}
"""Figure labels of the named radius rules (:data:`dpfda_book.simulation.studies.RADIUS_RULES`; matplotlib mathtext)."""

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


def level_style(value: object, values: Iterable[object]) -> dict:
    """Colour and marker of the ``value``-th level of a parameter (T, m, B′ rule, ...).

    The k-th level of any quantity is drawn alike in every figure.
    """
    k = list(values).index(value)
    return {"color": COLOURS[k % len(COLOURS)], "marker": MARKERS[k % len(MARKERS)]}


def log_axes(ax: Axes, *, x_base: float | None = 2, y_log: bool = True) -> None:
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


def panel_grid(k: int, *, height: float = 2.7,
               sharey: bool = True) -> tuple[Figure, list[Axes], Axes | None]:
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


SYMBOLS = {"T": "T", "m": "m", "mu": "μ", "sigma0": "σ₀", "radius_rule": "B′", "n": "n"}
"""How a setting parameter is written in labels (μ for ``mu``, B′ for ``radius_rule``)."""


def setting_text(v: object) -> str:
    """A setting's value as given: 4.0 as "4", 0.1 as "0.1"."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


def level_label(param: str, value: Any) -> str:
    """A legend or panel label: "T = 4", "μ = 0.1", "B′ = log n" (mathtext)."""
    if param == "radius_rule":
        return f"B′ = {RULE_LABELS.get(value, value)}"
    return f"{SYMBOLS.get(param, param)} = {setting_text(value)}"


def check_results(df: pd.DataFrame) -> pd.DataFrame:
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


def levels_of(df: pd.DataFrame, col: str) -> list:
    """The values of ``col`` in drawing order: radius rules as the study lists them, else sorted."""
    if col == "radius_rule":
        seen = []
        for v in df[col]:
            if v not in seen:
                seen.append(v)
        return seen  # keep the study's order of rules
    return sorted(df[col].dropna().unique())


def shared_legend(fig: Figure, axes: Sequence[Axes], spare: Axes | None) -> None:
    """The legend of the first panel, for the whole figure: in ``spare`` (a spare axis) or below."""
    handles, labels = axes[0].get_legend_handles_labels()
    if spare is not None:
        spare.legend(handles, labels, loc="center")
    else:
        fig.legend(handles, labels, loc="lower center", ncols=min(len(labels), 4))

