"""One type for every mechanism of the package: summarise, add shaped noise, fit.

The one idea of the paper, written once::

    X (…, n, T) ──map each curve into C, average──▶ s (…, k) ──+σ·L·Z──▶ ỹ ──fit──▶ Release

A :class:`dpfda.Mechanism` is that pipeline with its parts named:

* ``per_curve`` — the per-curve map into a set C, averaged over the n curves
  (:class:`FitInBall`: FTP's fits in the ball of radius B', Algorithm 1;
  :class:`ClipToBox`: PTF's clipping to ∏[−c_j, c_j], Algorithm 2; a design's map,
  :meth:`dpfda.mechanisms.designs.Design.mechanism`).  ``exact=True`` sums exactly and rounds
  once (:func:`dpfda.maths.summation.fixed_point_mean`), as every release does;
  ``exact=False`` is the simulations' fast sum, which no release uses.
* ``calibration`` — the sensitivity of that mean in a named norm and the noise scale
  σ = Δ/μ, computed by the package's one overflow-safe calibration (the code behind
  :func:`dpfda.ftp_sigma`, :func:`dpfda.ptf_sigmas` and
  :meth:`dpfda.mechanisms.designs.Design.sigma`, with the rounding factor of
  :func:`dpfda.maths.summation.calibration_factor`), and the OpenDP path of
  ``secure=True``.
* ``noise_factor`` — the shape L of the noise: None for FTP and PTF (independent
  noise of scale σ, or σ_j per coordinate), a (T, k) matrix for a design.
* ``fit`` — the post-processing: :class:`Identity` for FTP (the noisy
  Cameron–Martin coordinates are the release), :class:`WeightedFit` for PTF and the
  designs (the weighted fit in the ball of radius B', or unconstrained).
* the privacy map :meth:`dpfda.Mechanism.privacy` (n ↦ the μ of the GDP guarantee; σ is
  calibrated per n) and :meth:`dpfda.Mechanism.epsilon` ((n, δ) ↦ ε, through
  :func:`dpfda.epsilon_from_mu`).

Each mechanism holds one budget μ (the one it claims), and public parameters only:
no data, no generator.  It is immutable and can be pickled.

Interface for a simulation loop
-------------------------------
A loop that shares privacy normals between mechanisms calls, per mechanism:

1. ``centre, moved = mech.summarize(X, exact=False)`` — the mean of the per-curve
   maps (…, k) in the coordinates the noise is added to, and per curve (…, n)
   whether the map moved it (FTP: the fit hit the ball; PTF: a value was clipped; a
   design: any part moved it).  Diagnostics for simulations, never part of a release.
   (``mech.per_curve.mean(X, exact=...)`` is the centre alone, without the flags.)
2. ``mech.noise_dim`` normals per repetition (d for FTP, T for PTF, k = L.shape[1]
   for a design), drawn by the loop (standard normal, shape (…, noise_dim)).
3. ``rel = mech.privatize(centre, normals, n)`` — σ for n curves, ỹ = centre + σ·L·normals
   (``centre + σ·normals`` without L, bit for bit :func:`dpfda.mechanisms.pipelines.add_noise`),
   then the fit; a :class:`~dpfda.mechanisms.pipelines.Release`.  ``mech.sigma(n)`` gives σ alone.

``mech.release(X, rng)`` is the same with ``exact=True`` and normals drawn from
``rng`` right after the summary (the draw order of :func:`dpfda.ftp`,
:func:`dpfda.ptf` and ``Design.release``, whose releases it reproduces bit for bit).

For the audit: :meth:`dpfda.Mechanism.summary` is the non-private centre in the audited
coordinates and :meth:`dpfda.Mechanism.coordinates` reads them off a release (``coef`` for
FTP, ``noisy_means`` for PTF and the designs).  The audit's privacy checks do not use
the calibration: they read the noise law a release publishes
(``Release.noise_scale``, ``Release.noise_factor``) and solve it themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._validation import check_data, check_int, check_positive, check_rng, check_secure
from ..maths.curves import Curves
from ..maths.spaces import FunctionSpace, GridGeometry, KernelSpace
from ..maths.summation import calibration_factor, fixed_point_mean
from . import secure as opendp_noise  # a module: its sampler is looked up at each release
from .irregular import public_grid, release_curves
from .pipelines import (
    Release,
    add_noise,
    calibrated_scale,
    check_radius,
    fitter,
    ftp_fit_mean,
    ftp_rounding_excess,
    ptf_clip_bounds,
    ptf_clipped_mean,
    ptf_rounding_excess,
    ptf_weight_vector,
    residual_stream,
)
from .privacy import epsilon_from_mu

__all__ = [
    "ftp",
    "ptf",
    "Mechanism",
    "PerCurveMap",
    "Calibration",
    "PostFit",
    "ftp_mechanism",
    "ptf_mechanism",
    "FitInBall",
    "ClipToBox",
    "FTPCalibration",
    "PTFCalibration",
    "Identity",
    "WeightedFit",
]


def _frozen(a) -> np.ndarray:
    """A read-only float copy of ``a``."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


