"""One way to release: a frozen, checked specification of the public choices, and FTP/PTF from it.

A release is fixed by choices made before anyone looks at the data: the function space and
the domain of the curves' argument, the points (one public grid, or each subject on its own
points), either a public range of the values (``lower``/``upper`` in the data's units) or the
fitting radius B' itself, PTF's clip, and the budget, μ or (ε, δ).  :class:`~dpfda.ReleaseSpec`
holds them, checks every one when it is made (a :class:`~dpfda.SpecError` names the argument and the
rule it broke), and derives what follows from them: the :class:`~dpfda.PublicFrame` of a
range (centre, scale, B', clip and weights), the grid on [0, 1] and μ.

:func:`~dpfda.FTP` and :func:`~dpfda.PTF` turn a specification into a :class:`~dpfda.SpecifiedMechanism` — the
library's :class:`~dpfda.Mechanism` built by :func:`~dpfda.ftp_mechanism`
or :func:`~dpfda.ptf_mechanism` from the specification's public numbers,
nothing more.  Its :meth:`~dpfda.SpecifiedMechanism.release` maps each record alone into the
frame (:meth:`dpfda.PublicFrame.to_unit`), releases through :meth:`dpfda.Mechanism.release`
(the same privacy path, noise drawn last) and returns a :class:`~dpfda.SpecifiedRelease`: the
curve in the data's units anywhere on the domain, its noise in those units, and its own
record (:func:`~dpfda.practice.publish.release_record`).  When the curator's diagnostics
flag the data (values in other units than the range, B' far below the curves: the command
line's rules), it says so with a :class:`~dpfda.CuratorWarning`, which changes nothing released.

>>> import numpy as np
>>> import dpfda
>>> spec = dpfda.ReleaseSpec(space="legendre:3", domain=(0, 10), grid=[0, 2.5, 5, 7.5, 10],
...                          lower=0, upper=4, mu=1.0, secure=False)
>>> X = np.full((200, 5), 2.5)   # 200 curves, all 2.5 at the five points
>>> rel = dpfda.FTP(spec).release(X, np.random.default_rng(0))
>>> rel([0.0, 10.0]).shape, rel.record([0, 5, 10])["curve"]["points"]
((2,), [0.0, 5.0, 10.0])

With ``private_radius=True`` (FTP in an orthonormal space), B' is instead chosen from the data
as a private quantile of the fitted norms, with a share of the budget, below the public cap
(:func:`dpfda.mechanisms.radius.ftp_private_radius`); the record states both steps.
``python -m dpfda release`` is this path: its options are a specification.

:func:`dpfda.ftp` and :func:`dpfda.ptf` (data already on [0, 1], B' in its units, positional
arguments) stay for the chapters, which follow the paper's algorithms step by step; a
release through a specification equals theirs bit for bit with the same generator.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.spaces import FourierSpace, FunctionSpace, KernelSpace, OrthonormalSpace, space_from_spec
from ..mechanisms.calibration import NOISE_RESOLUTION, check_secure_budget
from ..mechanisms.ftp_ptf import ftp_mechanism, ptf_mechanism
from ..mechanisms.irregular import DISPLAY_POINTS
from ..mechanisms.mechanism_type import Mechanism
from ..mechanisms.pipelines import check_radius
from ..mechanisms.privacy import mu_from_epsilon_delta
from ..mechanisms.radius import PrivateRadius, ftp_private_radius
from ..mechanisms.release import Release
from ..validation import as_float_array
from .diagnostics import curator_report
from .publish import DELTAS, release_record
from .realdata import Domain, PublicFrame

__all__ = ["FTP", "PTF", "CuratorWarning", "ReleaseSpec", "SpecError", "SpecifiedMechanism", "SpecifiedRelease"]


class SpecError(ValueError):
    """A public choice of a :class:`~dpfda.ReleaseSpec` broke a rule; ``argument`` names the choice."""

    def __init__(self, argument: str, rule: str) -> None:
        self.argument = argument
        super().__init__(f"{argument}: {rule}")


class CuratorWarning(UserWarning):
    """The curator's diagnostics flag the data a release was made from (other units, too small a B', ...).

    Emitted by :meth:`SpecifiedMechanism.release` after the noise is drawn, from
    :func:`~dpfda.practice.diagnostics.curator_report`'s rules (those ``python -m dpfda release``
    prints to stderr).  Its text is computed from the data without noise: not private, for the
    curator only, never part of the release, its pickle or its record.  Silence it with the
    standard filters: ``warnings.filterwarnings("ignore", category=dpfda.CuratorWarning)``.
    """


def _frozen(a: ArrayLike) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


def _number(value: object, argument: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SpecError(argument, f"must be a number, got {type(value).__name__}")
    return float(value)


def _bound(value: object, argument: str) -> np.ndarray | float:
    """A public bound: a number, or an array of them (checked in full by the frame)."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value)
    try:  # real numbers only: text, booleans, complex numbers and dates are refused by name
        arr = as_float_array(value, argument)
    except (TypeError, ValueError) as exc:
        raise SpecError(argument, f"must be a number or an array of numbers ({exc})") from None
    if arr.ndim > 1:
        raise SpecError(argument, f"must be a number or a vector (one per grid point), got shape {arr.shape}")
    return float(arr) if arr.ndim == 0 else arr


