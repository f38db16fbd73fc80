"""Time the book's build: a cold full build, then a rebuild after a prose edit of one chapter.

    python benchmarks/bench_build.py --repo DIR                 # both phases, `make book`
    python benchmarks/bench_build.py --repo DIR --phases rebuild --chapter book/sim_radius.ipynb
    python benchmarks/bench_build.py --repo DIR --phases report # only read DIR's last build

Phases (``--phases``, comma-separated, in this order):

``cold``
    Deletes ``DIR/_build`` (the execution cache ``_build/.jupyter_cache``, the
    results store ``_build/.dpfda_store`` and every output; ``.venv`` and
    ``_vendor`` stay), runs the build command (default ``make book``) in DIR and
    reports its wall time and the execution time of every notebook, from
    jupyter-cache's records (``execution_seconds``, what myst-nb measured) and,
    as a check, from the build's "Executed notebook in … seconds" lines.
``rebuild``
    Changes the text of one markdown cell of ``--chapter`` (a sentence appended
    to its first markdown cell), runs the build command again, reports its wall
    time and which notebooks were executed again, and restores the chapter's
    bytes (also when the build fails or is interrupted).
``report``
    Runs nothing: reports the notebooks in DIR's execution cache.

With ``DIR/_build/.dpfda_store/log.jsonl`` present (a build with the results
store of :mod:`dpfda_book.simulation.store`), the table also counts the store's hits and
misses, and any setting simulated more than once.

It prints Markdown tables and appends nothing anywhere: copy them into
benchmarks/README.md by hand, with the date, the machine and whether it was idle
(the script prints the load average before and after each phase).
The cache's records are read with DIR's own Python (``DIR/.venv/bin/python``,
or ``--python``), so any checkout of the book can be measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

EXECUTED = re.compile(r"(\S+\.ipynb): Executed notebook in ([0-9.]+) seconds")
PRE_EXECUTED = re.compile(r"(\S+\.ipynb): executed in ([0-9.]+) s\b")  # tools/execute_notebooks.py
PRE_EXECUTION = re.compile(r"executed (\d+) of (\d+) notebooks in ([0-9.]+) s")
MARK = "\n\nThis sentence was added by benchmarks/bench_build.py to time a rebuild; it is removed again.\n"

_READ_CACHE = r"""
import json, sys
from jupyter_cache import get_cache
cache = get_cache(sys.argv[1])
out = []
for r in cache.list_cache_records():
    data = r.data or {}
    out.append({"pk": r.pk, "uri": r.uri, "seconds": data.get("execution_seconds")})
print(json.dumps(out))
"""


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def load() -> str:
    try:
        return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        return "n/a"


def cache_records(repo: Path, python: str) -> list[dict]:
    """jupyter-cache's records in ``repo/_build/.jupyter_cache`` (empty if there is none)."""
    path = repo / "_build" / ".jupyter_cache"
    if not path.exists():
        return []
    proc = subprocess.run([python, "-c", _READ_CACHE, str(path)], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def store_log(repo: Path, since: float = 0.0) -> dict | None:
    """Hits, misses and settings simulated more than once, from the results store's log."""
    path = repo / "_build" / ".dpfda_store" / "log.jsonl"
    if not path.exists():
        return None
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r["time"] >= since]
    misses: dict[tuple, int] = {}
    for r in rows:
        if not r["hit"]:
            k = (r["setting"], r["law"], r["reps"], r["seed"])
            misses[k] = misses.get(k, 0) + 1
    return {
        "lookups": len(rows),
        "hits": sum(r["hit"] for r in rows),
        "misses": sum(not r["hit"] for r in rows),
        "simulated_twice": sum(1 for v in misses.values() if v > 1),
        "seconds_simulating": round(sum(r["seconds"] for r in rows if not r["hit"]), 1),
    }


