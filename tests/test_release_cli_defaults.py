"""``python -m dpfda release``: bounds in the data's units for every layout and space, the report
before any noise, periodic domains, labels, (ε, δ), the dimension from a proxy, the ledger.

Each case calls :func:`dpfda.cli.main` in this process; where the release itself matters it
uses numpy's seeded noise (``--insecure-numpy-noise --seed``) so the command's curve can be
compared with the library's, bit for bit or within a stated rounding bound.
"""

from __future__ import annotations

import json

import numpy as np
import opendp.core
import pandas as pd
import pytest

import dpfda
from dpfda import cli
from dpfda.maths.rounding import product_atol
from dpfda.maths.summation import gamma
from dpfda.practice.ledger import data_identity, identity_fingerprint

HOURS = np.arange(24.0)
SEEDED = ("--insecure-numpy-noise", "--seed", "7")


def hourly(n=120, seed=8, fahrenheit=True):
    """n days of hourly temperatures (°F), each day without one to three of its hours."""
    rng = np.random.default_rng(seed)
    X = 60 + 12 * np.sin(2 * np.pi * (HOURS - 9) / 24) + rng.normal(0, 3, (n, 24)) + rng.normal(0, 8, (n, 1))
    if not fahrenheit:
        X = (X - 32) * 5 / 9
    keep = [np.sort(rng.choice(24, size=24 - k, replace=False)) for k in rng.integers(1, 4, n)]
    return X, keep


def write_long(path, X, keep):
    rows = [(f"d{i:03d}", HOURS[j], round(float(X[i, j]), 2)) for i, k in enumerate(keep) for j in k]
    pd.DataFrame(rows, columns=["day", "hour", "temp"]).to_csv(path, index=False)
    return path


def write_wide(path, X, points=HOURS, id="day"):
    table = pd.DataFrame(np.round(X, 2), columns=[f"{p:g}" for p in points])
    table.insert(0, id, [f"d{i:03d}" for i in range(len(X))])
    table.to_csv(path, index=False)
    return path


LONG = ("--layout", "long", "--id", "day", "--point", "hour", "--value", "temp", "--domain", "0,24")


def run(tmp_path, *args, out="r.json"):
    path = tmp_path / out
    code = cli.main(["release", *map(str, args), "--out", str(path)])
    return code, path


# --- bounds in the data's units without a grid, in a periodic space ---------------------------


def test_long_form_on_own_points_with_a_range_is_the_librarys_frame_release(tmp_path, capsys):
    X, keep = hourly()
    data = write_long(tmp_path / "hourly.csv", X, keep)
    code, out = run(tmp_path, data, *LONG, "--space", "fourier:7", "--lower", "20", "--upper", "110", "--mu", "1",
                    "--eval", "0:23:24", *SEEDED)
    assert code == 0, capsys.readouterr().err
    rec = json.loads(out.read_text())
    assert rec["how_chosen"]["radius"].startswith("the band's bound") and "own points" in rec["sampling"]
    assert rec["units"] == {"points": "hour", "values": "temp"} and rec["domain"]["name"] == "hour"
    # the library, step by step: the band on the layout grid, each day mapped on its own hours
    days = dpfda.practice.reading.read_curves(data, layout="long", id="day", point="hour", value="temp",
                                              own_points=True, domain=(0, 24))
    frame = dpfda.PublicFrame(dpfda.FourierSpace(7), np.linspace(0, 24, 101), dpfda.Domain(0, 24), 20, 110)
    rel = dpfda.ftp(frame.to_unit(days), frame.grid, frame.space, frame.radius, 1.0, np.random.default_rng(7))
    assert rec["frame"]["scale"] == frame.scale and rec["radius"] == frame.radius  # the same steps on the same band
    # r, the consistent least-squares fit of the midpoint 65, within res of it (a backward-stable fit's residual
    # γ_{8(T+m)}·‖Φ‖·‖θ‖, the product γ_m·|Φ||θ|, the midpoint one rounding); the half-widths round once
    # (γ₁·110): scale within res + γ₁·110 of 45; ĉ in [1 − η, 1], and the radius's sum of 3T terms adds γ_{3T+8}
    Phi, ref = frame.geometry.Phi, frame.reference
    res = (gamma(8 * (frame.grid.size + 7)) * np.linalg.norm(Phi, 2) * np.linalg.norm(ref)
           + product_atol(Phi, ref) + gamma(1) * 65).max()
    assert frame.scale == pytest.approx(45.0, rel=(res + gamma(1) * 110) / 45, abs=0)
    eta = (res + 2 * gamma(1) * 110) / 45 + gamma(1)
    assert frame.radius == pytest.approx(1.0, rel=eta + gamma(3 * frame.grid.size + 8), abs=0)
    assert np.array_equal(rec["curve"]["values"], frame.values(rel, np.linspace(0, 23, 24)))


