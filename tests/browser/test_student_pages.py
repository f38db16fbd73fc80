"""The real student edition, as built by ``make book``: nothing in it leads to a solution.

Reads ``_build/html/student`` (the copy of ``_build/student/_build/html`` that ``make book``
makes) and ``_build/student_repository`` (the solution-free repository for Binder) and checks:

* no page, script or notebook links to the book's own repository (``repository.url`` of
  ``_config.yml``, which holds the solutions and the assignments' master notebooks), to a page
  source (``_sources/``), to an assignment's master notebook, autograder or hidden checks;
* every Binder link opens the page's own chapter from the solution-free repository, and that
  repository holds the chapter at that path;
* no page (search index included) holds a line of a solution or of the course guide's rubric
  key steps (an ``{only} instructor`` block);
* every downloadable notebook (``notebooks/NAME.ipynb`` and the zip) and every notebook of
  the repository holds no line of its chapter's solutions; the repository is one commit with
  nothing uncommitted.

Marker ``browser``: it needs the built book and runs in ``make test-browser``, after
``make book``; it fails, not skips, when the build is missing.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _support import solution_lines, text_outside_solutions  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
STUDENT = ROOT / "_build" / "html" / "student"
REPOSITORY = ROOT / "_build" / "student_repository"
MAIN_URL = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
CHAPTERS = sorted(ROOT / f"{name}.ipynb" for name in re.findall(r"file:\s*(book/\w+)", (ROOT / "_toc.yml").read_text())
                  if (ROOT / f"{name}.ipynb").is_file())


def _student_config() -> dict:
    return yaml.safe_load((ROOT / "_build" / "_config_student.yml").read_text())


def _links(page: Path) -> list[str]:
    return re.findall(r'(?:href|src)="([^"]*)"', page.read_text(errors="replace"))


@pytest.fixture(scope="module")
def pages() -> list[Path]:
    assert (STUDENT / "index.html").is_file(), f"no student edition at {STUDENT}: run `make book` first"
    found = sorted(STUDENT.rglob("*.html"))
    assert len(found) > len(CHAPTERS)
    return found


def test_no_link_leads_to_the_book_repository_or_instructor_files(pages):
    links = [(page.relative_to(STUDENT), unquote(h)) for page in pages for h in _links(page)]
    assert len(links) > 1000
    forbidden = (MAIN_URL + "/", "_sources/", "hidden_checks", "autograder", "book/assignments/")
    bad = [(str(p), h) for p, h in links if h == MAIN_URL or any(f in h for f in forbidden)]
    assert not bad, bad[:10]
    scripts = [p for p in STUDENT.rglob("*.js") if "_static" not in p.parts and "mathjax" not in p.parts]
    assert not [p for p in scripts if MAIN_URL in p.read_text(errors="replace")]


def test_no_page_or_student_file_names_the_book_repository_or_an_autograder_file(pages):
    """In the text too, not only in links: the preface's citation, the course guide, the notebooks and
    every file of the solution-free repository (its CITATION.cff included)."""
    url = re.compile(re.escape(MAIN_URL) + r"(?![-\w])")  # the book's repository, not the student one
    names = ("_key.py", "hidden_checks", "question_bank")
    texts = {str(p.relative_to(STUDENT)): p.read_text(errors="replace")
             for p in [*pages, STUDENT / "searchindex.js", *(STUDENT / "notebooks").glob("*.ipynb")]}
    files = subprocess.run(["git", "-C", str(REPOSITORY), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    texts |= {f"repository/{f}": (REPOSITORY / f).read_text(errors="replace") for f in files if not f.endswith(".whl")}
    bad = [name for name, text in texts.items() if url.search(text) or any(n in text for n in names)]
    assert not bad, bad
    # negative control: the book's own edition does print its repository in the preface's citation
    assert url.search((ROOT / "_build" / "html" / "book" / "preface.html").read_text())


def test_binder_opens_the_pages_own_chapter_without_its_solutions(pages):
    student_repo = _student_config()["repository"]["url"].rstrip("/")
    assert student_repo != MAIN_URL
    owner_repo = student_repo.removeprefix("https://github.com/")
    binder = {}
    for page in pages:
        for h in _links(page):
            if "mybinder.org" in h:
                binder.setdefault(page.relative_to(STUDENT).with_suffix("").as_posix(), set()).add(unquote(h))
    chapters = {p.relative_to(ROOT).with_suffix("").as_posix() for p in CHAPTERS}
    assert chapters <= set(binder), sorted(chapters - set(binder))
    for page, urls in binder.items():
        assert urls == {f"https://mybinder.org/v2/gh/{owner_repo}/main?urlpath=tree/{page}.ipynb"}, urls
        assert (REPOSITORY / f"{page}.ipynb").is_file(), page
    footer = (STUDENT / "book" / "gdp.html").read_text()
    assert f'href="{student_repo}/blob/main/LICENSE"' in footer


def test_no_page_holds_a_solution_or_a_rubric_key_step(pages):
    text = "\n".join(p.read_text(errors="replace") for p in [*pages, STUDENT / "searchindex.js"])
    guide = (ROOT / "book" / "course_guide.md").read_text()
    blocks = re.findall(r"::::\{only\} instructor\n(.*?)\n::::\n", guide, re.S)
    assert blocks, "the course guide's rubric key steps are not in an {only} instructor block"
    steps = [row.split("|")[2].strip() for block in blocks for row in block.splitlines() if row.startswith("| {ref}")]
    assert len(steps) >= 5
    # The longest stretch of each step without math, quotes or brackets, as a page shows it.
    probes = [max(re.split(r"\$[^$]*\$|[()'\";:]", step), key=len).strip(" ,") for step in steps]
    assert all(len(p) > 15 for p in probes), probes
    main_guide = (ROOT / "_build" / "html" / "book" / "course_guide.html").read_text()
    assert all(p in main_guide for p in probes), probes  # the probes find the steps where they are
    assert not [p for p in probes if p in text], probes
    # A solution's line that some chapter also says outside its solutions is no leak.
    notebooks = [nbformat.read(src, as_version=4) for src in CHAPTERS]
    outside = "\n".join(text_outside_solutions(nb) for nb in notebooks)
    leaked = [(src.name, line) for src, nb in zip(CHAPTERS, notebooks) for line in solution_lines(nb)
              if line in text and line not in outside]
    assert not leaked, leaked[:5]


def test_downloadable_and_binder_notebooks_hold_no_solution():
    zipped = zipfile.ZipFile(STUDENT / "notebooks" / "student-notebooks.zip")
    checked = 0
    for src in CHAPTERS:
        solution = solution_lines(nbformat.read(src, as_version=4))
        copies = [(STUDENT / "notebooks" / src.name).read_text(), zipped.read(src.name).decode(),
                  (REPOSITORY / src.relative_to(ROOT)).read_text()]
        for copy in copies:
            assert "{solution" not in copy, src.name
            assert not [line for line in solution if line in copy], src.name
        checked += len(solution)
    assert checked > 100
    files = subprocess.run(["git", "-C", str(REPOSITORY), "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    assert not [f for f in files if "assignments" in f or "hidden" in f or f.startswith("dpfda/")]
    log = subprocess.run(["git", "-C", str(REPOSITORY), "log", "--format=%s"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    status = subprocess.run(["git", "-C", str(REPOSITORY), "status", "--porcelain"], capture_output=True,
                            text=True, check=True).stdout
    assert len(log) == 1 and not status
