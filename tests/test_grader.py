"""dpfda_book.teaching.grader: the otter plugin's steps, on a small key (the real keys: test_assignments.py)."""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

pytest.importorskip("otter")

from dpfda_book.teaching import grader  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox's sweep reads /proc")

KEY = '''
from dpfda_book.teaching.grader import Key, Question

SECRET_ANSWER = 42

PROBE = "def probe(ns, request):\\n    x = ns.get('x')\\n    return {'form': isinstance(x, int), 'value': x}\\n"

KEY = Key("probe", {
    "q1": Question(3, PROBE, lambda rng: None, lambda request, value, rng: value == SECRET_ANSWER,
                   form="x must be an int.", failure="Not the right x."),
})
'''


def _notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


def test_load_key_deletes_the_file_and_writes_no_bytecode(tmp_path):
    path = tmp_path / "probe_key.py"
    path.write_text(KEY)
    key = grader.load_key(path, delete=True)
    assert key.assignment == "probe" and set(key.questions) == {"q1"}
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "bad_key.py").write_text("KEY = 3\n")
    with pytest.raises(TypeError, match="no KEY"):
        grader.load_key(tmp_path / "bad_key.py")


def test_grade_runs_the_notebook_in_a_child_and_judges_here(tmp_path):
    (tmp_path / "probe_key.py").write_text(KEY)
    key = grader.load_key(tmp_path / "probe_key.py")
    right = grader.notebook_cells(_notebook(tmp_path / "a.ipynb", "x = 6", "x *= 7"))
    outcomes, run = grader.grade(right, key, timeout=120)
    assert outcomes == {"q1": grader.Outcome(form=True, passed=True, answered=True)}, run
    # the child cannot see the key: it is not in its namespace, its files or its request
    peek = grader.notebook_cells(_notebook(tmp_path / "b.ipynb", "import gc\nx = next((o['SECRET_ANSWER'] for o in "
                                           "gc.get_objects() if isinstance(o, dict) and 'SECRET_ANSWER' in o), 0)"))
    assert grader.grade(peek, key, timeout=120)[0]["q1"] == grader.Outcome(form=True, passed=False, answered=True)
    assert grader.grade([], key, timeout=120)[0]["q1"] == grader.Outcome(False, False, True)


def test_the_submissions_folder_keeps_only_the_notebook_and_otters_tests(tmp_path):
    notebook = _notebook(tmp_path / "part1.ipynb", "x = 1")
    for name in (".OTTER_LOG", "numpy.py", "sitecustomize.py", "x.pyc"):
        (tmp_path / name).write_text("raise SystemExit('imported')")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "q1.py").write_text("OK_FORMAT = True")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "tests")
    grader._empty_submission_folder(notebook)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__init__.py", "part1.ipynb", "tests"]
    assert (tmp_path / "tests" / "q1.py").is_file() and (tmp_path / "__init__.py").read_text() == ""


def test_the_plugin_reads_the_key_before_and_replaces_otters_results_after(tmp_path):
    autograder = tmp_path / "autograder"
    (autograder / "source").mkdir(parents=True)
    (autograder / "submission").mkdir()
    (autograder / "source" / "probe_key.py").write_text(KEY)
    notebook = _notebook(autograder / "submission" / "probe.ipynb", "x = 42")
    plugin = grader.Plugin(str(notebook), {}, {"key": "probe_key.py"})
    plugin.before_grading(SimpleNamespace(autograder_dir=str(autograder), assignment_name="probe"))
    assert not (autograder / "source" / "probe_key.py").exists() and plugin.cells == ["x = 42"]
    empty = plugin.before_execution(nbformat.read(notebook, as_version=4))
    assert empty.cells == [] and empty.metadata.kernelspec.name == "python3"

    from otter.run.run_autograder.autograder_config import AutograderConfig
    from otter.test_files import GradingResults

    results = GradingResults([])
    plugin.after_grading(results)
    out = json.dumps(results.to_gradescope_dict(AutograderConfig({})))
    by_name = {t["name"]: t for t in json.loads(out)["tests"]}
    assert by_name["q1"]["score"] == 3 and by_name["q1"]["max_score"] == 3
    assert "SECRET_ANSWER" not in out and "42" not in out and grader.GRADED_OUTSIDE in out

    with pytest.raises(ValueError, match="name the key"):
        grader.Plugin(str(notebook), {}, {"key": "../x.py"}).before_grading(
            SimpleNamespace(autograder_dir=str(autograder), assignment_name="probe"))
    (autograder / "source" / "probe_key.py").write_text(KEY)
    with pytest.raises(ValueError, match="not 'part1'"):
        grader.Plugin(str(notebook), {}, {"key": "probe_key.py"}).before_grading(
            SimpleNamespace(autograder_dir=str(autograder), assignment_name="part1"))


def test_the_shared_letter_question_passes_its_letter_only(tmp_path):
    question = grader.letter_question("c")
    assert question.points == 1 and question.request(None) is None
    assert question.judge(None, "c", None)
    assert not question.judge(None, "b", None) and not question.judge(None, None, None)
    with pytest.raises(ValueError, match="one of a, b, c, d"):
        grader.letter_question("e")
    key = grader.Key("letters", {"q3": question})
    for answer, outcome in (('"c"', (True, True)), ('"b"', (True, False)), ('"e"', (False, False)),
                            ("3", (False, False))):
        cells = grader.notebook_cells(_notebook(tmp_path / "l.ipynb", f"q3_answer = {answer}"))
        got = grader.grade(cells, key, timeout=120)[0]["q3"]
        assert (got.form, got.passed) == outcome, answer


def test_the_probe_builders_call_the_students_function_in_the_child():
    import numpy as np

    from dpfda_book.teaching.sandbox import run_probes

    simulation = grader.simulation_probe("draw", """
x, = setting
try:
    return float(f(x, np.random.default_rng(seed)))
except Exception:
    return None
""")
    exact = grader.function_probe("double", "x, k", "values.append(float(f(x, int(k))))")
    requests = {"q2": {"settings": [[1.0], [2.0], [-1.0]], "seeds": [5, 6, 7]}, "q4": [[1.5, 2], [2.0, 3]]}
    probes = {"q2": simulation, "q4": exact}
    cells = ["import numpy as np",
             "def draw(x, rng):\n    if x < 0:\n        raise ValueError(x)\n    return x + rng.standard_normal()",
             "def double(x, k):\n    return x * k"]
    run = run_probes(cells, probes, requests, timeout=120)
    want = [1.0 + np.random.default_rng(5).standard_normal(), 2.0 + np.random.default_rng(6).standard_normal(), None]
    assert run.answers["q2"] == {"form": True, "value": {"values": want, "again": want[0]}}, run
    assert run.answers["q4"] == {"form": True, "value": [3.0, 6.0]}, run
    # a name that is not a function: the form fails, nothing is called
    run = run_probes(["draw = 3", "def double(x, k):\n    raise RuntimeError"], probes, requests, timeout=120)
    assert run.answers["q2"] == {"form": False, "value": None}
    assert run.answers["q4"] == {"form": True, "value": [None, None]}
