"""The autograder of the book's assignments: an otter-grader plugin that keeps submitted code out.

It keeps the submission's code out of the grading process.

otter-grader 7 grades a notebook by executing it in a Jupyter kernel, running the tests there,
pickling the results in that kernel and unpickling them in the autograder's process; it also reads
a log (``.OTTER_LOG``) from the submission's folder with dill. Code of the submission therefore
runs beside the tests it is graded by, and can reach the grading process through those pickles.
:class:`Plugin` uses otter's plugin events so that neither happens:

``before_grading`` (in the autograder's process, before anything of the submission has run)
    reads the assignment's key, a Python file of the autograder zip named in the plugin's
    configuration (``{"dpfda_book.teaching.grader.Plugin": {"key": "NAME.py"}}`` in
    ``otter_config.json``), and deletes it from disk; reads the code cells of the submitted
    notebook (as JSON); and empties the submission's folder of everything but the notebook and
    otter's tests, so no file of the submission (a ``.OTTER_LOG``, a module shadowing one of the
    kernel's) is read or imported by otter afterwards.
``before_execution``
    hands otter an empty notebook: otter's kernel runs its own code only (its public tests, which
    fail there and carry no points), and the results it pickles are otter's own.
``after_grading``
    runs the notebook's cells and the key's probes in a fresh child process
    (:func:`dpfda_book.teaching.sandbox.run_probes`), which returns plain JSON; judges each answer here,
    in the autograder's process, with the key's references (:mod:`dpfda_book.teaching.judging`), having
    first imported what otter's process imports afterwards (:func:`preload`); and replaces otter's
    results with these: for each question a public check of the answer's form
    (no points) and the graded check, with fixed messages. Nothing the submission printed or
    raised, and nothing of the key, reaches ``results.json``.

The requests (settings, seeds, random points) are drawn afresh at every grading from the
operating system's entropy. :func:`grade` runs the same steps without otter.
"""

from __future__ import annotations

import os
import shutil
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pandas as pd
from otter.test_files.abstract_test import TestCase, TestCaseResult, TestFile  # type: ignore[import-untyped]

from .sandbox import TIMEOUT, ProbeRun, run_probes

__all__ = ["GRADED_OUTSIDE", "LETTER_PROBE", "Key", "Outcome", "Plugin", "Question", "function_probe", "grade",
           "letter_question", "load_key", "notebook_cells", "preload", "result_files", "simulation_probe"]

#: What results.json says about how the submission was graded (the "output" of the results).
GRADED_OUTSIDE = ("Graded outside the notebook's kernel: your notebook's code cells were run in a fresh "
                  "process, your answers were read from it as plain numbers and judged there against "
                  "values it does not see. The public checks carry no points.")


@dataclass(frozen=True)
class Question:
    """One automatically graded question of an assignment's key."""

    points: float
    probe: str
    """Source of ``probe(ns, request)``, run in the child after the notebook: reads the answer from
    the notebook's namespace ``ns`` and returns ``{"form": bool, "value": <JSON>}``"""
    request: Callable[[np.random.Generator], Any]
    """Draws this grading's request (JSON), with its settings, seeds and points."""
    judge: Callable[[Any, Any, np.random.Generator], bool]
    """(request, value, rng) -> whether the answer passes; runs in the grading process"""
    form: str
    """What the public check of the answer's form tests (shown to the student)"""
    failure: str
    """What the graded check tests (shown when it fails)"""


@dataclass(frozen=True)
class Key:
    """An assignment's key: its name and its automatically graded questions, in the order probed."""

    assignment: str
    questions: dict[str, Question]


#: A multiple-choice question's probe, which reads the letter ``q3_answer`` names if it is one of a–d.
LETTER_PROBE = '''
def probe(ns, request):
    answer = ns.get("q3_answer")
    ok = isinstance(answer, str) and answer in ("a", "b", "c", "d")
    return {"form": ok, "value": answer if ok else None}
'''


