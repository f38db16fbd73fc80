"""Figures and tables of the simulation study, drawn as the paper draws them.

* ``kind="ratio"`` (Figures 1, 3, 4, 6): the FTP/PTF error ratio against n on
  log–log axes, one panel per μ (Figures 1, 4) or σ₀ (Figures 3, 6), colour and
  marker by T (RKHS) or m (H_m), dashed lines at the noiseless reference 1/T
  (Corollary 15) or 1/m (Corollary 12) in the matching colour; error bars are
  the 95% confidence intervals of the ratio (:data:`dpfda.engine.CI_METHOD`).
  A thin grey line marks ratio 1, above which PTF is the more accurate.
* ``kind="scaled"`` (Figures 2, 5): n × MSE (or n × IMSE) against n, FTP in
  the left panel and PTF in the right, one line per radius rule; error bars
  ± 1.96 n·SE.
* ``kind="table"`` (Table 1): :func:`table1` returns the table as a DataFrame, and
  :func:`table1_layout` lays one of its quantities out as the paper does (rows n,
  columns T within μ).

Tables shown in the book go through :func:`table`: a numbered, captioned table (MyST
``list-table``, which Sphinx numbers "Table k.j"), headers typeset (μ, σ₀, B′, not
``mu``), every number formatted by :func:`number` (no reprs, no 16-digit floats).

Every function takes the results table of :func:`dpfda.engine.run_study`.
The figures are matplotlib figures; nothing is shown or saved here (the command
line, :mod:`dpfda.cli`, writes a run's files, atomically).

One style for every figure of the book (:func:`use_style`, :data:`STYLE`): figures
at most :data:`TEXT_WIDTH` inches wide (the book's content column), no text smaller
than :data:`MIN_FONT_PT` points, drawn at :data:`DPI` dots per inch, on white, and the
same colour and marker for the same quantity everywhere (:func:`level_style`,
:data:`METHOD_STYLE`). Multi-panel figures are laid out two panels to a row.
"""

from __future__ import annotations

import re
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import ticker
from matplotlib.rcsetup import cycler

from .config import Z95
from .studies import RULE_LABELS, Study

__all__ = [
    "STYLE",
    "use_style",
    "level_style",
    "log_axes",
    "panel_grid",
    "figure",
    "ratio_map",
    "pipeline_diagram",
    "Table",
    "table",
    "number",
    "table1_layout",
    "ratio_figure",
    "scaled_figure",
    "table1",
    "table_markdown",
    "caption",
]

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
_SYMBOL = {"T": "T", "m": "m", "mu": "μ", "sigma0": "σ₀", "radius_rule": "B′", "n": "n"}


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


def _label(param: str, value) -> str:
    if param == "radius_rule":
        return f"B′ = {RULE_LABELS.get(value, value)}"
    return f"{_SYMBOL.get(param, param)} = {_fmt(value)}"


def _check(df: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"results must be a pandas DataFrame from run_study, got {type(df).__name__}")
    need = {"n", "err_ftp", "err_ptf", "ratio", "ratio_lo", "ratio_hi", "se_ftp", "se_ptf", "metric"}
    missing = need - set(df.columns)
    if missing:
        raise ValueError(f"results table lacks columns {sorted(missing)}; pass the output of run_study")
    if df.empty:
        raise ValueError("results table is empty")
    return df


def _values(df: pd.DataFrame, col: str) -> list:
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
    df = _check(df)
    panels = _values(df, panel) if panel else [None]
    fig, axes, spare = panel_grid(len(panels))
    metric = df["metric"].iloc[0]
    groups = _values(df, group)
    for ax, pv in zip(axes, panels):
        sub = df if pv is None else df[df[panel] == pv]
        for gv in groups:
            d = sub[sub[group] == gv].sort_values("n")
            if d.empty:
                continue
            look = level_style(gv, groups)
            yerr = np.vstack([d["ratio"] - d["ratio_lo"], d["ratio_hi"] - d["ratio"]])
            ax.errorbar(d["n"], d["ratio"], yerr=yerr, **look, label=_label(group, gv))
            if reference and group in ("T", "m"):
                ax.axhline(1.0 / float(gv), color=look["color"], ls="--", lw=1.0, alpha=0.8)
        ax.axhline(1.0, color="0.6", lw=0.8, ls=":")
        log_axes(ax)
        ax.set_xlabel("sample size $n$")
        if panel is not None and pv is not None:
            ax.set_title(_label(panel, pv))
    for ax in axes[::2]:
        ax.set_ylabel(f"{metric} ratio FTP / PTF")
    _legend(fig, axes, spare)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.1 if spare is None else 0, 1, 1))
    return fig


