"""The public-proxy rule for the dimension m (dpfda.mechanisms.dimension)."""

import inspect

import numpy as np
import pytest

from dpfda import Curves, FourierSpace, GaussianKernel, KernelSpace, LegendreSpace
from dpfda.maths.rounding import solve_rtol
from dpfda.maths.summation import gamma
from dpfda.mechanisms.calibration import noise_scale
from dpfda.mechanisms.dimension import public_dimension

from _spaces import all_spaces

HOURS = np.arange(24) / 24


def _bias_atol(space, grid, theta, data):
    """How far a tail energy Σ_{k>m} θ̂_k² may be from the exact Σ_{k>m} θ_k²: θ̂ is a least-squares
    solve (solve_rtol of ΦᵀΦ, relative to ||θ||) from proxy values that carry γ_{d+4} of their size
    (through ||Φ⁺||·√T); squares and sums add γ_d of ||θ||²."""
    geom = space.at(grid)
    t = np.linalg.norm(theta)
    gain = np.linalg.norm(np.linalg.pinv(geom.Phi), 2) * np.sqrt(geom.T)
    d_theta = solve_rtol(geom.Phi.T @ geom.Phi, geom.T + geom.dim) * t + gain * gamma(geom.dim + 4) * np.abs(data).max()
    return 2 * t * d_theta + d_theta**2 + gamma(geom.dim) * t**2


def _proxy(theta, k=3):
    """k public curves whose mean has Fourier coefficients theta (the rows differ by ± a sine)."""
    mean = FourierSpace(len(theta)).evaluate(np.asarray(theta, dtype=float), HOURS)
    wiggle = np.sqrt(2) * np.sin(2 * np.pi * 3 * HOURS)
    return np.stack([mean + 0.5 * wiggle, mean - 0.5 * wiggle, mean][:k])


def test_formula_by_hand():
    # θ = (1, 0.5, 0.1): tail energies 0.26, 0.01, 0, 0; σ = 2·1/(10·1) = 0.2, σ² = 0.04.
    # risk = 0.30, 0.09, 0.12, 0.16: m = 2.
    proxy = _proxy([1.0, 0.5, 0.1])
    choice = public_dimension(proxy, HOURS, FourierSpace, 10, 1.0, 1.0, m_max=4)
    assert choice.m == 2
    assert choice.sigma == noise_scale(1.0, None, 10, 1.0, "radius") == pytest.approx(0.2, rel=gamma(4), abs=0)
    atol = _bias_atol(FourierSpace(4), HOURS, [1.0, 0.5, 0.1], proxy)
    np.testing.assert_allclose(choice.bias2, [0.26, 0.01, 0.0, 0.0], rtol=0, atol=atol)
    np.testing.assert_allclose(choice.noise, [0.04, 0.08, 0.12, 0.16], rtol=gamma(6), atol=0)  # σ²·m
    np.testing.assert_allclose(choice.risk, [0.30, 0.09, 0.12, 0.16], rtol=gamma(8), atol=atol)


def test_less_noise_buys_more_dimension():
    # σ = 2/(1000·1) = 0.002: the 0.1 coefficient (energy 0.01) is worth its 4e-6 of noise.
    theta = [1.0, 0.5, 0.1]
    assert public_dimension(_proxy(theta), HOURS, FourierSpace, 1000, 1.0, 1.0, m_max=6).m == 3
    # and much more noise leaves only the mean: σ = 2·10/(10·1) = 2
    assert public_dimension(_proxy(theta), HOURS, FourierSpace, 10, 1.0, 10.0, m_max=6).m == 1


def test_legendre_and_curves_proxy():
    grid = np.linspace(0, 1, 15)
    theta = np.array([2.0, 1.0, 0.0, 0.3])
    values = LegendreSpace(4).evaluate(theta, grid)[None, :]
    by_array = public_dimension(values, grid, LegendreSpace, 100, 1.0, 1.0, m_max=6)
    by_curves = public_dimension(Curves(values, grid), grid, LegendreSpace, 100, 1.0, 1.0, m_max=6)
    atol = _bias_atol(LegendreSpace(6), grid, theta, values)
    np.testing.assert_allclose(by_array.bias2[:4], [1.09, 0.09, 0.09, 0.0], rtol=0, atol=atol)
    assert by_array.m == by_curves.m == 4  # σ² = 4e-4 per dimension against the 0.09 of θ_4


def test_never_reads_private_data():
    params = list(inspect.signature(public_dimension).parameters)
    assert params == ["proxy", "grid", "space_family", "n", "mu", "radius", "m_max"]


@pytest.mark.parametrize("kwargs, error, words", [
    ({"m_max": 0}, ValueError, "m_max"),
    ({"m_max": 2.5}, TypeError, "m_max"),
    ({"m_max": 30}, ValueError, "m_max=30"),
    ({"n": 0}, ValueError, "n must"),
    ({"mu": -1.0}, ValueError, "mu must"),
    ({"radius": 0.0}, ValueError, "radius"),
    ({"proxy": np.ones((3, 12))}, ValueError, "proxy's last axis has length 12 but the grid has 24 points"),
    ({"proxy": np.full((2, 24), np.nan)}, ValueError, "NaN"),
    ({"space_family": 3}, TypeError, "space_family"),
    ({"space_family": lambda m: KernelSpace(GaussianKernel(0.2))}, TypeError, "no dimension to choose"),
    ({"space_family": lambda m: NotNested(m)}, TypeError, "does not nest"),
    ({"space_family": lambda m: FourierSpace(m + 1)}, TypeError, "dimension m"),
])
def test_bad_inputs_refused_by_name(kwargs, error, words):
    args = {"proxy": _proxy([1.0, 0.5]), "grid": HOURS, "space_family": FourierSpace, "n": 10, "mu": 1.0,
            "radius": 1.0, "m_max": 4} | kwargs
    with pytest.raises(error, match=words):
        public_dimension(**args)


def test_curves_proxy_on_other_points_refused():
    other = Curves(np.ones((2, 12)), np.arange(12) / 12)
    with pytest.raises(ValueError, match="different grid"):
        public_dimension(other, HOURS, FourierSpace, 10, 1.0, 1.0, m_max=4)
    own = Curves([[1.0, 2.0], [1.0, 2.0, 3.0]], [[0, 6], [0, 12, 18]], domain=(0, 24))
    with pytest.raises(ValueError, match="own points"):
        public_dimension(own, HOURS, FourierSpace, 10, 1.0, 1.0, m_max=4)


class NotNested(LegendreSpace):
    """An orthonormal space that says it does not nest (a basis rebuilt for each m, as B-splines)."""

    nests = False


@pytest.mark.parametrize("space", [s for _, s in all_spaces()], ids=lambda s: s.spec)
def test_the_chooser_takes_exactly_the_spaces_that_nest(space):
    args = (_proxy([1.0, 0.5]), HOURS)
    if space.nests:
        family = space.with_dimension
        choice = public_dimension(*args, family, 10, 1.0, 1.0, m_max=4)
        assert 1 <= choice.m <= 4
    else:
        with pytest.raises(TypeError, match="space_family"):
            public_dimension(*args, lambda m: space, 10, 1.0, 1.0, m_max=4)
