"""Scheduling simulations: plan the chunks, check memory, run them (joblib or Dask).

A run splits each setting's repetitions into chunks (:func:`dpfda_book.simulation.engine.chunk_size`),
generated as they are needed (:class:`Tasks`), never listed.  :func:`run_studies`
first checks (:func:`check_memory`) that every setting's per-repetition results
and the largest chunk fit in the memory this process may use: a run that cannot
fit is refused with ``ValueError`` before anything runs.  The chunks run in this
process or in joblib's workers (any backend, e.g. Dask); a setting's results do
not depend on the chunking, the workers or the order (:mod:`dpfda_book.simulation.seeding`).
"""

from __future__ import annotations

import datetime as _dt
import heapq
import os
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from dpfda.validation import check_int, check_jobs, check_reps

from ..interrupt import pause_for_test
from .engine import batches, chunk_size, simulate_chunk, simulate_laws
from .studies import Setting, Study
from .tabulate import concat_chunks, frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Tasks",
    "plan",
    "RESULT_BYTES_PER_REP",
    "memory_needed",
    "memory_limit",
    "check_memory",
    "run_studies",
    "run_study",
]

def _cost(setting: Setting, reps: int) -> float:
    """Rough relative cost of ``reps`` repetitions (for scheduling only)."""
    per = 30.0 + (setting.n * setting.T * (1.0 + 0.3 * setting.dim) if setting.sigma0 > 0 else 0.0)
    return reps * per


