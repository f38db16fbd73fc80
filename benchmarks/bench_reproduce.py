"""How fast is ``python -m dpfda_book reproduce all``, against two yardsticks?

Measures, in one run on this machine:

1. **The command.**  ``python -m dpfda_book reproduce all --reps R --jobs J`` in a
   subprocess: wall time, CPU time (user + system of the process and its
   workers), peak resident memory — the largest single process (from
   ``getrusage(RUSAGE_CHILDREN)``) and the largest sum over the whole process
   tree (sampled every 0.1 s).
2. **The random-number floor.**  The full run draws N standard normals (the
   observation noise of every repetition with σ₀ > 0 plus every repetition's
   privacy noise; counted from the studies).  The floor is the time (wall and
   CPU) one process takes to draw N standard normals with the same generator
   (numpy's PCG64 ``Generator.standard_normal`` into a reused buffer), measured
   before and after the command.  No implementation that
   draws those numbers on one core can be faster; with J workers the ideal is
   floor / J.  The cost of building each repetition's own SeedSequence-seeded
   generator (the price of results that are bit-identical for any chunking and
   worker count) is timed separately.
3. **A plain per-curve loop.**  The same algorithms written the obvious way —
   for each repetition, draw X, then fit every curve on its own with the
   package's solver (``BallLeastSquares.solve`` on one curve), average, add the
   noise; clip and sum curve by curve for PTF — timed on every distinct
   (study, T or m, μ, σ₀, B' rule) combination at one sample size and a few
   repetitions, checked against the engine's errors for those repetitions, and
   extrapolated linearly in (curves × repetitions) to the full run.

Usage::

    python benchmarks/bench_reproduce.py                  # R = 1000, J = 2
    python benchmarks/bench_reproduce.py --reps 100       # a shorter look
    python benchmarks/bench_reproduce.py --no-loop        # skip the (slow) per-curve loop
    python benchmarks/bench_reproduce.py --json out.json  # also save the numbers

Every figure is printed with the machine's load average (``os.getloadavg``)
just before and just after it was measured: on a shared machine the floor and
the command compete with other jobs, and the load says how much.  The targets
are reported as ratios to the floor of the same run: CPU time of
the command at most 2.2 floors, wall time at most 1.1 floors (on an idle
two-core machine with ``--jobs 2``).

Exit status 1 if the command fails, takes longer than ``--max-seconds``
(default 180) or uses more than 2 GiB in total at any time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "machinery")]

from dpfda.maths.rounding import fit_rtol  # noqa: E402
from dpfda.maths.summation import gamma  # noqa: E402
from dpfda.mechanisms.pipelines import fitter, ptf_default_clip, ptf_default_weights, ptf_sigmas  # noqa: E402
from dpfda_book.simulation import engine, schedule, seeding  # noqa: E402
from dpfda_book.simulation.models import observe  # noqa: E402
from dpfda_book.simulation.studies import STUDY_NAMES, paper_studies  # noqa: E402

GIB = 2**30


# ---------------------------------------------------------------------------
# Counting the random numbers
# ---------------------------------------------------------------------------


def count_normals(reps: int) -> tuple[int, int, int]:
    """(total normals, observation-noise normals, repetitions) of ``reproduce all``."""
    settings, _ = schedule.plan(list(paper_studies().values()), reps)
    obs = priv = 0
    for s in settings.values():
        if s.sigma0 > 0:
            obs += reps * s.n * s.T
        priv += reps * (s.dim + s.T)
    return obs + priv, obs, reps * len(settings)


def load() -> tuple[float, float, float]:
    """The 1-, 5- and 15-minute load averages, rounded."""
    return tuple(round(x, 2) for x in os.getloadavg())


def measured(fn, *args):
    """(result, load before, load after) of ``fn(*args)``."""
    before = load()
    result = fn(*args)
    return result, before, load()


def rng_floor(total: int, block: int = 1 << 22) -> tuple[float, float]:
    """(wall, CPU) seconds for one process to draw ``total`` standard normals (PCG64).

    On a busy machine the wall time grows with the load while the CPU time
    barely does, so the command's CPU time is compared with the floor's CPU
    time and its wall time with the floor's wall time.
    """
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(1)))
    buf = np.empty(block)
    full, rest = divmod(total, block)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(full):
        rng.standard_normal(out=buf)
    if rest:
        rng.standard_normal(out=buf[:rest])
    return time.perf_counter() - t0, time.process_time() - c0


def generator_cost(samples: int = 20000) -> float:
    """Seconds to build one repetition's generator with numpy's constructor."""
    key = (1, 2, 3, 4)
    t0 = time.perf_counter()
    for r in range(samples):
        seeding.generator(key, 7, r)
    return (time.perf_counter() - t0) / samples


def fast_generator_cost(samples: int = 20000, chunk: int = 25) -> float:
    """Seconds per repetition for the engine's generators (vectorised states, chunks of 25)."""
    key = (1, 2, 3, 4)
    t0 = time.perf_counter()
    for a in range(0, samples, chunk):
        for _ in seeding.rep_generators(key, 7, a, a + chunk):
            pass
    return (time.perf_counter() - t0) / samples