def scaled_figure(df: pd.DataFrame, *, group: str = "radius_rule", title: str | None = None):
    """n × error of FTP (left) and PTF (right) against n (Figures 2, 5)."""
    df = _check(df)
    metric = df["metric"].iloc[0]
    fig, axes, spare = panel_grid(2, height=3.0, sharey=False)
    groups = _values(df, group)
    for ax, method in zip(axes, ("ftp", "ptf")):
        for gv in groups:
            d = df[df[group] == gv].sort_values("n")
            y = d["n"] * d[f"err_{method}"]
            err = Z95 * d["n"] * d[f"se_{method}"]
            ax.errorbar(d["n"], y, yerr=err, **level_style(gv, groups), label=_label(group, gv))
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
    from matplotlib.colors import TwoSlopeNorm

    df = _check(df)
    verdict = np.select([df["ratio_hi"] < 1, df["ratio_lo"] > 1], ["FTP", "PTF"], "undecided")
    df = df.assign(_verdict=verdict)
    panels, rvals, cvals = (_values(df, c) for c in (panel, rows, cols))
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
            ax.set_xticks(range(len(cvals)), [_fmt(v) for v in cvals])
        ax.set_yticks(range(len(rvals)), [_fmt(v) for v in rvals])
        if pv == panels[-1]:
            ax.set_xlabel("sample size $n$" if cols == "n" else _SYMBOL.get(cols, cols))
        ax.set_ylabel(_SYMBOL.get(rows, rows))
        ax.set_title(_label(panel, pv))
        ax.grid(False)
    fig.colorbar(im, ax=axes[:, 0], label="log₂ (ratio FTP / PTF)", shrink=0.7)
    return fig


def pipeline_diagram():
    """The two pipelines as block diagrams, one row each.

    The order in which each clips or fits, averages over the n curves, and adds
    noise (Algorithms 1 and 2).
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

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


def figure(df: pd.DataFrame, study: Study | None = None, *, title: str | None = None):
    """The figure of a study, in its kind (ratio or scaled).

    ``study`` defaults to the paper's study named in ``df["study"]``.
    """
    df = _check(df)
    if study is None:
        from .studies import get_study

        study = get_study(str(df["study"].iloc[0]))
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study, got {type(study).__name__}")
    if study.kind == "ratio":
        return ratio_figure(df, group=study.group, panel=study.panel, reference=study.reference,
                            title=title)
    if study.kind == "scaled":
        return scaled_figure(df, group=study.group, title=title)
    raise ValueError(f"study {study.name!r} is a table; use table1(df) for it")


def table1(df: pd.DataFrame) -> pd.DataFrame:
    """Table 1: per (μ, T, n) the two MSEs, their ratio (with its 95% CI) and p̂_PTF.

    Rows are ordered by μ, T, n, as the settings of Figure 1.
    """
    df = _check(df)
    cols = {"mu": "mu", "T": "T", "n": "n", "err_ftp": "MSE_FTP", "err_ptf": "MSE_PTF",
            "ratio": "ratio", "ratio_lo": "ratio_lo", "ratio_hi": "ratio_hi",
            "p_ptf_active": "p_PTF"}
    missing = set(cols) - set(df.columns)
    if missing:
        raise ValueError(f"results table lacks columns {sorted(missing)}")
    out = df[list(cols)].rename(columns=cols).sort_values(["mu", "T", "n"]).reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out


def table_markdown(table: pd.DataFrame, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown rendering of a table (no extra dependency)."""
    def cell(v):
        if isinstance(v, (float, np.floating)):
            return f"{v:.{digits}g}"
        return str(v)

    header = "| " + " | ".join(str(c) for c in table.columns) + " |"
    rule = "|" + "|".join("---:" for _ in table.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([header, rule] + rows) + "\n"


def caption(df_or_meta) -> str:
    """A caption sentence stating the source, the repetitions and the seed."""
    meta = df_or_meta.attrs.get("dpfda", {}) if isinstance(df_or_meta, pd.DataFrame) else dict(df_or_meta)
    if not meta:
        raise ValueError("no run metadata: pass the DataFrame returned by run_study or its attrs['dpfda']")
    src = f" ({meta['source']})" if meta.get("source") else ""
    what = "Error bars are 95% delta-method confidence intervals." if meta.get("kind") == "ratio" else (
        "Error bars are ±1.96 Monte Carlo standard errors." if meta.get("kind") == "scaled" else
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


class Table:
    """A table that the book renders as a numbered table.

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
          digits: int = 3, formats: dict | None = None, headers: dict | None = None) -> Table:
    """A DataFrame or Series as a numbered, captioned :class:`Table`.

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
            return _fmt(x)
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
                f = _fmt  # a setting, not an estimate: 0.1, not 0.100
            text = f(v) if callable(f) else f.format(v) if f else number(v, digits)
            cells.append(_escape(text))
        if index:
            keys = key if isinstance(key, tuple) else (key,)
            cells = [" · ".join(_escape(names.get(k, k)) if isinstance(k, str) else _fmt(k)
                                for k in keys)] + cells
        rows.append(cells)
    return Table(header_rows, rows, caption, name)


def table1_layout(table1_df: pd.DataFrame, value: str) -> pd.DataFrame:
    """One quantity of Table 1 laid out as the paper lays it out.

    Rows n, columns T within μ (two header levels).
    """
    if value not in table1_df.columns:
        raise ValueError(f"value must be a column of table1(df), one of {list(table1_df.columns)}")
    out = table1_df.pivot_table(index="n", columns=["mu", "T"], values=value)
    out.columns = pd.MultiIndex.from_tuples([(f"μ = {_fmt(mu)}", f"T = {int(T)}")
                                             for mu, T in out.columns])
    return out