class Tasks:
    """The chunks ``(canonical, start, stop)`` of a run, generated when iterated.

    A list of every chunk would cost memory in proportion to the repetitions
    (10^12 repetitions are billions of chunks); this object holds only the
    settings and their chunk sizes, and yields the chunks in :func:`plan`'s order
    each time it is iterated.  ``len()`` and :meth:`count` are arithmetic.

    Settings that differ only in their latent law share their random streams
    (:meth:`~dpfda_book.simulation.studies.Setting.stream_canonical`) and run as one
    task (:func:`dpfda_book.simulation.engine.simulate_laws`): only the first of them
    (in the run's order) is yielded, and :meth:`members` names them all.
    """

    def __init__(self, settings: dict[str, Setting], group: dict[str, int], reps: int,
                 sizes: dict[str, int], members: dict[str, tuple[str, ...]] | None = None) -> None:
        self._settings = settings
        self._group = group
        self.reps = reps
        self.sizes = sizes
        self._members = members if members is not None else {key: (key,) for key in settings}

    def count(self, key: str) -> int:
        """How many chunks setting ``key`` is split into."""
        return -(-self.reps // self.sizes[key])

    def members(self, key: str) -> tuple[str, ...]:
        """The settings a task yielded as ``key`` runs: ``key`` and the other laws of it."""
        return self._members[key]

    def __len__(self) -> int:
        return sum(self.count(key) for key in self._members)

    def _chunks(self, key: str) -> Iterator[tuple[float, str, int, int]]:
        for a, b in batches(self.reps, self.sizes[key]):
            yield -_cost(self._settings[key], b - a), key, a, b

    def __iter__(self) -> Iterator[tuple[str, int, int]]:
        # Study by study; within a study largest first, ties in the order of the settings
        # and of their chunks (heapq.merge is stable across its inputs): the order a stable
        # sort of the whole list by (group, -cost) gives, without the list.
        for g in sorted({self._group[k] for k in self._members}):
            keys = [k for k in self._members if self._group[k] == g]
            for _, key, a, b in heapq.merge(*(self._chunks(k) for k in keys), key=lambda t: t[0]):
                yield key, a, b


def plan(studies: Iterable[Study], reps: int,
         chunk_reps: int | None = None) -> tuple[OrderedDict[str, Setting], Tasks]:
    """Unique settings of ``studies`` and the chunks of repetitions they split into.

    Returns ``(settings, tasks)``: ``settings`` maps each setting's canonical
    text to the Setting; ``tasks`` (a ``Tasks``, generated lazily, with a
    length) yields (canonical, start, stop).
    The tasks come study by study (a setting with the first study that has
    it), so that the studies complete one after another and a caller can
    write each study's outputs while the next ones run (``on_study`` of
    :func:`run_studies`); within a study they come largest first, which keeps
    the workers evenly loaded up to the end.  The order changes no result.
    """
    reps = check_reps(reps)
    settings: "OrderedDict[str, Setting]" = OrderedDict()
    group: dict[str, int] = {}
    for i, study in enumerate(studies):
        for s in study.settings:
            key = s.canonical()
            settings.setdefault(key, s)
            group.setdefault(key, i)
    sizes = {key: min(chunk_size(s, chunk_reps), reps) for key, s in settings.items()}
    laws: dict[str, list[str]] = {}
    for key, s in settings.items():  # the laws of one setting: chunk sizes do not depend on the law
        laws.setdefault(s.stream_canonical(), []).append(key)
    members = {keys[0]: tuple(keys) for keys in laws.values()}
    return settings, Tasks(settings, group, reps, sizes, members)


RESULT_BYTES_PER_REP = 26
"""Bytes of per-repetition results a setting keeps until its study is tabulated (two errors,
the active share, two flags)."""


def _chunk_memory(setting: Setting, c: int) -> int:
    """Rough working memory of one chunk of ``c`` repetitions, in bytes.

    The observed data, the per-curve fits, the privacy normals and a few (c, T) and
    (c, d) arrays; with several laws of the setting in one task
    (:func:`dpfda_book.simulation.engine.simulate_laws`), the observation noise ε besides X.
    """
    n, T, d = setting.n, setting.T, setting.dim
    per = 8 * 8 * (T + d)  # privacy normals, noisy means, fits, errors
    if setting.sigma0 > 0.0:
        per += 2 * 8 * n * (T + d) + 8 * n * T  # X and ε, the per-curve fits and their temporaries
    return c * per


def memory_needed(studies: Iterable[Study], reps: int, chunk_reps: int | None = None, n_jobs: int | None = 1) -> dict:
    """Estimated peak memory of :func:`run_studies` (bytes), without running or planning it.

    ``results``: every setting's per-repetition results, which are kept until the run
    is tabulated (``RESULT_BYTES_PER_REP`` a repetition), and one setting's more
    while its chunks are joined; ``chunks``: the largest chunk's working memory, once
    per worker and once more in this process.
    """
    reps = check_reps(reps)
    settings = {s.canonical(): s for st in studies for s in st.settings}
    results = (len(settings) + 1) * reps * RESULT_BYTES_PER_REP
    largest = max((_chunk_memory(s, min(chunk_size(s, chunk_reps), reps)) for s in settings.values()),
                  default=0)
    workers = (os.cpu_count() or 1) if n_jobs in (None, -1) else max(1, int(n_jobs))
    return {"results": results, "chunks": largest * (workers + 1), "settings": len(settings),
            "workers": workers}


def memory_limit() -> int:
    """Memory this process may use, in bytes.

    The least of the physical memory, the cgroup's limit (v2 ``memory.max`` or v1
    ``memory.limit_in_bytes``) and ``RLIMIT_AS``.
    """
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(int(soft))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return min(limits) if limits else 2**63


def _gib(b: float) -> str:
    return f"{b / 2**30:.3g} GiB"


def check_memory(studies: Iterable[Study], reps: int, chunk_reps: int | None = None, n_jobs: int | None = 1, *,
                 names: tuple[str, str] = ("reps", "chunk_reps")) -> None:
    """``ValueError`` if a run of ``studies`` cannot fit in :func:`memory_limit`.

    The message names ``reps`` or ``chunk_reps`` (``names`` gives their names, e.g.
    the command line's options), whichever is at fault, with the estimate
    (:func:`memory_needed`) and the limit.  Nothing is planned or run.
    """
    need = memory_needed(studies, reps, chunk_reps, n_jobs)
    limit = memory_limit()
    if need["results"] > limit:
        most = limit // ((need["settings"] + 1) * RESULT_BYTES_PER_REP)
        raise ValueError(
            f"{names[0]} {reps} cannot fit in memory: the per-repetition results of "
            f"{need['settings']} settings need about {_gib(need['results'])} "
            f"({RESULT_BYTES_PER_REP} bytes a repetition and setting) and this process may use "
            f"{_gib(limit)}; at most about {most} repetitions fit"
        )
    if need["chunks"] + need["results"] > limit:
        raise ValueError(
            f"{names[1]} {chunk_reps} cannot fit in memory: the largest chunk needs about "
            f"{_gib(need['chunks'] / max(1, need['workers'] + 1))} of working memory, once per worker "
            f"and once more here, and this process may use {_gib(limit)}; use fewer repetitions "
            "per chunk (by default a chunk's data take at most 16 MiB)"
        )


def _task(settings: Sequence[Setting], seed: int, start: int, stop: int) -> list[tuple[str, int, dict]]:
    pause_for_test("simulation")  # a no-op unless a test asks for it (dpfda_book.interrupt)
    if len(settings) == 1:
        return [(settings[0].canonical(), start, simulate_chunk(settings[0], seed, start, stop))]
    return [(s.canonical(), start, arrays)
            for s, arrays in zip(settings, simulate_laws(settings, seed, start, stop), strict=True)]


def _alone(key: str) -> tuple[str, ...]:
    return (key,)


def _execute(settings: dict[str, Setting], tasks: Tasks | Sequence[tuple[str, int, int]], seed: int,
             n_jobs: int | None, progress: bool, on_setting: Callable[[str, dict], object],
             on_chunk: Callable[[], object] | None = None) -> None:
    """Run the tasks (in parallel with joblib); hand each setting's arrays on when complete.

    ``on_setting(key, arrays)`` is called in this process as soon as the last
    chunk of a setting has arrived, with its per-repetition arrays in
    repetition order.

    If anything interrupts the loop (an exception from ``on_chunk``, a
    KeyboardInterrupt), joblib's generator is closed at once: that aborts the
    remaining tasks and terminates the workers, rather than leaving them busy
    until the generator happens to be garbage-collected.
    """
    from joblib import Parallel, delayed

    if isinstance(tasks, Tasks):
        remaining = {key: tasks.count(key) for key in settings}
        members: Callable[[str], tuple[str, ...]] = tasks.members
    else:
        remaining = {}
        for key, _, _ in tasks:
            remaining[key] = remaining.get(key, 0) + 1
        members = _alone
    parts: dict[str, dict[int, dict]] = {key: {} for key in settings}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(settings), desc="settings", unit="setting", leave=True)
    results = None
    try:
        if n_jobs == 1:
            results = (_task([settings[m] for m in members(k)], seed, a, b) for k, a, b in tasks)
        else:
            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(_task)([settings[m] for m in members(k)], seed, a, b) for k, a, b in tasks)
        for batch in results:
            for key, start, arrays in batch:
                parts[key][start] = arrays
                remaining[key] -= 1
                if remaining[key] == 0:
                    done = parts.pop(key)
                    on_setting(key, concat_chunks([done[a] for a in sorted(done)]))
                    if bar is not None:
                        bar.update(1)
            if on_chunk is not None:
                on_chunk()
    finally:
        if results is not None:
            with warnings.catch_warnings():  # joblib's "tasks ... not used" warning on abort
                warnings.simplefilter("ignore", UserWarning)
                results.close()
        if bar is not None:
            bar.close()


