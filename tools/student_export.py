"""What the student edition is built from: its configuration and the solution-free chapters.

The Sphinx side of the student edition (hiding gated solutions, the download button, the
``instructor`` tag) is the extension ``_ext/student_edition.py``; this script is run by
``make student``::

    python tools/student_export.py _config.yml _build/_config_student.yml --repository URL

1. It copies ``_config.yml`` and sets ``hide_solutions: true``, adds "(student edition)"
   to the title, leaves out the page sources (they would hand out the notebooks, solutions
   included), points the repository and Binder buttons and the footer's licence link at the
   solution-free repository of item 3 (``--repository URL``; without it, no such buttons),
   points the execution cache at the main build's cache (so notebooks are
   not executed twice), and makes paths that Jupyter Book resolves against the
   configuration file absolute (``write_student_config``).

2. The solution-free notebooks (``solution_free``, ``export_notebooks``): every chapter of
   ``_toc.yml`` as a notebook with its ``{solution}`` blocks and gated solutions (prose and code
   cells) removed and no outputs, written to ``_build/student_notebooks/``
   (``notebooks/`` there, with ``requirements.txt``, ``runtime.txt`` and a zip of them all) and
   served by the student edition at ``notebooks/NAME.ipynb`` (``html_extra_path``).
   ``python tools/student_export.py --notebooks _toc.yml OUTPUT_DIR`` writes the notebooks alone.

3. The same chapters as a git repository for Binder (``export_repository``), written to
   ``_build/student_repository/``, which an instructor pushes to a public repository; the
   book's own repository holds the solutions and the assignments' master notebooks and is
   never linked from the student edition.
"""

from __future__ import annotations

import re
import shutil
import sys
import zipfile
from pathlib import Path

_FENCE = re.compile(r"^\s*(`{3,}|:{3,})\s*\{(solution|solution-start|solution-end)\}")


