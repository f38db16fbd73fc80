"""The parts a :class:`dpfda.Mechanism` is built from: per-curve maps, calibrations, post-processings.

Each part is one named stage of the pipeline of :mod:`dpfda.mechanisms.mechanism_type`, which
states the noise rule and its floating-point argument:

* the per-curve maps into a set C, averaged (:class:`PerCurveMap`): :class:`FitInBall`
  (FTP, Algorithm 1) and :class:`ClipToBox` (PTF, Algorithm 2);
* the calibrations, σ = Δ/μ by the package's one overflow-safe code, and the OpenDP path
  (:class:`Calibration`): :class:`FTPCalibration` and :class:`PTFCalibration`;
* the post-processings of the noisy coordinates (:class:`PostFit`): :class:`Identity`,
  :class:`WeightedFit` and :class:`GridThenFit`.

Every part holds public parameters only (no data, no generator) and is immutable, so a
mechanism built from them can be pickled.  They are also importable from
:mod:`dpfda.mechanisms.ftp_ptf`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..maths.curves import Curves
from ..maths.spaces import GridGeometry
from . import secure as opendp_noise  # a module: its sampler is looked up at each release
from .calibration import declared_sensitivity, noise_scale
from .irregular import irregular_fit_mean
from .pipelines import fitter, ftp_fit_mean, ftp_rounding_excess, ptf_clipped_mean, ptf_rounding_excess

__all__ = [
    "PerCurveMap",
    "Calibration",
    "PostFit",
    "FitInBall",
    "ClipToBox",
    "FTPCalibration",
    "PTFCalibration",
    "Identity",
    "WeightedFit",
    "GridThenFit",
]

_U = 2.0**-53
"""The unit roundoff of a double."""


class PerCurveMap(Protocol):
    """The per-curve map into C, averaged: ``(X, exact) -> (centre (…, k), moved (…, n))``.

    k is the mechanism's ``Mechanism.dim``: the coordinates where the sensitivity is
    bounded and the noise is added.
    """

    def __call__(self, X: np.ndarray, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(centre, moved) of data ``X`` (…, n, T); ``exact=False``: the simulations' fast sum."""

    def mean(self, X: np.ndarray, *, exact: bool = True) -> np.ndarray:
        """The centre alone (what a release needs; no per-curve flags computed)."""


class Calibration(Protocol):
    """Sensitivity in a named norm, σ = Δ/μ, and the OpenDP path of one mechanism."""

    @property
    def norm(self) -> str:
        """The norm in which the sensitivity is measured."""

    def sensitivity(self, n: int) -> Any:
        """Δ of the mean of n curves' maps (before the rounding factor)."""

    def sigma(self, n: int, mu: float) -> Any:
        """σ = Δ/μ, covering the rounding of the summary; ValueError where none keeps the guarantee."""

    def secure_noisy(self, centre: np.ndarray, n: int, mu: float, sigma: Any) -> np.ndarray:
        """``centre`` (the summary the numpy path noises) plus noise drawn by OpenDP."""