@dataclass(frozen=True, eq=False)
class ReleaseSpec:
    """The public choices of one release, checked when made; fix them before looking at the data.

    Every parameter is keyword only.

    Parameters
    ----------
    space : FunctionSpace or str
        The function space, or its spec (``"legendre:8"``, ``"fourier:7"``, ``"gaussian:0.2"``:
        :func:`dpfda.space_from_spec`).
    domain : Domain or (start, stop), default (0, 1)
        The public interval of the curves' argument (ages, hours, ...), mapped onto [0, 1].
        A Fourier space is periodic on it: ``stop`` is the same instant as ``start``.
    grid : array (T,), optional
        The public points, in the domain's units, at which every subject is measured (the
        columns of an (n, T) array).  Leave it out for curves measured at their own points
        (a :class:`dpfda.Curves`; FTP in an orthonormal space): the release is then laid out on
        101 equally spaced points of the domain.
    lower, upper : float or array (T,), optional
        A public range of every value, in the data's units (a growth standard, a device's
        range): the data are centred and scaled by a :class:`dpfda.PublicFrame`, which gives
        B', PTF's clip and weights.  Numbers, not vectors, without ``grid``.
    radius : float, optional
        B' in the data's units.  Without ``lower``/``upper`` it is required, and the data are
        used as they are; with them it overrides the range's bound (required in a kernel
        space, where a range bounds no RKHS norm).
    clip : float or array (T,), optional
        PTF's clipping bounds c_j in the data's units, without a range only (a range gives
        them); default B'·||φ(t_j)|| as :func:`dpfda.ptf`.
    mu : float, optional
        The budget as μ-GDP; or give ``epsilon`` and ``delta`` instead (the largest μ whose
        μ-GDP implies (ε, δ)-DP).
    secure : bool, default True
        Draw the noise with OpenDP (needs ``opendp``); ``False`` draws it from a numpy
        generator, for teaching and simulation only.
    units : str, optional
        What the values are and their unit (``"height (cm)"``), for the record (the points'
        are the domain's name, ``Domain(1, 18, name="age (years)")``); a :class:`dpfda.Curves`
        that states other units is refused.  Default: the curves' own units, or "value".
    private_radius : bool, default False
        FTP only, in an orthonormal space: choose B' from the data, as a private quantile of
        the norms of each curve's fit (:func:`dpfda.mechanisms.radius.ftp_private_radius`),
        with a share of the budget.  ``radius`` (or the range's bound) is then the cap, the
        largest radius considered; the two steps compose to the budget, and the record states
        each step's μ and the radius chosen.
    radius_share, radius_quantile : float, optional
        With ``private_radius``: the share of μ² spent on choosing B' (default 0.2) and which
        quantile of the fitted norms B' is (default 0.9), each strictly between 0 and 1.

    Raises
    ------
    SpecError
        A choice breaks a rule; its ``argument`` names which.  Raised here, before any data.
    """

    space: FunctionSpace | str
    domain: Domain | Iterable[float] = (0.0, 1.0)
    grid: ArrayLike | None = None
    lower: ArrayLike | None = None
    upper: ArrayLike | None = None
    radius: float | None = None
    clip: ArrayLike | None = None
    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    secure: bool = True
    units: str | None = None
    private_radius: bool = False
    radius_share: float | None = None
    radius_quantile: float | None = None
    frame: PublicFrame | None = field(init=False, repr=False)
    """The public frame of ``lower``/``upper`` (None without a range)."""
    points: np.ndarray = field(init=False, repr=False)
    """The grid in the domain's units (the layout grid for curves on their own points)."""
    unit_grid: np.ndarray = field(init=False, repr=False)
    """The grid on [0, 1], on which the mechanism is built."""
    unit_radius: float = field(init=False, repr=False)
    """B' of the mapped data (the frame's, or ``radius`` itself without a range)."""
    budget_mu: float = field(init=False, repr=False)
    """The budget μ as given, or the largest μ whose μ-GDP implies (ε, δ)."""

    def __post_init__(self) -> None:
        put = object.__setattr__
        space = self.space
        if isinstance(space, str):
            try:
                space = space_from_spec(space)
            except (TypeError, ValueError) as exc:
                raise SpecError("space", str(exc)) from None
        if not isinstance(space, FunctionSpace):
            raise SpecError("space", f"must be a FunctionSpace or a spec such as 'legendre:8', got "
                                     f"{type(space).__name__}")
        put(self, "space", space)
        domain = self.domain
        if not isinstance(domain, Domain):
            try:
                start, stop = (_number(v, "domain") for v in domain)
                domain = Domain(start, stop)
            except (TypeError, ValueError) as exc:
                raise SpecError("domain", f"must be a dpfda.Domain or (start, stop) with start < stop ({exc})"
                                ) from None
        put(self, "domain", domain)
        if self.units is not None and not isinstance(self.units, str):
            raise SpecError("units", f"must be a string such as 'height (cm)', got {type(self.units).__name__}")
        if not isinstance(self.secure, bool):
            raise SpecError("secure", f"must be True or False, got {self.secure!r}")
        put(self, "budget_mu", self._budget())
        self._private_radius(space)
        own_points = self.grid is None
        if own_points:
            if not isinstance(space, OrthonormalSpace):
                raise SpecError("grid", f"curves on their own points (no grid) are fitted in an orthonormal space "
                                        f"(legendre, fourier), not {space.spec}: give the grid")
            points = np.linspace(domain.start, domain.stop, DISPLAY_POINTS)
        else:
            points = np.atleast_1d(_bound(self.grid, "grid"))
        try:
            unit = domain.to_unit(points)
            space.at(unit)  # strictly increasing, T >= m points of [0, 1] (Assumption A.3)
        except (TypeError, ValueError) as exc:
            raise SpecError("grid", str(exc)) from None
        if isinstance(space, FourierSpace) and not own_points and points.size > 1 and \
                points[0] == domain.start and points[-1] == domain.stop:
            steps = np.diff(points)
            this = (f"; this grid's: domain ({points[0]:g}, {points[-1] + steps[0]:g})"
                    if np.allclose(steps, steps[0], rtol=1e-9, atol=0.0) else "")
            raise SpecError("domain", f"{space.spec} is periodic on the domain (its stop is the same instant as "
                                      f"its start), and the grid's first and last points {points[0]:g} and "
                                      f"{points[-1]:g} are its ends: they would be one instant (for months 1 to "
                                      "12, December would be January). Give the domain one period long, e.g. "
                                      "one step past the last point of an evenly spaced grid (months 1 to 12: "
                                      f"domain (1, 13){this}); or, if the last point is the next period's first "
                                      "(hour 24 of hours 0 to 24 on the domain (0, 24)), leave it out of the "
                                      "grid and the data")
        self._resolvable(math.sqrt(points.size) if not own_points else 1.0, "FTP or PTF")
        put(self, "points", _frozen(points))
        put(self, "unit_grid", _frozen(unit))
        put(self, "frame", self._frame(space, domain, own_points))
        put(self, "unit_radius", self._radius())
        if self.clip is not None:
            put(self, "clip", _bound(self.clip, "clip"))
        # Frozen all the way down: the caller's arrays are copied, and the frame's are read-only, so
        # that no later write changes what a mechanism built from this spec maps or records.
        for name in ("grid", "lower", "upper", "clip"):
            if isinstance(getattr(self, name), np.ndarray):
                put(self, name, _frozen(getattr(self, name)))
        if self.frame is not None:
            for value in vars(self.frame).values():
                if isinstance(value, np.ndarray):
                    value.setflags(write=False)

    def _resolvable(self, factor: float, which: str) -> None:
        """Refuse a μ no n can use: σ/bound = 2·factor·c/(n·μ) below 2^-40 already at n = 1.

        ``factor`` is PTF's √T or FTP's 1; c ≥ 1 covers rounding (at most 1 + 2^-10 + 8u,
        :func:`dpfda.maths.summation.calibration_factor`), so μ is refused only above
        2^41·factor·(1 + 2^-9), where every n ≥ 1 is refused at release.  With a private
        radius the mean gets at least μ·sqrt(1 - share).
        """
        mu = self.budget_mu
        mean_mu = mu * math.sqrt(1.0 - float(self.radius_share or 0.0)) if self.private_radius else mu
        limit = 2.0 / NOISE_RESOLUTION * factor * (1.0 + 2.0**-9)
        if mean_mu <= limit:
            return
        given = (f"mu={self.mu!r}" if self.mu is not None
                 else f"epsilon={self.epsilon!r} with delta={self.delta!r} (mu={mu:.4g})")
        raise SpecError("mu" if self.mu is not None else "epsilon",
                        f"{given} is too large for {which}: the noise scale 2·bound"
                        + ("" if factor == 1.0 else "·sqrt(T)") + "/(n·mu) would be below 2^-40 of the bound "
                        "for every n >= 1, so rounding would erase the noise from the released mean; mu must "
                        f"be at most about {limit:.4g}" + (" for the mean's part" if self.private_radius else ""))

    def _private_radius(self, space: FunctionSpace) -> None:
        """``private_radius`` and its two numbers: an orthonormal space, a share and a quantile in (0, 1)."""
        if not isinstance(self.private_radius, bool):
            raise SpecError("private_radius", f"must be True or False, got {self.private_radius!r}")
        if not self.private_radius:
            if self.radius_share is not None or self.radius_quantile is not None:
                raise SpecError("radius_share" if self.radius_share is not None else "radius_quantile",
                                "radius_share and radius_quantile describe private_radius; give it too")
            return
        if not isinstance(space, OrthonormalSpace):
            raise SpecError("private_radius", f"the private quantile is of the fitted norms in a legendre or "
                                              f"fourier space; in a kernel space ({space.spec}) give B' with radius")
        for name, default in (("radius_share", 0.2), ("radius_quantile", 0.9)):
            value = getattr(self, name)
            value = default if value is None else _number(value, name)
            if not 0.0 < value < 1.0:
                raise SpecError(name, f"must lie strictly between 0 and 1, got {value!r}")
            object.__setattr__(self, name, value)

    def _budget(self) -> float:
        if self.mu is not None:
            if self.epsilon is not None or self.delta is not None:
                raise SpecError("mu", "give the budget once: mu, or epsilon with delta")
            mu = _number(self.mu, "mu")
            if not (math.isfinite(mu) and mu > 0):
                raise SpecError("mu", f"must be a finite number > 0, got {self.mu!r}")
        else:
            if self.epsilon is None and self.delta is None:
                raise SpecError("mu", "give the budget: mu, or epsilon with delta")
            if self.epsilon is None or self.delta is None:
                raise SpecError("epsilon" if self.epsilon is None else "delta",
                                "epsilon and delta go together (a budget as (epsilon, delta)-DP), or give mu")
            eps, delta = _number(self.epsilon, "epsilon"), _number(self.delta, "delta")
            if not (math.isfinite(eps) and eps > 0):
                raise SpecError("epsilon", f"must be a finite number > 0, got {self.epsilon!r}")
            if not 0 < delta < 1:
                raise SpecError("delta", f"must lie in (0, 1), got {self.delta!r}")
            mu = float(mu_from_epsilon_delta(eps, delta))
        if self.secure:
            try:
                check_secure_budget(mu)
            except ValueError as exc:
                raise SpecError("mu", str(exc)) from None
        return mu

    def _frame(self, space: FunctionSpace, domain: Domain, own_points: bool) -> PublicFrame | None:
        if (self.lower is None) != (self.upper is None):
            raise SpecError("lower" if self.lower is None else "upper",
                            "lower and upper go together (a public range of the values)")
        if self.lower is None:
            return None
        if self.clip is not None:
            raise SpecError("clip", "a range (lower, upper) gives PTF's clip: leave out clip")
        lower, upper = _bound(self.lower, "lower"), _bound(self.upper, "upper")
        if own_points and (np.ndim(lower) or np.ndim(upper)):
            raise SpecError("lower", "without a grid, lower and upper are numbers (a range over the whole "
                                     "domain): a range that varies needs the points it is given at, the grid")
        if isinstance(space, KernelSpace) and self.radius is None:
            raise SpecError("radius", f"a range of values bounds no RKHS norm, so it gives no B' in {space.spec}: "
                                      "give radius, a public bound on the RKHS norm of x - r in the data's units")
        if self.radius is not None:
            _number(self.radius, "radius")
        try:
            return PublicFrame(space, self.points, domain, lower, upper, radius=self.radius)
        except (TypeError, ValueError) as exc:
            argument = "radius" if str(exc).startswith("radius") else "lower, upper"
            raise SpecError(argument, str(exc)) from None

    def _radius(self) -> float:
        if self.frame is not None:
            radius = self.frame.radius
        elif self.radius is None:
            raise SpecError("radius", "private_radius needs a public cap on B' (the largest radius considered): "
                                      "radius in the data's units, or a public range with lower and upper"
                            if self.private_radius else
                            "give B' in the data's units, or a public range with lower and upper")
        else:
            radius = _number(self.radius, "radius")
        try:
            return check_radius(radius)
        except ValueError as exc:
            raise SpecError("radius", str(exc)) from None

    @property
    def own_points(self) -> bool:
        """Whether the curves are measured at their own points (no common grid)."""
        return self.grid is None

    def __repr__(self) -> str:
        budget = (f"mu={self.mu:g}" if self.mu is not None
                  else f"epsilon={self.epsilon:g}, delta={self.delta:g} (mu={self.budget_mu:.4g})")
        where = "own points" if self.own_points else f"T={self.points.size}"
        band = "" if self.frame is None else ", with a public range"
        space = self.space.spec if isinstance(self.space, FunctionSpace) else self.space
        return (f"ReleaseSpec({space}, {self.domain!r}, {where}{band}, B'={self.unit_radius:.4g} (mapped), "
                f"{budget}, secure={self.secure})")