# ---------------------------------------------------------------------------
# The command, with memory sampling
# ---------------------------------------------------------------------------


def _tree_rss(pid: int) -> int:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil comes with dask.distributed
        return 0
    try:
        p = psutil.Process(pid)
        procs = [p] + p.children(recursive=True)
    except psutil.Error:
        return 0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_command(reps: int, jobs: int, out: str) -> dict:
    cmd = [sys.executable, "-m", "dpfda_book", "reproduce", "all", "--reps", str(reps), "--jobs", str(jobs),
           "--out", out, "--no-progress"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "machinery"),
                                                      os.environ.get("PYTHONPATH", "")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "command": " ".join(["python"] + cmd[1:]),
        "returncode": proc.returncode,
        "stderr_tail": stderr.strip().splitlines()[-3:],
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "peak_rss_single_process_bytes": after.ru_maxrss * 1024,  # Linux reports KiB
        "peak_rss_tree_bytes": peak[0],
        "files": sorted(os.listdir(out)) if os.path.isdir(out) else [],
    }


# ---------------------------------------------------------------------------
# The plain per-curve loop
# ---------------------------------------------------------------------------


def loop_repetitions(setting, seed: int, reps: int):
    """Repetitions 0..reps-1 of a setting, one curve at a time (same streams as the engine)."""
    prep = engine.prepare(setting, seed)
    geom = prep.geometry
    d, T, n = geom.dim, setting.T, setting.n
    ftp_fit = fitter(geom)  # prepared once, used on one curve at a time
    ptf_fit = fitter(geom, prep.weights)
    sigma_ftp, sigma_ptf = prep.ftp.sigma(n), prep.ptf.sigma(n)
    errs = []
    for r in range(reps):
        rng = seeding.rep_generator(setting, seed, r)
        X = observe(prep.F, setting.sigma0, rng)
        total = np.zeros(d)
        for i in range(n):
            total += ftp_fit.solve(X[i], setting.radius).coef
        coef_ftp = total / n + sigma_ftp * rng.standard_normal(d)
        clipped = np.zeros(T)
        for i in range(n):
            clipped += np.clip(X[i], -prep.clip, prep.clip)
        xtilde = clipped / n + sigma_ptf * rng.standard_normal(T)
        coef_ptf = ptf_fit.solve(xtilde, setting.radius).coef
        errs.append((geom.error(coef_ftp, prep.target), geom.error(coef_ptf, prep.target)))
    return np.array(errs)


def error_bound(setting, err, coef) -> np.ndarray:
    """How far two computations of one repetition's error may differ (another summation order, another
    BLAS path): each released coordinate vector is within δ = eps·(B + B' + ||ŷ||) of exact, eps the
    setting's fit bound (FTP's fits of curves B·||Φ|| + σ₀(√T + 9) in size, PTF's of means with noise
    σ_j(√T + 9), :func:`dpfda.maths.rounding.fit_rtol` with that data ratio against B') plus the
    running sums' γ_{n+8}; an error ||ŷ − y*||² then moves by 2·sqrt(err)·δ + δ² on each side."""
    geom = setting.geometry()
    z = np.sqrt(geom.T) + 9
    eps = 0.0
    noise = ptf_sigmas(setting.n, ptf_default_clip(geom, setting.radius), setting.mu).max()
    for w, extra in ((np.ones(geom.T), 0.0), (ptf_default_weights(geom), noise)):
        A = geom.Phi.T @ (w[:, None] * geom.Phi)
        size = (setting.B * np.linalg.norm(geom.Phi, 2) + (setting.sigma0 + extra) * z) * np.sqrt(w.max())
        eps = max(eps, fit_rtol(A, geom.T, data_ratio=size / (np.sqrt(np.linalg.norm(A, 2)) * setting.radius)))
    delta = (eps + gamma(setting.n + 8)) * (setting.B + setting.radius + np.linalg.norm(coef, axis=-1))
    return 2 * (2 * np.sqrt(err) * delta + delta**2)


