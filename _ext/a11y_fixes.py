"""Accessibility defects of the theme's and extensions' HTML, fixed in the built pages.

axe-core (run on every page by ``tests/browser/test_rendering.py``) found these in HTML the
book does not write itself; each is fixed here, where the page is written:

* **Accessible names that hide the visible text** (WCAG 2.5.3, "label in name"). myst-nb
  labels the toggle of every folded cell ``aria-label="Toggle hidden content"`` while it
  shows "Show code cell source"; the theme labels its search button "Search" while it
  shows "Search Ctrl+K", and its colour-mode button "Color mode" while its icons carry the
  titles "Light", "Dark", "System Settings" (Font Awesome turns them into SVG titles). The
  folded cells' toggles and the search button lose the label (their visible text is their
  name); the colour-mode icons lose their titles and are hidden from assistive technology
  (the button keeps its label and its "Color mode" tooltip).
* **The bibliography's ARIA roles** (WCAG 1.3.1). docutils marks the list of references
  ``role="list"`` and each entry with the deprecated ``doc-biblioentry`` role, which is not
  a list item; both roles go (the entries stay in document order, under their heading).
* **Link colour on tinted boxes** (WCAG 1.4.3, contrast 4.5:1). The theme's light-mode link
  blue (#176de8) reaches only 4.2-4.3:1 on the tinted backgrounds of theorem, exercise and
  admonition boxes; a darker blue (#1260d6, at least 5:1 on every box background and 5.7:1
  on white) is used in light mode. Dark mode keeps the theme's colours, which pass.

The rewrites are plain string replacements of the exact markup the tools write, applied at
``build-finished`` to every HTML file of the output (the single-page build of ``make pdf``
too); a page without that markup is left as it is.
"""

from __future__ import annotations

import re
from pathlib import Path

CSS_NAME = "dpfda-a11y.css"
CSS = """/* Written by _ext/a11y_fixes.py: links readable on every box background (WCAG AA). */
html[data-theme="light"] {
  --pst-color-link: #1260d6;
  --pst-color-link-hover: #0a4ba8;
}
"""

def _quiet_icon(tag: str) -> str:
    """An icon tag without its title, hidden from assistive technology."""
    tag = re.sub(r'\s*title="[^"]*"', "", tag)
    return tag if "aria-hidden" in tag else tag[:-1] + ' aria-hidden="true">'


REPLACEMENTS = [
    (re.compile(r'<summary aria-label="Toggle hidden content">'), "<summary>"),
    (re.compile(r'(<button class="btn search-button-field[^"]*"[^>]*?) aria-label="Search"'), r"\1"),
    (re.compile(r'<i class="theme-switch fa-solid [^>]*>'), lambda m: _quiet_icon(m.group(0))),
    (re.compile(r'<div role="list" class="citation-list">'), '<div class="citation-list">'),
    (re.compile(r'(<div class="citation" id="[^"]*") role="doc-biblioentry"'), r"\1"),
]


def fix_html(text: str) -> str:
    """The page with the fixes above applied."""
    for pattern, replacement in REPLACEMENTS:
        text = pattern.sub(replacement, text)
    return text


def fix_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = fix_html(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")
    static = out / "_static"
    static.mkdir(exist_ok=True)
    (static / CSS_NAME).write_text(CSS, encoding="utf-8")


def setup(app):
    app.add_css_file(CSS_NAME)
    app.connect("build-finished", fix_pages)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
