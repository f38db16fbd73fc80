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
"""

from __future__ import annotations

import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .studies import RULE_LABELS, Study

__all__ = [
    "figure",
    "ratio_figure",
    "scaled_figure",
    "table1",
    "table_markdown",
    "caption",
    "save_figure",
    "write_text_atomic",
]

MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
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


def ratio_figure(df: pd.DataFrame, *, group: str = "T", panel: str | None = "mu",
                 reference: bool = True, title: str | None = None):
    """Error ratio FTP/PTF against n (Figures 1, 3, 4, 6)."""
    df = _check(df)
    panels = _values(df, panel) if panel else [None]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels) + 1.2, 3.9),
                             sharey=True, squeeze=False)
    metric = df["metric"].iloc[0]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    groups = _values(df, group)
    for ax, pv in zip(axes[0], panels):
        sub = df if pv is None else df[df[panel] == pv]
        for i, gv in enumerate(groups):
            d = sub[sub[group] == gv].sort_values("n")
            if d.empty:
                continue
            colour = colours[i % len(colours)]
            yerr = np.vstack([d["ratio"] - d["ratio_lo"], d["ratio_hi"] - d["ratio"]])
            ax.errorbar(d["n"], d["ratio"], yerr=yerr, color=colour, marker=MARKERS[i % len(MARKERS)],
                        ms=5, lw=1.3, capsize=2.5, label=_label(group, gv))
            if reference and group in ("T", "m"):
                ax.axhline(1.0 / float(gv), color=colour, ls="--", lw=1.0, alpha=0.8)
        ax.axhline(1.0, color="0.6", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sample size $n$")
        if pv is not None:
            ax.set_title(_label(panel, pv))
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel(f"{metric} ratio FTP / PTF")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 1.0 / (4.4 * len(panels) + 1.2), 1))
    return fig


def scaled_figure(df: pd.DataFrame, *, group: str = "radius_rule", title: str | None = None):
    """n × error of FTP (left) and PTF (right) against n (Figures 2, 5)."""
    df = _check(df)
    metric = df["metric"].iloc[0]
    fig, axes = plt.subplots(1, 2, figsize=(10.2, 3.9))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, method in zip(axes, ("ftp", "ptf")):
        for i, gv in enumerate(_values(df, group)):
            d = df[df[group] == gv].sort_values("n")
            y = d["n"] * d[f"err_{method}"]
            err = 1.959963984540054 * d["n"] * d[f"se_{method}"]
            ax.errorbar(d["n"], y, yerr=err, color=colours[i % len(colours)],
                        marker=MARKERS[i % len(MARKERS)], ms=5, lw=1.3, capsize=2.5,
                        label=_label(group, gv))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sample size $n$")
        ax.set_ylabel(f"$n$ × {metric}")
        ax.set_title(method.upper())
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.84, 1))
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


def _temporary_prefix(path) -> str:
    """Temporary files for ``path`` are named ``.<name>.<random>.part`` beside it."""
    return "." + os.path.basename(os.fspath(path)) + "."


def _discard(tmp) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _stage(path, write) -> str:
    """Write ``path``'s content under a temporary name beside it; return that name.

    ``write(tmp)`` writes the file.  If it fails (or is interrupted) the
    temporary file is removed.  Renaming the result to ``path`` is the caller's
    step (:func:`_atomic`, or the command line's all-or-nothing commit).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".part", dir=folder)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def _atomic(path, write):
    tmp = _stage(path, write)
    try:
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def save_figure(fig, path, dpi: int = 150) -> None:
    """Save a figure as PNG under a temporary name, then rename it into place."""
    _atomic(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))


def _text_writer(text: str):
    """A ``write(tmp)`` function for :func:`_stage`/:func:`_atomic` that writes ``text`` (UTF-8)."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    return write


def write_text_atomic(path, text: str) -> None:
    """Write text to a temporary file, then rename it into place."""
    _atomic(path, _text_writer(text))
