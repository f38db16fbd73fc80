"""How long does the claims × laws matrix of book/robustness.ipynb take?

Runs what the chapter runs — the pilot (:func:`dpfda_book.report.law_runs.pilot_needs` on
10 draws of every study at n = 4, default law), then
:func:`dpfda_book.report.claims.simulate_draws` over all the laws of
:data:`dpfda_book.simulation.models.LAWS` with ``--draws`` independent latent draws per law (the
repetitions split evenly between them; two engine calls per draw, covering every
law) and their pooling, then the components (standard errors draw by draw, Student's t
on K − 1 df), the Holm-corrected verdicts and the classification, then the test of the
test (:mod:`dpfda_book.report.law_null`: the matrix's procedure on ``--null-reps`` replicated
matrices of each of two worlds, the earlier design on ``--null-reps-earlier``) — at the
chapter's sizes, and reports the wall time of each part.  ``--draws 5`` is the earlier
design, for a paired comparison.

The random-number floor: the time one process takes to draw the matrix's standard
normals (observation noise of every repetition with σ₀ > 0 and every
repetition's privacy noise, counted from the studies), measured after the run
with ``bench_reproduce.rng_floor``; the simulation's wall time is reported as a
ratio to it.  The laws of a setting share their noise (common random numbers, drawn
once), so two floors are printed: that of the normals drawn, and that of a design
drawing independent noise for every law (the earlier design; target: simulation wall
at most 1.5 of it on an idle two-core machine).

Usage::

    python benchmarks/bench_claims.py                        # the chapter's full size
    python benchmarks/bench_claims.py --quiet-reps 1000 --noisy-reps 150   # quick mode
    python benchmarks/bench_claims.py --draws 5              # the earlier design
    python benchmarks/bench_claims.py --json out.json

Exit status 1 if the total exceeds ``--max-seconds`` (default 265).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.bench_reproduce import rng_floor  # noqa: E402
from dpfda_book.report import claims as cl  # noqa: E402
from dpfda_book.simulation import schedule  # noqa: E402
from dpfda_book.simulation.models import LAWS  # noqa: E402
from dpfda_book.simulation.studies import paper_studies  # noqa: E402


def cpu_seconds() -> dict:
    """CPU seconds (user + system) of this process and of each of its live descendants, by pid.

    joblib's workers live on between calls, so their CPU time is read from /proc while they
    run (psutil), not from ``getrusage``; on a shared machine CPU time, unlike wall time,
    barely moves with the load.
    """
    import psutil

    me = psutil.Process()
    out = {}
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            out[p.pid] = t.user + t.system
        except psutil.Error:
            pass
    return out


def cpu_since(before: dict) -> float:
    now = cpu_seconds()
    return sum(v - before.get(pid, 0.0) for pid, v in now.items())


def count_normals(quiet_reps: int, noisy_reps: int, draws: int, *, shared: bool = True) -> int:
    """Standard normals of the matrix's observation and privacy noise, every law and draw.

    ``shared``: what the engine draws, once for all the laws of a setting (they share
    their streams: common random numbers); ``shared=False``: what a design with
    independent noise for every law would draw (the earlier design's floor).
    """
    total = 0
    for reps, noisy in ((quiet_reps // draws, False), (noisy_reps // draws, True)):
        studies = [st for law in LAWS for k, st in paper_studies(law=law).items()
                   if (k in cl.NOISELESS_STUDIES) != noisy]
        settings, _ = schedule.plan(studies, reps)
        drawn = {(s.stream_canonical() if shared else s.canonical()): s for s in settings.values()}
        for s in drawn.values():
            total += draws * reps * ((s.n * s.T if s.sigma0 > 0 else 0) + s.dim + s.T)
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quiet-reps", type=int, default=2000, help="repetitions, noiseless studies")
    ap.add_argument("--noisy-reps", type=int, default=300, help="repetitions, noisy studies")
    ap.add_argument("--draws", type=int, default=20, help="latent draws per law (the chapter's K)")
    ap.add_argument("--no-pilot", action="store_true", help="skip the chapter's pilot")
    ap.add_argument("--no-floor", action="store_true", help="skip the random-number floor")
    ap.add_argument("--null-reps", type=int, default=500, help="replicated matrices, the matrix's procedure")
    ap.add_argument("--null-reps-earlier", type=int, default=2000, help="replicated matrices, the earlier design")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--max-seconds", type=float, default=265.0)
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    if not args.no_pilot:
        pilot = cl.simulate_draws(["default"], reps_noiseless=10 * (args.quiet_reps // 10), seed=args.seed + 1,
                                  reps_noisy=10 * (args.noisy_reps // 5), draws=10, n=[4],
                                  n_jobs=args.jobs)["default"]
        cl.pilot_needs(pilot, reps_noiseless=args.quiet_reps, reps_noisy=args.noisy_reps)
    t_pilot = time.perf_counter() - t0
    t, c = time.perf_counter(), cpu_seconds()
    draws = cl.simulate_draws(LAWS, reps_noiseless=args.quiet_reps, reps_noisy=args.noisy_reps, seed=args.seed,
                              draws=args.draws, n_jobs=args.jobs)
    cl.pool(draws)  # the law-level tables, as cl.simulate gives them
    t_sim, cpu_sim = time.perf_counter() - t, cpu_since(c)
    t = time.perf_counter()
    forms = cl.compile_forms(draws)
    stats, _ = cl.draw_stats(draws)
    comps = cl.components_from_draws(draws, forms=forms, stats=stats)
    matrix = cl.verdict_matrix(cl.verdicts(comps))
    cl.classify(matrix)
    t_eval = time.perf_counter() - t
    t_null, null_rates = 0.0, None
    if args.draws >= 5 and args.null_reps > 0:
        t = time.perf_counter()
        rng = np.random.default_rng(np.random.SeedSequence([args.seed, 47]))
        runs = {}
        for world in ("ptf-self", "draws"):
            w = cl.null_world(draws, world, forms=forms, stats=stats)
            for p, reps in ((cl.Procedure(args.draws, "t", "paired"), args.null_reps),
                            (cl.Procedure(5, "normal", "root-sum-square"),
                             args.null_reps_earlier if world == "ptf-self" else args.null_reps)):
                runs[world, p.label] = cl.replicate_errors(w, p, reps, rng)
        t_null = time.perf_counter() - t
        null_rates = cl.error_rates(runs)
    total = time.perf_counter() - t0
    out = {"quiet_reps": args.quiet_reps, "noisy_reps": args.noisy_reps, "draws": args.draws, "jobs": args.jobs,
           "pilot_s": t_pilot, "simulate_s": t_sim, "simulate_cpu_s": cpu_sim, "evaluate_s": t_eval,
           "null_s": t_null, "total_s": total, "components": len(comps), "cpus": os.cpu_count(),
           "load": os.getloadavg()}
    print(f"{args.draws} draws per law: pilot {t_pilot:.1f} s, simulate {t_sim:.1f} s ({cpu_sim:.1f} s CPU), "
          f"evaluate {t_eval:.1f} s ({len(comps)} components), test of the test {t_null:.1f} s, "
          f"total {total:.1f} s (budget {args.max_seconds:.0f} s)")
    if null_rates is not None:  # what the test of the test found
        print(null_rates[["reps", "fwer", "fwer_se", "false", "sign", "wrong_verdict"]].to_string())
    if not args.no_floor:
        normals = count_normals(args.quiet_reps, args.noisy_reps, args.draws)
        independent = count_normals(args.quiet_reps, args.noisy_reps, args.draws, shared=False)
        floor, cpu_floor = rng_floor(normals)
        scale = independent / normals  # the same generator's rate, for the normals of independent laws
        out.update(normals=normals, rng_floor_s=floor, rng_floor_cpu_s=cpu_floor, simulate_over_floor=t_sim / floor,
                   simulate_cpu_over_floor_cpu=cpu_sim / cpu_floor, normals_independent=independent,
                   rng_floor_independent_s=floor * scale,
                   simulate_over_independent_floor=t_sim / (floor * scale))
        print(f"random-number floor: {normals / 1e9:.2f} billion normals drawn in {floor:.1f} s "
              f"({cpu_floor:.1f} s CPU); simulate / floor = {t_sim / floor:.2f} wall, {cpu_sim / cpu_floor:.2f} CPU")
        print(f"floor of independent noise per law: {independent / 1e9:.2f} billion normals, {floor * scale:.1f} s; "
              f"simulate / that floor = {t_sim / (floor * scale):.2f} wall")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0 if total <= args.max_seconds else 1


if __name__ == "__main__":
    sys.exit(main())
