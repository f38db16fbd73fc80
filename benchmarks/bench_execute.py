"""Executing notebooks into a cold cache: the book's own script against jupyter-cache's executor.

``make book`` fills ``_build/.jupyter_cache`` before Sphinx with ``execute_notebooks.py``
(a process pool over jupyter-cache's ``single_nb_execution``, longest notebooks first).
jupyter-cache ships an executor that does much the same, ``local-parallel``
(``load_executor("local-parallel", cache).run_and_cache(...)``: a ``multiprocessing.Pool``
of one process per CPU, notebooks in the order they were added to the cache's project,
each run in its own folder). This benchmark executes the same notebooks into a fresh
temporary cache both ways, alternating A (the script) and B (the executor) for
``--rounds`` rounds, and prints each run's wall time, the machine's load average at its
start and end, and the median of each way. After each run it checks that every notebook
is in the cache under the key that myst-nb looks up (``match_cache_notebook`` of the
notebook read from its path) and that the cache's project record is the notebook's path;
a run that leaves a notebook out, or a failing notebook, exits 1.

Chapters run at full size (``DPFDA_QUICK`` unset) with the results store in a fresh folder
each run (``DPFDA_STORE``), so no run reuses another's work.

Run: ``python benchmarks/bench_execute.py [--rounds 3] [--jobs 2] [NOTEBOOK ...]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.executors import load_executor

ROOT = Path(__file__).resolve().parent.parent
# Mid-sized chapters: about 95 s one after the other in the last measured build.
DEFAULT = ("book/gdp", "book/functional_data", "book/pipelines", "book/finite_dim", "book/rkhs",
           "book/pure_dp")


def find_script() -> Path:
    """The book's execution script."""
    script = ROOT / "tools" / "execute_notebooks.py"
    if not script.is_file():
        raise FileNotFoundError(f"{script} is missing")
    return script


def run_script(notebooks: list[Path], cache_dir: Path, work: Path, jobs: int, timeout: int,
               script: Path | None = None) -> int:
    """(A) The book's script as ``make book`` runs it (a subprocess).

    Its config and table of contents, written in ``work``, name ``notebooks`` by absolute path.
    """
    config = work / "_config.yml"
    config.write_text(f"execute:\n  execute_notebooks: cache\n  cache: {cache_dir}\n"
                      f"  timeout: {timeout}\n  allow_errors: false\n")
    toc = work / "_toc.yml"
    lines = ["format: jb-book", f"root: {notebooks[0].with_suffix('')}", "chapters:"]
    lines += [f"- file: {p.with_suffix('')}" for p in notebooks[1:]]
    toc.write_text("\n".join(lines) + "\n")
    cmd = [sys.executable, str(script or find_script()), "--jobs", str(jobs), "--config", str(config),
           "--toc", str(toc)]
    return subprocess.run(cmd, check=False).returncode


def run_executor(notebooks: list[Path], cache_dir: Path, timeout: int) -> int:
    """(B) jupyter-cache's ``local-parallel`` executor; 1 if a notebook failed or errored."""
    cache = get_cache(str(cache_dir))
    for path in notebooks:
        cache.add_nb_to_project(str(path))
    result = load_executor("local-parallel", cache).run_and_cache(timeout=timeout, allow_errors=False)
    for uri in result.excepted + result.errored:
        print(f"{uri}: execution FAILED\n{cache.get_project_record(uri).traceback}", file=sys.stderr)
    return 1 if result.excepted or result.errored else 0


def cached(notebooks: list[Path], cache_dir: Path) -> list[Path]:
    """The notebooks that myst-nb would find in the cache ("Using cached notebook")."""
    cache = get_cache(str(cache_dir))
    found = []
    for path in notebooks:
        nb = nbformat.read(str(path), as_version=4)
        try:
            cache.match_cache_notebook(nb)
            record = cache.get_project_record(str(path))
        except KeyError:
            continue
        if record.uri == str(path):
            found.append(path)
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*", default=list(DEFAULT),
                    help="notebooks relative to the repository, with or without .ipynb")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2, help="processes for the script (A)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--quick", action="store_true", help="keep DPFDA_QUICK as it is")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    notebooks = [(ROOT / n).with_suffix(".ipynb").resolve() for n in args.notebooks]
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        ap.error("no such notebook: " + ", ".join(missing))
    if not args.quick:
        os.environ.pop("DPFDA_QUICK", None)
    print(f"{len(notebooks)} notebooks: {', '.join(p.stem for p in notebooks)}; "
          f"A = execute_notebooks.py --jobs {args.jobs}, "
          f"B = local-parallel (multiprocessing.Pool of os.cpu_count() = {os.cpu_count()})", flush=True)
    times: dict[str, list[float]] = {"A": [], "B": []}
    status = 0
    for rnd in range(1, args.rounds + 1):
        for way in ("A", "B"):
            with tempfile.TemporaryDirectory(prefix=f"bench_execute_{way}_") as tmp:
                tmp_path = Path(tmp)
                cache_dir = tmp_path / "cache"
                os.environ["DPFDA_STORE"] = str(tmp_path / "store")
                load0 = os.getloadavg()
                start = time.perf_counter()
                if way == "A":
                    rc = run_script(notebooks, cache_dir, tmp_path, args.jobs, args.timeout)
                else:
                    rc = run_executor(notebooks, cache_dir, args.timeout)
                wall = time.perf_counter() - start
                load1 = os.getloadavg()
                found = cached(notebooks, cache_dir)
                records = {r.uri: (r.data or {}).get("execution_seconds")
                           for r in get_cache(str(cache_dir)).list_cache_records()}
            times[way].append(wall)
            total = sum(s for s in records.values() if s)
            print(f"round {rnd} {way}: {wall:6.1f} s wall, {total:6.1f} s summed over notebooks, "
                  f"{len(found)}/{len(notebooks)} cached, load {load0[0]:.2f} -> {load1[0]:.2f}, exit {rc}",
                  flush=True)
            if rc != 0 or len(found) != len(notebooks):
                status = 1
    for way in ("A", "B"):
        print(f"median {way}: {statistics.median(times[way]):.1f} s over {len(times[way])} runs")
    return status


if __name__ == "__main__":
    sys.exit(main())
