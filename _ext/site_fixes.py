"""Small defects of the built site, fixed where they arise.

* One search box. pydata-sphinx-theme 0.17 puts a search field into the header
  (``navbar_persistent``) unless the user's theme options name that option; the book theme
  already has one in the sidebar, so every page showed two. We name it, empty, before the
  theme fills in its default.
* Unique HTML ids. sphinx-proof and sphinx-exercise give the body of every box the same id
  (``proof-content``, ``exercise-content``, ``solution-content``), so a chapter with five
  theorems has five elements with one id. After references are resolved, every repeated
  id in a document gets a numbered suffix (the first keeps its name); nothing links to them.
  The title of an unnumbered sphinx-proof box keeps the box's id: sphinx-proof finds it by
  that id.
* The single-page build (``make pdf``). Extensions register their HTML visitors for the
  builder named ``html`` (myst-nb's folded code cells among them), so the ``singlehtml``
  builder stopped at the first folded cell. It gets the same visitors.
* Bibliography labels that match the text. The text cites author–year ("Dong et al.
  [2022]", ``bibtex_reference_style: author_year``) but the default pybtex style labels the
  entries alphabetically ("[DRS22]"). The ``authoryear`` style registered here labels them
  "Dong et al. 2022", "Bun and Steinke 2016", sorted by author and year.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from docutils import nodes
from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle


def _last_names(person) -> str:
    return " ".join(person.prelast_names + person.last_names)


class AuthorYearLabelStyle(BaseLabelStyle):
    """Labels "Last 2020", "Last and Other 2020", "Last et al. 2020" (a, b for clashes)."""

    def format_labels(self, sorted_entries):
        labels = [self._label(entry) for entry in sorted_entries]
        counts, seen = Counter(labels), Counter()
        for label in labels:
            if counts[label] > 1:
                seen[label] += 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            else:
                yield label

    @staticmethod
    def _label(entry) -> str:
        persons = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_last_names(p).replace("{", "").replace("}", "") for p in persons]
        if not names:
            who = entry.fields.get("key", entry.key)
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return f"{who} {entry.fields.get('year', 'n.d.')}"


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "authoryear"
    default_sorting_style = "author_year_title"


register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabelStyle)
register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
assert SortingStyle  # the sorting style named above ships with pybtex


def _one_search_box(app, config) -> None:
    options = dict(config.html_theme_options or {})
    options.setdefault("navbar_persistent", [])
    config.html_theme_options = options


def _unique_ids(app, doctree, docname) -> None:
    seen: Counter = Counter()
    for node in doctree.findall(nodes.Element):
        ids = node.get("ids") or []
        parent_ids = node.parent.get("ids", []) if isinstance(node.parent, nodes.Element) else []
        for k, ident in enumerate(ids):
            if ident in parent_ids:
                # sphinx-proof's unnumbered boxes (:nonumber:) give their title paragraph the
                # box's own id and find the title by it when the box is written: keep it
                continue
            seen[ident] += 1
            if seen[ident] > 1:
                ids[k] = f"{ident}-{seen[ident]}"


_TITLE_ID = re.compile(r'<p class="admonition-title" id="[^"]*">')


def _drop_title_ids(app, exception) -> None:
    """The written pages: an unnumbered box's title paragraph loses the id it shares with its box."""
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = _TITLE_ID.sub('<p class="admonition-title">', text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def _html_visitors_for_single_page(app) -> None:
    if app.builder.name != "singlehtml":
        return
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for node, visitors in handlers.get("html", {}).items():
        single.setdefault(node, visitors)


def setup(app):
    app.connect("build-finished", _drop_title_ids)
    app.connect("builder-inited", _html_visitors_for_single_page, priority=0)
    app.connect("config-inited", _one_search_box)
    app.connect("doctree-resolved", _unique_ids)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
