"""The interactive FTP/PTF ratio explorer as one self-contained HTML fragment, for static pages.

:func:`ratio_explorer` draws the explorer (a Bokeh layout whose redraw is a
small JavaScript callback: nothing is computed or fetched when a reader moves a slider).
:func:`explorer_html` returns such a layout as one HTML fragment whose scripts are all
inline (BokehJS itself included, from the installed ``bokeh`` package), so the book
serves every byte of it, and gives its sliders accessible names.

:func:`explorer_tables` is its text alternative. Needs the optional dependency ``bokeh``
(imported when called).
"""

from __future__ import annotations

import functools
import json
from html import escape
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpfda.mechanisms.theory import ratio_limit

from ..simulation.studies import Setting, check_family
from .tables import Table, number, table

if TYPE_CHECKING:
    from bokeh.models import LayoutDOM

__all__ = ["ratio_explorer", "explorer_tables", "explorer_html", "EXPLORER_COLUMNS", "EXPLORER_NAMES"]


# ---------------------------------------------------------------------------
# The interactive ratio explorer (Bokeh; embedded in a page by dpfda_book.report.explorer.explorer_html)
# ---------------------------------------------------------------------------

EXPLORER_COLUMNS = ("family", "T", "m", "rho", "n", "mu", "sigma0", "ratio", "ratio_lo", "ratio_hi")
"""Columns the ratio explorer (:func:`ratio_explorer`) reads from an engine results table."""

#: Model names of the explorer's Bokeh document, for the page's script (:mod:`dpfda_book.report.explorer`)
#: and the browser test.
EXPLORER_NAMES = {"space": "explorer-space", "T": "explorer-T", "mu": "explorer-mu", "sigma0": "explorer-sigma0",
                  "shown": "explorer-shown", "plot": "explorer-plot", "summary": "explorer-summary"}


def _explorer_space_key(row: pd.Series) -> str:
    """The space a widget button selects: "kernel", or "legendre" and m (e.g. "legendre3")."""
    family = check_family(row["family"], "df's column family")
    if family not in ("kernel", "legendre"):
        raise ValueError(f"the explorer draws the paper's spaces (family 'kernel' or 'legendre'), got {family!r}")
    return family if family == "kernel" else f"legendre{int(row['m'])}"


def _explorer_space_label(key: str) -> str:
    """A space's name on the explorer's buttons and in its tables: "Legendre H₃"."""
    if key == "kernel":
        return "RKHS (Gaussian kernel)"
    sub = key.removeprefix("legendre").translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
    return f"Legendre H{sub}"


def _explorer_rows(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` checked for the explorer (every column, positive finite ratios), with a column ``key``."""
    missing = [c for c in EXPLORER_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"df must be an engine results table; missing columns {missing}")
    if len(df) == 0:
        raise ValueError("df has no rows")
    bad = ~np.isfinite(df[["ratio", "ratio_lo", "ratio_hi"]].to_numpy(dtype=float)).all(axis=1)
    if bad.any() or (df["ratio_lo"] <= 0).any():
        raise ValueError("df has non-finite or non-positive ratios (a setting without error?)")
    return df.assign(key=[_explorer_space_key(r) for _, r in df.iterrows()])


def _noiseless_limit(row: pd.Series, T: int) -> float:
    """The noiseless large-n ratio of the setting's space on T uniform points (theory.ratio_limit)."""
    kw = dict(m=int(row["m"])) if row["family"] == "legendre" else dict(rho=float(row["rho"]))
    setting = Setting(family=row["family"], n=4, T=int(T), mu=1.0, sigma0=0.0, radius_rule="B", **kw)
    return float(ratio_limit(setting.geometry()))


def ratio_explorer(df: pd.DataFrame, *, width: int = 660, height: int = 400) -> LayoutDOM:
    """A Bokeh layout: ratio FTP/PTF against n, with widgets for space, T, μ and σ₀.

    The Monte Carlo error ratio with its 95% interval as a band, the noiseless limit and
    the ratio 1 as reference lines.  Every setting's numbers are embedded and the redraw
    is a small JavaScript callback: nothing is computed or fetched when a reader moves a
    slider.  Needs the optional dependency ``bokeh``; :func:`dpfda_book.report.explorer.explorer_html`
    embeds the layout in a page, :func:`explorer_tables` is its text alternative.

    Parameters
    ----------
    df : pandas.DataFrame
        Results of :func:`dpfda_book.simulation.schedule.run_study`; every combination of the widgets'
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


def explorer_tables(df: pd.DataFrame, *, digits: int = 2) -> list[Table]:
    """The explorer's numbers as tables: its text alternative (a canvas is not read aloud).

    One :func:`~dpfda_book.report.tables.table` per function space, a row per setting (columns T, μ, σ₀)
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



def explorer_html(layout: LayoutDOM, label: str | None = None) -> str:
    """One HTML fragment: BokehJS (core and widgets) inline, then the figure's script and div.

    ``label`` (optional) names the figure for assistive technology: the div is wrapped in a
    ``role="figure"`` element with that ``aria-label`` (Bokeh's canvas itself has no ARIA).
    """
    from bokeh.embed import components
    from bokeh.resources import Resources

    resources = Resources(mode="inline", components=["bokeh", "bokeh-widgets"])
    script, div = components(layout)
    if label is not None:
        if not (isinstance(label, str) and label.strip()):
            raise ValueError("label must be a non-empty string or None")
        div = f'<div class="dpfda-explorer" role="figure" aria-label="{escape(" ".join(label.split()))}">{div}</div>'
    return resources.render_js() + script + div + _SLIDER_LABELS


# Bokeh's slider handles (role="slider") carry no accessible name: each gets its widget's
# title ("μ = 1") as aria-label once BokehJS has rendered, and again after every change
# (the widgets' callback calls window.dpfdaLabelSliders).
_SLIDER_LABELS = """<script>
(function () {
  const names = %s;
  function label() {
    if (!(window.Bokeh && Bokeh.documents.length && Bokeh.index && Bokeh.index.roots.length)) return false;
    const doc = Bokeh.documents[0];
    let done = 0;
    for (const name of names) {
      const model = doc.get_model_by_name(name);
      if (!model) continue;
      for (const root of Bokeh.index.roots) {
        let view = null;
        try { view = root.owner.get_one(model); } catch (e) { view = null; }
        const handle = view && view.shadow_el && view.shadow_el.querySelector('[role="slider"]');
        if (handle) { handle.setAttribute('aria-label', model.title); done += 1; }
      }
    }
    return done > 0;
  }
  window.dpfdaLabelSliders = label;
  let tries = 0;
  const timer = setInterval(() => { tries += 1; if (label() || tries > 300) clearInterval(timer); }, 100);
})();
</script>""" % json.dumps([EXPLORER_NAMES["T"], EXPLORER_NAMES["mu"], EXPLORER_NAMES["sigma0"]])
