"""The whole book as one PDF (``make pdf``, issue #11 item 5).

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
