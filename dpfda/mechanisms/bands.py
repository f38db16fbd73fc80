"""The privacy noise of a release, point by point: its standard deviation and a band.

A release is f̃ = (what the data give) + (the privacy noise).  The noise's law is public: it
is Gaussian with a covariance fixed by σ (or σ_1, …, σ_T), the space and the grid, none of
which depends on the data.  So its standard deviation at any point t, and a band
f̃(t) ± z·sd(t), cost no privacy (post-processing of public parameters and of the release).

What the band covers, and what it does not:

* it covers **the privacy noise only**: over the noise of repeated releases of the *same*
  data, the band about each release covers the noiseless estimate (the curve the mechanism
  would publish without noise) at each point with the stated probability;
* it does **not** cover sampling variability (how far the mean of these n subjects is from
  the mean of the population they come from), nor the fitting bias (a curve outside the
  space or beyond the ball B'): a confidence band for the population mean would need an
  estimate of the variance across subjects, which would itself have to be private and
  spend part of the budget.

The standard deviations, by mechanism (E(t) is the map from coordinates to the value at t):

* FTP on an orthonormal H_m (Legendre, Fourier): sd(t) = σ ||φ(t)||_2 (Corollary 7), exact;
* FTP on an RKHS: sd(t) = σ sqrt(K(t, t)) when the release draws its Gaussian-process
  residual off the grid (Corollary 8), σ ||E(t)|| for the kernel interpolant otherwise;
  exact up to the eigenvalue floor of K_T;
* PTF: the fit of x̃ = x̄ + N(0, diag σ_j²) is linear while it stays inside the ball,
  coef = A x̃ with A = (ΦᵀWΦ)⁻¹ΦᵀW, so sd(t) = ||E(t)ᵀ A diag(σ)||_2, exact then.  When
  the fit reached the ball (``release.active``) the released coefficients are the fit's
  projection onto the ball, a 1-Lipschitz map in the fit's metric, and the band is the
  linear fit's (:func:`band_is_exact` says which).

The functions here take those public parameters (grid geometry, σ, PTF's weights), never a
release: :meth:`dpfda.Release.noise_sd`, ``band`` and ``plot`` call them with their own.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..maths.spaces import GridGeometry, KernelSpace
from ..validation import check_points, check_positive

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["BAND_COVERS", "band_is_exact", "band_z", "ftp_noise_sd", "plot_band", "ptf_noise_sd"]

BAND_COVERS = (
    "the privacy noise only: over repeated releases of the same data, the band about a release "
    "covers the noiseless estimate at each point with the stated probability; it is computed "
    "from public sigma, space and grid (free post-processing). It does not cover sampling "
    "variability (subjects drawn from a population) nor fitting bias"
)
"""What a noise band covers, in the words a record and a figure use."""


def band_z(level: float) -> float:
    """The standard normal quantile z with P(abs(Z) <= z) = ``level`` (in (0, 1))."""
    level = check_positive(level, "level")
    if not level < 1.0:
        raise ValueError(f"level must lie in (0, 1), e.g. 0.95, got {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def _coordinate_map(geometry: GridGeometry, t: np.ndarray) -> np.ndarray:
    """E (d, len(t)): value at t = coefᵀ E, a release's own evaluation, applied to I_d."""
    return geometry.evaluate(np.eye(geometry.dim), t)


def ftp_noise_sd(geometry: GridGeometry, sigma: float, t: ArrayLike, *, residual: bool = False) -> np.ndarray:
    """Standard deviation of FTP's privacy noise at each point of ``t`` (in [0, 1]): σ||E(t)||.

    ``residual``: whether an RKHS release draws its Gaussian-process residual off the grid
    (:meth:`dpfda.Release.__call__`), which adds its variance (sd = σ sqrt(K(t, t))).  The
    result has shape (len(t),) and depends only on public parameters.
    """
    t = check_points(t)
    sigma = check_positive(sigma, "sigma")
    var = np.sum(_coordinate_map(geometry, t) ** 2, axis=0)
    if residual and isinstance(geometry.space, KernelSpace):
        var = np.maximum(geometry.space.kernel.diag(t), var)  # interpolant + residual = K(t, t)
    return sigma * np.sqrt(var)


def ptf_noise_sd(geometry: GridGeometry, weights: ArrayLike, sigmas: ArrayLike, t: ArrayLike) -> np.ndarray:
    """Standard deviation of PTF's privacy noise at each point of ``t``, its fit kept linear.

    ``weights`` (T,) are the fit's W, ``sigmas`` (T,) the σ_j of each grid point:
    sd(t) = ||E(t)ᵀ A diag(σ)||, A = (ΦᵀWΦ)⁻¹ΦᵀW (exact while the fit stays inside the ball).
    """
    t = check_points(t)
    E = _coordinate_map(geometry, t)
    Phi = geometry.Phi
    w = np.asarray(weights, dtype=float)
    A = np.linalg.solve(Phi.T @ (w[:, None] * Phi), Phi.T * w[None, :])  # (d, T)
    G = E.T @ (A * np.asarray(sigmas, dtype=float)[None, :])  # (len(t), T)
    return np.linalg.norm(G, axis=1)


def band_is_exact(method: str, active: ArrayLike | None) -> bool:
    """Whether the band of a release of ``method`` is the exact law of its noise.

    Always for FTP; for PTF when no fit reached the ball (``active``, a release's, all False).
    """
    if method == "ftp":
        return True
    return not bool(np.any(np.asarray(active)))


def plot_band(points: ArrayLike, values: ArrayLike, sd: ArrayLike, *, level: float = 0.95,
              ax: Axes | None = None, xlabel: str = "t", ylabel: str = "released mean",
              title: str | None = None) -> Axes:
    """Draw a released curve with its band values ± z·sd of the privacy noise; returns the axes.

    ``points``, ``values`` and ``sd`` are in the same units (a record's ``curve`` and
    ``noise_sd``).  The legend says what the band covers (:data:`BAND_COVERS`, shortened).
    """
    points, values, sd = (np.asarray(a, dtype=float) for a in (points, values, sd))
    z = band_z(level)
    if ax is None:
        import matplotlib.pyplot as plt  # here: drawing is the only use of matplotlib

        _, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.fill_between(points, values - z * sd, values + z * sd, color="C0", alpha=0.25, lw=0,
                    label=f"{level:.0%} band of the privacy noise only\n(not sampling variability)")
    ax.plot(points, values, color="C0", lw=1.8, label="released mean curve")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(loc="best", fontsize="small", frameon=False)
    return ax
