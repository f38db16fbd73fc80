"""``python -m dpfda reproduce …``: outputs, bad input, interruption.

Bad input must give one line on stderr and exit code 2 (no traceback); an
interrupted run must not leave a file that looks complete; files are written
under a temporary name and renamed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from dpfda import cli, plots
from dpfda.studies import get_study

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "dpfda", *args], capture_output=True, text=True,
                          cwd=ROOT, env=ENV, timeout=timeout)


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
    table = (out / "table1.md").read_text().splitlines()
    assert table[0].startswith("| mu | T | n | MSE_FTP | MSE_PTF | ratio")
    assert len(table) == 2 + 4 * 2 * len(cli.QUICK_N)
    # Table 1 and Figure 1 report the same numbers for the same settings.
    t1, f1 = pd.read_csv(out / "table1.csv"), pd.read_csv(out / "fig1.csv")
    pd.testing.assert_series_equal(t1["ratio"], f1["ratio"])
    assert not [f for f in os.listdir(out) if f.startswith(".")]  # no temporary files left


def test_same_seed_same_files(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, jobs, chunk in ((a, "1", "6"), (b, "2", "4")):
        code = cli.main(["reproduce", "fig5", "--quick", "--reps", "6", "--jobs", jobs, "--seed", "3",
                         "--out", str(d), "--no-progress", "--chunk-reps", chunk])
        assert code == 0
    assert (a / "fig5.csv").read_text() == (b / "fig5.csv").read_text()


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
        plots._atomic(target, failing_writer)
    assert os.listdir(tmp_path) == []
    plots.write_text_atomic(target, "complete\n")
    with pytest.raises(KeyboardInterrupt):
        plots._atomic(target, failing_writer)
    assert target.read_text() == "complete\n" and os.listdir(tmp_path) == ["fig.csv"]


def test_interrupted_run_leaves_nothing_that_looks_complete(tmp_path):
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "dpfda", "reproduce", "all", "--reps", "300",
                             "--jobs", "2", "--out", str(out), "--no-progress"],
                            cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not out.exists() and time.time() < deadline:  # wait until the run has started
        time.sleep(0.2)
    time.sleep(3.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert os.listdir(out) == []  # nothing half-written, nothing pretending to be a result
