"""Real data on the paper's terms: a public domain mapped to [0, 1], public value ranges to B'.

The paper works on curves of [0, 1] whose Cameron–Martin norm is at most B (Assumption
A.1), and PTF clips each grid value to [-c_j, c_j] (Algorithm 2).  A real study measures,
say, heights in centimetres at ages 1 to 18 years.  Two public, data-independent maps bring
it to the paper's setting, and both must be fixed before anyone looks at the data:

* :class:`Domain` maps the study's design points (e.g. ages) affinely onto [0, 1] and back;
  derivatives pick up the factor 1/length.
* :class:`PublicFrame` takes public bounds ``lower_j <= x(t_j) <= upper_j`` at the grid
  points (from a growth standard, a device's range, a climate's records, ...) and a
  function space.  It centres the values on a public reference curve r (in an orthonormal
  H_m, Legendre or Fourier: the least-squares fit of the band's midpoints; in an RKHS: their
  piecewise-linear interpolant) and divides by one constant ``scale``, the largest
  half-width of the band about r, so that a curve inside the band becomes
  y = (x - r)/scale with ``|y(t_j)| <= c_j <= 1``.  From that:

  - PTF's clipping bounds are the c_j (Algorithm 2 with public c), and its weights
    W = diag(c_j^-2) (the noise at t_j has standard deviation proportional to c_j);
  - in an orthonormal H_m the fitting radius B' is sqrt(∫ ĉ(t)² dt), with ĉ the
    piecewise-linear interpolant of the c_j (constant beyond the first and last grid
    point): a curve with ``|y| <= ĉ`` everywhere has L²[0, 1] norm at most B', and so has
    its orthogonal projection onto H_m, whose coefficient norm is the Cameron–Martin norm.

The frame also maps curves measured at their own points (a :class:`dpfda.Curves`, e.g. a
long-form file without a common grid): a subject's value at its point s is clipped to
r(s) ± scale·ĉ(s) and mapped to (x - r(s))/scale, a map of that record alone.  *Why B' still
bounds the fits.*  If a subject's curve lies inside the band on the whole domain, its
mapped curve y has ``|y| <= ĉ`` everywhere, so ``||y||_{L²} <= B'`` and the projection of y onto
H_m lies in the ball of radius B'.  FTP fits the subject on the points it has, by least
squares; with points that determine H_m well that fit is close to the projection, and
where it is not (few points, or values clipped at the band) the fit may land outside the
ball and is shrunk onto it, a bias for that subject alone.  Privacy never depends on B'
being right: FTP's fit lies in the ball whatever the points and values
(:mod:`dpfda.mechanisms.irregular`), so its sensitivity is 2B'/n for every B'.

*Kernel spaces.*  A band of values bounds no RKHS norm: curves with the same values on the
grid can have any norm in H_K, and the smallest, sqrt(yᵀK_T⁻¹y), is bounded over the band
only through 1/λ_min(K_T), astronomically large for a smooth kernel.  So in an RKHS the
frame centres and scales with the band (and gives PTF's clip and weights), but B' must come
another honest way: a public bound on ||x - r||_H given as ``radius`` (in the data's units),
or a private choice with part of the budget
(:func:`dpfda.mechanisms.radius.ftp_private_radius`, with the given ``radius`` as its cap).
Without ``radius`` a kernel frame is refused by a ``TypeError`` that says so.

Because both maps are fixed public affine maps applied to each person's record, a
neighbouring dataset stays neighbouring, and mapping a release back is post-processing: the
μ-GDP guarantee of :func:`dpfda.ftp` and :func:`dpfda.ptf` carries over unchanged.  Means
commute with the maps, so the mean of the mapped curves maps back to the mean curve.

"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

import numpy as np
from numpy.polynomial import legendre as _leg
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.spaces import FunctionSpace, KernelSpace, LegendreSpace, OrthonormalSpace
from ..validation import as_float_array, check_grid, check_points, to_float

if TYPE_CHECKING:
    from ..mechanisms.release import Release

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
        if not np.isfinite(self.stop - self.start):  # every point would map to 0
            raise ValueError(f"stop - start must be a finite number, got start={self.start!r}, "
                             f"stop={self.stop!r}: express the points in a larger unit")
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
        # One rule with dpfda.Curves: 1 ulp outside is refused, the ends are kept.  For x in
        # [start, stop], rounding is monotone, so the map already lies in [0, 1], with
        # stop -> 1.0 exactly (fl(stop - start)/fl(stop - start)); the clip changes nothing.
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
    arr = np.array(as_float_array(value, name))  # a copy: the frame never shares the caller's array
    if arr.ndim == 0:
        arr = np.full(T, float(arr))
    if arr.shape != (T,):
        raise ValueError(f"{name} must be a scalar or a vector of length T={T} (one bound per grid "
                         f"point), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold finite values (found NaN or inf)")
    return arr


class PublicFrame:
    """A function space on a public grid, with a public value band mapped to c_j and B'.

    Parameters
    ----------
    space : FunctionSpace
        An orthonormal H_m (:class:`~dpfda.LegendreSpace`, :class:`~dpfda.FourierSpace`), or
        a :class:`~dpfda.KernelSpace` together with ``radius`` (see the module: a value band
        bounds no RKHS norm).  Chosen before looking at the data.
    points : array (T,)
        The public points in the study's units (e.g. ages) at which the band is given,
        strictly increasing: the grid of a common-grid release, or any public points of the
        domain (a constant band needs none but its ends) for curves on their own points.
    domain : Domain
        Public interval containing ``points``; mapped onto [0, 1].
    lower, upper : float or array (T,)
        Public bounds of a person's value at each point (e.g. heights in cm from a growth
        standard), lower < upper everywhere; between the points the band is interpolated
        linearly.  Never computed from the data.
    radius : float, optional
        B' in the data's units: a public bound on the norm of x - r in the space (the
        Cameron–Martin norm: L² for an orthonormal H_m, the RKHS norm for a kernel space).
        Default for an orthonormal H_m: the band's own bound, scale·sqrt(∫ ĉ²).  Required
        for a kernel space.

    Attributes
    ----------
    grid : ndarray (T,)
        The points on [0, 1].
    reference : ndarray (m,) or (T,)
        The public centre curve r: its coefficients in H_m (orthonormal space), or its
        values at the points (kernel space: r is their piecewise-linear interpolant).
    scale : float
        Study units per unit of the mapped values y = (x - r)/scale.
    clip : ndarray (T,)
        c_j, the band's half-width about r at t_j over ``scale`` (all <= 1, the largest = 1).
    weights : ndarray (T,)
        c_j^-2, PTF's weights for noise with standard deviation proportional to c_j.
    radius : float
        B' of the mapped curves: sqrt(∫ ĉ²), an L² (= H_m) bound for curves inside the
        interpolated band, or the given ``radius`` divided by ``scale``.
    radius_rule : str
        How B' was obtained, in words (for the record).
    """

    def __init__(self, space: FunctionSpace, points: ArrayLike, domain: Domain, lower: ArrayLike,
                 upper: ArrayLike, *, radius: float | None = None) -> None:
        if isinstance(space, KernelSpace) and radius is None:
            raise TypeError(
                "a KernelSpace frame needs radius=...: a range of values bounds the L² norm, which is "
                "the Cameron–Martin norm of an orthonormal H_m (Legendre, Fourier), but not the norm of "
                "an RKHS, so it gives no fitting radius there (curves with the same values on the grid "
                "can have any RKHS norm; the smallest, sqrt(yᵀK_T⁻¹y), is bounded over the band only "
                "through 1/λ_min(K_T), which is astronomically large for a smooth kernel). Give B' as "
                "a public bound on the RKHS norm of x - r in the data's units (FTP stays μ-GDP for any "
                "B'; fits beyond it are shrunk onto the ball), or choose it privately with part of the "
                "budget (dpfda.mechanisms.radius.ftp_private_radius, with that bound as radius_max)"
            )
        if not isinstance(space, (OrthonormalSpace, KernelSpace)):
            raise TypeError(f"space must be an orthonormal space (such as LegendreSpace) or a KernelSpace, got "
                            f"{type(space).__name__}")
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a dpfda Domain, got {type(domain).__name__}")
        pts = np.array(as_float_array(points, "points"))  # a copy, as the bounds
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
            mid = lo / 2.0 + hi / 2.0
            if isinstance(space, OrthonormalSpace):
                self.reference = self.geometry.coef_from_values(mid)
                r = self.geometry.values(self.reference)
            else:  # an RKHS: r is the piecewise-linear interpolant of the midpoints, r(t_j) = mid_j
                self.reference = mid
                r = mid
            half = np.maximum(hi - r, r - lo)
            edges = np.concatenate([r - half, r + half])
        if not np.all(np.isfinite(edges)):  # so that to_unit's clipping bounds are finite
            raise ValueError("lower and upper: the band about its reference curve reaches beyond "
                             "the float64 range (±1.8e308); express the values in a larger unit")
        self.scale = float(half.max())
        self.clip = half / self.scale
        self.weights = self.clip**-2.0
        if radius is None:
            self.radius = _l2_norm_of_interpolant(self.grid, self.clip)
            self.radius_rule = ("the band's bound sqrt(∫ ĉ²): the L² norm, hence the norm in the "
                                "orthonormal space, of any curve inside the band, centred and scaled")
        else:
            given = _finite_scalar(radius, "radius")
            if not given > 0:
                raise ValueError(f"radius must be > 0 (B' in the data's units), got {given!r}")
            self.radius = given / self.scale
            self.radius_rule = (f"given: a public bound of {given:g} (data's units) on the norm of x - r in "
                                "the space, divided by the scale")

    def __repr__(self) -> str:
        return (f"PublicFrame({self.space!r}, T={self.grid.size}, {self.domain!r}, "
                f"scale={self.scale:.4g}, radius={self.radius:.4g})")

    def centre_at(self, t: ArrayLike) -> np.ndarray:
        """The centre curve r at points ``t`` of [0, 1], in the study's units (public)."""
        t = check_points(t)
        if isinstance(self.space, OrthonormalSpace):
            if t.shape == self.grid.shape and np.array_equal(t, self.grid):
                return self.geometry.values(self.reference)  # as to_unit maps the grid
            return self.space.evaluate(self.reference, t)
        return np.interp(t, self.grid, self.reference)

    def half_width_at(self, t: ArrayLike) -> np.ndarray:
        """The band's half-width about r, scale·ĉ(t), at points ``t`` of [0, 1] (public).

        ĉ interpolates the c_j linearly and is constant beyond the first and last point.
        """
        return self.scale * np.interp(check_points(t), self.grid, self.clip)

    @overload
    def to_unit(self, X: Curves) -> Curves: ...
    @overload
    def to_unit(self, X: ArrayLike) -> np.ndarray: ...
    def to_unit(self, X: ArrayLike | Curves) -> np.ndarray | Curves:
        """Mapped curves y = (clip(x) - r(t))/scale: an array shaped as ``X``, or a :class:`Curves`.

        ``X``: curves on the frame's points ((n, T) or (reps, n, T)), or a
        :class:`dpfda.Curves` on the frame's domain (each subject on its own points, or
        on a common grid); a Curves comes back as a Curves on [0, 1] (domain (0, 1)),
        each subject on the same points.

        Each value is first clipped, in the study's units, to the public band about
        the reference, [r(t) - scale·ĉ(t), r(t) + scale·ĉ(t)] (at the frame's points it
        contains [lower_j, upper_j]), and then mapped.  So every finite record maps to a
        finite curve with ``|y(t)| <= ĉ(t)`` (up to one rounding), and no single record,
        however extreme, can make the map overflow and decide whether a release
        happens.  Clipping is a fixed public map applied to each record alone, so
        neighbours stay neighbours; for a value inside the band it changes nothing,
        and for PTF with ``clip=frame.clip`` it is the clipping PTF does anyway.
        NaN and inf are refused (``ValueError``).
        """
        if isinstance(X, Curves):
            return self._curves_to_unit(X)
        values = as_curves(X, self.grid).values  # the checks of a Curves on the frame's grid
        assert values is not None  # an array makes curves on one common grid
        r = self.centre_at(self.grid)
        half = self.scale * self.clip  # the band's half-width about r, in the study's units
        return (np.clip(values, r - half, r + half) - r) / self.scale

    def _curves_to_unit(self, curves: Curves) -> Curves:
        if tuple(curves.domain) != (self.domain.start, self.domain.stop):
            raise ValueError(f"the curves' domain {tuple(curves.domain)} is not the frame's "
                             f"({self.domain.start:g}, {self.domain.stop:g}): both map the points onto [0, 1]")
        if curves.common and np.array_equal(curves.grid, self.grid):  # on the frame's points
            return as_curves(self.to_unit(curves.values), self.grid)  # type: ignore[arg-type]  # common: set
        if curves.common and curves.values is not None and curves.values.ndim != 2:
            raise ValueError("a Curves with batch axes off the frame's points: map one data set at a time")
        points, values = [], []
        band: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}  # r and scale·ĉ, once per set of points
        for t, x in curves.subjects():  # each subject alone: its points, its values, public r and ĉ
            key = t.tobytes()
            if key not in band:
                band[key] = (self.centre_at(t), self.half_width_at(t))
            r, half = band[key]
            points.append(t)
            values.append((np.clip(x, r - half, r + half) - r) / self.scale)
        if curves.common:
            return as_curves(np.array(values), points[0])
        return Curves(values, points, (0.0, 1.0))

    def _coef(self, coef: ArrayLike | Release) -> np.ndarray:
        coef = np.asarray(getattr(coef, "coef", coef), dtype=float)
        if coef.ndim < 1 or coef.shape[-1] != self.geometry.dim:
            raise ValueError(f"coef's last axis must have length m={self.geometry.dim}, got shape {coef.shape}")
        return coef

    def values(self, coef: ArrayLike | Release, x: ArrayLike) -> np.ndarray:
        """The curve r + scale·f in the study's units at points ``x`` of the domain.

        ``coef`` is a coefficient array (..., m) of a mapped curve f, or a :class:`Release`
        (in a kernel space, the release's own evaluation: on the grid and, off it, with
        its Gaussian-process residual).
        """
        t = self.domain.to_unit(np.atleast_1d(x))
        if isinstance(self.space, OrthonormalSpace):
            coef = self._coef(coef)
            return self.space.evaluate(self.reference + self.scale * coef, t)
        f = coef(t) if callable(coef) else self.geometry.evaluate(self._coef(coef), t)
        return self.centre_at(t) + self.scale * np.asarray(f, dtype=float)

    def derivative(self, coef: ArrayLike | Release, x: ArrayLike) -> np.ndarray:
        """d/dx of :meth:`values` (e.g. growth velocity in cm per year): post-processing."""
        coef = self._coef(coef)
        t = self.domain.to_unit(np.atleast_1d(x))
        # A Fourier or kernel frame is refused by legendre_derivative with a named TypeError.
        return legendre_derivative(self.space, self.reference + self.scale * coef,  # type: ignore[arg-type]
                                   t) / self.domain.length

    def rms_error(self, coef: ArrayLike | Release, target: ArrayLike | Release) -> np.ndarray:
        """Root integrated squared error over the domain, in the study's units.

        scale·||θ - θ_target||₂ = sqrt(mean over the domain of (f - f_target)²), by
        orthonormality of φ on [0, 1] (eq. 7 without the expectation); orthonormal spaces only.
        """
        if not isinstance(self.space, OrthonormalSpace):
            raise TypeError("rms_error needs an orthonormal space (its coefficient norm is the L² norm)")
        diff = self._coef(coef) - self._coef(target)
        return self.scale * np.linalg.norm(diff, axis=-1)


def _l2_norm_of_interpolant(grid: np.ndarray, c: np.ndarray) -> float:
    """sqrt(∫_0^1 ĉ²) for ĉ piecewise linear through (t_j, c_j), constant outside [t_1, t_T]."""
    a, b = c[:-1], c[1:]
    inner = np.sum(np.diff(grid) * (a * a + a * b + b * b) / 3.0)
    return float(np.sqrt(inner + grid[0] * c[0] ** 2 + (1.0 - grid[-1]) * c[-1] ** 2))
