"""A content-addressed store of simulation results, shared by the book's chapters.

The simulation chapters and the robustness matrix call :func:`run_study`,
:func:`run_studies` and :func:`simulate_setting` from here instead of from
:mod:`dpfda_book.simulation.engine`.  With the store off (the default) these are the engine's
functions, unchanged.  With the store on, every setting's per-repetition arrays
are kept in one file, and a later call that needs the same setting with the
same seed and repetitions reads them instead of simulating them again: two
chapters that share a setting simulate it once, a study that grows by one
setting simulates only that one, and an unchanged setting is not simulated
again in the next build.

Switching it on
---------------
The environment variable ``DPFDA_STORE`` names the store's folder; unset or
empty, the store is off.  ``make book`` sets it to ``_build/.dpfda_store``;
the tests, the command line and a reader's own session leave it unset, so
they always compute (the tests stay hermetic).

What an entry is keyed by
-------------------------
An entry's name is the SHA-256 hash of a JSON text (:func:`key_text`) holding
everything its arrays depend on:

* dpfda's version and a hash of the text of every ``.py`` file of the
  installed packages dpfda and dpfda_book (:func:`code_hash`): an edited engine,
  data model or pipeline never serves results computed by the old code;
* the versions of numpy and scipy and of Python, and the machine's
  architecture (the random streams and the rounding of the arithmetic; the
  store lives in one build folder on one machine, so its BLAS is the same);
* the setting's canonical text (:meth:`~dpfda_book.simulation.studies.Setting.canonical`: the
  family, n, T, m, μ, σ₀, B', B, ρ, centres and the latent law) and the law's
  name itself;
* the seed (which fixes the latent draw), the number of repetitions, the
  chunking asked for (``chunk_reps``), whether the releases are kept, and
  quick mode (``DPFDA_QUICK``): a quick build and a full build never share an
  entry even where their sizes agree.

The engine's results do not depend on the chunking or on the number of
workers (:mod:`dpfda_book.simulation.engine`), so the arrays computed here, chunk by chunk in
joblib's workers, are the engine's bit for bit (``tests/test_store.py``
checks it).

Writing and reading
-------------------
An entry is one small file: a magic line, a JSON header (its own key text,
each array's name, dtype and shape, the SHA-256 of the arrays' bytes) and the
arrays' bytes (:func:`save`; a ``.npz`` costs several times more per entry,
and the robustness matrix alone writes some 26,000).  It is written to a
temporary file in the same folder and renamed into place (``os.replace``,
atomic on POSIX), so a reader never sees half an entry and two processes
writing the same entry both leave a whole one.  An entry is used only if it
reads, its key text equals the one asked for, its bytes match their checksum,
and it has every expected array with one value per repetition; anything else
counts as a miss, and the entry is computed and written again.
Each lookup is logged (one line of JSON) to ``log.jsonl`` in the store's
folder, which ``benchmarks/bench_build.py`` reads to count hits and misses.

Why not ``joblib.Memory``
-------------------------
joblib (a dependency) caches function calls too, but it keys an entry on the
arguments and on the cached function's own source, not on the code that
function calls: an edited engine, data model or pipeline would keep serving
results of the old code, a cache keyed on less than it depends on.  Its entries
are also dearer: ``benchmarks/bench_store.py`` measures, for the store's entries
(five arrays of 400 repetitions), about twice the time per write, three times
the time per read and two files per entry against one.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import os
import platform
import tempfile
import time
from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

import dpfda
from dpfda import __version__

from ..settings import STORE_ENV, quick, store_folder
from . import engine, schedule, tabulate
from .studies import Setting, Study

if TYPE_CHECKING:
    import pandas as pd  # here, as in the engine: worker processes never need it

__all__ = [
    "ENV",
    "FORMAT",
    "location",
    "code_hash",
    "key_text",
    "entry_path",
    "load",
    "save",
    "simulate_setting",
    "run_studies",
    "run_study",
]

ENV = STORE_ENV
"""The environment variable that names the store's folder (:data:`dpfda_book.settings.STORE_ENV`)."""

