"""Real data on the paper's terms: a public domain mapped to [0, 1], public value ranges to B'.

The paper works on curves of [0, 1] whose Cameron–Martin norm is at most B (Assumption
A.1), and PTF clips each grid value to [-c_j, c_j] (Algorithm 2).  A real study measures,
say, heights in centimetres at ages 1 to 18 years.  Two public, data-independent maps bring
it to the paper's setting, and both must be fixed before anyone looks at the data:

* :class:`Domain` maps the study's design points (e.g. ages) affinely onto [0, 1] and back;
  derivatives pick up the factor 1/length.
* :class:`PublicFrame` takes public bounds ``lower_j <= x(t_j) <= upper_j`` at the grid
  points (from a growth standard, a device's range, ...) and a Legendre space H_m.  It
  centres the values on a public reference curve r ∈ H_m (the least-squares fit of the
  band's midpoints) and divides by one constant ``scale``, the largest half-width of the
  band about r, so that a curve inside the band becomes y = (x - r)/scale with
  ``|y(t_j)| <= c_j <= 1``.  From that:

  - PTF's clipping bounds are the c_j (Algorithm 2 with public c), and its weights
    W = diag(c_j^-2) (the noise at t_j has standard deviation proportional to c_j);
  - the fitting radius B' is sqrt(∫ ĉ(t)² dt), with ĉ the piecewise-linear interpolant of
    the c_j (constant beyond the first and last grid point): a curve with ``|y| <= ĉ`` has
    L²[0, 1] norm, hence H_m norm, at most B'.

Because both maps are fixed public affine maps applied to each person's record, a
neighbouring dataset stays neighbouring, and mapping a release back is post-processing: the
μ-GDP guarantee of :func:`dpfda.ftp` and :func:`dpfda.ptf` carries over unchanged.  Means
commute with the maps, so the mean of the mapped curves maps back to the mean curve.

The value map needs a finite-dimensional space: in an RKHS the norm is not bounded by the
curve's values, so a value range gives no B' (a ``TypeError`` says so, and what to do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.polynomial import legendre as _leg
from numpy.typing import ArrayLike

from .._validation import as_float_array, check_data, check_grid, check_points, to_float
from ..maths.spaces import FunctionSpace, KernelSpace, LegendreSpace, OrthonormalSpace

if TYPE_CHECKING:
    from ..mechanisms.pipelines import Release

__all__ = ["Domain", "PublicFrame", "legendre_derivative", "smallest_dimension"]


def _finite_scalar(value: object, name: str) -> float:
    if isinstance(value, bool) or not np.isscalar(value) or not np.isreal(value):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = to_float(value, name)  # a real scalar, checked above
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


class Domain:
    """The public interval [start, stop] of a study's design, mapped affinely onto [0, 1].

    Parameters
    ----------
    start, stop : float
        Ends of the interval, start < stop (e.g. ages 1 and 18 years).  Public: the study's
        design, not the range of the observed values.
    name : str
        What the points are ("age"), used in error messages.
    """

    def __init__(self, start: float, stop: float, name: str = "x") -> None:
        self.start = _finite_scalar(start, "start")
        self.stop = _finite_scalar(stop, "stop")
        if not self.stop > self.start:
            raise ValueError(f"stop must be > start, got start={self.start!r}, stop={self.stop!r}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        self.name = name

    def __repr__(self) -> str:
        return f"Domain({self.start!r}, {self.stop!r}, name={self.name!r})"

    @property
    def length(self) -> float:
        """The interval's length, stop - start (d/dx = (1/length)·d/dt)."""
        return self.stop - self.start

    def to_unit(self, x: ArrayLike) -> np.ndarray:
        """t = (x - start)/length in [0, 1]; points outside [start, stop] raise ValueError."""
        arr = as_float_array(x, self.name)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{self.name} must hold finite values (found NaN or inf)")
        if np.any(arr < self.start) or np.any(arr > self.stop):
            bad = arr[(arr < self.start) | (arr > self.stop)].ravel()[0]
            raise ValueError(f"{self.name} must lie in [{self.start:g}, {self.stop:g}] (the public "
                             f"domain), got {bad:g}")
        return np.clip((arr - self.start) / self.length, 0.0, 1.0)

    def from_unit(self, t: ArrayLike) -> np.ndarray:
        """x = start + t·length for t in [0, 1]."""
        t = as_float_array(t, "t")
        check_points(np.ravel(t))
        return self.start + t * self.length


