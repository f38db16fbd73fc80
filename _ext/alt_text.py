"""Alt text for every figure of the book, from its caption (WCAG 2.1 AA, 1.1.1).

myst-nb turns a figure a cell returns (or a ``{glue:figure}``) into an image node with no
alt text, and docutils' HTML writer then writes the image's file name as its ``alt``: a
screen reader reads "../_images/3b1f...png". This extension gives every image that has no
alt text of its own one that says what it shows:

* an image in a figure gets "Figure: " and the figure's caption (and legend), as plain
  text: math in its TeX source is turned into readable symbols (``\\mu`` → μ), roles and
  markup are gone, whitespace is collapsed;
* an image outside a figure (a plot a cell shows without a caption) gets the text of the
  paragraph or heading just before it, said to be "a plot under ...", which is what a
  sighted reader has to go on as well.

Runs on ``doctree-resolved``, after glued figures and cross-references are in place, so
the caption text holds the glued numbers and the resolved references.
"""

from __future__ import annotations

import re

from docutils import nodes

_SYMBOLS = {
    "mu": "μ", "sigma": "σ", "rho": "ρ", "lambda": "λ", "tau": "τ", "theta": "θ", "alpha": "α",
    "beta": "β", "delta": "δ", "varepsilon": "ε", "epsilon": "ε", "kappa": "κ", "phi": "φ",
    "Phi": "Φ", "Sigma": "Σ", "pi": "π", "xi": "ξ", "eta": "η", "gamma": "γ", "omega": "ω",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "times": "×", "cdot": "·", "to": "→",
    "infty": "∞", "approx": "≈", "neq": "≠", "pm": "±", "ldots": "…", "dots": "…",
    "in": "∈", "sqrt": "√", "quad": " ", "qquad": " ", "lVert": "‖", "rVert": "‖",
}


def tex_to_text(tex: str) -> str:
    """A readable plain-text version of a short TeX formula (for alt text, not typesetting)."""
    fonts = r"\\(?:mathcal|mathbf|mathrm|operatorname|boldsymbol|textrm|text|mathbb)"
    text = re.sub(fonts + r"\s*(?:\{([^{}]*)\}|([A-Za-z]))", lambda m: m.group(1) or m.group(2), tex)
    text = re.sub(r"\\(?:bar|overline)\s*\{?([A-Za-z])\}?", "\\1\u0304", text)
    text = re.sub(r"\\(?:tilde|widetilde)\s*\{?([A-Za-z])\}?", "\\1\u0303", text)
    text = re.sub(r"\\hat\s*\{?([A-Za-z])\}?", "\\1\u0302", text)
    text = re.sub(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _SYMBOLS.get(m.group(1), m.group(1)), text)
    text = text.replace("\\,", " ").replace("\\;", " ").replace("\\!", "").replace("~", " ")
    text = re.sub(r"[{}$]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def plain_text(node: nodes.Node) -> str:
    """The text of ``node`` as a reader would read it: math made readable, spaces collapsed."""
    parts: list[str] = []

    def walk(n):
        if isinstance(n, (nodes.math, nodes.math_block)):
            parts.append(tex_to_text(n.astext()))
            return
        if isinstance(n, nodes.Text):
            parts.append(n.astext())
            return
        for child in n.children:
            walk(child)

    walk(node)
    text = re.sub(r"\s+", " ", " ".join(p for p in parts if p))
    return re.sub(r"\s+([.,:;)])", r"\1", text).replace("( ", "(").strip()


def _needs_alt(image: nodes.image) -> bool:
    alt = (image.get("alt") or "").strip()
    uri = image.get("uri", "")
    return not alt or alt == uri or alt.rsplit("/", 1)[-1] == uri.rsplit("/", 1)[-1] or re.fullmatch(
        r"[\w./-]+\.(?:png|svg|jpe?g|gif)", alt) is not None


def _previous_text(node: nodes.Node) -> str:
    """The text of the nearest paragraph or title before ``node`` in document order."""
    current = node
    while current.parent is not None:
        siblings = current.parent.children
        for sibling in reversed(siblings[:siblings.index(current)]):
            found = list(sibling.findall(lambda n: isinstance(n, (nodes.paragraph, nodes.title))))
            if isinstance(sibling, (nodes.paragraph, nodes.title)):
                found = [sibling]
            if found:
                return plain_text(found[-1])
        current = current.parent
    return ""


def add_alt_text(app, doctree, docname) -> None:
    for figure in doctree.findall(nodes.figure):
        words = [plain_text(c) for c in figure.children if isinstance(c, (nodes.caption, nodes.legend))]
        text = " ".join(w for w in words if w)
        for image in figure.findall(nodes.image):
            if _needs_alt(image) and text:
                image["alt"] = f"Figure: {text}"
    for image in doctree.findall(nodes.image):
        if _needs_alt(image):
            before = _previous_text(image)
            image["alt"] = f"A plot under the text: {before[:300]}" if before else "A plot of the cell above"


def setup(app):
    app.connect("doctree-resolved", add_alt_text)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