def run_studies(studies: Iterable[Study], reps: int, seed: int, n_jobs: int | None = 1,
                chunk_reps: int | None = None, progress: bool = False, *,
                on_chunk: Callable[[], object] | None = None,
                on_study: Callable[[str, pd.DataFrame], object] | None = None) -> "OrderedDict[str, pd.DataFrame]":
    """Run several studies together; a setting they share is simulated once.

    Returns an ordered dict study name → results table (see :func:`run_study`).
    ``on_chunk``, if given, is called (with no arguments, in this process)
    each time a chunk of repetitions has arrived; an exception it raises stops
    the run, and joblib's workers with it (the command line uses it to stop
    promptly on a signal).  ``on_study(name, table)``, if given, is called in
    this process as soon as a study's last setting is done, while the workers
    go on with the next studies (the command line draws a study's figure
    then); an exception it raises stops the run the same way.
    """
    studies = list(studies)
    for st in studies:
        if not isinstance(st, Study):
            raise TypeError(f"studies must be Study objects, got {type(st).__name__}")
    reps = check_reps(reps)
    seed = check_int(seed, "seed", 0)
    n_jobs = check_jobs(n_jobs)
    if on_chunk is not None and not callable(on_chunk):
        raise TypeError(f"on_chunk must be a function of no arguments or None, got {type(on_chunk).__name__}")
    if on_study is not None and not callable(on_study):
        raise TypeError(f"on_study must be a function (name, table) or None, got {type(on_study).__name__}")
    check_memory(studies, reps, chunk_reps, n_jobs)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    settings, tasks = plan(studies, reps, chunk_reps)
    per_setting: dict[str, dict] = {}
    waiting = [{s.canonical() for s in st.settings} for st in studies]
    frames: dict[int, "pd.DataFrame"] = {}

    def setting_done(key: str, arrays: dict) -> None:
        per_setting[key] = arrays
        for i, st in enumerate(studies):
            if key in waiting[i]:
                waiting[i].discard(key)
                if not waiting[i]:
                    frames[i] = frame(st, per_setting, reps, seed, started)
                    if on_study is not None:
                        on_study(st.name, frames[i])

    _execute(settings, tasks, seed, n_jobs, progress, setting_done, on_chunk=on_chunk)
    return OrderedDict((st.name, frames[i]) for i, st in enumerate(studies))


