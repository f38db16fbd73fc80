"""_ext/alt_text.py: every figure's alt text comes from its caption, never its file name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("alt_text", ROOT / "_ext" / "alt_text.py")
alt_text = importlib.util.module_from_spec(spec)
spec.loader.exec_module(alt_text)


def test_tex_becomes_readable_text():
    assert alt_text.tex_to_text(r"\sigma_0 = 0") == "σ_0 = 0"
    assert alt_text.tex_to_text(r"\mathcal H_4") == "H_4"
    assert alt_text.tex_to_text(r"\mu\le 1") == "μ≤ 1"
    assert alt_text.tex_to_text(r"\bar f") == "f\u0304"
    assert alt_text.tex_to_text(r"\frac{2B'}{n\mu}") == "(2B')/(nμ)"


def _doc(*children):
    doc = nodes.document(None, None)
    doc += list(children)
    return doc


def test_figure_gets_its_caption_and_a_bare_image_the_text_before_it():
    image = nodes.image(uri="_images/abc123.png", alt="_images/abc123.png")
    caption = nodes.caption("", "", nodes.Text("Error ratio against "), nodes.math("", r"n"),
                            nodes.Text(", one panel per "), nodes.math("", r"\sigma_0"), nodes.Text("."))
    figure = nodes.figure("", image, caption)
    lone = nodes.image(uri="_images/def456.png")
    doc = _doc(figure, nodes.paragraph("", "The data and the public facts."), lone)
    alt_text.add_alt_text(None, doc, "x")
    assert image["alt"] == "Figure: Error ratio against n, one panel per σ_0."
    assert lone["alt"] == "A plot under the text: The data and the public facts."


def test_an_author_alt_text_is_kept():
    image = nodes.image(uri="_images/a.png", alt="Two pipelines as block diagrams")
    doc = _doc(nodes.figure("", image, nodes.caption("", "The two pipelines.")))
    alt_text.add_alt_text(None, doc, "x")
    assert image["alt"] == "Two pipelines as block diagrams"


# --- _ext/a11y_fixes.py: the theme's and extensions' markup that axe-core flags -----------------
spec2 = importlib.util.spec_from_file_location("a11y_fixes", ROOT / "_ext" / "a11y_fixes.py")
a11y = importlib.util.module_from_spec(spec2)
spec2.loader.exec_module(a11y)


def test_accessible_names_show_the_visible_text():
    page = ('<details class="hide above-input"><summary aria-label="Toggle hidden content">'
            '<span class="collapsed">Show code cell source</span></summary></details>'
            '<button class="btn search-button-field search-button__button pst-js-only" title="Search" '
            'aria-label="Search" data-bs-placement="bottom"><span>Search</span><kbd>Ctrl</kbd>+<kbd>K</kbd></button>'
            '<button class="btn btn-sm nav-link pst-navbar-icon theme-switch-button pst-js-only" '
            'aria-label="Color mode"><i class="theme-switch fa-solid fa-sun fa-lg" data-mode="light" '
            'title="Light"></i></button>'
            '<div role="list" class="citation-list"><div class="citation" id="id9" role="doc-biblioentry">'
            '<span class="label">[A 2020]</span></div></div>')
    fixed = a11y.fix_html(page)
    assert "Toggle hidden content" not in fixed and "<summary><span" in fixed
    assert 'aria-label="Search"' not in fixed and 'title="Search"' in fixed
    assert 'aria-label="Color mode"' in fixed
    assert 'data-mode="light" aria-hidden="true"></i>' in fixed and 'title="Light"' not in fixed
    assert 'role="list"' not in fixed and "doc-biblioentry" not in fixed and 'id="id9"' in fixed
    assert a11y.fix_html(fixed) == fixed  # idempotent
