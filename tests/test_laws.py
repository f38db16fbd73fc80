"""The latent laws as a study dimension.

The family is fixed in dpfda_book.simulation.models.LAWS: ``default`` and ``shift-S``/``wave-S``
with S ∈ {0, 0.25, 0.5, 0.75, 0.9}.  Every curve keeps ||f_i|| <= B; the mean's
norm grows with S; S = 0 is one centred law under both names; the default law
keeps the random streams (and so the results) it had before laws existed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import dpfda
from dpfda.maths.summation import gamma
from dpfda_book.simulation.engine import latent_curves
from dpfda_book.simulation.models import LAW_SHIFTS, LAWS, check_law, polynomial_curves, rkhs_curves, uniform_ball
from dpfda_book.simulation.schedule import run_study
from dpfda_book.simulation.seeding import latent_stream_key, stream_key
from dpfda_book.simulation.studies import STUDY_NAMES, Setting, Study, get_study, paper_studies

from _support import Z

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_family_is_the_declared_one():
    assert LAWS == ("default", "shift-0", "shift-0.25", "shift-0.5", "shift-0.75", "shift-0.9",
                    "wave-0.25", "wave-0.5", "wave-0.75", "wave-0.9")
    assert LAW_SHIFTS == (0.0, 0.25, 0.5, 0.75, 0.9)
    for law in LAWS:
        assert check_law(law) == law
    with pytest.raises(ValueError, match="unknown law 'shift-0.3'"):
        check_law("shift-0.3")
    with pytest.raises(ValueError, match="unknown law 'wave-0'"):  # the centred law has one name
        check_law("wave-0")
    with pytest.raises(TypeError, match="law must be a string"):
        check_law(0.5)


@pytest.mark.parametrize("law", LAWS)
def test_every_curve_lies_in_the_B_ball(law):
    B = 2.5
    p = polynomial_curves(3000, 5, np.random.default_rng(1), B=B, law=law)
    k = rkhs_curves(3000, np.random.default_rng(2), B=B, law=law)
    # (1 − S)θ + S·B·h with ||θ|| <= B: a few roundings; kernel curves through the form αᵀK_Cα of an
    # ill-conditioned K_C: γ_{c²+8} times its cancellation (largest over the curves), halved by the root
    assert p.norms().max() <= B * (1 + gamma(2 * 5 + 8))
    KC = k.kernel.gram(k.centers)
    amp = np.max(np.einsum("ij,jk,ik->i", np.abs(k.alpha), np.abs(KC), np.abs(k.alpha))
                 / np.einsum("ij,jk,ik->i", k.alpha, KC, k.alpha))
    assert k.norms().max() <= B * (1 + gamma(KC.shape[0] ** 2 + 8) * amp)


@pytest.mark.parametrize("shape", ["shift", "wave"])
def test_the_mean_points_along_h_with_norm_about_S_B(shape):
    """E θ_i = S·B·h (g_i is centred), checked coordinate-wise within Z standard errors."""
    m, n, B = 4, 20_000, 1.0
    h = np.full(m, 0.5) if shape == "shift" else np.eye(m)[-1]
    for S in LAW_SHIFTS[1:]:
        theta = polynomial_curves(n, m, np.random.default_rng(3), B=B, law=f"{shape}-{S:g}").theta
        se = theta.std(axis=0, ddof=1) / np.sqrt(n)
        assert np.all(np.abs(theta.mean(axis=0) - S * B * h) <= Z * se), (S, theta.mean(axis=0))


def test_rkhs_direction_functions_have_unit_norm_and_the_named_shape():
    c = np.linspace(0, 1, 20)
    kern = dpfda.gaussian_kernel(0.2)
    KC = kern.gram(c)
    # With S = 0.9 and U_i drawn, the mean's coefficients approach 0.9·B·α_h.
    for shape, h in (("shift", np.ones(20)), ("wave", np.sin(3 * np.pi * c))):
        alpha_h = h / np.sqrt(h @ KC @ h)
        curves = rkhs_curves(40_000, np.random.default_rng(4), law=f"{shape}-0.9")
        mean = curves.alpha.mean(axis=0)
        diff = mean - 0.9 * alpha_h
        # the centred part has mean zero; its sampling error in the K_C norm is small
        assert np.sqrt(diff @ KC @ diff) < 0.01
        amp = (np.abs(h) @ np.abs(KC) @ np.abs(h)) / (h @ KC @ h)  # two forms of 20² terms and their cancellation
        assert np.isclose(alpha_h @ KC @ alpha_h, 1.0, rtol=2 * gamma(KC.shape[0] ** 2 + 8) * amp, atol=0)


def test_centred_law_is_centred():
    """shift-0 is the centred law of both shapes: no mean direction (the only S = 0 name)."""
    theta = polynomial_curves(20_000, 4, np.random.default_rng(5), law="shift-0").theta
    se = theta.std(axis=0, ddof=1) / np.sqrt(theta.shape[0])
    assert np.all(np.abs(theta.mean(axis=0)) <= Z * se)
    assert np.array_equal(theta, uniform_ball(20_000, 4, 1.0, np.random.default_rng(5)))


def test_default_law_keeps_its_streams_and_draws():
    """The default law adds nothing to a setting's keys, and draws what it drew before."""
    s = Setting("kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B")
    assert "law" not in s.canonical() and "law" not in s.latent_canonical()
    # the pre-law RKHS draw, written out: direction = 1 + ε, then U
    rng = np.random.default_rng(6)
    KC = dpfda.gaussian_kernel(0.2).gram(np.linspace(0, 1, 20))
    direction = 1.0 + rng.standard_normal((30, 20))
    u = rng.random(30)
    alpha = (u / np.sqrt(np.einsum("ij,jk,ik->i", direction, KC, direction)))[:, None] * direction
    # u/sqrt(dᵀK_Cd)·d: the form to γ_{c²+8} of its absolute form (amp times itself) on either side,
    # halved by the square root, and the scalings (γ₄)
    amp = np.einsum("ij,jk,ik->i", np.abs(direction), np.abs(KC), np.abs(direction)) / np.einsum(
        "ij,jk,ik->i", direction, KC, direction)
    rtol = (gamma(KC.shape[0] ** 2 + 8) * amp + gamma(4))[:, None]
    got = rkhs_curves(30, np.random.default_rng(6)).alpha
    assert np.all(np.abs(got - alpha) <= rtol * np.abs(alpha))
    settings = [Setting("kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B", law=law) for law in LAWS]
    assert len({latent_stream_key(s) for s in settings}) == len(LAWS)  # every law draws its own curves
    assert len({stream_key(s) for s in settings}) == 1  # and all share the repetitions' noise


