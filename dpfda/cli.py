"""Command line: ``python -m dpfda reproduce {fig1,…,fig6,table1,all}`` and ``python -m dpfda release``.

Re-runs the paper's simulation studies (§5 and the appendix) with
:func:`dpfda.simulation.schedule.run_studies` and writes, for each study, into ``--out``:

* ``<study>.csv`` — the results table (one row per setting, see
  :func:`dpfda.simulation.schedule.run_study`), and ``<study>.json`` — the run's metadata
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
and an earlier run's files are restored (``_commit``).  An output name
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

``python -m dpfda release DATA.csv --grid … --space … --radius … --mu … --out
release.json`` releases one private mean curve of the curves in ``DATA.csv``
(wide or long form, :func:`dpfda.practice.publish.read_curves`) with FTP, or PTF with
``--method ptf [--clip …]``, and writes the curve on a public evaluation grid
with every public parameter (:func:`dpfda.practice.publish.release_record`) as JSON.
The noise comes from OpenDP (``secure=True``); ``--insecure-numpy-noise``
uses numpy's generator instead, for teaching only.  Every choice is given on
the command line, none is read from the data: the CSV's grid must be the
``--grid`` given.  Bad input (a missing value, a grid that differs, a subject id
on two rows without ``--combine mean``, …) gives one line on stderr and exit
code 2; ``--out`` is never overwritten (a second release of the same data
spends the budget again).  Every public choice is checked, and the mechanism
built, before the data are read; the noise is drawn once, last, before the
record is written.  After writing, the curator's diagnostics
(:func:`dpfda.practice.publish.curator_diagnostics`: values clipped, fits shrunk
onto the ball, the data's range against the band) go to stderr: they are
computed from the data without noise, are not private and must not be published.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import glob
import json
import logging
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from decimal import Decimal, InvalidOperation

import numpy as np

from ._interrupt import SignalGuard, pause_for_test, shutdown_workers
from ._version import __version__
from .maths.data import check_law
from .maths.spaces import FourierSpace, KernelSpace, LegendreSpace, brownian_kernel, gaussian_kernel
from .mechanisms.bands import plot_band
from .mechanisms.mechanism import ftp_mechanism, ptf_mechanism
from .practice.examples import EXAMPLES, write_example
from .practice.publish import (
    CLIP_WARNING_SHARE,
    COMBINE,
    SHRINK_WARNING_SHARE,
    curator_diagnostics,
    diagnostics_text,
    evaluation_points,
    read_curves,
    release_record,
)
from .practice.realdata import Domain, PublicFrame
from .simulation.schedule import check_memory, run_studies
from .simulation.studies import PAPER_N, STUDY_NAMES, layout_of, paper_studies

__all__ = ["main", "QUICK_N", "QUICK_REPS", "SCHEDULER_TIMEOUT"]

QUICK_N = (4, 16, 64, 256)
"""Sample sizes of ``--quick`` (the paper's run uses 2², 2³, …, 2¹²)."""
QUICK_REPS = 20
"""Default repetitions of ``--quick``."""

SCHEDULER_TIMEOUT = 5.0
"""Seconds ``--scheduler`` waits to connect to the scheduler, and then for a worker."""

STUDY_CHOICES = (*STUDY_NAMES, "all")
"""What ``reproduce`` accepts: a study of the paper (:data:`dpfda.simulation.studies.STUDY_NAMES`) or all."""


class UsageError(Exception):
    """Bad command-line input: reported in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2, no usage dump
        raise UsageError(message)


def _integer(name):
    """A parser of integer arguments (the sign is checked by :func:`_validate`, per option)."""

    def parse(text):
        try:
            return int(text)
        except ValueError:
            pass
        try:  # 1e9, 2.5e3: a whole number in scientific notation
            value = Decimal(text.strip())
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value != value.to_integral_value():
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value.adjusted() > 30:
            raise argparse.ArgumentTypeError(f"{name} is far too large, got {text!r}")
        return int(value)
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m dpfda",
                     description="dpfda: release a private mean curve from your data, or reproduce the "
                                 "simulation studies of the FTP vs PTF paper.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    rep = sub.add_parser("reproduce", help="re-run a figure or table of the paper (or all of them)",
                         description="Re-run a figure or table of the paper and write PNG/CSV/JSON files.",
                         epilog="A run's files appear together and record its run id. Exit codes: 0 done; "
                                "2 bad input, or --out in use by another run; 129 after SIGHUP, 130 after "
                                "SIGINT (Ctrl-C), 143 after SIGTERM: an interrupted run leaves none of "
                                "its files.")
    rep.add_argument("study", choices=STUDY_CHOICES, metavar="study",
                     help="which study to run: " + ", ".join(STUDY_CHOICES))
    rep.add_argument("--reps", type=_integer("--reps"), default=None,
                     help="Monte Carlo repetitions per setting (default 1000; 20 with --quick)")
    rep.add_argument("--jobs", type=_integer("--jobs"), default=None,
                     help="parallel worker processes (joblib); -1 for all cores; a number above "
                          "the cores available is reduced to it, with a message (default 1)")
    rep.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="run on the workers of an existing Dask scheduler, e.g. "
                          "tcp://10.0.0.5:8786 (needs dask[distributed]; not with --jobs); "
                          "the results are the same as a local run's")
    rep.add_argument("--seed", type=_integer("--seed"), default=2026,
                     help="master seed, a non-negative integer (default 2026)")
    rep.add_argument("--out", default="results", help="output folder (default ./results)")
    rep.add_argument("--quick", action="store_true",
                     help=f"a small version for tests: n in {list(QUICK_N)} and {QUICK_REPS} repetitions")
    rep.add_argument("--chunk-reps", type=_integer("--chunk-reps"), default=None,
                     help="repetitions per chunk (default: by memory; results do not depend on it)")
    rep.add_argument("--law", default="default",
                     help="latent law of the curves: default, shift-S or wave-S with S in "
                          "{0, 0.25, 0.5, 0.75, 0.9} (see dpfda.maths.data); default: default")
    rep.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _add_release_parser(sub)
    _add_example_parser(sub)
    return parser


def _validate(args) -> None:
    if args.command != "reproduce":
        raise UsageError("choose a command: reproduce or release (see python -m dpfda --help)")
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
        print(f"dpfda: --jobs {args.jobs} is more than the {cores} cores available; using --jobs {cores}",
              file=sys.stderr)
        args.jobs = cores
    _check_plan(args)
    _check_output_dir(args.out)


def _chosen_studies(args) -> list:
    """The studies a ``reproduce`` command runs (paper sizes, or ``--quick``'s)."""
    studies = paper_studies(QUICK_N if args.quick else PAPER_N, law=args.law)
    names = list(STUDY_NAMES) if args.study == "all" else [args.study]
    return [studies[name] for name in names]


def _check_plan(args) -> None:
    """Refuse, before anything runs, a run whose results or chunks cannot fit in memory.

    The plan is never built for this (:func:`dpfda.simulation.schedule.check_memory` counts it), so
    ``--reps 1000000000000`` is refused at once rather than after gigabytes of chunks.
    """
    try:
        check_memory(_chosen_studies(args), args.reps, args.chunk_reps,
                     args.jobs if args.scheduler is None else None, names=("--reps", "--chunk-reps"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _worker_versions() -> tuple[str, str]:
    """(dpfda, numpy) versions of the process that runs it (sent to Dask workers)."""
    return __version__, np.__version__


def connect_scheduler(address: str, timeout: float = SCHEDULER_TIMEOUT):
    """A ``distributed.Client`` on the scheduler at ``address``, ready to run a study.

    Raises :class:`UsageError` (one line, exit code 2) when the address is not
    of the form ``[tcp://|tls://]HOST:PORT``, dask.distributed is missing, the
    address cannot be reached within ``timeout`` seconds (at once if the
    connection is refused) or no Dask server answers there, no worker joins
    within ``timeout`` seconds, or a worker runs other versions of dpfda or
    numpy than this process (the results would no longer be those of a local
    run).
    """
    text = address.strip()
    match = re.fullmatch(r"(?:(tcp|tls)://)?\[?([^\s/\[\]]+?)\]?:(\d{1,5})", text)
    if match is None or not 0 < int(match.group(3)) < 65536:
        raise UsageError(f"--scheduler must be a scheduler's address such as tcp://HOST:8786, "
                         f"got {address!r}")
    host, port = match.group(2), int(match.group(3))
    try:  # a plain TCP connection first: a refused or unreachable address fails at once
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise UsageError(f"--scheduler {text!r}: cannot connect ({reason})") from None
    try:
        import distributed
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install 'dpfda[dask]'") from None
    import asyncio

    # A failure is reported in our one line; distributed's own log lines are not needed.
    logging.getLogger("distributed").setLevel(logging.CRITICAL)

    async def handshake():  # distributed's own, without a Client that would linger on failure
        comm = await distributed.comm.connect(text, timeout=timeout)
        await comm.close()

    async def handshake_within_timeout():  # a server that accepts and stays silent must not hang us
        await asyncio.wait_for(handshake(), timeout)

    try:
        asyncio.run(handshake_within_timeout())
        client = distributed.Client(text, timeout=timeout, set_as_default=False)
    except Exception as exc:  # timed out, or something other than Dask listens there
        reason = " ".join(str(exc).split())[:160]
        reason = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
        raise UsageError(f"--scheduler {text!r}: no Dask scheduler answered within {timeout:g} s "
                         f"({reason})") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise UsageError(f"--scheduler {text!r}: no worker joined the scheduler within "
                             f"{timeout:g} s (start one with: dask worker {text})") from None
        mine = _worker_versions()
        try:
            theirs = client.run(_worker_versions)
        except Exception as exc:  # e.g. ModuleNotFoundError: dpfda is not installed on a worker
            raise UsageError(f"--scheduler {text!r}: the workers cannot run dpfda "
                             f"({type(exc).__name__}: {exc}); install it where they run") from None
        other = {w: v for w, v in theirs.items() if tuple(v) != mine}
        if other:
            worker, (dv, nv) = next(iter(other.items()))
            raise UsageError(f"--scheduler {text!r}: worker {worker} runs dpfda {dv} with numpy {nv}, "
                             f"this process dpfda {mine[0]} with numpy {mine[1]}; use the same versions "
                             "(the results depend on them)")
    except BaseException:
        client.close()
        raise
    return client


def available_cores() -> int:
    """Cores this process may use (CPU affinity and cgroup quota).

    Counted as joblib counts them for ``n_jobs=-1``.
    """
    from joblib import cpu_count

    return max(1, int(cpu_count()))


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


LOCK_NAME = ".dpfda.lock"
"""The lock file a run holds in its output folder (not an output; removed at the end)."""


class _FolderLock:
    """An exclusive ``flock`` on ``<out>/.dpfda.lock`` for the length of a run.

    Taken without waiting: if another process holds it, :class:`UsageError`.
    The file is removed when the run ends; a run that finds the file removed
    under it (by the run that held it before) takes the lock again on a new one.
    """

    def __init__(self, out: str, run_id: str):
        self.path = os.path.join(out, LOCK_NAME)
        self.out = out
        self.run_id = run_id
        self.fd: int | None = None

    def __enter__(self) -> "_FolderLock":
        import fcntl

        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip()
                os.close(fd)
                by = f" ({holder})" if holder else ""
                raise UsageError(f"--out {self.out!r} is in use by another dpfda run{by}; "
                                 "wait for it to finish or choose another folder") from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous holder removed the file as we opened it: start again
        self.fd = fd
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, run {self.run_id}\n".encode())
        return self

    def __exit__(self, *exc) -> None:
        try:
            os.unlink(self.path)  # while still holding the lock
        except OSError:
            pass
        if self.fd is not None:
            os.close(self.fd)


# ---------------------------------------------------------------------------
# Atomic writes: a file either is complete or does not exist under its name
# ---------------------------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temporary_prefix(path) -> str:
    """Temporary files for ``path`` are named ``.<name>.<random>.part`` beside it."""
    return "." + os.path.basename(os.fspath(path)) + "."


def _discard(tmp) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _stage(path, write) -> str:
    """Write ``path``'s content under a temporary name beside it; return that name.

    ``write(tmp)`` writes the file.  If it fails (or is interrupted) the
    temporary file is removed.  Renaming the result to ``path`` is the caller's
    step (the all-or-nothing commit of :func:`_reproduce`).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(path), suffix=".part", dir=folder)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def _text_writer(text: str):
    """A ``write(tmp)`` function for :func:`_stage` that writes ``text`` (UTF-8)."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    return write


def _output_names(study) -> list[str]:
    exts = (".csv", ".json", ".md", ".html") if layout_of(study).kind == "table" else (".csv", ".json", ".png")
    return [study.name + ext for ext in exts]


def _remove_temporaries(out: str, names) -> None:
    """Remove the temporary files of the given outputs (ours: the folder is locked)."""
    for name in names:
        pattern = os.path.join(glob.escape(out), glob.escape(_temporary_prefix(name)) + "*.part")
        for tmp in glob.glob(pattern):
            _discard(tmp)


def _check_final_names(out: str, names) -> None:
    """Refuse, before any work, an output name taken by something other than a file.

    A folder (or a socket, ...) named ``table1.json`` in ``--out`` would make the
    run's last step fail; better to say so at once than after the simulation.
    """
    for name in names:
        path = os.path.join(out, name)
        if os.path.lexists(path) and not os.path.isfile(path):  # a link to a file is fine
            kind = ("a folder" if os.path.isdir(path) else "a broken link" if os.path.islink(path)
                    else "not a file")
            raise UsageError(f"--out {out!r}: {name} is {kind}; the run writes a file of that name, "
                             "so remove or rename it (or choose another --out)")


def _commit(staged: list[tuple[str, str]]) -> None:
    """Rename every staged file into place, all or none.

    Each final name that already holds a file (from an earlier run) is first
    hard-linked (a symbolic link: copied as a link) to a hidden
    ``.<name>.<random>.old.part`` (the file stays where it is); then the
    temporaries are renamed over the finals.  If a rename fails, the files
    renamed so far are taken back: an earlier run's file is restored
    from its link, a new name is removed.  The links are removed at the end.
    So the folder shows either all of this run's files or what it held before.
    """
    backups: dict[str, str] = {}
    done: list[str] = []
    try:
        for _, final in staged:
            if not os.path.lexists(final):
                continue
            backup = os.path.join(os.path.dirname(final), _temporary_prefix(final)
                                  + uuid.uuid4().hex[:12] + ".old.part")
            if os.path.islink(final):  # keep the link itself, not what it points to
                os.symlink(os.readlink(final), backup)
            else:
                try:
                    os.link(final, backup)
                except OSError:  # no hard links here: a copy does as well
                    shutil.copy2(final, backup)
            backups[final] = backup
        for tmp, final in staged:
            os.replace(tmp, final)
            done.append(final)
    except BaseException:
        for final in reversed(done):
            try:
                if final in backups:
                    os.replace(backups.pop(final), final)
                else:
                    os.unlink(final)
            except OSError:
                pass
        raise
    finally:
        for backup in backups.values():
            _discard(backup)


def _provenance_comment(run: dict) -> str:
    return (f"<!-- dpfda run_id {run['run_id']}: {run['command']}; seed {run['seed']}; "
            f"started {run['started']}; dpfda {run['dpfda_version']} -->\n")


def _staging(out: str):
    """``(staged, stage)``: ``stage(name, write)`` stages one file of ``out`` and records it."""
    staged: list[tuple[str, str]] = []

    def stage(name, write):
        final = os.path.join(out, name)
        staged.append((_stage(final, write), final))

    return staged, stage


def _stage_outputs(study, df, out: str, run: dict) -> list[tuple[str, str]]:
    """Write a study's results (CSV, and the figure or the table) under temporary names.

    Returns (temporary, final) pairs.  Called as soon as the study's
    simulation is done, while the workers go on with the other studies.
    """
    from .report import plots
    from .report.evidence import table1_frame

    staged, stage = _staging(out)
    try:
        stage(study.name + ".csv", _text_writer(df.assign(run_id=run["run_id"]).to_csv(index=False)))
        if plots.layout_of(study).kind == "table":
            table = table1_frame(df)
            comment = _provenance_comment(run)
            stage(study.name + ".md", _text_writer(comment + plots.table(table, digits=4).markdown()))
            html = table.to_html(index=False, float_format=lambda v: f"{v:.4g}")
            stage(study.name + ".html", _text_writer(comment + html))
        else:
            import matplotlib.pyplot as plt

            fig = plots.figure(df, study, title=f"{study.source}: {study.title}")
            png_meta = {"Title": f"{study.source}: {study.title}", "Description": plots.caption(df),
                        "Software": f"dpfda {run['dpfda_version']}", "dpfda run_id": run["run_id"],
                        "dpfda command": run["command"], "dpfda seed": str(run["seed"]),
                        "dpfda started": run["started"]}
            try:
                stage(study.name + ".png",
                      lambda tmp: fig.savefig(tmp, format="png", dpi=150, metadata=png_meta))
            finally:
                plt.close(fig)
    except BaseException:
        for tmp, _ in staged:
            _discard(tmp)
        raise
    return staged


def _stage_metadata(study, df, out: str, meta: dict, run: dict) -> list[tuple[str, str]]:
    """Write a study's JSON sidecar under a temporary name (once the whole run is done)."""
    from .report import plots

    staged, stage = _staging(out)
    meta = {**df.attrs.get("dpfda", {}), **meta, **run}  # the run's start time wins
    meta["columns"] = list(df.columns) + ["run_id"]
    meta["caption"] = plots.caption(df)
    stage(study.name + ".json", _text_writer(json.dumps(meta, indent=2, sort_keys=True) + "\n"))
    return staged


def _reproduce(args, argv, guard: SignalGuard, run_id: str, client=None) -> int:
    import matplotlib

    matplotlib.use("Agg")
    chosen = _chosen_studies(args)
    outputs = [name for st in chosen for name in _output_names(st)]
    run = {"run_id": run_id, "command": "python -m dpfda " + " ".join(argv), "seed": args.seed,
           "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "dpfda_version": __version__}
    _check_final_names(args.out, outputs)
    _remove_temporaries(args.out, outputs)  # left by a run that was killed outright (SIGKILL)
    by_name = {st.name: st for st in chosen}
    staged: list[tuple[str, str]] = []

    def on_study(name, df):  # a study is done: draw it while the workers run the next ones
        staged.extend(_stage_outputs(by_name[name], df, args.out, run))
        guard.check()

    try:
        t0 = time.perf_counter()
        common = dict(chunk_reps=args.chunk_reps, progress=not args.no_progress, on_chunk=guard.check,
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
            staged += _stage_metadata(st, results[st.name], args.out, extra, run)
            guard.check()
            pause_for_test("writing")  # a no-op unless a test asks for it
        _check_final_names(args.out, outputs)  # again: the folder may have changed meanwhile
        with guard.deferred():  # all files appear together: a signal waits for the renames
            _commit(staged)
    except BaseException:
        _remove_temporaries(args.out, outputs)
        raise
    print(f"dpfda: wrote {len(staged)} files to {args.out}, run id {run_id} "
          f"({wall:.1f} s of simulation, figures drawn meanwhile)", file=sys.stderr)
    if guard.received is not None:
        print(f"dpfda: {signal.Signals(guard.received).name} came while the files were being "
              "renamed into place; they are complete", file=sys.stderr)
        return guard.exit_code or 0
    return 0


def main(argv=None) -> int:
    """Entry point; returns the exit code.

    0 ok, 2 bad input or output folder in use, 129 after SIGHUP, 130 after SIGINT, 143 after
    SIGTERM.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    with SignalGuard() as guard:
        try:
            args = build_parser().parse_args(_join_negative_values(argv))
            if args.command == "release":
                return _release(args)
            if args.command == "example":
                return _example(args)
            _validate(args)
            run_id = uuid.uuid4().hex
            with contextlib.ExitStack() as stack:
                client = None
                if args.scheduler is not None:
                    client = stack.enter_context(connect_scheduler(args.scheduler))
                stack.enter_context(_FolderLock(args.out, run_id))
                return _reproduce(args, argv, guard, run_id, client)
        except UsageError as exc:
            print(f"dpfda: error: {exc}", file=sys.stderr)
            return 2
        except BaseException as exc:
            if guard.received is None and not isinstance(exc, KeyboardInterrupt):
                if isinstance(exc, OSError):
                    print(f"dpfda: error: cannot write output: {exc}", file=sys.stderr)
                    return 2
                raise
            name = signal.Signals(guard.received or signal.SIGINT).name
            print(f"dpfda: interrupted by {name}; workers stopped, no file of this run was written",
                  file=sys.stderr)
            return guard.exit_code or 130
        finally:
            shutdown_workers(kill=True)  # whatever happened, leave no worker behind


# ---------------------------------------------------------------------------
# python -m dpfda release: one private mean curve from a CSV file
# ---------------------------------------------------------------------------


def _points_option(text: str, option: str):
    """A list of numbers: ``a,b,c`` or ``START:STOP:COUNT`` (COUNT equally spaced, ends included)."""
    text = text.strip()
    try:
        if text.count(":") == 2 and "," not in text:
            start, stop, count = text.split(":")
            k = int(count)
            if k < 1:
                raise UsageError(f"{option}: the count in START:STOP:COUNT must be >= 1, got {k}")
            values = np.linspace(float(start), float(stop), k)
        else:
            values = np.array([float(v) for v in text.split(",")], dtype=float)
    except ValueError:
        raise UsageError(f"{option} must be numbers separated by commas, or START:STOP:COUNT, "
                         f"got {text!r}") from None
    if not np.all(np.isfinite(values)):
        raise UsageError(f"{option} must hold finite numbers, got {text!r}")
    return values


SPACE_HELP = ("legendre:M or fourier:M (dimension M; fourier is periodic on the domain), "
              "gaussian:RHO (bandwidth RHO) or brownian; a kernel space takes :regularize "
              "(gaussian:RHO:regularize) to lift K_T's eigenvalues below 1e-8 to that floor, as the "
              "paper's implementation does, instead of refusing the grid")


def _space_option(text: str):
    """``legendre:M``, ``fourier:M``, ``gaussian:RHO[:regularize]`` or ``brownian[:regularize]``."""
    kind, *params = text.strip().split(":")
    regularize = bool(params) and params[-1] == "regularize" and kind in ("gaussian", "brownian")
    if regularize:
        params = params[:-1]
    try:
        if kind in ("legendre", "fourier") and len(params) == 1:
            if not re.fullmatch(r"\+?\d+", params[0].strip()):
                raise UsageError(f"--space {text!r}: the dimension M of {kind}:M must be a whole "
                                 f"number >= 1 (the number of basis functions), got {params[0]!r}")
            return (LegendreSpace if kind == "legendre" else FourierSpace)(int(params[0]))
        if kind == "gaussian" and len(params) == 1:
            return KernelSpace(gaussian_kernel(float(params[0])), regularize=regularize)
        if kind == "brownian" and not params:
            return KernelSpace(brownian_kernel(), regularize=regularize)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--space {text!r}: {exc}") from None
    raise UsageError(f"--space must be {SPACE_HELP}; got {text!r}")


_NEGATIVE = re.compile(r"-(\d|\.\d|inf|nan)", re.IGNORECASE)
"""A value that starts like a negative number (``-1,23``, ``-.5:2:5``) rather than an option."""

VALUE_OPTIONS = ("--grid", "--domain", "--eval", "--lower", "--upper", "--clip", "--radius", "--mu")
"""Options of ``release`` whose value may start with a minus sign."""


def _join_negative_values(argv: list) -> list:
    """``--domain -1,23`` as ``--domain=-1,23``: argparse takes ``-1,23`` for an option otherwise."""
    out: list = []
    i = 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and _NEGATIVE.match(str(argv[i + 1])):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _number_option(name):
    def parse(text):
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
    return parse


def _add_release_parser(sub) -> None:
    rel = sub.add_parser(
        "release", help="release one private mean curve from a CSV file of curves (secure by default)",
        description="Release the mean curve of the curves in a CSV file under mu-GDP (FTP, or PTF with "
                    "--method ptf) and write it, with every public parameter, as JSON. Every choice "
                    "below is public and must be fixed before looking at the data.",
        epilog="Exit codes: 0 released; 2 bad input (one line on stderr; nothing written). Every public "
               "choice is checked before the data are read, and the noise is drawn once, last, before "
               "the file is written; it comes from OpenDP unless --insecure-numpy-noise is given. After "
               "a release the curator's diagnostics go to stderr (values clipped, fits shrunk onto the "
               "ball, the data's range against the band, with a warning when more than "
               f"{CLIP_WARNING_SHARE:.0%} of the values are clipped or {SHRINK_WARNING_SHARE:.0%} of "
               "the fits shrunk): they are computed from the data without noise, are NOT private and "
               "must not be published.")
    rel.add_argument("data", metavar="DATA.csv",
                     help="the curves: wide (one row per subject, one column per grid point, headers = "
                          "the points) or long (--layout long: columns subject, point, value)")
    rel.add_argument("--grid", default=None, metavar="POINTS",
                     help="the public grid in the data's units: a,b,c,... or START:STOP:COUNT; the CSV "
                          "must hold exactly these points. Leave it out (with --domain) for curves measured "
                          "at their own points or with empty cells: FTP fits each subject on the points it "
                          "has (PTF needs --grid)")
    rel.add_argument("--space", required=True, metavar="SPACE", help=SPACE_HELP)
    rel.add_argument("--radius", type=_number_option("--radius"), default=None, metavar="B",
                     help="the fitting radius B' > 0, in the data's units (required unless --lower and "
                          "--upper are given)")
    rel.add_argument("--lower", default=None, metavar="L",
                     help="with --upper: a public range of every value (one number, or one per grid "
                          "point): the data are centred and scaled by dpfda.PublicFrame, which gives B' "
                          "and PTF's clip (legendre spaces only); excludes --radius and --clip")
    rel.add_argument("--upper", default=None, metavar="U", help="see --lower")
    rel.add_argument("--mu", required=True, type=_number_option("--mu"),
                     help="the privacy budget: the release is mu-GDP")
    rel.add_argument("--method", choices=("ftp", "ptf"), default="ftp",
                     help="Fit-Then-Protect (default) or Protect-Then-Fit")
    rel.add_argument("--clip", default=None, metavar="C",
                     help="PTF's clipping bounds c_j, in the data's units: one number or one per grid "
                          "point (a,b,c,...); default B' times ||phi(t_j)|| (Theorems 11, 14)")
    rel.add_argument("--domain", default=None, metavar="START,STOP",
                     help="the public interval mapped onto [0, 1] (default: the first and last grid point)")
    rel.add_argument("--eval", default=None, metavar="POINTS", dest="eval_points",
                     help="where to publish the curve: a,b,c,... or START:STOP:COUNT (default: 101 "
                          "equally spaced points of the domain)")
    rel.add_argument("--layout", choices=("wide", "long"), default="wide", help="the CSV's form (default wide)")
    rel.add_argument("--id", default=None, metavar="COLUMN",
                     help="the subject column (required with --layout long)")
    rel.add_argument("--combine", choices=sorted(COMBINE), default=None,
                     help="make one curve of each subject's rows by this rule (mean: "
                          f"{COMBINE['mean']}); without it a subject id on two rows (or twice at a "
                          "point) is an error: one subject, one curve")
    rel.add_argument("--point", default="point", metavar="COLUMN", help="long form: the point column")
    rel.add_argument("--value", default="value", metavar="COLUMN", help="long form: the value column")
    rel.add_argument("--out", required=True, metavar="release.json",
                     help="the JSON file to write (must not exist yet)")
    rel.add_argument("--plot", default=None, metavar="FILE.png|FILE.svg",
                     help="also draw the released curve with a 95%% band of the privacy noise (public: "
                          "from sigma and the basis, free post-processing); the band covers the privacy "
                          "noise only, not sampling variability")
    rel.add_argument("--insecure-numpy-noise", action="store_true",
                     help="draw the noise with numpy instead of OpenDP: for teaching only, never for "
                          "a release that leaves the building")
    rel.add_argument("--seed", type=_integer("--seed"), default=None,
                     help="with --insecure-numpy-noise: numpy's seed (default: fresh OS entropy)")


def _add_example_parser(sub) -> None:
    ex = sub.add_parser("example", help="write a sample CSV file to try `release` on",
                        description="Write a sample file of curves: " + "; ".join(
                            f"{k}: {v}" for k, v in EXAMPLES.items()) + ". Never overwrites a file.")
    ex.add_argument("name", choices=tuple(EXAMPLES), help="which sample")
    ex.add_argument("file", metavar="FILE.csv", help="where to write it (must not exist yet)")


def _example(args) -> int:
    """``python -m dpfda example NAME FILE``: 0, or :class:`UsageError`."""
    try:
        what = write_example(args.name, args.file)
    except (FileExistsError, ImportError) as exc:
        raise UsageError(str(exc)) from None
    print(f"dpfda: wrote {args.file}: {what}")
    return 0


def _release_inputs(args):
    """Check the public choices (before the data are read); return the objects they describe."""
    grid_points = _points_option(args.grid, "--grid")
    if grid_points.size > 1 and np.any(np.diff(grid_points) <= 0):
        raise UsageError("--grid must be strictly increasing")
    if args.domain is None:
        domain_ends = grid_points[[0, -1]]
    else:
        domain_ends = _points_option(args.domain, "--domain")
        if domain_ends.size != 2:
            raise UsageError(f"--domain must be two numbers START,STOP, got {args.domain!r}")
    try:
        domain = Domain(float(domain_ends[0]), float(domain_ends[1]), name="grid point")
        grid = domain.to_unit(grid_points)
    except ValueError as exc:
        raise UsageError(f"--grid/--domain: {exc}") from None
    space = _space_option(args.space)
    if args.method == "ftp" and args.clip is not None:
        raise UsageError("--clip is PTF's clipping bound; FTP does not clip (use --method ptf)")
    clip = None if args.clip is None else _points_option(args.clip, "--clip")
    if clip is not None and clip.size == 1:
        clip = float(clip[0])
    frame = None
    if (args.lower is None) != (args.upper is None):
        raise UsageError("--lower and --upper go together (a public range of the values)")
    if args.lower is not None:
        if args.radius is not None or args.clip is not None:
            raise UsageError("--lower/--upper give B' and the clip (dpfda.PublicFrame); leave out "
                             "--radius and --clip")
        band = [_points_option(v, o) for v, o in ((args.lower, "--lower"), (args.upper, "--upper"))]
        band = [b[0] if b.size == 1 else b for b in band]
        try:
            frame = PublicFrame(space, grid_points, domain, band[0], band[1])
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--lower/--upper: {exc}") from None
    elif args.radius is None:
        raise UsageError("give --radius (B' in the data's units), or a public range with --lower and --upper")
    at = (np.linspace(domain.start, domain.stop, 101) if args.eval_points is None
          else _points_option(args.eval_points, "--eval"))
    try:
        evaluation_points(at, frame=frame, domain=None if frame is not None else domain)
    except ValueError as exc:
        raise UsageError(f"--eval: {exc}") from None
    if args.seed is not None and not args.insecure_numpy_noise:
        raise UsageError("--seed is for --insecure-numpy-noise only: OpenDP's noise cannot be seeded")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    if os.path.exists(args.out):
        raise UsageError(f"--out {args.out!r} exists: dpfda does not overwrite a release (a second "
                         "release of the same data spends the budget again); choose another name")
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        raise UsageError(f"--out {args.out!r}: the folder {folder!r} does not exist")
    secure = not args.insecure_numpy_noise
    try:  # the mechanism checks grid, space, B', mu, clip and weights
        if frame is not None:  # public centre, scale, B', clip and weights from the range
            radius, clip, weights = frame.radius, frame.clip, frame.weights
        else:
            radius, weights = args.radius, None
        if args.method == "ftp":
            mech = ftp_mechanism(grid, space, radius, args.mu, secure=secure)
        else:
            mech = ptf_mechanism(grid, space, radius, args.mu, clip=clip, weights=weights, secure=secure)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return grid_points, domain, mech, at, frame


def _release(args) -> int:
    """``python -m dpfda release``: check, read, release, write; 0 or :class:`UsageError`.

    Every public choice is checked (:func:`_release_inputs`) before the data are read; the
    noise is drawn once, by the mechanism's release, after every other check and right
    before the record is written.
    """
    own_points = args.grid is None
    if own_points:  # each subject on its own points: FTP, laid out on a public grid of the domain
        args.grid = _own_points_grid(args)
    grid_points, domain, mech, at, frame = _release_inputs(args)
    _check_plot_path(args.plot)
    try:
        data = read_curves(args.data, layout=args.layout, id=args.id, point=args.point, value=args.value,
                           combine=args.combine, curves=own_points,
                           domain=(domain.start, domain.stop) if own_points else None)
    except ValueError as exc:
        raise UsageError(f"{args.data}: {exc}") from None
    if own_points:
        X = data
    else:
        points, X = data
        if points.shape != grid_points.shape or not np.allclose(points, grid_points, rtol=1e-12, atol=0.0):
            raise UsageError(f"{args.data}: the data's grid ({_short_points(points)}) is not the public "
                             f"--grid ({_short_points(grid_points)}); the grid is fixed before the data "
                             "are read, and every curve must be observed on it (or leave out --grid: "
                             "FTP then fits each subject on its own points)")
    rng = None if mech.secure else np.random.default_rng(args.seed)
    try:
        Y = frame.to_unit(X) if frame is not None else X
        rel = mech.release(Y, rng)  # the noise: drawn here, once
        record = (release_record(rel, at, frame=frame, combine=args.combine) if frame is not None
                  else release_record(rel, at, domain=domain, combine=args.combine))
    except ImportError as exc:
        raise UsageError(f"{exc} (or, for teaching only, --insecure-numpy-noise)") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    record["command"] = {"data": os.path.basename(args.data), "layout": args.layout,
                         "grid": None if own_points else args.grid, "space": args.space}
    if own_points:
        record["sampling"] = ("each subject fitted on its own points (no common grid); the release is laid "
                              f"out on {args.grid} for the record's grid")
    text = json.dumps(record, indent=2) + "\n"
    tmp = _stage(args.out, _text_writer(text))
    try:
        os.link(tmp, args.out)  # fails if --out appeared meanwhile: never overwrite a release
    except FileExistsError:
        raise UsageError(f"--out {args.out!r} appeared while releasing; not overwritten") from None
    except OSError:  # a file system without hard links: check, then rename
        if os.path.exists(args.out):
            raise UsageError(f"--out {args.out!r} appeared while releasing; not overwritten") from None
        os.replace(tmp, args.out)
    finally:
        _discard(tmp)
    if args.plot is not None:
        _draw_release(record, args.plot, domain.name if frame is None else frame.domain.name)
    pairs = ", ".join(f"ε = {p['epsilon']:.3g} at δ = {p['delta']:g}" for p in record["epsilon_delta"])
    noise = "OpenDP" if mech.secure else "numpy (INSECURE: teaching only, do not publish)"
    print(f"dpfda: released the {args.method.upper()} mean of n = {rel.n} curves at μ = {rel.mu:g} "
          f"({pairs}); noise from {noise}; wrote {args.out}")
    # For the curator only, after the release is written: computed from the data without noise.
    if not own_points:  # the curator's diagnostics read the curves on the grid
        print(diagnostics_text(curator_diagnostics(rel, X, frame=frame)), file=sys.stderr)
    return 0


def _own_points_grid(args) -> str:
    """Without ``--grid``: check the options FTP on each subject's own points needs; its layout grid."""
    if args.domain is None:
        raise UsageError("without --grid (each subject on its own points) give --domain START,STOP: the "
                         "public interval of the points, fixed before the data are read")
    if args.method != "ftp":
        raise UsageError("--method ptf needs --grid: PTF clips and averages each point of one common public "
                         "grid over subjects, so it cannot take curves measured at their own points (FTP "
                         "can: leave out --method; or put each curve on a public grid yourself first, e.g. "
                         "with dpfda.Curves.on_grid, a map of each record alone)")
    if args.lower is not None or args.upper is not None:
        raise UsageError("--lower/--upper need --grid (the band is interpolated on the grid); without "
                         "--grid give --radius")
    ends = _points_option(args.domain, "--domain")
    if ends.size != 2:
        raise UsageError(f"--domain must be two numbers START,STOP, got {args.domain!r}")
    return f"{float(ends[0])!r}:{float(ends[1])!r}:101"


def _check_plot_path(path) -> None:
    """``--plot``: a new .png or .svg file in an existing folder (checked before the data are read)."""
    if path is None:
        return
    if os.path.splitext(path)[1].lower() not in (".png", ".svg"):
        raise UsageError(f"--plot {path!r}: the figure must be a .png or .svg file")
    if os.path.exists(path):
        raise UsageError(f"--plot {path!r} exists; choose another name")
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UsageError(f"--plot {path!r}: the folder does not exist")


def _draw_release(record: dict, path: str, xlabel: str) -> None:
    """The record's curve with the 95 % band of its privacy noise, as PNG or SVG."""
    from matplotlib.figure import Figure  # here: only `release --plot` draws

    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    plot_band(record["curve"]["points"], record["curve"]["values"], record["noise_sd"], level=0.95, ax=ax,
              xlabel=xlabel, ylabel="released mean (data's units)",
              title=f"{record['method'].upper()} at μ = {record['mu']:g}, n = {record['n']}")
    fig.savefig(path, metadata={"Date": None} if path.lower().endswith(".svg") else None)


def _short_points(points) -> str:
    shown = ", ".join(f"{p:g}" for p in points[:4])
    return f"{points.size} points: {shown}{', …' if points.size > 4 else ''}"