def letter_question(answer: str, points: float = 1) -> Question:
    """A multiple-choice question read from ``q3_answer``, passed by the letter ``answer`` only."""
    if answer not in ("a", "b", "c", "d"):
        raise ValueError(f"answer must be one of a, b, c, d, got {answer!r}")
    return Question(points, LETTER_PROBE, lambda rng: None, lambda request, value, rng: value == answer,
                    form='q3_answer must be one of "a", "b", "c", "d".', failure="Not the right letter.")


def simulation_probe(name: str, call: str, imports: str = "import numpy as np") -> str:
    """The probe of a simulation question: the function ``name`` called at each setting with its seed.

    ``call`` is the body of ``call(setting, seed)`` (its own indentation removed), which returns the
    function's value as a float or None; the probe calls it at every setting of the request, then at
    the first again with the same seed, and returns ``{"values": [...], "again": ...}``.
    """
    return ("\ndef probe(ns, request):\n" + textwrap.indent(imports.strip(), "    ")
            + f'\n    f = ns.get("{name}")\n    if not callable(f):\n        return {{"form": False, "value": None}}\n'
            + "\n    def call(setting, seed):\n" + textwrap.indent(textwrap.dedent(call).strip(), "        ")
            + '\n\n    values = [call(s, seed) for s, seed in zip(request["settings"], request["seeds"])]\n'
            + '    again = call(request["settings"][0], request["seeds"][0])\n'
            + '    return {"form": True, "value": {"values": values, "again": again}}\n')


def function_probe(name: str, args: str, value: str) -> str:
    """The probe of an exact function ``name``: for each ``args`` of the request, ``value`` (None if it raises)."""
    return (f'\ndef probe(ns, request):\n    f = ns.get("{name}")\n    if not callable(f):\n'
            f'        return {{"form": False, "value": None}}\n    values = []\n    for {args} in request:\n'
            "        try:\n" + textwrap.indent(textwrap.dedent(value).strip(), "            ")
            + "\n        except Exception:\n            values.append(None)\n"
            + '    return {"form": True, "value": values}\n')


@dataclass(frozen=True)
class Outcome:
    """A question's result: the form check, the graded check, and whether the child answered it."""

    form: bool
    passed: bool
    answered: bool


