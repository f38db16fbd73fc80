"""Key of assignment 1 (instructor material: shipped in part1's autograder zip only, never to students).

Read by ``dpfda_book.teaching.grader`` in the autograder's own process, before anything of the
submission runs, and deleted from disk there. Each probe runs in the child process after the
submitted notebook's cells and returns plain numbers; each judge runs in the grader.

q2 (``imse_ftp``): the estimator is the mean of R values of ||θ̂ − θ̄||², each σ²·χ²_m with
σ = 2B'/(nμ) (the data's coefficient norms are at most their radius < B', so no fit is projected
and θ̂ − θ̄ is FTP's noise), so its law is σ²·χ²_{mR}/R exactly. The function is called at the
K = 24 settings below with fresh seeds (and once more at the first, with the same seed: the same
value must come back), and judged by ``dpfda_book.teaching.judging.DistributionTest`` on the
probability integral transforms of the 24 values (location and spread).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

import dpfda
from dpfda_book.teaching.grader import Key, Question, function_probe, letter_question, simulation_probe
from dpfda_book.teaching.judging import DistributionTest, agrees, chi2_z, same_seed_verdict, seeded_request

ANSWER = "b"

# ---- q1: PTF's sensitivity and noise scale, at fresh random points ---------------------------------

Q1_PROBE = '''
def probe(ns, request):
    import sympy as sp
    c, n, T, mu = sp.symbols("c n T mu", positive=True)
    d, s = ns.get("delta2"), ns.get("sigma_ptf")
    form = isinstance(d, sp.Expr) and isinstance(s, sp.Expr)
    values = []
    for point in request:
        subs = {sym: sp.Float(v, 45) for sym, v in zip((c, n, T, mu), point)}
        values.append([str(sp.N(sp.sympify(d).subs(subs), 40)), str(sp.N(sp.sympify(s).subs(subs), 40))])
    return {"form": form, "value": values}
'''


def _points(rng: np.random.Generator, k: int, bounds: list[tuple[float, float]]) -> list[list[str]]:
    """k points, each coordinate uniform in its bounds, as 17-digit decimal strings (exact decimals)."""
    return [[f"{rng.uniform(lo, hi):.16e}" for lo, hi in bounds] for _ in range(k)]


def _q1_request(rng: np.random.Generator) -> list[list[str]]:
    return _points(rng, 5, [(0.5, 3.0), (5.0, 500.0), (1.0, 100.0), (0.1, 3.0)])


def _q1_judge(request: list[list[str]], value: object, rng: np.random.Generator) -> bool:
    if not isinstance(value, list) or len(value) != len(request):
        return False
    mpmath.mp.dps = 60
    for point, got in zip(request, value):
        c, n, t, mu = (mpmath.mpf(v) for v in point)
        delta2 = 2 * c * mpmath.sqrt(t) / n
        if not (isinstance(got, list) and len(got) == 2 and agrees(got[0], mpmath.nstr(delta2, 50), 1e-30)
                and agrees(got[1], mpmath.nstr(delta2 / mu, 50), 1e-30)):
            return False
    return True


# ---- q2: FTP's IMSE by simulation, judged by its distribution -------------------------------------

#: (n, m, radius, B', mu, R), with m·R = MR at every setting.
MR = 2880
SETTINGS: list[tuple[int, int, float, float, float, int]] = [
    (n, m, radius, round(radius * ratio, 4), mu, MR // m)
    for n in (20, 30, 40, 50)
    for m in (12, 16, 24)
    for radius, ratio, mu in (((0.5, 1.05, 2.0), (2.0, 1.5, 0.5)) if n in (20, 40)
                              else ((1.0, 1.25, 1.0), (1.5, 1.1, 0.7)))
]
TEST = DistributionTest.one_group(len(SETTINGS))

Q2_PROBE = simulation_probe("imse_ftp", '''
n, m, radius, B, mu, R = setting
rng = np.random.default_rng([seed, 0])
space, grid = dpfda.LegendreSpace(m), dpfda.uniform_grid(2 * m)
theta = rng.normal(size=(n, m))
theta *= rng.uniform(0, radius, size=(n, 1)) / np.linalg.norm(theta, axis=1, keepdims=True)
X = theta @ space.at(grid).Phi.T
try:
    return float(f(X, grid, space, B, mu, theta.mean(axis=0), R, np.random.default_rng([seed, 1])))
except Exception:
    return None
''', imports='import numpy as np\nimport dpfda')


def _q2_request(rng: np.random.Generator) -> dict:
    return seeded_request(SETTINGS, rng)


def law(settings: list = SETTINGS) -> tuple[np.ndarray, np.ndarray]:
    """(mean, degrees of freedom) of the estimator's law mean·χ²_df/df at each setting."""
    mean = np.array([m * dpfda.ftp_sigma(n, B, mu) ** 2 for n, m, _, B, mu, _ in settings])
    return mean, np.array([m * R for _, m, _, _, _, R in settings], dtype=float)


