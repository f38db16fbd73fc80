"""The engine on a Dask cluster gives the serial results, bit for bit.

A two-process ``distributed.LocalCluster`` on localhost (no dashboard, no
network beyond the loopback interface) runs a small study through
``joblib.parallel_config(backend="dask")``; the table must equal the serial
run exactly, because every repetition draws from its own
SeedSequence-derived stream whatever process runs it.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dpfda import engine
from dpfda.studies import Study, get_study

distributed = pytest.importorskip("distributed", reason="dask[distributed] is in requirements.txt")
joblib = pytest.importorskip("joblib")


def _study():
    fig1 = get_study("fig1").subset(n=[4, 64], T=[2, 8], mu=0.1)
    fig3 = get_study("fig3").subset(n=[16, 512], T=[4, 6], sigma0=[1.0, 10.0])
    fig6 = get_study("fig6").subset(n=[8, 256], m=[2, 8], sigma0=10.0)
    return Study("dask_check", fig1.settings + fig3.settings + fig6.settings, group="T")


def test_dask_backend_is_bit_identical_to_serial():
    study = _study()
    serial = engine.run_study(study, 16, seed=31)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        with joblib.parallel_config(backend="dask"):
            on_dask = engine.run_study(study, 16, seed=31, n_jobs=None, chunk_reps=3)
        # The work really ran on the cluster's worker processes.
        imported = client.run(lambda: "dpfda.engine" in __import__("sys").modules)
        assert len(imported) == 2 and all(imported.values()), imported
    pd.testing.assert_frame_equal(serial, on_dask, check_exact=True)
    assert (serial["p_ftp_active"] > 0).any() and (serial["p_ptf_active"] > 0).any()
