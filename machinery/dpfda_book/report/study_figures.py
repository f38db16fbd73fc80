"""The paper's study figures: the simulation studies drawn as the paper draws them.

How a study is drawn is its :class:`~dpfda_book.simulation.studies.Layout` (each of the paper's
studies carries its own; :func:`figure` draws a study in its layout):

* ``kind="ratio"`` (Figures 1, 3, 4, 6): the FTP/PTF error ratio against n on
  log–log axes, one panel per μ (Figures 1, 4) or σ₀ (Figures 3, 6), colour and
  marker by T (RKHS) or m (H_m), dashed lines at the noiseless reference 1/T
  (Corollary 15) or 1/m (Corollary 12) in the matching colour; error bars are
  the 95% confidence intervals of the ratio (:data:`dpfda_book.simulation.tabulate.CI_METHOD`).
  A thin grey line marks ratio 1, above which PTF is the more accurate.
* ``kind="scaled"`` (Figures 2, 5): n × MSE (or n × IMSE) against n, FTP in
  the left panel and PTF in the right, one line per radius rule; error bars
  ± 1.96 n·SE.
* ``kind="table"`` (Table 1): :func:`dpfda_book.report.evidence.table1_frame` computes the table, and
  :func:`~dpfda_book.report.tables.pivot_n_by_mu_T` lays one of its quantities out as the paper does (rows n,
  columns T within μ).

They take the results table of :func:`dpfda_book.simulation.schedule.run_study`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure

from ..montecarlo import Z95
from ..simulation.studies import LAYOUTS, Layout, Study, layout_of
from .style import (
    MIN_FONT_PT,
    SYMBOLS,
    TEXT_WIDTH,
    check_results,
    level_label,
    level_style,
    levels_of,
    log_axes,
    panel_grid,
    setting_text,
    shared_legend,
)

__all__ = [
    "ratio_figure",
    "scaled_figure",
    "ratio_map",
    "figure",
    "caption",
]



def ratio_figure(df: pd.DataFrame, *, group: str = "T", panel: str | None = "mu",
                 reference: bool = True, title: str | None = None) -> Figure:
    """Error ratio FTP/PTF against n (Figures 1, 3, 4, 6), two panels to a row."""
    df = check_results(df)
    panels = levels_of(df, panel) if panel else [None]
    fig, axes, spare = panel_grid(len(panels))
    metric = df["metric"].iloc[0]
    groups = levels_of(df, group)
    for ax, pv in zip(axes, panels):
        sub = df if pv is None else df[df[panel] == pv]
        for gv in groups:
            d = sub[sub[group] == gv].sort_values("n")
            if d.empty:
                continue
            look = level_style(gv, groups)
            yerr = np.vstack([d["ratio"] - d["ratio_lo"], d["ratio_hi"] - d["ratio"]])
            ax.errorbar(d["n"], d["ratio"], yerr=yerr, **look, label=level_label(group, gv))
            if reference and group in ("T", "m"):
                ax.axhline(1.0 / float(gv), color=look["color"], ls="--", lw=1.0, alpha=0.8)
        ax.axhline(1.0, color="0.6", lw=0.8, ls=":")
        log_axes(ax)
        ax.set_xlabel("sample size $n$")
        if panel is not None and pv is not None:
            ax.set_title(level_label(panel, pv))
    for ax in axes[::2]:
        ax.set_ylabel(f"{metric} ratio FTP / PTF")
    shared_legend(fig, axes, spare)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.1 if spare is None else 0, 1, 1))
    return fig


def scaled_figure(df: pd.DataFrame, *, group: str = "radius_rule", title: str | None = None) -> Figure:
    """n × error of FTP (left) and PTF (right) against n (Figures 2, 5)."""
    df = check_results(df)
    metric = df["metric"].iloc[0]
    fig, axes, spare = panel_grid(2, height=3.0, sharey=False)
    groups = levels_of(df, group)
    for ax, method in zip(axes, ("ftp", "ptf")):
        for gv in groups:
            d = df[df[group] == gv].sort_values("n")
            y = d["n"] * d[f"err_{method}"]
            err = Z95 * d["n"] * d[f"se_{method}"]
            ax.errorbar(d["n"], y, yerr=err, **level_style(gv, groups), label=level_label(group, gv))
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
              cols: str = "n") -> Figure:
    """The FTP/PTF ratio as a heat map over ``rows`` × ``cols``.

    One panel per value of ``panel``, panels stacked. Colour: log₂ of the ratio (blue: FTP more accurate, red:
    PTF); each cell is labelled with the ratio, in bold where the 95% interval excludes
    1, with "(PTF)" where PTF wins and "(?)" where the interval contains 1.
    """
    df = check_results(df)
    verdict = np.select([df["ratio_hi"] < 1, df["ratio_lo"] > 1], ["FTP", "PTF"], "undecided")
    df = df.assign(_verdict=verdict)
    panels, rvals, cvals = (levels_of(df, c) for c in (panel, rows, cols))
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
            ax.set_xticks(range(len(cvals)), [setting_text(v) for v in cvals])
        ax.set_yticks(range(len(rvals)), [setting_text(v) for v in rvals])
        if pv == panels[-1]:
            ax.set_xlabel("sample size $n$" if cols == "n" else SYMBOLS.get(cols, cols))
        ax.set_ylabel(SYMBOLS.get(rows, rows))
        ax.set_title(level_label(panel, pv))
        ax.grid(False)
    fig.colorbar(im, ax=axes[:, 0], label="log₂ (ratio FTP / PTF)", shrink=0.7)
    return fig




def figure(df: pd.DataFrame, study: Study | str | None = None, *, layout: Layout | None = None,
           title: str | None = None) -> Figure:
    """The figure of a study in its layout (ratio or scaled).

    ``study`` (a :class:`~dpfda_book.simulation.studies.Study` or its name) defaults to the study named
    in ``df["study"]``; its layout is :data:`~dpfda_book.simulation.studies.LAYOUTS`' entry for it unless ``layout`` is
    given (a study of one's own needs one).
    """
    df = check_results(df)
    if layout is None:
        layout = layout_of(str(df["study"].iloc[0]) if study is None else study)
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
    if layout.kind == "ratio":
        return ratio_figure(df, group=layout.group, panel=layout.panel, reference=layout.reference,
                            title=title)
    if layout.kind == "scaled":
        return scaled_figure(df, group=layout.group, title=title)
    raise ValueError("the layout is a table: show dpfda_book.report.evidence.table1_frame(df) with plots.table")


def caption(df_or_meta: pd.DataFrame | Mapping[str, Any], layout: Layout | None = None) -> str:
    """A caption sentence stating the source, the repetitions and the seed.

    What the error bars are depends on the layout (default: :data:`~dpfda_book.simulation.studies.LAYOUTS`' entry for
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