def test_a_long_file_on_its_own_points_is_as_accurate_as_the_wide_band_release(tmp_path, capsys):
    """Days on their own hours, centred on the band, against the same days interpolated onto the 24
    hours and released in wide form with the band: the same accuracy, and better than the old
    recipe's radius in the data's units (50 °F, no centring), which also shrinks every fit."""
    X, keep = hourly(n=365)
    long = write_long(tmp_path / "long.csv", X, keep)
    days = dpfda.practice.reading.read_curves(long, layout="long", id="day", point="hour", value="temp",
                                              own_points=True, domain=(0, 24))
    wide_values = days.on_grid(HOURS / 24, periodic=True).values  # a public map of each day alone
    wide = write_wide(tmp_path / "wide.csv", wide_values)
    truth = wide_values.mean(axis=0)
    band = ("--space", "fourier:7", "--lower", "20", "--upper", "110", "--mu", "1", "--eval", "0:23:24")
    errors = {"long": [], "wide": [], "radius 50": []}
    for k in range(20):
        seed = ("--insecure-numpy-noise", "--seed", str(k))
        runs = {"long": (long, *LONG, *band), "wide": (wide, "--id", "day", "--grid", "0:23:24", "--domain", "0,24",
                                                       *band),
                "radius 50": (long, *LONG, "--space", "fourier:7", "--radius", "50", "--mu", "1", "--eval", "0:23:24")}
        for name, args in runs.items():
            code, out = run(tmp_path, *args, *seed, out=f"{name}-{k}.json")
            assert code == 0
            values = np.array(json.loads(out.read_text())["curve"]["values"])
            errors[name].append(np.sqrt(np.mean((values - truth) ** 2)))
    med = {k: float(np.median(v)) for k, v in errors.items()}
    # The same seeds give the same noise; the two fits differ by interpolation (long: each day's own
    # hours, wide: the interpolated hours), a bias far below the noise's RMS (about 2·45·sqrt(7/24)/365).
    noise_rms = 2 * 45 / 365 * np.sqrt(7 / 24)
    assert abs(med["long"] - med["wide"]) < 0.25 * noise_rms, med
    assert med["radius 50"] > 2 * med["long"], med  # every fit shrunk: far too low
    assert "WARNING" in capsys.readouterr().err


def test_a_kernel_space_takes_the_range_for_centre_and_clip_and_b_prime_given(tmp_path, capsys):
    X, _ = hourly(n=60)
    pts = HOURS[::3]
    data = write_wide(tmp_path / "w.csv", X[:, ::3], points=pts)
    grid = ",".join(f"{p:g}" for p in pts)
    common = (data, "--id", "day", "--grid", grid, "--domain", "0,24", "--space", "gaussian:0.2", "--mu", "1")
    code, _ = run(tmp_path, *common, "--lower", "20", "--upper", "110", out="refused.json")
    assert code == 2
    err = capsys.readouterr().err
    assert "bounds no RKHS norm" in err and "--radius" in err
    code, out = run(tmp_path, *common, "--lower", "20", "--upper", "110", "--radius", "30", "--method", "ptf",
                    *SEEDED)
    assert code == 0
    rec = json.loads(out.read_text())
    # exact: in an RKHS r = lower/2 + upper/2 = 65 and the half-width 45 are exact, B' = 30/45 one rounding both sides
    assert rec["radius"] == 30 / 45 and rec["clip"] == [1.0] * 8
    assert rec["how_chosen"]["radius"].startswith("given: a public bound of 30")
    frame = dpfda.PublicFrame(dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), pts, dpfda.Domain(0, 24, "grid point"),
                              20, 110, radius=30)
    rel = dpfda.ptf(frame.to_unit(np.round(X[:, ::3], 2)), frame.grid, frame.space, frame.radius, 1.0,
                    np.random.default_rng(7), clip=frame.clip, weights=frame.weights)
    # exact: the same steps on the same values and seed as the command (its CSV holds the rounded values exactly)
    assert np.array_equal(rec["curve"]["values"], frame.values(rel, np.linspace(0, 24, 101)))


