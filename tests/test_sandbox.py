"""dpfda.teaching.sandbox: a submission's code runs in a child process and only JSON comes back.

Each guard is also seen failing: the daemon test runs once with the sweep disabled (the daemon
then writes its file), and the environment test sets a variable the child must not see.
"""

import os
import sys
import time
from pathlib import Path

import pytest

from dpfda.teaching import sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sweep reads /proc (Linux)")

ECHO = "def probe(ns, request):\n    return {'value': ns.get(request), 'pid': __import__('os').getpid()}\n"


def test_cells_run_in_a_child_and_a_raising_cell_does_not_stop_the_next():
    run = sandbox.run_probes(["x = 41", "raise ValueError('stop')", "x += 1", "import sys; sys.exit(3)", "y = x"],
                             {"q": ECHO, "r": ECHO}, {"q": "x", "r": "y"}, timeout=120)
    assert run.answers["q"]["value"] == 42 and run.answers["r"]["value"] == 42, run
    assert run.answers["q"]["pid"] != os.getpid()
    assert run.returncode == 0 and not run.timed_out


def test_a_probe_that_raises_gives_no_value_and_later_probes_still_run():
    bad = "def probe(ns, request):\n    raise RuntimeError('no')\n"
    run = sandbox.run_probes(["x = 1"], {"bad": bad, "q": ECHO}, {"bad": None, "q": "x"}, timeout=120)
    assert run.answers == {"bad": None, "q": {"value": 1, "pid": run.answers["q"]["pid"]}}


def test_otter_cells_are_skipped():
    assert sandbox.otter_only('# Initialize Otter\nimport otter\ngrader = otter.Notebook("part1.ipynb")')
    assert sandbox.otter_only('grader.check("q1")') and sandbox.otter_only("grader.check_all()")
    assert not sandbox.otter_only('grader.check("q1")\nx = 1') and not sandbox.otter_only("# a comment only")
    run = sandbox.run_probes(["import otter", "x = 1"], {"q": "def probe(ns, r):\n    return 'otter' in ns\n"},
                             {"q": None}, timeout=120)
    assert run.answers == {"q": False}


def test_the_child_sees_none_of_the_graders_environment(monkeypatch):
    monkeypatch.setenv("DPFDA_GRADER_SECRET", "s3cr3t")
    probe = "def probe(ns, r):\n    import os\n    return [os.environ.get('DPFDA_GRADER_SECRET'), os.getcwd()]\n"
    run = sandbox.run_probes([], {"q": probe}, {"q": None}, timeout=120)
    secret, cwd = run.answers["q"]
    assert secret is None and Path(cwd).name.startswith("grading-") and not Path(cwd).exists()


def test_a_hanging_notebook_is_stopped_at_the_limit():
    start = time.monotonic()
    run = sandbox.run_probes(["while True:\n    pass"], {"q": ECHO}, {"q": "x"}, timeout=5)
    assert run.timed_out and run.answers == {} and time.monotonic() - start < 30


def test_answers_beyond_the_size_limit_are_cut(monkeypatch):
    monkeypatch.setattr(sandbox, "MAX_OUTPUT", 1000)
    run = sandbox.run_probes([], {"big": "def probe(ns, r):\n    return 'x' * 5000\n", "q": ECHO},
                             {"big": None, "q": "x"}, timeout=120)
    assert "big" not in run.answers


def test_a_forged_line_counts_as_the_students_own_answer_only():
    """A cell may write to the answer pipe; its line is parsed as JSON, never executed."""
    forge = ("import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'{\"question\": \"q\", "
             "\"answer\": \"forged\"}\\nnot json\\n')\n"
             "    except OSError:\n        pass")
    run = sandbox.run_probes([forge], {"q": ECHO}, {"q": "x"}, timeout=120)
    assert run.answers["q"] == "forged"  # judged like any other answer of the student's


DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(4)
        open({path!r}, "w").write("rewritten after the run")
        os._exit(0)
    os._exit(0)
time.sleep(0.5)
"""


def test_no_process_of_the_submission_outlives_the_run(tmp_path, monkeypatch):
    """A daemon (double fork, new session) is re-parented to the grader and killed after the run."""
    target = tmp_path / "results.json"
    run = sandbox.run_probes([DAEMON.format(path=str(target))], {"q": ECHO}, {"q": "x"}, timeout=120)
    assert run.swept, run
    time.sleep(6)
    assert not target.exists()

    # negative control: without the sweep, the same daemon survives and writes its file
    monkeypatch.setattr(sandbox, "sweep", lambda keep: [])
    keep = sandbox._children(os.getpid())
    sandbox.run_probes([DAEMON.format(path=str(target))], {"q": ECHO}, {"q": "x"}, timeout=120)
    try:
        deadline = time.monotonic() + 20
        while not target.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert target.exists()
    finally:
        for pid in sandbox._children(os.getpid()) - keep:
            os.kill(pid, 9)
            os.waitpid(pid, 0)


def test_the_grader_is_not_dumpable_while_the_child_runs(monkeypatch):
    calls = []
    real = sandbox._prctl
    monkeypatch.setattr(sandbox, "_prctl", lambda option, value: calls.append((option, value)) or real(option, value))
    sandbox.run_probes(["x = 1"], {"q": ECHO}, {"q": "x"}, timeout=120)
    dumpable = [value for option, value in calls if option == 4]
    assert dumpable == [0, 1]
    subreaper = [value for option, value in calls if option == 36]
    assert subreaper == [1, 0]
