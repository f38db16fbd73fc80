"""The record published with a release: one JSON-ready dictionary of everything public.

:func:`release_record` turns a release into a plain dictionary (ready for JSON): the
released curve on a public evaluation grid, in the data's units, and every public
parameter a reader needs — μ with the (ε, δ) pairs it implies, the privacy unit, B', the
grid, the clipping bounds, the space and its dimension, the mechanism, the noise source,
the library version.  :func:`evaluation_points` checks the evaluation points before any
noise is drawn; :func:`noise_record`, :func:`space_description` and :func:`privacy_unit`
are parts of the record.

The two other steps a practitioner needs around :func:`dpfda.ftp` and :func:`dpfda.ptf`
are also importable from here: :func:`~dpfda.practice.reading.read_curves`
(:mod:`dpfda.practice.reading`: curves from a CSV file or a DataFrame) and
:func:`~dpfda.practice.diagnostics.curator_diagnostics`
(:mod:`dpfda.practice.diagnostics`: what the curator, and nobody else, looks at after a
release; not private and never part of the record).

``python -m dpfda release`` (:mod:`dpfda.cli`) is these functions around the one release
path: a :class:`~dpfda.ReleaseSpec` of its options, :func:`dpfda.FTP` or :func:`dpfda.PTF`,
their ``release`` and the release's own ``record``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._version import __version__
from ..maths.spaces import FunctionSpace, OrthonormalSpace
from ..mechanisms.bands import BAND_COVERS, band_is_exact
from ..mechanisms.privacy import epsilon_from_mu
from ..mechanisms.radius import PrivateRadius
from ..mechanisms.release import Release
from ..validation import as_float_array, check_positive
from .diagnostics import (
    CLIP_WARNING_SHARE,
    SHRINK_WARNING_SHARE,
    curator_diagnostics,
    curator_report,
    diagnostics_text,
)
from .reading import COMBINE, read_curves, table_columns
from .realdata import Domain, PublicFrame

__all__ = [
    "PartialBudgetError",
    "CLIP_WARNING_SHARE",
    "COMBINE",
    "DELTAS",
    "SHRINK_WARNING_SHARE",
    "curator_diagnostics",
    "curator_report",
    "diagnostics_text",
    "evaluation_points",
    "noise_record",
    "privacy_unit",
    "read_curves",
    "release_record",
    "space_description",
    "table_columns",
]

DELTAS = (1e-5, 1e-6, 1e-7)
"""The δ values at which :func:`release_record` states the ε a μ-GDP release implies."""


class PartialBudgetError(ValueError):
    """A release that is one step of a composed release was given to the record alone.

    Its μ is that step's share, not what the whole release spent; pass the composed result
    (a :class:`~dpfda.mechanisms.radius.PrivateRadius`) so the record states the budget.
    """


def _number(x: ArrayLike) -> float | list:
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def space_description(space: FunctionSpace) -> dict:
    """The public description of a function space: its kind, parameters and spec (for JSON).

    The space's own :attr:`~dpfda.FunctionSpace.description`: ``spec`` is what
    :func:`dpfda.space_from_spec` (and ``--space``) reads back into the same
    space, with every number that defines it; ``kind`` and the parameters by name are for
    a reader.

    Examples
    --------
    >>> from dpfda import LegendreSpace
    >>> space_description(LegendreSpace(8))
    {'kind': 'legendre', 'dimension': 8, 'spec': 'legendre:8'}
    """
    if not isinstance(space, FunctionSpace):
        raise TypeError(f"space must be a dpfda FunctionSpace, got {type(space).__name__}")
    return space.description


def privacy_unit(combine: str | None = None) -> str:
    """The privacy unit and neighbouring relation of a release, in words (the record's ``privacy_unit``).

    Neighbouring datasets differ in one subject's curve, replaced by another curve: n is
    the same for both, so n is public (it is not a statistic the guarantee protects).
    ``combine`` names the rule (:data:`~dpfda.practice.reading.COMBINE`) that made each
    subject's one curve from their rows, if :func:`~dpfda.practice.reading.read_curves`
    used one.

    Examples
    --------
    >>> privacy_unit()
    "one subject's curve, replaced by another curve; n public (the same for neighbouring datasets)"
    """
    if combine is not None and combine not in COMBINE:
        raise ValueError(f"combine must be None or one of {sorted(COMBINE)}, got {combine!r}")
    rule = "" if combine is None else f" (made from all of that subject's rows: {COMBINE[combine]})"
    return f"one subject's curve{rule}, replaced by another curve; n public (the same for neighbouring datasets)"


def _domain(frame: PublicFrame | None, domain: Domain | None) -> Domain:
    """The domain of a frame, or ``domain`` (default [0, 1]), checked."""
    if frame is not None and not isinstance(frame, PublicFrame):
        raise TypeError(f"frame must be a dpfda PublicFrame, got {type(frame).__name__}")
    if frame is not None and domain is not None:
        raise ValueError("give frame or domain, not both (a frame has its own domain)")
    if domain is None:
        domain = frame.domain if frame is not None else Domain(0.0, 1.0, name="t")
    if not isinstance(domain, Domain):
        raise TypeError(f"domain must be a dpfda Domain, got {type(domain).__name__}")
    return domain


def evaluation_points(at: ArrayLike, *, frame: PublicFrame | None = None,
                      domain: Domain | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Public evaluation points checked against the domain: ``(at, t)``, in the data's units and on [0, 1].

    :func:`release_record` calls it; call it yourself before the release to check ``at``
    before any noise is drawn (the command line does).  ``frame`` or ``domain`` as for
    :func:`release_record`.
    """
    domain = _domain(frame, domain)
    at = as_float_array(at, "at")
    if at.ndim != 1 or at.size == 0:
        raise ValueError(f"at must be a non-empty one-dimensional array of points, got shape {at.shape}")
    return at, domain.to_unit(at)


def release_record(release: Release | PrivateRadius, at: ArrayLike, *, frame: PublicFrame | None = None,
                   domain: Domain | None = None, deltas: Sequence[float] = DELTAS,
                   combine: str | None = None) -> dict:
    """Everything to publish about one release, as a JSON-ready dictionary.

    Parameters
    ----------
    release : Release or PrivateRadius
        One release (no repetition axes) of :func:`dpfda.ftp` or :func:`dpfda.ptf`, or the
        result of :func:`dpfda.mechanisms.radius.ftp_private_radius` (B' chosen from the data
        with part of the budget).  The FTP step of the latter alone is refused
        (:class:`PartialBudgetError`): its μ is not what the release spent.
    at : array (k,)
        Public evaluation points, in the data's units, where the curve is published.
    frame : PublicFrame, optional
        The public frame the data were mapped with; the curve is then mapped back to the
        data's units (:meth:`dpfda.PublicFrame.values`), and the frame's public band, reference
        curve and scale are recorded.
    domain : Domain, optional
        Without a frame: the public interval mapped onto [0, 1] (default: [0, 1] itself).
    deltas : sequence of float
        The δ values at which the implied ε is stated (:func:`dpfda.epsilon_from_mu`).
    combine : {None, "mean"}
        The rule :func:`~dpfda.practice.reading.read_curves` used to make each subject's
        one curve, if any; stated in ``privacy_unit``.

    Returns
    -------
    dict
        ``curve`` (``points`` and ``values``), ``mechanism``, ``noise``, ``mu`` (the whole
        budget the release spent), ``epsilon_delta`` (a list of ``{"epsilon", "delta"}`` for
        that μ), ``budget`` (``mu``, ``mu_composed``, ``composition`` and ``parts``: each
        step with its μ and share of μ², and its ε for a pure-DP step), ``chosen_privately``
        (each parameter chosen from the data, with its value and how: ``{}`` when every
        parameter is public), ``privacy_unit`` (:func:`privacy_unit`), ``n``, ``radius``
        (B'), ``noise_scale`` (σ of the Gaussian step), ``clip`` and ``weights`` (PTF;
        ``None`` for FTP), ``space`` (:func:`space_description`: kind, parameters, spec),
        ``grid`` (the design points in the data's units and on [0, 1]), ``domain``, ``frame`` (or ``None``) and
        ``dpfda_version``.  Nothing in it is computed from the data except the released
        curve and coordinates and the parameters listed in ``chosen_privately``, each
        released under its part of the budget; ``n`` is public under the neighbouring
        relation (one subject's curve replaced by another).  The curator's figures about the
        data (:func:`~dpfda.practice.diagnostics.curator_diagnostics`) are never in it.

    Raises
    ------
    PartialBudgetError
        ``release`` is one step of a composed release (``Release.budget_step``).
    ValueError
        The release holds repetitions (one release is published at a time), or a point of
        ``at`` lies outside the domain.
    """
    composed = release if isinstance(release, PrivateRadius) else None
    if composed is not None:
        release = composed.release
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpfda Release or PrivateRadius, got {type(release).__name__}")
    step = getattr(release, "budget_step", None)
    if composed is None and step is not None:
        raise PartialBudgetError(
            f"this release is {step}; its record alone would understate what was spent and list B' as "
            "public: pass the PrivateRadius that ftp_private_radius returned to release_record")
    if release.shape != ():
        raise ValueError(f"release must be one release, got repetitions of shape {release.shape}")
    at, t = evaluation_points(at, frame=frame, domain=domain)
    if frame is not None and not np.array_equal(frame.grid, release.grid):
        raise ValueError("the release was not made on this frame's grid")
    domain = _domain(frame, domain)
    if frame is not None:
        curve = frame.values(release, at)
    else:
        curve = release(t)
    deltas = [check_positive(d, "delta") for d in deltas]
    if any(d >= 1 for d in deltas):
        raise ValueError("every delta must lie in (0, 1)")
    mechanism = {"ftp": "FTP (Algorithm 1: fit each curve in the ball, average, add Gaussian noise)",
                 "ptf": "PTF (Algorithm 2: clip, average, add Gaussian noise, fit)"}.get(
                     release.method, release.method)
    if composed is not None:
        budget = composed.budget()
        chosen = budget.pop("chosen_privately")
    else:
        mu = float(release.mu)
        budget = {"mu": mu, "mu_composed": mu, "composition": None,
                  "parts": [{"step": "release", "what": mechanism, "mu": mu, "share_of_mu_squared": 1.0}]}
        chosen = {}
    eps = epsilon_from_mu(budget["mu"], np.asarray(deltas))
    record = {
        "dpfda_version": __version__,
        "mechanism": mechanism,
        "method": release.method,
        "noise": ("OpenDP vector Gaussian mechanism (secure=True)" if release.secure
                  else "numpy normal draws (secure=False): for teaching and simulation, not publication"),
        "secure": release.secure,
        "mu": budget["mu"],
        "epsilon_delta": [{"epsilon": float(e), "delta": d} for e, d in zip(np.atleast_1d(eps), deltas)],
        "budget": budget,
        "chosen_privately": chosen,
        "privacy_unit": privacy_unit(combine),
        "n": int(release.n),
        "radius": float(release.radius),
        "noise_scale": _number(release.noise_scale),
        "clip": None if release.clip is None else _number(release.clip),
        "weights": None if release.weights is None else _number(release.weights),
        "space": space_description(release.space),
        "grid": {"points": _number(domain.from_unit(release.grid)), "unit": _number(release.grid)},
        "domain": {"start": domain.start, "stop": domain.stop, "name": domain.name},
        "frame": None if frame is None else _frame_record(frame),
        "curve": {"points": _number(at), "values": _number(curve)},
    }
    record.update(noise_record(release, t, 1.0 if frame is None else frame.scale))
    return record


def _band_number(values: np.ndarray) -> float | list:
    """A band's bounds: one number when they are the same at every point, else one per grid point."""
    return float(values[0]) if np.all(values == values[0]) else _number(values)


def _frame_record(frame: PublicFrame) -> dict:
    """The public frame's part of the record: the range, the centre curve, the scale, how B' was had."""
    orthonormal = isinstance(frame.space, OrthonormalSpace)
    return {
        "lower": _band_number(frame.lower), "upper": _band_number(frame.upper),
        ("reference_coef" if orthonormal else "reference_values"): _number(frame.reference),
        "reference": ("the least-squares fit in the space of the range's midpoints" if orthonormal else
                      "the range's midpoints at the grid points, interpolated linearly"),
        "scale": frame.scale, "radius_rule": frame.radius_rule,
        "note": "data mapped to y = (x - r(t))/scale before the release; the curve is mapped back",
    }


def noise_record(release: Release, t: ArrayLike, scale: float) -> dict:
    """The privacy noise in the data's units: ``noise_sd`` at the points ``t`` (on [0, 1]) and σ.

    ``scale``: data units per unit of the released values (a frame's scale; 1 without a frame).
    Public: computed from σ, the space, the grid and PTF's weights (:mod:`dpfda.mechanisms.bands`).
    """
    return {
        "noise_sd": _number(scale * release.noise_sd(t)),
        "noise_scale_data_units": _number(scale * np.asarray(release.noise_scale, dtype=float)),
        "noise_sd_note": ("standard deviation of the privacy noise at each curve point, in the data's "
                          "units; a band curve ± z·noise_sd covers " + BAND_COVERS
                          + ("" if band_is_exact(release.method, release.active) else
                             ". This PTF fit reached the ball B': the band is that of the linear fit"))
                          + (". noise_scale_data_units is sigma times the frame's scale" if scale != 1.0
                             else ""),
    }