def test_a_range_that_varies_needs_a_grid(tmp_path, capsys):
    X, keep = hourly(n=20)
    data = write_long(tmp_path / "l.csv", X, keep)
    code, out = run(tmp_path, data, *LONG, "--space", "fourier:5", "--lower", "20,30", "--upper", "110,120",
                    "--mu", "1")
    err = capsys.readouterr().err
    assert code == 2 and not out.exists() and "--lower: without a grid, lower and upper are numbers" in err


# --- the report before the noise, on every path ---------------------------------------------------


class Drawn(Exception):
    pass


def _no_opendp(*args, **kwargs):
    raise Drawn("OpenDP's sampler was called")


@pytest.mark.parametrize("layout", ["long", "wide"])
def test_the_report_is_on_stderr_before_any_noise_is_drawn(tmp_path, capsys, monkeypatch, layout):
    """A radius in the wrong units (50 on °F data, uncentred): the report warns before OpenDP draws,
    on the path with a grid and on the path without one (which printed nothing before)."""
    monkeypatch.setattr(opendp.core, "measurement_invoke", _no_opendp)
    X, keep = hourly()
    if layout == "long":
        args = (write_long(tmp_path / "d.csv", X, keep), *LONG)
    else:
        args = (write_wide(tmp_path / "d.csv", X), "--id", "day", "--grid", "0:23:24", "--domain", "0,24")
    with pytest.raises(Drawn):
        run(tmp_path, *args, "--space", "fourier:7", "--radius", "50", "--mu", "1")
    err = capsys.readouterr().err
    assert "curator's diagnostics" in err and "NOT private" in err
    assert "WARNING" in err and "shrunk onto the ball of radius B' = 50" in err
    assert not (tmp_path / "r.json").exists()


def test_check_reports_and_stops_drawing_nothing_writing_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(opendp.core, "measurement_invoke", _no_opendp)
    X, keep = hourly(fahrenheit=False)  # °C against a band in °F
    data = write_long(tmp_path / "d.csv", X, keep)
    code, out = run(tmp_path, data, *LONG, "--space", "fourier:7", "--lower", "20", "--upper", "110", "--mu", "1",
                    "--check")
    assert code == 0 and not out.exists()
    said = capsys.readouterr()
    assert "WARNING" in said.err and "were clipped" in said.err and "no noise drawn" in said.err
    assert said.out == ""


def test_the_report_does_not_change_the_release(tmp_path):
    """The same seed with and without a warning-raising report: the command's curve is the library's."""
    X, _ = hourly(n=50)
    data = write_wide(tmp_path / "w.csv", X)
    code, out = run(tmp_path, data, "--id", "day", "--grid", "0:23:24", "--domain", "0,24", "--space", "fourier:5",
                    "--radius", "1", "--mu", "1", *SEEDED)  # every fit shrunk: a warning
    assert code == 0
    rel = dpfda.ftp(np.round(X, 2), HOURS / 24, dpfda.FourierSpace(5), 1.0, 1.0, np.random.default_rng(7))
    at = dpfda.Domain(0, 24).to_unit(np.linspace(0, 24, 101))  # the default --eval, on [0, 1]
    assert np.array_equal(json.loads(out.read_text())["curve"]["values"], rel(at))


# --- periodic domains, labels, output names ------------------------------------------------------


