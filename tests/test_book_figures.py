"""Every figure a chapter glues is placed on a page, and each of the paper's figures is captioned.

A chapter computes a figure, glues it with ``glue(key, fig, display=False)`` and places it
with a ``{glue:figure}`` block. A figure glued and never placed is computed on every build and
shown nowhere, which no build warning reports. This reads the notebooks' sources: which
glued values are figures is decided from the code (a name bound to the result of a function
annotated to return a matplotlib ``Figure``, such as ``plots.figure`` or ``plt.subplots``),
and every such key must be placed by a ``{glue:figure}`` (or ``{glue}``) block on some page,
or be listed in ``NOT_PLACED`` with the reason. Each of the paper's Figures 1-6 must be
placed once, with a caption that starts "**Figure N of the paper, recomputed.**".
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from matplotlib.figure import Figure

BOOK = Path(__file__).resolve().parents[1] / "book"
PAPER_FIGURES = range(1, 7)

# Figures glued on purpose without being placed: {(notebook, key): reason}. Empty today.
NOT_PLACED: dict[tuple[str, str], str] = {}

# ```{glue:figure} key / :::{glue:figure} key (also {glue} and {glue:any}), then the options
# and the caption up to the closing fence
BLOCK = re.compile(r"^(?P<fence>`{3,}|:{3,})\{glue(?::figure|:any)?\}[ \t]+(?P<key>\S+)[ \t]*\n"
                   r"(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)


@dataclass
class Chapter:
    """What one notebook glues as a figure and which glued keys its pages place."""

    name: str
    figures: set[str] = field(default_factory=set)
    unresolved: list[str] = field(default_factory=list)
    placed: dict[tuple[str, str], str] = field(default_factory=dict)  # (notebook, key) -> body


def _returns_figure(func: object) -> tuple[bool, bool]:
    """(returns a Figure, returns a tuple whose first item is a Figure), from the annotation.

    The annotation is read as written (a string under postponed evaluation, as in dpfda and
    matplotlib.pyplot, whose hints name types imported only for type checkers).
    """
    ret = getattr(func, "__annotations__", {}).get("return") if callable(func) else None
    if ret is None:
        return False, False
    if not isinstance(ret, str):
        ret = getattr(ret, "__name__", None) if ret is Figure else str(ret)
    text = str(ret).replace("matplotlib.figure.", "")
    return text == "Figure", re.match(r"tuple\[\s*Figure\s*,", text) is not None


def _modules(tree: ast.Module) -> dict[str, object]:
    """The notebook's module aliases: ``import x.y as z`` and ``from x import y``."""
    out: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = importlib.import_module(a.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                try:
                    out[a.asname or a.name] = importlib.import_module(f"{node.module}.{a.name}")
                except ImportError:
                    obj = getattr(importlib.import_module(node.module), a.name, None)
                    if obj is not None:
                        out[a.asname or a.name] = obj
    return out


def _callee(call: ast.Call, modules: dict[str, object]) -> object | None:
    f = call.func
    if isinstance(f, ast.Name):
        return modules.get(f.id)
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
        return getattr(modules[f.value.id], f.attr, None)
    return None


def _figure_names(tree: ast.Module, modules: dict[str, object]) -> set[str]:
    """Names bound anywhere in the notebook to a Figure returned by an annotated function."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        whole, first = _returns_figure(_callee(node.value, modules))
        for target in node.targets:
            if whole and isinstance(target, ast.Name):
                names.add(target.id)
            if first and isinstance(target, ast.Tuple) and isinstance(target.elts[0], ast.Name):
                names.add(target.elts[0].id)
    return names


def _loop_bindings(tree: ast.Module) -> dict[str, list[object]]:
    """Values a loop variable takes when the loop runs over a literal: ``for a, k in ((.., ..),)``."""
    out: dict[str, list[object]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.For):
            continue
        try:
            items = ast.literal_eval(node.iter)
        except ValueError:
            continue
        if isinstance(node.target, ast.Name):
            out.setdefault(node.target.id, []).extend(items)
        elif isinstance(node.target, ast.Tuple):
            for i, elt in enumerate(node.target.elts):
                if isinstance(elt, ast.Name):
                    out.setdefault(elt.id, []).extend(item[i] for item in items)
    return out


def _code(cells: list[dict]) -> str:
    lines = []
    for c in cells:
        if c["cell_type"] == "code":
            src = "".join(c["source"])
            lines += [ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def read_chapter(path: Path) -> Chapter:
    """Parse one notebook: its glued figures and the glue blocks of its markdown."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    chapter = Chapter(path.name)
    tree = ast.parse(_code(nb["cells"]))
    modules = _modules(tree)
    figures = _figure_names(tree, modules)
    loops = _loop_bindings(tree)
    closed = set()  # names passed to plt.close: figures, whether or not resolved above
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "close" and node.args and isinstance(node.args[0], ast.Name)):
            closed.add(node.args[0].id)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "glue" and len(node.args) >= 2):
            continue
        key, value = node.args[0], node.args[1]
        if not (isinstance(value, ast.Name) and (value.id in figures or value.id in closed)):
            continue
        if value.id not in figures:  # closed like a figure, but its type was not found
            chapter.unresolved.append(f"{value.id} (closed with plt.close, type unknown)")
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            chapter.figures.add(key.value)
        elif isinstance(key, ast.Name) and key.id in loops:
            chapter.figures |= {str(k) for k in loops[key.id]}
        else:
            chapter.unresolved.append(ast.unparse(key))
    for c in nb["cells"]:
        if c["cell_type"] != "markdown":
            continue
        for m in BLOCK.finditer("".join(c["source"])):
            doc, _, key = m["key"].rpartition("::")
            chapter.placed[(doc or path.name, key)] = m["body"]
    return chapter


