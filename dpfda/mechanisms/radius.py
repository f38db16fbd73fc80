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
and Su, §2), and μ_q = 2Φ⁻¹(e^ε/(1 + e^ε)) is the smallest μ for which G_μ <= f_{ε,0}:
f_{ε,0} is piecewise linear with its kink on the diagonal, at α* = 1/(1 + e^ε), and G_μ is
convex, so G_μ <= f_{ε,0} everywhere iff G_μ(α*) <= α* (computed to a relative 10⁻¹²,
rounded up; tests compare it with 50-digit arithmetic and G_μ with f_{ε,0} on a fine grid).
FTP with B' fixed by the first step is μ_r-GDP, and
GDP composes adaptively as sqrt(μ_q² + μ_r²) (:func:`dpfda.compose`; the paper's §2.2),
which :func:`ftp_private_radius` makes equal to the budget μ: the quantile gets the largest
ε within its share, and FTP the rest of μ².

*The record.*  The FTP release of such a run is one step of a composed mechanism; its own μ
is μ_r, not the budget.  :func:`dpfda.practice.publish.release_record` takes the
:class:`PrivateRadius` and states the whole budget — μ in total with its (ε, δ), each step's
μ and share, and B' as chosen privately, how and from what public inputs — and refuses the
release step alone (:class:`~dpfda.practice.publish.PartialBudgetError`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.fitting import BallLeastSquares, row_norms
from ..maths.spaces import FunctionSpace, OrthonormalSpace
from ..validation import check_positive
from .ftp_ptf import ftp
from .irregular import check_own_points_space
from .pipelines import check_radius
from .privacy import compose
from .release import Release

__all__ = ["PrivateRadius", "public_radius", "gdp_of_pure_dp", "epsilon_of_gdp", "fitted_norms",
           "private_radius", "ftp_private_radius"]


def public_radius(lower: float, upper: float) -> float:
    """B' = max(abs(L), abs(U)) for curves whose values all lie in the public range [L, U] (see module)."""
    lo, hi = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"lower and upper must be finite with lower < upper, got {lower!r}, {upper!r}")
    return check_radius(max(abs(lo), abs(hi)))


_EPS_MAX = 700.0
"""Largest ε :func:`gdp_of_pure_dp` takes: e^ε must stay within the float range (e^709.8 overflows)."""


def gdp_of_pure_dp(epsilon: float) -> float:
    """The smallest μ such that every ε-DP mechanism is μ-GDP, rounded up: 2Φ⁻¹(e^ε/(1 + e^ε)).

    The trade-off function f_{ε,0} of ε-DP is piecewise linear with its kink at
    α* = 1/(1 + e^ε), where f_{ε,0}(α*) = α*; G_μ is convex, so G_μ <= f_{ε,0} everywhere
    iff G_μ(α*) <= α*, i.e. μ >= 2Φ⁻¹(1 − α*).  Computed as 2√2·erfinv(tanh(ε/2)) for
    ε <= 1 (no cancellation in 2p − 1 = tanh(ε/2)) and 2√2·erfcinv(2α*) above, each to a
    few units in the last place, then raised by a relative 2⁻⁴⁰ (≈ 9 × 10⁻¹³): never below
    the exact value and within 10⁻¹² of it (tests compare with 50-digit arithmetic).
    ``ValueError`` for ε above 700.

    Examples
    --------
    >>> mu = gdp_of_pure_dp(0.5)
    >>> 0.5 < mu < 1.0
    True
    """
    from scipy import special  # here: importing dpfda needs no scipy

    eps = check_positive(epsilon, "epsilon")
    if eps > _EPS_MAX:
        raise ValueError(f"epsilon must be at most {_EPS_MAX:g} (e^epsilon must stay within floating point), "
                         f"got {epsilon!r}")
    if eps <= 1.0:
        core = float(special.erfinv(math.tanh(eps / 2.0)))
    else:
        core = float(special.erfcinv(2.0 * float(special.expit(-eps))))
    return 2.0 * math.sqrt(2.0) * core * (1.0 + 2.0**-40)


def epsilon_of_gdp(mu: float) -> float:
    """The largest ε whose ε-DP mechanisms :func:`gdp_of_pure_dp` calls μ-GDP: ε with gdp_of_pure_dp(ε) <= μ.

    The inverse of 2Φ⁻¹(e^ε/(1 + e^ε)): ε = log Φ(μ/2) − log Φ(−μ/2), lowered by a few
    relative 10⁻¹² steps until :func:`gdp_of_pure_dp` (rounded up) is at most μ.
    """
    from scipy import special  # here: importing dpfda needs no scipy

    mu = check_positive(mu, "mu")
    eps = float(special.log_ndtr(mu / 2.0) - special.log_ndtr(-mu / 2.0))
    eps = min(eps, _EPS_MAX)
    while gdp_of_pure_dp(eps) > mu:
        eps *= 1.0 - 2.0**-38
    return eps


def fitted_norms(X: ArrayLike | Curves, grid: ArrayLike | None, space: FunctionSpace,
                 radius_max: float) -> np.ndarray:
    """||θ̂_i|| of each curve's fit in the public ball of radius ``radius_max``: (n,), in [0, radius_max].

    ``X``: an array (n, T) on ``grid``, or a :class:`dpfda.Curves` (each subject on its points).
    A per-record map, bit for bit: each fit and its norm are computed row by row
    (:class:`~dpfda.maths.fitting.BallLeastSquares`, :func:`~dpfda.maths.fitting.row_norms`),
    so one replaced curve changes one entry and no other.
    """
    radius_max = check_radius(radius_max)
    check_own_points_space(space)
    space = cast(OrthonormalSpace, space)  # checked just above
    given_curves = isinstance(X, Curves)
    curves = as_curves(X, grid)
    if given_curves:
        rows = []
        for t, x in curves.subjects():
            Phi = space.basis(t)
            ok = t.size >= space.m and np.linalg.eigvalsh(Phi.T @ Phi)[0] > 1e-12 * max(
                np.linalg.eigvalsh(Phi.T @ Phi)[-1], 1.0)
            rows.append(float(row_norms(BallLeastSquares(Phi).solve(x, radius_max).coef)) if ok else 0.0)
        norms = np.array(rows)
    else:
        geom = space.at(curves.grid)  # an array on grid: one design for all, each row fitted alone
        assert curves.values is not None  # an array makes curves on one common grid
        norms = row_norms(BallLeastSquares(geom.Phi).solve(curves.values, radius_max).coef)
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

    ``release.mu`` is the FTP step's μ_r; the pair (B', release) is ``mu_total``-GDP, at most
    the budget ``mu`` (equal to it up to the last bits).  The public inputs of the choice —
    the quantile, the cap ``radius_max``, the candidates — are kept for the record
    (:meth:`budget`, :func:`dpfda.practice.publish.release_record`).
    """

    release: Release
    radius: float
    epsilon_quantile: float
    mu_quantile: float
    mu_release: float
    mu_total: float
    mu: float = math.nan
    quantile: float = math.nan
    radius_max: float = math.nan
    candidates: tuple = ()

    def budget(self) -> dict:
        """The whole budget, for the record: μ, the composition, each step's μ and share, what was chosen."""
        mu = self.mu if math.isfinite(self.mu) else self.mu_total
        cands = np.asarray(self.candidates, dtype=float)
        return {
            "mu": float(mu),
            "mu_composed": float(self.mu_total),
            "composition": "mu-GDP steps compose to sqrt(sum of mu_i^2) (adaptive composition; the paper's "
                           "section 2.2, Dong, Roth and Su)",
            "parts": [
                {"step": "radius",
                 "what": (f"B' = the private {self.quantile:g}-quantile of the per-curve fitted norms "
                          "(OpenDP make_private_quantile, pure epsilon-DP; as mu-GDP by "
                          "dpfda.mechanisms.radius.gdp_of_pure_dp)"),
                 "epsilon": float(self.epsilon_quantile), "mu": float(self.mu_quantile),
                 "share_of_mu_squared": float((self.mu_quantile / mu) ** 2)},
                {"step": "release", "what": "FTP (Algorithm 1) with that B'", "mu": float(self.mu_release),
                 "share_of_mu_squared": float((self.mu_release / mu) ** 2)},
            ],
            "chosen_privately": {
                "radius": {
                    "value": float(self.radius),
                    "how": (f"the {self.quantile:g}-quantile of the norms of each curve's fit in the public "
                            f"ball of radius radius_max, released by OpenDP's quantile mechanism at "
                            f"epsilon = {self.epsilon_quantile:.6g} over the public candidates"),
                    "quantile": float(self.quantile),
                    "radius_max": float(self.radius_max),
                    "candidates": {"count": int(cands.size),
                                   "smallest": float(cands.min()) if cands.size else None,
                                   "largest": float(cands.max()) if cands.size else None},
                    "epsilon": float(self.epsilon_quantile),
                    "mu": float(self.mu_quantile),
                },
            },
        }