def legendre_derivative(space: LegendreSpace, coef: ArrayLike, t: ArrayLike) -> np.ndarray:
    """d/dt of θᵀφ at points ``t`` of [0, 1]: (..., m) coefficients -> (..., len(t)).

    φ_k(t) = sqrt(2k - 1)·P_{k-1}(2t - 1), so φ_k'(t) = 2·sqrt(2k - 1)·P'_{k-1}(2t - 1).
    Differentiating a release is post-processing: it costs no privacy.
    """
    if not isinstance(space, LegendreSpace):
        raise TypeError(f"space must be a LegendreSpace, got {type(space).__name__}")
    coef = np.asarray(coef, dtype=float)
    if coef.ndim < 1 or coef.shape[-1] != space.m:
        raise ValueError(f"coef's last axis must have length m={space.m}, got shape {coef.shape}")
    t = check_points(t)
    c = np.moveaxis(coef * np.sqrt(2.0 * np.arange(1, space.m + 1) - 1.0), -1, 0)
    if space.m == 1:
        return np.zeros(coef.shape[:-1] + t.shape)
    dc = _leg.legder(c, axis=0)
    return 2.0 * _leg.legval(2.0 * t - 1.0, dc, tensor=True)


def smallest_dimension(grid: ArrayLike, curve: ArrayLike, tol: float,
                       m_max: int | None = None) -> tuple[int, dict[int, float]]:
    """The smallest m whose least-squares fit in H_m reproduces a *public* curve within ``tol``.

    A data-independent rule for the dimension of the Legendre space: give it a public curve
    (the midpoint of a growth standard's range, say), never the data, or the choice of m
    itself depends on the people in the data and leaks.

    Parameters
    ----------
    grid : array (T,)
        Points of [0, 1].
    curve : array (T,)
        The public curve's values at ``grid``.
    tol : float
        Largest allowed absolute error of the fit at a grid point, > 0 (curve's units).
    m_max : int, optional
        Largest dimension tried, 1 <= m_max <= T; by default min(16, T).

    Returns
    -------
    m : int
        The smallest m in 1..m_max with worst misfit <= tol.
    misfit : dict
        k -> worst absolute misfit of the fit in H_k at the grid points, k = 1..m_max.
    """
    grid = check_grid(grid, "grid")
    values = _band(curve, "curve", grid.size)
    tol = _finite_scalar(tol, "tol")
    if m_max is None:
        m_max = min(16, grid.size)
    if tol <= 0:
        raise ValueError(f"tol must be > 0, got {tol!r}")
    if isinstance(m_max, bool) or not isinstance(m_max, (int, np.integer)):
        raise TypeError(f"m_max must be an integer, got {type(m_max).__name__}")
    if not 1 <= m_max <= grid.size:
        raise ValueError(f"m_max must lie in 1..T={grid.size} (Assumption A.3), got {m_max}")
    misfit = {}
    for k in range(1, int(m_max) + 1):
        g = LegendreSpace(k).at(grid)
        misfit[k] = float(np.abs(g.values(g.coef_from_values(values)) - values).max())
    good = [k for k, e in misfit.items() if e <= tol]
    if not good:
        raise ValueError(f"no m <= m_max={m_max} fits the curve within tol={tol:g} "
                         f"(best misfit {min(misfit.values()):.3g}): raise m_max or tol")
    return good[0], misfit


