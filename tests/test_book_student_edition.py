"""The student edition leaves out every solution, gated ones (with code cells) included,
and keeps every exercise's Check paragraph.

Builds a two-page book in a temporary folder with this repository's `_ext/` extensions, once as
the full book and once with the configuration `make student` writes (tools/student_export.py).
The first page also holds the course guide's table of reading and run times
(_ext/course_times.py): both editions fill it from what the build measured, and a chapter whose
run raised gets no time (the build fails). The student edition serves each chapter as a
solution-free notebook (its download button points there) and links to no page source or
assignment; every chapter of the real book is exported without its solutions. Its Binder
button, repository link and licence link go to the solution-free repository ``make student``
writes, and an ``{only} instructor`` block (the course guide's rubric key steps) is left out.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _support import solution_lines as _solution_lines

pytest.importorskip("jupyter_book")
pytest.importorskip("sphinx_exercise")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
STUDENT_REPO = "https://github.com/probe-owner/probe-student"

CONFIG = """\
title: Probe
repository:
  url: https://github.com/probe-owner/probe-repo
  branch: main
launch_buttons:
  binderhub_url: https://mybinder.org
html:
  use_repository_button: true
  extra_footer: |
    <p><a href="https://github.com/probe-owner/probe-repo/blob/main/LICENSE">MIT</a></p>
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
    (folder / "intro.md").write_text("# Probe\n\nA page.\n\n```{course-times}\nexercises\n```\n\n"
                                     "```{only} instructor\nRUBRIC-KEY-STEP\n```\n")
    (folder / "LICENSE").write_text("MIT licence\n")
    (folder / "CITATION.cff").write_text('cff-version: 1.2.0\ntitle: "Probe"\n'
                                         'repository-code: "https://github.com/probe-owner/probe-repo"\n')
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
        nbformat.v4.new_code_cell("print('INSTRUCTOR-' + 'CELL')", metadata={"tags": ["instructor-only"]}),
        nbformat.v4.new_code_cell("print('STUDENT-' + 'CELL')", metadata={"tags": ["student-only"]}),
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
    assert "Run time in the build" in intro
    row = re.search(r'<tr[^>]*>\s*<td[^>]*><p><a[^>]*href="exercises.html"[^>]*>.*?</tr>', intro, re.S)
    assert row, intro[-3000:]
    cells = re.findall(r"<td[^>]*><p>(.*?)</p></td>", row.group(0), re.S)
    words = int(cells[1])
    assert 5 <= words <= 40  # the exercise, solution and end-of-page prose, no code or output
    assert cells[2] == "1 min" and re.fullmatch(r"\d+ s", cells[3]), cells


