"""Binder from the student edition: the solution-free repository alone sets up and runs.

The student edition's Binder button opens a chapter from the repository that ``make student``
writes (``_build/student_repository``: the chapters without their solutions under ``book/``,
``requirements.txt``, ``runtime.txt``, the wheels of dpfda and dpfda_book, the licences). This test
writes that repository from a copy of the files git tracks, with both wheels built from the copy, and
replays Binder on it: a new Python 3.11 environment (``runtime.txt``) where
``pip install -r requirements.txt`` is the only install (the repository has no package
source, so repo2docker runs nothing else), then runs, from ``book/``, the chapters that need
more than dpfda and numpy: the preface (it reads the citation file), the real data (fdars's
growth data), the release chapter (OpenDP) and the explorer (bokeh), in quick mode.

Marker ``binder``: run by ``make test-binder`` (part of ``make test``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_binder_replay import ROOT, RUNNER, run, runtime_python, tracked_files  # noqa: E402

pytestmark = pytest.mark.binder

CHAPTERS = ["preface", "growth", "release", "explorer"]
TIMEOUT = 1800


def test_the_solution_free_repository_runs_in_a_binder_like_environment(tmp_path):
    copy = tmp_path / "copy"
    for rel in tracked_files():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, copy / rel)
    log = tmp_path / "student-binder.log"
    for package in (copy, copy / "machinery"):  # dpfda and the book's own dpfda_book
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
             str(copy / "_build" / "assignments" / "wheel"), str(package)], copy, log, 600)
    sys.path.insert(0, str(copy / "tools"))
    try:
        import student_export
    finally:
        sys.path.pop(0)
    repo = student_export.export_repository(copy / "_toc.yml", tmp_path / "exported", tmp_path / "repo")
    names = sorted(p.name for p in repo.iterdir() if p.name != ".git")
    assert "requirements.txt" in names and "runtime.txt" in names and "book" in names
    assert not (repo / "dpfda").exists() and not (repo / "pyproject.toml").exists()
    assert "-e ." not in (repo / "requirements.txt").read_text()

    env_dir = tmp_path / "env"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}:{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    env["DPFDA_QUICK"] = "1"
    run([runtime_python(), "-m", "venv", str(env_dir)], repo, log, 300, env)
    python = env_dir / "bin" / "python"
    run([python, "-m", "pip", "install", "-r", "requirements.txt"], repo, log, TIMEOUT, env)
    where = subprocess.run([python, "-c", "import dpfda; print(dpfda.__file__)"], cwd=repo / "book",
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(env_dir)), where  # dpfda from the wheel, nothing of this checkout
    where = subprocess.run([python, "-c", "import dpfda_book; print(dpfda_book.__file__)"], cwd=repo / "book",
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(env_dir)), where  # and the book's package from its wheel

    runner = tmp_path / "run_notebook.py"
    runner.write_text(RUNNER)
    failures = []
    for name in CHAPTERS:
        nb = repo / "book" / f"{name}.ipynb"
        proc = subprocess.run([python, str(runner), str(nb), str(TIMEOUT), str(nb.parent)], cwd=nb.parent,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT * 2)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"error": proc.stderr[-3000:]}
        print(f"{name}: {result.get('seconds', float('nan')):.1f} s, {'FAILED' if result['error'] else 'ok'}")
        if result["error"] or proc.returncode:
            failures.append(f"{name}: {result['error'] or proc.stderr[-2000:]}")
    assert not failures, "\n\n".join(failures)