def loop_extrapolation(reps_full: int, n_loop: int, reps_loop: int, seed: int = 3) -> dict:
    """Time the loop per combination at n = n_loop and extrapolate to every setting."""
    settings, _ = schedule.plan(list(paper_studies().values()), reps_full)
    combos: dict = {}
    for s in settings.values():
        key = (s.family, s.T, s.m, s.mu, s.sigma0, s.radius_rule)
        combos.setdefault(key, []).append(s)
    total = 0.0
    measured = 0.0
    worst_rel = worst_bound = 0.0
    for key, group in combos.items():
        probe = next((s for s in group if s.n == n_loop), group[0])
        t0 = time.perf_counter()
        loop = loop_repetitions(probe, seed, reps_loop)
        dt = time.perf_counter() - t0
        measured += dt
        eng = engine.simulate_chunk(probe, seed, 0, reps_loop, keep_releases=True)
        ref = np.column_stack([eng["err_ftp"], eng["err_ptf"]])
        worst_rel = max(worst_rel, float(np.max(np.abs(loop - ref) / np.abs(ref))))
        bound = np.column_stack([error_bound(probe, eng[f"err_{k}"], eng[f"coef_{k}"]) for k in ("ftp", "ptf")])
        worst_bound = max(worst_bound, float(np.max(np.abs(loop - ref) / bound)))
        per_curve_rep = dt / (reps_loop * probe.n)
        total += sum(per_curve_rep * reps_full * s.n for s in group)
    return {"combinations": len(combos), "n_loop": n_loop, "reps_loop": reps_loop,
            "measured_s": measured, "extrapolated_s": total, "max_rel_diff_vs_engine": worst_rel,
            "max_diff_over_bound": worst_bound}


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--loop-n", type=int, default=256, help="sample size of the timed loop runs")
    ap.add_argument("--loop-reps", type=int, default=2, help="repetitions per timed loop run")
    ap.add_argument("--max-seconds", type=float, default=180.0)
    ap.add_argument("--json", help="also write the numbers to this file")
    ap.add_argument("--no-loop", action="store_true", help="skip the plain per-curve loop")
    args = ap.parse_args(argv)

    info = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "loadavg_start": os.getloadavg(),
    }
    total, obs, n_reps = count_normals(args.reps)
    print(f"reproduce all at {args.reps} repetitions: {n_reps:,} setting-repetitions, "
          f"{total:,} standard normals ({obs:,} of them observation noise)", flush=True)

    # The floor is measured just before and just after the command: on a shared machine the
    # load changes from minute to minute, and the two readings (each with the load average
    # before and after it) show by how much.
    print("random-number floor: drawing the same number of normals in one process ...", flush=True)
    (floor_before, cpu_floor_before), lf0, lf1 = measured(rng_floor, total)
    print(f"  before the command: {floor_before:.1f} s wall, {cpu_floor_before:.1f} s CPU "
          f"({total / floor_before / 1e6:.0f} M normals/s), load {lf0[0]:.2f} -> {lf1[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="dpfda-bench-") as tmp:
        out = os.path.join(tmp, "results")
        print(f"running: python -m dpfda_book reproduce all --reps {args.reps} --jobs {args.jobs} ...", flush=True)
        cmd, lc0, lc1 = measured(run_command, args.reps, args.jobs, out)
    print(f"  wall {cmd['wall_s']:.1f} s, CPU {cmd['cpu_s']:.1f} s, peak RSS "
          f"{cmd['peak_rss_tree_bytes'] / GIB:.2f} GiB (process tree), "
          f"{cmd['peak_rss_single_process_bytes'] / GIB:.2f} GiB (largest process); "
          f"exit {cmd['returncode']}, {len(cmd['files'])} files; load {lc0[0]:.2f} -> {lc1[0]:.2f}",
          flush=True)
    (floor_after, cpu_floor_after), la0, la1 = measured(rng_floor, total)
    floor = min(floor_before, floor_after)
    cpu_floor = min(cpu_floor_before, cpu_floor_after)
    gen = generator_cost()
    fast = fast_generator_cost()
    print(f"  floor after the command: {floor_after:.1f} s wall, {cpu_floor_after:.1f} s CPU, "
          f"load {la0[0]:.2f} -> {la1[0]:.2f}; "
          f"per-repetition generators: numpy's constructor {gen * 1e6:.1f} µs each, the engine's "
          f"vectorised states {fast * 1e6:.1f} µs each ({fast * n_reps:.1f} s in all)", flush=True)

    loop = None
    if not args.no_loop:
        print(f"plain per-curve loop: timing each combination at n = {args.loop_n}, "
              f"{args.loop_reps} repetitions ...", flush=True)
        loop = loop_extrapolation(args.reps, args.loop_n, args.loop_reps)
        print(f"  measured {loop['measured_s']:.1f} s over {loop['combinations']} combinations; "
              f"extrapolated to the full run: {loop['extrapolated_s']:.0f} s "
              f"({loop['extrapolated_s'] / 3600:.1f} h); loop vs engine errors agree to "
              f"{loop['max_rel_diff_vs_engine']:.1e} ({loop['max_diff_over_bound']:.2g} of their rounding bound)",
              flush=True)
    info["loadavg_end"] = os.getloadavg()

    result = {
        "info": info, "reps": args.reps, "jobs": args.jobs, "normals": total,
        "observation_normals": obs, "setting_repetitions": n_reps, "command": cmd,
        "rng_floor_s": floor, "rng_floor_before_s": floor_before, "rng_floor_after_s": floor_after,
        "rng_floor_cpu_s": cpu_floor, "rng_floor_cpu_before_s": cpu_floor_before,
        "rng_floor_cpu_after_s": cpu_floor_after,
        "load": {"floor_before": [lf0, lf1], "command": [lc0, lc1], "floor_after": [la0, la1]},
        "generator_s_each": gen, "engine_generator_s_each": fast, "loop": loop,
        "wall_over_floor": cmd["wall_s"] / floor,
        "cpu_over_floor": cmd["cpu_s"] / cpu_floor,
        "cpu_over_jobs_floor": cmd["cpu_s"] / (max(args.jobs, 1) * cpu_floor),
        "wall_over_ideal_parallel_floor": cmd["wall_s"] / (floor / max(args.jobs, 1)),
        "loop_over_wall": loop["extrapolated_s"] / cmd["wall_s"] if loop else None,
    }

    def ld(pair):
        return f"{pair[0][0]:.1f} → {pair[1][0]:.1f}"

    print()
    print("| quantity | value | load (1 min) before → after |")
    print("|---|---:|---:|")
    print(f"| `reproduce all --reps {args.reps} --jobs {args.jobs}`, wall | {cmd['wall_s']:.1f} s | {ld((lc0, lc1))} |")
    print(f"| same, CPU time (all processes) | {cmd['cpu_s']:.1f} s | {ld((lc0, lc1))} |")
    print(f"| random-number floor (1 process), before the command, wall / CPU | {floor_before:.1f} s / "
          f"{cpu_floor_before:.1f} s | {ld((lf0, lf1))} |")
    print(f"| random-number floor (1 process), after the command, wall / CPU | {floor_after:.1f} s / "
          f"{cpu_floor_after:.1f} s | {ld((la0, la1))} |")
    print(f"| **CPU / CPU floor** (target ≤ 2.2) | **{result['cpu_over_floor']:.2f}** | |")
    print(f"| **wall / wall floor** (target ≤ 1.1 on an idle 2-core machine) | **{result['wall_over_floor']:.2f}** | |")
    print(f"| CPU / ({args.jobs} × CPU floor): wall/floor on {args.jobs} idle cores with a perfect split | "
          f"{result['cpu_over_jobs_floor']:.2f} | |")
    print(f"| peak resident memory, whole process tree / largest process | "
          f"{cmd['peak_rss_tree_bytes'] / GIB:.2f} / {cmd['peak_rss_single_process_bytes'] / GIB:.2f} GiB | |")
    print(f"| standard normals drawn | {total / 1e9:.2f} billion | |")
    print(f"| per-repetition generators ({n_reps:,}), engine / numpy's constructor | "
          f"{fast * n_reps:.1f} s / {gen * n_reps:.1f} s CPU | |")
    if loop:
        print(f"| plain per-curve loop, extrapolated | {loop['extrapolated_s']:.0f} s | |")
        print(f"| loop / engine wall | {result['loop_over_wall']:.0f}× | |")
    print(f"| load average (1, 5, 15 min) at start / end | {info['loadavg_start'][0]:.1f}, "
          f"{info['loadavg_start'][1]:.1f}, {info['loadavg_start'][2]:.1f} / {info['loadavg_end'][0]:.1f}, "
          f"{info['loadavg_end'][1]:.1f}, {info['loadavg_end'][2]:.1f} | |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2, default=float)
    expected = {f"{s}.{e}" for s in STUDY_NAMES if s != "table1" for e in ("csv", "json", "png")}
    ok = (cmd["returncode"] == 0 and expected <= set(cmd["files"]) and cmd["wall_s"] <= args.max_seconds
          and cmd["peak_rss_tree_bytes"] <= 2 * GIB)
    if not ok:
        print("FAILED: " + "; ".join(cmd["stderr_tail"]) if cmd["returncode"] else
              "FAILED: time or memory budget exceeded", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
