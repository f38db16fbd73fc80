"""tools/execute_notebooks.py fills the execution cache as myst-nb would, several notebooks at a time.

A three-page book in a temporary folder: the script executes its notebooks two at a time;
`jupyter-book build` must then take every one from the cache (no notebook executed again)
and show the outputs the script computed. A notebook whose cell fails is not cached, the
script names it and exits with status 1, and the others are cached all the same.
"""

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jupyter_book")
nbformat = pytest.importorskip("nbformat")
jupyter_cache = pytest.importorskip("jupyter_cache")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "execute_notebooks.py"
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")

CONFIG = """\
title: Probe
execute:
  execute_notebooks: cache
  timeout: 120
  allow_errors: false
only_build_toc_files: true
"""

TOC = """\
format: jb-book
root: index
chapters:
  - file: one
  - file: two
"""


def notebook(path: Path, *sources: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {path.stem}")]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def run_script(book: Path, *args: str):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=book, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture
def book(tmp_path):
    (tmp_path / "_config.yml").write_text(CONFIG)
    (tmp_path / "_toc.yml").write_text(TOC)
    notebook(tmp_path / "index.ipynb", "import os\nprint('pid-index', os.getpid())")
    notebook(tmp_path / "one.ipynb", "import os\nprint('pid-one', os.getpid())", "print(6 * 7)")
    notebook(tmp_path / "two.ipynb", "import os\nprint('pid-two', os.getpid())")
    return tmp_path


def cached(book: Path) -> dict:
    cache = jupyter_cache.get_cache(str(book / "_build" / ".jupyter_cache"))
    return {Path(r.uri).name: r for r in cache.list_cache_records()}


@pytest.mark.slow
def test_the_build_takes_every_notebook_from_the_cache(book):
    done = run_script(book, "--jobs", "2")
    assert done.returncode == 0, done.stderr
    records = cached(book)
    assert set(records) == {"index.ipynb", "one.ipynb", "two.ipynb"}
    assert all(r.data["execution_seconds"] > 0 for r in records.values())
    pids = {}
    cache = jupyter_cache.get_cache(str(book / "_build" / ".jupyter_cache"))
    for name, record in records.items():
        nb = cache.get_cache_bundle(record.pk).nb
        text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        pids[name] = int(text.split()[1])
    assert len(set(pids.values())) == 3  # one kernel a notebook
    again = run_script(book)
    assert again.returncode == 0 and "every notebook is in the execution cache" in again.stdout

    build = subprocess.run([str(JUPYTER_BOOK), "build", ".", "-W", "-n", "--keep-going"], cwd=book,
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    log = build.stdout + build.stderr
    assert log.count("Using cached notebook") == 3
    assert "Executing notebook" not in log
    html = (book / "_build" / "html" / "one.html").read_text()
    assert f"pid-one {pids['one.ipynb']}" in html and "42" in html  # the script's outputs


def test_a_failing_notebook_is_named_and_not_cached(book):
    notebook(book / "two.ipynb", "raise RuntimeError('this chapter is broken')")
    done = run_script(book, "--jobs", "2")
    assert done.returncode == 1
    assert "two.ipynb: execution FAILED" in done.stderr and "this chapter is broken" in done.stderr
    assert set(cached(book)) == {"index.ipynb", "one.ipynb"}


def test_bad_jobs_is_refused(book):
    done = run_script(book, "--jobs", "0")
    assert done.returncode == 2 and "--jobs must be at least 1" in done.stderr
