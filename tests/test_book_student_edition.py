"""The student edition leaves out every solution, gated ones (with code cells) included,
and keeps every exercise's Check paragraph.

Builds a two-page book in a temporary folder with this repository's `_ext/` extensions,
once as the full book and once with the configuration `make student` writes. The first page
also holds the course guide's table of reading and run times (_ext/course_times.py): both
editions fill it from what the build measured.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyter_book")
pytest.importorskip("sphinx_exercise")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")

CONFIG = """\
title: Probe
execute:
  execute_notebooks: force
  allow_errors: false
only_build_toc_files: true
sphinx:
  extra_extensions: [sphinx_exercise]
  local_extensions:
    student_edition: _ext/
    course_times: _ext/
"""
TOC = "format: jb-book\nroot: intro\nchapters:\n  - file: exercises\n"


def _write_book(folder: Path) -> None:
    shutil.copytree(ROOT / "_ext", folder / "_ext")
    (folder / "_config.yml").write_text(CONFIG)
    (folder / "_toc.yml").write_text(TOC)
    (folder / "intro.md").write_text("# Probe\n\nA page.\n\n```{course-times}\nexercises\n```\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(
            "# Exercises\n\n```{exercise}\n:label: ex-gated\n\nAdd one and one.\n\n**Check.** CHECK-KEPT\n```\n\n"
            "```{solution-start} ex-gated\n:class: dropdown\n```\n\nGATED-PROSE"
        ),
        nbformat.v4.new_code_cell("print('GATED-' + 'OUTPUT')"),
        nbformat.v4.new_markdown_cell(
            "```{solution-end}\n```\n\n```{exercise}\n:label: ex-plain\n\nName a prime.\n```\n\n"
            "```{solution} ex-plain\n:class: dropdown\n\nPLAIN-SOLUTION\n```\n\nAFTER-SOLUTIONS"
        ),
    ]
    nbformat.write(nb, folder / "exercises.ipynb")


def _build(folder: Path, *extra: str) -> None:
    result = subprocess.run(
        [str(JUPYTER_BOOK), "build", str(folder), "-W", "-n", "--keep-going", *extra],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def _texts(html: Path) -> str:
    kinds = {".html", ".ipynb", ".txt", ".js"}
    return "\n".join(p.read_text(errors="replace") for p in html.rglob("*") if p.is_file() and p.suffix in kinds)


def _assert_times_table(intro: str) -> None:
    """The course-times table: a row for the notebook, its words, reading and run time."""
    import re

    assert "Run time in the build" in intro
    row = re.search(r'<tr[^>]*>\s*<td[^>]*><p><a[^>]*href="exercises.html"[^>]*>.*?</tr>', intro, re.S)
    assert row, intro[-3000:]
    cells = re.findall(r"<td[^>]*><p>(.*?)</p></td>", row.group(0), re.S)
    words = int(cells[1])
    assert 5 <= words <= 40  # the exercise, solution and end-of-page prose, no code or output
    assert cells[2] == "1 min" and re.fullmatch(r"\d+ s", cells[3]), cells


@pytest.mark.skipif(not JUPYTER_BOOK.exists(), reason="jupyter-book not installed beside this Python")
def test_student_edition_hides_plain_and_gated_solutions(tmp_path):
    _write_book(tmp_path)

    _build(tmp_path)
    full = (tmp_path / "_build" / "html" / "exercises.html").read_text()
    for marker in ("GATED-PROSE", "GATED-OUTPUT", "PLAIN-SOLUTION", "AFTER-SOLUTIONS", "CHECK-KEPT"):
        assert marker in full
    _assert_times_table((tmp_path / "_build" / "html" / "intro.html").read_text())

    subprocess.run(
        [sys.executable, str(ROOT / "_ext" / "student_edition.py"), str(tmp_path / "_config.yml"),
         str(tmp_path / "_build" / "_config_student.yml")],
        check=True,
    )
    _build(tmp_path, "--config", str(tmp_path / "_build" / "_config_student.yml"),
           "--path-output", str(tmp_path / "_build" / "student"))
    html = tmp_path / "_build" / "student" / "_build" / "html"
    page = (html / "exercises.html").read_text()
    assert "AFTER-SOLUTIONS" in page and "ex-gated" in page and "CHECK-KEPT" in page
    _assert_times_table((html / "intro.html").read_text())
    everything = _texts(html)
    for marker in ("GATED-PROSE", "GATED-OUTPUT", "PLAIN-SOLUTION"):
        assert marker not in everything
    assert "(student edition)" in page