@pytest.mark.skipif(not JUPYTER_BOOK.exists(), reason="jupyter-book not installed beside this Python")
@pytest.mark.slow
def test_student_edition_hides_plain_and_gated_solutions(tmp_path):
    _write_book(tmp_path)

    _build(tmp_path)
    full = (tmp_path / "_build" / "html" / "exercises.html").read_text()
    for marker in ("GATED-PROSE", "GATED-OUTPUT", "PLAIN-SOLUTION", "AFTER-SOLUTIONS", "CHECK-KEPT", "INSTRUCTOR-CELL"):
        assert marker in full
    assert "STUDENT-CELL" not in full
    _assert_times_table((tmp_path / "_build" / "html" / "intro.html").read_text())
    assert "RUBRIC-KEY-STEP" in (tmp_path / "_build" / "html" / "intro.html").read_text()
    assert "mybinder.org/v2/gh/probe-owner/probe-repo/main" in full

    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "student_export.py"), str(tmp_path / "_config.yml"),
         str(tmp_path / "_build" / "_config_student.yml"), "--repository", STUDENT_REPO],
        check=True,
    )
    _build(tmp_path, "--config", str(tmp_path / "_build" / "_config_student.yml"),
           "--path-output", str(tmp_path / "_build" / "student"))
    html = tmp_path / "_build" / "student" / "_build" / "html"
    page = (html / "exercises.html").read_text()
    assert "AFTER-SOLUTIONS" in page and "ex-gated" in page and "CHECK-KEPT" in page
    _assert_times_table((html / "intro.html").read_text())
    everything = _texts(html)
    for marker in ("GATED-PROSE", "GATED-OUTPUT", "PLAIN-SOLUTION", "RUBRIC-KEY-STEP", "INSTRUCTOR-CELL"):
        assert marker not in everything
    assert "STUDENT-CELL" in page
    assert "(student edition)" in page
    # The chapter as a solution-free notebook, served beside the pages.
    notebook = (html / "notebooks" / "exercises.ipynb").read_text()
    assert "CHECK-KEPT" in notebook and "AFTER-SOLUTIONS" in notebook and "ex-gated" in notebook
    assert "INSTRUCTOR-" not in notebook and "STUDENT-" in notebook
    assert (html / "notebooks" / "student-notebooks.zip").is_file()
    assert 'href="notebooks/exercises.ipynb"' in page  # the page's download button
    # The main edition links to the repository (solutions, master notebooks); the student edition
    # links to neither, nor to page sources.
    assert "probe-owner/probe-repo" in full
    links = [href for p in html.rglob("*.html") for href in re.findall(r'href="([^"]*)"', p.read_text())]
    assert links
    bad = [h for h in links if "probe-repo" in h or "_sources" in h or "assignments" in h
           or (h.endswith(".ipynb") and not h.startswith(("notebooks/", "https://mybinder.org/")))]
    assert not bad, bad
    # Binder, the repository button and the licence go to the solution-free repository, which
    # holds the chapter at the path the Binder link opens, without its solutions, in one commit.
    binder = [h for h in links if "mybinder.org" in h]
    assert binder and set(binder) == {"https://mybinder.org/v2/gh/probe-owner/probe-student/main"
                                      "?urlpath=tree/exercises.ipynb"}, binder
    assert f"{STUDENT_REPO}/blob/main/LICENSE" in links and STUDENT_REPO in links
    repo = tmp_path / "_build" / "student_repository"
    assert sorted(p.name for p in repo.iterdir() if p.name != ".git") == ["CITATION.cff", "LICENSE", "README.md",
                                                                        "exercises.ipynb"]
    citation = (repo / "CITATION.cff").read_text()
    assert f'repository-code: "{STUDENT_REPO}"' in citation and "probe-repo" not in citation
    assert (repo / "exercises.ipynb").read_text() == notebook
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True,
                            text=True, check=True).stdout
    assert len(log) == 1 and status == "", (log, status)


def test_student_edition_without_a_repository_links_to_none(tmp_path):
    """No solution-free repository named: no Binder button, no repository button, and the footer's
    licence link leaves the book's repository for the licence's text."""
    import yaml

    _write_book(tmp_path)
    target = tmp_path / "_build" / "_config_student.yml"
    subprocess.run([sys.executable, str(ROOT / "tools" / "student_export.py"),
                    str(tmp_path / "_config.yml"), str(target)], check=True)
    config = yaml.safe_load(target.read_text())
    assert config["launch_buttons"]["binderhub_url"] == ""
    assert config["html"]["use_repository_button"] is False
    assert "probe-repo" not in config["html"]["extra_footer"]
    assert "opensource.org/license/mit" in config["html"]["extra_footer"]


MAIN_URL = re.search(r"^  url: (\S+)", (ROOT / "_config.yml").read_text(), re.M).group(1).rstrip("/")
#: The book's repository (not the solution-free one, whose name extends it) and the autograders' files.
INSTRUCTOR_URL = re.compile(re.escape(MAIN_URL) + r"(?![-\w])")
INSTRUCTOR_FILES = ("_key.py", "hidden_checks", "question_bank", "book/assignments")


def test_the_course_guide_names_instructor_files_in_the_instructor_edition_only():
    guide = (ROOT / "book" / "course_guide.md").read_text()
    student = re.sub(r"::::\{only\} instructor\n.*?\n::::\n", "", guide, flags=re.S)
    assert student != guide
    assert not INSTRUCTOR_URL.search(student)
    assert not [name for name in INSTRUCTOR_FILES if name in student]
    assert "_key.py" in guide  # the instructor's edition does name them