def test_a_periodic_space_on_a_domain_that_joins_the_first_and_last_point_is_refused_with_the_fix(tmp_path, capsys):
    months = np.arange(1.0, 13.0)
    X = 10 - 12 * np.cos(2 * np.pi * (months - 1) / 12) + np.random.default_rng(1).normal(0, 1, (40, 12))
    data = write_wide(tmp_path / "m.csv", X, points=months, id="station")
    base = (data, "--id", "station", "--grid", "1:12:12", "--space", "fourier:5", "--radius", "40", "--mu", "1")
    code, _ = run(tmp_path, *base)
    assert code == 2
    err = capsys.readouterr().err
    assert "periodic" in err and "--domain:" in err and "December would be" in err
    assert "this grid's: domain (1, 13)" in err
    code, _ = run(tmp_path, *base, "--domain", "1,12")  # the same mistake, stated
    assert code == 2 and "this grid's: domain (1, 13)" in capsys.readouterr().err
    code, out = run(tmp_path, *base, "--domain", "1,13", *SEEDED)
    assert code == 0 and json.loads(out.read_text())["domain"]["stop"] == 13.0
    code, _ = run(tmp_path, *base[:-4], "--space", "legendre:5", "--radius", "40", "--mu", "1", out="leg.json")
    assert code == 0  # not periodic: 1 and 12 are two instants


def test_labels_come_from_the_columns_or_the_options_and_reach_the_plot(tmp_path):
    X, keep = hourly(n=30)
    data = write_long(tmp_path / "d.csv", X, keep)
    common = (data, *LONG, "--space", "fourier:5", "--lower", "20", "--upper", "110", "--mu", "1", *SEEDED)
    code, out = run(tmp_path, *common, "--plot", tmp_path / "a.svg")
    assert code == 0 and json.loads(out.read_text())["units"] == {"points": "hour", "values": "temp"}
    svg = (tmp_path / "a.svg").read_text()
    assert "grid point" not in svg and "data's units" not in svg
    code, out = run(tmp_path, *common, "--xlabel", "hour of the day", "--ylabel", "temperature (°F)",
                    "--plot", tmp_path / "b.svg", out="b.json")
    assert code == 0
    assert json.loads(out.read_text())["units"] == {"points": "hour of the day", "values": "temperature (°F)"}
    svg = (tmp_path / "b.svg").read_text()
    assert "hour of the day" in svg and "temperature (°F)" in svg


@pytest.mark.parametrize("name", ["x.xlsx", "x.csv", "x", "x.JSON.bak"])
def test_an_output_that_is_not_json_is_refused(tmp_path, capsys, name):
    X, _ = hourly(n=10)
    data = write_wide(tmp_path / "w.csv", X)
    code, out = run(tmp_path, data, "--id", "day", "--grid", "0:23:24", "--domain", "0,24", "--space",
                    "fourier:5", "--radius", "40", "--mu", "1", out=name)
    assert code == 2 and not out.exists() and "name the file *.json" in capsys.readouterr().err


# --- (ε, δ), the dimension from a proxy ------------------------------------------------------------


def _round_trip_atol(eps: float, delta: float) -> float:
    """How far ε(μ(ε, δ), δ) may be from ε: two brentq solves on log δ(μ, ε) = log δ.

    With L = log δ(μ, ε) and a = −ε/μ + μ/2, b = −ε/μ − μ/2 (δ = Φ(a) − e^εΦ(b)), the exact
    derivatives are ∂L/∂μ = φ(a)/δ and ∂L/∂ε = −e^εΦ(b)/δ (the φ terms cancel, e^εφ(b) = φ(a)).
    Each solve stops within 2·(xtol + 2·rtol·x) of a sign change of the computed function
    (scipy's brentq: xtol = μ·1e-15 at most in μ, 1e-14 in ε, rtol = 4u), and the computed L is
    within η of the exact one, so the sign change is within η/|∂L/∂x| of the exact root: with η
    the evaluation bound of tests/test_privacy.py (γ₈·ε(a² + 1)·Φ(a)/δ from the cancelling
    terms, γ₈·|log Φ(a)| for log_ndtr's ulps, γ₈·(|a| + 2)·(ε/μ + μ) for a's rounding through
    the Mills ratio, and u·|log δ| for log δ itself). The error in μ reaches ε scaled by
    |∂L/∂μ|/|∂L/∂ε| (the implicit function's slope dε/dμ); the second solve adds its own. At
    (1, 1e-6): 6.3e-14.
    """
    from scipy import special, stats

    u = 2.0**-53
    mu = float(dpfda.mu_from_epsilon_delta(eps, delta))
    a, b = -eps / mu + mu / 2, -eps / mu - mu / 2
    slope_mu = stats.norm.pdf(a) / delta
    slope_eps = np.exp(eps) * stats.norm.cdf(b) / delta
    eta = gamma(8) * (eps * (a * a + 1) * stats.norm.cdf(a) / delta + abs(special.log_ndtr(a))
                      + (abs(a) + 2) * (eps / mu + mu)) + u * abs(np.log(delta))
    d_mu = 2 * (mu * 1e-15 + 2 * 4 * u * mu) + eta / slope_mu
    d_eps = 2 * (1e-14 + 2 * 4 * u * eps) + eta / slope_eps
    return float(1.01 * (slope_mu / slope_eps * d_mu + d_eps))  # 1 %: the slopes' own rounding


