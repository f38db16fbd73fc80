"""The student edition leaves out every solution, gated ones (with code cells) included.

Builds a two-page book in a temporary folder with this repository's `_ext/` extension,
once as the full book and once with the configuration `make student` writes.
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
"""
TOC = "format: jb-book\nroot: intro\nchapters:\n  - file: exercises\n"


def _write_book(folder: Path) -> None:
    shutil.copytree(ROOT / "_ext", folder / "_ext")
    (folder / "_config.yml").write_text(CONFIG)
    (folder / "_toc.yml").write_text(TOC)
    (folder / "intro.md").write_text("# Probe\n\nA page.\n")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(
            "# Exercises\n\n```{exercise}\n:label: ex-gated\n\nAdd one and one.\n```\n\n"
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


@pytest.mark.skipif(not JUPYTER_BOOK.exists(), reason="jupyter-book not installed beside this Python")
def test_student_edition_hides_plain_and_gated_solutions(tmp_path):
    _write_book(tmp_path)

    _build(tmp_path)
    full = (tmp_path / "_build" / "html" / "exercises.html").read_text()
    for marker in ("GATED-PROSE", "GATED-OUTPUT", "PLAIN-SOLUTION", "AFTER-SOLUTIONS"):
        assert marker in full

    subprocess.run(
        [sys.executable, str(ROOT / "_ext" / "student_edition.py"), str(tmp_path / "_config.yml"),
         str(tmp_path / "_build" / "_config_student.yml")],
        check=True,
    )
    _build(tmp_path, "--config", str(tmp_path / "_build" / "_config_student.yml"),
           "--path-output", str(tmp_path / "_build" / "student"))
    html = tmp_path / "_build" / "student" / "_build" / "html"
    page = (html / "exercises.html").read_text()
    assert "AFTER-SOLUTIONS" in page and "ex-gated" in page
    everything = _texts(html)
    for marker in ("GATED-PROSE", "GATED-OUTPUT", "PLAIN-SOLUTION"):
        assert marker not in everything
    assert "(student edition)" in page
