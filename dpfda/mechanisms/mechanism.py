"""One type for every mechanism of the package: per-curve map → noise → post-processing.

The one idea of the paper, written once::

    X (…, n, T) ──map each curve into C, average──▶ s (…, k) ──+σ·L·Z──▶ ỹ ──post-processing──▶ Release

A :class:`dpfda.Mechanism` is that pipeline with its parts named:

* ``per_curve`` — the per-curve map into a set C, averaged over the n curves, in the
  k coordinates where the sensitivity is bounded (:class:`FitInBall`: FTP's fits in the
  ball of radius B', Algorithm 1, k = d; :class:`ClipToBox`: PTF's clipping to
  ∏[−c_j, c_j], Algorithm 2, k = T; a design's map,
  :meth:`dpfda.mechanisms.designs.Design.mechanism`).  ``exact=True`` sums exactly and rounds
  once (:func:`dpfda.maths.summation.fixed_point_mean`), as every release does;
  ``exact=False`` is the simulations' fast sum, which no release uses.
* ``calibration`` — the sensitivity of that mean in a named norm and the noise scale
  σ = Δ/μ, from the package's one calibration (:mod:`dpfda.mechanisms.calibration`:
  σ, its rounding factor, the sensitivity declared to OpenDP, the limits), and the
  OpenDP path of ``secure=True``, which noises the same summary as the numpy path.
* ``noise_factor`` — the shape L of the noise in those k coordinates: None
  (independent noise of scale σ, or σ_j per coordinate: FTP, PTF, a design with FTP's
  shape) or a square (k, k) factor of full rank (a design); anything else is refused.
* ``post`` — the post-processing: ``Identity`` for FTP (the noisy Cameron–Martin
  coordinates are the release), ``WeightedFit`` for PTF and the full-rank designs
  (the weighted fit in the ball of radius B', or unconstrained), ``GridThenFit``
  for a design with FTP's rank-d noise shape (grid means Φc̃, then the fit).
* the privacy map :meth:`dpfda.Mechanism.privacy` (n ↦ the μ of the GDP guarantee; σ is
  calibrated per n) and :meth:`dpfda.Mechanism.epsilon` ((n, δ) ↦ ε, through
  :func:`dpfda.epsilon_from_mu`).

Each mechanism holds one budget μ (the one it claims), and public parameters only:
no data, no generator.  It is immutable and can be pickled.

The noise rule and its floating-point argument
----------------------------------------------
*Every mechanism adds its Gaussian noise in the coordinates where its sensitivity is
bounded, with a full-rank noise factor there; whatever has lower rank comes after.*
The argument, in floating point.  Let s(X) ∈ ℝᵏ be the summary as computed (every
rounding included) and ỹ = s(X) + σLZ with L square and invertible.  Two neighbours'
computed summaries differ by at most Δ(1 + ε) in the norm ||L⁻¹·||, ε the proven
rounding excess, and σ is calibrated to Δ(1 + ε)/μ; since L has full rank, the law of
ỹ has a density on all of ℝᵏ and L⁻¹ỹ is an isotropic Gaussian shifted by L⁻¹s(X):
the pair is exactly as distinguishable as N(0, 1) from N(μ_pair, 1), μ_pair <= μ
(Theorem 6 after whitening).  The addition s + σLZ itself rounds: that is a fixed map
of the exact Gaussian output, post-processing.  Every other array of a release (a fit,
grid values Φỹ, a flag) is a function of ỹ alone — post-processing, whatever its
rank or rounding.  What the rule excludes is a noise factor of rank r < k: the law
then lives on s(X) + range(L), and any part of the computed s(X) outside range(L) —
for instance the rounding of a product fl(θ̄Φᵀ), which no longer lies in span(Φ) —
is published without noise and may differ between neighbours (μ = ∞).  So such a
mechanism must add its noise to the r-vector (θ̄, with σI) and map it afterwards.

Mechanisms covered (:func:`dpfda.trust.recompute.recompute` checks each one):

* FTP (Algorithm 1, ``ftp_mechanism``): noise σI_d on the mean of fits θ̄ (d);
  an RKHS release's grid values and residual off the grid are post-processing.
* PTF (Algorithm 2, ``ptf_mechanism``): independent noise σ_j on the T clipped
  means; the fit is post-processing.  Secure path: x̄_j/c_j noised with 2√T/(nμ).
* every :class:`~dpfda.mechanisms.designs.Design` region (box, ball, ellipsoid, mix)
  with a square noise shape (diagonal, isotropic, matched, a covariance): noise σL on
  the T grid means; with FTP's shape L = Φ (rank d, the ellipsoid and the mix at λ = 1):
  noise σI_d on θ̄, grid means Φ(θ̄ + σZ) after (``GridThenFit``).
* broken on purpose, as what they violate (:mod:`dpfda.trust.audit`):
  ``broken_design_rank_deficient`` (rank-d noise added on the grid: the rule itself),
  ``broken_ptf_no_sqrt_T`` and ``broken_ftp_grid_norm`` (σ below Δ/μ),
  ``broken_sigma_too_small`` (σ × 0.9), ``broken_ftp_no_radius`` (unbounded
  sensitivity), ``broken_ftp_cancellation`` (a summary whose rounding exceeds its
  bound), ``broken_design_pinv`` (a whitening that drops a direction: R too small).

Interface for a simulation loop
-------------------------------
A loop that shares privacy normals between mechanisms calls, per mechanism:

1. ``centre, moved = mech.summarize(X, exact=False)`` — the mean of the per-curve
   maps (…, k) in the coordinates the noise is added to, and per curve (…, n)
   whether the map moved it (FTP: the fit hit the ball; PTF: a value was clipped; a
   design: any part moved it).  Diagnostics for simulations, never part of a release.
   (``mech.per_curve.mean(X, exact=...)`` is the centre alone, without the flags.)
2. ``mech.noise_dim`` normals per repetition (k: d for FTP and a design with FTP's
   shape, T for PTF and the other designs), drawn by the loop (shape (…, noise_dim)).
3. ``rel = mech.privatize(centre, normals, n)`` — σ for n curves, ỹ = centre + σ·L·normals
   (``centre + σ·normals`` without L, bit for bit :func:`dpfda.mechanisms.pipelines.add_noise`),
   then the post-processing; a :class:`~dpfda.mechanisms.pipelines.Release`.
   ``mech.sigma(n)`` gives σ alone.

``mech.release(X, rng)`` is the same with ``exact=True`` and normals drawn from
``rng`` right after the summary (the draw order of :func:`dpfda.ftp` and
:func:`dpfda.ptf`, whose releases it is).

For the audit: :meth:`dpfda.Mechanism.summary` is the non-private centre in the noise's
coordinates and :meth:`dpfda.Mechanism.coordinates` reads the Gaussian output off a release
(``Release.noisy_coordinates``, with its factor ``Release.coordinate_factor``).  The audit
recomputes the summaries, σ and everything a release carries itself
(:func:`dpfda.trust.recompute.recompute`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .._validation import check_data, check_int, check_positive, check_rng, check_secure
from ..maths.curves import Curves
from ..maths.spaces import FunctionSpace, GridGeometry, KernelSpace
from . import secure as opendp_noise  # a module: its sampler is looked up at each release
from .calibration import check_secure_budget, declared_sensitivity, noise_scale
from .irregular import public_grid, release_curves
from .pipelines import (
    Release,
    add_noise,
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
    "GridThenFit",
]

_U = 2.0**-53
"""The unit roundoff of a double."""


def _frozen(a) -> np.ndarray:
    """A read-only float copy of ``a``."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


