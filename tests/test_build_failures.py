"""A failed chapter never reaches a page: `make book`, `make student` and a rebuild all fail.

A three-page book in a temporary folder, built by the Makefile's own `book` and `student`
recipes (the repository's Makefile, _ext/ and tools/ linked into the folder; ``BUILD_DEPS=`` leaves
out the virtual environment, MathJax, Thebe and the assignments, which a three-page book
does not need), with the execution settings of the book's _config.yml.  A first build
succeeds, with a cell that is meant to raise (tagged ``raises-exception``) on a page; then
a chapter is made to fail, and the book build, the student build and a second book build
must each fail, and no HTML page anywhere under _build may show the failure's traceback.
tools/check_pages.py, which each build runs on its pages, is tested on its own as well.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_execute_notebooks import TOC  # index, one, two

pytest.importorskip("jupyter_book")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("bs4")

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MARK = "this chapter is broken"


def notebook(path: Path, *cells) -> None:
    """A notebook of a title and code cells; a cell is its source, or (source, tags)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}")]
    for cell in cells:
        source, tags = (cell, []) if isinstance(cell, str) else cell
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags} if tags else {}))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def book(tmp_path):
    real = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config = {"title": "Probe", "execute": real["execute"], "only_build_toc_files": True,
              "exclude_patterns": ["_ext", "tools", "_build", "**/.*"],
              "sphinx": {"local_extensions": {"student_edition": "_ext/"}}}
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "_toc.yml").write_text(TOC)
    (tmp_path / "Makefile").symlink_to(ROOT / "Makefile")
    (tmp_path / "_ext").symlink_to(ROOT / "_ext")
    (tmp_path / "tools").symlink_to(ROOT / "tools")
    notebook(tmp_path / "index.ipynb", "print('index')",
             ("raise ValueError('meant to raise')", ["raises-exception"]))
    notebook(tmp_path / "one.ipynb", "print(6 * 7)")
    notebook(tmp_path / "two.ipynb", "print('two is fine')")
    return tmp_path


def make(book: Path, target: str):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(["make", "--no-print-directory", "BUILD_DEPS=", f"BIN={BIN}", target], cwd=book,
                          env=env, capture_output=True, text=True, timeout=900)


def pages_showing(book: Path, text: str) -> list[Path]:
    return [p for p in (book / "_build").rglob("*.html") if text in p.read_text(errors="replace")]


@pytest.mark.slow
def test_a_failing_chapter_fails_every_build_and_reaches_no_page(book):
    first = make(book, "book")
    assert first.returncode == 0, first.stdout + first.stderr
    student = book / "_build" / "html" / "student" / "two.html"
    assert "two is fine" in (book / "_build" / "html" / "two.html").read_text() and student.exists()
    assert "meant to raise" in (book / "_build" / "html" / "index.html").read_text()  # allowed: tagged

    notebook(book / "two.ipynb", f"raise RuntimeError({MARK!r})")
    for target in ("book", "student", "book"):
        run = make(book, target)
        log = run.stdout + run.stderr
        assert run.returncode != 0, f"make {target} passed with a failing chapter:\n{log}"
        assert "two.ipynb" in log and MARK in log, log  # it says which chapter and why
        assert pages_showing(book, MARK) == [], f"make {target} left the traceback on a page"
    assert {p.name for p in pages_showing(book, "Traceback")} == {"index.html"}  # the tagged cell only


@pytest.mark.slow
def test_the_sphinx_build_alone_raises_on_a_failing_notebook_and_writes_no_page(book):
    """Without the pre-execution (as the student build once ran): myst-nb executes the
    notebook itself, and execute.raise_on_error stops the build before any page is written."""
    notebook(book / "two.ipynb", f"raise RuntimeError({MARK!r})")
    run = subprocess.run([str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"], cwd=book,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and MARK in run.stdout + run.stderr
    assert pages_showing(book, MARK) == []
    again = subprocess.run([str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"], cwd=book,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode != 0 and pages_showing(book, MARK) == []  # nothing of the failure kept


CELL = ('<div class="cell {tags}docutils container"><div class="cell_output docutils container">'
        '<div class="output {kind} highlight-ipythontb notranslate"><div class="highlight"><pre>'
        '{text}</pre></div></div></div></div>')


def _page(tmp_path, name, body):
    path = tmp_path / "html" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"<html><body>{body}</body></html>")
    return path


def test_check_pages_fails_on_an_error_output_and_removes_the_page(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import check_pages
    finally:
        sys.path.pop(0)
    tb = "Traceback (most recent call last):\n  File ...\nZeroDivisionError: division by zero"
    ok = _page(tmp_path, "ok.html", CELL.format(tags="tag_raises-exception ", kind="traceback", text=tb)
               + "<p>Traceback (most recent call last) in prose is not an output</p>")
    assert check_pages.main([str(tmp_path / "html")]) == 0 and ok.exists()
    bad = _page(tmp_path, "bad.html", CELL.format(tags="", kind="traceback", text=tb))
    printed = _page(tmp_path, "printed.html", CELL.format(tags="", kind="stream", text=tb))
    assert check_pages.page_errors(bad.read_text()) == ["ZeroDivisionError: division by zero"]
    assert check_pages.main([str(tmp_path / "html")]) == 1
    assert ok.exists() and not bad.exists() and not printed.exists()
    assert check_pages.main([str(tmp_path / "empty")]) == 2
