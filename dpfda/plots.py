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
* ``kind="table"`` (Table 1): :func:`table1` returns the table as a DataFrame.

Every function takes the results table of :func:`dpfda.engine.run_study`.
The figures are matplotlib figures; nothing is shown or saved here except by
:func:`save_figure` (which writes atomically).

One style for every figure of the book (:func:`use_style`, :data:`STYLE`): figures
at most :data:`TEXT_WIDTH` inches wide (the book's content column), no text smaller
than :data:`MIN_FONT_PT` points, drawn at :data:`DPI` dots per inch, on white, and the
same colour and marker for the same quantity everywhere (:func:`level_style`,
:data:`METHOD_STYLE`). Multi-panel figures are laid out two panels to a row.
"""

from __future__ import annotations

import os
import tempfile

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
import pandas as pd

from .studies import RULE_LABELS, Study

__all__ = [
    "STYLE",
    "use_style",
    "level_style",
    "log_axes",
    "panel_grid",
    "figure",
    "ratio_map",
    "ratio_figure",
    "scaled_figure",
    "table1",
    "table_markdown",
    "caption",
    "save_figure",
    "write_text_atomic",
]

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
# Okabe-Ito colours (safe for colour-blind readers, legible on white and in print).
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442"]
#: Width of the book's content column in inches: no figure is wider.
TEXT_WIDTH = 6.4
#: Smallest font size (points) of any text in a figure; the browser test checks that
#: this is at least 9 CSS px tall as displayed.
MIN_FONT_PT = 9.0
#: Resolution of the figures' PNGs (dots per inch): sharp on high-density screens.
DPI = 150
#: FTP and PTF drawn alike in every chapter.
METHOD_STYLE = {"ftp": {"color": COLOURS[0], "marker": "o"},
                "ptf": {"color": COLOURS[1], "marker": "s"}}

STYLE = {
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
    "axes.prop_cycle": mpl.cycler(color=COLOURS),
    "mathtext.fontset": "dejavusans",
}


def use_style() -> None:
    """Apply the book's figure style (:data:`STYLE`) to matplotlib's defaults.

    Every chapter calls this once, after importing pyplot.
    """
    mpl.rcParams.update(STYLE)


def level_style(value, values) -> dict:
    """Colour and marker of the ``value``-th level of a parameter (T, m, B′ rule, ...):
    the k-th level of any quantity is drawn alike in every figure."""
    k = list(values).index(value)
    return {"color": COLOURS[k % len(COLOURS)], "marker": MARKERS[k % len(MARKERS)]}


def log_axes(ax, *, x_base: float | None = 2, y_log: bool = True) -> None:
    """Log axes with readable tick labels: sample sizes as plain integers (4, 16, ...,
    4096) on a base-2 axis, and, on a log y axis spanning less than two decades, the
    2 and 5 multiples labelled as plain numbers."""
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
        if pv is not None:
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
            err = 1.959963984540054 * d["n"] * d[f"se_{method}"]
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
    """The FTP/PTF ratio as a heat map over ``rows`` × ``cols``, one panel per value of
    ``panel``, panels stacked. Colour: log₂ of the ratio (blue: FTP more accurate, red:
    PTF); each cell is labelled with the ratio, in bold where the 95% interval excludes
    1, with "(PTF)" where PTF wins and "(?)" where the interval contains 1."""
    from matplotlib.colors import TwoSlopeNorm

    df = _check(df)
    verdict = np.select([df["ratio_hi"] < 1, df["ratio_lo"] > 1], ["FTP", "PTF"], "undecided")
    df = df.assign(_verdict=verdict)
    panels, rvals, cvals = (_values(df, c) for c in (panel, rows, cols))
    fig, axes = plt.subplots(len(panels), 1, figsize=(TEXT_WIDTH, 2.9 * len(panels) + 0.3),
                             squeeze=False)
    norm = TwoSlopeNorm(vmin=-3.5, vcenter=0.0, vmax=1.0)
    for ax, pv in zip(axes[:, 0], panels):
        d = df[df[panel] == pv]
        ratio = d.pivot(index=rows, columns=cols, values="ratio").loc[rvals, cvals].to_numpy()
        marks = d.pivot(index=rows, columns=cols, values="_verdict").loc[rvals, cvals].to_numpy()
        im = ax.imshow(np.log2(ratio), origin="lower", cmap="RdBu_r", norm=norm, aspect="auto")
        for (i, j), r in np.ndenumerate(ratio):
            tail = {"FTP": "", "PTF": "\n(PTF)", "undecided": "\n(?)"}[marks[i, j]]
            ax.text(j, i, f"{r:.2f}{tail}", ha="center", va="center", fontsize=MIN_FONT_PT,
                    fontweight="normal" if marks[i, j] == "undecided" else "bold")
        if cols == "n":
            ax.set_xticks(range(len(cvals)), [f"{int(v)}" for v in cvals])
        else:
            ax.set_xticks(range(len(cvals)), [_fmt(v) for v in cvals])
        ax.set_yticks(range(len(rvals)), [_fmt(v) for v in rvals])
        ax.set_xlabel("sample size $n$" if cols == "n" else _SYMBOL.get(cols, cols))
        ax.set_ylabel(_SYMBOL.get(rows, rows))
        ax.set_title(_label(panel, pv))
        ax.grid(False)
    fig.colorbar(im, ax=axes[:, 0], label="log₂ (ratio FTP / PTF)", shrink=0.8)
    return fig


def figure(df: pd.DataFrame, study: Study | None = None, *, title: str | None = None):
    """The figure of a study, in its kind (ratio or scaled); ``study`` defaults to
    the paper's study named in ``df["study"]``."""
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
# Atomic writes: a file either is complete or does not exist under its name
# ---------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic(path, write):
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".part", dir=folder)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save_figure(fig, path, dpi: int = 150) -> None:
    """Save a figure as PNG under a temporary name, then rename it into place."""
    _atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))


def write_text_atomic(path, text: str) -> None:
    """Write text to a temporary file, then rename it into place."""
    def w(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    _atomic(path, w)
