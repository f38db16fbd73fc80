"""The README's quickstart runs as written: its Python block and its command line.

The blocks are taken from README.md verbatim and run in a folder holding a heights.csv
of the Berkeley growth data (one row per child, one column per age).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from _readme import ROOT, quickstart_blocks, write_heights_csv

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


def test_readme_quickstart_python_block_runs_verbatim(tmp_path):
    blocks = quickstart_blocks()
    assert len(blocks["python"]) == 1
    code = blocks["python"][0]
    assert len([line for line in code.splitlines() if line.strip()]) <= 14  # about ten lines
    write_heights_csv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "release.json").read_text())
    check_record(record)
    assert record["frame"]["scale"] > 0 and record["radius"] <= 1.0 + 1e-12
    # The curve is in centimetres: within six of its own noise standard deviations (in cm) of
    # the same fit with almost no noise, which lies between the band's ends and rises.
    # OpenDP's noise cannot be seeded; a bound on the noisy curve itself would fail by chance
    # (the sd at age 1 is about 13 cm). Here P(fail) <= 69 * P(|Z| > 6) < 2e-7.
    values, sd = np.array(record["curve"]["values"]), np.array(record["noise_sd"])
    reference = _almost_noiseless_curve(tmp_path / "heights.csv", record["curve"]["points"])
    assert sd.shape == values.shape and (sd > 0).all()
    assert (np.abs(values - reference) <= 6 * sd).all()
    assert 60 < reference.min() and reference.max() < 210 and reference[-1] - reference[0] > 50


def _almost_noiseless_curve(path, points) -> np.ndarray:
    """The quickstart's fit at mu = 1e6 (noise sd below 1e-4 cm), seeded."""
    from dpfda.practice.publish import read_curves, release_record

    ages, heights = read_curves(path, id="child")
    frame = dpfda.PublicFrame(dpfda.LegendreSpace(8), ages, dpfda.Domain(1, 18, name="age"),
                              lower=60, upper=210)
    release = dpfda.ftp(frame.to_unit(heights), frame.grid, frame.space, frame.radius, mu=1e6,
                        rng=np.random.default_rng(0))
    record = release_record(release, np.asarray(points), frame=frame)
    assert max(record["noise_sd"]) < 1e-4
    return np.array(record["curve"]["values"])


def test_readme_quickstart_command_line_runs_verbatim(tmp_path):
    blocks = quickstart_blocks()
    assert len(blocks["bash"]) == 1
    # an empty folder: the block writes heights.csv and temps.csv itself (python -m dpfda example)
    bindir = os.path.dirname(sys.executable)  # `python` is this environment's
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["bash", "-ec", blocks["bash"][0]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ε = 4.38 at δ = 1e-05" in proc.stdout and "OpenDP" in proc.stdout
    record = json.loads((tmp_path / "release-cli.json").read_text())
    check_record(record)
    # The same public frame as the Python block: the band 60-210 cm, centred, B' = 1.
    # the scale from a least-squares reference (its residual γ_{8(T+m)}·||Φ||·||θ|| ≈ 1e-11 of 135 cm
    # at most); the radius from clips <= 1 (a sum of 3T terms, γ_{3T} over 1e-12 for T <= 100)
    assert abs(record["frame"]["scale"] - 75.0) < 1e-9 and record["radius"] <= 1.0 + 1e-12
    assert np.allclose(record["curve"]["points"], np.linspace(1, 18, 69), rtol=0, atol=gamma(3) * 18)
    # The example file is the test's own Berkeley file, byte for byte in its values.
    ours = write_heights_csv(tmp_path / "ours")
    assert np.array_equal(np.loadtxt(ours, delimiter=",", skiprows=1, usecols=range(1, 32)),
                          np.loadtxt(tmp_path / "heights.csv", delimiter=",", skiprows=1, usecols=range(1, 32)))
    temps = json.loads((tmp_path / "temps.json").read_text())
    assert temps["space"] == {"kind": "fourier", "dimension": 7, "spec": "fourier:7"} and temps["n"] == 365
    assert len(temps["noise_sd"]) == len(temps["curve"]["values"]) and "own points" in temps["sampling"]
    assert (tmp_path / "temps.png").read_bytes().startswith(b"\x89PNG")


def test_readme_names_the_install_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install .\n" in text and "make book" in text and "make test" in text