def test_the_round_trip_tolerance_sees_mu_off_by_1e_minus_10():
    """Negative control: μ one part in 1e10 too large moves ε by 1.1e-10, far outside the bound."""
    mu = float(dpfda.mu_from_epsilon_delta(1.0, 1e-6))
    atol = _round_trip_atol(1.0, 1e-6)
    assert atol < 1e-12
    assert abs(float(dpfda.epsilon_from_mu(mu * (1 + 1e-10), 1e-6)) - 1.0) > atol
    assert abs(float(dpfda.epsilon_from_mu(mu, 1e-6 * (1 + 1e-8))) - 1.0) > atol  # or δ one part in 1e8 off


def test_a_budget_as_epsilon_delta(tmp_path, capsys):
    X, _ = hourly(n=40)
    data = write_wide(tmp_path / "w.csv", X)
    common = (data, "--id", "day", "--grid", "0:23:24", "--domain", "0,24", "--space", "fourier:5", "--radius", "40")
    code, out = run(tmp_path, *common, "--epsilon", "1", "--delta", "1e-6", *SEEDED)
    assert code == 0
    rec = json.loads(out.read_text())
    mu = float(dpfda.mu_from_epsilon_delta(1.0, 1e-6))
    assert rec["mu"] == mu and rec["budget_requested"]["epsilon"] == 1.0 and rec["budget_requested"]["mu"] == mu
    pairs = {p["delta"]: p["epsilon"] for p in rec["epsilon_delta"]}
    assert pairs[1e-6] == pytest.approx(1.0, rel=0, abs=_round_trip_atol(1.0, 1e-6))  # the requested pair, met
    assert "from (epsilon, delta) = (1, 1e-06)" in rec["how_chosen"]["mu"]
    for bad, message in ((("--mu", "1", "--epsilon", "1", "--delta", "1e-6"), "give the budget once"),
                         (("--epsilon", "1"), "--delta: epsilon and delta go together"),
                         (("--epsilon", "1", "--delta", "1.5"), "--delta: must lie in (0, 1)"),
                         ((), "give the budget")):
        code, _ = run(tmp_path, *common, *bad, out="bad.json")
        assert code == 2 and message in capsys.readouterr().err


def test_the_dimension_from_a_public_proxy_file(tmp_path):
    X, keep = hourly(n=365)
    proxy_X, proxy_keep = hourly(n=365, seed=99)  # another year: public
    data = write_long(tmp_path / "d.csv", X, keep)
    proxy = write_long(tmp_path / "proxy.csv", proxy_X, proxy_keep)
    code, out = run(tmp_path, data, *LONG, "--space", "fourier:13", "--lower", "20", "--upper", "110", "--mu", "1",
                    "--dimension-from", proxy, *SEEDED)
    assert code == 0
    rec = json.loads(out.read_text())
    # the library's rule on the same proxy, mapped by the same frame, on the layout grid
    frame = dpfda.PublicFrame(dpfda.FourierSpace(13), np.linspace(0, 24, 101), dpfda.Domain(0, 24), 20, 110)
    curves = dpfda.practice.reading.read_curves(proxy, layout="long", id="day", point="hour", value="temp",
                                                own_points=True, domain=(0, 24)).on_grid(frame.grid, periodic=True)
    choice = dpfda.mechanisms.dimension.public_dimension(frame.to_unit(curves.values), frame.grid,
                                                         dpfda.FourierSpace, 365, 1.0, frame.radius, m_max=13)
    assert rec["space"]["dimension"] == choice.m < 13
    assert "public_dimension on the public proxy proxy.csv (365 curves)" in rec["how_chosen"]["space"]


