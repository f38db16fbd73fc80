"""FTP and PTF (Algorithms 1 and 2) as :class:`dpfda.Mechanism` objects, and their one-call releases.

``ftp_mechanism`` and ``ptf_mechanism`` check every public parameter and build the
mechanism from its parts (:mod:`dpfda.mechanisms.parts`); :func:`dpfda.ftp` and
:func:`dpfda.ptf` are their ``release``.  The type itself, the noise rule and its
floating-point argument are in :mod:`dpfda.mechanisms.mechanism_type`.

This module is also the public home of the type and its parts: ``Mechanism``,
``FitInBall``, ``ClipToBox``, ``FTPCalibration``, ``PTFCalibration``, ``Identity``,
``WeightedFit``, ``GridThenFit`` and the protocols ``PerCurveMap``, ``Calibration`` and
``PostFit`` are importable from here (and a pickle that names them here loads).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves
from ..maths.spaces import FunctionSpace, GridGeometry
from ..validation import check_int, check_positive, check_secure
from .calibration import check_secure_budget
from .irregular import public_grid
from .mechanism_type import Mechanism
from .parts import (
    Calibration,
    ClipToBox,
    FitInBall,
    FTPCalibration,
    GridThenFit,
    Identity,
    PerCurveMap,
    PostFit,
    PTFCalibration,
    WeightedFit,
)
from .pipelines import check_radius, ptf_clip_bounds, ptf_weight_vector
from .release import Release

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


def _frozen(a: ArrayLike) -> np.ndarray:
    """A read-only float copy of ``a``."""
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


# ---------------------------------------------------------------------------
# Constructors
# ---------------------------------------------------------------------------


def _geometry(grid: ArrayLike, space: FunctionSpace) -> GridGeometry:
    if not isinstance(space, FunctionSpace):
        raise TypeError(
            f"space must be a FunctionSpace (a LegendreSpace or KernelSpace), got {type(space).__name__}"
        )
    return space.at(grid)


def _budget(mu: float, secure: bool) -> float:
    """μ > 0; with OpenDP's noise (``secure``) also μ²/2 a normal float (refused by name)."""
    return check_secure_budget(mu) if check_secure(secure) else check_positive(mu, "mu")


def _declared_n(n: int | None) -> int | None:
    return None if n is None else check_int(n, "n", 1)


def ftp_mechanism(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, n: int | None = None,
                  secure: bool = False) -> Mechanism:
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


def ptf_mechanism(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *, clip: ArrayLike | None = None,
                  weights: ArrayLike | None = None, n: int | None = None, secure: bool = False) -> Mechanism:
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


def ftp(X: ArrayLike | Curves, grid: ArrayLike | None, space: FunctionSpace, radius: float, mu: float,
        rng: np.random.Generator | None = None, *, secure: bool = False) -> Release:
    """Fit-Then-Protect (Algorithm 1), μ-GDP by Theorem 6 and Corollaries 7–8.

    Algorithm 1 step by step, on data already on [0, 1] with B' in their units; to release
    your own data (in its units, with its record) use :func:`dpfda.FTP` with a
    :class:`dpfda.ReleaseSpec`, which releases the same bits through this path.

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
    return ftp_mechanism(public_grid(X, grid, space),  # type: ignore[arg-type]  # None: check_grid's named TypeError
                         space, radius, mu).release(X, rng, secure=secure)


def ptf(X: ArrayLike | Curves, grid: ArrayLike | None, space: FunctionSpace, radius: float, mu: float,
        rng: np.random.Generator | None = None, clip: ArrayLike | None = None, weights: ArrayLike | None = None, *,
        secure: bool = False) -> Release:
    """Protect-Then-Fit (Algorithm 2), μ-GDP by Proposition 9.

    Algorithm 2 step by step, on data already on [0, 1]; to release your own data use
    :func:`dpfda.PTF` with a :class:`dpfda.ReleaseSpec`.

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
    return ptf_mechanism(public_grid(X, grid, space),  # type: ignore[arg-type]  # None: check_grid's named TypeError
                         space, radius, mu, clip=clip, weights=weights).release(X, rng, secure=secure)
