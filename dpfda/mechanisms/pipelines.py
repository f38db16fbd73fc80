"""The two pipelines of the paper: Fit-Then-Protect and Protect-Then-Fit.

FTP (Algorithm 1)::

    X (…, n, T) ──fit each curve in the ball B'──▶ θ̂_i (…, n, d) ──mean──▶ θ̂ (…, d) ──+σZ──▶ release

with σ = 2B'/(nμ) (Theorem 6, Corollaries 7–8).

PTF (Algorithm 2)::

    X (…, n, T) ──clip to ±c_j, mean──▶ x̄ (…, T) ──+N(0, σ_j²)──▶ x̃ ──weighted fit in the ball B'──▶ release

with σ_j = (2c_j/n)·sqrt(T)/μ (Proposition 9: each coordinate is (μ/√T)-GDP,
and T of them compose to μ-GDP; the fit is post-processing).

Each stage is also a function of its own (``ftp_fit_mean``, ``ftp_privatize``,
``ptf_clipped_mean`` …) so the simulation engine can reuse work, e.g. fit
noiseless data once, and read per-curve diagnostics (which fits hit the ball)
on its own side of the privacy boundary: a :class:`~dpfda.mechanisms.release.Release` never carries them.
:func:`dpfda.ftp` and :func:`dpfda.ptf` compose them through one type, :class:`dpfda.Mechanism`
(:func:`dpfda.ftp_mechanism`, :func:`dpfda.ptf_mechanism`): one check of μ, one σ
per release.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ..maths.fitting import BallFit, BallLeastSquares
from ..maths.spaces import GridGeometry, KernelSpace
from ..maths.summation import ball_mean_excess, box_mean_excess, fixed_point_mean
from ..validation import (
    check_grid_vector,
    check_int,
    check_positive,
    check_rng,
)
from . import secure as opendp_noise  # a module: its sampler is looked up at each release
from .calibration import (
    NOISE_RESOLUTION,  # noqa: F401 - re-exported: the limits' one home is .calibration
    PARAM_MAX,
    check_secure_budget,
    declared_sensitivity,
    noise_scale,
)
from .release import Release, residual_stream

__all__ = [
    "ftp_sigma",
    "ptf_sigmas",
    "check_radius",
    "ftp_fit_mean",
    "ftp_privatize",
    "ptf_clip_bounds",
    "ptf_weight_vector",
    "ptf_clipped_mean",
    "ptf_fit",
    "add_noise",
    "ptf_default_clip",
    "ptf_default_weights",
    "fitter",
    "ftp_rounding_excess",
    "ptf_rounding_excess",
]


# ---------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------


def check_radius(radius: object) -> float:
    """The fitting radius B': a finite number in (0, 2^960] (see :data:`~dpfda.mechanisms.calibration.PARAM_MAX`)."""
    radius = check_positive(radius, "radius")
    if radius > PARAM_MAX:
        raise ValueError(
            "radius must be at most 2^960 ≈ 9.7e288 (so sums, noise and grid values stay within "
            f"floating point), got {radius!r}"
        )
    return radius


def ftp_sigma(n: int, radius: float, mu: float, *, rounding: float = 0.0) -> float:
    """FTP noise scale σ = Δ/μ with Cameron–Martin sensitivity Δ = 2B'/n (Algorithm 1).

    ``rounding``: a proven bound ε on the relative excess of pair μ from the
    rounding of the mean (:func:`~dpfda.mechanisms.pipelines.ftp_rounding_excess`); σ is multiplied by
    1 + ε + 8u when ε > 2⁻³¹ (:func:`dpfda.maths.summation.calibration_factor`) and
    is otherwise exactly the formula.  Raises ``ValueError`` when σ would not
    be a finite, normal float in [2^-40·B', 2^960] (see
    :data:`~dpfda.mechanisms.calibration.NOISE_RESOLUTION`, :data:`~dpfda.mechanisms.calibration.PARAM_MAX`).

    Examples
    --------
    >>> ftp_sigma(100, 1.0, 1.0)
    0.02
    """
    n = check_int(n, "n", 1)
    radius, mu = check_radius(radius), check_positive(mu, "mu")
    return float(noise_scale(radius, None, n, mu, "radius", rounding))


