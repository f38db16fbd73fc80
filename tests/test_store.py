"""The content-addressed results store (dpfda_book.simulation.store).

* Off (``DPFDA_STORE`` unset or empty) it is the engine: nothing is written.
* On, a stored result equals a fresh one bit for bit (arrays and tables), for
  one setting and for studies, and a hit simulates nothing.
* The key separates everything a result depends on: the setting (each
  parameter, the law), seed, repetitions, chunking, kept
  releases, quick mode and the package's source.
* A corrupt, partial or foreign entry is ignored and written again; writers
  racing on one entry leave a whole one.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpfda_book.simulation import engine, schedule, store
from dpfda_book.simulation.studies import Setting, Study, get_study

SETTING = Setting("legendre", n=8, T=10, mu=1.0, sigma0=0.5, radius_rule="B", m=4)
QUIET = Setting("kernel", n=16, T=12, mu=0.5, sigma0=0.0, radius_rule="B")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(store.ENV, str(tmp_path))
    monkeypatch.delenv("DPFDA_QUICK", raising=False)
    return tmp_path


def entries(folder):
    return sorted(p for p in folder.rglob("*.entry"))


def log(folder):
    path = folder / "log.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def same_arrays(a: dict, b: dict):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert a[k].tobytes() == b[k].tobytes(), k  # bit for bit (NaN-safe)


def test_off_by_default_computes_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(store.ENV, raising=False)
    assert store.location() is None
    monkeypatch.setenv(store.ENV, "  ")
    assert store.location() is None
    monkeypatch.chdir(tmp_path)
    same_arrays(store.simulate_setting(SETTING, 5, 3), engine.simulate_setting(SETTING, 5, 3))
    st = Study("off", (SETTING, QUIET))
    pd.testing.assert_frame_equal(store.run_study(st, 4, 3), schedule.run_study(st, 4, 3), check_exact=True)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("setting", [SETTING, QUIET], ids=["noisy", "noiseless"])
@pytest.mark.parametrize("keep", [False, True])
def test_hit_returns_bit_identical_arrays(folder, setting, keep):
    fresh = engine.simulate_setting(setting, 7, 11, keep_releases=keep)
    first = store.simulate_setting(setting, 7, 11, keep_releases=keep)
    assert len(entries(folder)) == 1
    second = store.simulate_setting(setting, 7, 11, keep_releases=keep)
    same_arrays(fresh, first)
    same_arrays(fresh, second)
    assert [r["hit"] for r in log(folder)] == [False, True]


def test_studies_equal_the_engine_and_share_settings(folder):
    fig1 = get_study("fig1", n=[4, 16])
    other = Study("other", fig1.settings[:3] + (SETTING,))
    fresh = schedule.run_studies([fig1, other], 6, 5, n_jobs=1)
    got = store.run_studies([fig1, other], 6, 5, n_jobs=2)
    for name in fresh:
        a, b = fresh[name], got[name]
        assert a.attrs["dpfda"].keys() == b.attrs["dpfda"].keys()
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    n_unique = len({s.canonical() for s in fig1.settings + other.settings})
    assert len(entries(folder)) == n_unique  # a shared setting once
    assert not any(r["hit"] for r in log(folder))
    # A study grown by one setting simulates that one only; the rest are read.
    extra = replace(SETTING, n=9)
    grown = Study("grown", other.settings + (extra,))
    again = store.run_study(grown, 6, 5)
    rows = log(folder)[-len(grown.settings):]
    assert [r["hit"] for r in rows] == [True] * len(other.settings) + [False]
    pd.testing.assert_frame_equal(again, schedule.run_study(grown, 6, 5), check_exact=True)
    # and a single setting stored by run_studies is the one simulate_setting would store
    same_arrays(store.simulate_setting(SETTING, 6, 5), engine.simulate_setting(SETTING, 6, 5))


def test_chunking_and_workers_do_not_change_the_arrays(folder):
    st = Study("chunks", (SETTING, QUIET))
    a = store.run_study(st, 9, 2, n_jobs=2, chunk_reps=2)
    pd.testing.assert_frame_equal(a, schedule.run_study(st, 9, 2), check_exact=True)


def key(setting=SETTING, reps=10, seed=1, **kw):
    return store.key_text(setting, reps, seed, **kw)


@pytest.mark.parametrize("change", [
    dict(n=9), dict(T=11), dict(m=5), dict(mu=1.5), dict(sigma0=0.25), dict(radius=0.7), dict(B=2.0),
    dict(law="shift-0.5"), dict(law="wave-0.5"),
])
def test_key_separates_every_parameter(folder, change):
    assert key(replace(SETTING, **change)) != key()


def test_key_separates_runs_and_modes(folder, monkeypatch):
    base = key()
    assert len({base, key(reps=11), key(seed=2), key(chunk_reps=3), key(keep_releases=True)}) == 5
    k_rho = key(QUIET)
    assert key(replace(QUIET, rho=0.3)) != k_rho and key(replace(QUIET, centers=7)) != k_rho
    assert key(replace(SETTING, law="shift-0")) != key(replace(SETTING, law="shift-0.25"))
    # quick mode: even with the same repetitions, never the same entry
    monkeypatch.setenv("DPFDA_QUICK", "1")
    assert key() != base
    monkeypatch.setenv("DPFDA_QUICK", "0")
    assert key() == base


def test_key_holds_the_package_source(folder, monkeypatch):
    text = json.loads(key())
    from dpfda import __version__

    assert text["dpfda"] == __version__ and text["code"] == store.code_hash()
    assert text["numpy"] == np.__version__
    # an edited package gives other keys: the hash covers every .py file's bytes
    monkeypatch.setattr(store, "code_hash", lambda: "0" * 64)
    assert key() != json.dumps(text, sort_keys=True)


def test_the_code_hash_covers_the_library_and_the_books_package():
    """A stored setting depends on dpfda's fits as much as on the engine: both packages are hashed."""
    import dpfda
    import dpfda_book

    files = {p.resolve() for p in store.code_files()}
    lib, book = Path(dpfda.__file__).resolve().parent, Path(dpfda_book.__file__).resolve().parent
    assert lib / "maths" / "fitting.py" in files and lib / "mechanisms" / "pipelines.py" in files
    assert book / "simulation" / "engine.py" in files and book / "simulation" / "models.py" in files
    assert files == set(lib.rglob("*.py")) | set(book.rglob("*.py"))


