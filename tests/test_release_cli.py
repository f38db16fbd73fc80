"""``python -m dpfda release``: wide and long CSV, PTF, secure default, bad input → exit 2.

Most cases call :func:`dpfda.cli.main` in this process (quick); one runs the real entry
point ``python -m dpfda``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import dpfda
from dpfda import cli, fit_ball
from dpfda.cli._release import SPACE_HELP, space_option
from dpfda.maths.rounding import fit_rtol
from dpfda.maths.spaces import SPACE_FAMILIES
from dpfda.maths.summation import gamma

from _spaces import all_spaces

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POINTS = np.array([0.0, 0.2, 0.5, 0.7, 1.0])
GRID = "0,0.2,0.5,0.7,1"


def curves(n=60, seed=3):
    rng = np.random.default_rng(seed)
    space = dpfda.LegendreSpace(3)
    coef = rng.uniform(-0.4, 0.4, size=(n, 3))
    return space.evaluate(coef, POINTS)


def write_wide(path, X, ids=True):
    table = pd.DataFrame(X, columns=[f"{p:g}" for p in POINTS])
    if ids:
        table.insert(0, "subject", [f"s{i:03d}" for i in range(len(X))])
    table.to_csv(path, index=False)
    return path


def write_long(path, X):
    rows = [{"subject": f"s{i:03d}", "t": p, "y": X[i, j]}
            for i in range(len(X)) for j, p in enumerate(POINTS)]
    pd.DataFrame(rows).sample(frac=1.0, random_state=0).to_csv(path, index=False)  # any row order
    return path


def release(tmp_path, *args, name="release.json"):
    out = tmp_path / name
    code = cli.main(["release", *map(str, args), "--out", str(out)])
    return code, out


BASE = ("--grid", GRID, "--space", "legendre:3", "--radius", "1.5", "--mu", "1")


def test_wide_csv_writes_the_curve_and_every_public_parameter(tmp_path, capsys):
    data = write_wide(tmp_path / "wide.csv", curves())
    code, out = release(tmp_path, data, "--id", "subject", *BASE, "--eval", "0:1:11")
    assert code == 0
    rec = json.loads(out.read_text())
    assert rec["method"] == "ftp" and rec["mechanism"].startswith("FTP (Algorithm 1")
    assert rec["secure"] is True and "OpenDP" in rec["noise"]  # secure by default
    assert rec["mu"] == 1.0 and rec["n"] == 60 and rec["radius"] == 1.5
    assert rec["privacy_unit"].startswith("one subject's curve, replaced by another curve; n public")
    assert rec["noise_scale"] == pytest.approx(2 * 1.5 / 60, rel=gamma(4), abs=0)
    assert [p["delta"] for p in rec["epsilon_delta"]] == [1e-5, 1e-6, 1e-7]
    for p in rec["epsilon_delta"]:
        assert p["epsilon"] == pytest.approx(float(dpfda.epsilon_from_mu(1.0, p["delta"])), rel=gamma(1), abs=0)
    assert rec["space"] == {"kind": "legendre", "dimension": 3, "spec": "legendre:3"}
    assert rec["grid"]["points"] == POINTS.tolist() and rec["grid"]["unit"] == POINTS.tolist()
    assert rec["domain"] == {"start": 0.0, "stop": 1.0, "name": "grid point"}
    assert rec["clip"] is None and rec["weights"] is None and rec["frame"] is None
    assert rec["dpfda_version"] == dpfda.__version__
    assert rec["curve"]["points"] == pytest.approx(np.linspace(0, 1, 11).tolist(), rel=gamma(4), abs=0)
    assert len(rec["curve"]["values"]) == 11 and np.isfinite(rec["curve"]["values"]).all()
    said = capsys.readouterr().out
    assert "μ = 1" in said and "ε = 4.38 at δ = 1e-05" in said and "OpenDP" in said


def test_long_csv_gives_the_same_release_as_wide(tmp_path):
    X = curves()
    wide = write_wide(tmp_path / "wide.csv", X)
    long = write_long(tmp_path / "long.csv", X)
    noise = ("--insecure-numpy-noise", "--seed", "7")
    c1, o1 = release(tmp_path, wide, "--id", "subject", *BASE, *noise, name="a.json")
    c2, o2 = release(tmp_path, long, "--layout", "long", "--id", "subject", "--point", "t", "--value", "y",
                     *BASE, *noise, name="b.json")
    assert c1 == c2 == 0
    a, b = json.loads(o1.read_text()), json.loads(o2.read_text())
    assert a["secure"] is False and "not publication" in a["noise"]
    assert a["n"] == b["n"] == 60 and a["curve"]["points"] == b["curve"]["points"]
    # The same noise; the mean of the fits differs only by the order of the subjects (shuffled rows):
    # exact sums, and fits that may take other BLAS paths in other rows: fit_rtol of |θ| <= 1.5, through
    # |φ(t)| <= 3 (H_3), plus the evaluations' products
    Phi = dpfda.LegendreSpace(3).at(POINTS).Phi
    ratio = np.max(np.linalg.norm(X, axis=1) / np.linalg.norm(fit_ball(X, Phi, 1.5).coef, axis=1)) / np.sqrt(
        np.linalg.norm(Phi.T @ Phi, 2))
    atol = 2 * fit_rtol(Phi.T @ Phi, 5, data_ratio=ratio) * 1.5 * 3 + 2 * gamma(3) * 3 * 1.5 * 3
    assert np.allclose(a["curve"]["values"], b["curve"]["values"], rtol=0, atol=atol)
    # The same seed gives the library's own release: the command adds nothing of its own.
    grid = POINTS
    rel = dpfda.ftp(X, grid, dpfda.LegendreSpace(3), 1.5, 1.0, np.random.default_rng(7))
    assert np.allclose(a["curve"]["values"], rel(np.linspace(0, 1, 101)), rtol=0, atol=atol)


def test_ptf_with_clip_and_a_domain_in_the_data_units(tmp_path):
    X = curves()
    table = pd.DataFrame(X, columns=[f"{a:g}" for a in 10 + 8 * POINTS])  # ages 10..18
    table.to_csv(tmp_path / "ages.csv", index=False)
    code, out = release(tmp_path, tmp_path / "ages.csv", "--grid", "10,11.6,14,15.6,18", "--domain", "10,18",
                        "--space", "legendre:3", "--radius", "1.5", "--mu", "2", "--method", "ptf",
                        "--clip", "1,1,1.2,1,1", "--eval", "10:18:5")
    assert code == 0
    rec = json.loads(out.read_text())
    assert rec["method"] == "ptf" and rec["clip"] == [1, 1, 1.2, 1, 1] and len(rec["weights"]) == 5
    assert rec["grid"]["unit"] == pytest.approx(POINTS.tolist(), rel=gamma(4), abs=gamma(4))  # (x − 10)/8
    assert rec["curve"]["points"] == [10, 12, 14, 16, 18]
    assert rec["noise_scale"] == pytest.approx((2 * np.array([1, 1, 1.2, 1, 1]) / 60 * np.sqrt(5) / 2).tolist(),
                                               rel=gamma(10), abs=0)  # σ_j = 2c_j√T/(nμ)


def test_missing_values_exit_2_with_what_to_do_and_write_nothing(tmp_path, capsys):
    X = curves()
    X[4, 2] = np.nan
    data = write_wide(tmp_path / "gaps.csv", X)
    code, out = release(tmp_path, data, "--id", "subject", *BASE)
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpfda: error: ")
    assert "1 missing value(s)" in err and "'s004'" in err and "at point 0.5" in err
    assert "public rule" in err and "drop" in err  # what to do, with its privacy consequence


def test_the_real_entry_point_exits_2_on_a_missing_value(tmp_path):
    X = curves()
    X[0, 0] = np.nan
    data = write_wide(tmp_path / "gaps.csv", X)
    proc = subprocess.run([sys.executable, "-m", "dpfda", "release", str(data), "--id", "subject", *BASE,
                           "--out", str(tmp_path / "r.json")], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 2 and "missing value" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.json").exists()


def test_per_subject_grids_are_refused_with_the_reason(tmp_path, capsys):
    X = curves()
    long = write_long(tmp_path / "long.csv", X)
    table = pd.read_csv(long)
    table.loc[table.subject == "s001", "t"] += 0.05  # one subject measured at its own points
    table.to_csv(long, index=False)
    code, _ = release(tmp_path, long, "--layout", "long", "--id", "subject", "--point", "t", "--value", "y",
                      *BASE)
    assert code == 2
    err = capsys.readouterr().err
    assert "common grid" in err and "own points" in err


@pytest.mark.parametrize("space", [s for _, s in all_spaces()], ids=lambda s: s.spec)
def test_space_reads_every_spec_of_the_registry(space):
    assert space_option(space.spec) == space


def test_space_help_names_every_family():
    for family in SPACE_FAMILIES.values():
        assert f"{family.spec_form} ({family.spec_help})" in SPACE_HELP


@pytest.mark.parametrize("args, message", [
    (("--grid", "0,0.25,0.5,0.75,1"), "is not the public --grid"),
    (("--grid", "0,0.5,0.2"), "--grid must be strictly increasing"),
    (("--grid", "a,b"), "--grid must be numbers"),
    (("--space", "spline:3"), "--space must be legendre:M"),
    (("--space", "legendre:0"), "m must be an integer >= 1"),
    (("--radius", "-1"), "radius must be a finite number > 0"),
    (("--mu", "nan"), "--mu: must be a finite number > 0"),
    (("--clip", "1"), "--clip: FTP does not clip"),
    (("--seed", "3"), "--seed is for --insecure-numpy-noise only"),
])
def test_bad_choices_exit_2_naming_the_option(tmp_path, capsys, args, message):
    data = write_wide(tmp_path / "wide.csv", curves())
    opts = dict(zip(BASE[::2], BASE[1::2]))
    opts.update(dict(zip(args[::2], args[1::2])))
    flat = [x for kv in opts.items() for x in kv]
    code, out = release(tmp_path, data, "--id", "subject", *flat)
    assert code == 2 and not out.exists()
    assert message in capsys.readouterr().err


def test_a_header_that_is_not_a_point_asks_for_the_subject_column(tmp_path, capsys):
    data = write_wide(tmp_path / "wide.csv", curves())
    code, _ = release(tmp_path, data, *BASE)  # no --id
    assert code == 2 and "column 'subject' is not a grid point" in capsys.readouterr().err


def test_an_existing_release_is_never_overwritten(tmp_path, capsys):
    data = write_wide(tmp_path / "wide.csv", curves())
    out = tmp_path / "release.json"
    out.write_text("earlier release\n")
    code = cli.main(["release", str(data), "--id", "subject", *BASE, "--out", str(out)])
    assert code == 2 and out.read_text() == "earlier release\n"
    assert "spends the budget again" in capsys.readouterr().err
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".")]  # no temporary file left


def test_secure_releases_are_not_reproducible(tmp_path):
    data = write_wide(tmp_path / "wide.csv", curves())
    c1, o1 = release(tmp_path, data, "--id", "subject", *BASE, name="a.json")
    c2, o2 = release(tmp_path, data, "--id", "subject", *BASE, name="b.json")
    assert c1 == c2 == 0
    assert json.loads(o1.read_text())["curve"] != json.loads(o2.read_text())["curve"]


def test_a_public_range_gives_the_frame_its_radius_and_clip(tmp_path):
    X = 170.0 + 10.0 * curves()  # heights in cm, inside 140-200
    table = pd.DataFrame(X, columns=[f"{p:g}" for p in POINTS])
    table.to_csv(tmp_path / "cm.csv", index=False)
    common = (tmp_path / "cm.csv", "--grid", GRID, "--space", "legendre:3", "--mu", "1")
    code, out = release(tmp_path, *common, "--lower", "140", "--upper", "200,200,200,200,210",
                        "--method", "ptf", "--insecure-numpy-noise", "--seed", "4", "--eval", "0,1")
    assert code == 0
    rec = json.loads(out.read_text())
    frame = dpfda.PublicFrame(dpfda.LegendreSpace(3), POINTS, dpfda.Domain(0, 1, name="grid point"),
                              140.0, [200, 200, 200, 200, 210.0])
    assert rec["radius"] == frame.radius and rec["clip"] == frame.clip.tolist()
    assert rec["weights"] == frame.weights.tolist() and rec["frame"]["scale"] == frame.scale
    rel = dpfda.ptf(frame.to_unit(X), frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(4),
                    clip=frame.clip, weights=frame.weights)
    assert np.allclose(rec["curve"]["values"], frame.values(rel, [0.0, 1.0]), rtol=0, atol=1e-9)  # in cm


@pytest.mark.parametrize("args, message", [
    (("--lower", "140"), "--upper: lower and upper go together"),
    (("--lower", "140", "--upper", "200", "--method", "ptf", "--clip", "1"),
     "--clip: a range (lower, upper) gives PTF's clip"),
    (("--lower", "140", "--upper", "130"), "upper must be > lower"),
    (("--lower", "140", "--upper", "200", "--space", "gaussian:0.2"), "bounds no RKHS norm"),
    ((), "--radius: give B'"),
])
def test_public_range_errors_exit_2(tmp_path, capsys, args, message):
    data = write_wide(tmp_path / "wide.csv", curves())
    opts = {"--grid": GRID, "--space": "legendre:3", "--mu": "1"}
    opts.update(dict(zip(args[::2], args[1::2])))
    code, out = release(tmp_path, data, "--id", "subject", *[x for kv in opts.items() for x in kv])
    assert code == 2 and not out.exists()
    assert message in capsys.readouterr().err


def test_the_curator_sees_diagnostics_on_stderr_never_in_the_record(tmp_path, capsys):
    X = 170.0 + 10.0 * curves()
    table = pd.DataFrame(X, columns=[f"{p:g}" for p in POINTS])
    table.to_csv(tmp_path / "cm.csv", index=False)
    common = (tmp_path / "cm.csv", "--grid", GRID, "--space", "legendre:3", "--mu", "1")
    code, out = release(tmp_path, *common, "--lower", "140", "--upper", "200", name="good.json")
    assert code == 0
    said = capsys.readouterr()
    assert "curator's diagnostics" in said.err and "NOT private" in said.err and "WARNING" not in said.err
    assert "values clipped: 0 of 300" in said.err and "band 140 to 200" in said.err
    assert "diagnostics" not in said.out  # stdout: what may be published
    text = out.read_text()
    assert "clipped" not in text and "shrunk" not in text and "data_range" not in text
    # The file in inches against the band in cm: released (private) but flat at the band's edge.
    (tmp_path / "in.csv").write_text(pd.DataFrame(X / 2.54, columns=table.columns).to_csv(index=False))
    code, out = release(tmp_path, tmp_path / "in.csv", *common[1:], "--lower", "140", "--upper", "200",
                        name="inches.json")
    assert code == 0
    err = capsys.readouterr().err
    assert "values clipped: 300 of 300 (100.0%)" in err and "WARNING: 100% of the values were clipped" in err
    # --radius in the data's units instead of the frame's: every fit shrunk onto the ball.
    code, out = release(tmp_path, *common, "--radius", "1", name="radius.json")
    assert code == 0
    assert "WARNING: 100% of the curves' fits were shrunk onto the ball of radius B' = 1" in capsys.readouterr().err


def test_the_command_says_its_diagnostics_once_without_the_python_warning(tmp_path, capsys):
    """The release the command makes would warn in Python too; the command's stderr has said it already."""
    X = 170.0 + 10.0 * curves()
    (tmp_path / "in.csv").write_text(pd.DataFrame(X / 2.54, columns=[f"{p:g}" for p in POINTS]).to_csv(index=False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _ = release(tmp_path, tmp_path / "in.csv", "--grid", GRID, "--space", "legendre:3", "--mu", "1",
                          "--lower", "140", "--upper", "200", "--insecure-numpy-noise", "--seed", "1")
    err = capsys.readouterr().err
    assert code == 0 and err.count("WARNING: 100% of the values were clipped") == 1
    assert not [w for w in caught if issubclass(w.category, dpfda.CuratorWarning)]


def test_help_says_the_diagnostics_are_not_private(capsys):
    with pytest.raises(SystemExit):
        cli.main(["release", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "NOT private and must not be published" in text and "--combine" in text


def test_combine_mean_releases_one_curve_per_subject_and_says_so(tmp_path):
    X = curves(n=10)
    data = write_wide(tmp_path / "twice.csv", np.concatenate([X, X + 0.1]))
    table = pd.read_csv(data)
    table["subject"] = [f"s{i % 10:03d}" for i in range(20)]  # every subject on two rows
    table.to_csv(data, index=False)
    code, _ = release(tmp_path, data, "--id", "subject", *BASE, name="refused.json")
    assert code == 2
    code, out = release(tmp_path, data, "--id", "subject", *BASE, "--combine", "mean", name="mean.json")
    assert code == 0
    rec = json.loads(out.read_text())
    assert rec["n"] == 10 and "the mean of the subject's values" in rec["privacy_unit"]


@pytest.mark.parametrize("method, layout", [("ftp", "wide"), ("ptf", "wide"), ("ftp", "own points")])
def test_the_command_is_the_specification_s_release_and_record(tmp_path, method, layout):
    """The command's record is the release's own record through ReleaseSpec and FTP/PTF (the one release
    path), plus the command, how each choice was made; the same generator gives the same record."""
    X = 170 + 30 * curves(40)
    if layout == "wide":
        data, where = write_wide(tmp_path / "cm.csv", X), ("--id", "subject", "--grid", GRID)
        read = dpfda.practice.reading.read_curves(data, id="subject", domain=(0, 1)).values
        grid = POINTS
    else:  # long form, one reading missing: each subject on its own points
        data = write_long(tmp_path / "cm.csv", X)
        data.write_text("\n".join(data.read_text().splitlines()[:-1]) + "\n")
        where = ("--layout", "long", "--id", "subject", "--point", "t", "--value", "y", "--domain", "0,1")
        read = dpfda.practice.reading.read_curves(data, layout="long", id="subject", point="t", value="y",
                                                  own_points=True, domain=(0, 1))
        grid = None
    code, out = release(tmp_path, data, *where, "--space", "legendre:3", "--lower", "140", "--upper", "200",
                        "--epsilon", "1", "--delta", "1e-6", "--method", method, "--eval", "0:1:7",
                        "--ylabel", "height (cm)", "--insecure-numpy-noise", "--seed", "5")
    assert code == 0
    got = json.loads(out.read_text())
    assert got.pop("command")["space"] == "legendre:3" and got.pop("how_chosen")["band"].startswith("given")
    spec = dpfda.ReleaseSpec(space="legendre:3", domain=dpfda.Domain(0, 1, name="t" if grid is None else "grid point"),
                             grid=grid, lower=140, upper=200, epsilon=1.0, delta=1e-6, secure=False,
                             units="height (cm)")
    mechanism = dpfda.FTP(spec) if method == "ftp" else dpfda.PTF(spec)
    want = mechanism.release(read, np.random.default_rng(5)).record(np.linspace(0, 1, 7))
    assert got == json.loads(json.dumps(want))
