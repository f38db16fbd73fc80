"""Key of assignment 2 (instructor material: shipped in part2's autograder zip only, never to students).

Read by ``dpfda_book.teaching.grader`` in the autograder's own process, before anything of the
submission runs, and deleted from disk there. Each probe runs in the child process after the
submitted notebook's cells and returns plain numbers; each judge runs in the grader.

q2 (``grid_mse``): the grader calls the function with ``dpfda.ptf`` in the Gaussian-kernel space
of bandwidth h on T equally spaced points, at the K = 24 settings below. There nothing binds:
the observations stay inside PTF's clip (|f| ≤ 1 for the curves of ``dpfda_book.simulation.models.rkhs_curves``, and
(B' − 1)/σ₀ ≥ 7: :func:`clip_probability` bounds the chance that any value of a grading is
clipped), the noisy mean's interpolant stays inside the ball of radius B' (:func:`binding_margin`),
and the fit interpolates the T values. So each repetition's error on the grid is N(0, v·I_T) with
v = σ₀²/n + σ_j² (σ_j = 2B'√T/(nμ), PTF's noise), its grid MSE is v·χ²_T/T, and the estimator
(the mean over R repetitions) has the law v·χ²_{TR}/(TR) exactly. Judged by
``dpfda_book.teaching.judging.DistributionTest`` (location and spread), after a same-seed check.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import stats

import dpfda
from dpfda_book.teaching.grader import Key, Question, function_probe, letter_question, simulation_probe
from dpfda_book.teaching.judging import DistributionTest, agrees, chi2_z, same_seed_verdict, seeded_request

ANSWER = "c"

# ---- q1: the ratio in the collapse variable ------------------------------------------------------

Q1_PROBE = '''
def probe(ns, request):
    import sympy as sp
    x, T = sp.symbols("x T", positive=True)
    r = ns.get("ratio_x")
    form = isinstance(r, sp.Expr)
    values = [str(sp.N(sp.sympify(r).subs({x: sp.Float(a, 45), T: sp.Float(b, 45)}), 40)) for a, b in request]
    return {"form": form, "value": values}
'''


def _q1_request(rng: np.random.Generator) -> list[list[str]]:
    return [[f"{rng.uniform(0.01, 100.0):.16e}", f"{rng.uniform(1.0, 64.0):.16e}"] for _ in range(5)]


def _q1_judge(request: list[list[str]], value: object, rng: np.random.Generator) -> bool:
    if not isinstance(value, list) or len(value) != len(request):
        return False
    mpmath.mp.dps = 60
    for (a, b), got in zip(request, value):
        x, t = mpmath.mpf(a), mpmath.mpf(b)
        if not agrees(got, mpmath.nstr((x + 1) / (x + t), 50), 1e-30):
            return False
    return True


# ---- q2: PTF's grid MSE by simulation, judged by its distribution ---------------------------------

#: Bandwidth of the Gaussian kernel for T points: spacing / h = 2.7, smallest eigenvalue of K ≈ 0.95.
BANDWIDTH = {24: 0.016, 32: 0.012}
#: (T, n, sigma0, B', mu, R), with T·R = TR at every setting.
TR = 3840


def _sigma0(T: int, n: int, B: float, mu: float, share: float) -> float:
    """σ₀ giving the observation noise ``share`` of v (rounded to 3 digits)."""
    noise = (2 * B * math.sqrt(T) / (n * mu)) ** 2
    return round(math.sqrt(share / (1 - share) * noise * n), 3)


SETTINGS: list[tuple[int, int, float, float, float, int]] = [
    (T, n, _sigma0(T, n, B, mu, share), B, mu, TR // T)
    for T in (24, 32)
    for n, mu, B in ((256, 3.0, 10.0), (384, 2.0, 10.0), (512, 2.0, 8.0), (512, 3.0, 8.0))
    for share in (0.05, 0.1, 0.15)
]
TEST = DistributionTest.one_group(len(SETTINGS))

Q2_PROBE = simulation_probe("grid_mse", '''
T, n, sigma0, B, mu, R = setting
grid = dpfda.uniform_grid(T)
space = dpfda.KernelSpace(dpfda.gaussian_kernel(request["bandwidth"][str(T)]))
try:
    return float(f(dpfda.ptf, grid, space, n, sigma0, B, mu, R, np.random.default_rng(seed)))
except Exception:
    return None
''', imports='import numpy as np\nimport dpfda')


def _q2_request(rng: np.random.Generator) -> dict:
    return seeded_request(SETTINGS, rng, bandwidth={str(t): h for t, h in BANDWIDTH.items()})


def law(settings: list = SETTINGS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean v, degrees of freedom T·R, observation-noise share σ₀²/n / v) at each setting."""
    v, df, share = [], [], []
    for T, n, s0, B, mu, R in settings:
        geometry = dpfda.KernelSpace(dpfda.gaussian_kernel(BANDWIDTH[T])).at(dpfda.uniform_grid(T))
        sigma = dpfda.ptf_sigmas(n, B * geometry.eval_norm, mu)
        if not np.allclose(sigma, sigma[0], rtol=1e-12, atol=0):
            raise ValueError("PTF's noise is not the same at every point")
        v.append(s0**2 / n + sigma[0] ** 2)
        df.append(T * R)
        share.append(s0**2 / n / v[-1])
    return np.array(v), np.array(df, dtype=float), np.array(share)


