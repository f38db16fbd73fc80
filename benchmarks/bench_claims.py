"""How long does the claims × laws matrix of book/robustness.ipynb take?

Runs what the chapter runs — :func:`dpfda.report.claims.simulate` over all the laws of
:data:`dpfda.maths.data.LAWS` with ``--draws`` independent latent draws per law (the
repetitions split evenly between them; two engine calls per draw, covering every
law), then the components, the Holm-corrected verdicts and the classification —
at the chapter's sizes, and reports the wall time of each part.  ``--draws 1`` is
the design before the law-level matrix (one draw per law), for comparison.  The
chapter's budget: no slower than the one-draw matrix was, 165–265 s at full size
on two cores.

Usage::

    python benchmarks/bench_claims.py                        # the chapter's full size
    python benchmarks/bench_claims.py --quiet-reps 1000 --noisy-reps 150   # quick mode
    python benchmarks/bench_claims.py --draws 1              # one draw per law
    python benchmarks/bench_claims.py --json out.json

Exit status 1 if the total exceeds ``--max-seconds`` (default 265).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dpfda.maths.data import LAWS  # noqa: E402
from dpfda.report import claims as cl  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quiet-reps", type=int, default=2000, help="repetitions, noiseless studies")
    ap.add_argument("--noisy-reps", type=int, default=300, help="repetitions, noisy studies")
    ap.add_argument("--draws", type=int, default=5, help="latent draws per law (the chapter's K)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--max-seconds", type=float, default=265.0)
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    results = cl.simulate(LAWS, reps_noiseless=args.quiet_reps, reps_noisy=args.noisy_reps, seed=args.seed,
                          draws=args.draws, n_jobs=args.jobs)
    t_sim = time.perf_counter() - t0
    t = time.perf_counter()
    comps = cl.components_table(results)
    matrix = cl.verdict_matrix(cl.verdicts(comps))
    cl.classify(matrix)
    t_eval = time.perf_counter() - t
    total = time.perf_counter() - t0
    out = {"quiet_reps": args.quiet_reps, "noisy_reps": args.noisy_reps, "draws": args.draws, "jobs": args.jobs,
           "simulate_s": t_sim, "evaluate_s": t_eval, "total_s": total, "components": len(comps),
           "cpus": os.cpu_count()}
    print(f"{args.draws} draws per law: simulate {t_sim:.1f} s, evaluate {t_eval:.1f} s ({len(comps)} components), "
          f"total {total:.1f} s (budget {args.max_seconds:.0f} s)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0 if total <= args.max_seconds else 1


if __name__ == "__main__":
    sys.exit(main())
