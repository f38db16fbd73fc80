"""dpfda.practice.publish: the record of a release; the public home of read_curves and the diagnostics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import dpfda
from dpfda.maths.summation import gamma
from dpfda.practice import diagnostics, publish, reading
from dpfda.practice.publish import (
    COMBINE,
    DELTAS,
    privacy_unit,
    read_curves,
    release_record,
    space_description,
)

from _spaces import GRIDS, on_grid

AGES = [1.0, 1.5, 2.0, 3.0]


def wide_table():
    return pd.DataFrame({"child": ["a", "b", "c"], "1": [70.0, 75.0, 72.0], "1.5": [80.0, 82.0, 79.0],
                         "3": [95.0, 97.0, 94.0], "2": [88.0, 90.0, 86.0]})


def test_record_of_a_secure_ftp_release_through_a_frame():
    curves = read_curves(wide_table(), id="child", domain=(1, 3))
    points, X = curves.points, curves.values
    frame = dpfda.PublicFrame(dpfda.LegendreSpace(2), points, dpfda.Domain(1, 3, name="age"), 50, 120)
    rel = dpfda.ftp(frame.to_unit(X), frame.grid, frame.space, frame.radius, 2.0, secure=True)
    rec = release_record(rel, [1, 2, 3], frame=frame)
    assert rec["secure"] is True and rec["mu"] == 2.0 and rec["n"] == 3
    assert [p["delta"] for p in rec["epsilon_delta"]] == list(DELTAS)
    assert rec["grid"]["points"] == pytest.approx(AGES, rel=0, abs=gamma(3) * np.max(AGES))  # start + t·length
    assert rec["curve"]["values"] == pytest.approx(frame.values(rel, [1, 2, 3]).tolist(), rel=gamma(2), abs=0)
    assert rec["frame"]["scale"] == frame.scale and rec["frame"]["lower"] == 50.0  # a constant band: one number
    assert rec["frame"]["radius_rule"] == frame.radius_rule and len(rec["frame"]["reference_coef"]) == 2
    assert rec["domain"] == {"start": 1.0, "stop": 3.0, "name": "age"}


def test_record_of_ptf_in_a_kernel_space_and_refusals():
    grid = dpfda.uniform_grid(5)
    space = dpfda.KernelSpace(dpfda.gaussian_kernel(0.3))
    X = np.zeros((20, 5))
    rel = dpfda.ptf(X, grid, space, 1.0, 1.0, np.random.default_rng(2))
    rec = release_record(rel, np.linspace(0, 1, 7), deltas=(1e-3,))
    assert rec["secure"] is False and "not publication" in rec["noise"]
    assert rec["space"] == {"kind": "gaussian-kernel", "rho": 0.3, "spec": "gaussian:0.3"}
    assert len(rec["clip"]) == 5 and rec["frame"] is None
    assert rec["epsilon_delta"][0]["epsilon"] == pytest.approx(float(dpfda.epsilon_from_mu(1.0, 1e-3)), rel=gamma(1),
                                                               abs=0)  # the same function
    batch = dpfda.ftp(np.zeros((2, 20, 5)), grid, space, 1.0, 1.0, np.random.default_rng(2))
    with pytest.raises(ValueError, match="must be one release"):
        release_record(batch, [0.5])
    with pytest.raises(ValueError, match="must lie in"):
        release_record(rel, [1.5])
    with pytest.raises(ValueError, match=r"every delta must lie in \(0, 1\)"):
        release_record(rel, [0.5], deltas=(1.0,))
    with pytest.raises(TypeError, match="release must be a dpfda Release"):
        release_record(rec, [0.5])
    assert space_description(dpfda.KernelSpace(dpfda.brownian_kernel())) == {"kind": "brownian-kernel",
                                                                              "spec": "brownian"}
    with pytest.raises(TypeError, match="FunctionSpace"):
        space_description("legendre:3")


@pytest.mark.parametrize("name, space", on_grid(GRIDS["mid9"]).items())
def test_the_record_names_every_space_by_a_spec_that_reads_back(name, space):
    rel = dpfda.ftp(np.zeros((20, 9)), GRIDS["mid9"], space, 1.0, 1.0, np.random.default_rng(3))
    rec = json.loads(json.dumps(release_record(rel, [0.5])))
    assert rec["space"] == space.description and dpfda.space_from_spec(rec["space"]["spec"]) == space
    assert rec["space"]["kind"].split("-")[0] == rec["space"]["spec"].split(":")[0] == name


def test_rng_may_be_left_out_only_with_secure_true():
    grid, space = dpfda.uniform_grid(4), dpfda.LegendreSpace(2)
    X = np.zeros((10, 4))
    for method in (dpfda.ftp, dpfda.ptf):
        assert method(X, grid, space, 1.0, 1.0, secure=True).secure is True
        with pytest.raises(TypeError, match="only secure=True, whose noise comes from OpenDP"):
            method(X, grid, space, 1.0, 1.0)
        assert method(X, grid, space, 1.0, 1.0, np.random.default_rng(0)).secure is False


def test_public_frame_refuses_a_kernel_space_saying_why_and_what_to_do():
    space = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))
    with pytest.raises(TypeError) as info:
        dpfda.PublicFrame(space, AGES, dpfda.Domain(1, 3), 50, 120)
    text = str(info.value)
    assert "no fitting radius" in text and "λ_min(K_T)" in text  # why
    assert "needs radius=" in text and "public bound on the RKHS norm" in text  # what to do: a given B',
    assert "ftp_private_radius" in text  # or a private one
    # The bound the message names is real: over the band |y_j| <= 1 the smallest RKHS norm of an
    # interpolant reaches sqrt(T/λ_min) at most, and a sign pattern gets near it for a smooth kernel.
    K = space.kernel.gram(dpfda.uniform_grid(12))
    lam, V = np.linalg.eigh(K)
    y = np.sign(V[:, 0])
    assert np.sqrt(y @ np.linalg.solve(K, y)) > 1e3  # a band of height 1 allows an RKHS norm above 1000
    with pytest.raises(TypeError, match=r"space must be an orthonormal space \(such as LegendreSpace\) "
                                          "or a KernelSpace, got str"):
        dpfda.PublicFrame("legendre", AGES, dpfda.Domain(1, 3), 50, 120)


def test_the_record_states_the_privacy_unit():
    grid, space = dpfda.uniform_grid(4), dpfda.LegendreSpace(2)
    rel = dpfda.ftp(np.zeros((5, 4)), grid, space, 1.0, 1.0, np.random.default_rng(0))
    unit = release_record(rel, [0.5])["privacy_unit"]
    assert unit == privacy_unit() and "one subject's curve, replaced" in unit and "n public" in unit
    combined = release_record(rel, [0.5], combine="mean")["privacy_unit"]
    assert "all of that subject's rows" in combined and COMBINE["mean"] in combined
    with pytest.raises(ValueError, match="combine must be None or one of"):
        release_record(rel, [0.5], combine="median")


def test_names_moved_out_are_still_importable_from_publish():
    """read_curves, COMBINE and the curator's diagnostics keep publish as a public home (the README's import)."""
    moved = {"read_curves": reading, "COMBINE": reading, "curator_diagnostics": diagnostics,
             "diagnostics_text": diagnostics, "CLIP_WARNING_SHARE": diagnostics, "SHRINK_WARNING_SHARE": diagnostics}
    for name, home in moved.items():
        assert name in publish.__all__ and getattr(publish, name) is getattr(home, name), name
    assert set(publish.__all__) >= set(reading.__all__) | set(diagnostics.__all__)