def test_the_private_radius_from_the_command_line_records_the_whole_spend(tmp_path, capsys):
    """--private-radius: B' a private quantile of the fitted norms (the cap: the range's bound), FTP
    with the rest of mu^2; the record and the ledger state the whole mu, each step's part and B'."""
    X, keep = hourly(n=200)
    data = write_long(tmp_path / "d.csv", X, keep)
    code, out = run(tmp_path, data, *LONG, "--space", "fourier:7", "--lower", "20", "--upper", "110", "--mu", "1",
                    "--private-radius", "--ledger", tmp_path / "d.ledger", "--cap", "2", "--eval", "0:23:24",
                    *SEEDED)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "--private-radius: B' above is the cap" in err  # the report before any noise says so
    rec = json.loads(out.read_text())
    radius_step, ftp_step = rec["budget"]["parts"]
    assert rec["mu"] == 1.0 and rec["ledger"]["mu_total"] == 1.0  # the whole budget, not the FTP step's
    assert radius_step["step"] == "radius" and ftp_step["step"] == "release"
    assert np.hypot(radius_step["mu"], ftp_step["mu"]) <= 1.0 and ftp_step["mu"] < 1.0
    assert radius_step["share_of_mu_squared"] == pytest.approx(0.2, abs=1e-9)  # epsilon's inverse, to 1e-9
    chosen = rec["chosen_privately"]["radius"]
    # the cap is the band's B' on the layout grid: the same steps on the same band (bounded against 1 above)
    band = dpfda.PublicFrame(dpfda.FourierSpace(7), np.linspace(0, 24, 101), dpfda.Domain(0, 24), 20, 110)
    assert chosen["value"] == rec["radius"] <= chosen["radius_max"] == band.radius
    assert rec["how_chosen"]["radius"].startswith("private: the 0.9-quantile")
    pairs = {p["delta"]: p["epsilon"] for p in rec["epsilon_delta"]}
    assert pairs[1e-5] == float(dpfda.mechanisms.privacy.epsilon_from_mu(1.0, 1e-5))  # exact: the same function, μ = 1
    # the FTP step is the library's FTP at that B' and the rest of mu^2 (numpy's seed: FTP's noise only)
    days = dpfda.practice.reading.read_curves(data, layout="long", id="day", point="hour", value="temp",
                                              own_points=True, domain=(0, 24))
    frame = dpfda.PublicFrame(dpfda.FourierSpace(7), np.linspace(0, 24, 101), dpfda.Domain(0, 24), 20, 110)
    rel = dpfda.ftp(frame.to_unit(days), frame.grid, frame.space, chosen["value"], ftp_step["mu"],
                    np.random.default_rng(7))
    assert np.array_equal(rec["curve"]["values"], frame.values(rel, np.linspace(0, 23, 24)))


