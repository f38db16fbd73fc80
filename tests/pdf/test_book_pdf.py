"""The whole book as one PDF (``make pdf``).

Reads ``_build/pdf/book.pdf`` with Debian's poppler-utils (``pdfinfo``, ``pdftotext``,
``pdfimages``; ``make pdf-deps``) and checks what a reader of the printed book needs: a
title page and a table of contents, every chapter (its title in the text, in the order of
``_toc.yml``), the figures embedded as images, theorem boxes titled, formulas typeset (no
raw TeX, no MathJax error), the site's navigation left out, and a PDF outline. Fails, does
not skip, when the PDF or the tools are missing. ``DPFDA_PDF`` tests another file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.pdf

ROOT = Path(__file__).resolve().parents[2]
PDF = Path(os.environ.get("DPFDA_PDF", ROOT / "_build" / "pdf" / "book.pdf")).resolve()
MIN_PAGES_PER_CHAPTER = 4


def run(*cmd: str) -> str:
    assert shutil.which(cmd[0]), f"{cmd[0]} is missing: run `make pdf-deps` (poppler-utils)"
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def chapters() -> list[tuple[str, str, int | None]]:
    """(file, title, number) of every chapter in _toc.yml's order; the title is the
    notebook's H1, the number its chapter number (None outside numbered parts)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    entries = [(toc["root"], None)]
    k = 0
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            if part.get("numbered"):
                k += 1
            entries.append((chapter["file"], k if part.get("numbered") else None))
    out = []
    for name, number in entries:
        path = ROOT / f"{name}.ipynb"
        if path.exists():
            text = "".join(json.loads(path.read_text())["cells"][0]["source"])
        else:
            text = (ROOT / f"{name}.md").read_text()
        title = re.search(r"^#\s+(.+)$", text, re.M).group(1).strip()
        out.append((name, title, number))
    return out


def plain(text: str) -> str:
    """Text as pdftotext gives it, compared loosely: no TeX, single spaces, no hyphens."""
    text = re.sub(r"\$[^$]*\$", "", text)  # titles with math: compare the words around it
    return re.sub(r"\s+", " ", text.replace("\u00ad", "")).strip()


@pytest.fixture(scope="module")
def pdf() -> Path:
    assert PDF.is_file(), f"{PDF} does not exist: run `make pdf` (after `make book`)"
    return PDF


@pytest.fixture(scope="module")
def text(pdf) -> str:
    return run("pdftotext", "-layout", str(pdf), "-")


def test_pages(pdf):
    info = run("pdfinfo", str(pdf))
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    size = re.search(r"^Page size:\s+([\d.]+) x ([\d.]+) pts", info, re.M)
    print(f"{pdf}: {pages} pages, {size.group(0)}")
    assert pages >= MIN_PAGES_PER_CHAPTER * len(chapters()), pages
    assert abs(float(size.group(1)) - 595.3) < 2 and abs(float(size.group(2)) - 841.9) < 2, (
        f"not A4: {size.group(0)}")


def contents_pages(text: str) -> list[str]:
    """The pages of the table of contents: the page that says "Contents" and the pages after
    it that are still mostly chapter titles (a long contents runs over a page)."""
    pages = text.split("\f")
    first = next(i for i, page in enumerate(pages) if "Contents" in page)
    known = [plain(t)[:25] for _, t, _ in chapters()]
    out = [pages[first]]
    for page in pages[first + 1:]:
        lines = [plain(line) for line in page.splitlines() if line.strip()]
        titles = sum(any(line.startswith(k) or k.startswith(line[:25]) for k in known)
                     for line in lines)
        if not lines or 2 * titles < len(lines):
            break
        out.append(page)
    return out


def test_title_page_and_contents(text):
    first = plain(text[:3000])
    assert "FTP versus PTF" in first, first[:300]
    assert "Contents" in first, first[:600]
    contents = plain("\f".join(contents_pages(text)))
    missing = [t for _, t, _ in chapters() if plain(t)[:25] not in contents]
    assert not missing, f"chapters missing from the table of contents: {missing}"


def test_every_chapter_in_order(text):
    """Each numbered chapter's heading ("8. Effect of ...") after the contents, in order."""
    pages = text.split("\f")
    first = next(i for i, page in enumerate(pages) if "Contents" in page)
    body = plain("\f".join(pages[first + len(contents_pages(text)):]))
    position = 0
    for name, title, number in chapters():
        key = plain(title)[:25]
        if number is None:
            assert key in body, f"{name}: title {title!r} not in the PDF's text"
            continue
        found = body.find(f"{number}. {key}", position)
        assert found >= 0, f"{name}: heading '{number}. {title}' not found after its predecessors"
        position = found + 1


