"""The periodic Fourier space H_m: orthonormal on [0, 1], periodic, used by FTP and PTF; its CLI spelling."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial import legendre as leg

import dpfda
from dpfda import FourierSpace, LegendreSpace, cli
from dpfda.cli._release import join_negative_values, space_option
from dpfda.maths.rounding import product_atol, solve_rtol
from dpfda.maths.summation import gamma


@pytest.mark.parametrize("m", [1, 2, 5, 8, 15])
def test_the_basis_is_orthonormal_by_gauss_legendre_quadrature(m):
    # Gauss–Legendre with 200 nodes on [0, 1] (not the trapezoidal rule project() uses):
    # a smooth periodic integrand of frequency <= m is integrated to rounding.
    x, w = leg.leggauss(200)
    t, w = (x + 1) / 2, w / 2
    Phi = FourierSpace(m).basis(t)
    gram = (Phi * w[:, None]).T @ Phi
    # 200 Gauss nodes are exact for polynomials of degree 399: for harmonics of frequency <= m/2 the
    # truncation is below (πm)^400/400!, nothing; the product rounds by γ_200 of |Φ|ᵀw|Φ|
    assert np.allclose(gram, np.eye(m), rtol=0, atol=product_atol((Phi * w[:, None]).T, np.abs(Phi)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 6), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
def test_functions_are_periodic_and_shifts_wrap_around(h, s, seed):
    # An odd m = 2h + 1 holds whole harmonics, so t -> f((t + s) mod 1) is again in H_m:
    # fitted exactly on a grid of the period, and f(0) = f(1).
    space = FourierSpace(2 * h + 1)
    coef = np.random.default_rng(seed).standard_normal(space.m)
    grid = np.arange(32) / 32
    shifted = space.evaluate(coef, (grid + s) % 1.0)
    geom = space.at(grid)
    fit = geom.coef_from_values(shifted)
    # the values carry γ_m·(1 + 2πm) of √2·Σ|c| (the basis, its arguments 2πk·t rounded); a consistent
    # least-squares solve gives them back to solve_rtol·||Φ||·||θ|| plus the product's γ_m·|θ||Φ|
    A = geom.Phi.T @ geom.Phi
    dv = gamma(space.m + 4) * (1 + 2 * np.pi * space.m) * np.sqrt(2) * np.abs(coef).sum()
    atol = (solve_rtol(A, grid.size + space.m) * np.linalg.norm(geom.Phi, 2) * np.linalg.norm(fit)
            + product_atol(fit, geom.Phi.T) + dv)
    assert np.allclose(geom.values(fit), shifted, rtol=0, atol=atol)
    gain = np.linalg.norm(np.linalg.pinv(geom.Phi), 2) * np.sqrt(grid.size)  # the values' error into θ
    rel = solve_rtol(A, grid.size + space.m) + gain * dv / np.linalg.norm(coef)
    assert np.linalg.norm(fit) == pytest.approx(np.linalg.norm(coef), rel=rel, abs=0)  # a shift keeps the norm
    ends = space.evaluate(coef, [0.0, 1.0])
    # sin(2πk) rounds to about 2πk·u, not 0: γ_{m+4}·(1 + 2πm) of √2·Σ|c| at each end (dv above)
    assert ends[0] == pytest.approx(ends[1], rel=0, abs=2 * dv)


def test_odd_dimensions_have_the_same_evaluation_norm_everywhere():
    geom = FourierSpace(7).at(np.arange(24) / 24)
    assert np.allclose(geom.eval_norm, np.sqrt(7.0), rtol=gamma(2 * 7 + 4) * (1 + 2 * np.pi * 7), atol=0)  # Σ φ² = 7
    assert geom.metric == "IMSE" and geom.dim == 7


def test_project_recovers_coefficients_and_norm_is_euclidean():
    space = FourierSpace(6)
    coef = np.array([0.3, -1.0, 0.5, 0.2, 0.0, 0.7])
    # the trapezoidal rule on 64 nodes is exact for these harmonics; (f·w)ᵀΦ rounds by γ_64 of
    # Σ w|f||φ| <= 2Σ|c|, f itself by γ_m·(1 + 2πm) of the same
    atol = (gamma(64) + gamma(space.m + 4) * (1 + 2 * np.pi * space.m)) * 2 * np.abs(coef).sum()
    assert np.allclose(space.project(lambda t: space.evaluate(coef, t)), coef, rtol=0, atol=atol)
    assert space.norm(coef) == pytest.approx(np.linalg.norm(coef), rel=gamma(2 * space.m + 2), abs=0)  # two norms
    assert space.sample_gaussian(np.random.default_rng(0), (4,)).shape == (4, 6)


def test_a_grid_with_both_ends_of_the_period_and_too_few_points_is_refused():
    with pytest.raises(dpfda.AssumptionError, match="same point of the period"):
        FourierSpace(3).at([0.0, 0.5, 1.0])  # cos(2πt) and 1 coincide at 0 and 1
    with pytest.raises(dpfda.AssumptionError, match="T >= m"):
        FourierSpace(5).at([0.1, 0.3, 0.6])
    assert FourierSpace(3) == FourierSpace(3) != LegendreSpace(3)
    assert hash(FourierSpace(3)) != hash(LegendreSpace(3))


def test_ftp_and_ptf_run_with_a_fourier_space():
    grid = np.arange(24) / 24
    space = FourierSpace(5)
    truth = np.array([0.2, 0.3, -0.1, 0.0, 0.05])
    X = space.at(grid).values(truth) + np.random.default_rng(1).normal(0, 0.05, (400, 24))
    f = dpfda.ftp(X, grid, space, 1.0, 1.0, np.random.default_rng(2))
    p = dpfda.ptf(X, grid, space, 1.0, 1.0, np.random.default_rng(3))
    assert f.coef.shape == p.coef.shape == (5,)
    assert f.noise_scale == 2 * 1.0 / (400 * 1.0)
    assert f.error(truth) < 0.05 and p.error(truth) < 0.5  # σ = 0.005 per coefficient for FTP


# -- the command line ------------------------------------------------------------------


def _hourly_file(path, n=80, seed=5):
    rng = np.random.default_rng(seed)
    hours = np.arange(24.0)
    space = FourierSpace(3)
    coef = rng.uniform(-0.3, 0.3, size=(n, 3)) + np.array([0.5, 0.2, 0.0])
    X = space.evaluate(coef, (hours + 1) / 24)
    header = ",".join(f"{h:g}" for h in hours)
    path.write_text(header + "\n" + "\n".join(",".join(f"{v:.6f}" for v in row) for row in X) + "\n")
    return path


def test_cli_fourier_and_a_negative_domain_after_a_space(tmp_path, capsys):
    data = _hourly_file(tmp_path / "hours.csv")
    out = tmp_path / "r.json"
    code = cli.main(["release", str(data), "--grid", "0:23:24", "--domain", "-1,23", "--space", "fourier:5",
                     "--radius", "2", "--mu", "1", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    record = json.loads(out.read_text())
    assert record["space"] == {"kind": "fourier", "dimension": 5, "spec": "fourier:5"}
    assert record["domain"]["start"] == -1.0


@pytest.mark.parametrize("text, space", [
    ("fourier:7", FourierSpace(7)),
    ("legendre:8", LegendreSpace(8)),
    ("gaussian:0.05:regularize", dpfda.KernelSpace(dpfda.gaussian_kernel(0.05), regularize=True)),
    ("brownian:regularize", dpfda.KernelSpace(dpfda.brownian_kernel(), regularize=True)),
    ("gaussian:0.2", dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))),
])
def test_space_spellings(text, space):
    assert space_option(text) == space


@pytest.mark.parametrize("text, message", [
    ("legendre:8.5", "must be a whole number >= 1"),
    ("fourier:x", "must be a whole number >= 1"),
    ("fourier:0", "m must be an integer >= 1"),
    ("legendre:regularize", "whole number"),
    ("fourier", "fourier:M needs M"),
])
def test_bad_space_spellings_are_explained(text, message):
    with pytest.raises(cli.UsageError, match=message):
        space_option(text)


def test_a_regularized_kernel_releases_on_a_fine_grid_where_the_plain_one_refuses(tmp_path, capsys):
    data = _hourly_file(tmp_path / "hours.csv")
    common = [str(data), "--grid", "0:23:24", "--domain=-1,23", "--radius", "2", "--mu", "1"]
    assert cli.main(["release", *common, "--space", "gaussian:0.3", "--out", str(tmp_path / "a.json")]) == 2
    assert "regularize" in capsys.readouterr().err
    assert cli.main(["release", *common, "--space", "gaussian:0.3:regularize",
                     "--out", str(tmp_path / "b.json")]) == 0


def test_negative_values_join_their_option_only():
    assert join_negative_values(["--domain", "-1,23", "--lower", "-.5", "--mu", "1", "x"]) == [
        "--domain=-1,23", "--lower=-.5", "--mu", "1", "x"]
    assert join_negative_values(["--out", "-x.json"]) == ["--out", "-x.json"]