def _closing(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing the directive opened at ``start`` with ``fence`` (or the last)."""
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            return i
    return len(lines) - 1


def solution_free(nb):
    """A copy of notebook ``nb`` without solutions: ``{solution}`` blocks, and everything from a
    ``{solution-start}`` to its ``{solution-end}`` (across cells), removed, and the cells tagged
    ``instructor-only``; outputs cleared."""
    import copy

    out = copy.deepcopy(nb)
    cells, in_gated = [], False
    for cell in out.cells:
        if "instructor-only" in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.cell_type != "markdown":
            if not in_gated:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
                cells.append(cell)
            continue
        lines, kept, i = cell.source.splitlines(), [], 0
        while i < len(lines):
            match = _FENCE.match(lines[i])
            if match is None:
                if not in_gated:
                    kept.append(lines[i])
                i += 1
                continue
            end = _closing(lines, i, match.group(1))
            kind = match.group(2)
            if kind == "solution-start":
                in_gated = True
            elif kind == "solution-end":
                in_gated = False
            i = end + 1
        text = "\n".join(kept).strip()
        if text:
            cell.source = text
            cells.append(cell)
    out.cells = cells
    return out


def _toc_files(toc: Path) -> list[Path]:
    import yaml

    def walk(entry):
        if isinstance(entry, dict):
            for key, value in entry.items():
                if key in ("file", "root") and isinstance(value, str):
                    yield value
                else:
                    yield from walk(value)
        elif isinstance(entry, list):
            for item in entry:
                yield from walk(item)

    root = toc.resolve().parent
    return [root / f"{name}.ipynb" for name in walk(yaml.safe_load(toc.read_text(encoding="utf-8")))
            if (root / f"{name}.ipynb").is_file()]


def export_notebooks(toc: Path, folder: Path) -> list[Path]:
    """Write every chapter of ``toc`` without solutions to ``folder/notebooks/``, with the files
    that run them (runtime.txt, and requirements.txt with dpfda's wheel for ``-e .``) and a zip of it all."""
    import nbformat

    notebooks = folder / "notebooks"
    shutil.rmtree(notebooks, ignore_errors=True)
    notebooks.mkdir(parents=True)
    written = []
    for src in _toc_files(toc):
        nb = solution_free(nbformat.read(src, as_version=4))
        target = notebooks / src.name
        nbformat.write(nb, target)
        written.append(target)
    root = toc.resolve().parent
    if (root / "runtime.txt").is_file():
        shutil.copyfile(root / "runtime.txt", notebooks / "runtime.txt")
    if (root / "requirements.txt").is_file():
        # The book installs dpfda from its sources (``-e .``), which this folder does not hold:
        # the wheel of ``make assignments`` goes beside the notebooks instead.
        wheels = sorted((root / "_build" / "assignments" / "wheel").glob("dpfda-*.whl"))
        lines = []
        for line in (root / "requirements.txt").read_text(encoding="utf-8").splitlines():
            match = re.match(r"^-e \.(\[[^\]]*\])?", line)
            if match and wheels:
                shutil.copyfile(wheels[-1], notebooks / wheels[-1].name)
                line = f"./{wheels[-1].name}{match.group(1) or ''}"
            elif match:
                raise FileNotFoundError("no dpfda wheel in _build/assignments/wheel: run `make assignments`")
            lines.append(line)
        (notebooks / "requirements.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with zipfile.ZipFile(notebooks / "student-notebooks.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(notebooks.iterdir()):
            if path.suffix != ".zip":
                z.write(path, path.name)
    return written


#: The MIT licence's text, linked from the footer when there is no solution-free repository.
_MIT_TEXT = "https://opensource.org/license/mit"

#: Files of the repository a solution-free Binder repository also needs: the licences, and the
#: citation file the preface reads.
_REPOSITORY_FILES = ("LICENSE", "LICENSE-CC-BY-4.0.txt", "CITATION.cff")

_REPOSITORY_README = """# {title}: the notebooks without their solutions

Every chapter of the book as a notebook, its solutions left out, under `book/`, generated from
the book's sources by `make student`. Binder (or `pip install -r requirements.txt` with
Python 3.11) sets up its environment: dpfda comes as the wheel beside this file.

Licences: the text under CC BY 4.0 (LICENSE-CC-BY-4.0.txt), the code under the MIT licence
(LICENSE).
"""


def student_citation(text: str, repository: str | None) -> str:
    """The citation file of the solution-free repository: ``repository-code`` is that repository's
    address, or absent; no line of it names the book's own repository."""
    lines = []
    for line in text.splitlines():
        if line.startswith("repository-code:"):
            if repository:
                lines.append(f'repository-code: "{repository}"')
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


def export_repository(toc: Path, folder: Path, repo: Path, *, title: str = "dpfda-book",
                      repository: str | None = None) -> Path:
    """Write a git repository for Binder holding the solution-free chapters only.

    The chapters are exported to ``folder`` (:func:`export_notebooks`); ``repo`` gets every
    chapter of ``toc`` without its solutions (``book/NAME.ipynb``: the same relative paths as
    in the book's repository, so that the student edition's Binder links
    open the page's own chapter), ``requirements.txt``, ``runtime.txt`` and dpfda's wheel
    at its root (what Binder installs), the licences, the citation file (its ``repository-code``
    set to ``repository``, the address the instructor pushes it to, or left out) and a README, in
    one commit. An instructor pushes it to a public repository; the book's own repository, with
    its solutions and master notebooks, can then stay private. Needs ``git``.
    """
    import subprocess

    export_notebooks(toc, folder)
    notebooks = folder / "notebooks"
    root = toc.resolve().parent
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    for src in _toc_files(toc):
        target = repo / src.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(notebooks / src.name, target)
    for path in notebooks.iterdir():
        if path.suffix not in (".ipynb", ".zip"):
            shutil.copyfile(path, repo / path.name)
    for name in _REPOSITORY_FILES:
        if name == "CITATION.cff" and (root / name).is_file():
            (repo / name).write_text(student_citation((root / name).read_text(encoding="utf-8"), repository),
                                     encoding="utf-8")
        elif (root / name).is_file():
            shutil.copyfile(root / name, repo / name)
    (repo / "README.md").write_text(_REPOSITORY_README.format(title=title), encoding="utf-8")
    # One commit with a fixed author and date: the same sources give the same tree.
    env = {"GIT_AUTHOR_NAME": "dpfda-book", "GIT_AUTHOR_EMAIL": "dpfda-book@invalid",
           "GIT_COMMITTER_NAME": "dpfda-book", "GIT_COMMITTER_EMAIL": "dpfda-book@invalid",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
           "PATH": __import__("os").environ.get("PATH", "")}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                 ["git", "commit", "-q", "-m", "The book's chapters without their solutions"]):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    return repo


def write_student_config(source: Path, target: Path, repository: str | None = None) -> None:
    """Write the student edition's configuration ``target`` from the book's ``source``.

    ``repository``: the URL of the public repository that holds the solution-free chapters
    (:func:`export_repository`). With it the student edition's pages launch Binder, and
    link the repository and the code licence, there; without it they have no Binder button
    and no repository link. Either way nothing links to the book's own repository."""
    import yaml

    root = source.resolve().parent
    config = yaml.safe_load(source.read_text(encoding="utf-8"))
    config["title"] = f"{config.get('title', 'Book')} (student edition)"
    sphinx = config.setdefault("sphinx", {})
    sphinx_config = sphinx.setdefault("config", {})
    sphinx_config["hide_solutions"] = True
    # The page sources (_sources/*.ipynb, the download button) and a Binder session would
    # hand out the notebooks with their solutions: leave them out of this edition.
    sphinx_config["html_copy_source"] = False
    # The book's repository holds the solutions and the assignments' master notebooks: the
    # repository button, Binder and the footer's licence link go to the solution-free
    # repository instead, or are left out.
    main_url = (config.get("repository") or {}).get("url", "")
    html = config.setdefault("html", {})
    launch = config.setdefault("launch_buttons", {})
    if repository:
        config["repository"] = {"url": repository, "branch": "main", "path_to_book": ""}
        launch["binderhub_url"] = launch.get("binderhub_url") or "https://mybinder.org"
        html["use_repository_button"] = True
    else:
        launch["binderhub_url"] = ""
        html["use_repository_button"] = False
    if main_url and html.get("extra_footer"):
        licence = f"{repository}/blob/main/LICENSE" if repository else _MIT_TEXT
        html["extra_footer"] = html["extra_footer"].replace(f"{main_url}/blob/main/LICENSE", licence)
    # Every chapter as a solution-free notebook, served at notebooks/NAME.ipynb, and the
    # same chapters as a repository for Binder (pushed by the instructor).
    toc = root / "_toc.yml"
    if toc.is_file():
        exported = root / "_build" / "student_notebooks"
        export_repository(toc, exported, root / "_build" / "student_repository",
                          title=str(config.get("title", "dpfda-book")), repository=repository)
        sphinx_config["html_extra_path"] = [*sphinx_config.get("html_extra_path", []),
                                            str(exported)]
    # The preface links to the student edition; in the student edition it says so instead.
    config.setdefault("parse", {}).setdefault("myst_substitutions", {})["student_edition"] = (
        "this is the student edition"
    )
    # Jupyter Book resolves these against the configuration file's folder.
    if sphinx.get("local_extensions"):
        sphinx["local_extensions"] = {
            name: str((root / path).resolve()) for name, path in sphinx["local_extensions"].items()
        }
    execute = config.setdefault("execute", {})
    execute["cache"] = str(root / "_build" / ".jupyter_cache")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        "# Generated by tools/student_export.py from _config.yml; do not edit.\n"
        + yaml.safe_dump(config, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--notebooks":
        for path in export_notebooks(Path(sys.argv[2]), Path(sys.argv[3])):
            print(path)
        sys.exit(0)
    args = sys.argv[1:]
    repository = None
    if len(args) == 4 and args[2] == "--repository":
        repository = args[3].rstrip("/") or None
        args = args[:2]
    if len(args) != 2:
        sys.exit("usage: python tools/student_export.py _config.yml OUTPUT.yml [--repository URL]")
    write_student_config(Path(args[0]), Path(args[1]), repository)
