"""Key of assignment 3 (instructor material: shipped in part3's autograder zip only, never to students).

Read by ``dpfda_book.teaching.grader`` in the autograder's own process, before anything of the
submission runs, and deleted from disk there. Each probe runs in the child process after the
submitted notebook's cells and returns plain numbers; each judge runs in the grader.

q2 (``estimate_mu``): the estimate is a function of two independent counts, K₀ ~ Bin(R, Φ(−t))
values of N(0, 1) above t and K₁ ~ Bin(R, Φ(t − μ)) values of N(μ, 1) at or below it:
μ̂ = Φ⁻¹(1 − K₀/R) − Φ⁻¹(K₁/R). :func:`cdf` sums that law exactly (over the K₀ within 13 standard
deviations of their mean; the rest has probability below 10⁻³⁸), and each returned value gets its
randomised probability integral transform u = F(x⁻) + V·(F(x) − F(x⁻)), V uniform, with F(x⁻) and
F(x) read at x ∓ 10⁻⁹·max(1, |x|): exact but for atoms within that distance, whose total
probability is below 10⁻⁷. At the K = 24 settings below, judged by
``dpfda_book.teaching.judging.DistributionTest`` (location and spread), after a same-seed check.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import stats

from dpfda_book.teaching.grader import Key, Question, function_probe, letter_question, simulation_probe
from dpfda_book.teaching.judging import (
    DistributionTest,
    agrees,
    as_floats,
    same_seed_verdict,
    seeded_request,
    z_from_tails,
)

ANSWER = "a"

# ---- q1: mu from the two error rates ----------------------------------------------------------------

Q1_PROBE = '''
def probe(ns, request):
    import sympy as sp
    alpha, beta = sp.symbols("alpha beta", positive=True)
    expr = ns.get("mu_from_rates")
    form = isinstance(expr, sp.Expr) and expr.free_symbols <= {alpha, beta}
    values = [str(sp.N(sp.sympify(expr).subs({alpha: sp.Float(a, 45), beta: sp.Float(b, 45)}), 40))
              for a, b, _ in request]
    return {"form": form, "value": values}
'''


def _q1_request(rng: np.random.Generator) -> list[list[str]]:
    mpmath.mp.dps = 60
    out = []
    for _ in range(5):
        t, mu = mpmath.mpf(f"{rng.uniform(-1.0, 2.0):.16e}"), mpmath.mpf(f"{rng.uniform(0.2, 3.0):.16e}")
        out.append([mpmath.nstr(mpmath.ncdf(-t), 45), mpmath.nstr(mpmath.ncdf(t - mu), 45), mpmath.nstr(mu, 45)])
    return out


def _q1_judge(request: list[list[str]], value: object, rng: np.random.Generator) -> bool:
    return (isinstance(value, list) and len(value) == len(request)
            and all(agrees(got, mu, 1e-25) for (_, _, mu), got in zip(request, value)))


# ---- q2: mu by simulation, judged by its distribution ----------------------------------------------

#: (mu, t, R)
SETTINGS: list[tuple[float, float, int]] = [
    (mu, round(mu / 2 + d, 3), R)
    for mu in (0.5, 1.0, 2.0, 3.0)
    for d in (-0.5, 0.0, 0.5)
    for R in (20_000, 60_000)
]
TEST = DistributionTest.one_group(len(SETTINGS))


def rates(mu: float, t: float) -> tuple[float, float]:
    """(P(N(0,1) > t), P(N(μ,1) ≤ t)): the laws of K₀/R and K₁/R."""
    return float(stats.norm.sf(t)), float(stats.norm.cdf(t - mu))


def cdf(x: np.ndarray, mu: float, t: float, R: int, width: float = 13.0) -> np.ndarray:
    """P(μ̂ ≤ x) for each x (see the module docstring), over the K₀ within ``width`` sds of R·p₀."""
    p0, p1 = rates(mu, t)
    sd0 = math.sqrt(R * p0 * (1 - p0))
    k0 = np.arange(max(1, math.floor(R * p0 - width * sd0)), min(R - 1, math.ceil(R * p0 + width * sd0)) + 1)
    weight = stats.binom.pmf(k0, R, p0)
    q = stats.norm.isf(k0 / R)  # Φ⁻¹(1 − K₀/R)
    x = np.atleast_1d(np.asarray(x, dtype=float))[:, None]
    # μ̂ ≤ x  ⟺  K₁ ≥ c = ⌈R·Φ(q − x)⌉, c in 0..R; at_least[c] = P(K₁ ≥ c)
    at_least = stats.binom.sf(np.arange(-1, R), R, p1)
    threshold = np.ceil(R * stats.norm.cdf(q - x)).astype(np.int64)
    return np.sum(weight * at_least[np.clip(threshold, 0, R)], axis=1)


def z_values(values: np.ndarray, rng: np.random.Generator, settings: list = SETTINGS) -> np.ndarray:
    """Randomised probability integral transforms (as N(0, 1) quantiles) of one value per setting."""
    z = np.empty(len(settings))
    for i, ((mu, t, R), x) in enumerate(zip(settings, np.asarray(values, dtype=float))):
        if not np.isfinite(x):
            z[i] = np.inf
            continue
        delta = 1e-9 * max(1.0, abs(x))
        below, upto = cdf(np.array([x - delta, x + delta]), mu, t, R)
        u = below + rng.uniform() * (upto - below)
        z[i] = z_from_tails(u, 1 - u) if 0 < u < 1 else (-np.inf if u <= 0 else np.inf)
    return z


Q2_PROBE = simulation_probe("estimate_mu", '''
mu, t, R = setting
try:
    return float(f(mu, t, R, np.random.default_rng(seed)))
except Exception:
    return None
''')


def _q2_request(rng: np.random.Generator) -> dict:
    return seeded_request(SETTINGS, rng)


def _q2_judge(request: dict, value: object, rng: np.random.Generator) -> bool:
    return same_seed_verdict(request, value, SETTINGS, lambda values: TEST.verdict(z_values(values, rng)).passed)


def draw(reps: int, rng: np.random.Generator, variant: str = "reference") -> np.ndarray:
    """``reps`` × K estimates from the exact law of the counts, or of a mistaken variant.

    ``mu 2 % off`` (run at 0.98μ), ``power, not the miss rate`` (K₁ counted above t),
    ``returns mu, jittered`` (μ·(1 + 10⁻⁹·N(0, 1))).
    """
    out = np.empty((reps, len(SETTINGS)))
    for i, (mu, t, R) in enumerate(SETTINGS):
        if variant == "returns mu, jittered":
            out[:, i] = mu * (1 + 1e-9 * rng.standard_normal(reps))
            continue
        p0, p1 = rates(0.98 * mu if variant == "mu 2 % off" else mu, t)
        k0, k1 = rng.binomial(R, p0, size=reps), rng.binomial(R, p1, size=reps)
        if variant == "power, not the miss rate":
            k1 = R - k1
        out[:, i] = stats.norm.isf(k0 / R) - stats.norm.ppf(k1 / R)
    return out


def z_grid(values: np.ndarray, rng: np.random.Generator, points: int = 201) -> np.ndarray:
    """As :func:`z_values` for many rows at once, for the power tables (not for grading).

    F is read on a grid of ``points`` values over the range of each column (summing the K₀ within 8
    standard deviations: the rest has probability below 10⁻¹⁴) and interpolated linearly; the error
    in z is below 0.01.
    """
    z = np.empty_like(values, dtype=float)
    for i, (mu, t, R) in enumerate(SETTINGS):
        col = values[:, i]
        lo, hi = np.min(col), np.max(col)
        if hi - lo < 1e-6 * max(1.0, abs(lo)):  # one value (a constant): exact
            z[:, i] = z_values(np.array([lo]), rng, [(mu, t, R)])[0]
            continue
        grid = np.linspace(lo, hi, points)
        u = np.interp(col, grid, cdf(grid, mu, t, R, width=8.0))
        z[:, i] = z_from_tails(u, 1 - u)
    return z


VARIANTS = ("mu 2 % off", "power, not the miss rate", "returns mu, jittered")

# ---- q4 (q3: the shared multiple-choice question) ---------------------------------------------------

Q4_PROBE = function_probe("tradeoff_at", "alpha, mu", 'values.append(float(f(alpha, mu)))')


def _q4_request(rng: np.random.Generator) -> list[list[float]]:
    return [[float(rng.uniform(0.001, 0.999)), float(rng.uniform(0.1, 3.0))] for _ in range(9)]


def _q4_judge(request: list[list[float]], value: object, rng: np.random.Generator) -> bool:
    got = as_floats(value, len(request))
    if got is None:
        return False
    want = np.array([stats.norm.cdf(stats.norm.ppf(1 - a) - mu) for a, mu in request])
    return bool(np.all(np.abs(got - want) <= 1e-12 + 1e-7 * np.abs(want)))


KEY = Key("part3", {
    "q1": Question(2, Q1_PROBE, _q1_request, _q1_judge,
                   form="mu_from_rates must be a sympy expression in alpha and beta only.",
                   failure="At error rates the grader drew, your expression does not return mu."),
    "q3": letter_question(ANSWER),
    "q4": Question(1, Q4_PROBE, _q4_request, _q4_judge, form="tradeoff_at must be a function.",
                   failure="At levels and budgets the grader drew, your function does not return G_mu(alpha)."),
    "q2": Question(4, Q2_PROBE, _q2_request, _q2_judge, form="estimate_mu must be a function.",
                   failure=("At 24 settings the grader drew (budgets, thresholds, sizes, seeds), the values your "
                            "function returned do not have the distribution of the intended Monte Carlo "
                            "estimator (its mean and its spread), or the same seed did not give the same value.")),
})
