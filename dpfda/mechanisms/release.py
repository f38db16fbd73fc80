"""The release record of FTP and PTF: :class:`Release`, and the random part of an RKHS release off the grid.

A :class:`Release` holds the output of a μ-GDP mechanism and public parameters, nothing
else; it evaluates the released function anywhere in [0, 1] and gives the privacy noise's
standard deviation and band there (:mod:`dpfda.mechanisms.bands`).  An RKHS FTP release
draws its Gaussian-process residual off the grid lazily, from a stream of its own
(:func:`residual_stream`), with at most :data:`RESIDUAL_POINTS` points per release.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..maths.spaces import GridGeometry, Kernel
from ..validation import check_points, check_rng
from . import bands

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["Release", "RESIDUAL_POINTS", "residual_stream"]


class Release:
    """A private estimate of the mean function, as returned by :func:`ftp` and :func:`ptf`.

    Call it on points of [0, 1] to evaluate the released function: ``rel(t)``
    has shape (…, len(t)), where … are the repetition axes of the input.

    What a release holds — and so what anyone who holds it, or its pickle, can
    learn — is the output of a μ-GDP mechanism plus public parameters, nothing
    else: the released coordinates (``coef``; for PTF also the noisy means x̃
    that were fitted), the grid, space, μ, B', n, σ, and PTF's clipping bounds
    and weights.  It holds no per-person value (no array has an axis of length
    n), no non-private intermediate (the mean before noise, the fits, which
    curves hit the ball), and no random-number state from which the noise
    could be rebuilt: an RKHS FTP release keeps a generator for its residual
    off the grid (see ``__call__``), seeded by a one-way hash (SHA-256) of
    material from ``rng`` — or, with ``secure=True``, from the operating
    system's cryptographic source — so its state says nothing about the noise.
    (A holder who knows the *seed* given to ``rng`` can of course redraw the
    noise: seed a release that leaves the building from fresh OS entropy, or
    use ``secure=True``.)

    Attributes
    ----------
    method : {"ftp", "ptf"}
        Which pipeline made the release.
    space : FunctionSpace
        The function space (``geometry.space``).
    geometry : GridGeometry
        The space's geometry on the public grid.
    grid : ndarray (T,)
        The public grid (``geometry.grid``).
    coef : ndarray (…, d)
        Cameron–Martin coordinates of the released function (restricted to the
        grid span for an RKHS FTP release; see ``__call__``).
    values : ndarray (…, T)
        The release on the grid.
    mu : float
        The privacy budget: the release is μ-GDP.
    radius : float
        The fitting radius B'.
    n : int
        The number of curves.
    noise_scale : float or ndarray (T,)
        σ for FTP, (σ_1, …, σ_T) for PTF.
    shape : tuple
        The repetition axes (() for one dataset).
    clip : ndarray (T,) or None
        PTF's clipping bounds c_j; None for FTP.
    weights : ndarray (T,) or None
        PTF's fitting weights (the diagonal of W); None for FTP.
    noisy_means : ndarray (…, T) or None
        PTF's released noisy means x̃ (the Gaussian mechanism's output, before
        the fit, which is post-processing); None for FTP.
    secure : bool
        Whether the noise came from OpenDP's vetted samplers (``secure=True``);
        False for numpy's generator (simulation and teaching, not publication).
    active : ndarray (…,) of bool or None
        PTF: whether the final fit of x̃ hit the ball (a function of the
        release).  None for FTP: which curves' fits hit the ball is a fact
        about individuals, available to simulations from :func:`~dpfda.mechanisms.pipelines.ftp_fit_mean`.
    noise_factor : ndarray (T, k) or None
        A design's (:class:`dpfda_book.mechanisms.designs.Design`) public noise shape L: its noisy
        means are x̃ = centre + σLZ, Z ~ N(0, I_k), so their covariance is
        σ²LLᵀ.  None for FTP and PTF (independent noise of scale ``noise_scale``
        on each coordinate of ``coef`` or ``noisy_means``).
    noisy_coordinates : ndarray (…, k)
        The Gaussian mechanism's output itself: the summary plus noise in the k
        coordinates where its sensitivity is bounded (FTP: ``coef``; PTF and a
        full-rank design: ``noisy_means``; a design with FTP's rank-d noise: the d
        noisy Cameron–Martin coordinates, of which ``noisy_means`` = Φ·them).  Every
        other array of the release is a function of it (post-processing).
    coordinate_factor : ndarray (k, k) or None
        The noise shape in those coordinates (square, full rank): N(0, σ²FFᵀ);
        None: independent noise of scale ``noise_scale``.
    budget_step : str or None
        None when the release spent its whole budget ``mu``; otherwise the composed release
        it is one step of (FTP after a private choice of B',
        :func:`dpfda.mechanisms.radius.ftp_private_radius`): its record must state the
        whole budget.
    """

    def __init__(self, *, method: str, geometry: GridGeometry, coef: np.ndarray, mu: float, radius: float,
                 n: int, noise_scale: float | np.ndarray, active: np.ndarray | None = None,
                 clip: float | np.ndarray | None = None, weights: np.ndarray | None = None,
                 noisy_means: np.ndarray | None = None, residual_rng: np.random.Generator | None = None,
                 noise_factor: np.ndarray | None = None, secure: bool = False,
                 noisy_coordinates: np.ndarray | None = None, coordinate_factor: np.ndarray | None = None) -> None:
        self.method = method
        self.secure = bool(secure)
        self.geometry = geometry
        self.coef = coef
        self.mu = mu
        self.radius = radius
        self.n = n
        self.noise_scale = noise_scale
        self.active = active
        self.clip = clip
        self.weights = weights
        self.noisy_means = noisy_means
        self.noise_factor = noise_factor
        self.noisy_coordinates = coef if noisy_coordinates is None else noisy_coordinates
        self.coordinate_factor = coordinate_factor
        # Only an RKHS FTP release has a random part off the grid (see __call__).
        self._residual: _ResidualGP | None = None
        self._residual_rng = residual_rng
        # None: the release spent its whole budget μ.  Otherwise it is one step of a composed
        # release (e.g. FTP after a private choice of B'), described here; the record of the
        # step alone is refused (dpfda.practice.publish.release_record).
        self.budget_step: str | None = None

    space = property(lambda self: self.geometry.space)
    grid = property(lambda self: self.geometry.grid)

    @property
    def values(self) -> np.ndarray:
        """The release on the grid, shape (…, T)."""
        return self.geometry.values(self.coef)

    @property
    def shape(self) -> tuple:
        """Repetition axes of the release (() for a single dataset)."""
        return self.coef.shape[:-1]

    def error(self, target_coef: ArrayLike) -> np.ndarray:
        """IMSE (H_m) or grid MSE (H_K) against the target coordinates (e.g. θ̄)."""
        return self.geometry.error(self.coef, target_coef)

    def noise_sd(self, t: ArrayLike | None = None) -> np.ndarray:
        """Standard deviation of the privacy noise of ``self(t)`` at each point (default: the grid).

        Public (σ, space, grid, weights): free post-processing.  It describes the privacy
        noise only, not sampling variability; see :mod:`dpfda.mechanisms.bands`.
        """
        t = self.grid if t is None else t
        if self.noise_factor is not None or self.method not in ("ftp", "ptf"):
            raise ValueError(f"noise_sd: the band is defined for FTP and PTF releases, not {self.method!r}")
        if self.method == "ftp":
            return bands.ftp_noise_sd(self.geometry, float(self.noise_scale), t,
                                      residual=self._residual_rng is not None)
        assert self.weights is not None  # a PTF release carries its weights
        return bands.ptf_noise_sd(self.geometry, self.weights, self.noise_scale, t)

    def band(self, level: float = 0.95, t: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` = self(t) ∓ z·noise_sd(t), P(abs(Z) <= z) = ``level`` (default t: the grid).

        Over repeated releases of the same data, the band covers the noiseless estimate
        at each point with probability ``level``: it is a band of **the privacy noise
        only** (exact for FTP, and for PTF while its fit stays inside the ball), not a
        confidence band for the population mean — sampling variability is not in it.
        """
        t = self.grid if t is None else check_points(t)
        z = bands.band_z(level)
        centre, sd = self(t), self.noise_sd(t)
        return centre - z * sd, centre + z * sd

    def plot(self, t: ArrayLike | None = None, *, level: float = 0.95, ax: Axes | None = None, xlabel: str = "t",
             ylabel: str = "released mean") -> Axes:
        """Draw the released curve at ``t`` (default 201 points of [0, 1]) with its :meth:`band`; the axes."""
        if self.shape != ():
            raise ValueError(f"plot draws one release, got repetitions of shape {self.shape}")
        t = np.linspace(0.0, 1.0, 201) if t is None else check_points(t)
        return bands.plot_band(t, self(t), self.noise_sd(t), level=level, ax=ax, xlabel=xlabel, ylabel=ylabel)

    def __repr__(self) -> str:
        # Short enough to read as one line of a notebook's output.
        reps = f", shape={self.shape}" if self.shape else ""
        return (f"Release({self.method}, {self.space!r}, T={self.geometry.T}, n={self.n}, "
                f"mu={float(self.mu):g}, radius={float(self.radius):g}{reps})")

    def __call__(self, t: ArrayLike) -> np.ndarray:
        """Evaluate the released function at points ``t`` in [0, 1].

        Exact for H_m and for every PTF release.  An RKHS FTP release is
        f̂ + σZ_K with Z_K a Gaussian process path (Corollary 8).  Given the
        grid values, Z_K(t) is Gaussian with mean K(t, grid)K_T⁻¹Z_K(grid) and
        the covariance of the residual process R = Z_K - E[Z_K | grid]; since f̂
        lies in span{K(t_j, ·)}, f̂(t) + σE[Z_K(t) | grid] is the kernel
        interpolant of the released grid values.  So the release off the grid
        is ``evaluate(coef, t) + σR(t)``, with R drawn lazily, independently of
        the data and of the noise on the grid, and conditional on every residual
        value drawn so far, so that repeated calls describe one consistent
        function.  On the grid R = 0 and the release equals ``values``.  R's
        generator is seeded by a one-way hash (class docstring), so drawing
        more of R reveals nothing about the data or the noise.

        Cost: R is kept as a pivoted Cholesky factor over the points drawn so
        far, so a call costs O(k²s + s²k + b·k·s) for s new points, a batch of b
        releases and k ≤ T + ``RESIDUAL_POINTS`` pivots (few for a smooth
        kernel, one per point for a rough one such as Brownian motion),
        whatever the number of earlier calls.  A release draws R at no more
        than ``RESIDUAL_POINTS`` distinct points off the grid; a call that
        would pass that raises ``ValueError`` and draws nothing.
        """
        t = check_points(t)
        base = self.geometry.evaluate(self.coef, t)
        if self._residual_rng is None:
            return base
        if self._residual is None:
            self._residual = _ResidualGP(self.space.kernel, self.grid, self.shape,
                                         self._residual_rng)
        return base + self.noise_scale * self._residual(t)