class PerCurveMap(Protocol):
    """The per-curve map into C, averaged: ``(X, exact) -> (centre (…, k), moved (…, n))``.

    k is the mechanism's ``Mechanism.dim``: the coordinates where the sensitivity is
    bounded and the noise is added.
    """

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

    def secure_noisy(self, centre, n: int, mu: float, sigma) -> np.ndarray:
        """``centre`` (the summary the numpy path noises) plus noise drawn by OpenDP."""


class PostFit(Protocol):
    """The post-processing of the noisy coordinates: ``noisy -> (coef, active, grid means)``."""

    def __call__(self, noisy) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
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
        sigma = float(noise_scale(self.radius, None, n, mu, "radius", self.excess(n)))
        return sigma if self.factor == 1.0 else self.factor * sigma

    def secure_noisy(self, centre, n: int, mu: float, sigma: float):
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

    def secure_noisy(self, centre, n: int, mu: float, sigma):
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

    def __call__(self, noisy):
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

    def __call__(self, noisy):
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

    def __call__(self, noisy):
        """(coef, active, grid means fl(c̃Φᵀ))."""
        grid = np.asarray(noisy, dtype=float) @ self.grid_factor.T
        coef, active, _ = self.fit(grid)
        return coef, active, grid


# ---------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class Mechanism:
    """A Gaussian mechanism of the package: per-curve map → noise → post-processing, always.

    See the module docstring (:mod:`dpfda.mechanisms.mechanism`).  Build it with
    ``ftp_mechanism``, ``ptf_mechanism`` or
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
    dim : int
        k, the number of coordinates where the sensitivity is bounded and the noise is
        added (d for FTP and a rank-d design, T for PTF and a full-rank design).
    per_curve : callable
        ``per_curve(X, exact=...)`` → (mean of the per-curve maps (…, k), moved (…, n)).
    calibration : object
        ``sigma(n, mu)``, ``sensitivity(n)``, ``norm`` and the OpenDP path.
    post : callable
        ``post(noisy)`` → (coef, active, grid means): the post-processing of the
        Gaussian mechanism's output (``Identity``, ``WeightedFit``,
        ``GridThenFit``).
    noise_factor : ndarray (k, k) or None
        The noise shape L in the k coordinates, square and of full rank (checked); None:
        independent noise of scale σ (or σ_j) per coordinate.
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
    dim: int
    per_curve: PerCurveMap
    calibration: Calibration
    post: PostFit
    noise_factor: np.ndarray | None = None
    clip: np.ndarray | None = None
    n: int | None = None
    secure: bool = False

    def __post_init__(self):
        L = self.noise_factor
        if L is not None and (np.ndim(L) != 2 or L.shape != (self.dim, self.dim)):
            raise ValueError(
                f"the noise factor of {self.name} must be square (k, k) with k = dim = {self.dim}, the "
                f"coordinates the noise is added in, got shape {np.shape(L)}: a noise of lower rank "
                "leaves a part of the release without noise; add full-rank noise in fewer "
                "coordinates and map them afterwards (post-processing)"
            )

    def __repr__(self):
        fixed = f", n={self.n}" if self.n is not None else ""
        return f"Mechanism({self.name}, {self.geometry.space!r}, T={self.geometry.T}, mu={self.mu:g}{fixed})"

    # -- sizes -------------------------------------------------------------------
    @property
    def noise_dim(self) -> int:
        """The number of standard normals one release consumes (k = ``dim``)."""
        return self.dim

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
        """The non-private centre (…, k) in the noise's coordinates (θ̂ for FTP, x̄ for PTF …)."""
        X = check_data(X, self.geometry.T)
        self._n(X.shape[-2])
        return self.per_curve.mean(X, exact=exact)

    def coordinates(self, rel: Release) -> np.ndarray:
        """The Gaussian mechanism's output carried by a release (``rel.noisy_coordinates``)."""
        return rel.noisy_coordinates

    # -- releases ---------------------------------------------------------------------
    def _noise(self, centre, sigma, normals) -> np.ndarray:
        """centre + σ·L·normals (``centre + σ·normals`` without L: :func:`add_noise`)."""
        if self.noise_factor is None:
            return add_noise(centre, sigma, normals)
        return centre + sigma * (normals @ self.noise_factor.T)

    def privatize(self, summary, normals, n: int, *, residual_rng=None) -> Release:
        """summary + σ·L·normals, then the post-processing: a :class:`~dpfda.mechanisms.pipelines.Release`.

        ``summary`` (…, ``dim``) must come from :meth:`summarize` (or have its
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
        if summary.shape[-1:] != (self.dim,):
            raise ValueError(
                f"summary must have {self.dim} entries on the last axis (the noise coordinates of "
                f"{self.name}), got shape {summary.shape}"
            )
        if normals.shape[-1:] != (self.noise_dim,):
            raise ValueError(
                f"normals must have {self.noise_dim} entries on the last axis (noise_dim), "
                f"got shape {normals.shape}"
            )
        return self._publish(self._noise(summary, sigma, normals), sigma, n, residual_rng, secure=False)

    def release(self, X, rng, *, secure=None) -> Release:
        """A release of data ``X`` (n, T) or (reps, n, T): μ-GDP.

        ``secure`` (default: the mechanism's own ``secure``) draws the noise with
        OpenDP (:mod:`dpfda.mechanisms.secure`; ``rng`` may then be None); otherwise the
        normals come from ``rng``, right after the summary.  Both paths noise the same
        summary, :meth:`summary`.  Every argument, σ and (secure) OpenDP's budget
        μ²/2 are checked before the data are touched.
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
        if secure:
            check_secure_budget(self.mu)
        self.calibration.sigma(n, self.mu)  # calibration errors before any data are touched
        return self._release_summary(self.per_curve.mean(X), n, rng, secure=secure)

    def _release_summary(self, centre, n: int, rng, *, secure: bool) -> Release:
        """The one noise step of every release: ``centre`` plus σ·L·Z, then the post-processing.

        ``centre`` is the per-curve map's mean (or a summary with its sensitivity, such as
        FTP's fits on each subject's own points); the noise is drawn last.  The callers
        check every argument, σ and (secure) OpenDP's budget before the data are read.
        """
        sigma = self.calibration.sigma(n, self.mu)
        if secure:
            noisy = self.calibration.secure_noisy(centre, n, self.mu, sigma)
        else:
            noisy = self._noise(centre, sigma, rng.standard_normal(centre.shape[:-1] + (self.noise_dim,)))
        residual = None
        if isinstance(self.post, Identity) and isinstance(self.geometry.space, KernelSpace):
            residual = residual_stream(rng, secure)
        return self._publish(noisy, sigma, n, residual, secure=secure)

    def post_process(self, noisy, n: int, *, secure: bool = False, residual_rng=None) -> Release:
        """The post-processing of coordinates this mechanism has already noised, as a Release.

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
        coef, active, grid = self.post(noisy)
        grid_factor = getattr(self.post, "grid_factor", None)
        if grid_factor is None:
            grid_factor = self.noise_factor
        return Release(method=self.method, geometry=self.geometry, coef=coef, mu=self.mu,
                       radius=self.radius, n=n, noise_scale=sigma, active=active, clip=self.clip,
                       weights=getattr(self.post, "weights", None), noisy_means=grid,
                       noise_factor=grid_factor, residual_rng=residual_rng, secure=secure,
                       noisy_coordinates=noisy, coordinate_factor=self.noise_factor)


# ---------------------------------------------------------------------------
# Constructors
# ---------------------------------------------------------------------------


def _geometry(grid, space) -> GridGeometry:
    if not isinstance(space, FunctionSpace):
        raise TypeError(
            f"space must be a FunctionSpace (a LegendreSpace or KernelSpace), got {type(space).__name__}"
        )
    return space.at(grid)


def _budget(mu, secure) -> float:
    """μ > 0; with OpenDP's noise (``secure``) also μ²/2 a normal float (refused by name)."""
    return check_secure_budget(mu) if check_secure(secure) else check_positive(mu, "mu")


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
    radius, mu = check_radius(radius), _budget(mu, secure)
    mech = Mechanism(name="FTP" + (" (OpenDP)" if secure else ""), method="ftp", geometry=geom,
                     radius=radius, mu=mu, per_curve=FitInBall(geom, radius),
                     dim=geom.dim, calibration=FTPCalibration(geom, radius), post=Identity(),
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
    ``ftp_mechanism``.  :func:`dpfda.ptf` is ``ptf_mechanism(...).release``.

    Examples
    --------
    >>> from dpfda import KernelSpace, gaussian_kernel, uniform_grid
    >>> mech = ptf_mechanism(uniform_grid(4), KernelSpace(gaussian_kernel(0.2)), 1.0, 1.0)
    >>> mech.sigma(50)
    array([0.08, 0.08, 0.08, 0.08])
    """
    geom = _geometry(grid, space)
    radius, mu = check_radius(radius), _budget(mu, secure)
    c = _frozen(ptf_clip_bounds(geom, radius, clip))
    w = _frozen(ptf_weight_vector(geom, weights))
    mech = Mechanism(name="PTF" + (" (OpenDP)" if secure else ""), method="ptf", geometry=geom,
                     radius=radius, mu=mu, dim=geom.T, per_curve=ClipToBox(c), calibration=PTFCalibration(c),
                     post=WeightedFit(geom, radius, w), clip=c,
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
    Floating point (:mod:`dpfda.maths.summation`).  The summary is the
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
    Floating point (:mod:`dpfda.maths.summation`).  The summary is the
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