def ftp_private_radius(X: ArrayLike | Curves, grid: ArrayLike | None, space: FunctionSpace,
                       mu: float, *, radius_max: float, share: float = 0.2,
                       quantile: float = 0.9, candidates: ArrayLike | None = None,
                       secure: bool = True, rng: np.random.Generator | None = None) -> PrivateRadius:
    """FTP with B' a private quantile of the fitted norms; μ-GDP in total (see module).

    A ``share`` of μ² goes to the quantile: the largest ε whose GDP bound is at most
    μ·sqrt(share) (:func:`epsilon_of_gdp`), μ_q = :func:`gdp_of_pure_dp` (ε); FTP gets the
    rest, μ_r = the largest float with sqrt(μ_q² + μ_r²) <= μ, so the two steps spend the
    budget μ, to the last bits.  ``candidates`` default: 100 public radii geometrically
    spaced from radius_max/1000 to radius_max.  The quantile's noise always comes from
    OpenDP; ``secure`` and ``rng`` are FTP's.  Publish the result with
    :func:`dpfda.practice.publish.release_record`, which states the whole budget.
    """
    mu = check_positive(mu, "mu")
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must lie in (0, 1), got {share!r}")
    radius_max = check_radius(radius_max)
    cands = np.geomspace(radius_max / 1000, radius_max, 100) if candidates is None else candidates
    eps_q = epsilon_of_gdp(mu * math.sqrt(share))
    mu_quantile = gdp_of_pure_dp(eps_q)
    mu_r = math.sqrt((mu - mu_quantile) * (mu + mu_quantile))
    while compose(mu_quantile, mu_r) > mu:  # the rest of μ², rounded down
        mu_r = math.nextafter(mu_r, 0.0)
    radius = private_radius(fitted_norms(X, grid, space, radius_max), cands, eps_q, quantile)
    release = ftp(X, grid, space, radius, mu_r, rng, secure=secure)
    release.budget_step = (f"the FTP step of ftp_private_radius: mu = {mu_r!r} of a budget mu = {mu!r}, "
                           f"whose B' = {radius!r} was chosen from the data with the rest")
    return PrivateRadius(release=release, radius=radius, epsilon_quantile=eps_q, mu_quantile=mu_quantile,
                         mu_release=mu_r, mu_total=compose(mu_quantile, mu_r), mu=mu, quantile=float(quantile),
                         radius_max=radius_max, candidates=tuple(float(c) for c in np.asarray(cands, dtype=float)))