RESIDUAL_POINTS = 2048
"""Most distinct points off the grid at which one RKHS FTP release draws its residual.

Each call of the release that meets new points conditions them on every
residual value drawn so far (so repeated calls describe one function), through a
pivoted Cholesky factor kept between calls: with k ≤ T + RESIDUAL_POINTS pivots,
s new points and a batch of b releases a call costs O(k²s + s²k + b·k·s) and
the release keeps O(k² + b·k) numbers, whatever the number of earlier calls.
More points than this are refused with ``ValueError`` (before anything is
drawn), so no release can grow without bound."""

RESIDUAL_RTOL = 1e-12
"""A point becomes a pivot of the residual's factor while its conditional variance exceeds
this fraction of the largest K(t, t) among the points of the call; below it the point's
value is fixed by the pivots (an error below 1e-6 standard deviations of Z_K)."""


def _pivoted_cholesky(V: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """V ≈ M Mᵀ with M (s, r): LAPACK's pivoted Cholesky (``dpstrf``), stopped at pivots <= tol.

    Returns ``(M, piv)``: ``piv`` (r,) are the pivot rows in order, and ``M[piv]``
    is lower triangular.
    """
    from scipy.linalg import lapack  # here: importing dpfda needs no scipy

    s = V.shape[0]
    if s == 0 or not np.max(np.diag(V)) > tol:
        return np.zeros((s, 0)), np.zeros(0, dtype=int)
    c, piv, rank, info = lapack.dpstrf(np.asfortranarray(V), tol=tol, lower=1)
    if info < 0:  # pragma: no cover - an argument error of the LAPACK call
        raise RuntimeError(f"dpstrf failed with info={info}")
    order = piv[:rank] - 1
    M = np.zeros((s, rank))
    M[piv - 1] = np.tril(c)[:, :rank]
    return M, order


class _ResidualGP:
    """R = Z_K - E[Z_K | Z_K(grid)], drawn lazily at new points (zero on the grid).

    Z_K at the grid points and at every point drawn so far is written as L ζ, a
    pivoted Cholesky factor L of K over the pivot points times independent normals
    ζ: the grid's pivots come first, and their ζ are 0 (R vanishes on the grid);
    each later pivot's ζ is a normal drawn from the release's own stream.  A new
    point s has Z_K(s) = lᵀζ + (the rest), l = L⁻¹K(pivots, s), so R(s) is
    l_offᵀζ_off plus fresh Gaussian noise with the conditional covariance of the
    new points, factored again by pivoted Cholesky; the new pivots extend L.  The
    cost of a call depends on the number of pivots, at most T + RESIDUAL_POINTS,
    never on the number of earlier calls (see ``RESIDUAL_POINTS``).
    """

    def __init__(self, kernel: Kernel, grid: ArrayLike, batch_shape: tuple[int, ...],
                 rng: np.random.Generator) -> None:
        self.kernel = kernel
        self.rng = rng
        grid = np.asarray(grid, dtype=float)
        self.points = grid.copy()  # every point seen, with R's value there
        self.n_grid_points = grid.size
        self.values = np.zeros(tuple(batch_shape) + (grid.size,))
        K = kernel.gram(grid)
        M, piv = _pivoted_cholesky((K + K.T) / 2, RESIDUAL_RTOL * float(np.max(kernel.diag(grid))))
        self.pivots = grid[piv]
        self.L = M[piv]  # lower triangular: Z_K(pivots) = L ζ
        self.n_grid = piv.size  # the first pivots are grid points, with ζ = 0
        self.zeta = np.zeros(tuple(batch_shape) + (0,))  # ζ of the pivots off the grid

    @property
    def drawn(self) -> int:
        """Distinct points off the grid at which R has been drawn."""
        return self.points.size - self.n_grid_points

    def __call__(self, t: np.ndarray) -> np.ndarray:
        from scipy.linalg import solve_triangular  # here: importing dpfda needs no scipy

        new = np.unique(t[~np.isin(t, self.points)])
        if new.size:
            off = self.drawn
            if off + new.size > RESIDUAL_POINTS:
                raise ValueError(
                    f"t: this release has drawn its random part off the grid at {off} points, and "
                    f"{new.size} new ones would pass the limit of {RESIDUAL_POINTS} per release "
                    "(dpfda.mechanisms.release.RESIDUAL_POINTS, which bounds the cost of every call); "
                    "evaluate it at points it has already seen, or on fewer points"
                )
            C = self.kernel(self.pivots[:, None], new[None, :])  # (k, s)
            ell = solve_triangular(self.L, C, lower=True) if self.pivots.size else C[:0]
            mean = self.zeta @ ell[self.n_grid:]  # E[R(new) | R at the pivots]
            Kss = self.kernel.gram(new)
            V = (Kss + Kss.T) / 2 - ell.T @ ell  # conditional covariance of Z_K(new)
            M, piv = _pivoted_cholesky(V, RESIDUAL_RTOL * float(np.max(self.kernel.diag(new))))
            eta = self.rng.standard_normal(self.zeta.shape[:-1] + (piv.size,))
            draw = mean + eta @ M.T
            k = self.pivots.size
            L = np.zeros((k + piv.size, k + piv.size))
            L[:k, :k] = self.L
            L[k:, :k] = ell[:, piv].T
            L[k:, k:] = M[piv]
            self.L = L
            self.pivots = np.concatenate([self.pivots, new[piv]])
            self.zeta = np.concatenate([self.zeta, eta], axis=-1)
            self.points = np.concatenate([self.points, new])
            self.values = np.concatenate([self.values, draw], axis=-1)
        order = np.argsort(self.points)
        pos = order[np.searchsorted(self.points[order], t)]
        return self.values[..., pos]


_RESIDUAL_TAG = b"dpfda.Release residual stream v1"


def residual_stream(rng: np.random.Generator | None, secure: bool) -> np.random.Generator:
    """A generator for an RKHS FTP release's residual off the grid, unlinkable to the noise.

    ``secure=True``: seeded from the operating system's cryptographic source
    (Python's ``secrets``), independent of ``rng``.  Otherwise reproducible from
    ``rng`` without exposing it: the seed is the SHA-256 digest of a spawned
    child's seed words (``rng`` built from a SeedSequence; spawning does not
    advance ``rng``, so the noise drawn before and after is unchanged) or of
    four words drawn from ``rng`` (a bit generator without a SeedSequence).  The
    release stores only the digest-seeded generator; inverting SHA-256 would be
    needed to get back to ``rng``'s entropy or state.
    """
    if secure:
        material = secrets.token_bytes(32)
    else:
        rng = check_rng(rng)
        try:
            child = rng.spawn(1)[0].bit_generator.seed_seq
            material = np.asarray(child.generate_state(8, np.uint32)).tobytes()
        except (TypeError, AttributeError):  # a bit generator built without a SeedSequence
            material = rng.integers(0, 2**63, size=4, dtype=np.int64).tobytes()
    digest = hashlib.sha256(_RESIDUAL_TAG + material).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest, "little")))


