"""Command line: ``python -m dpfda reproduce {fig1,…,fig6,table1,all}``.

Re-runs the paper's simulation studies (§5 and the appendix) with
:func:`dpfda.engine.run_studies` and writes, for each study, into ``--out``:

* ``<study>.csv`` — the results table (one row per setting, see
  :func:`dpfda.engine.run_study`), and ``<study>.json`` — the run's metadata
  (seed, repetitions, CI method, versions, timestamps, wall time);
* ``<study>.png`` — the figure (Figures 1–6);
* for Table 1, ``table1.md`` and ``table1.html`` — the table as in the paper.

Every file is written under a temporary name and renamed when complete, so an
interrupted run never leaves a file that looks complete.  Bad input gives a
one-line message on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

__all__ = ["main", "QUICK_N", "QUICK_REPS"]

QUICK_N = (4, 16, 64, 256)
"""Sample sizes of ``--quick`` (the paper's run uses 2², 2³, …, 2¹²)."""
QUICK_REPS = 20
"""Default repetitions of ``--quick``."""

STUDY_CHOICES = ("fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table1", "all")


class UsageError(Exception):
    """Bad command-line input: reported in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2, no usage dump
        raise UsageError(message)


def _positive_int(name):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dpfda",
                     description="dpfda: reproduce the simulation studies of the FTP vs PTF paper.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    rep = sub.add_parser("reproduce", help="re-run a figure or table of the paper (or all of them)",
                         description="Re-run a figure or table of the paper and write PNG/CSV/JSON files.")
    rep.add_argument("study", choices=STUDY_CHOICES, metavar="study",
                     help="which study to run: " + ", ".join(STUDY_CHOICES))
    rep.add_argument("--reps", type=_positive_int("--reps"), default=None,
                     help="Monte Carlo repetitions per setting (default 1000; 20 with --quick)")
    rep.add_argument("--jobs", type=_positive_int("--jobs"), default=1,
                     help="parallel worker processes (joblib); -1 for all cores (default 1)")
    rep.add_argument("--seed", type=_positive_int("--seed"), default=2026,
                     help="master seed, a non-negative integer (default 2026)")
    rep.add_argument("--out", default="results", help="output folder (default ./results)")
    rep.add_argument("--quick", action="store_true",
                     help=f"a small version for tests: n in {list(QUICK_N)} and {QUICK_REPS} repetitions")
    rep.add_argument("--chunk-reps", type=_positive_int("--chunk-reps"), default=None,
                     help="repetitions per chunk (default: by memory; results do not depend on it)")
    rep.add_argument("--law", default="default",
                     help="latent law of the curves: default, shift-S or wave-S with S in "
                          "{0, 0.25, 0.5, 0.75, 0.9} (see dpfda.data); default: default")
    rep.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def _validate(args) -> None:
    if args.command != "reproduce":
        raise UsageError("choose a command: reproduce (see python -m dpfda --help)")
    if args.reps is None:
        args.reps = QUICK_REPS if args.quick else 1000
    if args.reps <= 0:
        raise UsageError(f"--reps must be a positive integer, got {args.reps}")
    if args.reps < 2:
        raise UsageError("--reps must be at least 2 (standard errors need two repetitions)")
    if args.jobs == 0 or args.jobs < -1:
        raise UsageError(f"--jobs must be a positive integer or -1 (all cores), got {args.jobs}")
    if args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    from .data import check_law

    try:
        check_law(args.law)
    except ValueError as exc:
        raise UsageError(f"--law: {exc}") from None
    if args.chunk_reps is not None and args.chunk_reps <= 0:
        raise UsageError(f"--chunk-reps must be a positive integer, got {args.chunk_reps}")
    _check_output_dir(args.out)


def _check_output_dir(out: str) -> None:
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out!r} exists and is not a folder")
    try:
        os.makedirs(out, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".dpfda-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"cannot write to --out {out!r}: {exc.strerror or exc}") from None


def _write_outputs(study, df, out: str, extra_meta: dict) -> list[str]:
    from . import plots

    written = []
    base = os.path.join(out, study.name)
    plots.write_text_atomic(base + ".csv", df.to_csv(index=False))
    written.append(base + ".csv")
    meta = dict(df.attrs.get("dpfda", {}))
    meta.update(extra_meta)
    meta["columns"] = list(df.columns)
    meta["caption"] = plots.caption(df)
    plots.write_text_atomic(base + ".json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
    written.append(base + ".json")
    if study.kind == "table":
        table = plots.table1(df)
        plots.write_text_atomic(base + ".md", plots.table_markdown(table))
        plots.write_text_atomic(base + ".html", table.to_html(index=False, float_format=lambda v: f"{v:.4g}"))
        written += [base + ".md", base + ".html"]
    else:
        import matplotlib.pyplot as plt

        fig = plots.figure(df, study, title=f"{study.source}: {study.title}")
        try:
            plots.save_figure(fig, base + ".png")
        finally:
            plt.close(fig)
        written.append(base + ".png")
    return written


def _reproduce(args, argv) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from .engine import run_studies
    from .studies import PAPER_N, STUDY_NAMES, paper_studies

    n_values = QUICK_N if args.quick else PAPER_N
    studies = paper_studies(n_values, law=args.law)
    names = list(STUDY_NAMES) if args.study == "all" else [args.study]
    chosen = [studies[name] for name in names]
    t0 = time.perf_counter()
    results = run_studies(chosen, args.reps, args.seed, n_jobs=args.jobs, chunk_reps=args.chunk_reps,
                          progress=not args.no_progress)
    wall = time.perf_counter() - t0
    extra = {"command": "python -m dpfda " + " ".join(argv),
             "jobs": args.jobs, "quick": bool(args.quick), "law": args.law,
             "wall_seconds_all_studies": round(wall, 3)}
    written = []
    for st in chosen:
        written += _write_outputs(st, results[st.name], args.out, extra)
    print(f"dpfda: wrote {len(written)} files to {args.out} ({wall:.1f} s of simulation)", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    """Entry point; returns the exit code (0 ok, 2 bad input, 130 interrupted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        _validate(args)
    except UsageError as exc:
        print(f"dpfda: error: {exc}", file=sys.stderr)
        return 2
    try:
        return _reproduce(args, argv)
    except KeyboardInterrupt:
        print("dpfda: interrupted; files not yet complete were not written", file=sys.stderr)
        return 130
    except OSError as exc:
        print(f"dpfda: error: cannot write output: {exc}", file=sys.stderr)
        return 2