def run(command: str, repo: Path) -> tuple[float, str, int]:
    """Run ``command`` in ``repo`` through the shell, echoing nothing; (wall seconds, output, exit code)."""
    t0 = time.perf_counter()
    proc = subprocess.run(command, shell=True, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    return time.perf_counter() - t0, proc.stdout, proc.returncode


def executed_lines(output: str, repo: Path) -> dict[str, float]:
    out = {}
    for path, sec in EXECUTED.findall(output) + PRE_EXECUTED.findall(output):
        p = Path(path)
        try:
            p = p.resolve().relative_to(repo.resolve())
        except ValueError:
            pass
        out[p.as_posix()] = float(sec)
    return out


def relative(uri: str, repo: Path) -> str:
    try:
        return Path(uri).resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return uri


def notebook_table(records: list[dict], lines: dict[str, float], repo: Path) -> list[str]:
    """One row per executed notebook: seconds from the cache's record and from the build's log."""
    rows = {}
    for r in records:
        rows[relative(r["uri"], repo)] = [r["seconds"], None]
    for nb, sec in lines.items():
        rows.setdefault(nb, [None, None])[1] = sec
    fmt = lambda x: "—" if x is None else f"{x:.1f}"  # noqa: E731
    out = ["| notebook | execution s (cache record) | execution s (build log) |", "|---|---:|---:|"]
    for nb, (a, b) in sorted(rows.items(), key=lambda kv: -(kv[1][0] or kv[1][1] or 0)):
        out.append(f"| {nb} | {fmt(a)} | {fmt(b)} |")
    total_a = sum(v[0] for v in rows.values() if v[0] is not None)
    total_b = sum(v[1] for v in rows.values() if v[1] is not None)
    out.append(f"| **sum ({len(rows)} notebooks)** | **{total_a:.1f}** | **{total_b:.1f}** |")
    return out


def execution_wall(output: str, records: list[dict]) -> tuple[float, str] | None:
    """How long the notebooks' execution took, by the clock, and how it was measured.

    A build that executes the notebooks beforehand, several at a time
    (``tools/execute_notebooks.py``), prints its wall time; a build that executes
    them while Sphinx reads them runs one at a time, so the sum of their times is
    the wall time of that part.
    """
    found = PRE_EXECUTION.findall(output)
    if found:
        done, todo, sec = found[-1]
        return float(sec), f"{done} of {todo} notebooks, executed several at a time by tools/execute_notebooks.py"
    seconds = [r["seconds"] for r in records if r["seconds"] is not None]
    if not seconds:
        return None
    return sum(seconds), f"{len(seconds)} notebooks one after the other: the sum of their times"


def edit_chapter(path: Path) -> bytes:
    """Append a sentence to the first markdown cell of ``path``; return the original bytes."""
    original = path.read_bytes()
    nb = json.loads(original)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            src = cell["source"]
            text = "".join(src) if isinstance(src, list) else src
            cell["source"] = text + MARK
            break
    else:
        raise SystemExit(f"{path}: no markdown cell to edit")
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return original


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1],
                    help="the checkout to build (default: this one)")
    ap.add_argument("--command", default="make book", help="the build command, run in --repo (default: make book)")
    ap.add_argument("--phases", default="cold,rebuild", help="cold, rebuild and/or report, comma-separated")
    ap.add_argument("--chapter", default="book/sim_radius.ipynb", help="the chapter whose prose the rebuild edits")
    ap.add_argument("--python", help="Python with jupyter-cache (default: REPO/.venv/bin/python, else this one)")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args(argv)
    repo = args.repo.resolve()
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    bad = set(phases) - {"cold", "rebuild", "report"}
    if bad or not phases:
        ap.error(f"--phases takes cold, rebuild, report; got {args.phases!r}")
    python = args.python or (str(repo / ".venv" / "bin" / "python") if (repo / ".venv" / "bin" / "python").exists()
                             else sys.executable)
    git = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"# Build benchmark: {repo} at {git.stdout.strip() or '?'}\n")
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"- machine: {machine()}")
    print(f"- command: `{args.command}`\n")
    result: dict = {"repo": str(repo), "commit": git.stdout.strip(), "machine": machine(), "command": args.command}
    status = 0
    for phase in phases:
        before = load()
        start = time.time()
        known = {r["pk"] for r in cache_records(repo, python)}
        print(f"## {phase}\n")
        if phase == "cold":
            build = repo / "_build"
            if build.exists():
                print(f"deleting {build}\n")
                shutil.rmtree(build)
            known = set()
            wall, output, code = run(args.command, repo)
        elif phase == "rebuild":
            chapter = repo / args.chapter
            original = edit_chapter(chapter)
            try:
                wall, output, code = run(args.command, repo)
            finally:
                chapter.write_bytes(original)
            print(f"edited and restored the first markdown cell of {args.chapter}\n")
        else:
            wall, output, code = 0.0, "", 0
            known = set()
        records = [r for r in cache_records(repo, python) if r["pk"] not in known]
        lines = executed_lines(output, repo)
        if code != 0:
            status = 1
            print("The build command failed (exit %d); its last lines:\n\n```\n%s\n```\n"
                  % (code, "\n".join(output.splitlines()[-15:])))
        if phase != "report":
            print(f"- wall time: **{wall:.1f} s** (exit {code})")
            print(f"- load average before: {before}; after: {load()}")
        print(f"- notebooks executed: {len(set(lines) | {relative(r['uri'], repo) for r in records})}\n")
        print("\n".join(notebook_table(records, lines, repo)) + "\n")
        execution = execution_wall(output, records)
        if execution is not None:
            print(f"- notebook execution, wall: **{execution[0]:.1f} s** ({execution[1]})\n")
        st = store_log(repo, since=0.0 if phase == "report" else start)
        if st is not None:
            print("- results store: {lookups} lookups, {hits} hits, {misses} misses, {simulated_twice} settings "
                  "simulated more than once, {seconds_simulating} s simulating\n".format(**st))
        result[phase] = {"wall": wall, "execution_wall": None if execution is None else execution[0],
                         "exit": code, "load_before": before, "load_after": load(),
                         "cache_records": records, "build_log": lines, "store": st}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