def FTP(spec: ReleaseSpec) -> SpecifiedMechanism:
    """Fit-Then-Protect (Algorithm 1) with the public choices of ``spec``: μ-GDP by Theorem 6.

    The mechanism is :func:`~dpfda.ftp_mechanism` on the specification's
    grid on [0, 1], its B' (of the mapped data) and μ.
    """
    spec = _check_spec(spec)
    if spec.clip is not None:
        raise SpecError("clip", "FTP does not clip (clip is PTF's); leave it out or use PTF")
    spec._resolvable(1.0, "FTP")
    mech = _build("mu", lambda: ftp_mechanism(spec.unit_grid, spec.space, spec.unit_radius,  # type: ignore[arg-type]
                                               spec.budget_mu, secure=spec.secure))
    return SpecifiedMechanism(spec, mech)


def PTF(spec: ReleaseSpec) -> SpecifiedMechanism:
    """Protect-Then-Fit (Algorithm 2) with the public choices of ``spec``: μ-GDP by Proposition 9.

    The mechanism is :func:`~dpfda.ptf_mechanism` on the specification's
    grid on [0, 1], with its B', μ, and the frame's clip and weights (a range) or ``clip``.
    """
    spec = _check_spec(spec)
    if spec.private_radius:
        raise SpecError("private_radius", "private_radius chooses FTP's B'; PTF's clip is public (use FTP)")
    if spec.own_points:
        raise SpecError("grid", "PTF needs a grid: it clips and averages each point of one common public grid "
                                "over subjects, so it cannot take curves measured at their own points (FTP can; or "
                                "put each curve on a public grid first, e.g. with dpfda.Curves.on_grid, a map of "
                                "each record alone)")
    frame = spec.frame
    clip, weights = (frame.clip, frame.weights) if frame is not None else (spec.clip, None)
    mech = _build("clip", lambda: ptf_mechanism(spec.unit_grid, spec.space,  # type: ignore[arg-type]
                                                spec.unit_radius, spec.budget_mu, clip=clip, weights=weights,
                                                secure=spec.secure))
    return SpecifiedMechanism(spec, mech)