FORMAT = 1
"""Version of the entries' layout, part of every key."""

ARRAYS = ("err_ftp", "err_ptf", "ftp_any_active", "ftp_frac_active", "ptf_active")
"""The per-repetition arrays of a setting (:func:`dpfda_book.simulation.engine.simulate_chunk`)."""

MAGIC = b"dpfda-store 1"
"""The first line of every entry file."""

RELEASES = ("coef_ftp", "coef_ptf")
"""The released coordinates, stored too when ``keep_releases=True``."""


def location() -> Path | None:
    """The store's folder from ``DPFDA_STORE``; None when the store is off (``settings.store_folder``)."""
    return store_folder()


def _package_roots() -> tuple[Path, Path]:
    """The folders of the installed packages dpfda and dpfda_book."""
    return Path(dpfda.__file__).resolve().parent, Path(__file__).resolve().parents[1]


def code_files() -> list[Path]:
    """Every ``.py`` file of the installed packages dpfda and dpfda_book: what an entry's key hashes."""
    return [path for root in _package_roots() for path in sorted(root.rglob("*.py"))]


@lru_cache(maxsize=1)
def code_hash() -> str:
    """SHA-256 of the files ``code_files()`` lists: each file's path (from its package's folder) and contents.

    The library and the book's package both: a change to a fit in ``dpfda`` changes the
    numbers as surely as a change to the engine.
    """
    h = hashlib.sha256()
    for root in _package_roots():
        for path in sorted(root.rglob("*.py")):
            rel = f"{root.name}/{path.relative_to(root).as_posix()}"
            data = path.read_bytes()
            h.update(f"{rel}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


@lru_cache(maxsize=1)
def _scipy_version() -> str:
    try:
        return importlib.metadata.version("scipy")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def _check_reps(reps: object) -> int:
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)):
        raise TypeError(f"reps must be an integer, got {type(reps).__name__}")
    if int(reps) < 2:
        raise ValueError(f"reps must be at least 2 (standard errors need two repetitions), got {reps}")
    return int(reps)


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a non-negative integer, got {type(seed).__name__}")
    if int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return int(seed)


def _check_setting(setting: object) -> Setting:
    if not isinstance(setting, Setting):
        raise TypeError(f"setting must be a Setting, got {type(setting).__name__}")
    return setting