def _run_cells(cells: list[str], cwd: Path) -> str:
    code = "import dpfda\n" + "\n".join(cells)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_the_preface_cites_no_repository_of_the_instructors_in_the_student_edition():
    """The cells of the preface's citation that the student edition shows print no address of the book's
    repository, even run against its own CITATION.cff (the student edition reuses the main build's outputs)."""
    nb = nbformat.read(ROOT / "book" / "preface.ipynb", as_version=4)
    cite = [c for c in nb.cells if c.cell_type == "code" and c.get("id", "").startswith("preface-cite")]
    assert len(cite) == 3
    tags = [set(c.metadata.get("tags", [])) for c in cite]
    student = _run_cells([c.source for c, t in zip(cite, tags) if "instructor-only" not in t], ROOT / "book")
    main = _run_cells([c.source for c, t in zip(cite, tags) if "student-only" not in t], ROOT / "book")
    assert "@software{dpfda_book" in student and "@misc{chen2026ftp" in student
    assert not INSTRUCTOR_URL.search(student)
    assert INSTRUCTOR_URL.search(main)  # negative control: the book's edition names its repository


def test_the_student_repositorys_citation_names_the_student_repository_or_none():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import student_export
    finally:
        sys.path.pop(0)
    cff = (ROOT / "CITATION.cff").read_text()
    assert INSTRUCTOR_URL.search(cff)
    named = student_export.student_citation(cff, STUDENT_REPO)
    assert f'repository-code: "{STUDENT_REPO}"' in named and not INSTRUCTOR_URL.search(named)
    assert "repository-code" not in student_export.student_citation(cff, None)
    import yaml

    assert yaml.safe_load(named)["version"] == yaml.safe_load(cff)["version"]


def test_every_chapter_is_exported_without_its_solutions(tmp_path):
    """export_notebooks: every chapter of _toc.yml, no solution text, every exercise and Check kept."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import student_export
    finally:
        sys.path.pop(0)
    (tmp_path / "_build" / "assignments" / "wheel").mkdir(parents=True)
    (tmp_path / "_build" / "assignments" / "wheel" / "dpfda-0-py3-none-any.whl").write_bytes(b"wheel")
    for name in ("_toc.yml", "requirements.txt", "runtime.txt"):
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "book", tmp_path / "book", ignore=shutil.ignore_patterns("assignments"))
    written = student_export.export_notebooks(tmp_path / "_toc.yml", tmp_path / "out")
    toc = (ROOT / "_toc.yml").read_text()
    chapters = [p for p in sorted((ROOT / "book").glob("*.ipynb")) if f"book/{p.stem}\n" in toc + "\n"]
    assert sorted(p.name for p in written) == sorted(p.name for p in chapters) and len(chapters) >= 20
    solutions_seen = 0
    for src in chapters:
        original = nbformat.read(src, as_version=4)
        exported = nbformat.read(tmp_path / "out" / "notebooks" / src.name, as_version=4)
        text = "\n".join(c.source for c in exported.cells)
        outside = "\n".join(c.source for c in student_export.solution_free(original).cells)
        assert outside == text
        solution = _solution_lines(original)
        solutions_seen += len(solution)
        leaked = [line for line in solution if line in text]
        assert not leaked, (src.name, leaked[:3])
        assert "{solution" not in text, src.name
        for marker in ("{exercise}", "**Check"):
            assert text.count(marker) == "\n".join(c.source for c in original.cells).count(marker), (src.name, marker)
        assert all(not c.get("outputs") for c in exported.cells if c.cell_type == "code")
        assert not INSTRUCTOR_URL.search(text) and not [n for n in INSTRUCTOR_FILES if n in text], src.name
    assert solutions_seen > 100
    folder = tmp_path / "out" / "notebooks"
    assert "./dpfda-0-py3-none-any.whl[" in (folder / "requirements.txt").read_text()
    assert "-e ." not in (folder / "requirements.txt").read_text()
    assert (folder / "runtime.txt").is_file() and (folder / "student-notebooks.zip").is_file()


@pytest.mark.skipif(not JUPYTER_BOOK.exists(), reason="jupyter-book not installed beside this Python")
def test_course_times_refuse_the_time_of_a_failed_run(tmp_path):
    """A chapter whose execution failed (allowed by allow_errors) gets no time: the -W build fails."""
    _write_book(tmp_path)
    config = tmp_path / "_config.yml"
    config.write_text(config.read_text().replace("allow_errors: false", "allow_errors: true"))
    nb = nbformat.read(tmp_path / "exercises.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('a failed run')"))
    nbformat.write(nb, tmp_path / "exercises.ipynb")
    result = subprocess.run([str(JUPYTER_BOOK), "build", str(tmp_path), "-W", "-n", "--keep-going"],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "course-times: no word count or successful execution for 'exercises'" in result.stdout + result.stderr