def test_the_private_radius_options_are_checked_before_the_data_are_read(tmp_path, capsys):
    common = (tmp_path / "absent.csv", *LONG, "--mu", "1")
    for bad, message in (
            (("--space", "fourier:7", "--private-radius"), "needs a public cap on B'"),
            (("--space", "fourier:7", "--radius", "40", "--private-radius", "--radius-share", "1"),
             "--radius-share: must lie strictly between 0 and 1"),
            (("--space", "fourier:7", "--radius", "40", "--private-radius", "--radius-quantile", "0"),
             "--radius-quantile: must lie strictly between 0 and 1"),
            (("--space", "fourier:7", "--radius", "40", "--radius-share", "0.3"), "give it too"),
            (("--space", "fourier:7", "--radius", "40", "--radius-quantile", "0.9"), "give it too")):
        code, _ = run(tmp_path, *common, *bad, out="bad.json")
        assert code == 2 and message in capsys.readouterr().err
    wide = (tmp_path / "absent.csv", "--grid", "0:23:24", "--domain", "0,24", "--mu", "1", "--radius", "40",
            "--private-radius")
    for bad, message in ((("--space", "fourier:7", "--method", "ptf"), "PTF's clip is public"),
                         (("--space", "gaussian:0.2"), "in a kernel space (gaussian:0.2) give B' with radius")):
        code, _ = run(tmp_path, *wide, *bad, out="bad.json")
        assert code == 2 and message in capsys.readouterr().err


# --- the ledger ---------------------------------------------------------------------------------------


def test_the_ledger_refuses_a_release_past_its_cap_before_any_noise(tmp_path, capsys, monkeypatch):
    X, keep = hourly(n=60)
    data = write_long(tmp_path / "d.csv", X, keep)
    common = (data, *LONG, "--space", "fourier:5", "--lower", "20", "--upper", "110", "--ledger",
              tmp_path / "d.ledger")
    code, out = run(tmp_path, *common, "--cap", "1.5", "--mu", "1", out="first.json")
    assert code == 0
    rec = json.loads(out.read_text())
    assert rec["ledger"]["releases"] == 1 and rec["ledger"]["mu_total"] == 1.0 and rec["ledger"]["cap_mu"] == 1.5
    assert rec["ledger"]["fingerprint"] == identity_fingerprint(
        data_identity("d", layout="long", columns=["day", "hour", "temp"], id="day"))
    capsys.readouterr()
    monkeypatch.setattr(opendp.core, "measurement_invoke", _no_opendp)  # no noise may be drawn below
    before = (tmp_path / "d.ledger").read_bytes()
    code, out = run(tmp_path, *common, "--mu", "1.2", out="second.json")
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "refuses this release" in err and "past the cap μ = 1.5" in err and err.count("\n") == 1
    assert (tmp_path / "d.ledger").read_bytes() == before
    monkeypatch.undo()
    code, out = run(tmp_path, *common, "--mu", "1.1", out="third.json")  # sqrt(1 + 1.21) = 1.487
    assert code == 0
    # fl(1.1)² by pow (2u, and fl(1.1) itself u, doubled), fsum and the literal 2.21 (u each): Σ to 4.2u relative;
    # sqrt halves it and each side's sqrt adds u: 4.1u < γ₅
    assert json.loads(out.read_text())["ledger"]["mu_total"] == pytest.approx(np.sqrt(2.21), rel=gamma(5), abs=0)


def test_the_ledger_refuses_another_data_set_and_records_checks(tmp_path, capsys):
    X, keep = hourly(n=30)
    data = write_long(tmp_path / "d.csv", X, keep)
    other = write_wide(tmp_path / "other.csv", X)
    ledger = ("--ledger", tmp_path / "d.ledger")
    band = ("--space", "fourier:5", "--lower", "20", "--upper", "110", "--mu", "1")
    code, _ = run(tmp_path, data, *LONG, *band, *ledger, out="a.json")
    assert code == 2 and "state its cap" in capsys.readouterr().err
    code, _ = run(tmp_path, data, *LONG, *band, *ledger, "--cap", "3", "--check")
    assert code == 0 and not (tmp_path / "r.json").exists()
    code, _ = run(tmp_path, other, "--id", "day", "--grid", "0:23:24", "--domain", "0,24", *band, *ledger,
                  "--dataset", "d", out="b.json")
    assert code == 2 and "belongs to another data set" in capsys.readouterr().err
    code, _ = run(tmp_path, data, *LONG, "--space", "fourier:5", "--radius", "40", "--mu", "1", *ledger, out="c.json")
    assert code == 0
    err = capsys.readouterr().err
    assert "NOTE: the ledger's last entry (check" in err and "no longer public" in err
    kinds = [json.loads(line).get("kind") for line in (tmp_path / "d.ledger").read_text().splitlines()]
    assert kinds == [None, "check", "release"]