class PostFit(Protocol):
    """The post-processing of the noisy coordinates: ``noisy -> (coef, active, grid means)``."""

    def __call__(self, noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(coef (…, d), active or None, noisy grid means (…, T) or None) of ``noisy``."""


# ---------------------------------------------------------------------------
# Per-curve maps into C, averaged
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FitInBall:
    """FTP's map (Algorithm 1): each curve's least-squares fit in the ball of radius B'.

    Coordinates: Cameron–Martin (d,).  The mean is :func:`~dpfda.mechanisms.pipelines.ftp_fit_mean`.
    """

    geometry: GridGeometry
    radius: float

    def __call__(self, X: np.ndarray, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(mean of the fits (…, d), per curve whether its fit hit the ball (…, n))."""
        return ftp_fit_mean(X, self.geometry, self.radius, exact=exact)

    def mean(self, X: np.ndarray, *, exact: bool = True) -> np.ndarray:
        """The mean of the fits (…, d)."""
        return self(X, exact=exact)[0]

    def curves_mean(self, curves: Curves) -> np.ndarray:
        """The mean of the fits of curves on their own points (d,): each subject on its points.

        :func:`~dpfda.mechanisms.irregular.irregular_fit_mean` (an orthonormal space only).
        """
        return irregular_fit_mean(curves, self.geometry.space, self.radius)


@dataclass(frozen=True, eq=False)
class ClipToBox:
    """PTF's map (Algorithm 2): each grid value clipped to [−c_j, c_j] (exact).

    Coordinates: the grid (T,).  The mean is :func:`~dpfda.mechanisms.pipelines.ptf_clipped_mean`.
    """

    clip: np.ndarray

    def __call__(self, X: np.ndarray, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(mean of the clipped curves (…, T), per curve whether a value was clipped (…, n))."""
        return self.mean(X, exact=exact), np.any(np.abs(X) > self.clip, axis=-1)

    def mean(self, X: np.ndarray, *, exact: bool = True) -> np.ndarray:
        """The mean of the clipped curves (…, T)."""
        return ptf_clipped_mean(X, self.clip, exact=exact)


# ---------------------------------------------------------------------------
# Calibrations: σ = Δ/μ by the package's one overflow-safe code
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FTPCalibration:
    """Δ = 2B'/n in the Cameron–Martin norm; σ = Δ/μ (Theorem 6, Corollaries 7–8).

    σ is :func:`dpfda.ftp_sigma`'s computation (mantissas and exponents, rounding
    factor :func:`~dpfda.mechanisms.pipelines.ftp_rounding_excess`); ``factor`` multiplies it
    (1 for FTP; the audit's mechanisms broken on purpose use others).
    """

    geometry: GridGeometry
    radius: float
    factor: float = 1.0
    norm: str = "Cameron–Martin"

    def excess(self, n: int) -> float:
        """The proven rounding excess ε of the mean of fits."""
        return ftp_rounding_excess(n, self.geometry.dim, self.radius)

    def sensitivity(self, n: int) -> float:
        """Δ = 2B'/n (without the rounding factor)."""
        return 2.0 * self.radius / n

    def sigma(self, n: int, mu: float) -> float:
        """σ for n curves and budget μ (already checked)."""
        sigma = float(noise_scale(self.radius, None, n, mu, "radius", self.excess(n)))
        return sigma if self.factor == 1.0 else self.factor * sigma

    def secure_noisy(self, centre: np.ndarray, n: int, mu: float, sigma: float) -> np.ndarray:
        """OpenDP's Gaussian noise on the mean of fits; OpenDP is told the floating-point Δ."""
        sens = declared_sensitivity(self.radius, n, self.excess(n))
        return opendp_noise.gaussian_release(centre, sigma, sensitivity=sens, mu=mu)


@dataclass(frozen=True, eq=False)
class PTFCalibration:
    """Δ_j = 2c_j/n per coordinate; σ_j = Δ_j·√T/μ, T coordinates composed (Proposition 9).

    σ_j is :func:`dpfda.ptf_sigmas`'s computation (rounding factor
    :func:`~dpfda.mechanisms.pipelines.ptf_rounding_excess`).
    """

    clip: np.ndarray
    norm: str = "per coordinate, composed over the T grid points"

    def excess(self, n: int) -> float:
        """The proven rounding excess ε of the clipped means."""
        return ptf_rounding_excess(n, self.clip)

    def sensitivity(self, n: int) -> np.ndarray:
        """Δ_j = 2c_j/n (without the rounding factor)."""
        return 2.0 * self.clip / n

    def sigma(self, n: int, mu: float) -> np.ndarray:
        """(σ_1, …, σ_T) for n curves and budget μ (already checked)."""
        return noise_scale(self.clip, math.sqrt(self.clip.size), n, mu, "clip", self.excess(n))

    def secure_excess(self, n: int) -> float:
        """The rounding excess of x̄_j/c_j: the clipped means' ε plus n·2u for the division.

        Neighbours' exact means differ by at most 2c_j/n in coordinate j; the computed
        x̄_j is within the clipped means' rounding of it, and fl(x̄_j/c_j) (abs(x̄_j) <= c_j)
        is within u = 2⁻⁵³ more, i.e. n·u/2 of the per-coordinate sensitivity 2/n, for
        each of the two neighbours.
        """
        return self.excess(n) + n * _U

    def secure_noisy(self, centre: np.ndarray, n: int, mu: float, sigma: np.ndarray) -> np.ndarray:
        """OpenDP's noise on the clipped means x̄ in units of c_j, multiplied back (post-processing).

        The summary is the numpy path's x̄ itself, divided by c_j after the mean (each
        fl(x̄_j/c_j) in [−1, 1]): sensitivity 2√T/n up to :meth:`secure_excess`.
        """
        c, T = self.clip, self.clip.size
        excess = self.secure_excess(n)
        unit = np.asarray(centre, dtype=float) / c
        common = float(noise_scale(1.0, math.sqrt(T), n, mu, "clip", excess))  # = σ_j / c_j
        sens = declared_sensitivity(1.0, n, excess, math.sqrt(T))
        return c * opendp_noise.gaussian_release(unit, common, sensitivity=sens, mu=mu)


# ---------------------------------------------------------------------------
# Fits (post-processing)
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Identity:
    """FTP's post-processing: none — the noisy Cameron–Martin coordinates are the release."""

    def __call__(self, noisy: np.ndarray) -> tuple[np.ndarray, None, None]:
        """(coef, active, grid means): ``noisy`` itself, no fit flag, no grid means."""
        return noisy, None, None


@dataclass(frozen=True, eq=False)
class WeightedFit:
    """Weighted least squares of the noisy grid values (eq. 4): in the ball of radius B', or not.

    ``constrained=False`` reads off the unconstrained weighted least-squares
    coordinates (a design's ``fit="none"``).
    """

    geometry: GridGeometry
    radius: float
    weights: np.ndarray
    constrained: bool = True

    def __call__(self, noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """(coef (…, d), active (…,) or None, the noisy grid means ``noisy`` themselves)."""
        solver = fitter(self.geometry, self.weights)
        if self.constrained:
            fit = solver.solve(noisy, self.radius)
            return fit.coef, fit.active, noisy
        return solver.unconstrained(noisy), None, noisy


@dataclass(frozen=True, eq=False)
class GridThenFit:
    """Post-processing of noisy Cameron–Martin coordinates c̃ (d): grid means Φc̃, then a fit.

    The mechanism of a design whose grid noise σΦZ has rank d < T: the noise is
    added to the mean of fits in the d coordinates, where it has full rank; the grid
    means fl(Φc̃) and their fit are functions of c̃ alone.  ``grid_factor`` is Φ, the
    shape of the noisy grid means' law N(Φθ̄, σ²ΦΦᵀ) (published, for reading the release).
    """

    fit: WeightedFit

    @property
    def grid_factor(self) -> np.ndarray:
        """Φ (T, d)."""
        return self.fit.geometry.Phi

    @property
    def weights(self) -> np.ndarray:
        """The final fit's weights."""
        return self.fit.weights

    def __call__(self, noisy: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """(coef, active, grid means fl(c̃Φᵀ))."""
        grid = np.asarray(noisy, dtype=float) @ self.grid_factor.T
        coef, active, _ = self.fit(grid)
        return coef, active, grid