class PerCurveMap(Protocol):
    """The per-curve map into C, averaged: ``(X, exact) -> (centre (…, k), moved (…, n))``."""

    def __call__(self, X, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(centre, moved) of data ``X`` (…, n, T); ``exact=False``: the simulations' fast sum."""

    def mean(self, X, *, exact: bool = True) -> np.ndarray:
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

    def secure_noisy(self, mech: Mechanism, X, n: int, sigma) -> np.ndarray:
        """The noisy coordinates of data ``X``, the noise drawn by OpenDP."""


class PostFit(Protocol):
    """The post-processing of the noisy coordinates: ``noisy -> (coef, active or None)``."""

    def __call__(self, noisy) -> tuple[np.ndarray, np.ndarray | None]:
        """(coef (…, d), active or None) of the noisy coordinates."""


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

    def __call__(self, X, *, exact: bool = True):
        """(mean of the fits (…, d), per curve whether its fit hit the ball (…, n))."""
        return ftp_fit_mean(X, self.geometry, self.radius, exact=exact)

    def mean(self, X, *, exact: bool = True) -> np.ndarray:
        """The mean of the fits (…, d)."""
        return self(X, exact=exact)[0]


@dataclass(frozen=True, eq=False)
class ClipToBox:
    """PTF's map (Algorithm 2): each grid value clipped to [−c_j, c_j] (exact).

    Coordinates: the grid (T,).  The mean is :func:`~dpfda.mechanisms.pipelines.ptf_clipped_mean`.
    """

    clip: np.ndarray

    def __call__(self, X, *, exact: bool = True):
        """(mean of the clipped curves (…, T), per curve whether a value was clipped (…, n))."""
        return self.mean(X, exact=exact), np.any(np.abs(X) > self.clip, axis=-1)

    def mean(self, X, *, exact: bool = True) -> np.ndarray:
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
        sigma = float(calibrated_scale(self.radius, None, n, mu, "radius", self.excess(n)))
        return sigma if self.factor == 1.0 else self.factor * sigma

    def secure_noisy(self, mech: Mechanism, X, n: int, sigma: float):
        """OpenDP's Gaussian noise on the mean of fits; OpenDP is told the floating-point Δ."""
        mean_coef = mech.per_curve.mean(X)
        sens = 2.0 * self.radius / n * calibration_factor(self.excess(n))
        return opendp_noise.gaussian_release(mean_coef, sigma, sensitivity=sens, mu=mech.mu)


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
        return calibrated_scale(self.clip, math.sqrt(self.clip.size), n, mu, "clip", self.excess(n))

    def secure_noisy(self, mech: Mechanism, X, n: int, sigma):
        """OpenDP's noise on the clipped means in units of c_j, multiplied back (post-processing).

        Each curve's point fl(clip(x_j)/c_j) lies in [−1, 1] (division rounds
        monotonically); its mean is exact up to one rounding, with sensitivity 2√T/n
        up to the same ε as the clipped means.
        """
        c, T = self.clip, self.clip.size
        excess = self.excess(n)
        unit = fixed_point_mean(np.clip(X, -c, c) / c, 1.0)
        common = float(calibrated_scale(1.0, math.sqrt(T), n, mech.mu, "clip", excess))  # = σ_j / c_j
        sens = 2.0 * math.sqrt(T) / n * calibration_factor(excess)
        return c * opendp_noise.gaussian_release(unit, common, sensitivity=sens, mu=mech.mu)


# ---------------------------------------------------------------------------
# Fits (post-processing)
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Identity:
    """FTP's post-processing: none — the noisy Cameron–Martin coordinates are the release."""

    def __call__(self, noisy) -> tuple[np.ndarray, np.ndarray | None]:
        """(coef, active): ``noisy`` itself, and no fit flag."""
        return noisy, None


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

    def __call__(self, noisy) -> tuple[np.ndarray, np.ndarray | None]:
        """(coef (…, d), active (…,) or None)."""
        solver = fitter(self.geometry, self.weights)
        if self.constrained:
            fit = solver.solve(noisy, self.radius)
            return fit.coef, fit.active
        return solver.unconstrained(noisy), None


# ---------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class Mechanism:
    """A Gaussian mechanism of the package: per-curve map, calibration, noise shape, fit.

    See the module docstring (:mod:`dpfda.mechanisms.mechanism`).  Build it with
    :func:`ftp_mechanism`, :func:`ptf_mechanism` or
    :meth:`dpfda.mechanisms.designs.Design.mechanism`, not field by field: the constructors
    check every public parameter.

    Attributes
    ----------
    name : str
        A label (audits and tables).
    method : {"ftp", "ptf", "design"}
        The ``method`` of its releases.
    geometry : GridGeometry
        The space on the public grid.
    radius : float
        B', the radius of the fitting ball.
    mu : float
        The budget it claims: each release is μ-GDP for every n it accepts.
    per_curve : callable
        ``per_curve(X, exact=...)`` → (mean of the per-curve maps (…, k), moved (…, n)).
    calibration : object
        ``sigma(n, mu)``, ``sensitivity(n)``, ``norm`` and the OpenDP path.
    noise_factor : ndarray (T, k) or None
        The noise shape L (a design); None: independent noise of scale σ per coordinate.
    fit : callable
        ``fit(noisy)`` → (coef, active): the post-processing.
    audited : {"coef", "noisy_means"}
        The release attribute holding the Gaussian mechanism's output.
    clip : ndarray (T,) or None
        Clipping bounds published with each release (PTF, designs with a box part).
    n : int or None
        If set, the only number of curves it accepts (an audit's declared n).
    secure : bool
        Whether ``release`` draws the noise with OpenDP unless told otherwise.

    Examples
    --------
    Two mechanisms on one dataset, sharing pre-drawn normals (as a simulation does):

    >>> import numpy as np
    >>> from dpfda import LegendreSpace, uniform_grid
    >>> grid, space = uniform_grid(5), LegendreSpace(3)
    >>> ftp_m, ptf_m = ftp_mechanism(grid, space, 1.0, 1.0), ptf_mechanism(grid, space, 1.0, 1.0)
    >>> X = np.zeros((100, 5))
    >>> Z = np.random.default_rng(0).standard_normal(5)
    >>> a = ftp_m.privatize(ftp_m.summary(X), Z[:ftp_m.noise_dim], 100)
    >>> b = ptf_m.privatize(ptf_m.summary(X), Z[:ptf_m.noise_dim], 100)
    >>> a.coef.shape, b.noisy_means.shape, a.noise_scale
    ((3,), (5,), 0.02)
    """

    name: str
    method: str
    geometry: GridGeometry
    radius: float
    mu: float
    per_curve: PerCurveMap
    calibration: Calibration
    fit: PostFit
    audited: str
    noise_factor: np.ndarray | None = None
    clip: np.ndarray | None = None
    n: int | None = None
    secure: bool = False

    def __repr__(self):
        fixed = f", n={self.n}" if self.n is not None else ""
        return f"Mechanism({self.name}, {self.geometry.space!r}, T={self.geometry.T}, mu={self.mu:g}{fixed})"

    # -- sizes -------------------------------------------------------------------
    @property
    def noise_dim(self) -> int:
        """The number of standard normals one release consumes (d for FTP, T for PTF, k for a design)."""
        if self.noise_factor is not None:
            return int(self.noise_factor.shape[1])
        return self.geometry.dim if self.audited == "coef" else self.geometry.T

    @property
    def norm(self) -> str:
        """The norm in which the sensitivity is measured."""
        return self.calibration.norm

    def _n(self, n) -> int:
        n = check_int(n, "n", 1)
        if self.n is not None and n != self.n:
            raise ValueError(
                f"the datasets hold n={n} curves but {self.name} was calibrated for n={self.n}"
            )
        return n

    # -- calibration and the privacy map -------------------------------------------
    def sensitivity(self, n: int):
        """Δ of the mean of n curves' maps, in :attr:`norm` (before the rounding factor)."""
        return self.calibration.sensitivity(self._n(n))

    def sigma(self, n: int):
        """σ = Δ/μ for n curves (a scalar, or one σ_j per grid point for PTF).

        ``ValueError`` when no finite, normal σ keeps the guarantee (see
        :func:`dpfda.ftp_sigma`).
        """
        return self.calibration.sigma(self._n(n), self.mu)

    def privacy(self, n: int) -> float:
        """The privacy map: the μ of the GDP guarantee of a release on n curves.

        The budget the mechanism claims (σ is calibrated for each n, covering the
        rounding of the summary); ``ValueError`` where it cannot be calibrated.
        """
        self.sigma(n)
        return self.mu

    def epsilon(self, n: int, delta: float) -> float:
        """The smallest ε with (ε, δ)-DP on n curves (:func:`dpfda.epsilon_from_mu`)."""
        return epsilon_from_mu(self.privacy(n), delta)

    # -- the summary, for audits and simulations ----------------------------------------
    def summarize(self, X, *, exact: bool = True):
        """(centre (…, k), moved (…, n)): the mean of the per-curve maps and which curves moved."""
        X = check_data(X, self.geometry.T)
        self._n(X.shape[-2])
        return self.per_curve(X, exact=exact)

    def summary(self, X, *, exact: bool = True) -> np.ndarray:
        """The non-private centre of the audited coordinates (θ̂ for FTP, x̄ for PTF …)."""
        X = check_data(X, self.geometry.T)
        self._n(X.shape[-2])
        return self.per_curve.mean(X, exact=exact)

    def coordinates(self, rel: Release) -> np.ndarray:
        """The audited coordinates of a release (``coef`` or ``noisy_means``)."""
        return getattr(rel, self.audited)

    # -- releases ---------------------------------------------------------------------
    def privatize(self, summary, normals, n: int, *, residual_rng=None) -> Release:
        """summary + σ·L·normals, then the fit: a :class:`~dpfda.mechanisms.pipelines.Release`.

        ``summary`` (…, k) must come from :meth:`summarize` (or have its
        sensitivity); ``normals`` (…, :attr:`noise_dim`) are standard normal draws
        (a simulation may share them between mechanisms).  The release is μ-GDP
        only if the normals are fresh draws, independent of the data and never
        published: this is the simulations' entry point; :meth:`release` draws them
        itself.  ``residual_rng``: the
        generator of an RKHS FTP release's residual off the grid (see
        :meth:`dpfda.Release.__call__`); without it such a release is evaluated off
        the grid by the kernel interpolant of its grid values (post-processing).
        """
        n = self._n(n)
        sigma = self.calibration.sigma(n, self.mu)
        summary = np.asarray(summary, dtype=float)
        normals = np.asarray(normals, dtype=float)
        k = self.geometry.dim if self.audited == "coef" else self.geometry.T
        if summary.shape[-1:] != (k,):
            raise ValueError(
                f"summary must have {k} entries on the last axis (the {self.audited} coordinates of "
                f"{self.name}), got shape {summary.shape}"
            )
        if normals.shape[-1:] != (self.noise_dim,):
            raise ValueError(
                f"normals must have {self.noise_dim} entries on the last axis (noise_dim), "
                f"got shape {normals.shape}"
            )
        if self.noise_factor is None:
            noisy = add_noise(summary, sigma, normals)
        else:
            noisy = summary + sigma * (normals @ self.noise_factor.T)
        return self._publish(noisy, sigma, n, residual_rng, secure=False)

    def release(self, X, rng, *, secure=None) -> Release:
        """A release of data ``X`` (n, T) or (reps, n, T): μ-GDP.

        ``secure`` (default: the mechanism's own ``secure``) draws the noise with
        OpenDP (:mod:`dpfda.mechanisms.secure`; ``rng`` may then be None); otherwise the
        normals come from ``rng``, right after the summary.  Every argument and σ
        are checked before the data are touched.
        """
        secure = self.secure if secure is None else check_secure(secure)
        if isinstance(X, Curves):  # a common grid, or FTP on each subject's own points
            return release_curves(self, X, rng, secure=secure)
        if rng is None and not secure:
            raise TypeError("rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)); "
                            "only secure=True, whose noise comes from OpenDP, may leave it out")
        X = check_data(X, self.geometry.T)
        if not (secure and rng is None):
            rng = check_rng(rng)
        n = self._n(X.shape[-2])
        sigma = self.calibration.sigma(n, self.mu)  # calibration errors before any data are touched
        if secure:
            noisy = self.calibration.secure_noisy(self, X, n, sigma)
        else:
            centre = self.per_curve.mean(X)
            normals = rng.standard_normal(centre.shape[:-1] + (self.noise_dim,))
            if self.noise_factor is None:
                noisy = add_noise(centre, sigma, normals)
            else:
                noisy = centre + sigma * (normals @ self.noise_factor.T)
        residual = None
        if self.audited == "coef" and isinstance(self.geometry.space, KernelSpace):
            residual = residual_stream(rng, secure)
        return self._publish(noisy, sigma, n, residual, secure=secure)

    def post_process(self, noisy, n: int, *, secure: bool = False, residual_rng=None) -> Release:
        """The fit of coordinates this mechanism has already noised, as a Release.

        ``noisy`` must be the output of the Gaussian mechanism (the summary plus
        noise of scale :meth:`sigma` and shape L, e.g. drawn by OpenDP);
        what follows is post-processing.  ``secure`` only labels the release.
        """
        n = self._n(n)
        sigma = self.calibration.sigma(n, self.mu)
        return self._publish(np.asarray(noisy, dtype=float), sigma, n, residual_rng,
                             secure=check_secure(secure))

    def __call__(self, X, rng, *, secure=None) -> Release:
        """The same as :meth:`release`."""
        return self.release(X, rng, secure=secure)

    def _publish(self, noisy, sigma, n, residual_rng, *, secure) -> Release:
        if self.audited == "coef":
            return Release(method=self.method, geometry=self.geometry, coef=noisy, mu=self.mu,
                           radius=self.radius, n=n, noise_scale=sigma, residual_rng=residual_rng,
                           secure=secure)
        coef, active = self.fit(noisy)
        return Release(method=self.method, geometry=self.geometry, coef=coef, mu=self.mu,
                       radius=self.radius, n=n, noise_scale=sigma, active=active, clip=self.clip,
                       weights=getattr(self.fit, "weights", None), noisy_means=noisy,
                       noise_factor=self.noise_factor, secure=secure)


# ---------------------------------------------------------------------------
# Constructors
# ---------------------------------------------------------------------------


def _geometry(grid, space) -> GridGeometry:
    if not isinstance(space, FunctionSpace):
        raise TypeError(
            f"space must be a FunctionSpace (a LegendreSpace or KernelSpace), got {type(space).__name__}"
        )
    return space.at(grid)


def _declared_n(n):
    return None if n is None else check_int(n, "n", 1)


def ftp_mechanism(grid, space, radius, mu, *, n=None, secure=False) -> Mechanism:
    """Fit-Then-Protect (Algorithm 1) as a :class:`Mechanism`, μ-GDP by Theorem 6.

    Each curve is fitted in the ball of radius B' (W = I), the fits are averaged
    (exactly, rounded once), and the mean gets σZ in Cameron–Martin coordinates,
    σ = 2B'/(nμ) (:func:`dpfda.ftp_sigma`).  ``n``: if given, the only number of
    curves accepted, and σ is checked for it now.  ``secure``: releases draw the
    noise with OpenDP by default.  :func:`dpfda.ftp` is ``ftp_mechanism(...).release``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfda import LegendreSpace, uniform_grid
    >>> mech = ftp_mechanism(uniform_grid(5), LegendreSpace(3), radius=1.0, mu=1.0)
    >>> mech.sigma(100), mech.noise_dim, mech.privacy(100)
    (0.02, 3, 1.0)
    """
    geom = _geometry(grid, space)
    radius, mu = check_radius(radius), check_positive(mu, "mu")
    mech = Mechanism(name="FTP" + (" (OpenDP)" if secure else ""), method="ftp", geometry=geom,
                     radius=radius, mu=mu, per_curve=FitInBall(geom, radius),
                     calibration=FTPCalibration(geom, radius), fit=Identity(), audited="coef",
                     n=_declared_n(n), secure=check_secure(secure))
    if mech.n is not None:
        mech.sigma(mech.n)
    return mech


def ptf_mechanism(grid, space, radius, mu, *, clip=None, weights=None, n=None,
                  secure=False) -> Mechanism:
    """Protect-Then-Fit (Algorithm 2) as a :class:`Mechanism`, μ-GDP by Proposition 9.

    Values are clipped to [−c_j, c_j] and averaged (exactly, rounded once); each
    mean gets N(0, σ_j²), σ_j = (2c_j/n)·√T/μ (:func:`dpfda.ptf_sigmas`); the
    noisy means are fitted with weights W in the ball of radius B'.  ``clip`` and
    ``weights`` as for :func:`dpfda.ptf`; ``n`` and ``secure`` as for
    :func:`ftp_mechanism`.  :func:`dpfda.ptf` is ``ptf_mechanism(...).release``.

    Examples
    --------
    >>> from dpfda import KernelSpace, gaussian_kernel, uniform_grid
    >>> mech = ptf_mechanism(uniform_grid(4), KernelSpace(gaussian_kernel(0.2)), 1.0, 1.0)
    >>> mech.sigma(50)
    array([0.08, 0.08, 0.08, 0.08])
    """
    geom = _geometry(grid, space)
    radius, mu = check_radius(radius), check_positive(mu, "mu")
    c = _frozen(ptf_clip_bounds(geom, radius, clip))
    w = _frozen(ptf_weight_vector(geom, weights))
    mech = Mechanism(name="PTF" + (" (OpenDP)" if secure else ""), method="ptf", geometry=geom,
                     radius=radius, mu=mu, per_curve=ClipToBox(c), calibration=PTFCalibration(c),
                     fit=WeightedFit(geom, radius, w), audited="noisy_means", clip=c,
                     n=_declared_n(n), secure=check_secure(secure))
    if mech.n is not None:
        mech.sigma(mech.n)
    return mech


def ftp(X, grid, space, radius, mu, rng=None, *, secure=False) -> Release:
    """Fit-Then-Protect (Algorithm 1), μ-GDP by Theorem 6 and Corollaries 7–8.

    Each curve is fitted by least squares (W = I) inside the ball of radius B'
    of the Cameron–Martin space; the fits are averaged; the average gets σZ
    with σ = 2B'/(nμ).  Z is N(0, I_m) on the coefficients for H_m (Corollary 7)
    and GP(0, K) for an RKHS — N(0, σ²K_T) on the grid (Corollary 8).

    Parameters
    ----------
    X : array (n, T) or (reps, n, T), or Curves
        Observed curves, one per row (samples × grid points), on ``grid``; or a
        :class:`dpfda.Curves`, on a common grid or each subject on its own points (each
        fitted on the points it has: :mod:`dpfda.mechanisms.irregular`).
    grid : array (T,) or None
        Public, strictly increasing points of [0, 1]; None for a Curves: its common grid,
        or for curves on their own points a public grid of 101 points on which the
        release is laid out.
    space : FunctionSpace
        A :class:`~dpfda.maths.spaces.LegendreSpace` or :class:`~dpfda.maths.spaces.KernelSpace`.
    radius : float
        Fitting radius B' > 0.
    mu : float
        Privacy budget μ > 0.
    rng : numpy.random.Generator, optional
        Source of the privacy noise; required unless ``secure=True``, which
        does not use it (leave it out then).  Anyone who knows its seed can
        redraw the noise; the release itself keeps no state of it (see
        :class:`Release`).
    secure : bool, default False
        Draw the privacy noise with OpenDP's vector Gaussian mechanism
        (:mod:`dpfda.mechanisms.secure`) instead of numpy: on the coefficients for H_m, on
        the β-coordinates for an RKHS; an RKHS release's residual off the grid
        is then seeded from the operating system's cryptographic source.  Such a
        release cannot be reproduced from a seed.  Needs ``opendp``.

    Returns
    -------
    Release

    Notes
    -----
    Floating point (issue #19; :mod:`dpfda.maths.summation`).  The summary is the
    mean of the fits, computed by ``ftp_fit_mean``: each curve's fit has
    norm at most B' whatever its magnitude (the solver rescales by powers of
    two), is turned to the original coordinates on its own, and its norm is
    checked against B'(1 + 2⁻⁴⁰) with a rigorous bound; the fits are summed
    exactly in 64-bit integer limbs (independent of their order) and the mean
    is rounded once, to within γ₄ = 4u/(1 − 4u) of each coordinate.  So two
    neighbouring datasets give summaries that differ by at most
    (2B'/n)(1 + ε), ε = ``ftp_rounding_excess`` (n, d, B') ≈ n·4.4e-16.
    σ is the paper's 2B'/(nμ) while ε <= 2⁻³¹ (n up to about a million), so
    pair μ <= μ(1 + 2⁻³¹ + 4u); above, σ is calibrated to (2B'/n)(1 + ε)
    and OpenDP (``secure=True``) is told that sensitivity.  Adding the noise
    rounds once more, which is post-processing of the Gaussian mechanism's
    output.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfda import LegendreSpace, uniform_grid
    >>> grid, space = uniform_grid(5), LegendreSpace(3)
    >>> X = np.tile(space.at(grid).values([0.5, 0.2, 0.0]), (100, 1))  # 100 curves
    >>> rel = ftp(X, grid, space, radius=1.0, mu=1.0, rng=np.random.default_rng(0))
    >>> rel.noise_scale  # σ = 2B'/(nμ)
    0.02
    >>> rel.coef.shape, rel(np.array([0.0, 1.0])).shape
    ((3,), (2,))
    """
    return ftp_mechanism(public_grid(X, grid, space), space, radius, mu).release(X, rng, secure=secure)


def ptf(X, grid, space, radius, mu, rng=None, clip=None, weights=None, *, secure=False) -> Release:
    """Protect-Then-Fit (Algorithm 2), μ-GDP by Proposition 9.

    Coordinate j is clipped to [-c_j, c_j], averaged over curves, and released
    with N(0, σ_j²) noise, σ_j = (2c_j/n)·sqrt(T)/μ; the noisy vector is then
    fitted with the weighted loss (eq. 4) inside the ball of radius B'.

    Parameters
    ----------
    X, grid, space, radius, mu, rng
        As for :func:`ftp`.
    clip : float or array (T,), optional
        Clipping bounds c_j > 0; a scalar means the same bound at every point.
        Default c_j = B'·||φ(t_j)||_2 (H_m) or B'·sqrt(K(t_j,t_j)) (H_K).
    weights : float or array (T,), optional
        Diagonal of W, all > 0; a scalar means W = weights·I (the same fit as
        W = I).  Default W = diag(||φ(t_j)||_2^{-2}) or
        diag(K(t_j,t_j)^{-1}).
    secure : bool, default False
        Draw the noise with OpenDP's vector Gaussian mechanism: the mean of the
        clipped values divided by c_j (common sensitivity 2/n per coordinate,
        2√T/n in ℓ₂) is noised with scale 2√T/(nμ) and multiplied back by c_j
        (:mod:`dpfda.mechanisms.secure`).  Not reproducible from a seed.  Needs ``opendp``.

    Returns
    -------
    Release

    Notes
    -----
    Floating point (issue #19; :mod:`dpfda.maths.summation`).  The summary is the
    mean of the clipped values, ``ptf_clipped_mean``: clipping is exact,
    so each curve's point lies in the box ∏[−c_j, c_j]; the points are summed
    exactly (64-bit integer limbs, independent of their order) and each mean
    is rounded once, to within γ₄ = 4u/(1 − 4u).  Neighbours' means then
    differ by at most (2c_j/n)(1 + ε) in coordinate j,
    ε = ``ptf_rounding_excess`` ≈ n·4.4e-16; the secure path averages
    fl(clip(x_j)/c_j) ∈ [−1, 1] the same way.  σ_j keeps the paper's formula
    while ε <= 2⁻³¹ (pair μ <= μ(1 + 2⁻³¹ + 4u)); above, σ_j and the
    sensitivity declared to OpenDP grow by the factor 1 + ε.  The sum in
    curve order that this replaces could differ between neighbours by
    n²·2⁻⁵⁴ of the sensitivity (1.5e-8 at n = 32,769).

    Examples
    --------
    >>> import numpy as np
    >>> from dpfda import KernelSpace, gaussian_kernel, uniform_grid
    >>> grid, space = uniform_grid(4), KernelSpace(gaussian_kernel(0.2))
    >>> X = np.zeros((50, 4))  # 50 curves, all zero on the grid
    >>> rel = ptf(X, grid, space, radius=1.0, mu=1.0, rng=np.random.default_rng(1))
    >>> rel.clip  # c_j = B'·sqrt(K(t_j, t_j)) = 1
    array([1., 1., 1., 1.])
    >>> rel.noise_scale  # σ_j = 2c_j·sqrt(T)/(nμ)
    array([0.08, 0.08, 0.08, 0.08])
    """
    return ptf_mechanism(public_grid(X, grid, space), space, radius, mu, clip=clip, weights=weights).release(
        X, rng, secure=secure)
