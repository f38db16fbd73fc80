"""The book's notebooks read as an argument, not as listings.

Checked on the committed ``.ipynb`` files under ``book/``:

* code a reader sees: a code cell is *visible* unless a tag folds it (``hide-input``,
  ``hide-cell``: a click shows it) or removes it (``remove-input``, ``remove-cell``).
  Cells inside an exercise's solution dropdown count as visible. The whole book shows at
  most :data:`MAX_VISIBLE_PER_CHAPTER` lines of code per chapter on average (a new chapter
  brings its share, no more), no visible cell is longer than
  :data:`MAX_CELL_LINES` lines, and no visible line is longer than :data:`MAX_LINE` chars;
* one figure style: every notebook that draws calls ``plots.use_style()``, and no cell
  asks for a figure wider than the content column or for text smaller than the style's
  smallest font (``figsize=(w, h)`` with ``w > plots.TEXT_WIDTH``, ``fontsize=`` below
  ``plots.MIN_FONT_PT`` or a named size such as ``"small"``);
* notebooks are committed without outputs, with unique cell ids.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dpfda.report import plots

BOOK = Path(__file__).resolve().parents[1] / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
FOLDED = {"hide-input", "hide-cell", "remove-input", "remove-cell"}

MAX_VISIBLE_PER_CHAPTER = 85
MAX_VISIBLE_LINES = MAX_VISIBLE_PER_CHAPTER * len(NOTEBOOKS)
MAX_CELL_LINES = 30
MAX_LINE = 88


def code_cells(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            yield index, cell, "".join(cell["source"])


def visible(cell) -> bool:
    return not (set(cell.get("metadata", {}).get("tags", [])) & FOLDED)


def visible_lines(path: Path) -> int:
    return sum(len(src.splitlines()) for _, cell, src in code_cells(path) if visible(cell))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 10, NOTEBOOKS


def test_visible_code_in_the_whole_book_is_short():
    per_chapter = {p.stem: visible_lines(p) for p in NOTEBOOKS}
    total = sum(per_chapter.values())
    print(f"visible code lines: {total} {per_chapter}")
    assert total <= MAX_VISIBLE_LINES, (
        f"{total} visible code lines (at most {MAX_VISIBLE_LINES}): fold bookkeeping with "
        f"hide-input/remove-cell or move it into dpfda; per chapter: {per_chapter}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_visible_cells_are_short_with_short_lines(path):
    problems = []
    for index, cell, src in code_cells(path):
        if not visible(cell):
            continue
        lines = src.splitlines()
        if len(lines) > MAX_CELL_LINES:
            problems.append(f"cell {index} ({cell.get('id')}) has {len(lines)} lines")
        for k, line in enumerate(lines, 1):
            if len(line) > MAX_LINE:
                problems.append(f"cell {index} line {k} has {len(line)} characters: {line[:60]!r}")
    assert not problems, f"{path.name}:\n  " + "\n  ".join(problems)


FIGSIZE = re.compile(r"figsize\s*=\s*\(\s*([0-9.]+)\s*,")
FONTSIZE = re.compile(r"fontsize\s*=\s*([0-9.]+|\"[a-z-]+\"|'[a-z-]+')")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_figures_use_the_book_style(path):
    sources = [src for _, _, src in code_cells(path)]
    text = "\n".join(sources)
    draws = re.search(r"plt\.(subplots|figure)\(|plots\.(figure|panel_grid)\(", text)
    if draws:
        assert "plots.use_style()" in text, f"{path.name} draws figures without plots.use_style()"
    for width in FIGSIZE.findall(text):
        assert float(width) <= plots.TEXT_WIDTH, (
            f"{path.name}: figsize width {width} in is wider than the column ({plots.TEXT_WIDTH} in)")
    for size in FONTSIZE.findall(text):
        size = size.strip("\"'")
        ok = size.replace(".", "", 1).isdigit() and float(size) >= plots.MIN_FONT_PT
        assert ok or size in {"medium", "large", "x-large"}, (
            f"{path.name}: fontsize={size} is below the style's {plots.MIN_FONT_PT} pt")
    assert "rcParams[" not in text.replace('rcParams["axes.prop_cycle"]', ""), (
        f"{path.name} changes matplotlib's rcParams itself; the style is plots.use_style()")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs_and_with_unique_ids(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    ids = [cell.get("id") for cell in nb["cells"]]
    assert all(ids) and len(set(ids)) == len(ids), f"{path.name}: missing or repeated cell ids"
    for _, cell, _ in code_cells(path):
        assert not cell.get("outputs") and cell.get("execution_count") is None, (
            f"{path.name}: cell {cell.get('id')} is committed with outputs")


def test_the_style_is_legible_at_column_width():
    """The style's promises, which the browser test measures on the built pages."""
    plots.use_style()
    import matplotlib as mpl

    assert plots.DPI >= 150 and mpl.rcParams["figure.dpi"] == plots.DPI
    assert mpl.rcParams["figure.figsize"][0] <= plots.TEXT_WIDTH
    for key in ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize",
                "ytick.labelsize", "legend.fontsize"):
        assert float(mpl.rcParams[key]) >= plots.MIN_FONT_PT, key
    assert mpl.colors.to_rgba(mpl.rcParams["savefig.facecolor"]) == (1.0, 1.0, 1.0, 1.0)
