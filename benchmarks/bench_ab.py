"""Paired A/B timing of ``python -m dpfda_book reproduce all`` in two source trees.

Runs the same command alternately with tree A and tree B on the Python path (A, B, A, B,
...; ``--rounds`` pairs), so a change in the machine's load hits both alike, and prints
every run's wall and CPU seconds, the medians and the median of the per-pair ratios B/A.
Then compares the two trees' outputs of the first round with ``compare_results.py`` (every
published number within ``--rtol``, every verdict the same).

Usage::

    git -C . worktree add /tmp/before 716896e        # the tree to compare against
    python benchmarks/bench_ab.py /tmp/before . --reps 1000 --rounds 3

Each run starts a fresh interpreter with ``PYTHONPATH=TREE:TREE/machinery`` (the tree's own
``dpfda`` and ``dpfda_book``; in a tree from before the book's package, ``python -m dpfda
reproduce``) and
without the results store (``DPFDA_STORE`` unset), so nothing is read from an earlier run.
The load average before and after each run is printed beside it: the figures say something
about speed only on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_once(tree: Path, reps: int, jobs: int, out: Path) -> dict:
    """One ``reproduce all`` with ``tree`` first on the path: wall and CPU seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("DPFDA_STORE", "DPFDA_QUICK")}
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "machinery")])
    command = "dpfda_book" if (tree / "machinery" / "dpfda_book").is_dir() else "dpfda"  # an older tree: dpfda
    cmd = [sys.executable, "-m", command, "reproduce", "all", "--reps", str(reps), "--jobs", str(jobs),
           "--out", str(out)]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} in {tree} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "load_before": load, "load_after": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path, help="tree A (the 'before')")
    ap.add_argument("b", type=Path, help="tree B (the 'after')")
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3, help="pairs of runs (A then B)")
    ap.add_argument("--rtol", type=float, default=1e-12, help="for the comparison of the outputs")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.reps < 2 or args.jobs < 1:
        ap.error("--rounds must be >= 1, --reps >= 2 and --jobs >= 1")
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    for name, tree in trees.items():
        if not (tree / "dpfda" / "__init__.py").is_file():
            ap.error(f"tree {name} ({tree}) holds no dpfda/__init__.py")
    runs: dict[str, list[dict]] = {"A": [], "B": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, tree in trees.items():
                out = Path(tmp) / f"{name}{r}"
                res = run_once(tree, args.reps, args.jobs, out)
                runs[name].append(res)
                print(f"round {r + 1} {name}: wall {res['wall']:.1f} s, cpu {res['cpu']:.1f} s "
                      f"(load {res['load_before']:.2f} -> {res['load_after']:.2f})", flush=True)
        cmp = subprocess.run([sys.executable, str(HERE / "compare_results.py"), str(Path(tmp) / "A0"),
                              str(Path(tmp) / "B0"), "--rtol", str(args.rtol)], capture_output=True, text=True)
        print(cmp.stdout.strip())
    summary = {}
    for key in ("wall", "cpu"):
        a = [x[key] for x in runs["A"]]
        b = [x[key] for x in runs["B"]]
        summary[key] = {"median_A": statistics.median(a), "median_B": statistics.median(b),
                        "median_ratio_B_over_A": statistics.median(y / x for x, y in zip(a, b))}
        print(f"{key}: median A {summary[key]['median_A']:.1f} s, median B {summary[key]['median_B']:.1f} s, "
              f"median of paired ratios B/A {summary[key]['median_ratio_B_over_A']:.3f}")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs,
                                         "summary": summary, "outputs_equal": cmp.returncode == 0}, indent=2))
    return cmp.returncode


if __name__ == "__main__":
    sys.exit(main())
