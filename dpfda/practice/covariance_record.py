"""The record published with a private covariance: everything public, and the whole budget.

:func:`covariance_record` is :func:`~dpfda.practice.publish.release_record` for a
:class:`~dpfda.mechanisms.covariance.CovarianceRelease`: one JSON-ready dictionary with the
released mean curve, covariance function and leading principal components on public
evaluation points, in the data's units, and every public parameter a reader needs.  The
budget it states is the whole spend, μ = sqrt(μ_mean² + μ_cov²) — the two Gaussian
mechanisms composed — with both parts and the (ε, δ) pairs the whole μ implies.

Units.  With a :class:`~dpfda.practice.realdata.PublicFrame` the curves were mapped to
y = (x − r)/scale before the release; the mean is mapped back by the frame, the covariance
is scale² times the released one (the public reference r shifts no covariance), and for a
space judged in L² (an orthonormal H_m) the eigenvalues are those of the covariance
operator on the data's domain (scale²·L·λ for a domain of length L) and the eigenfunctions
are normalised there (∫ψ(x)² dx = 1).  For a space judged on its grid (an RKHS, eq. 8) the
eigenvalues are those of the grid covariance divided by T, and the eigenfunctions have
mean square one on the grid.  Everything here is post-processing of the release.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._version import __version__
from ..mechanisms.covariance import CovarianceRelease
from ..mechanisms.privacy import epsilon_from_mu
from ..validation import check_int, check_positive
from .publish import DELTAS, evaluation_points, privacy_unit, space_description
from .realdata import Domain, PublicFrame

__all__ = ["covariance_record"]

_MECHANISMS = {
    "ftp": ("FTP covariance: each curve fitted in the ball of radius B'; the mean of the fits (Algorithm 1) "
            "and the mean of their outer products, each with Gaussian noise; the covariance is the second "
            "moment less the mean's outer product, projected onto the positive semidefinite cone"),
    "ptf": ("PTF covariance: each value clipped to [-c_j, c_j]; the mean of the clipped curves (Algorithm 2) "
            "and the mean of the outer products of clip(x)/c, each with Gaussian noise; the moment is "
            "fitted in the space, less the mean's outer product, projected onto the positive semidefinite cone"),
}


def _number(x: ArrayLike) -> float | list:
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr.tolist()


def covariance_record(release: CovarianceRelease, at: ArrayLike, *, frame: PublicFrame | None = None,
                      domain: Domain | None = None, components: int = 3,
                      deltas: Sequence[float] = DELTAS) -> dict:
    """Everything to publish about one private covariance, as a JSON-ready dictionary.

    Parameters
    ----------
    release : CovarianceRelease
        One release (no repetition axes) of :mod:`dpfda.mechanisms.covariance`.
    at : array (k,)
        Public evaluation points in the data's units.
    frame, domain
        As for :func:`~dpfda.practice.publish.release_record` (a frame maps back to the data's
        units; otherwise ``domain``, default [0, 1]).
    components : int
        How many leading principal components to publish (at most the space's dimension).
    deltas : sequence of float
        The δ at which the ε implied by the whole μ is stated.

    Returns
    -------
    dict
        ``mu`` (the whole budget), ``mu_mean``, ``mu_cov``, ``composition``,
        ``epsilon_delta``, ``privacy_unit``, ``n``, ``radius``, ``clip``, ``weights``,
        ``noise_scale`` (the mean's σ or σ_j and the second moment's σ_c, in the released
        units), ``space``, ``grid``, ``domain``, ``frame``, ``mean`` (points, values),
        ``covariance`` (points, values: a k×k list), ``components`` (eigenvalue, values at
        the points, normalisation), ``mechanism``, ``method``, ``noise``, ``secure`` and
        ``dpfda_version``.  Nothing in it is computed from the data but the two noisy outputs.
    """
    if not isinstance(release, CovarianceRelease):
        raise TypeError(f"release must be a dpfda CovarianceRelease, got {type(release).__name__}")
    if release.shape != ():
        raise ValueError(f"release must be one release, got repetitions of shape {release.shape}")
    if frame is not None and domain is not None:
        raise ValueError("give frame or domain, not both (a frame has its own domain)")
    components = check_int(components, "components", 1)
    if components > release.geometry.dim:
        raise ValueError(f"components must be at most the space's dimension {release.geometry.dim}, "
                         f"got {components}")
    at, t = evaluation_points(at, frame=frame, domain=domain)
    if frame is not None and not np.array_equal(frame.grid, release.grid):
        raise ValueError("the release was not made on this frame's grid")
    dom = frame.domain if frame is not None else (domain or Domain(0.0, 1.0, name="t"))
    scale = 1.0 if frame is None else frame.scale
    deltas = [check_positive(d, "delta") for d in deltas]
    if any(d >= 1 for d in deltas):
        raise ValueError("every delta must lie in (0, 1)")
    eps = np.atleast_1d(epsilon_from_mu(release.mu, np.asarray(deltas)))
    mean = frame.values(release.mean, at) if frame is not None else release.mean(t)
    cov = scale**2 * release.covariance(t, t)
    lam, _ = release.components(components)
    psi = release.eigenfunctions(t, components)
    l2 = release.geometry.metric == "IMSE"
    length = dom.length if l2 else 1.0
    mech = release.mechanism
    return {
        "dpfda_version": __version__,
        "mechanism": _MECHANISMS[release.method],
        "method": release.method,
        "noise": ("OpenDP vector Gaussian mechanism (secure=True)" if release.secure
                  else "numpy normal draws (secure=False): for teaching and simulation, not publication"),
        "secure": release.secure,
        "mu": float(release.mu),
        "mu_mean": float(release.mu_mean),
        "mu_cov": float(release.mu_cov),
        "composition": "mu = sqrt(mu_mean^2 + mu_cov^2): two Gaussian mechanisms on the same data, composed",
        "epsilon_delta": [{"epsilon": float(e), "delta": d} for e, d in zip(eps, deltas)],
        "privacy_unit": privacy_unit(),
        "n": int(release.n),
        "radius": float(release.radius),
        "clip": None if mech.clip is None else _number(mech.clip),
        "weights": None if mech.weights is None else _number(mech.weights),
        "noise_scale": {"mean": _number(release.mean.noise_scale), "second_moment": float(release.moment_scale),
                        "note": "in the released (mapped) units; PTF's second moment in units of c_j·c_l"},
        "space": space_description(release.space),
        "grid": {"points": _number(dom.from_unit(release.grid)), "unit": _number(release.grid)},
        "domain": {"start": dom.start, "stop": dom.stop, "name": dom.name},
        "frame": None if frame is None else {
            "lower": _number(frame.lower), "upper": _number(frame.upper),
            "reference_coef": _number(frame.reference), "scale": frame.scale,
            "note": "data mapped to y = (x - r(t))/scale before the release; mean and covariance mapped back",
        },
        "mean": {"points": _number(at), "values": _number(mean)},
        "covariance": {"points": _number(at), "values": _number(cov)},
        "components": [{"eigenvalue": float(scale**2 * length * lam[j]),
                        "values": _number(psi[j] / np.sqrt(length))} for j in range(components)],
        "components_note": ("eigenvalues of the covariance operator on the domain, eigenfunctions with "
                            "integral of the square 1 over it" if l2 else
                            "eigenvalues of the grid covariance divided by T, eigenfunctions with mean "
                            "square 1 on the grid") + "; the sign of each eigenfunction is arbitrary",
    }