def test_quick_and_full_entries_never_meet(folder, monkeypatch):
    full = store.simulate_setting(SETTING, 6, 1)
    monkeypatch.setenv("DPFDA_QUICK", "1")
    quick = store.simulate_setting(SETTING, 6, 1)
    assert len(entries(folder)) == 2 and not any(r["hit"] for r in log(folder))
    same_arrays(full, quick)  # same sizes asked for, hence the same numbers, kept apart all the same


def _corrupt(path, how):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "flipped":  # the last byte of the arrays' payload: the checksum catches it
        b = bytearray(data)
        b[-1] ^= 0x01
        path.write_bytes(bytes(b))
    elif how == "header":  # the header no longer JSON
        path.write_bytes(data.replace(b'{"key"', b'{"kez', 1))
    elif how == "empty":
        path.write_bytes(b"")


@pytest.mark.parametrize("how", ["truncated", "flipped", "empty", "header"])
def test_corrupt_entry_is_ignored_and_rewritten(folder, how):
    fresh = engine.simulate_setting(SETTING, 40, 4)
    store.simulate_setting(SETTING, 40, 4)
    (path,) = entries(folder)
    _corrupt(path, how)
    assert store.load(folder, key(reps=40, seed=4), 40) is None
    same_arrays(store.simulate_setting(SETTING, 40, 4), fresh)
    assert store.load(folder, key(reps=40, seed=4), 40) is not None  # written again
    assert [r["hit"] for r in log(folder)] == [False, False]


def test_partial_or_foreign_entry_is_ignored(folder):
    text = key(reps=6)
    arrays = engine.simulate_setting(SETTING, 6, 1)
    store.save(folder, text, {k: v[:5] for k, v in arrays.items()})  # too few repetitions
    assert store.load(folder, text, 6) is None
    store.save(folder, text, {k: v for k, v in arrays.items() if k != "ptf_active"})  # an array missing
    assert store.load(folder, text, 6) is None
    # an entry whose own key is another's (a collision or a copied file) is not used
    path = store.save(folder, key(reps=6, seed=2), arrays)
    os.replace(path, store.entry_path(folder, text))
    assert store.load(folder, text, 6) is None
    same_arrays(store.simulate_setting(SETTING, 6, 1), arrays)
    assert store.load(folder, text, 6) is not None
    assert not list(folder.rglob(".tmp-*"))


def _writer(args):
    folder, seed = args
    os.environ[store.ENV] = folder
    out = store.simulate_setting(SETTING, 30, seed)
    return {k: v.tobytes() for k, v in out.items()}


def test_concurrent_writers_leave_a_whole_entry(folder):
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        outs = pool.map(_writer, [(str(folder), 8)] * 8)
    assert all(o == outs[0] for o in outs)
    (path,) = entries(folder)
    fresh = engine.simulate_setting(SETTING, 30, 8)
    same_arrays(store.load(folder, key(reps=30, seed=8), 30), fresh)
    assert not list(folder.rglob(".tmp-*"))


def test_bad_arguments_are_refused(folder):
    with pytest.raises(TypeError, match="setting"):
        store.simulate_setting("fig1", 5, 1)
    with pytest.raises(ValueError, match="reps"):
        store.simulate_setting(SETTING, 1, 1)
    with pytest.raises(ValueError, match="seed"):
        store.run_study(Study("x", (SETTING,)), 5, -1)
    with pytest.raises(TypeError, match="study"):
        store.run_study([SETTING], 5, 1)
    with pytest.raises(ValueError, match="n_jobs"):
        store.run_study(Study("x", (SETTING,)), 5, 1, n_jobs=0)
    assert not entries(folder)
