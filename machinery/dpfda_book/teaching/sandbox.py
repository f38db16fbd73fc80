"""Run a submission's notebook code in a fresh child process; bring back plain JSON only.

The grader (:mod:`dpfda_book.teaching.grader`) never executes a submission's code in its own process,
never unpickles anything a submission wrote, and never imports anything a submission could have
put on the path. It hands :func:`run_probes` the code cells of the notebook and, for each
question, a *probe*: the source of a function ``probe(ns, request)`` that reads the student's
answer from the notebook's namespace ``ns`` and computes plain numbers from it (for a simulation
question, the student's function called at the grader's fresh settings). A child process started
as ``python -I -m dpfda_book.teaching.sandbox FD REQUEST``

1. reads the request file (cells, probes, requests) and deletes it,
2. runs the cells one by one in an IPython shell (a cell that raises does not stop the next;
   ``grader = otter.Notebook(...)`` and ``grader.check(...)`` cells are skipped),
3. runs each probe in turn and writes one JSON line per question to the file descriptor FD.

The parent reads those lines with a deadline and a size limit and parses them with the ``json`` module
(numbers, strings, lists, dicts: no code runs). Whatever the child writes is treated as the
student's own claim, to be judged: the student controls the child completely. Then the parent
kills the child's process group and, on Linux, every process the child left behind: it is the
"child subreaper" of the run (``prctl(PR_SET_CHILD_SUBREAPER)``), so orphans and daemons are
re-parented to it, stopped and killed, and no process of the submission outlives the run to
rewrite a result afterwards. While the child runs the parent is not dumpable
(``prctl(PR_SET_DUMPABLE, 0)``), so a process without ``CAP_SYS_PTRACE`` cannot read or write its
memory, even under the same user.

What this does not stop: a submission runs with the grader's user. It can read any file that user
can read while it runs, and, offline, change files of that user (installed packages included)
that a later run would use. Gradescope runs each submission in a fresh container; offline, grade
submissions you do not trust the same way (a container or a throwaway user).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MAX_OUTPUT", "TIMEOUT", "ProbeRun", "otter_only", "run_probes", "sweep"]

#: Bytes of JSON the parent reads from one run at most (a longer answer is cut and fails).
MAX_OUTPUT = 8 * 2**20

#: Default wall-clock limit of one run (the notebook and every probe), in seconds (a plugin
#: configuration ``{"timeout": seconds}`` changes it). The reference solutions take 20 to 45 s on
#: a shared machine; give Gradescope's autograder a timeout of 20 minutes.
TIMEOUT = 900.0

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36

#: A cell made only of otter's own calls (``import otter``, ``grader = otter.Notebook(...)``,
#: ``grader.check(...)``, ``grader.check_all()``, ``grader.export(...)``) and comments.
_OTTER_LINE = re.compile(r"^(import otter|grader\s*=\s*otter\.Notebook\(.*\)|grader\.\w+\(.*\))\s*(#.*)?$")


def otter_only(source: str) -> bool:
    """Whether a code cell holds nothing but otter's own calls (it is skipped in the child)."""
    lines = [line.strip() for line in source.splitlines()]
    code = [line for line in lines if line and not line.startswith("#")]
    return bool(code) and all(_OTTER_LINE.match(line) for line in code)


@dataclass
class ProbeRun:
    """What one run of the child gave back."""

    answers: dict[str, Any]
    """question -> the probe's answer (parsed JSON), for every question the child answered"""
    returncode: int | None
    """The child's exit code (negative if killed by that signal), or None if it had to be killed."""
    timed_out: bool
    """whether the run hit its wall-clock limit"""
    swept: list[int] = field(default_factory=list)
    """process ids the child left behind, killed after the run (Linux)"""
    seconds: float = 0.0
    """wall-clock time of the run"""


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, value: int) -> bool:
    libc = _libc()
    return libc is not None and libc.prctl(option, value, 0, 0, 0) == 0


def _children(pid: int) -> set[int]:
    """Process ids whose parent is ``pid`` (from /proc; empty where there is none)."""
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.add(int(entry))
    return found


def sweep(keep: set[int]) -> list[int]:
    """Stop, kill and reap every child of this process not in ``keep``; their ids.

    With this process a child subreaper, these are the run's orphans and daemons. Each round
    stops them all first (a stopped process cannot fork), then kills them, until none is left.
    """
    killed: list[int] = []
    for _ in range(200):
        found = sorted(_children(os.getpid()) - keep)
        if not found:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in found:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        killed += found
    return killed


