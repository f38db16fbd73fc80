"""The engine on a Dask cluster gives the serial results, bit for bit.

A two-process ``distributed.LocalCluster`` on localhost (no dashboard, no
network beyond the loopback interface) runs a small study through
``joblib.parallel_config(backend="dask")``, and ``python -m dpfda reproduce
fig1 --quick --scheduler ADDRESS`` runs on such a cluster from the command
line; the tables must equal the local runs exactly, because every repetition
draws from its own SeedSequence-derived stream whatever process runs it.  A
bad or unreachable address exits with code 2 and one line, quickly.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from dpfda.simulation import schedule
from dpfda.simulation.studies import Study, get_study

distributed = pytest.importorskip("distributed", reason="dask[distributed] is in requirements.txt")
joblib = pytest.importorskip("joblib")


def _study():
    fig1 = get_study("fig1").subset(n=[4, 64], T=[2, 8], mu=0.1)
    fig3 = get_study("fig3").subset(n=[16, 512], T=[4, 6], sigma0=[1.0, 10.0])
    fig6 = get_study("fig6").subset(n=[8, 256], m=[2, 8], sigma0=10.0)
    return Study("dask_check", fig1.settings + fig3.settings + fig6.settings)


@pytest.mark.slow
def test_dask_backend_is_bit_identical_to_serial():
    study = _study()
    serial = schedule.run_study(study, 16, seed=31)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        with joblib.parallel_config(backend="dask"):
            on_dask = schedule.run_study(study, 16, seed=31, n_jobs=None, chunk_reps=3)
        # The work really ran on the cluster's worker processes.
        imported = client.run(lambda: "dpfda.simulation.engine" in __import__("sys").modules)
        assert len(imported) == 2 and all(imported.values()), imported
    pd.testing.assert_frame_equal(serial, on_dask, check_exact=True)
    assert (serial["p_ftp_active"] > 0).any() and (serial["p_ptf_active"] > 0).any()


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "dpfda", *args], capture_output=True, text=True,
                          cwd=ROOT, env=ENV, timeout=timeout)


def _csv_without_run_id(path):
    """The CSV's bytes with its last column (``run_id``, a random id per run) cut off,
    and that run id; everything else must match byte for byte."""
    rows = path.read_bytes().split(b"\n")
    assert rows[0].endswith(b",run_id") and rows[-1] == b""
    kept, ids = [], set()
    for row in rows[:-1]:
        head, _, run_id = row.rpartition(b",")
        kept.append(head)
        ids.add(run_id)
    ids.discard(b"run_id")
    return b"\n".join(kept), ids


@pytest.mark.slow
def test_cli_on_a_dask_scheduler_writes_the_local_csv(tmp_path):
    local, remote = tmp_path / "local", tmp_path / "dask"
    proc = run_cli("reproduce", "fig1", "--quick", "--no-progress", "--out", str(local))
    assert proc.returncode == 0, proc.stderr
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        proc = run_cli("reproduce", "fig1", "--quick", "--no-progress", "--out", str(remote),
                       "--scheduler", address)
        assert proc.returncode == 0, proc.stderr
        # The repetitions ran on the cluster's worker processes.
        ran = client.run(lambda: "dpfda.simulation.engine" in __import__("sys").modules)
        assert len(ran) == 2 and all(ran.values()), ran
    assert sorted(os.listdir(remote)) == ["fig1.csv", "fig1.json", "fig1.png"]
    body_local, id_local = _csv_without_run_id(local / "fig1.csv")
    body_dask, id_dask = _csv_without_run_id(remote / "fig1.csv")
    assert body_dask == body_local  # byte for byte, but for the run id
    meta = json.loads((remote / "fig1.json").read_text())
    assert id_dask == {meta["run_id"].encode()} and id_dask != id_local
    assert meta["scheduler"] == address and meta["jobs"] is None
    assert len(body_local.splitlines()) == 1 + len(get_study("fig1", n=(4, 16, 64, 256)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address, message", [
    (f"tcp://127.0.0.1:{_free_port()}", "cannot connect"),  # nothing listens there
    ("no-port-here", "must be a scheduler's address"),
    ("tcp://127.0.0.1:99999", "must be a scheduler's address"),
    ("inproc://somewhere", "must be a scheduler's address"),
])
def test_bad_or_unreachable_scheduler_exits_2_with_one_line(tmp_path, address, message):
    t0 = time.monotonic()
    proc = run_cli("reproduce", "fig1", "--quick", "--out", str(tmp_path / "o"), "--scheduler", address)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert proc.stderr.startswith("dpfda: error: --scheduler")
    assert time.monotonic() - t0 < 60  # no long retry (the refused connection fails at once)
    assert not os.path.exists(tmp_path / "o" / "fig1.csv")


def test_a_scheduler_that_is_not_dask_exits_2(tmp_path):
    """Something listens at the address but does not speak Dask's protocol."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        proc = run_cli("reproduce", "fig1", "--quick", "--out", str(tmp_path / "o"),
                       "--scheduler", f"tcp://127.0.0.1:{port}")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "no Dask scheduler answered" in proc.stderr, proc.stderr


def test_jobs_and_scheduler_exclude_each_other(tmp_path):
    proc = run_cli("reproduce", "fig1", "--quick", "--jobs", "2", "--out", str(tmp_path / "o"),
                   "--scheduler", "tcp://127.0.0.1:8786")
    assert proc.returncode == 2 and "exclude each other" in proc.stderr
