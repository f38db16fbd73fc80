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
"""

from __future__ import annotations

from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_points, check_positive
from ..maths.spaces import KernelSpace

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from .pipelines import Release

__all__ = ["BAND_COVERS", "noise_sd", "band_z", "band_is_exact", "plot_band"]

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


def _coordinate_map(release: Release, t: np.ndarray) -> np.ndarray:
    """E (d, len(t)): value at t = coefᵀ E, the release's own evaluation, applied to I_d."""
    return release.geometry.evaluate(np.eye(release.geometry.dim), t)


def noise_sd(release: Release, t: ArrayLike, *, residual: bool = False) -> np.ndarray:
    """Standard deviation of the privacy noise of ``release(t)`` at each point of ``t`` (in [0, 1]).

    ``residual``: whether an RKHS FTP release draws its Gaussian-process residual off the
    grid (:meth:`dpfda.Release.__call__`), which adds its variance.  The result has shape
    (len(t),) and depends only on public parameters (σ, space, grid, PTF's weights).
    """
    t = check_points(t)
    if release.noise_factor is not None or release.method not in ("ftp", "ptf"):
        raise ValueError(f"noise_sd: the band is defined for FTP and PTF releases, not {release.method!r}")
    E = _coordinate_map(release, t)
    if release.method == "ftp":
        sigma = float(release.noise_scale)
        var = np.sum(E**2, axis=0)
        if residual and isinstance(release.space, KernelSpace):
            var = np.maximum(release.space.kernel.diag(t), var)  # interpolant + residual = K(t, t)
        return sigma * np.sqrt(var)
    Phi = release.geometry.Phi
    w = np.asarray(release.weights, dtype=float)
    A = np.linalg.solve(Phi.T @ (w[:, None] * Phi), Phi.T * w[None, :])  # (d, T)
    G = E.T @ (A * np.asarray(release.noise_scale, dtype=float)[None, :])  # (len(t), T)
    return np.linalg.norm(G, axis=1)


def band_is_exact(release: Release) -> bool:
    """Whether :func:`noise_sd` is the exact law of the release's noise.

    Always for FTP; for PTF when no fit reached the ball (``release.active`` all False).
    """
    if release.method == "ftp":
        return True
    return not bool(np.any(release.active))


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