def _band(value: ArrayLike, name: str, T: int) -> np.ndarray:
    arr = as_float_array(value, name)
    if arr.ndim == 0:
        arr = np.full(T, float(arr))
    if arr.shape != (T,):
        raise ValueError(f"{name} must be a scalar or a vector of length T={T} (one bound per grid "
                         f"point), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite values (found NaN or inf)")
    return arr


class PublicFrame:
    """A Legendre space on a public grid, with a public value band mapped to c_j and B'.

    Parameters
    ----------
    space : LegendreSpace
        H_m, chosen before looking at the data.  A :class:`~dpfda.KernelSpace` is refused
        with a ``TypeError`` that says why (a value range bounds no RKHS norm) and what to
        do instead.
    points : array (T,)
        The public design points in the study's units (e.g. ages), strictly increasing.
    domain : Domain
        Public interval containing ``points``; mapped onto [0, 1].
    lower, upper : float or array (T,)
        Public bounds of a person's value at each design point (e.g. heights in cm from a
        growth standard), lower < upper everywhere.  Never computed from the data.

    Attributes
    ----------
    grid : ndarray (T,)
        The design points on [0, 1].
    reference : ndarray (m,)
        Coefficients of the public centre curve r (in the study's units).
    scale : float
        Study units per unit of the mapped values y = (x - r)/scale.
    clip : ndarray (T,)
        c_j, the band's half-width about r at t_j over ``scale`` (all <= 1, the largest = 1).
    weights : ndarray (T,)
        c_j^-2, PTF's weights for noise with standard deviation proportional to c_j.
    radius : float
        B' = sqrt(∫ ĉ²), an L² (= H_m) bound for curves inside the interpolated band.
    """

    def __init__(self, space: FunctionSpace, points: ArrayLike, domain: Domain, lower: ArrayLike,
                 upper: ArrayLike) -> None:
        if isinstance(space, KernelSpace):
            raise TypeError(
                "space must be a LegendreSpace, got a KernelSpace: a range of values bounds the "
                "L² norm, which is the Cameron–Martin norm of H_m, but not the norm of an RKHS, so it "
                "gives no fitting radius there (curves with the same values on the grid can have any "
                "RKHS norm; the smallest, sqrt(yᵀK_T⁻¹y), is bounded over the band only through "
                "1/λ_min(K_T), which is astronomically large for a smooth kernel). For an RKHS, map "
                "the values with a public centre and scale yourself, choose B' as a public bound on "
                "the curves' RKHS norm (FTP stays μ-GDP for any B'; fits beyond it are shrunk onto "
                "the ball), and call dpfda.ftp or dpfda.ptf (whose clip may be the band's half-widths)"
            )
        if not isinstance(space, OrthonormalSpace):  # the L² bound holds for any orthonormal basis
            raise TypeError(f"space must be a LegendreSpace, got {type(space).__name__} "
                            "(or a FourierSpace: any orthonormal H_m)")
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a dpfda Domain, got {type(domain).__name__}")
        pts = as_float_array(points, "points")
        if pts.ndim != 1:
            raise ValueError(f"points must be one-dimensional, got shape {pts.shape}")
        self.space = space
        self.domain = domain
        self.points = pts
        self.grid = check_grid(domain.to_unit(pts), "points mapped to [0, 1]")
        self.geometry = space.at(self.grid)  # A.3: T >= m distinct points
        T = self.grid.size
        lo = _band(lower, "lower", T)
        hi = _band(upper, "upper", T)
        if np.any(hi <= lo):
            j = int(np.argmax(hi <= lo))
            raise ValueError(f"upper must be > lower at every point; at {pts[j]:g} lower={lo[j]:g}, "
                             f"upper={hi[j]:g}")
        self.lower, self.upper = lo, hi
        with np.errstate(over="ignore", invalid="ignore"):
            self.reference = self.geometry.coef_from_values(lo / 2.0 + hi / 2.0)
            r = self.geometry.values(self.reference)
            half = np.maximum(hi - r, r - lo)
            edges = np.concatenate([r - half, r + half])
        if not np.all(np.isfinite(edges)):  # so that to_unit's clipping bounds are finite
            raise ValueError("lower and upper: the band about its reference curve reaches beyond "
                             "the float64 range (±1.8e308); express the values in a larger unit")
        self.scale = float(half.max())
        self.clip = half / self.scale
        self.weights = self.clip**-2.0
        self.radius = _l2_norm_of_interpolant(self.grid, self.clip)

    def __repr__(self) -> str:
        return (f"PublicFrame({self.space!r}, T={self.grid.size}, {self.domain!r}, "
                f"scale={self.scale:.4g}, radius={self.radius:.4g})")

    def to_unit(self, X: ArrayLike) -> np.ndarray:
        """Mapped curves y = (clip(x) - r(t_j))/scale, shape as ``X`` ((n, T) or (reps, n, T)).

        Each value is first clipped, in the study's units, to the public band about
        the reference, [r(t_j) - scale·c_j, r(t_j) + scale·c_j] (which contains
        [lower_j, upper_j]), and then mapped.  So every finite record maps to a
        finite curve with ``|y(t_j)| <= c_j`` (up to one rounding), and no single record,
        however extreme, can make the map overflow and decide whether a release
        happens.  Clipping is a fixed public map applied to each record alone, so
        neighbours stay neighbours; for a value inside the band it changes nothing,
        and for PTF with ``clip=frame.clip`` it is the clipping PTF does anyway.
        NaN and inf are refused (``ValueError``).
        """
        X = check_data(X, self.grid.size)
        r = self.geometry.values(self.reference)
        half = self.scale * self.clip  # the band's half-width about r, in the study's units
        return (np.clip(X, r - half, r + half) - r) / self.scale

    def _coef(self, coef: ArrayLike | Release) -> np.ndarray:
        coef = np.asarray(getattr(coef, "coef", coef), dtype=float)
        if coef.ndim < 1 or coef.shape[-1] != self.space.m:
            raise ValueError(f"coef's last axis must have length m={self.space.m}, got shape {coef.shape}")
        return coef

    def values(self, coef: ArrayLike | Release, x: ArrayLike) -> np.ndarray:
        """The curve r + scale·θᵀφ in the study's units at points ``x`` of the domain.

        ``coef`` is a coefficient array (..., m) of a mapped curve or a :class:`Release`.
        """
        coef = self._coef(coef)
        t = self.domain.to_unit(np.atleast_1d(x))
        return self.space.evaluate(self.reference + self.scale * coef, t)

    def derivative(self, coef: ArrayLike | Release, x: ArrayLike) -> np.ndarray:
        """d/dx of :meth:`values` (e.g. growth velocity in cm per year): post-processing."""
        coef = self._coef(coef)
        t = self.domain.to_unit(np.atleast_1d(x))
        # A Fourier frame is refused by legendre_derivative with a named TypeError.
        return legendre_derivative(self.space, self.reference + self.scale * coef,  # type: ignore[arg-type]
                                   t) / self.domain.length

    def rms_error(self, coef: ArrayLike | Release, target: ArrayLike | Release) -> np.ndarray:
        """Root integrated squared error over the domain, in the study's units.

        scale·||θ - θ_target||₂ = sqrt(mean over the domain of (f - f_target)²), by
        orthonormality of φ on [0, 1] (eq. 7 without the expectation).
        """
        diff = self._coef(coef) - self._coef(target)
        return self.scale * np.linalg.norm(diff, axis=-1)


def _l2_norm_of_interpolant(grid: np.ndarray, c: np.ndarray) -> float:
    """sqrt(∫_0^1 ĉ²) for ĉ piecewise linear through (t_j, c_j), constant outside [t_1, t_T]."""
    a, b = c[:-1], c[1:]
    inner = np.sum(np.diff(grid) * (a * a + a * b + b * b) / 3.0)
    return float(np.sqrt(inner + grid[0] * c[0] ** 2 + (1.0 - grid[-1]) * c[-1] ** 2))