def _check_spec(spec: object) -> ReleaseSpec:
    if not isinstance(spec, ReleaseSpec):
        raise TypeError(f"spec must be a dpfda.ReleaseSpec, got {type(spec).__name__}")
    return spec


_CHOICES = ("space", "domain", "grid", "lower", "upper", "radius", "clip", "weights", "mu", "secure")


def _build(argument: str, make: Callable[[], Mechanism]) -> Mechanism:
    """The mechanism's constructor, called now.

    What it refuses (after the spec's own checks) is named by the choice its message starts
    with, or else by ``argument``.
    """
    try:
        return make()
    except (TypeError, ValueError) as exc:
        first = str(exc).split(" ", 1)[0]
        raise SpecError(first if first in _CHOICES else argument, str(exc)) from None


class SpecifiedMechanism:
    """FTP or PTF with a specification's public choices, whose ``release`` takes data in its units.

    Attributes
    ----------
    spec : ReleaseSpec
    mechanism : Mechanism
        The library's mechanism on the mapped data (grid on [0, 1], B' of the mapped data).
    """

    def __init__(self, spec: ReleaseSpec, mechanism: Mechanism) -> None:
        self.spec = spec
        self.mechanism = mechanism

    def __repr__(self) -> str:
        return f"{self.mechanism.method.upper()}({self.spec!r})"

    def release(self, curves: ArrayLike | Curves, rng: np.random.Generator | None = None) -> SpecifiedRelease:
        """One release of ``curves``: μ-GDP, the noise drawn last.

        ``curves``: an array (n, T) on the specification's grid, or a :class:`dpfda.Curves` on its
        domain (a common grid equal to the specification's, or each subject on its own points).
        ``rng``: the numpy generator of the noise when ``secure=False`` (required then); leave it
        out with OpenDP's noise.  Each record is mapped on its own into the frame
        (:meth:`dpfda.PublicFrame.to_unit`), then :meth:`dpfda.Mechanism.release` checks the
        rest and adds the noise.

        After the noise is drawn, the curator's diagnostics of ``curves`` (those ``python -m dpfda
        release`` prints to stderr: :func:`~dpfda.practice.diagnostics.curator_report`) are
        computed, and if they flag anything — more than ``diagnostics.CLIP_WARNING_SHARE`` (5%) of
        the values clipped (data in other units than the range?), more than
        ``diagnostics.SHRINK_WARNING_SHARE`` (25%) of the fits shrunk onto the ball (B' far below
        the curves?), subjects with too few points, a periodic domain observed at both ends — a
        :class:`~dpfda.CuratorWarning` says what, and what to check.  Its text is computed from
        the data without noise, so it is not private: it is for the curator, never published, and
        it is not part of the release, its pickle or its record; the release is the same, bit for
        bit, whether the warning is shown or not, and a failure of the diagnostics is a warning
        too, never an error.  Silence it with the standard filters,
        ``warnings.filterwarnings("ignore", category=dpfda.CuratorWarning)``; turned into an error
        (``"error"``), it discards the release it flags.
        """
        spec = self.spec
        if spec.secure and rng is not None:
            raise TypeError("rng: this specification draws the noise with OpenDP (secure=True), which "
                            "cannot be seeded; leave rng out, or make the spec with secure=False")
        units = spec.units
        if isinstance(curves, Curves) and curves.units is not None:
            if units is not None and curves.units != units:
                raise ValueError(f"curves: their units {curves.units!r} are not the specification's {units!r}")
            units = curves.units
        data = self._on_grid(curves)
        frame = spec.frame
        mapped = frame.to_unit(data) if frame is not None else data
        if spec.private_radius:  # B' chosen with a share of the budget, then FTP with the rest
            mech = self.mechanism
            chosen = ftp_private_radius(mapped, mech.geometry.grid, spec.space, spec.budget_mu,  # type: ignore[arg-type]
                                        radius_max=float(mech.radius), share=spec.radius_share,  # type: ignore[arg-type]
                                        quantile=spec.radius_quantile, secure=spec.secure, rng=rng)  # type: ignore[arg-type]
            released = SpecifiedRelease(spec, chosen.release, units=units, private_radius=chosen)
        else:
            released = SpecifiedRelease(spec, self.mechanism.release(mapped, rng), units=units)
        self._warn_curator(data)  # after the noise is drawn; it only reads the data
        return released

    def _warn_curator(self, data: np.ndarray | Curves) -> None:
        """The command line's diagnostics of ``data`` (:func:`curator_report`), as a CuratorWarning if they flag any.

        The report reads the data in the data's units, as ``python -m dpfda release`` gives them
        to it (with a private radius, B' is the cap); nothing it computes reaches the release.
        """
        spec, mech = self.spec, self.mechanism
        try:
            report = curator_report(data, mech.geometry, float(mech.radius), frame=spec.frame,
                                    clip=mech.clip if spec.frame is None else None)
        except Exception as exc:  # noqa: BLE001 - advisory: a record must not decide whether a release is returned
            warnings.warn(CuratorWarning(
                f"the curator's diagnostics of the data of this {mech.method.upper()} release could not be computed "
                f"({type(exc).__name__}: {exc}); the release is made and unaffected. Look at the data with "
                "dpfda.practice.diagnostics.curator_report(...) (NOT private, for the curator only)"), stacklevel=3)
            return
        if not report["warnings"]:
            return
        radius = "B' (radius" + ("; with private_radius, the cap" if spec.private_radius else "") + ")"
        if spec.frame is not None:
            check = f"Check the data's units against the public range (lower, upper), and {radius} against the curves"
        elif mech.clip is not None:
            check = f"Check the data's units against PTF's clip (clip, or B' times the basis' norm) and {radius}"
        else:
            check = f"Check the data's units, and {radius} against the size of the curves"
        if report["both_ends"]:
            check += ("; a periodic domain is one period long, its stop the same instant as its start (hours 0 "
                      "to 24: leave hour 24 out, it is the next day's hour 0)")
        warnings.warn(CuratorWarning(
            f"the curator's diagnostics flag the data of this {mech.method.upper()} release ({report['note']}): "
            + " ".join(report["warnings"]) + f" {check}. A release as planned keeps every choice public; a choice "
            "changed because of this warning is a function of the data that no mu covers, and a second release "
            "spends budget again. Every figure: dpfda.practice.diagnostics.curator_report(...); silence with "
            "warnings.filterwarnings('ignore', category=dpfda.CuratorWarning)"), stacklevel=3)

    def _on_grid(self, curves: ArrayLike | Curves) -> np.ndarray | Curves:
        """The data as the mechanism takes them: an array on the grid, or Curves on their own points."""
        spec = self.spec
        if not isinstance(curves, Curves):
            if spec.own_points:
                raise TypeError("curves: this specification has no grid (each subject on its own points); "
                                "give a dpfda.Curves, or make the spec with grid=...")
        domain = (spec.domain.start, spec.domain.stop)  # type: ignore[union-attr]  # a Domain after checks
        if not isinstance(curves, Curves):  # an array on the specification's grid, in the data's units
            if hasattr(type(curves), "columns"):  # a table (pandas' DataFrame): its header must be the grid
                self._check_header(curves.columns)  # type: ignore[union-attr]  # a table: checked above
            curves = as_curves(curves, spec.points, domain, name="curves", grid_name="the specification's grid")
        if curves.common and curves.values is not None and curves.values.ndim != 2:
            raise ValueError(f"curves: a specification releases one data set (n, T), one row per subject; "
                             f"got shape {curves.values.shape} (a batch of data sets: release each on its own)")
        if tuple(curves.domain) != domain:
            raise ValueError(f"curves: their domain {tuple(curves.domain)} is not the specification's {domain}")
        if curves.common and not spec.own_points:
            if curves.points is None or not np.array_equal(curves.points, spec.points):
                raise ValueError("curves: their points are not the specification's grid (give each subject "
                                 "on its own points, Curves(values, points, domain), or the spec without a grid)")
            return curves.values  # type: ignore[return-value]  # common: values set
        return curves  # each subject on its own points: FTP fits each alone, PTF refuses them by name


    def _check_header(self, columns: Iterable[object]) -> None:
        """A table's column labels, read as numbers, must be the specification's grid in order."""
        try:
            labels = np.array([float(c) for c in columns])  # type: ignore[arg-type]  # refused below if not
        except (TypeError, ValueError):
            raise ValueError("curves: the table's column labels are not numbers, so its columns cannot be "
                             "matched to the specification's grid; order the columns as the grid and pass "
                             "table.to_numpy(), or give a dpfda.Curves") from None
        points = self.spec.points
        if not np.array_equal(labels, points):
            raise ValueError(f"curves: the table's columns {labels.tolist()} are not the specification's grid "
                             f"{np.asarray(points).tolist()} in order (reorder them, e.g. table[grid], or give "
                             "a dpfda.Curves)")


