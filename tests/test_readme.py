"""The README's quickstart runs as written, in order and twice: its command lines and its Python block.

The blocks are taken from README.md verbatim and run in an empty folder, in the order a
reader meets them (the first block writes the heights.csv the Python block reads), and then
again in the same folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from _readme import ROOT, section_blocks, write_heights_csv

import dpfda
from dpfda.maths.summation import gamma


def check_record(record: dict, secure: bool = True) -> None:
    assert record["dpfda_version"] == dpfda.__version__
    assert record["secure"] is secure and ("OpenDP" in record["noise"]) is secure
    assert record["mu"] == 1.0 and record["n"] == 93
    pairs = {p["delta"]: p["epsilon"] for p in record["epsilon_delta"]}
    assert set(pairs) == {1e-5, 1e-6, 1e-7}
    assert abs(pairs[1e-5] - float(dpfda.epsilon_from_mu(1.0, 1e-5))) < 1e-12  # the same function: a few ulps of 4.4
    assert round(pairs[1e-5], 1) == 4.4  # the README's comment says (ε, δ) = (4.4, 1e-5)
    assert record["space"] == {"kind": "legendre", "dimension": 8, "spec": "legendre:8"}
    points, values = np.array(record["curve"]["points"]), np.array(record["curve"]["values"])
    assert points.shape == values.shape and np.isfinite(values).all()
    assert len(record["grid"]["points"]) == 31 and record["grid"]["points"][0] == 1.0


def _run_blocks(blocks: list[tuple[str, str]], folder) -> list[subprocess.CompletedProcess]:
    """Each block, verbatim and in order, in ``folder``: bash blocks with ``bash -e``, Python with ``-c``."""
    bindir = os.path.dirname(sys.executable)  # `python` is this environment's
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    runs = []
    for lang, body in blocks:
        command = ["bash", "-ec", body] if lang == "bash" else [sys.executable, "-c", body]
        proc = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (lang, body[:60], proc.stderr)
        runs.append(proc)
    return runs


def test_readme_quickstart_runs_in_order_as_written_twice(tmp_path):
    """The quickstart's blocks in the order a reader meets them, in an empty folder, and again in the
    same folder: the example files are made before they are read, and nothing of the first run
    stops the second (a second release is recorded by the ledger)."""
    blocks = section_blocks()
    assert [lang for lang, _ in blocks] == ["bash", "python", "bash"]
    code = blocks[1][1]
    assert len([line for line in code.splitlines() if line.strip()]) <= 14  # about ten lines
    for run in (1, 2):
        runs = _run_blocks(blocks, tmp_path)
        record = json.loads((tmp_path / "release.json").read_text())
        check_record(record)
        # the radius from clips <= 1 (a sum of 3T terms, γ_{3T} under 1e-12 for T <= 100)
        assert record["frame"]["scale"] > 0 and record["radius"] <= 1.0 + 1e-12
        assert "CuratorWarning" not in runs[1].stderr  # the Python block's data fit its range: no warning
        cli_run = runs[2]
        assert "ε = 4.38 at δ = 1e-05" in cli_run.stdout and "OpenDP" in cli_run.stdout
        assert "curator's diagnostics" in cli_run.stderr and "WARNING" not in cli_run.stderr
        cli = json.loads((tmp_path / "release-cli.json").read_text())
        check_record(cli)
        assert cli["units"] == {"points": "age (years)", "values": "height (cm)"} == record["units"]
        temps = json.loads((tmp_path / "temps.json").read_text())
        assert temps["space"]["kind"] == "fourier" and temps["space"]["dimension"] == 7 and temps["n"] == 365
        assert temps["frame"]["lower"] == -30 and temps["frame"]["upper"] == 45 and "own points" in temps["sampling"]
        assert temps["ledger"]["releases"] == run
        # run releases at μ = 1: the squares add exactly, one square root (a few roundings in another order)
        assert temps["ledger"]["mu_total"] == pytest.approx(np.sqrt(run), rel=gamma(3), abs=0)
        assert (tmp_path / "temps.png").read_bytes().startswith(b"\x89PNG")
    # The curve in centimetres: within six of its own noise standard deviations (in cm) of the same
    # fit with almost no noise, which lies between the band's ends and rises. OpenDP's noise cannot
    # be seeded; a bound on the noisy curve itself would fail by chance (the sd at age 1 is about
    # 13 cm). Here P(fail) <= 69 * P(|Z| > 6) < 2e-7.
    values, sd = np.array(record["curve"]["values"]), np.array(record["noise_sd"])
    reference = _almost_noiseless_curve(tmp_path / "heights.csv", record["curve"]["points"])
    assert sd.shape == values.shape and (sd > 0).all()
    assert (np.abs(values - reference) <= 6 * sd).all()
    assert 60 < reference.min() and reference.max() < 210 and reference[-1] - reference[0] > 50
    # The example file is the test's own Berkeley file, byte for byte in its values.
    ours = write_heights_csv(tmp_path / "ours")
    assert np.array_equal(np.loadtxt(ours, delimiter=",", skiprows=1, usecols=range(1, 32)),
                          np.loadtxt(tmp_path / "heights.csv", delimiter=",", skiprows=1, usecols=range(1, 32)))


def test_readme_more_commands_run_as_written_twice(tmp_path):
    blocks = section_blocks("More from the command line")
    assert [lang for lang, _ in blocks] == ["bash"]
    for _ in (1, 2):
        (run,) = _run_blocks(blocks, tmp_path)
        assert "no noise drawn, nothing written, nothing spent" in run.stderr
        assert "curator's diagnostics" in run.stderr
        record = json.loads((tmp_path / "temps-private.json").read_text())
        parts = record["budget"]["parts"]
        assert record["mu"] == 1.0 and [p["step"] for p in parts] == ["radius", "release"]
        assert np.hypot(*(p["mu"] for p in parts)) <= 1.0 and 0 < record["chosen_privately"]["radius"]["value"] <= 1
    # --check wrote nothing; the private-radius release its record
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proxy.csv", "temps-private.json", "temps.csv"]


def _almost_noiseless_curve(path, points) -> np.ndarray:
    """The quickstart's fit at mu = 1e6 (noise sd below 1e-4 cm), seeded."""
    from dpfda.practice.publish import read_curves

    ages = dpfda.Domain(1, 18, name="age")
    heights = read_curves(path, id="child", domain=ages, units="height (cm)")
    spec = dpfda.ReleaseSpec(space="legendre:8", domain=ages, grid=heights.points, lower=60, upper=210,
                             units="height (cm)", mu=1e6, secure=False)
    record = dpfda.FTP(spec).release(heights, np.random.default_rng(0)).record(np.asarray(points))
    assert max(record["noise_sd"]) < 1e-4
    return np.array(record["curve"]["values"])


def test_readme_names_the_install_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install .\n" in text and "make book" in text and "make test" in text
