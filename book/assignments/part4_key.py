"""Key of assignment 4 (instructor material: shipped in part4's autograder zip only, never to students).

Read by ``dpfda_book.teaching.grader`` in the autograder's own process, before anything of the
submission runs, and deleted from disk there. Each probe runs in the child process after the
submitted notebook's cells and returns plain numbers; each judge runs in the grader.

q2 (``coef_noise_sd``): the released coefficients are θ̄ + N(0, σ²I_m), σ = 2B'/(nμ) (no fit is
projected: the data's coefficient norms are at most their radius < B'), so with ``ddof=1`` each
coefficient's variance over R releases is σ²·χ²_{R−1}/(R − 1), independently, and the square of
the pooled estimate has the law σ²·χ²_{m(R−1)}/(m(R−1)) exactly. The K = 24 settings form two
groups, each with its own location test: 12 with R = 2 releases of m = 24 to 40 coefficients,
where ``ddof=0`` halves the variance (the text asks for ``ddof=1``, and this group detects the
slip), and 12 with many releases, where an error of 2 % in μ shows. Judged by
``dpfda_book.teaching.judging.DistributionTest`` (location in each group, spread over all), after a
same-seed check.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

import dpfda
from dpfda_book.teaching.grader import Key, Question, function_probe, letter_question, simulation_probe
from dpfda_book.teaching.judging import DistributionTest, agrees, chi2_z, same_seed_verdict, seeded_request

ANSWER = "d"

# ---- q1: the factor by which the noise sd grows ----------------------------------------------------

Q1_PROBE = '''
def probe(ns, request):
    import sympy as sp
    Bp, n, mu = sp.symbols("Bp n mu", positive=True)
    r = ns.get("sd_factor")
    form = isinstance(r, sp.Expr)
    values = [str(sp.N(sp.sympify(r).subs({Bp: sp.Float(a, 45), n: sp.Float(b, 45), mu: sp.Float(c, 45)}), 40))
              for a, b, c in request]
    return {"form": form, "value": values}
'''


def _q1_request(rng: np.random.Generator) -> list[list[str]]:
    return [[f"{rng.uniform(0.1, 10.0):.16e}", f"{rng.uniform(5.0, 5000.0):.16e}", f"{rng.uniform(0.1, 3.0):.16e}"]
            for _ in range(5)]


def _q1_judge(request: list[list[str]], value: object, rng: np.random.Generator) -> bool:
    mpmath.mp.dps = 60
    want = mpmath.nstr(mpmath.sqrt(2), 50)
    return (isinstance(value, list) and len(value) == len(request)
            and all(agrees(got, want, 1e-30) for got in value))


# ---- q2: the noise sd by simulation, judged by its distribution ------------------------------------

#: (n, m, radius, B', mu, R): group A (R = 2, ddof) then group B (m·(R − 1) = MR1, mu).
MR1 = 5760
SETTINGS: list[tuple[int, int, float, float, float, int]] = [
    *[(n, m, radius, round(radius * 1.1, 4), mu, 2)
      for n in (20, 40) for m in (24, 32, 40) for radius, mu in ((0.5, 2.0), (2.0, 0.5))],
    *[(n, m, radius, round(radius * ratio, 4), mu, MR1 // m + 1)
      for n, ratio in ((30, 1.05), (60, 1.3)) for m in (16, 20, 32)
      for radius, mu in ((1.0, 1.0), (1.5, 0.7))],
]
GROUP_DDOF = tuple(range(12))
GROUP_MU = tuple(range(12, 24))
TEST = DistributionTest((GROUP_DDOF, GROUP_MU))

Q2_PROBE = simulation_probe("coef_noise_sd", '''
n, m, radius, B, mu, R = setting
rng = np.random.default_rng([seed, 0])
space, grid = dpfda.LegendreSpace(m), dpfda.uniform_grid(2 * m)
theta = rng.normal(size=(n, m))
theta *= rng.uniform(0, radius, size=(n, 1)) / np.linalg.norm(theta, axis=1, keepdims=True)
X = theta @ space.at(grid).Phi.T
try:
    return float(f(X, grid, space, B, mu, R, np.random.default_rng([seed, 1])))
except Exception:
    return None
''', imports='import numpy as np\nimport dpfda')


def _q2_request(rng: np.random.Generator) -> dict:
    return seeded_request(SETTINGS, rng)


def law(settings: list = SETTINGS) -> tuple[np.ndarray, np.ndarray]:
    """(σ², m(R − 1)): the square of the estimate has the law σ²·χ²_df/df."""
    return (np.array([dpfda.ftp_sigma(n, B, mu) ** 2 for n, _, _, B, mu, _ in settings]),
            np.array([m * (R - 1) for _, m, _, _, _, R in settings], dtype=float))


def z_values(values: np.ndarray, settings: list = SETTINGS) -> np.ndarray:
    """The probability integral transforms (as N(0, 1) quantiles) of the estimates (sds, > 0)."""
    values = np.asarray(values, dtype=float)
    var, df = law(settings)
    return np.where(values > 0, chi2_z(values**2, var, df), -np.inf)


def _q2_judge(request: dict, value: object, rng: np.random.Generator) -> bool:
    return same_seed_verdict(request, value, SETTINGS, lambda values: TEST.verdict(z_values(values)).passed)


def draw(reps: int, rng: np.random.Generator, variant: str = "reference") -> np.ndarray:
    """``reps`` × K estimates under their exact law, or of a mistaken variant.

    ``mu 2 % off`` (run at 0.98μ), ``ddof=0``, ``the variance`` (not its square root),
    ``closed form, jittered``.
    """
    var, df = law()
    R = np.array([s[-1] for s in SETTINGS], dtype=float)
    if variant == "closed form, jittered":
        return np.sqrt(var) * (1 + 1e-9 * rng.standard_normal((reps, len(SETTINGS))))
    sd = np.sqrt(var * rng.chisquare(df, size=(reps, len(SETTINGS))) / df)
    if variant == "mu 2 % off":
        return sd / 0.98
    if variant == "ddof=0":
        return sd * np.sqrt((R - 1) / R)
    if variant == "the variance":
        return sd**2
    if variant != "reference":
        raise ValueError(variant)
    return sd


VARIANTS = ("mu 2 % off", "ddof=0", "the variance", "closed form, jittered")

# ---- q4 (q3: the shared multiple-choice question) ---------------------------------------------------

Q4_PROBE = function_probe("split_budget", "total, k", 'values.append(float(f(total, int(k))))')


def _q4_request(rng: np.random.Generator) -> list[list[float]]:
    return [[float(rng.uniform(0.1, 5.0)), int(rng.integers(1, 13))] for _ in range(6)]


def _q4_judge(request: list[list[float]], value: object, rng: np.random.Generator) -> bool:
    return (isinstance(value, list) and len(value) == len(request)
            and all(agrees(v, total / math.sqrt(k), 1e-9) for (total, k), v in zip(request, value)))


KEY = Key("part4", {
    "q1": Question(2, Q1_PROBE, _q1_request, _q1_judge, form="sd_factor must be a sympy expression.",
                   failure="At points the grader drew, your expression does not equal the exact factor."),
    "q3": letter_question(ANSWER),
    "q4": Question(1, Q4_PROBE, _q4_request, _q4_judge, form="split_budget must be a function.",
                   failure="At budgets the grader drew, your function does not return the equal share."),
    "q2": Question(4, Q2_PROBE, _q2_request, _q2_judge, form="coef_noise_sd must be a function.",
                   failure=("At 24 settings the grader drew (data, dimensions, budgets, numbers of releases, seeds), "
                            "the values your function returned do not have the distribution of the intended "
                            "Monte Carlo estimator (its mean and its spread), or the same seed did not give the "
                            "same value.")),
})
