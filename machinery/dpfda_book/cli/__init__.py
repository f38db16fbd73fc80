"""Command line of the book's machinery: ``python -m dpfda_book reproduce {fig1,…,fig6,table1,all}``.

Re-runs the paper's simulation studies (§5 and the appendix) with
:func:`dpfda_book.simulation.schedule.run_studies` and writes, for each study, into ``--out``:

* ``<study>.csv`` — the results table (one row per setting, see
  :func:`dpfda_book.simulation.schedule.run_study`), and ``<study>.json`` — the run's metadata
  (seed, repetitions, CI method, versions, timestamps, wall time);
* ``<study>.png`` — the figure (Figures 1–6);
* for Table 1, ``table1.md`` and ``table1.html`` — the table as in the paper.

Every file records the run it came from: a run id (a random UUID) that all
files of one run share — the ``run_id`` field of the JSON and the last column
of the CSV, the ``dpfda run_id`` text field of the PNG, an HTML comment on the
first line of the Markdown and HTML tables — with the seed, the command and
the start time.

A run's files appear together or not at all: each is written under a
temporary name (``.<name>.<random>.part``) and they are all renamed into place
when the last one is complete; if a rename fails, those done are taken back
and an earlier run's files are restored (``commit_staged``).  An output name
taken by a folder is refused before the run starts.  A study's CSV and figure (or table) are
written as soon as its simulation is done, while the workers run the next
studies; the JSON files, which hold the run's wall time, come last.  While a run writes into a folder it holds a
lock on ``<out>/.dpfda.lock`` (removed at the end); a second run into the
same folder stops at once with exit code 2, so two runs never mix files.

SIGTERM, SIGHUP (a closed terminal or ssh session) and SIGINT (Ctrl-C), at any
moment, end the run with exit code 143, 129 or 130: the worker processes are
terminated, joblib's temporary folders and the temporary files are removed,
and no file of the interrupted run is left under its final name (a run
started under ``nohup`` ignores SIGHUP, as asked).  ``--jobs`` larger than the number of cores available to
the process is reduced to that number, with a message.  Bad input gives a
one-line message on stderr and exit code 2.

``--scheduler ADDRESS`` runs the repetitions on an existing Dask cluster
(``dask scheduler`` and ``dask worker ADDRESS`` started from an environment
with the same dpfda and numpy) instead of local processes, through joblib's
Dask backend; the results are bit-identical to a local run.  An address that
cannot be reached within :data:`SCHEDULER_TIMEOUT` seconds, a cluster without
workers and workers with other versions of dpfda or numpy are reported in one
line with exit code 2.

Releasing a private mean curve from data is the library's command, ``python -m dpfda release``
(:mod:`dpfda.cli`).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import uuid
from collections.abc import Sequence

from dpfda.cli.files import stage_file, text_writer  # noqa: F401 (re-exported)
from dpfda.cli.parsing import Parser, UsageError, integer_option

from ..interrupt import SignalGuard, shutdown_workers
from ..simulation.studies import STUDY_NAMES  # noqa: F401 (re-exported)
from ._outputs import LOCK_NAME, FolderLock  # noqa: F401 (re-exported)
from ._reproduce import QUICK_N, QUICK_REPS, STUDY_CHOICES, run_reproduce, validate_reproduce
from ._scheduler import SCHEDULER_TIMEOUT, available_cores, connect_scheduler  # noqa: F401 (re-exported)

__all__ = ["main", "QUICK_N", "QUICK_REPS", "SCHEDULER_TIMEOUT"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m dpfda_book",
                    description="dpfda_book: reproduce the simulation studies of the FTP vs PTF paper "
                                "(to release a private mean curve from your data: python -m dpfda release).")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    rep = sub.add_parser("reproduce", help="re-run a figure or table of the paper (or all of them)",
                         description="Re-run a figure or table of the paper and write PNG/CSV/JSON files.",
                         epilog="A run's files appear together and record its run id. Exit codes: 0 done; "
                                "2 bad input, or --out in use by another run; 129 after SIGHUP, 130 after "
                                "SIGINT (Ctrl-C), 143 after SIGTERM: an interrupted run leaves none of "
                                "its files.")
    rep.add_argument("study", choices=STUDY_CHOICES, metavar="study",
                     help="which study to run: " + ", ".join(STUDY_CHOICES))
    rep.add_argument("--reps", type=integer_option("--reps"), default=None,
                     help="Monte Carlo repetitions per setting (default 1000; 20 with --quick)")
    rep.add_argument("--jobs", type=integer_option("--jobs"), default=None,
                     help="parallel worker processes (joblib); -1 for all cores; a number above "
                          "the cores available is reduced to it, with a message (default 1)")
    rep.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="run on the workers of an existing Dask scheduler, e.g. "
                          "tcp://10.0.0.5:8786 (needs dask[distributed]; not with --jobs); "
                          "the results are the same as a local run's")
    rep.add_argument("--seed", type=integer_option("--seed"), default=2026,
                     help="master seed, a non-negative integer (default 2026)")
    rep.add_argument("--out", default="results", help="output folder (default ./results)")
    rep.add_argument("--quick", action="store_true",
                     help=f"a small version for tests: n in {list(QUICK_N)} and {QUICK_REPS} repetitions")
    rep.add_argument("--chunk-reps", type=integer_option("--chunk-reps"), default=None,
                     help="repetitions per chunk (default: by memory; results do not depend on it)")
    rep.add_argument("--law", default="default",
                     help="latent law of the curves: default, shift-S or wave-S with S in "
                          "{0, 0.25, 0.5, 0.75, 0.9} (see dpfda_book.simulation.models); default: default")
    rep.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code.

    0 ok, 2 bad input or output folder in use, 129 after SIGHUP, 130 after SIGINT, 143 after
    SIGTERM.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    with SignalGuard() as guard:
        try:
            args = build_parser().parse_args(argv)
            validate_reproduce(args)
            run_id = uuid.uuid4().hex
            with contextlib.ExitStack() as stack:
                client = None
                if args.scheduler is not None:
                    client = stack.enter_context(connect_scheduler(args.scheduler))
                stack.enter_context(FolderLock(args.out, run_id))
                return run_reproduce(args, argv, guard, run_id, client)
        except UsageError as exc:
            print(f"dpfda_book: error: {exc}", file=sys.stderr)
            return 2
        except BaseException as exc:
            if guard.received is None and not isinstance(exc, KeyboardInterrupt):
                if isinstance(exc, OSError):
                    print(f"dpfda_book: error: cannot write output: {exc}", file=sys.stderr)
                    return 2
                raise
            name = signal.Signals(guard.received or signal.SIGINT).name
            print(f"dpfda_book: interrupted by {name}; workers stopped, no file of this run was written",
                  file=sys.stderr)
            return guard.exit_code or 130
        finally:
            shutdown_workers(kill=True)  # whatever happened, leave no worker behind