def _limits() -> None:  # pragma: no cover - runs in the child between fork and exec
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _environment(home: str) -> dict[str, str]:
    """The child's environment: no variable of the grader's but PATH and the locale."""
    env = {"HOME": home, "TMPDIR": home, "IPYTHONDIR": os.path.join(home, ".ipython"),
           "MPLCONFIGDIR": os.path.join(home, ".matplotlib"), "MPLBACKEND": "Agg",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("PATH", "LANG", "LC_ALL"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _lines(buffer: bytes, answers: dict[str, Any]) -> None:
    for raw in buffer.split(b"\n"):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            continue
        if isinstance(line, dict) and isinstance(line.get("question"), str) and "answer" in line:
            answers.setdefault(line["question"], line["answer"])  # the first line for a question counts


def run_probes(cells: list[str], probes: dict[str, str], requests: dict[str, Any], *,
               timeout: float = TIMEOUT, python: str | None = None) -> ProbeRun:
    """Run ``cells`` in a fresh child, then each probe (in the order of ``probes``) on its request.

    ``probes``: question -> source defining ``probe(ns, request)``; ``requests``: question ->
    JSON-able request. Returns the answers the child wrote (see the module's docstring); a probe
    that raised, or a question the child never reached, has no answer.
    """
    start = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="grading-")
    request = {"cells": [c for c in cells if not otter_only(c)], "order": list(probes),
               "probes": probes, "requests": requests}
    request_path = os.path.join(workdir, "request.json")
    with open(request_path, "w", encoding="utf-8") as fh:
        json.dump(request, fh)
    read_end, write_end = os.pipe()
    subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_DUMPABLE, 0)
    keep = _children(os.getpid())
    buffer, timed_out, returncode = b"", False, None
    answers: dict[str, Any] = {}
    swept: list[int] = []
    proc = None
    try:
        proc = subprocess.Popen(
            [python or sys.executable, "-I", "-m", "dpfda_book.teaching.sandbox", str(write_end), request_path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(write_end,), cwd=workdir, env=_environment(workdir), start_new_session=True,
            preexec_fn=_limits if os.name == "posix" else None)
        os.close(write_end)
        write_end = -1
        deadline = start + timeout
        exited_at = None
        while len(buffer) <= MAX_OUTPUT:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if proc.poll() is not None:
                exited_at = exited_at or now
                if now - exited_at > 1.0:  # a process the child left may hold the pipe open
                    break
            ready, _, _ = select.select([read_end], [], [], min(0.5, deadline - now))
            if ready:
                chunk = os.read(read_end, 65536)
                if not chunk:
                    break
                buffer += chunk
        try:  # the pipe closed: let the child exit on its own for a moment
            returncode = proc.wait(timeout=0 if timed_out else max(0.0, min(2.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            returncode = None
    finally:
        if write_end >= 0:
            os.close(write_end)
        os.close(read_end)
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        if subreaper:
            swept = sweep(keep)
            _prctl(_PR_SET_CHILD_SUBREAPER, 0)
        _prctl(_PR_SET_DUMPABLE, 1)
        shutil.rmtree(workdir, ignore_errors=True)
    _lines(buffer[:MAX_OUTPUT], answers)
    return ProbeRun(answers, returncode, timed_out, swept, time.monotonic() - start)


# ---- the child ---------------------------------------------------------------------------------


def _child(fd: int, request_path: str) -> None:  # pragma: no cover - runs in the child process
    with open(request_path, encoding="utf-8") as fh:
        request = json.load(fh)
    Path(request_path).unlink()
    out = os.fdopen(fd, "w", encoding="utf-8")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    for source in request["cells"]:
        try:
            shell.run_cell(source, store_history=False, silent=True)
        except BaseException:  # a cell may raise anything, SystemExit included
            pass
    for name in request["order"]:
        try:
            scope: dict[str, Any] = {}
            exec(compile(request["probes"][name], f"<probe {name}>", "exec"), scope)
            answer = scope["probe"](shell.user_ns, request["requests"][name])
            line = json.dumps({"question": name, "answer": answer})
        except BaseException:  # the student's function may raise anything
            line = json.dumps({"question": name, "answer": None})
        try:
            out.write(line + "\n")
            out.flush()
        except BaseException:
            return


if __name__ == "__main__":  # pragma: no cover
    _child(int(sys.argv[1]), sys.argv[2])