def run_study(study: Study, reps: int, seed: int, n_jobs: int | None = 1, chunk_reps: int | None = None,
              progress: bool = False) -> "pd.DataFrame":
    """Run every setting of a study with ``reps`` Monte Carlo repetitions.

    Parameters
    ----------
    study : Study
        E.g. ``dpfda_book.simulation.studies.get_study("fig1")`` or a custom ``Study.grid(...)``.
    reps : int
        Repetitions per setting (>= 2; the paper uses 1000).
    seed : int
        Non-negative master seed; every stream derives from it (module notes).
    n_jobs : int or None
        1 runs serially in this process; k > 1 (or -1) uses joblib with k
        workers; None uses joblib's current configuration (e.g. inside
        ``joblib.parallel_config(backend="dask")``).  Results do not depend on it.
    chunk_reps : int, optional
        Repetitions per chunk (default: as many as fit in :data:`dpfda_book.simulation.engine.CHUNK_BYTES`).
        Results do not depend on it.
    progress : bool
        Show a tqdm progress bar over settings.

    Returns
    -------
    pandas.DataFrame
        One row per setting with the columns :data:`~dpfda_book.simulation.tabulate.RESULT_COLUMNS`: the
        parameters; ``err_ftp``/``err_ptf`` — the Monte Carlo mean of the IMSE
        (``metric="IMSE"``, H_m) or grid MSE (``"MSE"``, RKHS) against f̄ — with
        standard errors ``se_ftp``/``se_ptf``; ``ratio`` = err_ftp/err_ptf with
        the 95% delta-method interval ``ratio_lo``–``ratio_hi``
        (:data:`~dpfda_book.simulation.tabulate.CI_METHOD`); ``p_ftp_active`` (share of repetitions in which
        some curve's FTP constraint was active), ``p_ftp_active_curves`` (mean
        share of curves), ``p_ptf_active`` (share of repetitions in which PTF's
        constraint was active), with binomial standard errors.
        ``df.attrs["dpfda"]`` holds the run's metadata (``metadata``).
    """
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study, got {type(study).__name__}")
    return run_studies([study], reps, seed, n_jobs=n_jobs, chunk_reps=chunk_reps,
                       progress=progress)[study.name]