def binding_margin(tail: float = 1e-15) -> float:
    """min over the settings of B' − (√(T/λ_min) + √(v·q/λ_min)), q the 1 − ``tail`` point of χ²_T.

    The interpolant of the noisy mean F̄ + e has RKHS norm at most √(F̄ᵀK⁻¹F̄) + √(eᵀK⁻¹e), with
    |F̄| ≤ 1 on the grid and eᵀK⁻¹e ≤ v·χ²_T/λ_min: a positive margin means that PTF's ball binds at
    no repetition of a grading but with probability at most ``tail`` per repetition.
    """
    v, _, _ = law()
    margins = []
    for (T, _, _, B, _, _), vi in zip(SETTINGS, v):
        lam = float(np.linalg.eigvalsh(dpfda.KernelSpace(dpfda.gaussian_kernel(BANDWIDTH[T]))
                                       .at(dpfda.uniform_grid(T)).K).min())
        q = float(stats.chi2.isf(tail, T))
        margins.append(B - math.sqrt(T / lam) - math.sqrt(vi * q / lam))
    return min(margins)


def clip_probability() -> float:
    """Bound on the probability that PTF clips any observation in one grading (|f| ≤ 1, clip at B')."""
    return float(sum(n * T * R * 2 * stats.norm.sf((B - 1) / s0) for T, n, s0, B, _, R in SETTINGS))


def z_values(values: np.ndarray, settings: list = SETTINGS) -> np.ndarray:
    """The probability integral transforms (as N(0, 1) quantiles) of values at the settings."""
    v, df, _ = law(settings)
    return chi2_z(values, v, df)


def _q2_judge(request: dict, value: object, rng: np.random.Generator) -> bool:
    return same_seed_verdict(request, value, SETTINGS, lambda values: TEST.verdict(z_values(values)).passed)


def draw(reps: int, rng: np.random.Generator, variant: str = "reference") -> np.ndarray:
    """``reps`` × K values of the estimator under its exact law, or of a mistaken variant.

    ``mu 2 % off`` (run at 0.98μ), ``no observation noise`` (σ₀ = 0), ``closed form, jittered``.
    """
    v, df, share = law()
    if variant == "closed form, jittered":
        return v * (1 + 1e-9 * rng.standard_normal((reps, len(SETTINGS))))
    scale = {"reference": v, "mu 2 % off": v * (share + (1 - share) / 0.98**2),
             "no observation noise": v * (1 - share)}[variant]
    return scale * rng.chisquare(df, size=(reps, len(SETTINGS))) / df


VARIANTS = ("mu 2 % off", "no observation noise", "closed form, jittered")

# ---- q4 (q3: the shared multiple-choice question) ---------------------------------------------------

Q4_PROBE = function_probe("n_star", "T, sigma0, mu, level", '''
got = f(int(T), sigma0, mu, level)
values.append(int(got) if hasattr(got, "__index__") and not isinstance(got, bool) else None)
''')


def n_star(T: int, sigma0: float, mu: float, level: float) -> int:
    """The reference: the smallest power of two n ≥ 8 with (x + 1)/(x + T) > level, B' = log n."""
    for k in range(3, 200):
        n = 2**k
        x = n * mu**2 * sigma0**2 / (4 * math.log(n) ** 2)
        if (x + 1) / (x + T) > level:
            return n
    raise ValueError("no n below 2^200")


def _q4_request(rng: np.random.Generator) -> list[list[float]]:
    return [[int(rng.integers(2, 17)), float(rng.uniform(0.2, 2.0)), float(rng.uniform(0.3, 3.0)),
             float(rng.uniform(0.5, 0.95))] for _ in range(6)]


def _q4_judge(request: list[list[float]], value: object, rng: np.random.Generator) -> bool:
    return (isinstance(value, list) and len(value) == len(request)
            and all(isinstance(v, int) and v == n_star(int(r[0]), *r[1:]) for r, v in zip(request, value)))


KEY = Key("part2", {
    "q1": Question(2, Q1_PROBE, _q1_request, _q1_judge, form="ratio_x must be a sympy expression.",
                   failure="At points (x, T) the grader drew, your expression does not equal the exact ratio."),
    "q3": letter_question(ANSWER),
    "q4": Question(1, Q4_PROBE, _q4_request, _q4_judge, form="n_star must be a function.",
                   failure="At settings the grader drew, your function does not return the right n (an int)."),
    "q2": Question(4, Q2_PROBE, _q2_request, _q2_judge, form="grid_mse must be a function.",
                   failure=("At 24 settings the grader drew (grids, sample sizes, noise levels, budgets, seeds), "
                            "the values your function returned do not have the distribution of the intended "
                            "Monte Carlo estimator (its mean and its spread), or the same seed did not give "
                            "the same value.")),
})
