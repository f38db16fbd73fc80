"""One type for every mechanism of the package: per-curve map → noise → post-processing.

The one idea of the paper, written once::

    X (…, n, T) ──map each curve into C, average──▶ s (…, k) ──+σ·L·Z──▶ ỹ ──post-processing──▶ Release

A :class:`dpfda.Mechanism` is that pipeline with its parts named:

* ``per_curve`` — the per-curve map into a set C, averaged over the n curves, in the
  k coordinates where the sensitivity is bounded
  (:class:`~dpfda.mechanisms.parts.FitInBall`: FTP's fits in the ball of radius B',
  Algorithm 1, k = d; :class:`~dpfda.mechanisms.parts.ClipToBox`: PTF's clipping to
  ∏[−c_j, c_j], Algorithm 2, k = T; a design's map,
  :meth:`dpfda_book.mechanisms.designs.Design.mechanism`).  ``exact=True`` sums exactly and rounds
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
* every :class:`~dpfda_book.mechanisms.designs.Design` region (box, ball, ellipsoid, mix)
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
   then the post-processing; a :class:`~dpfda.mechanisms.release.Release`.
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

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.spaces import GridGeometry, KernelSpace, OrthonormalSpace
from ..validation import check_data, check_int, check_rng, check_secure
from .calibration import check_secure_budget
from .irregular import IrregularPTFError
from .parts import Calibration, Identity, PerCurveMap, PostFit
from .pipelines import add_noise
from .privacy import epsilon_from_mu
from .release import Release, residual_stream

__all__ = ["Mechanism"]


@dataclass(frozen=True, eq=False, repr=False)
class Mechanism:
    """A Gaussian mechanism of the package: per-curve map → noise → post-processing, always.

    See the module docstring (:mod:`dpfda.mechanisms.mechanism_type`).  Build it with
    ``ftp_mechanism``, ``ptf_mechanism`` or
    :meth:`dpfda_book.mechanisms.designs.Design.mechanism`, not field by field: the constructors
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
    >>> from dpfda import LegendreSpace, ftp_mechanism, ptf_mechanism, uniform_grid
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

    def __post_init__(self) -> None:
        L = self.noise_factor
        if L is not None and (np.ndim(L) != 2 or L.shape != (self.dim, self.dim)):
            raise ValueError(
                f"the noise factor of {self.name} must be square (k, k) with k = dim = {self.dim}, the "
                f"coordinates the noise is added in, got shape {np.shape(L)}: a noise of lower rank "
                "leaves a part of the release without noise; add full-rank noise in fewer "
                "coordinates and map them afterwards (post-processing)"
            )

    def __repr__(self) -> str:
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

    def _n(self, n: int) -> int:
        n = check_int(n, "n", 1)
        if self.n is not None and n != self.n:
            raise ValueError(
                f"the datasets hold n={n} curves but {self.name} was calibrated for n={self.n}"
            )
        return n

    # -- calibration and the privacy map -------------------------------------------
    def sensitivity(self, n: int) -> float | np.ndarray:
        """Δ of the mean of n curves' maps, in :attr:`norm` (before the rounding factor)."""
        return self.calibration.sensitivity(self._n(n))

    def sigma(self, n: int) -> float | np.ndarray:
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
    def summarize(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(centre (…, k), moved (…, n)): the mean of the per-curve maps and which curves moved."""
        X = check_data(X, self.geometry.T)
        self._n(X.shape[-2])
        return self.per_curve(X, exact=exact)

    def summary(self, X: ArrayLike | Curves, *, exact: bool = True) -> np.ndarray:
        """The non-private centre (…, k) in the noise's coordinates (θ̂ for FTP, x̄ for PTF …).

        ``X`` may be a :class:`dpfda.Curves`: FTP's summary of curves on their own points is
        the mean of each subject's fit on its points (what :meth:`release` noises).
        """
        curves = as_curves(X, self.geometry.grid)
        if self._on_grid(curves):
            self._n(curves.n)
            return self.per_curve.mean(curves.values, exact=exact)  # type: ignore[arg-type]  # common: set
        self._check_off_grid(curves)
        self.sigma(curves.n)  # n checked against the mechanism's declared n
        return self.per_curve.curves_mean(curves)  # type: ignore[attr-defined]  # checked just above

    def coordinates(self, rel: Release) -> np.ndarray:
        """The Gaussian mechanism's output carried by a release (``rel.noisy_coordinates``)."""
        return rel.noisy_coordinates

    # -- curves on other points ---------------------------------------------------------
    def _check_off_grid(self, curves: Curves) -> None:
        """Refuse, by name, a mechanism that cannot take these curves off its grid."""
        if curves.common and (self.method != "ftp" or not isinstance(self.geometry.space, OrthonormalSpace)):
            raise ValueError("the curves' grid (their points mapped onto [0, 1] by their domain) is not the "
                             "mechanism's public grid")
        if self.method != "ftp" or self.noise_factor is not None or not hasattr(self.per_curve, "curves_mean"):
            raise IrregularPTFError(
                f"{self.name} needs every curve on one common grid (it clips and averages each grid point over "
                "subjects), and these curves are measured at their own points. Use FTP, which fits each "
                "subject on the points it has, or first put each curve on the public grid by a per-subject "
                "map (Curves.on_grid: linear interpolation of that subject's own values, a map of one record "
                "alone, so the guarantee stands)")


    def _on_grid(self, curves: Curves) -> bool:
        """Whether ``curves`` lie on one common grid equal to this mechanism's."""
        return curves.common and curves.grid.shape == self.geometry.grid.shape and bool(
            np.array_equal(curves.grid, self.geometry.grid))


    def _release_off_grid(self, curves: Curves, rng: np.random.Generator | None, *, secure: bool) -> Release:
        """``release`` of curves off the mechanism's grid: FTP's fit of each subject on its own points.

        FTP on an orthonormal space fits curves that are not on its grid (their own points, or
        another common grid) each on the points they have; PTF refuses them by name.
        """
        self._check_off_grid(curves)
        if not (secure and rng is None):
            rng = check_rng(rng)
        n = curves.n
        self.sigma(n)  # n and the calibration checked before any data are touched
        if secure:
            check_secure_budget(self.mu)
        mean = self.per_curve.curves_mean(curves)  # type: ignore[attr-defined]  # FTP's: irregular_fit_mean
        return self._release_summary(mean, n, rng, secure=secure)  # FTP's own noise step

    # -- releases ---------------------------------------------------------------------
    def _noise(self, centre: np.ndarray, sigma: float | np.ndarray, normals: np.ndarray) -> np.ndarray:
        """centre + σ·L·normals (``centre + σ·normals`` without L: :func:`add_noise`)."""
        if self.noise_factor is None:
            return add_noise(centre, sigma, normals)
        return centre + sigma * (normals @ self.noise_factor.T)

    def privatize(self, summary: ArrayLike, normals: ArrayLike, n: int, *,
                  residual_rng: np.random.Generator | None = None) -> Release:
        """summary + σ·L·normals, then the post-processing: a :class:`~dpfda.mechanisms.release.Release`.

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

    def release(self, X: ArrayLike | Curves, rng: np.random.Generator | None, *,
                secure: bool | None = None) -> Release:
        """A release of data ``X``: μ-GDP.

        ``X`` is a :class:`dpfda.Curves`, or an array (n, T) or (reps, n, T) on the
        mechanism's grid, turned into one at once (:func:`dpfda.maths.curves.as_curves`:
        the checks and errors of Curves).

        ``secure`` (default: the mechanism's own ``secure``) draws the noise with
        OpenDP (:mod:`dpfda.mechanisms.secure`; ``rng`` may then be None); otherwise the
        normals come from ``rng``, right after the summary.  Both paths noise the same
        summary, :meth:`summary`.  Every argument, σ and (secure) OpenDP's budget
        μ²/2 are checked before the data are touched.
        """
        secure = self.secure if secure is None else check_secure(secure)
        if rng is None and not secure:
            raise TypeError("rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)); "
                            "only secure=True, whose noise comes from OpenDP, may leave it out")
        curves = as_curves(X, self.geometry.grid)
        if not self._on_grid(curves):  # FTP on each subject's own points, or another grid
            return self._release_off_grid(curves, rng, secure=secure)
        if not (secure and rng is None):
            rng = check_rng(rng)
        n = self._n(curves.n)
        if secure:
            check_secure_budget(self.mu)
        self.calibration.sigma(n, self.mu)  # calibration errors before any data are touched
        values = curves.values  # on the mechanism's grid: a common grid, so set
        assert values is not None
        return self._release_summary(self.per_curve.mean(values), n, rng, secure=secure)

    def _release_summary(self, centre: np.ndarray, n: int, rng: np.random.Generator | None, *,
                         secure: bool) -> Release:
        """The one noise step of every release: ``centre`` plus σ·L·Z, then the post-processing.

        ``centre`` is the per-curve map's mean (or a summary with its sensitivity, such as
        FTP's fits on each subject's own points); the noise is drawn last.  The callers
        check every argument, σ and (secure) OpenDP's budget before the data are read.
        """
        sigma = self.calibration.sigma(n, self.mu)
        if secure:
            noisy = self.calibration.secure_noisy(centre, n, self.mu, sigma)
        else:
            noisy = self._noise(centre, sigma, rng.standard_normal(  # type: ignore[union-attr]  # None: secure only
                centre.shape[:-1] + (self.noise_dim,)))
        residual = None
        if isinstance(self.post, Identity) and isinstance(self.geometry.space, KernelSpace):
            residual = residual_stream(rng, secure)
        return self._publish(noisy, sigma, n, residual, secure=secure)

    def post_process(self, noisy: ArrayLike, n: int, *, secure: bool = False,
                     residual_rng: np.random.Generator | None = None) -> Release:
        """The post-processing of coordinates this mechanism has already noised, as a Release.

        ``noisy`` must be the output of the Gaussian mechanism (the summary plus
        noise of scale :meth:`sigma` and shape L, e.g. drawn by OpenDP);
        what follows is post-processing.  ``secure`` only labels the release.
        """
        n = self._n(n)
        sigma = self.calibration.sigma(n, self.mu)
        return self._publish(np.asarray(noisy, dtype=float), sigma, n, residual_rng,
                             secure=check_secure(secure))

    def __call__(self, X: ArrayLike | Curves, rng: np.random.Generator | None, *,
                 secure: bool | None = None) -> Release:
        """The same as :meth:`release`."""
        return self.release(X, rng, secure=secure)

    def _publish(self, noisy: np.ndarray, sigma: float | np.ndarray, n: int,
                 residual_rng: np.random.Generator | None, *, secure: bool) -> Release:
        coef, active, grid = self.post(noisy)
        grid_factor = getattr(self.post, "grid_factor", None)
        if grid_factor is None:
            grid_factor = self.noise_factor
        return Release(method=self.method, geometry=self.geometry, coef=coef, mu=self.mu,
                       radius=self.radius, n=n, noise_scale=sigma, active=active, clip=self.clip,
                       weights=getattr(self.post, "weights", None), noisy_means=grid,
                       noise_factor=grid_factor, residual_rng=residual_rng, secure=secure,
                       noisy_coordinates=noisy, coordinate_factor=self.noise_factor)
