"""The results store against joblib.Memory: the cost of a miss (write) and a hit (read) per entry.

``dpfda_book.simulation.store`` keeps one small file per (setting, seed, repetitions) entry; the
robustness matrix alone writes some 26,000. ``joblib.Memory`` (already a dependency) would cache
the same function calls. This benchmark stores ``--entries`` entries of the store's real shape
(the five per-repetition arrays of ``store.ARRAYS`` at ``--reps`` repetitions) both ways, in
fresh temporary folders, and reports seconds per entry written, per entry read back, and files
on disk per entry. Each way computes nothing: the cached function returns precomputed arrays,
so only the caching is timed.

Run: ``python benchmarks/bench_store.py [--entries 2000] [--reps 400]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import joblib
import numpy as np

from dpfda_book.simulation import store


def _arrays(i: int, reps: int) -> dict:
    rng = np.random.default_rng(np.random.SeedSequence([i]))
    return {"err_ftp": rng.random(reps), "err_ptf": rng.random(reps),
            "ftp_any_active": rng.random(reps) < 0.5, "ftp_frac_active": rng.random(reps),
            "ptf_active": rng.random(reps) < 0.5}


def _files(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=400)
    args = parser.parse_args()
    data = [_arrays(i, args.reps) for i in range(args.entries)]
    keys = [json.dumps({"setting": i, "reps": args.reps, "seed": 7}) for i in range(args.entries)]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "store"
        start = time.perf_counter()
        for key, arrays in zip(keys, data):
            store.save(folder, key, arrays)
        write = time.perf_counter() - start
        start = time.perf_counter()
        back = [store.load(folder, key, args.reps) for key in keys]
        read = time.perf_counter() - start
        assert all(b is not None and np.array_equal(b["err_ftp"], d["err_ftp"]) for b, d in zip(back, data))
        out["dpfda store"] = (write, read, _files(folder))

        memory = joblib.Memory(Path(tmp) / "joblib", verbose=0)

        @memory.cache
        def simulate(key: str, i: int) -> dict:
            return data[i]

        start = time.perf_counter()
        for i, key in enumerate(keys):
            simulate(key, i)
        write = time.perf_counter() - start
        start = time.perf_counter()
        back = [simulate(key, i) for i, key in enumerate(keys)]
        read = time.perf_counter() - start
        assert all(np.array_equal(b["err_ftp"], d["err_ftp"]) for b, d in zip(back, data))
        out["joblib.Memory"] = (write, read, _files(Path(tmp) / "joblib"))
    print(f"{args.entries} entries of {args.reps} repetitions")
    print("| cache | write ms/entry | read ms/entry | files/entry |")
    print("|---|---:|---:|---:|")
    for name, (write, read, files) in out.items():
        print(f"| {name} | {1e3 * write / args.entries:.3f} | {1e3 * read / args.entries:.3f} | "
              f"{files / args.entries:.2f} |")


if __name__ == "__main__":
    main()
