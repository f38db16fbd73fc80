"""Where the test suite's time goes: each test's wall and CPU seconds, the slowest first.

    python benchmarks/bench_tests.py [--top 30] [--json out.json] -- [pytest arguments]
    python benchmarks/bench_tests.py -- -m "not browser" tests/          # the unit suite
    python benchmarks/bench_tests.py --max-unmarked-cpu 5 -- -m "not browser and not slow" tests/
    DPFDA_QUICK=1 python benchmarks/bench_tests.py -- --nbval-lax book/   # the quick notebooks

Runs pytest in this process with a small plugin that records, for every test (setup, call
and teardown together), its wall-clock seconds and the CPU seconds it used: this process's
own (``RUSAGE_SELF``) plus those of the subprocesses that ended during it
(``RUSAGE_CHILDREN``: a subprocess's CPU is counted when it is waited for, so a fresh
environment's pip install or a notebook's kernel is charged to the test that ran it, but the
workers of joblib's reusable pool are charged when the pool ends). On a machine shared with
other work, wall seconds stretch with the load and CPU seconds much less, so the CPU column is
the better estimate of a test's time on an idle machine, for a test that runs one process at
a time. Prints the load average before and after, the totals, the slowest tests and the
slowest files; exits with pytest's status, or 1 with ``--max-unmarked-cpu S`` when a test not
marked ``slow`` took S CPU seconds or more (``make test-quick`` leaves the ``slow`` ones out, so
this keeps it quick; the CPU seconds are this machine's).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

_NOT_MARKS = {"parametrize", "usefixtures", "filterwarnings", "skipif", "xfail"}


def _cpu() -> float:
    self_, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return self_.ru_utime + self_.ru_stime + children.ru_utime + children.ru_stime


class Recorder:
    """A pytest plugin: wall and CPU seconds of each test, setup to teardown."""

    def __init__(self) -> None:
        self.rows: dict[str, dict] = {}
        self.failed: set[str] = set()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        wall, cpu = time.perf_counter(), _cpu()
        yield
        self.rows[item.nodeid] = {"wall": time.perf_counter() - wall, "cpu": _cpu() - cpu,
                                  "file": item.nodeid.split("::")[0],
                                  "markers": sorted({m.name for m in item.iter_markers()} - _NOT_MARKS),
                                  "failed": item.nodeid in self.failed}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.failed:
            self.failed.add(item.nodeid)


def summary(rows: dict[str, dict], top: int) -> str:
    """The slowest tests and files, by wall and CPU seconds, as Markdown tables."""
    wall = sum(r["wall"] for r in rows.values())
    cpu = sum(r["cpu"] for r in rows.values())
    lines = [f"{len(rows)} tests: {wall:.0f} s wall, {cpu:.0f} s CPU (this process and its ended subprocesses)",
             "", "| slowest tests (by CPU) | wall s | CPU s | markers |", "|---|---:|---:|---|"]
    for nodeid, r in sorted(rows.items(), key=lambda kv: -kv[1]["cpu"])[:top]:
        lines.append(f"| `{nodeid}` | {r['wall']:.1f} | {r['cpu']:.1f} | {', '.join(r['markers'])} |")
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows.values():
        f = files[r["file"]]
        f[0] += r["wall"]
        f[1] += r["cpu"]
        f[2] += 1
    lines += ["", "| slowest files (by CPU) | tests | wall s | CPU s |", "|---|---:|---:|---:|"]
    for name, (w, c, n) in sorted(files.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"| `{name}` | {n} | {w:.1f} | {c:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, pytest_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=30, help="how many tests and files to list")
    ap.add_argument("--json", type=Path, help="also write every test's times here")
    ap.add_argument("--max-unmarked-cpu", type=float, metavar="S",
                    help="exit 1 if a test not marked slow took S CPU seconds or more")
    args = ap.parse_args(ours)
    recorder = Recorder()
    load0, start, cpu0 = os.getloadavg(), time.perf_counter(), _cpu()
    status = pytest.main(["-p", "no:cacheprovider", *pytest_args], plugins=[recorder])
    wall, cpu, load1 = time.perf_counter() - start, _cpu() - cpu0, os.getloadavg()
    rows = recorder.rows
    print(f"\nload average (1, 5, 15 min) before {load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f}, "
          f"after {load1[0]:.1f} {load1[1]:.1f} {load1[2]:.1f}")
    print(f"session: {wall:.0f} s wall, {cpu:.0f} s CPU (every subprocess ended by now included)\n")
    print(summary(rows, args.top))
    if args.json:
        args.json.write_text(json.dumps({"wall": wall, "cpu": cpu, "load_before": load0, "load_after": load1,
                                         "pytest_args": pytest_args, "tests": recorder.rows}, indent=1) + "\n")
    if status == 0 and args.max_unmarked_cpu is not None:
        over = sorted((k for k, r in rows.items() if "slow" not in r["markers"] and r["cpu"] >= args.max_unmarked_cpu),
                      key=lambda k: -rows[k]["cpu"])
        if over:
            print(f"\nnot marked slow but {args.max_unmarked_cpu:g} CPU seconds or more: "
                  + ", ".join(f"{k} ({rows[k]['cpu']:.1f} s)" for k in over))
            return 1
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
