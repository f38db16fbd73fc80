"""FTP on curves measured at their own points (irregular sampling, missing values).

Fit-Then-Protect needs no common grid.  Subject i, measured at its own points
s_i1 < … < s_iT_i with values x_i, is fitted by least squares in the ball of radius B' of
an orthonormal H_m on *its* design Φ_i = [φ_k(s_ij)] (T_i, m):

    θ̂_i = argmin_{||θ||_2 <= B'} ||x_i − Φ_i θ||²,

and the release is mean_i θ̂_i + σZ, σ = 2B'/(nμ), exactly as Algorithm 1.

**Why the sensitivity stands, whatever the points.**  Theorem 6 needs only that the
per-curve map sends every possible record into one set of diameter 2B' in the Cameron–
Martin norm.  Here a record is the pair (points, values), and whatever the design Φ_i, the
fit is a point of the ball {||θ||_2 <= B'} in coefficient space — the constraint, not the
design, bounds it — and for an orthonormal basis ||θ||_2 is the Cameron–Martin norm of
θᵀφ (Example 1).  So replacing one subject by another, with other points and values,
moves the sum of the fits by at most 2B' and the mean by 2B'/n: the same sensitivity and
σ as on a common grid.  In floating point each fit's norm is checked against
B'(1 + 2⁻⁴⁰) by a rigorous bound and the fits are summed exactly and rounded once
(:func:`dpfda.maths.summation.fixed_point_ball_mean`), so neighbours' means differ by at
most (2B'/n)(1 + ε), ε = :func:`~dpfda.mechanisms.pipelines.ftp_rounding_excess`, the
bound σ is calibrated to.

A subject whose points cannot determine a function of H_m (fewer than m distinct points,
or Φ_iᵀΦ_i singular: Assumption A.3 fails for that record) contributes the zero function:
a fixed public rule applied to that record alone, which keeps the fit in the ball; refusing
the release would let one record decide whether a release happens.

PTF averages each grid point over subjects and needs a common grid: it refuses curves on
their own points (:class:`IrregularPTFError`) unless they are first put on the public grid
by a per-subject map (``Curves.on_grid``, a map of one record
alone, so the guarantee stands).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves
from ..maths.fitting import BallLeastSquares
from ..maths.spaces import FunctionSpace, OrthonormalSpace
from ..maths.summation import fixed_point_ball_mean
from .pipelines import check_radius

__all__ = ["DISPLAY_POINTS", "IrregularPTFError", "check_own_points_space", "irregular_fit_mean", "irregular_fits",
           "public_grid"]

DISPLAY_POINTS = 101
"""Points of the public grid on which an irregular FTP release is laid out (``Release.grid``)."""


class IrregularPTFError(ValueError):
    """PTF was given curves measured at their own points (it needs one common grid)."""


def public_grid(X: ArrayLike | Curves, grid: ArrayLike | None,
                space: FunctionSpace | None = None) -> ArrayLike | None:
    """The grid a mechanism is built on: ``grid``, or for a ``Curves`` given none, its own.

    Common-grid curves: their grid on [0, 1].  Curves on their own points: ``DISPLAY_POINTS``
    equally spaced points of [0, 1], a public choice (never the observed points); ``space``
    must then be orthonormal (:func:`check_own_points_space`).
    """
    if not isinstance(X, Curves) or X.common:
        return X.grid if grid is None and isinstance(X, Curves) else grid
    check_own_points_space(space)
    return np.linspace(0.0, 1.0, DISPLAY_POINTS) if grid is None else grid


def check_own_points_space(space: object) -> None:
    """Curves on their own points are fitted in an orthonormal H_m; a kernel space is refused by name."""
    if not isinstance(space, OrthonormalSpace):
        raise TypeError(
            f"curves on their own points need an orthonormal space (an OrthonormalSpace such as LegendreSpace), got "
            f"{type(space).__name__}: a kernel space's coordinates are tied to one grid of kernel sections")


def _subject_fit(space: OrthonormalSpace, t: np.ndarray, x: np.ndarray, radius: float) -> np.ndarray:
    """θ̂ of each row of ``x`` (k, T_i) on one design; zero where A.3 fails (see module).

    Whether A.3 fails depends on the points ``t`` alone (a subject's own), and each row's fit
    is computed by :class:`~dpfda.maths.fitting.BallLeastSquares` row by row, so the rows
    sharing the design do not change each other's bits.
    """
    if t.size < space.m:
        return np.zeros((x.shape[0], space.m))
    Phi = space.basis(t)
    lam = np.linalg.eigvalsh(Phi.T @ Phi)
    if lam[0] <= 1e-12 * max(lam[-1], 1.0):
        return np.zeros((x.shape[0], space.m))
    return BallLeastSquares(Phi).solve(x, radius).coef


def irregular_fits(curves: Curves, space: FunctionSpace, radius: float) -> np.ndarray:
    """Each subject's fit in the ball on its own points (n, m): the per-record map of FTP.

    Row i is a function of subject i's points and values alone, bit for bit: subjects with
    the same points share one design (its eigendecomposition, a function of the points),
    and every fit is computed row by row with fixed-order element-wise arithmetic
    (:class:`~dpfda.maths.fitting.BallLeastSquares`), so who else was measured at those
    points changes no bit of it.
    """
    if not isinstance(curves, Curves):
        raise TypeError(f"curves must be a dpfda Curves, got {type(curves).__name__}")
    check_own_points_space(space)
    space = cast(OrthonormalSpace, space)  # checked just above
    radius = check_radius(radius)
    subjects = curves.subjects()
    groups: dict = {}
    for i, (t, _) in enumerate(subjects):
        groups.setdefault(t.tobytes(), []).append(i)
    fits = np.empty((len(subjects), space.m))
    for rows in groups.values():
        t = subjects[rows[0]][0]
        x = np.stack([subjects[i][1] for i in rows])
        fits[rows] = _subject_fit(space, t, x, radius)
    return fits


def irregular_fit_mean(curves: Curves, space: FunctionSpace, radius: float) -> np.ndarray:
    """The mean over subjects of the fits in the ball, each on the subject's own points (m,).

    :func:`irregular_fits`, averaged exactly and rounded once.  See the module docstring for
    why the sensitivity is 2B'/n.
    """
    fits = irregular_fits(curves, space, radius)
    return fixed_point_ball_mean(fits, np.eye(fits.shape[1]), check_radius(radius))
