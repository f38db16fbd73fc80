"""Run the notebooks the way Binder will: a fresh environment built from this repository.

Binder (repo2docker) sees ``runtime.txt`` (python-3.11) and ``requirements.txt``: it creates a
Python 3.11 environment, runs ``pip install -r requirements.txt`` and then ``pip install .``,
and starts Jupyter in the repository's root; a reader opens ``book/<chapter>.ipynb`` and runs
it, with the notebook's folder as working directory. This test replays that:

1. copies the files git tracks (what a fresh clone holds, with the working tree's
   content; no ``.venv``, no ``_build``, no cache) into a temporary folder;
2. creates a new virtual environment there with the Python of ``runtime.txt`` and runs the
   same two pip commands from that folder (pip's own cache is used, as on any machine that
   installed the book before; nothing else of this checkout's environment is visible);
3. executes every notebook under ``book/`` (the chapters, then the assignments' master
   notebooks) in that environment's ``python3`` kernel with the
   notebook's folder as working directory, figures drawn by the kernel's default (inline)
   backend as in Binder's Jupyter, and fails on any error in any cell.

By default the notebooks run in quick mode (``DPFDA_QUICK=1``: small Monte Carlo sizes, the
same code and assertions), as many at a time as there are CPUs: the full-size execution of
every chapter is the book build's (``make book``), which ``make test`` runs next, so no
chapter is executed at full size twice in one ``make test``, and this replay is also the
test that every notebook runs in quick mode. ``DPFDA_BINDER_QUICK=0`` runs them at full size
instead (``DPFDA_QUICK`` unset), one at a time, so that each chapter's time is how long a
Binder reader waits for "Run all"; ``DPFDA_BINDER_JOBS=k`` sets how many run at a time.

The table of the steps' and chapters' times goes to ``_build/test-artifacts/binder-replay.md``
and to the test's output. Marker ``binder``: run by ``make test-binder`` (part of ``make test``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.binder

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("DPFDA_ARTIFACTS", ROOT / "_build" / "test-artifacts")).resolve()
QUICK = os.environ.get("DPFDA_BINDER_QUICK", "1") not in ("", "0")
JOBS = int(os.environ.get("DPFDA_BINDER_JOBS") or ((os.cpu_count() or 1) if QUICK else 1))
INSTALL_TIMEOUT = 1800
# The chapters that took longest in quick mode when last measured (benchmarks/README.md), started
# first so that the queues end together; the others follow in name order.
QUICK_LONGEST_FIRST = ("robustness", "audit", "sim_polynomial", "beyond", "design_space")
NOTEBOOK_TIMEOUT = 1800  # per cell, as the book build's execute.timeout

RUNNER = r"""
import json, sys, time, nbformat
from nbclient import NotebookClient
path, timeout = sys.argv[1], int(sys.argv[2])
nb = nbformat.read(path, as_version=4)
start = time.monotonic()
error = None
try:
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": sys.argv[3]}}).execute()
except Exception as exc:  # report which cell failed, then fail
    error = f"{type(exc).__name__}: {str(exc)[-3000:]}"
print(json.dumps({"seconds": time.monotonic() - start, "error": error,
                  "python": sys.version.split()[0], "executable": sys.executable}))