def ptf_sigmas(n: int, clip: ArrayLike, mu: float, *, rounding: float = 0.0) -> np.ndarray:
    """PTF noise scales σ_j = (2c_j/n)·sqrt(T)/μ (Algorithm 2; T = len(clip)).

    ``rounding`` as for :func:`ftp_sigma` (``ptf_rounding_excess``).  Raises
    ``ValueError`` when some σ_j would not be a finite, normal float in
    [2^-40·c_j, 2^960].

    Examples
    --------
    >>> ptf_sigmas(100, [1.0, 2.0], 1.0).round(6)  # 2c_j·sqrt(2)/100
    array([0.028284, 0.056569])
    """
    n = check_int(n, "n", 1)
    c = check_grid_vector(clip, "clip", None)
    mu = check_positive(mu, "mu")
    return noise_scale(c, math.sqrt(c.size), n, mu, "clip", rounding)


def ftp_rounding_excess(n: int, dim: int, radius: float) -> float:
    """Proven bound ε on the relative excess of FTP's pair μ from floating point.

    The mean of fits of ``ftp_fit_mean`` differs between neighbours by at
    most (2B'/n)(1 + ε) in the Cameron–Martin coordinates
    (:func:`dpfda.maths.summation.ball_mean_excess`: fits of norm <= B'(1 + 2⁻⁴⁰),
    an exact sum, one rounding per coordinate).  About n·4.4e-16: below 2⁻³¹,
    where σ keeps its formula, up to n ≈ 10^6.

    Examples
    --------
    >>> ftp_rounding_excess(100, 4, 1.0) < 2**-31
    True
    """
    return ball_mean_excess(check_int(n, "n", 1), check_int(dim, "dim", 1), check_radius(radius))


def ptf_rounding_excess(n: int, clip: ArrayLike) -> float:
    """Proven bound ε on the relative excess of PTF's pair μ from floating point.

    Clipping is exact, and ``ptf_clipped_mean`` (and the unit-box mean the
    secure path hands OpenDP, at c_j = 1) is exact up to one rounding per
    coordinate, so each coordinate moves by at most (2c_j/n)(1 + ε)
    (:func:`dpfda.maths.summation.box_mean_excess`).
    """
    c = np.asarray(clip, dtype=float)
    return box_mean_excess(check_int(n, "n", 1), np.minimum(c, 1.0))


def ptf_default_clip(geometry: GridGeometry, radius: float) -> np.ndarray:
    """c_j = B'·a_j with a_j = ||φ(t_j)||_2 or sqrt(K(t_j,t_j)) (Theorems 11, 14).

    a_j is ``geometry.eval_norm``: a function of norm at most B' lies in
    [-c_j, c_j] at t_j, so clipping never touches noiseless data from the ball.

    Examples
    --------
    >>> from dpfda import LegendreSpace, uniform_grid
    >>> ptf_default_clip(LegendreSpace(2).at(uniform_grid(3)), 1.0)
    array([2., 1., 2.])
    """
    return check_radius(radius) * geometry.eval_norm


def ptf_default_weights(geometry: GridGeometry) -> np.ndarray:
    """The diagonal of W = diag(a_j^{-2}) (Theorems 11, 14)."""
    return geometry.eval_norm**-2.0


def ptf_clip_bounds(geometry: GridGeometry, radius: float, clip: ArrayLike | None = None) -> np.ndarray:
    """PTF's clipping bounds: ``clip`` checked (a scalar is used at every point), or the default."""
    if clip is None:
        return ptf_default_clip(geometry, radius)
    return check_grid_vector(clip, "clip", geometry.T)


def ptf_weight_vector(geometry: GridGeometry, weights: ArrayLike | None = None) -> np.ndarray:
    """PTF's fitting weights: ``weights`` checked (a scalar is used at every point), or the default."""
    if weights is None:
        return ptf_default_weights(geometry)
    return check_grid_vector(weights, "weights", geometry.T)


_FITTERS: dict = {}


def fitter(geometry: GridGeometry, weights: ArrayLike | None = None) -> BallLeastSquares:
    """A cached :class:`~dpfda.BallLeastSquares` for this geometry and weight vector."""
    w = None if weights is None else np.asarray(weights, dtype=float)
    key = (id(geometry), None if w is None else w.tobytes())
    hit = _FITTERS.get(key)
    if hit is not None and hit[0] is geometry:
        return hit[1]
    solver = BallLeastSquares(geometry.Phi, w)
    if len(_FITTERS) > 512:
        _FITTERS.clear()
    _FITTERS[key] = (geometry, solver)
    return solver


# ---------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------


