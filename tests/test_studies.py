"""dpfda_book.simulation.studies: the paper's studies as data, settings and their validation."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import dpfda
from dpfda.maths.spaces import SPACE_FAMILIES, OrthonormalSpace
from dpfda.maths.summation import gamma
from dpfda_book.simulation.engine import latent_curves, simulate_setting
from dpfda_book.simulation.studies import (
    DECAY_KERNELS,
    FAMILIES,
    PAPER_N,
    RADIUS_RULES,
    STUDY_NAMES,
    Setting,
    Study,
    check_family,
    get_study,
    kernel_study,
    paper_studies,
    radius_rule,
)

from _spaces import of_size


def _values(study, field):
    return sorted({getattr(s, field) for s in study.settings}, key=lambda v: (v is None, v))


def test_paper_studies_match_the_paper():
    st = paper_studies()
    assert list(st) == list(STUDY_NAMES)
    n = list(PAPER_N)
    assert n == [2**k for k in range(2, 13)]
    expect = {
        # name: (family, T values, m values, mu values, sigma0 values, rules, count)
        "fig1": ("kernel", [2, 4, 6, 8], [None], [0.1, 1.0], [0.0], ["1.1B"], 4 * 2 * 11),
        "table1": ("kernel", [2, 4, 6, 8], [None], [0.1, 1.0], [0.0], ["1.1B"], 4 * 2 * 11),
        "fig2": ("kernel", [4], [None], [1.0], [1.0], ["B", "log_n", "n_2_3", "sqrt_log_n", "sqrt_n"], 5 * 11),
        "fig3": ("kernel", [2, 4, 6, 8], [None], [1.0], [0.1, 1.0, 10.0], ["log_n"], 4 * 3 * 11),
        "fig4": ("legendre", [20], [2, 4, 6, 8], [0.1, 1.0], [0.0], ["1.1B"], 4 * 2 * 11),
        "fig5": ("legendre", [20], [4], [1.0], [1.0], ["B", "log_n", "n_2_3", "sqrt_log_n", "sqrt_n"], 5 * 11),
        "fig6": ("legendre", [20], [2, 4, 6, 8], [1.0], [0.1, 1.0, 10.0], ["sqrt_log_n"], 4 * 3 * 11),
    }
    for name, (family, Ts, ms, mus, s0s, rules, count) in expect.items():
        study = st[name]
        assert len(study) == count, name
        assert _values(study, "family") == [family]
        assert _values(study, "n") == n
        assert _values(study, "T") == Ts
        assert _values(study, "m") == ms
        assert _values(study, "mu") == mus
        assert _values(study, "sigma0") == s0s
        assert sorted(_values(study, "radius_rule")) == rules
        assert _values(study, "B") == [1.0]
        if family == "kernel":
            assert _values(study, "rho") == [0.2] and _values(study, "centers") == [20]
    # Table 1 tabulates exactly the settings of Figure 1.
    assert [s.canonical() for s in st["table1"]] == [s.canonical() for s in st["fig1"]]


def test_radius_rules():
    assert set(RADIUS_RULES) == {"B", "1.1B", "sqrt_log_n", "log_n", "sqrt_n", "n_2_3"}
    assert radius_rule("B", 64, 2.0) == 2.0
    # scalar formulas: a few roundings (and a power's ulps) each
    assert radius_rule("1.1B", 64, 2.0) == pytest.approx(2.2, rel=gamma(4), abs=0)
    assert radius_rule("log_n", 4) == pytest.approx(math.log(4), rel=gamma(4), abs=0)  # 1.386 > B = 1 at n = 4
    assert radius_rule("sqrt_log_n", 4) == pytest.approx(math.sqrt(math.log(4)), rel=gamma(4), abs=0)
    assert radius_rule("sqrt_n", 4096) == pytest.approx(64.0, rel=gamma(4), abs=0)
    assert radius_rule("n_2_3", 4096) == pytest.approx(256.0, rel=gamma(4), abs=0)
    s = Setting("kernel", n=1024, T=4, mu=1, sigma0=1, radius_rule="log_n")
    assert s.radius == pytest.approx(math.log(1024), rel=gamma(4), abs=0)
    with pytest.raises(ValueError, match="unknown radius rule"):
        radius_rule("log_log_n", 8)


def test_setting_validation_names_the_argument():
    ok = dict(family="legendre", n=8, T=20, m=4, mu=1.0, sigma0=0.0, radius_rule="B")
    Setting(**ok)
    for change, match in [
        ({"family": "sobolev"}, "family must be one of"),
        ({"family": "poly"}, r"family must be one of \('kernel', 'legendre', .*an orthonormal family.*, got 'poly'"),
        ({"family": "rkhs"}, r"family must be one of \('kernel', 'legendre', .*, got 'rkhs'"),
        ({"mu": 0.0}, "mu"),
        ({"mu": float("nan")}, "mu"),
        ({"sigma0": -1.0}, "sigma0"),
        ({"n": 0}, "n"),
        ({"T": 3}, "T must be >= m"),
        ({"m": None}, "m .*required"),
        ({"radius": -2.0}, "radius"),
        ({"B": 0.0}, "B"),
        ({"rho": 0.2}, "rho"),
    ]:
        with pytest.raises(ValueError, match=match):
            Setting(**{**ok, **change})
    with pytest.raises(TypeError, match="n must be an integer"):
        Setting(**{**ok, "n": 8.5})
    with pytest.raises(ValueError, match="m applies only"):
        Setting("kernel", n=8, T=4, m=2, mu=1, sigma0=0, radius_rule="B")


def test_custom_study_and_subset():
    st = Study.grid("mine", family="legendre", n=[16, 64], T=12, m=[3, 5], mu=[0.5, 1.0], sigma0=0.5,
                    radius_rule=["log_n", ("twice_B", lambda n, B: 2.0 * B)])
    assert len(st) == 2 * 2 * 2 * 2
    assert {s.radius for s in st if s.radius_rule == "twice_B"} == {2.0}
    sub = st.subset(n=64, m=[5])
    assert {(s.n, s.m) for s in sub} == {(64, 5)} and len(sub) == 4
    with pytest.raises(ValueError, match="no setting"):
        st.subset(n=1000)
    with pytest.raises(TypeError, match=r"unknown keywords \['group', 'kind'\].*layout"):  # drawn by a Layout
        Study.grid("x", family="legendre", n=[16], m=3, kind="ratio", group="m")
    with pytest.raises(ValueError, match="unknown study"):
        get_study("fig7")


def test_family_names_the_space_and_other_names_are_refused_by_name():
    leg = Setting("legendre", n=8, T=20, m=4, mu=1.0, sigma0=0.0, radius_rule="B")
    ker = Setting("kernel", n=8, T=6, mu=1.0, sigma0=0.0, radius_rule="B", rho=0.3)
    assert leg.space == dpfda.LegendreSpace(4) and leg.geometry().space == leg.space
    assert isinstance(ker.space, dpfda.KernelSpace) and ker.space.kernel.rho == 0.3
    assert leg.params()["family"] == "legendre" and "space" not in leg.params()
    with pytest.raises(AttributeError):
        leg.space = dpfda.LegendreSpace(3)  # read-only: derived from family, m and rho
    with pytest.raises(ValueError, match=r"family must be one of .*got 'poly'$"):
        Study.grid("x", family="poly", n=[4], m=2)
    with pytest.raises(ValueError, match="got 'rkhs'$"):
        Study.grid("x", family="rkhs", n=[4], T=4)
    with pytest.raises(TypeError, match=r"unknown keywords \['space'\]"):
        Study.grid("x", space="legendre", n=[4], m=2)
    with pytest.raises(TypeError, match="needs family"):
        Study.grid("x", n=[4], m=2)
    st = Study.grid("x", family="legendre", n=[4, 8], m=2)
    assert len(st.subset(family="legendre")) == 2
    with pytest.raises(ValueError, match="got 'poly'$"):
        st.subset(family="poly")
    with pytest.raises(ValueError, match=r"unknown setting parameter 'space'; choose from .*'family'"):
        st.subset(space="legendre")




def test_check_family_accepts_the_families_and_names_the_argument():
    orthonormal = tuple(name for name, cls in SPACE_FAMILIES.items() if issubclass(cls, OrthonormalSpace))
    assert FAMILIES == ("kernel",) + orthonormal and "legendre" in orthonormal
    assert [check_family(f) for f in FAMILIES] == list(FAMILIES)
    with pytest.raises(ValueError, match="got 'gaussian'$"):  # a kernel's space is family='kernel'
        check_family("gaussian")
    with pytest.raises(ValueError, match=r"^where must be one of .*got 3$"):
        check_family(3, "where")
    with pytest.raises(ValueError, match="got 'rkhs'$"):
        check_family("rkhs")



H_M = of_size(12)
"""Every orthonormal space of the test registry, sized for 12 points, by case id."""


@pytest.mark.parametrize("name", list(H_M))
def test_every_orthonormal_space_of_the_registry_is_simulated(name):
    space = H_M[name]
    family = space.spec.split(":")[0]
    s = Setting(family, n=16, T=12, m=space.m, mu=1.0, sigma0=0.1, radius_rule="1.1B")
    assert s.space == space and s.metric == "IMSE" and s.dim == space.m and s.kernel_spec is None
    curves = latent_curves(s, seed=3)
    # in the unit ball (B = 1): a unit vector times r <= 1, its norm rounded by γ_{2m+4} at most
    assert curves.space == space and np.all(curves.norms() <= 1.0 + gamma(2 * space.m + 4))
    out = simulate_setting(s, reps=3, seed=3)
    assert all(np.all(np.isfinite(out[k])) and np.all(out[k] > 0) for k in ("err_ftp", "err_ptf"))
    # each family draws from its own streams; the paper's Legendre keys are those of old ("poly")
    token = "poly" if family == "legendre" else family
    assert s.stream_canonical().startswith(f"setting|space={token}|n=16|T=12|m={space.m}|")
    assert s.latent_canonical() == f"latent|{token}|m={space.m}|n=16|B=1.0"
    with pytest.raises(ValueError, match="m applies only to an orthonormal family"):
        Setting("kernel", n=16, T=12, m=space.m, mu=1.0, sigma0=0.1, radius_rule="1.1B")

def test_radius_rule_refuses_a_name_that_is_not_a_string():
    with pytest.raises(TypeError, match="radius_rule name must be a string, got int"):
        radius_rule(3, 8)


def test_study_validation_names_what_is_wrong():
    s = Setting("legendre", n=8, T=20, m=4, mu=1.0, sigma0=0.0, radius_rule="B")
    with pytest.raises(ValueError, match="identifier-like"):
        Study("not a name", (s,))
    with pytest.raises(ValueError, match="at least one setting"):
        Study("empty", ())
    with pytest.raises(TypeError, match="Setting objects, got dict"):
        Study("bad", ({"n": 8},))
    with pytest.raises(ValueError, match="duplicate setting in study 'twice'"):
        Study("twice", (s, s))
    study = Study("one", [s])
    assert len(study) == 1 and list(study) == [s] and study.settings == (s,)
    with pytest.raises(ValueError, match="unknown setting parameter 'colour'"):
        study.subset(colour=1)


def test_canonical_texts_leave_out_the_study_and_the_latent_key_leaves_out_the_release():
    a = Setting("kernel", n=16, T=4, mu=1.0, sigma0=1.0, radius_rule="log_n")
    b = Setting("kernel", n=16, T=8, mu=0.1, sigma0=0.0, radius_rule="B")
    assert a.canonical() != b.canonical() and a.latent_canonical() == b.latent_canonical()
    assert Study("x", (a,)).settings[0].canonical() == Study("y", (a,)).settings[0].canonical()
    assert a.latent_canonical() != Setting("kernel", n=32, T=4, mu=1.0, sigma0=1.0,
                                           radius_rule="log_n").latent_canonical()


def test_study_grid_is_the_product_of_its_lists():
    st = Study.grid("g", family="kernel", n=[4, 8, 16], T=[2, 4], mu=1.0, sigma0=[0.0, 1.0])
    assert len(st) == 3 * 2 * 2
    assert {(s.n, s.T, s.sigma0) for s in st} == {(n, T, s0) for n in (4, 8, 16) for T in (2, 4)
                                                  for s0 in (0.0, 1.0)}
    assert st.n_values == (4, 8, 16)
    with pytest.raises(ValueError, match="T is required for family='kernel'"):
        Study.grid("g", family="kernel", n=[4])
    with pytest.raises(ValueError, match="unknown radius rule 'nope'"):
        Study.grid("g", family="legendre", n=[4], m=2, radius_rule="nope")


def test_get_study_is_the_paper_study_at_other_n():
    small = get_study("fig4", n=(4, 8))
    assert small.n_values == (4, 8)
    assert len(small) == len(paper_studies()["fig4"]) * 2 // len(PAPER_N)
    assert set(get_study("fig4").n_values) == set(PAPER_N)


# ---------------------------------------------------------------------------
# The kernel of an RKHS setting
# ---------------------------------------------------------------------------


def test_a_kernel_setting_names_its_kernel_and_the_default_is_the_papers_gaussian():
    paper = Setting("kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B")
    assert paper.kernel is None and paper.kernel_spec == "gaussian:0.2" and paper.rho == 0.2
    assert paper.space == dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))
    # the Gaussian kernel written out, or by another bandwidth given as rho, is the same setting
    same = Setting("kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B", kernel="gaussian:1/5")
    assert same == paper and same.canonical() == paper.canonical()
    wide = Setting("kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B", rho=0.3)
    assert wide.kernel_spec == "gaussian:0.3"
    assert wide == Setting("kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B", kernel="gaussian:0.3")
    assert replace(paper, rho=0.3) == wide  # the bandwidth alone changes the paper's kernel
    m = Setting("kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B", kernel="matern:3/2,0.2")
    assert m.kernel == m.kernel_spec == "matern:1.5,0.2" and m.rho is None  # the spec holds ρ
    assert m.space == dpfda.KernelSpace(dpfda.MaternKernel(1.5, 0.2))
    assert m.params()["kernel"] == "matern:1.5,0.2" and paper.params()["kernel"] == "gaussian:0.2"
    leg = Setting("legendre", n=8, T=20, m=4, mu=1.0, sigma0=0.0, radius_rule="B")
    assert leg.kernel is None and leg.kernel_spec is None and leg.params()["kernel"] is None
    # from the paper's kernel to another and back, by replace
    assert replace(paper, kernel="matern:1.5,0.2") == m  # rho = 0.2 is the Matérn kernel's own
    assert replace(m, kernel="matern:0.5,0.1").kernel_spec == "matern:0.5,0.1"
    assert replace(m, kernel=None) == paper


def test_only_a_kernel_other_than_the_papers_enters_the_stream_keys():
    base = dict(family="kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B")
    paper = Setting(**base)
    assert "kernel" not in paper.canonical() and "kernel" not in paper.latent_canonical()
    keys = {paper.canonical()}
    latent = {paper.latent_canonical()}
    for spec in ("matern:0.5,0.2", "matern:1.5,0.2", "matern:2.5,0.2", "matern:2.5,0.1",
                 "gaussian:0.2:regularize"):
        s = Setting(**base, kernel=spec)
        assert s.canonical().endswith(f"|kernel={s.kernel_spec}") and s.stream_canonical() == s.canonical()
        assert s.latent_canonical().endswith(f"|kernel={s.kernel_spec}")
        keys.add(s.canonical())
        latent.add(s.latent_canonical())
    assert len(keys) == len(latent) == 6  # each kernel its own curves and its own noise
    # the law's key still comes last, after the kernel's
    shifted = Setting(**base, kernel="matern:0.5,0.2", law="shift-0.5")
    assert shifted.canonical().endswith("|kernel=matern:0.5,0.2|law=shift-0.5")
    assert shifted.stream_canonical() == Setting(**base, kernel="matern:0.5,0.2").canonical()


def test_a_kernel_that_is_not_one_or_disagrees_with_rho_is_refused_by_name():
    base = dict(family="kernel", n=16, T=4, mu=1.0, sigma0=0.0, radius_rule="1.1B")
    with pytest.raises(ValueError, match=r"kernel must be the spec of a kernel space .*'legendre:4'"):
        Setting(**base, kernel="legendre:4")
    with pytest.raises(ValueError, match="unknown space family 'sobolev'"):
        Setting(**base, kernel="sobolev:2")
    with pytest.raises(ValueError, match="nu must be 0.5, 1.5 or 2.5"):
        Setting(**base, kernel="matern:1,0.2")
    with pytest.raises(TypeError, match="kernel must be the spec of a kernel space such as"):
        Setting(**base, kernel=dpfda.MaternKernel(0.5, 0.2))
    with pytest.raises(ValueError, match=r"rho=0.3 disagrees with kernel 'matern:0.5,0.2'"):
        Setting(**base, kernel="matern:0.5,0.2", rho=0.3)
    with pytest.raises(ValueError, match="rho=0.2 disagrees with kernel 'brownian'"):
        Setting(**base, kernel="brownian", rho=0.2)
    assert Setting(**base, kernel="matern:0.5,0.2", rho=0.2).kernel == "matern:0.5,0.2"
    assert Setting(**base, kernel="brownian").rho is None
    with pytest.raises(ValueError, match=r"rho=0.2 disagrees with kernel 'matern:0.5,0.1'"):
        replace(Setting(**base), kernel="matern:0.5,0.1")  # the paper's bandwidth, carried over
    with pytest.raises(ValueError, match="rho, centers and kernel apply only to family='kernel'"):
        Setting("legendre", n=8, T=20, m=4, mu=1.0, sigma0=0.0, radius_rule="B", kernel="gaussian:0.2")


def test_the_kernel_study_is_figure_1_under_each_kernel():
    st = kernel_study()
    fig1 = get_study("fig1")
    assert len(st) == len(DECAY_KERNELS) * len(fig1)
    assert [s.kernel_spec for s in st.settings[:: len(fig1)]] == list(DECAY_KERNELS)
    for spec in DECAY_KERNELS:
        mine = st.subset(kernel=spec)
        assert [(s.n, s.T, s.mu, s.sigma0, s.radius, s.B) for s in mine] == [
            (s.n, s.T, s.mu, s.sigma0, s.radius, s.B) for s in fig1]
        assert {s.kernel_spec for s in mine} == {spec}
    # the Gaussian kernel's cells are Figure 1's own: the same keys, curves and streams
    assert [s.canonical() for s in st.subset(kernel="gaussian:1/5")] == [s.canonical() for s in fig1]
    assert Study.grid("k", family="kernel", T=4, n=[4], kernel="matern:5/2,0.2").settings[0].kernel == (
        "matern:2.5,0.2")
