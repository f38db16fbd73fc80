"""``python -m dpfda_book reproduce``: checks the plan and runs the studies into ``--out``."""

from __future__ import annotations

import datetime as _dt
import signal
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dpfda import __version__
from dpfda.cli.parsing import UsageError

from ..interrupt import SignalGuard, pause_for_test, shutdown_workers
from ..simulation.models import check_law
from ..simulation.schedule import check_memory, run_studies
from ..simulation.studies import PAPER_N, STUDY_NAMES, paper_studies
from ._outputs import (
    check_final_names,
    check_output_dir,
    commit_staged,
    output_names,
    remove_temporaries,
    stage_metadata,
    stage_outputs,
)
from ._scheduler import available_cores

if TYPE_CHECKING:
    import argparse

    import pandas as pd

    from ..simulation.studies import Study

QUICK_N = (4, 16, 64, 256)
"""Sample sizes of ``--quick`` (the paper's run uses 2², 2³, …, 2¹²)."""
QUICK_REPS = 20
"""Default repetitions of ``--quick``."""

STUDY_CHOICES = (*STUDY_NAMES, "all")
"""What ``reproduce`` accepts: a study of the paper (:data:`dpfda_book.simulation.studies.STUDY_NAMES`) or all."""


def validate_reproduce(args: argparse.Namespace) -> None:
    """Check the ``reproduce`` options; a bad one raises UsageError."""
    if args.command != "reproduce":
        raise UsageError("choose a command: reproduce (see python -m dpfda_book --help)")
    if args.reps is None:
        args.reps = QUICK_REPS if args.quick else 1000
    if args.reps <= 0:
        raise UsageError(f"--reps must be a positive integer, got {args.reps}")
    if args.reps < 2:
        raise UsageError("--reps must be at least 2 (standard errors need two repetitions)")
    if args.scheduler is not None:
        if args.jobs is not None:
            raise UsageError("--jobs and --scheduler exclude each other: on a Dask cluster its "
                             "workers do the work")
        if not args.scheduler.strip():
            raise UsageError("--scheduler needs an address such as tcp://127.0.0.1:8786")
    if args.jobs is None:
        args.jobs = 1
    if args.jobs == 0 or args.jobs < -1:
        raise UsageError(f"--jobs must be a positive integer or -1 (all cores), got {args.jobs}")
    if args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    try:
        check_law(args.law)
    except ValueError as exc:
        raise UsageError(f"--law: {exc}") from None
    if args.chunk_reps is not None and args.chunk_reps <= 0:
        raise UsageError(f"--chunk-reps must be a positive integer, got {args.chunk_reps}")
    cores = available_cores()
    if args.scheduler is None and args.jobs > cores:
        print(f"dpfda_book: --jobs {args.jobs} is more than the {cores} cores available; using --jobs {cores}",
              file=sys.stderr)
        args.jobs = cores
    _check_plan(args)
    check_output_dir(args.out)


def _chosen_studies(args: argparse.Namespace) -> list[Study]:
    """The studies a ``reproduce`` command runs (paper sizes, or ``--quick``'s)."""
    studies = paper_studies(QUICK_N if args.quick else PAPER_N, law=args.law)
    names = list(STUDY_NAMES) if args.study == "all" else [args.study]
    return [studies[name] for name in names]


def _check_plan(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, a run whose results or chunks cannot fit in memory.

    The plan is never built for this (:func:`dpfda_book.simulation.schedule.check_memory` counts it), so
    ``--reps 1000000000000`` is refused at once rather than after gigabytes of chunks.
    """
    try:
        check_memory(_chosen_studies(args), args.reps, args.chunk_reps,
                     args.jobs if args.scheduler is None else None, names=("--reps", "--chunk-reps"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run_reproduce(args: argparse.Namespace, argv: Sequence[str], guard: SignalGuard, run_id: str,
                  client: Any = None) -> int:
    """Run the chosen studies and write their files into ``--out``; returns the exit code."""
    import matplotlib

    matplotlib.use("Agg")
    chosen = _chosen_studies(args)
    outputs = [name for st in chosen for name in output_names(st)]
    run = {"run_id": run_id, "command": "python -m dpfda_book " + " ".join(argv), "seed": args.seed,
           "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "dpfda_version": __version__}
    check_final_names(args.out, outputs)
    remove_temporaries(args.out, outputs)  # left by a run that was killed outright (SIGKILL)
    by_name = {st.name: st for st in chosen}
    staged: list[tuple[str, str]] = []

    def on_study(name: str, df: pd.DataFrame) -> None:  # a study is done: draw it while the workers run the next ones
        staged.extend(stage_outputs(by_name[name], df, args.out, run))
        guard.check()

    try:
        t0 = time.perf_counter()
        common: dict[str, Any] = dict(chunk_reps=args.chunk_reps, progress=not args.no_progress, on_chunk=guard.check,
                      on_study=on_study)
        if client is None:
            results = run_studies(chosen, args.reps, args.seed, n_jobs=args.jobs, **common)
        else:
            from joblib import parallel_config

            with parallel_config(backend="dask", client=client):
                results = run_studies(chosen, args.reps, args.seed, n_jobs=None, **common)
        wall = time.perf_counter() - t0
        shutdown_workers(kill=False)
        guard.check()
        extra = {"jobs": args.jobs if client is None else None, "scheduler": args.scheduler,
                 "quick": bool(args.quick), "law": args.law,
                 "wall_seconds_all_studies": round(wall, 3)}
        for st in chosen:
            staged += stage_metadata(st, results[st.name], args.out, extra, run)
            guard.check()
            pause_for_test("writing")  # a no-op unless a test asks for it
        check_final_names(args.out, outputs)  # again: the folder may have changed meanwhile
        with guard.deferred():  # all files appear together: a signal waits for the renames
            commit_staged(staged)
    except BaseException:
        remove_temporaries(args.out, outputs)
        raise
    print(f"dpfda_book: wrote {len(staged)} files to {args.out}, run id {run_id} "
          f"({wall:.1f} s of simulation, figures drawn meanwhile)", file=sys.stderr)
    if guard.received is not None:
        print(f"dpfda_book: {signal.Signals(guard.received).name} came while the files were being "
              "renamed into place; they are complete", file=sys.stderr)
        return guard.exit_code or 0
    return 0