"""


def runtime_python() -> str:
    wanted = (ROOT / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+\.\d+)", wanted)
    assert match, f"runtime.txt should name python-X.Y, got {wanted!r}"
    exe = shutil.which(f"python{match.group(1)}")
    assert exe, f"runtime.txt asks for Python {match.group(1)}, which is not installed here"
    return exe


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True, capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]


def run(argv, cwd, log, timeout, env=None):
    started = time.monotonic()
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(map(str, argv))}\n".encode())
        fh.flush()
        proc = subprocess.run(argv, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{argv[:4]} failed ({proc.returncode}); see {log}"
    return time.monotonic() - started


def test_notebooks_run_in_a_binder_like_environment(tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = ARTIFACTS / "binder-replay.log"
    log.write_text("")
    repo = tmp_path / "repo"
    for rel in tracked_files():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, repo / rel)
    # Every notebook under book/: the chapters and the assignments' master notebooks.
    rank = {name: i for i, name in enumerate(QUICK_LONGEST_FIRST)}
    notebooks = sorted((repo / "book").rglob("*.ipynb"),
                       key=lambda p: (rank.get(p.stem, len(rank)) if p.parent.name == "book" else len(rank),
                                      len(p.parts), p))
    assert notebooks, "no notebooks under book/"

    env_dir = tmp_path / "env"
    # Only the new environment: no PYTHONPATH or virtualenv of this checkout leaks in.
    # No MPLBACKEND either: Binder sets none, so the kernel draws figures inline.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DPFDA_QUICK", "DPFDA_STORE", "MPLBACKEND")}
    env["PATH"] = f"{env_dir / 'bin'}:{env.get('PATH', '')}"
    timings = {}
    timings["venv"] = run([runtime_python(), "-m", "venv", str(env_dir)], repo, log, 300, env)
    python = env_dir / "bin" / "python"
    timings["pip -r requirements.txt"] = run([python, "-m", "pip", "install", "-r", "requirements.txt"],
                                            repo, log, INSTALL_TIMEOUT, env)
    timings["pip install ."] = run([python, "-m", "pip", "install", "."], repo, log, INSTALL_TIMEOUT, env)
    # The package is the copy's, in the new environment.
    where = subprocess.run([python, "-c", "import dpfda, sys; print(dpfda.__file__); print(sys.prefix)"],
                           cwd=repo / "book", env=env, capture_output=True, text=True, check=True).stdout.split()
    assert Path(where[1]) == env_dir and str(tmp_path) in where[0], where

    if QUICK:
        env["DPFDA_QUICK"] = "1"
    runner = tmp_path / "run_notebook.py"
    runner.write_text(RUNNER)

    def execute(nb: Path) -> tuple[Path, dict, subprocess.CompletedProcess]:
        proc = subprocess.run([python, str(runner), str(nb), str(NOTEBOOK_TIMEOUT), str(nb.parent)],
                              cwd=nb.parent, env=env, capture_output=True, text=True,
                              timeout=NOTEBOOK_TIMEOUT * 4)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"seconds": float("nan"), "error": proc.stderr[-3000:]}
        return nb, result, proc

    rows, failures, pythons = [], [], set()
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=JOBS) as pool:  # each notebook is its own process
        for nb, result, proc in pool.map(execute, notebooks):
            assert result.get("executable", str(python)).startswith(str(env_dir)), result
            name = nb.relative_to(repo / "book").as_posix()
            rows.append((name, result["seconds"], result["error"]))
            pythons.add(result.get("python", "?"))
            if result["error"] or proc.returncode:
                failures.append(f"{name}: {result['error'] or proc.stderr[-2000:]}")
    timings["notebooks"] = time.monotonic() - started

    rows_python = ", ".join(sorted(pythons))
    assert all(v.startswith("3.11.") for v in pythons), pythons  # runtime.txt: python-3.11
    mode = "quick mode (DPFDA_QUICK=1)" if QUICK else "full size"
    lines = [f"# Binder replay: {len(rows)} notebooks, {mode}, {JOBS} at a time", "",
             f"Notebooks ran on Python {rows_python} in a new environment made from runtime.txt and the "
             "two pip commands; chapter times are wall-clock seconds of a whole-notebook run "
             "(a Binder reader's wait for \"Run all\" only at full size, one at a time).", "",
             "| step | seconds |", "|---|---:|"]
    lines += [f"| {k} | {v:.0f} |" for k, v in timings.items()]
    lines += ["", "| chapter | seconds | result |", "|---|---:|---|"]
    lines += [f"| {name} | {sec:.1f} | {'FAILED' if err else 'ok'} |" for name, sec, err in rows]
    lines += ["", f"Total notebook time: {sum(r[1] for r in rows):.0f} s"]
    report = "\n".join(lines)
    (ARTIFACTS / "binder-replay.md").write_text(report + "\n")
    print(report)
    assert not failures, "\n\n".join(failures)
