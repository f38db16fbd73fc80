"""Execute the book's notebooks into the execution cache, several at a time, before Sphinx runs.

    python tools/execute_notebooks.py [--jobs N] [--config _config.yml] [--toc _toc.yml]

Jupyter Book 1 (myst-nb, ``execute_notebooks: cache``) executes a notebook that
is not in ``_build/.jupyter_cache`` while Sphinx reads it, one notebook after
the other. Most chapters spend much of their time on one core (the kernel's
start and imports, sympy, figures), so on a machine with two cores half of it
sits idle. This script fills the same cache first, ``--jobs`` notebooks at a
time (default: the number of CPUs), exactly as myst-nb would: the notebook read
with ``nbformat`` as version 4, executed by jupyter-cache's
``single_nb_execution`` in the notebook's own folder with the timeout and
``allow_errors`` of ``_config.yml``, and cached under its absolute path with its
execution time. ``jupyter-book build`` then finds every notebook in the cache
("Using cached notebook") and executes nothing; the build's output is the same
as if it had executed them itself.

Notebooks already in the cache (same code cells) are skipped. The longest
notebooks start first (their last recorded run time in the cache, else the
order of :data:`LONGEST_FIRST`), so that the two queues end together.

A notebook that fails is not cached; its traceback is printed and the script
exits with status 1 after the others have run (``make book`` stops there,
naming the failing notebook and cell, as a build that executes it would).

Why not jupyter-cache's own ``local-parallel`` executor: it fills the same cache
under the same keys (jupyter-book then executes nothing), but it runs one process
per CPU with no way to ask for fewer, in the order notebooks were first added to
the cache's project, handed out by ``Pool.map`` in batches (three notebooks a
batch for the book's twenty, so one worker can get three long chapters), and it
returns its failures instead of exiting non-zero; what this script would keep
around it (reading ``_toc.yml``, the failure's report and exit status) is most of
its code. Measured on six chapters (``benchmarks/bench_execute.py``), the two
take the same time within the run-to-run spread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

# Scheduling hints for a cold cache: the chapters that took longest in the last measured build
# (benchmarks/README.md, bench_build.py), longest first. Any order gives the same outputs.
LONGEST_FIRST = ("robustness", "audit", "sim_polynomial", "explorer", "design_space", "sim_noise",
                 "beyond", "growth", "gdp", "functional_data")


def toc_notebooks(root: Path, toc: Path) -> list[Path]:
    """The ``.ipynb`` files the table of contents lists, in its order."""
    entries: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    entries.append(node[key])
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(toc.read_text()))
    out = []
    for entry in entries:
        path = (root / entry).with_suffix(".ipynb")
        if path.is_file() and path not in out:
            out.append(path.resolve())
    return out


def execute(path: str, timeout, allow_errors: bool):
    """Run one notebook as myst-nb does; return (path, executed notebook, seconds, traceback or None)."""
    nb = nbformat.reads(Path(path).read_text(encoding="utf8"), as_version=4)
    result = single_nb_execution(nb, cwd=str(Path(path).parent), timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    return path, result.nb, result.time, result.exc_string if result.err is not None else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="notebooks executed at a time (default: the number of CPUs)")
    ap.add_argument("--config", type=Path, default=Path("_config.yml"))
    ap.add_argument("--toc", type=Path, default=Path("_toc.yml"))
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    root = args.config.resolve().parent
    config = yaml.safe_load(args.config.read_text())
    execute_cfg = config.get("execute", {}) or {}
    if execute_cfg.get("execute_notebooks", "auto") != "cache":
        print("execute_notebooks is not 'cache' in _config.yml: nothing to do")
        return 0
    cache_path = root / execute_cfg.get("cache", "_build/.jupyter_cache")
    timeout = execute_cfg.get("timeout", 30)
    allow_errors = bool(execute_cfg.get("allow_errors", False))
    cache = get_cache(str(cache_path))

    todo = []
    for path in toc_notebooks(root, args.toc):
        nb = nbformat.reads(path.read_text(encoding="utf8"), as_version=4)
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            todo.append(path)
    if not todo:
        print("every notebook is in the execution cache")
        return 0

    last = {}
    for record in cache.list_cache_records():
        last[record.uri] = (record.data or {}).get("execution_seconds")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def order(path: Path):
        seconds = last.get(str(path))
        if seconds is not None:
            return (0, -seconds)
        return (1, rank.get(path.stem, len(rank)))

    todo.sort(key=order)
    print(f"executing {len(todo)} notebooks, {args.jobs} at a time, into {cache_path}", flush=True)
    failed = []
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(execute, str(p), timeout, allow_errors) for p in todo]
        for future in as_completed(futures):
            path, nb, seconds, error = future.result()
            rel = os.path.relpath(path, root)
            if error is not None:
                failed.append(rel)
                print(f"{rel}: execution FAILED after {seconds:.1f} s\n{error}", file=sys.stderr, flush=True)
                continue
            record = cache.add_nb_to_project(path)
            cache.cache_notebook_bundle(CacheBundleIn(nb, record.uri, data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"{rel}: executed in {seconds:.1f} s", flush=True)
    print(f"executed {len(todo) - len(failed)} of {len(todo)} notebooks in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