def test_figures_boxes_and_math(pdf, text):
    images = run("pdfimages", "-list", str(pdf)).splitlines()[2:]
    figures = [line for line in images if line.split() and int(line.split()[3]) >= 300]
    assert len(figures) >= 20, f"only {len(figures)} figure-sized images in the PDF"
    body = plain(text)
    for box in ("Definition 1.1", "Proposition 1.1", "Theorem", "Corollary", "Exercise"):
        assert box in body, f"no {box!r} box in the PDF"
    # Raw TeX in the prose; printed code (a line with a straight quote: a Python string,
    # such as a matplotlib label) may hold TeX on purpose.
    tex = re.compile(r"\\(?:frac|begin|mathcal|mathbb|sqrt|operatorname|displaystyle)\b|\$\$")
    raw = [line.strip() for line in text.splitlines()
           if tex.search(line) and not re.search(r"[\"']", line)]
    assert not raw, f"raw TeX in the PDF's text: {raw[:10]}"
    assert "Math input error" not in text and "Undefined control sequence" not in text


def test_outline_and_no_site_navigation(pdf, text):
    data = pdf.read_bytes()
    assert b"/Outlines" in data, "the PDF has no outline (bookmarks)"
    assert "Ctrl+K" not in text and "Search this book" not in text, "site navigation printed"


# --- code on paper --------------------------------------------------------------
A4_WIDTH_PT = 595.3
RIGHT_MARGIN_PT = 16 / 25.4 * 72  # tools/book_pdf.py: @page margin 18mm 16mm 20mm 16mm


def words_with_boxes(pdf: Path) -> list[tuple[int, float, str]]:
    """(page, xMax, word) of every word, from ``pdftotext -bbox``."""
    html = run("pdftotext", "-bbox", str(pdf), "-")
    out, page = [], 0
    for line in html.splitlines():
        if "<page " in line:
            page += 1
        found = re.search(r'<word xMin="[\d.]+" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">(.*)</word>', line)
        if found:
            out.append((page, float(found.group(1)), found.group(2)))
    return out


FOLDED_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


def printed_code_lines() -> list[tuple[str, str]]:
    """(chapter, line) of every source line of every code cell the PDF prints whole: the
    cells not folded or removed on the site (folded ones are left out with a note)."""
    out = []
    for name, _, _ in chapters():
        path = ROOT / f"{name}.ipynb"
        if not path.exists():
            continue
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code" or FOLDED_TAGS & set(cell.get("metadata", {}).get("tags", [])):
                continue
            out += [(name, line) for line in "".join(cell["source"]).splitlines() if line.strip()]
    return out


def test_no_code_line_is_cut_off_at_the_margin(pdf, text):
    """Every line of every printed code cell is in the PDF's text whole (wrapped lines
    joined): a line cut off at the margin loses its tail, which pdftotext does not see.
    And every word ends inside the page's text area."""
    squeezed = re.sub(r"\s+", "", text)
    lines = printed_code_lines()
    assert len(lines) > 500, f"only {len(lines)} printed code lines found in the chapters"
    missing = [(name, line.strip()) for name, line in lines if re.sub(r"\s+", "", line) not in squeezed]
    assert not missing, f"{len(missing)} of {len(lines)} code lines not printed whole, e.g. {missing[:8]}"
    edge = A4_WIDTH_PT - RIGHT_MARGIN_PT + 2.0
    beyond = [(page, round(x), word) for page, x, word in words_with_boxes(pdf) if x > edge]
    assert not beyond, f"{len(beyond)} words run past the right margin: {beyond[:10]}"
    # The two lines the issue found cut off, whole (wrapped lines joined).
    assert "size=2_000ifQUICKelse10_000" in squeezed or "ifQUICKelse10_000" in squeezed, (
        "the Brownian-motion norm cell's line is not printed whole")


def test_no_toggles_on_paper(text):
    """Nothing on paper can be unfolded: no "Show code cell source" toggles; folded code is
    left out with a note that says so."""
    for toggle in ("Show code cell source", "Hide code cell source", "Show code cell outputs",
                   "Click to show", "Toggle hidden content"):
        assert toggle not in text, f"{toggle!r} printed"
    notes = [int(k) for k in re.findall(r"\[(\d+) lines? of code, folded in the online book", plain(text))]
    assert notes, "no note where folded code was left out"
    assert max(notes) >= 5, f"the notes do not count the folded cells' lines: {sorted(set(notes))}"
