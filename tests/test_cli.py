"""``python -m dpfda reproduce …``: outputs, provenance, bad input, atomic writes.

Bad input must give one line on stderr and exit code 2 (no traceback); files
are written under a temporary name and renamed; every file records its run.
Signals, locking and ``--jobs`` are tested in ``test_cli_signals.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from dpfda import cli
from dpfda.simulation.studies import get_study

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "dpfda", *args], capture_output=True, text=True,
                          cwd=ROOT, env=ENV, timeout=timeout)


@pytest.mark.slow
def test_reproduce_all_quick_writes_every_file(tmp_path):
    out = tmp_path / "res"
    proc = run_cli("reproduce", "all", "--quick", "--jobs", "2", "--seed", "5", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "settings" in proc.stderr  # the progress bar over settings
    names = ["fig1", "fig2", "fig3", "fig4", "fig5", "fig6"]
    expect = {f"{n}.{ext}" for n in names for ext in ("csv", "json", "png")}
    expect |= {"table1.csv", "table1.json", "table1.md", "table1.html"}
    assert set(os.listdir(out)) == expect
    for n in names:
        with open(out / f"{n}.png", "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
        df = pd.read_csv(out / f"{n}.csv")
        quick = get_study(n, n=cli.QUICK_N)
        assert len(df) == len(quick) and (df["reps"] == cli.QUICK_REPS).all()
        assert df["ratio"].gt(0).all() and df["se_ftp"].gt(0).all()
        meta = json.loads((out / f"{n}.json").read_text())
        assert meta["seed"] == 5 and meta["reps"] == cli.QUICK_REPS and meta["quick"] is True
        assert "delta method" in meta["ci_method"] and str(cli.QUICK_REPS) in meta["caption"]
    comment, *table = (out / "table1.md").read_text().splitlines()
    assert comment.startswith("<!-- dpfda run_id ") and comment.endswith("-->")
    assert table[0].startswith("| μ | T | n | MSE FTP | MSE PTF | ratio FTP/PTF")
    assert len(table) == 2 + 4 * 2 * len(cli.QUICK_N)
    # Table 1 and Figure 1 report the same numbers for the same settings.
    t1, f1 = pd.read_csv(out / "table1.csv"), pd.read_csv(out / "fig1.csv")
    pd.testing.assert_series_equal(t1["ratio"], f1["ratio"])
    assert not [f for f in os.listdir(out) if f.startswith(".")]  # no temporary files, no lock left
    # Every file records the run it came from, and all of them the same run.
    assert run_ids(out) == {f: run_ids(out)["fig1.json"] for f in expect}
    assert run_ids(out)["fig1.json"] in proc.stderr


def run_ids(out) -> dict:
    """The run id each output file records (JSON field, CSV column, PNG text, HTML comment)."""
    from PIL import Image

    ids = {}
    for f in os.listdir(out):
        path = out / f
        if f.endswith(".json"):
            meta = json.loads(path.read_text())
            assert meta["command"].startswith("python -m dpfda reproduce") and "started" in meta
            ids[f] = meta["run_id"]
        elif f.endswith(".csv"):
            (ids[f],) = set(pd.read_csv(path)["run_id"])
        elif f.endswith(".png"):
            with Image.open(path) as im:
                ids[f] = im.text["dpfda run_id"]
                assert im.text["dpfda command"].startswith("python -m dpfda reproduce")
        else:
            first = path.read_text().splitlines()[0]
            assert first.startswith("<!-- dpfda run_id ") and first.endswith(" -->")
            ids[f] = first.split()[3].rstrip(":")
    return ids


def test_same_seed_same_files(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, jobs, chunk in ((a, "1", "6"), (b, "2", "4")):
        code = cli.main(["reproduce", "fig5", "--quick", "--reps", "6", "--jobs", jobs, "--seed", "3",
                         "--out", str(d), "--no-progress", "--chunk-reps", chunk])
        assert code == 0
    # The same numbers to the last digit; only the run id (the last column) differs.
    rows = {d: [line.rsplit(",", 1) for line in (d / "fig5.csv").read_text().splitlines()] for d in (a, b)}
    assert [r[0] for r in rows[a]] == [r[0] for r in rows[b]]
    assert rows[a][0][1] == "run_id" and rows[a][1][1] != rows[b][1][1]


@pytest.mark.parametrize("args, fragment", [
    (["reproduce", "fig7"], "invalid choice"),
    (["reproduce", "fig1", "--reps", "0"], "--reps"),
    (["reproduce", "fig1", "--reps", "-3"], "--reps"),
    (["reproduce", "fig1", "--reps", "1"], "--reps"),
    (["reproduce", "fig1", "--reps", "many"], "--reps"),
    (["reproduce", "fig1", "--jobs", "0"], "--jobs"),
    (["reproduce", "fig1", "--jobs", "-4"], "--jobs"),
    (["reproduce", "fig1", "--seed", "-1"], "--seed"),
    (["reproduce", "fig1", "--chunk-reps", "0"], "--chunk-reps"),
    (["reproduce"], "study"),
    ([], "reproduce"),
    (["reproduce", "fig1", "--colour", "red"], "unrecognized"),
])
def test_bad_input_one_line_exit_2(args, fragment, capsys, tmp_path):
    if "--out" not in args and args[:1] == ["reproduce"]:
        args = args + ["--out", str(tmp_path / "never")]
    code = cli.main(args)
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dpfda: error:") and fragment in lines[0]
    assert not (tmp_path / "never").exists() or not os.listdir(tmp_path / "never")


def test_unwritable_output_is_bad_input(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    for out in (blocker, blocker / "sub"):
        code = cli.main(["reproduce", "fig1", "--quick", "--out", str(out)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "--out" in err[0], err
    # Through `python -m dpfda` too: exit code 2 and no traceback.
    proc = run_cli("reproduce", "fig1", "--quick", "--out", str(blocker / "sub"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "fig.csv"

    def failing_writer(tmp):
        with open(tmp, "w") as fh:
            fh.write("half a tab")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cli.stage_file(target, failing_writer)
    assert os.listdir(tmp_path) == []
    os.replace(cli.stage_file(target, cli.text_writer("complete\n")), target)
    with pytest.raises(KeyboardInterrupt):
        cli.stage_file(target, failing_writer)
    assert target.read_text() == "complete\n" and os.listdir(tmp_path) == ["fig.csv"]


# ---------------------------------------------------------------------------
# Runs that cannot fit are refused at once (#19 defect 7)
# ---------------------------------------------------------------------------


def _limit_memory():  # so that a regression fails with MemoryError, not by eating the machine
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))


@pytest.mark.parametrize("extra, fragment", [
    (["--reps", "1000000000000"], "--reps 1000000000000 cannot fit in memory"),
    (["--reps", "1e9", "--chunk-reps", "1e9"], "--reps 1000000000 cannot fit in memory"),
])
def test_huge_reps_is_one_line_and_exit_2_within_seconds(tmp_path, extra, fragment):
    """Used to build every chunk up front (MemoryError after 2.8 GB, exit 1) or allocate one
    chunk of 10^9 repetitions (numpy's _ArrayMemoryError).  The timeout is a generous bound
    for a loaded machine: the refusal comes before any planning or simulation."""
    out = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-m", "dpfda", "reproduce", "all", "--quick", *extra,
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, cwd=ROOT,
                          env=ENV, timeout=60, preexec_fn=_limit_memory)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("dpfda: error: " + fragment) and "repetitions fit" in lines[0]
    assert not out.exists()


def test_a_chunk_that_cannot_fit_is_refused_naming_chunk_reps(tmp_path, capsys, monkeypatch):
    from dpfda.simulation import schedule

    monkeypatch.setattr(schedule, "memory_limit", lambda: 8 * 2**30)
    out = tmp_path / "res"
    code = cli.main(["reproduce", "fig6", "--quick", "--reps", "1000000", "--chunk-reps", "1000000",
                     "--out", str(out), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("dpfda: error: --chunk-reps 1000000 cannot fit in memory")
    assert "8 GiB" in lines[0] and not out.exists()
    # the same refusal from the engine, in its own terms, before anything runs
    with pytest.raises(ValueError, match="chunk_reps 1000000 cannot fit in memory"):
        schedule.run_studies([get_study("fig6", n=cli.QUICK_N)], 10**6, seed=1, chunk_reps=10**6)
    with pytest.raises(ValueError, match="reps 1000000000 cannot fit in memory"):
        schedule.run_studies([get_study("fig6", n=cli.QUICK_N)], 10**9, seed=1)


@pytest.mark.parametrize("text, value", [("1e3", 1000), ("2.5e3", 2500), ("12", 12)])
def test_reps_in_scientific_notation_is_a_whole_number(text, value):
    args = cli.build_parser().parse_args(["reproduce", "fig1", "--reps", text, "--chunk-reps", text])
    assert args.reps == value and args.chunk_reps == value
    for bad in ("1.5", "1e-3", "nan", "inf", "1e400"):
        with pytest.raises(cli.UsageError, match="--reps"):
            cli.build_parser().parse_args(["reproduce", "fig1", "--reps", bad])


def test_the_plan_is_made_lazily():
    """A run's chunks are generated as they are needed: planning 50,000 one-repetition chunks
    of each setting allocates next to nothing (a list of them used to take ~100 MB at the
    sizes where --reps 10^12 ran out of memory)."""
    import itertools
    import tracemalloc

    from dpfda.simulation import schedule

    studies = [get_study("fig5", n=cli.QUICK_N)]
    tracemalloc.start()
    settings, tasks = schedule.plan(studies, 50_000, chunk_reps=1)
    first = list(itertools.islice(tasks, 5))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**20, peak
    assert len(tasks) == 50_000 * len(settings) and len(first) == 5
    assert all(b - a == 1 for _, a, b in first)


# ---------------------------------------------------------------------------
# A run's files appear all together or not at all (#19 defect 8)
# ---------------------------------------------------------------------------


def test_a_folder_in_the_way_of_an_output_is_refused_before_the_run(tmp_path, capsys):
    """With out/table1.json a folder, the run used to exit 2 after renaming 21 of its files
    into place.  Now it stops before simulating, names the folder, and writes nothing."""
    out = tmp_path / "res"
    (out / "table1.json").mkdir(parents=True)
    code = cli.main(["reproduce", "all", "--quick", "--reps", "2", "--out", str(out), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "table1.json is a folder" in lines[0] and lines[0].startswith("dpfda: error: --out")
    assert os.listdir(out) == ["table1.json"] and os.listdir(out / "table1.json") == []


@pytest.mark.parametrize("fail_at", ["fig5.png", "fig5.json"])
def test_a_write_failure_leaves_no_final_named_file(tmp_path, capsys, monkeypatch, fail_at):
    """A rename that fails at the last moment (a full disk, a folder that appeared meanwhile)
    takes back the renames already done: the earlier run's file is restored, no new name
    stays, and no temporary file either."""
    out = tmp_path / "res"
    out.mkdir()
    (out / "fig5.csv").write_text("from an earlier run\n")
    real = os.replace

    def replace(src, dst):
        if os.fspath(dst).endswith(os.sep + fail_at):
            raise OSError(28, "No space left on device", os.fspath(dst))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    code = cli.main(["reproduce", "fig5", "--quick", "--reps", "2", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write output" in err and "No space left" in err, err
    assert os.listdir(out) == ["fig5.csv"]
    assert (out / "fig5.csv").read_text() == "from an earlier run\n"
    monkeypatch.setattr(os, "replace", real)
    assert cli.main(["reproduce", "fig5", "--quick", "--reps", "2", "--out", str(out), "--no-progress"]) == 0
    assert sorted(os.listdir(out)) == ["fig5.csv", "fig5.json", "fig5.png"]