def test_settings_and_studies_carry_the_law():
    with pytest.raises(ValueError, match="unknown law"):
        Setting("legendre", n=4, T=20, m=2, mu=1.0, sigma0=0.0, radius_rule="B", law="nope")
    st = Study.grid("x", family="legendre", n=[4, 8], m=2, law=["default", "wave-0.5"])
    assert [s.law for s in st] == ["default"] * 2 + ["wave-0.5"] * 2
    studies = paper_studies((4, 8), law="shift-0.75")
    assert set(studies) == set(STUDY_NAMES)
    assert all(s.law == "shift-0.75" for st in studies.values() for s in st)
    assert get_study("fig2", n=(4,), law="wave-0.25").settings[0].law == "wave-0.25"
    s = get_study("fig4", n=(4,), law="shift-0.9").settings[0]
    assert np.isclose(np.linalg.norm(latent_curves(s, 1).mean_coef), 0.9, atol=0.5)


def test_results_table_has_a_law_column():
    study = get_study("fig5", n=(8,), law="shift-0.5").subset(radius_rule="B")
    df = run_study(study, reps=4, seed=1)
    assert list(df["law"]) == ["shift-0.5"]
    assert df.attrs["dpfda"]["laws"] == ["shift-0.5"]
    other = run_study(get_study("fig5", n=(8,)).subset(radius_rule="B"), reps=4, seed=1)
    assert other["law"].iloc[0] == "default" and other["err_ftp"].iloc[0] != df["err_ftp"].iloc[0]


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "machinery"),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "dpfda_book", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600)


def test_cli_law_option(tmp_path):
    proc = _cli("reproduce", "fig6", "--law", "shift-0.5", "--quick", "--reps", "4", "--jobs", "1",
                "--out", str(tmp_path), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    df = pd.read_csv(tmp_path / "fig6.csv")
    assert (df["law"] == "shift-0.5").all()
    bad = _cli("reproduce", "fig6", "--law", "no-such-law", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "--law" in lines[0] and "no-such-law" in lines[0]