class SpecifiedRelease:
    """A release in the data's units, with its own record.

    Calling it evaluates the private mean curve at points of the domain, in the data's units
    (post-processing).  ``unit_release`` is the library's :class:`~dpfda.Release` of the mapped
    data, on [0, 1]; ``units`` what the values are (the specification's or the curves'), or None;
    ``private_radius`` the :class:`~dpfda.mechanisms.radius.PrivateRadius` of both steps when B'
    was chosen from the data (``ReleaseSpec(private_radius=True)``), else None.
    """

    def __init__(self, spec: ReleaseSpec, release: Release, *, units: str | None = None,
                 private_radius: PrivateRadius | None = None) -> None:
        self.spec = spec
        self.unit_release = release
        self.units = units
        self.private_radius = private_radius

    @property
    def mu(self) -> float:
        """The budget the release spent (μ-GDP), both steps with a private radius."""
        if self.private_radius is not None:
            return float(self.private_radius.budget()["mu"])
        return float(self.unit_release.mu)

    @property
    def n(self) -> int:
        """The number of curves released over (public under replacement of one subject's curve)."""
        return int(self.unit_release.n)

    def __repr__(self) -> str:
        return f"SpecifiedRelease({self.unit_release.method.upper()}, n={self.n}, mu={self.mu:g})"

    def _unit(self, x: ArrayLike) -> np.ndarray:
        return self.spec.domain.to_unit(np.atleast_1d(np.asarray(x, dtype=float)))  # type: ignore[union-attr]

    def __call__(self, x: ArrayLike) -> np.ndarray:
        """The private mean curve at points ``x`` of the domain, in the data's units."""
        frame = self.spec.frame
        if frame is not None:
            return frame.values(self.unit_release, x)
        return self.unit_release(self._unit(x))

    def noise_sd(self, x: ArrayLike) -> np.ndarray:
        """The privacy noise's standard deviation at points ``x`` of the domain, in the data's units."""
        scale = 1.0 if self.spec.frame is None else self.spec.frame.scale
        return scale * self.unit_release.noise_sd(self._unit(x))

    def record(self, at: ArrayLike | None = None, *, combine: str | None = None) -> dict:
        """Everything to publish (:func:`~dpfda.practice.publish.release_record`), at points ``at`` of the domain.

        ``at`` defaults to 101 equally spaced points of the domain.  The record also names
        the units (``units``: the domain's name and what the values are), a
        budget given as (ε, δ) is stated beside μ (``budget_requested``) with its δ among
        the record's, and curves on their own points say so (``sampling``).
        """
        spec = self.spec
        domain: Domain = spec.domain  # type: ignore[assignment]  # a Domain after checks
        if at is None:
            at = np.linspace(domain.start, domain.stop, DISPLAY_POINTS)
        deltas = list(DELTAS)
        if spec.delta is not None and spec.delta not in deltas:
            deltas.append(float(spec.delta))
        released = self.unit_release if self.private_radius is None else self.private_radius
        if spec.frame is not None:
            record = release_record(released, at, frame=spec.frame, deltas=deltas, combine=combine)
        else:
            record = release_record(released, at, domain=domain, deltas=deltas, combine=combine)
        record["units"] = {"points": domain.name, "values": "value" if self.units is None else self.units}
        if spec.epsilon is not None:
            record["budget_requested"] = {
                "epsilon": float(spec.epsilon), "delta": float(spec.delta),  # type: ignore[arg-type]
                "mu": spec.budget_mu,
                "how": "the largest mu whose mu-GDP implies (epsilon, delta)-DP (dpfda.mu_from_epsilon_delta)"}
        if spec.own_points:
            record["sampling"] = ("each subject fitted on its own points (no common grid); the release is laid "
                                  f"out on {DISPLAY_POINTS} equally spaced points of the domain for the record's "
                                  "grid")
        return record