def load_key(path: Path, *, delete: bool = False) -> Key:
    """The :class:`Key` named ``KEY`` in the Python file ``path``.

    The file is compiled in memory (no bytecode file is written); with ``delete`` it is removed
    from disk once read.
    """
    source = Path(path).read_text(encoding="utf-8")
    if delete:
        Path(path).unlink()
    module = types.ModuleType(f"_assignment_key_{Path(path).stem}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    key = module.__dict__.get("KEY")
    if not isinstance(key, Key):
        raise TypeError(f"{path} defines no KEY of type dpfda_book.teaching.grader.Key")
    return key


def notebook_cells(path: Path) -> list[str]:
    """The sources of the code cells of the notebook at ``path`` (JSON only); [] if it is unreadable."""
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception:  # a submission may be any file
        return []
    return [str(cell.get("source", "")) for cell in nb.get("cells", []) if cell.get("cell_type") == "code"]


def grade(cells: list[str], key: Key, rng: np.random.Generator | None = None, *,
          timeout: float = TIMEOUT) -> tuple[dict[str, Outcome], ProbeRun]:
    """Grade the code cells of a notebook against ``key``: one child runs them and every probe."""
    rng = np.random.default_rng() if rng is None else rng
    requests = {name: q.request(rng) for name, q in key.questions.items()}
    run = run_probes(cells, {name: q.probe for name, q in key.questions.items()}, requests, timeout=timeout)
    outcomes = {}
    for name, question in key.questions.items():
        answer = run.answers.get(name)
        answered = isinstance(answer, dict)
        form = isinstance(answer, dict) and answer.get("form") is True
        try:
            passed = isinstance(answer, dict) and bool(question.judge(requests[name], answer.get("value"), rng))
        except Exception:  # a malformed answer fails its question, nothing more
            passed = False
        outcomes[name] = Outcome(form, passed, answered)
    return outcomes, run


class _Result(TestFile):
    """A question's result in otter's terms (built here, never read from a file or run)."""

    @classmethod
    def from_file(cls, path: str) -> _Result:
        raise NotImplementedError("built by dpfda_book.teaching.grader only")

    @classmethod
    def from_metadata(cls, s: Any, path: str) -> _Result:
        raise NotImplementedError("built by dpfda_book.teaching.grader only")

    def run(self, global_environment: dict[str, Any]) -> None:
        raise NotImplementedError("built by dpfda_book.teaching.grader only")


def result_files(key: Key, outcomes: dict[str, Outcome]) -> dict[str, Any]:
    """otter test files for ``outcomes``, with the key's fixed messages.

    Per question: a public check of the answer's form (0 points) and the graded check (the
    question's points, hidden).
    """
    files = {}
    for name in sorted(key.questions):
        question, outcome = key.questions[name], outcomes[name]
        form = TestCase(name=f"{name} (form)", body="", hidden=False, points=0, success_message=None,
                        failure_message=question.form)
        graded = TestCase(name=f"{name} (graded)", body="", hidden=True, points=question.points,
                          success_message=None, failure_message=question.failure)
        result = _Result(name, name, [form, graded], all_or_nothing=False)
        result.test_case_results = [
            TestCaseResult(test_case=form, message=None if outcome.form else "failed", passed=outcome.form),
            TestCaseResult(test_case=graded, message=None if outcome.passed else "failed", passed=outcome.passed),
        ]
        files[name] = result
    return files


def preload() -> None:
    """Import now what otter's process imports after grading (its summary table's formatting).

    The child runs with the grader's user and could change files on disk; a module the grading
    process first imports after the child has run would run that code. After :func:`preload`,
    otter 7 imports nothing new once grading is done (``tests/test_assignments.py`` checks it).
    """
    pd.DataFrame({"name": ["q1"], "score": [1.0], "max_score": [1.0]}).to_string()


def _empty_submission_folder(notebook: Path) -> None:
    """Remove every file of the submission's folder but the notebook and otter's ``tests``."""
    folder = notebook.parent
    for entry in folder.iterdir():
        if entry.name in (notebook.name, "tests"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    (folder / "__init__.py").touch()


class Plugin:
    """otter-grader plugin (listed in ``otter_config.json``; see the module's docstring).

    otter instantiates it by name with the submission's path, its metadata and this plugin's
    configuration, and calls its events by name.
    """

    def __init__(self, submission_path: str, submission_metadata: dict[str, Any],
                 plugin_config: dict[str, Any]) -> None:
        self.submission_path = submission_path
        self.submission_metadata = submission_metadata
        self.plugin_config = plugin_config or {}
        self.key: Key | None = None
        self.cells: list[str] = []
        self.run: ProbeRun | None = None

    def before_grading(self, config: Any) -> None:
        """Read and delete the key, read the notebook's cells, empty the submission's folder."""
        source = Path(os.path.abspath(config.autograder_dir)) / "source"
        name = self.plugin_config.get("key")
        if not isinstance(name, str) or "/" in name or not name.endswith(".py"):
            raise ValueError(f"the plugin's configuration must name the key file, got {self.plugin_config!r}")
        self.key = load_key(source / name, delete=True)
        if config.assignment_name and self.key.assignment != config.assignment_name:
            raise ValueError(f"key {name} is for {self.key.assignment!r}, not {config.assignment_name!r}")
        notebook = Path(self.submission_path)
        self.cells = notebook_cells(notebook)
        _empty_submission_folder(notebook)

    def before_execution(self, submission: Any) -> Any:
        """An empty notebook in place of the submission: otter's kernel runs none of its code."""
        return nbformat.v4.new_notebook(metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"}})

    def after_grading(self, results: Any) -> None:
        """Grade the notebook in a child process and put those results in place of otter's."""
        if self.key is None:
            raise RuntimeError("before_grading did not run: no key")
        timeout = float(self.plugin_config.get("timeout", TIMEOUT))
        preload()
        outcomes, self.run = grade(self.cells, self.key, timeout=timeout)
        results.clear_results()
        results.results = result_files(self.key, outcomes)
        results.set_output(GRADED_OUTSIDE)
        results.notebook = None
