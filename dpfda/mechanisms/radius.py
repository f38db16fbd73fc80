"""Choosing the fitting radius B': by a public rule, or privately for part of the budget.

FTP is μ-GDP for every B' fixed before the data are seen; B' trades noise (σ = 2B'/(nμ))
against shrinkage (curves beyond the ball are pulled onto it).  Two ways to choose it:

**A public rule** (:func:`public_radius`).  If every value of every curve lies in a public
range [L, U] over the whole domain (a device's range, a climate's record, a growth
standard), then every curve has L²[0, 1] norm at most R = max(abs(L), abs(U)), and so has its
orthogonal projection onto an orthonormal H_m (Legendre, Fourier), whose norm is the
Cameron–Martin norm: B' = R puts no curve's projection outside the ball.  (Centring on a
public reference first, as :class:`dpfda.PublicFrame` does, gives a smaller B'.)

**A private choice** (:func:`private_radius`, :func:`ftp_private_radius`).  Spend part
of the budget on a private quantile of the per-curve fitted norms: each curve is fitted in
a public ball of radius ``radius_max`` (a per-record map with values in [0, radius_max]),
and OpenDP's quantile mechanism (``make_private_quantile``, the exponential mechanism of
Smith (2011) over public candidates, pure ε-DP) picks B' among public candidates.  Then FTP
runs with that B' and the rest of the budget.

*The composed guarantee.*  The quantile step is ε-DP for one replaced record (OpenDP's
privacy map at symmetric distance 2, on vectors of the public size n).  An ε-DP mechanism
is μ_q-GDP with μ_q = :func:`gdp_of_pure_dp` (ε): the trade-off function of an ε-DP
mechanism is at least f_{ε,0}, that of randomised response (Wasserman and Zhou; Dong, Roth
and Su, §2), and μ_q is (within 1e-6) the smallest μ for which G_μ <= f_{ε,0}, checked
rigorously through privacy profiles: for these symmetric trade-off functions, f_{ε,0} >= G_μ
iff δ_RR(ε') <= δ_μ(ε') for every ε' >= 0 (the primal–dual view of Dong, Roth and Su; δ_μ
as in :func:`dpfda.delta_from_mu`).  FTP with B' fixed by the first step is μ_r-GDP, and
GDP composes adaptively as sqrt(μ_q² + μ_r²) (:func:`dpfda.compose`; the paper's §2.2),
which :func:`ftp_private_radius` keeps at the budget μ.  The test compares G_μ with f_{ε,0}
directly on a fine grid, independently of the profile check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_positive
from ..maths.curves import Curves
from ..maths.fitting import BallLeastSquares
from ..maths.spaces import FunctionSpace, OrthonormalSpace
from .irregular import check_own_points_space
from .mechanism import ftp
from .pipelines import Release, check_radius
from .privacy import compose, delta_from_mu

__all__ = ["PrivateRadius", "public_radius", "gdp_of_pure_dp", "fitted_norms", "private_radius",
           "ftp_private_radius"]


def public_radius(lower: float, upper: float) -> float:
    """B' = max(abs(L), abs(U)) for curves whose values all lie in the public range [L, U] (see module)."""
    lo, hi = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"lower and upper must be finite with lower < upper, got {lower!r}, {upper!r}")
    return check_radius(max(abs(lo), abs(hi)))


def _rr_delta(eps: float, eps_prime: np.ndarray) -> np.ndarray:
    """δ(ε') of randomised response with parameter ε (the dominating pair of ε-DP), ε' <= ε."""
    return (math.exp(eps) - np.exp(eps_prime)) / (1.0 + math.exp(eps))


def _gdp_dominates(mu: float, eps: float, points: int = 4000) -> bool:
    """Rigorous check of δ_RR(ε') <= δ_μ(ε') on [0, ε], both decreasing in ε'.

    On each cell [a, b] of a grid, δ_RR <= δ_RR(a) and δ_μ >= δ_μ(b): the check
    δ_RR(a) <= δ_μ(b) on every cell (with a relative margin of 1e-9 for the rounding of
    the two formulas) proves the inequality on the whole interval.
    """
    grid = np.linspace(0.0, eps, points + 1)
    left = _rr_delta(eps, grid[:-1])
    right = np.asarray(delta_from_mu(mu, grid[1:]), dtype=float)
    return bool(np.all(left * (1 + 1e-9) <= right))


@lru_cache(maxsize=256)  # a pure function of ε; ftp_private_radius's search asks the same values each call
def gdp_of_pure_dp(epsilon: float) -> float:
    """A μ (within 1e-6 of the smallest) such that every ε-DP mechanism is μ-GDP.

    Bisection on μ of the rigorous check of the module docstring; the returned μ passes it.

    Examples
    --------
    >>> mu = gdp_of_pure_dp(0.5)
    >>> 0.5 < mu < 1.0
    True
    """
    eps = check_positive(epsilon, "epsilon")
    lo, hi = 0.0, max(1.0, 2.0 * eps)
    while not _gdp_dominates(hi, eps):
        hi *= 2.0
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        if _gdp_dominates(mid, eps):
            hi = mid
        else:
            lo = mid
    return hi


