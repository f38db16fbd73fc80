"""The off-grid residual of an RKHS FTP release: cost per call as the calls add up.

An RKHS FTP release evaluated off its grid draws a Gaussian-process residual there,
conditioned on every residual value it has drawn before (``Release.__call__``).  Up
to dpfda 0.1.1 each call with new points eigendecomposed K over the grid and every
point evaluated so far, so the k-th call cost O((T + all earlier points)³): about
56 s and 1 GB at ~6,500 points (#19 defect 9).  Now the residual is a pivoted
Cholesky factor kept between calls: a call costs O(k²s + s²k + b·k·s) for s new
points and k pivots, k at most T + ``RESIDUAL_POINTS``.

For each kernel the script makes one release and calls it ``--calls`` times, each
time at ``--points`` fresh random points, and prints the seconds of every call, the
pivots of the factor and the points drawn.  A smooth kernel (Gaussian) keeps few
pivots, so the calls cost the same however many came before; a rough one (Brownian
motion) makes every point a pivot, so the cost grows with the points drawn, up to
the cap, where the next call is refused.

Usage::

    python benchmarks/bench_residual.py                  # 20 calls of 100 points, T = 8
    python benchmarks/bench_residual.py --calls 5 --points 50

Exit status 1 if, for the Gaussian kernel, the slowest of the last five calls
takes more than ``--max-growth`` (default 5) times the slowest of the first three:
a call's cost must not depend on the calls before it.  Not part of the pytest
suite (tests/test_benchmarks.py runs it at toy size with the check off).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpfda import KernelSpace, brownian_kernel, ftp, gaussian_kernel, uniform_grid  # noqa: E402
from dpfda.mechanisms.release import RESIDUAL_POINTS  # noqa: E402


def run(space, grid, calls: int, points: int, seed: int):
    warm = ftp(np.zeros((10, grid.size)), grid, space, 1.0, 1.0, np.random.default_rng(seed))
    warm(np.array([0.123]))  # imports scipy's LAPACK wrappers outside the timed calls
    rel = ftp(np.zeros((10, grid.size)), grid, space, 1.0, 1.0, np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    rows = []
    for k in range(calls):
        t = rng.random(points)
        start = time.perf_counter()
        try:
            rel(t)
        except ValueError as exc:
            rows.append((k + 1, float("nan"), rel._residual.pivots.size, rel._residual.drawn,
                         f"refused: {str(exc)[:60]}..."))
            break
        rows.append((k + 1, time.perf_counter() - start, rel._residual.pivots.size,
                     rel._residual.drawn, ""))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--points", type=int, default=100, help="fresh points per call")
    parser.add_argument("--T", type=int, default=8, help="grid points (the Gaussian kernel needs few: A.4)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--max-growth", type=float, default=5.0,
                        help="largest allowed ratio, Gaussian kernel: late calls / early calls (0: no check)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"RESIDUAL_POINTS = {RESIDUAL_POINTS}; load average {load:.2f}; {args.calls} calls of "
          f"{args.points} fresh points, T = {args.T}\n")
    grid = uniform_grid(args.T)
    cases = {"Gaussian kernel rho=0.2": (KernelSpace(gaussian_kernel(0.2)), grid),
             "Brownian motion": (KernelSpace(brownian_kernel()), grid[grid > 0])}
    verdict = 0
    for name, (space, g) in cases.items():
        rows = run(space, g, args.calls, args.points, args.seed)
        print(f"### {name}\n\n| call | seconds | pivots | points drawn | note |\n|---|---|---|---|---|")
        for k, sec, piv, drawn, note in rows:
            print(f"| {k} | {sec:.4f} | {piv} | {drawn} | {note} |")
        print()
        timed = [r for r in rows if not r[4]]
        if name.startswith("Gaussian") and args.max_growth > 0 and len(timed) >= 8:
            early = max(r[1] for r in timed[:3])
            late = max(r[1] for r in timed[-5:])
            ratio = late / early
            print(f"late/early = {ratio:.2f} (limit {args.max_growth:g})\n")
            if not ratio <= args.max_growth:
                verdict = 1
    return verdict


if __name__ == "__main__":
    sys.exit(main())
