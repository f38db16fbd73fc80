"""The band of the privacy noise against simulated releases of the same data: coverage and sd.

For each mechanism, many releases of one dataset are drawn; at several points the fraction of
releases whose band covers the noiseless estimate must match the level, and the spread of the
releases must match ``noise_sd``, within Monte Carlo error (``bonferroni_z`` over the points).
"""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pytest

import dpfda
from dpfda import cli
from dpfda.maths.rounding import solve_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms import bands
from dpfda.practice.publish import release_record

from _spaces import of_size
from _support import assert_mc_close, bonferroni_z, proportion_se, reps

matplotlib.use("Agg")

POINTS = np.array([0.0, 0.13, 0.5, 0.77, 1.0])
LEVEL = 0.9


def data(T, n=30, seed=0):
    grid = np.linspace(0, 1, T)
    return grid, np.random.default_rng(seed).uniform(-0.5, 0.5, size=(n, T)) + np.sin(3 * grid)


def check_band(many, centre, sd, R):
    """``many`` (R, k) releases at the points, ``centre`` (k,) the noiseless estimate, ``sd`` (k,)."""
    z = bands.band_z(LEVEL)
    covered = np.abs(many - centre) <= z * sd
    k = centre.size
    zb = bonferroni_z(2 * k)
    se = proportion_se(LEVEL, R)
    assert np.all(np.abs(covered.mean(axis=0) - LEVEL) <= zb * se), covered.mean(axis=0)
    # (x - centre)² has mean sd²: the spread of the releases is the band's sd
    assert_mc_close((many - centre) ** 2, sd**2, z=zb, what="squared deviation")


@pytest.mark.parametrize("space", of_size(12).values(), ids=of_size(12).keys())
def test_ftp_band_covers_the_noiseless_fit_as_stated(space):
    R = reps(4000, 1000)
    grid, X = data(12)
    mech = dpfda.ftp_mechanism(grid, space, 0.8, 1.0)
    summary = mech.summary(X)
    rels = mech.privatize(summary, np.random.default_rng(1).standard_normal((R, mech.noise_dim)), X.shape[0])
    centre = space.evaluate(summary, POINTS)
    one = dpfda.ftp(X, grid, space, 0.8, 1.0, np.random.default_rng(2))
    # the same public formula σ·sqrt(Σ E²) on both sides (σ by two routes): γ_{d+8}
    assert np.allclose(one.noise_sd(POINTS), rels.noise_sd(POINTS), rtol=gamma(space.at(grid).dim + 8), atol=0)
    check_band(rels(POINTS), centre, one.noise_sd(POINTS), R)
    lo, hi = one.band(LEVEL, POINTS)
    # hi and lo round once each around centre ± z·sd, their difference and the halving: γ₄·(|hi| + |lo|)
    assert np.allclose((hi - lo) / 2, bands.band_z(LEVEL) * one.noise_sd(POINTS), rtol=gamma(2),
                       atol=gamma(4) * (np.abs(hi) + np.abs(lo)))


def test_ptf_band_covers_the_noiseless_fit_while_it_stays_inside_the_ball():
    R = reps(4000, 1000)
    grid, X = data(10)
    space = dpfda.LegendreSpace(4)
    mech = dpfda.ptf_mechanism(grid, space, 50.0, 1.0, clip=2.0)  # B' far beyond every fit
    summary = mech.summary(X)
    rels = mech.privatize(summary, np.random.default_rng(3).standard_normal((R, mech.noise_dim)), X.shape[0])
    assert not rels.active.any() and bands.band_is_exact(rels.method, rels.active)
    centre = mech.privatize(summary, np.zeros(mech.noise_dim), X.shape[0])(POINTS)  # the fit of x̄
    check_band(rels(POINTS), centre, rels.noise_sd(POINTS), R)


def test_rkhs_ftp_band_includes_the_residual_off_the_grid():
    R = reps(2000, 600)
    grid, X = data(8, n=10)
    space = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))
    Xr = np.broadcast_to(X, (R,) + X.shape)
    rels = dpfda.ftp(Xr, grid, space, 1.0, 1.0, np.random.default_rng(4))
    mech = dpfda.ftp_mechanism(grid, space, 1.0, 1.0)
    centre = mech.privatize(mech.summary(X), np.zeros(mech.noise_dim), X.shape[0])(POINTS)
    sd = rels.noise_sd(POINTS)
    # σ sqrt(K(t, t)) = σ for the Gaussian kernel: the interpolant's variance, a quadratic form through
    # K_T⁻¹ that is at most K(t, t) = 1 exactly, may round above it by solve_rtol
    geom = space.at(grid)
    assert np.allclose(sd, rels.noise_scale, rtol=solve_rtol(geom.Phi.T @ geom.Phi, geom.T + geom.dim), atol=0)
    check_band(rels(POINTS), centre, sd, R)


def test_band_level_and_method_are_checked():
    grid, X = data(6)
    rel = dpfda.ftp(X, grid, dpfda.LegendreSpace(2), 1.0, 1.0, np.random.default_rng(0))
    for bad in (0.0, 1.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="level"):
            rel.band(bad)
    assert rel.plot().get_legend() is not None


def test_the_record_states_noise_sd_in_the_data_units():
    grid, X = data(9)
    space = dpfda.LegendreSpace(3)
    points = 100 + 10 * grid  # e.g. days 100..110
    frame = dpfda.PublicFrame(space, points, dpfda.Domain(100, 110), -3.0, 5.0)
    rel = dpfda.ftp(frame.to_unit(X), frame.grid, space, frame.radius, 1.0, np.random.default_rng(0))
    at = np.array([100.0, 105.0, 110.0])
    record = release_record(rel, at, frame=frame)
    # the record computes the same products from the same numbers: one rounding apart at most
    assert np.allclose(record["noise_sd"], frame.scale * rel.noise_sd(frame.domain.to_unit(at)), rtol=gamma(1), atol=0)
    assert record["noise_scale_data_units"] == pytest.approx(frame.scale * rel.noise_scale, rel=gamma(1), abs=0)
    assert "privacy noise only" in record["noise_sd_note"] and "sampling variability" in record["noise_sd_note"]


@pytest.mark.parametrize("suffix", ["png", "svg"])
def test_release_plot_writes_the_figure(tmp_path, capsys, suffix):
    grid, X = data(5)
    header = ",".join(f"{p:g}" for p in grid)
    (tmp_path / "d.csv").write_text(header + "\n" + "\n".join(",".join(map(str, r)) for r in X) + "\n")
    fig = tmp_path / f"r.{suffix}"
    out = tmp_path / "r.json"
    code = cli.main(["release", str(tmp_path / "d.csv"), "--grid", "0:1:5", "--space", "legendre:3",
                     "--radius", "2", "--mu", "1", "--out", str(out), "--plot", str(fig)])
    assert code == 0, capsys.readouterr().err
    record = json.loads(out.read_text())
    assert len(record["noise_sd"]) == len(record["curve"]["points"])
    head = fig.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in fig.read_bytes()


def test_release_plot_refuses_other_formats_before_reading_data(tmp_path, capsys):
    code = cli.main(["release", str(tmp_path / "missing.csv"), "--grid", "0:1:5", "--space", "legendre:3",
                     "--radius", "2", "--mu", "1", "--out", str(tmp_path / "r.json"),
                     "--plot", str(tmp_path / "r.pdf")])
    assert code == 2 and "--plot" in capsys.readouterr().err
