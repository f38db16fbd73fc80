"""The interactive FTP/PTF ratio explorer as one self-contained HTML fragment, for static pages.

:func:`dpfda.report.plots.ratio_explorer` draws the explorer (a Bokeh layout whose redraw is a
small JavaScript callback: nothing is computed or fetched when a reader moves a slider).
:func:`explorer_html` returns such a layout as one HTML fragment whose scripts are all
inline (BokehJS itself included, from the installed ``bokeh`` package), so the book
serves every byte of it, and gives its sliders accessible names.

Needs the optional dependency ``bokeh`` (imported when called).
"""

from __future__ import annotations

import json
from html import escape

from .plots import EXPLORER_NAMES

__all__ = ["explorer_html"]


def explorer_html(layout, label: str | None = None) -> str:
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