def fitted_norms(X: ArrayLike | Curves, grid: ArrayLike | None, space: FunctionSpace,
                 radius_max: float) -> np.ndarray:
    """||θ̂_i|| of each curve's fit in the public ball of radius ``radius_max``: (n,), in [0, radius_max].

    ``X``: an array (n, T) on ``grid``, or a :class:`dpfda.Curves` (each subject on its points).
    A per-record map: one replaced curve changes one entry.
    """
    radius_max = check_radius(radius_max)
    check_own_points_space(space)
    space = cast(OrthonormalSpace, space)  # checked just above
    if isinstance(X, Curves):
        rows = []
        for t, x in X.subjects():
            Phi = space.basis(t)
            ok = t.size >= space.m and np.linalg.eigvalsh(Phi.T @ Phi)[0] > 1e-12 * max(
                np.linalg.eigvalsh(Phi.T @ Phi)[-1], 1.0)
            rows.append(np.linalg.norm(BallLeastSquares(Phi).solve(x, radius_max).coef) if ok else 0.0)
        norms = np.array(rows)
    else:
        geom = space.at(grid)  # type: ignore[arg-type]  # None: check_grid's named TypeError
        norms = np.linalg.norm(BallLeastSquares(geom.Phi).solve(np.asarray(X, dtype=float), radius_max).coef,
                               axis=-1)
    return np.minimum(norms, radius_max)


def private_radius(norms: ArrayLike, candidates: ArrayLike, epsilon: float,
                   quantile: float = 0.9) -> float:
    """OpenDP's ε-DP quantile of ``norms`` over the public ``candidates``: one of the candidates.

    ``norms`` (n,) are per-record values in [0, max(candidates)] (:func:`fitted_norms`); n is
    public.  The scale is found by OpenDP's ``binary_search_param`` so that the privacy map at
    symmetric distance 2 (one record replaced) is at most ``epsilon``.
    """
    import opendp.prelude as dp  # here: an optional dependency, only the private choice needs it

    dp.enable_features("contrib")
    eps = check_positive(epsilon, "epsilon")
    cands = np.unique(np.asarray(candidates, dtype=float))
    if cands.size < 2 or not np.all(np.isfinite(cands)) or cands[0] <= 0:
        raise ValueError("candidates must be at least two finite radii > 0")
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile!r}")
    values = [float(v) for v in np.clip(np.asarray(norms, dtype=float), 0.0, cands[-1])]
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(values))

    def make(scale: float) -> Any:  # an opendp Measurement (opendp is untyped)
        return dp.m.make_private_quantile(domain, dp.symmetric_distance(), dp.max_divergence(),
                                          candidates=[float(c) for c in cands], alpha=float(quantile),
                                          scale=scale)

    scale = dp.binary_search_param(make, d_in=2, d_out=eps, T=float)
    meas = make(scale)
    if meas.map(2) > eps:  # pragma: no cover - binary_search_param guarantees it
        raise RuntimeError("OpenDP's quantile does not meet the requested epsilon")
    return float(meas(values))


@dataclass(frozen=True)
class PrivateRadius:
    """An FTP release whose B' was chosen privately, and the guarantee of the two steps together.

    ``release.mu`` is the FTP step's μ_r; the pair (B', release) is ``mu_total``-GDP.
    """

    release: Release
    radius: float
    epsilon_quantile: float
    mu_quantile: float
    mu_release: float
    mu_total: float


def ftp_private_radius(X: ArrayLike | Curves, grid: ArrayLike | None, space: FunctionSpace,
                       mu: float, *, radius_max: float, share: float = 0.2,
                       quantile: float = 0.9, candidates: ArrayLike | None = None,
                       secure: bool = True, rng: np.random.Generator | None = None) -> PrivateRadius:
    """FTP with B' a private quantile of the fitted norms; μ-GDP in total (see module).

    A ``share`` of μ² goes to the quantile (μ_q = μ·sqrt(share)), the rest to FTP
    (μ_r = μ·sqrt(1 - share)), so sqrt(μ_q² + μ_r²) = μ.  ``candidates`` default: 100
    public radii geometrically spaced from radius_max/1000 to radius_max.  The quantile's
    noise always comes from OpenDP; ``secure`` and ``rng`` are FTP's.
    """
    mu = check_positive(mu, "mu")
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must lie in (0, 1), got {share!r}")
    radius_max = check_radius(radius_max)
    cands = np.geomspace(radius_max / 1000, radius_max, 100) if candidates is None else candidates
    mu_q, mu_r = mu * math.sqrt(share), mu * math.sqrt(1.0 - share)
    lo, hi = 0.0, mu_q  # the largest ε whose GDP bound is <= μ_q (that bound exceeds ε, so ε < μ_q)
    while hi - lo > 1e-4 * mu_q:
        mid = (lo + hi) / 2
        if gdp_of_pure_dp(mid) <= mu_q:
            lo = mid
        else:
            hi = mid
    eps_q = lo
    radius = private_radius(fitted_norms(X, grid, space, radius_max), cands, eps_q, quantile)
    release = ftp(X, grid, space, radius, mu_r, rng, secure=secure)
    mu_quantile = gdp_of_pure_dp(eps_q)
    return PrivateRadius(release=release, radius=radius, epsilon_quantile=eps_q, mu_quantile=mu_quantile,
                         mu_release=mu_r, mu_total=compose(mu_quantile, mu_r))
