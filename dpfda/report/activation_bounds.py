"""Bounds on PTF's activation probability in Table 1's settings, from the design alone.

Table 1's claim 6 reads the settings where PTF's constraint binds rarely, or often, under
every latent law; :func:`theory_activation` fixes them before any simulation, so that no
test selects its settings from the results it tests.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..mechanisms.pipelines import ptf_default_clip, ptf_sigmas
from ..simulation.studies import Setting, get_study

__all__ = ["theory_activation", "setting_activation"]


def _chi2_mix_bounds(lam: np.ndarray, x: float) -> tuple[float, float]:
    """Bounds (lower, upper) on P(Σ_k λ_k Z_k² > x), Z_k independent standard normal, λ_k ≥ 0.

    Lower: Q ≥ λ_(j)·(Z_1² + … + Z_j²) for the j largest λ, so P(Q > x) ≥ max_j P(χ²_j > x/λ_(j)).
    Upper: Chernoff, P(Q > x) ≤ inf_s exp(−s x) Π_k (1 − 2sλ_k)^(−1/2) over 0 < s < 1/(2 max λ).
    """
    from scipy.optimize import minimize_scalar  # here: `reproduce` draws its figures without scipy
    from scipy.stats import chi2

    lam = np.sort(np.asarray(lam, dtype=float)[np.asarray(lam) > 0])[::-1]
    if x <= 0 or lam.size == 0:
        return (1.0, 1.0) if x <= 0 else (0.0, 0.0)
    lower = max(float(chi2.sf(x / lam[j - 1], j)) for j in range(1, lam.size + 1))
    smax = 0.5 / lam[0]

    def log_bound(frac: float) -> float:
        s_ = frac * smax
        return -s_ * x - 0.5 * float(np.sum(np.log1p(-2.0 * s_ * lam)))

    res = minimize_scalar(log_bound, bounds=(1e-12, 1 - 1e-12), method="bounded", options={"xatol": 1e-10})
    upper = float(min(1.0, math.exp(min(0.0, res.fun))))
    return lower, upper


@lru_cache(maxsize=None)
def theory_activation(T: int, mu: float, n: int) -> tuple[float, float]:
    """Bounds on PTF's activation probability in Table 1's setting (T, μ, n), valid under every law.

    PTF's fit is active when its unconstrained coefficients β̄ + Ce leave the
    ball of radius B′ = 1.1 (β̄: the interpolant of f̄, ‖β̄‖ ≤ ‖f̄‖ ≤ B = 1; Ce:
    the interpolant of PTF's Gaussian noise).  By the triangle inequality
    P(‖Ce‖ > B′ + B) ≤ P(active) ≤ P(‖Ce‖ > B′ − B); ‖Ce‖² is a weighted sum of
    χ²₁ variables, whose tail is bounded from below and above rigorously
    (``_chi2_mix_bounds``).  Returns ``(lower, upper)``.  Uses the design
    only, never a simulation's results.
    """
    return setting_activation(get_study("table1", n=[int(n)]).subset(T=int(T), mu=float(mu)).settings[0])


@lru_cache(maxsize=None)
def setting_activation(s: Setting) -> tuple[float, float]:
    """:func:`theory_activation` for any noiseless RKHS setting whose latent curves have norm at most B <= B′.

    The same bracket, P(‖Ce‖ > B′ + B) <= P(active) <= P(‖Ce‖ > B′ − B), in the setting's own
    RKHS (any kernel, T, μ, n, B and B′), where PTF's unconstrained fit interpolates its noisy
    means whatever the weights.  Returns ``(lower, upper)``.
    """
    if not isinstance(s, Setting):
        raise TypeError(f"s must be a Setting, got {type(s).__name__}")
    if s.family != "kernel":
        raise ValueError("the bracket is derived for an RKHS (family='kernel'), where PTF's unconstrained "
                         "fit interpolates; in H_m it would depend on the weights")
    if s.sigma0 != 0.0 or s.radius < s.B:
        raise ValueError("the bracket needs noiseless data (sigma0 = 0) and a radius B' >= B, "
                         f"got sigma0={s.sigma0!r}, B'={s.radius!r}, B={s.B!r}")
    g = s.geometry()
    C = np.column_stack([g.coef_from_values(e) for e in np.eye(g.T)])
    sig = ptf_sigmas(s.n, ptf_default_clip(g, s.radius), s.mu)
    lam = np.linalg.eigvalsh((C * sig**2) @ C.T)
    return _chi2_mix_bounds(lam, (s.radius + s.B) ** 2)[0], _chi2_mix_bounds(lam, (s.radius - s.B) ** 2)[1]