def unplaced(chapters: list[Chapter], allowed: dict[tuple[str, str], str]) -> list[tuple[str, str]]:
    """Glued figures that no page places and that are not allowed to stay unplaced."""
    placed = {k for c in chapters for k in c.placed}
    return sorted((c.name, key) for c in chapters for key in c.figures
                  if (c.name, key) not in placed and (c.name, key) not in allowed)


def paper_captions(chapters: list[Chapter]) -> dict[int, list[tuple[str, str]]]:
    """For each figure of the paper, the (notebook, key) of every block captioned as it."""
    found: dict[int, list[tuple[str, str]]] = {k: [] for k in PAPER_FIGURES}
    for c in chapters:
        for (doc, key), body in c.placed.items():
            caption = "\n".join(ln for ln in body.splitlines() if not ln.startswith(":")).strip()
            m = re.match(r"\*\*Figure (\d) of the paper, recomputed\.\*\*", caption)
            if m and int(m[1]) in found:
                found[int(m[1])].append((doc, key))
    return found


@pytest.fixture(scope="module")
def chapters() -> list[Chapter]:
    return [read_chapter(p) for p in sorted(BOOK.glob("*.ipynb"))]


def test_the_reader_finds_the_book_figures(chapters):
    """The parser sees the figures it must see (a guard against a pattern that matches nothing)."""
    figures = {(c.name, k) for c in chapters for k in c.figures}
    assert ("sim_noise.ipynb", "noise-fig3") in figures
    assert ("design_space.ipynb", "ds-fig-rkhs") in figures  # a key bound by a loop
    assert ("release.ipynb", "rel-fig-curve") in figures  # a figure from plt.subplots
    assert ("sim_noise.ipynb", "noise-bv") not in figures  # a table
    assert len(figures) >= 35
    assert [(c.name, u) for c in chapters for u in c.unresolved] == []


def test_every_glued_figure_is_placed_on_a_page(chapters):
    assert unplaced(chapters, NOT_PLACED) == []


def test_the_figures_left_unplaced_on_purpose_are_glued_and_unplaced(chapters):
    for (doc, key), reason in NOT_PLACED.items():
        assert reason.strip(), (doc, key)
        assert any(c.name == doc and key in c.figures for c in chapters), (doc, key)
        assert (doc, key) in unplaced(chapters, {})


def test_each_figure_of_the_paper_is_captioned_once_on_its_page(chapters):
    figures = {(c.name, k) for c in chapters for k in c.figures}
    for number, where in paper_captions(chapters).items():
        assert len(where) == 1, f"Figure {number} of the paper is captioned {len(where)} times: {where}"
        assert where[0] in figures, f"Figure {number}: {where[0]} is not a figure glued by its notebook"


NOTEBOOK_GLUED_NOT_PLACED = {
    "cells": [
        {"cell_type": "code", "source": ["import matplotlib.pyplot as plt\n",
                                         "from myst_nb import glue\n",
                                         "fig, ax = plt.subplots()\n",
                                         "glue('shown', fig, display=False)\n",
                                         "glue('hidden', fig, display=False)\n",
                                         "glue('number', 3.0, display=False)\n",
                                         "plt.close(fig)\n"]},
        {"cell_type": "markdown", "source": ["```{glue:figure} shown\n", ":name: fig-shown\n", "\n",
                                             "**Figure 6 of the paper, recomputed.** Its caption.\n",
                                             "```\n", "The number is {glue:text}`number`.\n"]},
    ],
}


def test_a_figure_glued_and_never_placed_is_caught(tmp_path):
    path = tmp_path / "probe.ipynb"
    path.write_text(json.dumps(NOTEBOOK_GLUED_NOT_PLACED), encoding="utf-8")
    chapter = read_chapter(path)
    assert chapter.figures == {"shown", "hidden"}  # the number is not a figure
    assert unplaced([chapter], {}) == [("probe.ipynb", "hidden")]
    assert unplaced([chapter], {("probe.ipynb", "hidden"): "an example"}) == []
    captions = paper_captions([chapter])
    assert captions[6] == [("probe.ipynb", "shown")] and captions[5] == []