def ftp_fit_mean(X: np.ndarray, geometry: GridGeometry, radius: float, *,
                 exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Fit each curve in the ball of radius B' (W = I) and average (Algorithm 1, steps 1–2).

    Returns ``(mean_coef (…, d), active (…, n))``.  ``active`` says whose fit hit
    the ball: a per-person diagnostic for simulations, never part of a release.
    Every curve's fit has norm at most B' whatever the magnitude of its data,
    and the mean is summed exactly and rounded once
    (``solve_mean``), so the means of two
    neighbouring datasets differ by at most (2B'/n)(1 + ε) in floating point,
    ε = ``ftp_rounding_excess`` (n·4.4e-16).  ``exact=False`` is the
    simulation engine's faster sum, whose rounding is not bounded that way;
    no release uses it.
    """
    return fitter(geometry).solve_mean(X, radius, exact=exact)


def ftp_privatize(mean_coef: ArrayLike, geometry: GridGeometry, radius: float, mu: float, n: int,
                  rng: np.random.Generator | None, *, secure: bool = False) -> Release:
    """Algorithm 1, step 3: the mean of the fits plus σZ, σ = 2B'/(nμ), as a :class:`~dpfda.Release`.

    ``mean_coef`` (…, d) must come from ``ftp_fit_mean`` (or another
    computation whose sensitivity is (2B'/n)(1 + ε) in the Cameron–Martin norm,
    ε = ``ftp_rounding_excess``; σ covers ε where it exceeds 2⁻³¹).  With
    ``secure=True`` the noise comes from OpenDP (``rng`` may be None);
    otherwise from ``rng``.  For an
    RKHS the release also gets its own stream for the Gaussian-process residual
    off the grid (see :meth:`dpfda.Release.__call__`).
    """
    excess = ftp_rounding_excess(n, geometry.dim, radius)
    sigma = ftp_sigma(n, radius, mu, rounding=excess)
    mean_coef = np.asarray(mean_coef, dtype=float)
    if secure:
        # OpenDP is told the floating-point sensitivity of the vector it gets.
        sens = declared_sensitivity(radius, n, excess)
        check_secure_budget(mu)
        coef = opendp_noise.gaussian_release(mean_coef, sigma, sensitivity=sens, mu=mu)
    else:
        coef = add_noise(mean_coef, sigma, check_rng(rng).standard_normal(mean_coef.shape))
    residual = residual_stream(rng, secure) if isinstance(geometry.space, KernelSpace) else None
    return Release(method="ftp", geometry=geometry, coef=coef, mu=mu, radius=radius, n=n,
                   noise_scale=sigma, residual_rng=residual, secure=secure)


def ptf_clipped_mean(X: np.ndarray, clip: np.ndarray, *, exact: bool = True) -> np.ndarray:
    """Coordinate-wise mean of the clipped values, x̄_j^(clip) (Algorithm 2).

    Clipping is exact, so every curve's point lies in the box ∏[−c_j, c_j].
    ``exact=True`` (what a release uses): the points are summed exactly and the
    mean rounded once (:func:`dpfda.maths.summation.fixed_point_mean`), whatever
    the order of the curves, so neighbours' means differ by at most
    (2c_j/n)(1 + ε) in coordinate j, ε = ``ptf_rounding_excess``.
    ``exact=False`` (the simulation engine's fast path; no release uses it): an
    ``einsum``, curve after curve into the T sums — the bits do not depend on
    the batch shape, but a sum added in order can round differently for
    neighbours by up to n²·2⁻⁵⁴ of the sensitivity.
    """
    clipped = np.clip(X, -clip, clip)
    if not exact:
        return np.einsum("...ij->...j", clipped) / X.shape[-2]
    return fixed_point_mean(clipped, clip)


def add_noise(centre: np.ndarray, scale: float | np.ndarray, normals: np.ndarray) -> np.ndarray:
    """The Gaussian mechanism's step: ``centre + scale·normals`` (Algorithms 1 and 2).

    ``normals`` are standard normal draws of ``centre``'s shape (drawn by the
    caller, so a simulation may draw many at once); ``scale`` is σ (FTP) or
    (σ_1, …, σ_T) (PTF).
    """
    return centre + scale * normals


def ptf_fit(xtilde: ArrayLike, geometry: GridGeometry, radius: float, weights: ArrayLike | None) -> BallFit:
    """Algorithm 2's last step: the weighted fit (eq. 4) of x̃ in the ball of radius B'.

    Post-processing of the noisy means; ``weights`` is the diagonal of W.
    """
    return fitter(geometry, weights).solve(xtilde, radius)
