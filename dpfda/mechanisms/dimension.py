"""Choosing the dimension m of an orthonormal H_m from a public proxy data set.

FTP's error against the mean curve μ has two parts that pull m in opposite ways: the
part of μ outside H_m (the bias; a fit in H_m cannot reach it) and the privacy noise,
whose coefficients are m independent N(0, σ²) with σ = 2B'/(nμ) (Algorithm 1), so its
expected squared L² norm is m·σ².  For a space that nests (:attr:`dpfda.FunctionSpace.nests`:
H_m spanned by the first m functions of one orthonormal sequence, as Legendre and Fourier
spaces are) the squared bias is the energy of μ's coefficients beyond the m-th, and ::

    risk(m) = Σ_{k > m} θ_k² + m·σ².

:func:`public_dimension` estimates θ from a **public proxy**: curves the curator may look
at because they are not the data being released (another year of the same station, a
published cohort, a pilot study).  It fits the proxy's mean curve in H_{m_max} by least
squares on the proxy's grid, and returns the m in 1..m_max that minimises the estimate.
The energy beyond m_max is the same for every m and is left out.

*What it costs.*  Nothing from the privacy budget: the rule reads only the proxy and
public numbers (n, μ, B', the space family, m_max), never the data released, so the
release's guarantee is that of FTP with this m fixed in advance.  It is only as good as
the proxy: if the released data's mean has more (or less) detail than the proxy's, the m
chosen is too small (or too large), and the release pays in bias (or noise); nothing in
the rule can detect that, since detecting it would mean looking at the private data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.spaces import FunctionSpace, OrthonormalSpace
from ..validation import as_float_array, check_grid, check_int, check_positive
from .calibration import noise_scale
from .pipelines import check_radius

__all__ = ["PublicDimension", "public_dimension"]


@dataclass(frozen=True)
class PublicDimension:
    """The dimension chosen by :func:`public_dimension` and the estimate behind it.

    ``bias2``, ``noise`` and ``risk`` have one entry per m = 1..m_max (index m - 1): the
    proxy mean's coefficient energy beyond m, m·σ², and their sum.
    """

    m: int
    sigma: float
    bias2: np.ndarray
    noise: np.ndarray
    risk: np.ndarray


def _proxy_values(proxy: ArrayLike | Curves, grid: np.ndarray) -> np.ndarray:
    if not isinstance(proxy, Curves):  # an array (k, T) on grid, or one curve (T,)
        values = as_float_array(proxy, "proxy")
        proxy = as_curves(values[None, :] if values.ndim == 1 else values, grid, name="proxy")
    if not proxy.common:
        raise ValueError("proxy is measured at its own points: put it on the public grid first "
                         "(Curves.on_grid, a map of the public proxy alone)")
    assert proxy.values is not None
    if proxy.values.ndim != 2:
        raise ValueError(f"proxy must be one data set (n, T), got batch axes {proxy.values.shape[:-2]}")
    if proxy.grid.shape != grid.shape or not np.array_equal(proxy.grid, grid):
        raise ValueError("proxy is on a different grid from grid: the rule fits the proxy on the grid given")
    return proxy.values


def public_dimension(proxy: ArrayLike | Curves, grid: ArrayLike,
                     space_family: Callable[[int], FunctionSpace], n: int, mu: float,
                     radius: float, *, m_max: int) -> PublicDimension:
    """The m in 1..m_max minimising Σ_{k>m} θ_k² + m·σ² on a public proxy (see module).

    Parameters
    ----------
    proxy : array (k, T) or common-grid :class:`dpfda.Curves`
        Public curves at ``grid`` (never the data being released); their mean gives θ.
    grid : array (T,)
        The proxy's points on [0, 1], T >= m_max.
    space_family : callable
        m -> an orthonormal space of dimension m that nests (``space.nests``, e.g.
        ``dpfda.FourierSpace``, ``dpfda.LegendreSpace``); a space that does not nest is
        refused, since its smaller spaces are not read off the fit in H_{m_max}.
    n, mu, radius : int, float, float
        The release's public n, budget μ and B': σ = 2B'/(nμ)
        (:func:`dpfda.mechanisms.calibration.noise_scale`).
    m_max : int
        Largest dimension considered, >= 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfda import FourierSpace
    >>> t = np.arange(24) / 24
    >>> proxy = 10 + 3 * np.sqrt(2) * np.sin(2 * np.pi * t)  # mean and one sine: θ = (10, 0, 3)
    >>> public_dimension(proxy, t, FourierSpace, 365, 1.0, 50.0, m_max=9).m
    3
    """
    m_max = check_int(m_max, "m_max", 1)
    n = check_int(n, "n", 1)
    mu = check_positive(mu, "mu")
    radius = check_radius(radius)
    grid = check_grid(grid, "grid")
    if not callable(space_family):
        raise TypeError(f"space_family must be a callable m -> space, got {type(space_family).__name__}")
    space = space_family(m_max)
    if not isinstance(space, OrthonormalSpace):
        raise TypeError(f"space_family must map m to an orthonormal space of dimension m, got {space!r} for "
                        f"m={m_max}" + (" (a kernel space has no dimension to choose: its coordinates are "
                                        "the grid's T points)" if isinstance(space, FunctionSpace) else ""))
    if not space.nests:
        raise TypeError(f"space_family must map m to a space that nests (space.nests): {space!r} does not "
                        "nest, so its smaller spaces are not the first coordinates of the fit in H_{m_max}")
    if space.m != m_max:
        raise TypeError(f"space_family must map m to a space of dimension m, got {space!r} for m={m_max}")
    if grid.size < m_max:
        raise ValueError(f"m_max={m_max} needs at least m_max grid points, grid has {grid.size}")
    sigma = float(noise_scale(radius, None, n, mu, "radius"))
    values = _proxy_values(proxy, grid)
    theta = space.at(grid).coef_from_values(values.mean(axis=0))
    energy = theta**2
    bias2 = np.array([energy[m:].sum() for m in range(1, m_max + 1)])
    noise = np.arange(1, m_max + 1) * sigma**2
    risk = bias2 + noise
    return PublicDimension(m=int(np.argmin(risk)) + 1, sigma=sigma, bias2=bias2, noise=noise, risk=risk)