def z_values(values: np.ndarray, settings: list = SETTINGS) -> np.ndarray:
    """The probability integral transforms (as N(0, 1) quantiles) of values at the settings."""
    mean, df = law(settings)
    return chi2_z(values, mean, df)


def _q2_judge(request: dict, value: object, rng: np.random.Generator) -> bool:
    return same_seed_verdict(request, value, SETTINGS, lambda values: TEST.verdict(z_values(values)).passed)


def draw(reps: int, rng: np.random.Generator, variant: str = "reference") -> np.ndarray:
    """``reps`` × K values of the estimator under its exact law, or of a mistaken variant.

    ``mu 2 % off`` (the function run at 0.98μ), ``mean over coefficients`` (divided by m),
    ``closed form, jittered`` (mσ²·(1 + 10⁻⁹·N(0, 1))).
    """
    mean, df = law()
    m = np.array([s[1] for s in SETTINGS], dtype=float)
    if variant == "closed form, jittered":
        return mean * (1 + 1e-9 * rng.standard_normal((reps, len(SETTINGS))))
    values = mean * rng.chisquare(df, size=(reps, len(SETTINGS))) / df
    if variant == "mu 2 % off":
        return values / 0.98**2
    if variant == "mean over coefficients":
        return values / m
    if variant != "reference":
        raise ValueError(variant)
    return values


VARIANTS = ("mu 2 % off", "mean over coefficients", "closed form, jittered")

# ---- q4 (q3: the shared multiple-choice question) ---------------------------------------------------

Q4_PROBE = function_probe("composed_mu", "mus", 'values.append(float(f(list(mus))))')


def _q4_request(rng: np.random.Generator) -> list[list[float]]:
    return [list(rng.uniform(0.05, 3.0, size=int(k))) for k in rng.integers(1, 8, size=6)]


def _q4_judge(request: list[list[float]], value: object, rng: np.random.Generator) -> bool:
    return (isinstance(value, list) and len(value) == len(request)
            and all(agrees(v, math.sqrt(sum(x * x for x in mus)), 1e-9) for mus, v in zip(request, value)))


KEY = Key("part1", {
    "q1": Question(2, Q1_PROBE, _q1_request, _q1_judge,
                   form="delta2 and sigma_ptf must be sympy expressions.",
                   failure="At points the grader drew, your expressions do not equal the exact ones."),
    "q3": letter_question(ANSWER),
    "q4": Question(1, Q4_PROBE, _q4_request, _q4_judge, form="composed_mu must be a function.",
                   failure="At budgets the grader drew, your function does not return the composed budget."),
    "q2": Question(4, Q2_PROBE, _q2_request, _q2_judge, form="imse_ftp must be a function.",
                   failure=("At 24 settings the grader drew (data, dimensions, budgets, seeds), the values your "
                            "function returned do not have the distribution of the intended Monte Carlo "
                            "estimator (its mean and its spread), or the same seed did not give the same value.")),
})