def key_text(setting: Setting, reps: int, seed: int, *, chunk_reps: int | None = None,
             keep_releases: bool = False) -> str:
    """The JSON text an entry is keyed by (module notes): everything its arrays depend on."""
    _check_setting(setting)
    return json.dumps({
        "format": FORMAT,
        "dpfda": __version__,
        "code": code_hash(),
        "numpy": np.__version__,
        "scipy": _scipy_version(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "setting": setting.canonical(),
        "law": setting.law,
        "seed": int(seed),
        "reps": int(reps),
        "chunk_reps": None if chunk_reps is None else int(chunk_reps),
        "keep_releases": bool(keep_releases),
        "quick": quick(),
    }, sort_keys=True)


def entry_path(folder: Path, text: str) -> Path:
    """Where the entry with key text ``text`` lives in ``folder``."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Path(folder) / digest[:2] / f"{digest}.entry"


def load(folder: Path, text: str, reps: int, keep_releases: bool = False) -> dict | None:
    """The arrays stored under ``text``, or None if missing, unreadable, partial or not this key's."""
    path = entry_path(folder, text)
    names = ARRAYS + (RELEASES if keep_releases else ())
    try:
        data = path.read_bytes()
        magic, header, payload = data.split(b"\n", 2)
        if magic != MAGIC:
            return None
        head = json.loads(header)
        if head["key"] != text or hashlib.sha256(payload).hexdigest() != head["sha256"]:
            return None
        out, offset = {}, 0
        for name, dtype, shape in head["arrays"]:
            dt = np.dtype(dtype)
            size = dt.itemsize * int(np.prod(shape, dtype=np.int64))
            count = int(np.prod(shape, dtype=np.int64))
            out[name] = np.frombuffer(payload, dtype=dt, count=count, offset=offset).reshape(shape).copy()
            offset += size
        if offset != len(payload):
            return None
        out = {k: out[k] for k in names}
    except (OSError, KeyError, ValueError, TypeError):  # missing, truncated, garbled, an array missing
        return None
    if any(a.shape[:1] != (reps,) for a in out.values()):
        return None
    return out


def save(folder: Path, text: str, arrays: dict) -> Path:
    """Write ``arrays`` under ``text`` atomically (a temporary file, then ``os.replace``).

    The file is a magic line, a JSON header (the key text, each array's name,
    dtype and shape, the SHA-256 of the payload) and the arrays' bytes.  No
    fsync: a file cut short by a crash fails its checksum and is computed again.
    """
    path = entry_path(folder, text)
    path.parent.mkdir(parents=True, exist_ok=True)
    parts = [np.ascontiguousarray(v) for v in arrays.values()]
    payload = b"".join(a.tobytes() for a in parts)
    head = {"key": text, "arrays": [[k, a.dtype.str, list(a.shape)] for k, a in zip(arrays, parts)],
            "sha256": hashlib.sha256(payload).hexdigest()}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + b"\n" + json.dumps(head).encode() + b"\n" + payload)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def _log(folder: Path, rows: list[tuple]) -> None:
    """Append one JSON line per look-up (setting, reps, seed, hit, seconds) to ``log.jsonl``."""
    now = time.time()
    lines = "".join(json.dumps({"time": now, "setting": s.canonical(), "law": s.law, "reps": int(reps),
                                "seed": int(seed), "hit": bool(hit), "seconds": round(sec, 4)}) + "\n"
                    for s, reps, seed, hit, sec in rows)
    try:
        with open(Path(folder) / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(lines)
    except OSError:
        pass  # the log is for benchmarks only


def simulate_setting(setting: Setting, reps: int, seed: int, *, chunk_reps: int | None = None,
                     keep_releases: bool = False) -> dict:
    """:func:`dpfda_book.simulation.engine.simulate_setting`, read from the store when it holds the result."""
    folder = location()
    if folder is None:
        return engine.simulate_setting(setting, reps, seed, chunk_reps=chunk_reps, keep_releases=keep_releases)
    _check_setting(setting)
    reps, seed = _check_reps(reps), _check_seed(seed)
    text = key_text(setting, reps, seed, chunk_reps=chunk_reps, keep_releases=keep_releases)
    t0 = time.perf_counter()
    found = load(folder, text, int(reps), keep_releases)
    hit = found is not None
    if found is None:
        found = engine.simulate_setting(setting, reps, seed, chunk_reps=chunk_reps, keep_releases=keep_releases)
        save(folder, text, found)
    _log(folder, [(setting, reps, seed, hit, time.perf_counter() - t0)])
    return found


def _chunk(settings: list[Setting], seed: int, start: int, stop: int) -> list[tuple[Setting, int, dict]]:
    """One task of :func:`dpfda_book.simulation.schedule.plan`: a setting, or the laws of one (drawn once)."""
    if len(settings) == 1:
        return [(settings[0], start, engine.simulate_chunk(settings[0], seed, start, stop))]
    return list(zip(settings, [start] * len(settings), engine.simulate_laws(settings, seed, start, stop),
                    strict=True))


def _compute(missing: list[Setting], reps: int, seed: int, n_jobs: int | None,
             chunk_reps: int | None) -> dict:
    """Per-repetition arrays of ``missing`` (distinct settings), chunked and in parallel like the engine."""
    if not missing:
        return {}
    study = Study(name="store", title="settings missing from the store", source="dpfda_book.simulation.store",
                  settings=tuple(missing))
    settings, tasks = schedule.plan([study], reps, chunk_reps)
    if n_jobs == 1:
        results = [_chunk([settings[m] for m in tasks.members(k)], seed, a, b) for k, a, b in tasks]
    else:
        from joblib import Parallel, delayed  # here, as in the engine: only a parallel run needs it

        results = Parallel(n_jobs=n_jobs)(delayed(_chunk)([settings[m] for m in tasks.members(k)], seed, a, b)
                                          for k, a, b in tasks)
    parts: dict[str, dict[int, dict]] = {k: {} for k in settings}
    for batch in results:
        for s, start, arrays in batch:
            parts[s.canonical()][start] = arrays
    return {k: {name: np.concatenate([p[a][name] for a in sorted(p)]) for name in ARRAYS}
            for k, p in parts.items()}


def _frame(study: Study, per_setting: dict, reps: int, seed: int, started: str) -> "pd.DataFrame":
    """:func:`dpfda_book.simulation.tabulate.frame` of ``study`` from the store's arrays (keyed by text and law)."""
    own = {s.canonical(): per_setting[s.canonical(), s.law] for s in study.settings}
    return tabulate.frame(study, own, reps, seed, started)


def run_studies(studies: Iterable[Study], reps: int, seed: int, n_jobs: int | None = 1,
                chunk_reps: int | None = None, progress: bool = False) -> "OrderedDict[str, pd.DataFrame]":
    """:func:`dpfda_book.simulation.schedule.run_studies`, simulating only the settings the store lacks.

    With the store off, the engine's function itself.  With it on, each
    setting (once, however many studies share it) is read from the store or
    simulated, in chunks on ``n_jobs`` joblib workers, and stored; the tables
    are the engine's, value for value (the run's metadata holds its own start
    and finish times).  ``progress`` shows a bar only when the store is off.
    """
    folder = location()
    if folder is None:
        return schedule.run_studies(studies, reps, seed, n_jobs=n_jobs, chunk_reps=chunk_reps, progress=progress)
    studies = list(studies)
    for st in studies:
        if not isinstance(st, Study):
            raise TypeError(f"studies must be Study objects, got {type(st).__name__}")
    reps, seed = _check_reps(reps), _check_seed(seed)
    if n_jobs is not None and not isinstance(n_jobs, bool) and n_jobs == 0:
        raise ValueError("n_jobs must not be 0 (use 1 for serial, k > 1 for k workers, -1 for all cores)")
    schedule.check_memory(studies, reps, chunk_reps, n_jobs)  # also checks n_jobs and chunk_reps
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    wanted: "OrderedDict[tuple, Setting]" = OrderedDict()
    for st in studies:
        for s in st.settings:
            wanted.setdefault((s.canonical(), s.law), s)
    per_setting: dict[tuple, dict] = {}
    logged: list[tuple] = []
    texts = {k: key_text(s, reps, seed, chunk_reps=chunk_reps) for k, s in wanted.items()}
    for k, s in wanted.items():
        t0 = time.perf_counter()
        found = load(folder, texts[k], reps)
        if found is not None:
            per_setting[k] = found
            logged.append((s, reps, seed, True, time.perf_counter() - t0))
    # One computation per canonical text.
    todo: "OrderedDict[str, Setting]" = OrderedDict()
    for k, s in wanted.items():
        if k not in per_setting:
            todo.setdefault(k[0], s)
    t0 = time.perf_counter()
    computed = _compute(list(todo.values()), reps, seed, n_jobs, chunk_reps)
    spent = (time.perf_counter() - t0) / max(len(todo), 1)
    for k, s in wanted.items():
        if k not in per_setting:
            per_setting[k] = computed[k[0]]
            save(folder, texts[k], per_setting[k])
            logged.append((s, reps, seed, False, spent))
    _log(folder, logged)
    return OrderedDict((st.name, _frame(st, per_setting, reps, seed, started)) for st in studies)


def run_study(study: Study, reps: int, seed: int, n_jobs: int | None = 1, chunk_reps: int | None = None,
              progress: bool = False) -> "pd.DataFrame":
    """:func:`dpfda_book.simulation.schedule.run_study`, simulating only the settings the store lacks."""
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study, got {type(study).__name__}")
    return run_studies([study], reps, seed, n_jobs=n_jobs, chunk_reps=chunk_reps, progress=progress)[study.name]
