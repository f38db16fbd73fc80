"""Hidden checks of the autograded assignments (instructor material, shipped in the autograder zip only).

Each master notebook's hidden test is one line, ``assert hidden_checks.check(PART, NAME, globals())``:
a failing test shows students that line and nothing of the checks below. ``check`` returns False
(never raises) when the student's answer is missing, raises, or is wrong.

Simulation questions ask for a function; the checks call it again on fresh inputs (other seeds,
n, mu, B', spaces) and compare with dpfda's closed-form law within ``Z = 4`` Monte Carlo standard
errors, so a correct implementation fails with probability at most about 6e-5 per comparison.
The largest setting of each check is sized so that an error of 2 % in mu fails with high
probability; ``POWER`` lists the probability, computed from the same standard errors (normal
approximation): ``power(shift, rel_se) = Phi(shift / rel_se - Z)``. A function must also use the
generator it is given: the same seed gives the same value, two seeds give different values, so a
function returning a constant or a closed form fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from scipy.stats import norm

import dpfda

Z = 4.0


def power(shift: float, rel_se: float) -> float:
    """Probability that an estimate off by ``shift`` (relative) falls outside ``Z`` standard errors."""
    return float(norm.cdf(shift / rel_se - Z))


def _uses_generator(f: Callable[[np.random.Generator], float]) -> bool:
    a, b = f(np.random.default_rng(11)), f(np.random.default_rng(11))
    c = f(np.random.default_rng(12))
    return bool(np.all(np.isfinite([a, b, c])) and a == b and a != c)


def _legendre_data(n: int, m: int, radius: float, seed: int):
    rng = np.random.default_rng(seed)
    space, grid = dpfda.LegendreSpace(m), dpfda.uniform_grid(5 * m)
    theta = rng.normal(size=(n, m))
    theta *= rng.uniform(0, radius, size=(n, 1)) / np.linalg.norm(theta, axis=1, keepdims=True)
    return theta @ space.at(grid).Phi.T, grid, space, theta.mean(axis=0)


def _close(estimate: float, exact: float, rel_se: float) -> bool:
    return bool(abs(float(estimate) / exact - 1) <= Z * rel_se)


def _sym(expr: Any, target: sp.Expr) -> bool:
    return isinstance(expr, sp.Expr) and sp.simplify(expr - target) == 0


# ---- part 1 -------------------------------------------------------------------------------------

# imse_ftp at m = 5, R = 10_000: rel. se sqrt(2 / (m R)) = 0.0063; mu 2 % off moves the IMSE 4 %.
P1_BIG = (200, 5, 1.0, 1.3, 10_000)


def _p1_q1(g: dict) -> bool:
    c, n, T, mu = g["c"], g["n"], g["T"], g["mu"]
    return _sym(g["delta2"], 2 * c * sp.sqrt(T) / n) and _sym(g["sigma_ptf"], 2 * c * sp.sqrt(T) / (n * mu))


def _p1_q2_generator(g: dict) -> bool:
    X, grid, space, tbar = _legendre_data(40, 3, 1.0, 1)
    return _uses_generator(lambda rng: g["imse_ftp"](X, grid, space, 1.2, 1.0, tbar, 50, rng))


def _p1_q2_accuracy(g: dict) -> bool:
    for seed, (n, m, radius, mu, R) in enumerate([(60, 3, 0.9, 0.5, 2000), (30, 6, 1.0, 2.0, 2000), P1_BIG]):
        X, grid, space, tbar = _legendre_data(n, m, radius, 100 + seed)
        Bp = 1.05 * radius
        got = g["imse_ftp"](X, grid, space, Bp, mu, tbar, R, np.random.default_rng(200 + seed))
        if not _close(got, m * dpfda.ftp_sigma(n, Bp, mu) ** 2, math.sqrt(2 / (m * R))):
            return False
    return True


def _p1_q4(g: dict) -> bool:
    rng = np.random.default_rng(3)
    for k in (1, 2, 5):
        mus = rng.uniform(0.1, 2, size=k)
        # a student's formula may order its operations otherwise: 1e-9 is far above their rounding
        # (a few ulps), far below any wrong formula
        if not math.isclose(float(g["composed_mu"](list(mus))), float(np.sqrt(np.sum(mus**2))), rel_tol=1e-9,
                            abs_tol=0.0):
            return False
    return True


# ---- part 2 -------------------------------------------------------------------------------------

# grid_mse of PTF at T = 8, n = 400, sigma_0 = 0.1, B' = 8, R = 8000 (no ball binds: with B' = 3 and
# n = 100 the ball shrinks the release 7 %): the per-repetition MSE has a relative sd of about 0.5,
# rel. se 0.0056; mu 2 % off moves the MSE 4 % (its noise part is 99.8 %).
P2_BIG = (8, 400, 0.1, 8.0, 1.0, 8000)
P2_REL_SD = 0.75  # bound on the per-repetition relative sd of the grid MSE (measured: 0.5-0.74)


def _p2_q1(g: dict) -> bool:
    x, T, n, mu, s0, Bp = g["x"], g["T"], g["n"], g["mu"], g["s0"], g["Bp"]
    direct = (s0**2 / n + 4 * Bp**2 / (n * mu) ** 2) / (s0**2 / n + 4 * T * Bp**2 / (n * mu) ** 2)
    r = g["ratio_x"]
    return (isinstance(r, sp.Expr) and r.free_symbols <= {x, T} and _sym(r, (x + 1) / (x + T))
            and _sym(r.subs(x, n * mu**2 * s0**2 / (4 * Bp**2)), direct))


def _space():
    return dpfda.KernelSpace(dpfda.gaussian_kernel(0.2))


def _p2_q2_generator(g: dict) -> bool:
    grid = dpfda.uniform_grid(4)
    return _uses_generator(lambda rng: g["grid_mse"](dpfda.ptf, grid, _space(), 50, 0.5, 8.0, 1.0, 20, rng))


def _p2_q2_accuracy(g: dict) -> bool:
    settings = [(dpfda.ptf, (4, 400, 1.0, 8.0, 1.0, 1000)), (dpfda.ftp, (5, 200, 0.3, 4.0, 0.7, 1000)),
                (dpfda.ptf, P2_BIG)]
    for seed, (pipeline, (T, n, s0, Bp, mu, R)) in enumerate(settings):
        got = g["grid_mse"](pipeline, dpfda.uniform_grid(T), _space(), n, s0, Bp, mu, R,
                            np.random.default_rng(300 + seed))
        coords = T if pipeline is dpfda.ptf else 1
        exact = s0**2 / n + 4 * coords * Bp**2 / (n * mu) ** 2
        if not _close(got, exact, P2_REL_SD / math.sqrt(R)):
            return False
    return True


def _ratio(n: float, T: int, s0: float, mu: float) -> float:
    xx = n * mu**2 * s0**2 / (4 * np.log(n) ** 2)
    return (xx + 1) / (xx + T)


def _p2_q4(g: dict) -> bool:
    for T, s0, mu, level in [(2, 0.3, 1.0, 0.8), (4, 0.5, 0.5, 0.6), (8, 1.0, 2.0, 0.9)]:
        got = g["n_star"](T, s0, mu, level)
        if not (isinstance(got, (int, np.integer)) and got >= 8 and got & (got - 1) == 0):
            return False
        if not (_ratio(got, T, s0, mu) > level >= (_ratio(got // 2, T, s0, mu) if got > 8 else 0)):
            return False
    return True


# ---- part 3 -------------------------------------------------------------------------------------

# estimate_mu at mu = 1, t = 0.5, R = 400_000: se 0.0029; mu 2 % off is 0.02 away.


def _mu_se(mu: float, t: float, R: int) -> float:
    a, b = norm.cdf(-t), norm.cdf(t - mu)
    return math.sqrt(a * (1 - a) / R / norm.pdf(t) ** 2 + b * (1 - b) / R / norm.pdf(t - mu) ** 2)


P3_BIG = (1.0, 0.5, 400_000)


def _p3_q1(g: dict) -> bool:
    alpha, beta, Phi = g["alpha"], g["beta"], g["Phi"]
    expr = g["mu_from_rates"]
    if not (isinstance(expr, sp.Expr) and expr.free_symbols <= {alpha, beta}):
        return False
    for tv, mv in [(0.3, 1.0), (1.2, 0.5), (-0.4, 2.0)]:
        if abs(float(sp.N(expr.subs({alpha: Phi(-tv), beta: Phi(tv - mv)}))) - mv) >= 1e-9:
            return False
    return True


def _p3_q2_generator(g: dict) -> bool:
    return _uses_generator(lambda rng: g["estimate_mu"](1.0, 0.5, 1000, rng))


def _p3_q2_accuracy(g: dict) -> bool:
    for seed, (mu, t, R) in enumerate([(0.5, 0.25, 50_000), (2.0, 1.5, 50_000), P3_BIG]):
        got = float(g["estimate_mu"](mu, t, R, np.random.default_rng(400 + seed)))
        if not abs(got - mu) <= Z * _mu_se(mu, t, R):
            return False
    return True


def _p3_q4(g: dict) -> bool:
    alphas = np.linspace(0.01, 0.99, 9)
    for mu in (0.3, 1.0, 2.5):
        got = np.asarray([g["tradeoff_at"](float(a), mu) for a in alphas], dtype=float)
        if not np.allclose(got, norm.cdf(norm.ppf(1 - alphas) - mu), rtol=1e-7, atol=1e-12):
            return False
    return True


# ---- part 4 -------------------------------------------------------------------------------------

# coef_noise_sd at m = 8, R = 8000: R m = 64_000 coordinates, rel. se 1 / sqrt(2 R m) = 0.0028;
# mu 2 % off moves the sd 2 %.
P4_BIG = (150, 8, 1.0, 1.2, 8000)


def _p4_q1(g: dict) -> bool:
    return _sym(g["sd_factor"], sp.sqrt(2))


def _p4_q2_generator(g: dict) -> bool:
    X, grid, space, _ = _legendre_data(40, 3, 1.0, 2)
    return _uses_generator(lambda rng: g["coef_noise_sd"](X, grid, space, 1.1, 1.0, 30, rng))


def _p4_q2_accuracy(g: dict) -> bool:
    for seed, (n, m, radius, mu, R) in enumerate([(60, 3, 0.9, 0.5, 2000), (30, 5, 1.0, 2.0, 2000), P4_BIG]):
        X, grid, space, _ = _legendre_data(n, m, radius, 500 + seed)
        Bp = 1.05 * radius
        got = g["coef_noise_sd"](X, grid, space, Bp, mu, R, np.random.default_rng(600 + seed))
        if not _close(got, dpfda.ftp_sigma(n, Bp, mu), 1 / math.sqrt(2 * (R - 1) * m)):
            return False
    return True


def _p4_q4(g: dict) -> bool:
    for total, k in [(1.0, 2), (0.5, 3), (2.0, 1), (1.5, 7)]:
        if not math.isclose(float(g["split_budget"](total, k)), total / math.sqrt(k), rel_tol=1e-9, abs_tol=0.0):
            return False
    return True


# ---- multiple choice: answers spread over the letters ---------------------------------------------

ANSWERS = {"part1": "c", "part2": "a", "part3": "d", "part4": "b"}

CHECKS: dict[tuple[str, str], Callable[[dict], bool]] = {
    ("part1", "q1"): _p1_q1, ("part1", "q2_generator"): _p1_q2_generator,
    ("part1", "q2_accuracy"): _p1_q2_accuracy, ("part1", "q4"): _p1_q4,
    ("part2", "q1"): _p2_q1, ("part2", "q2_generator"): _p2_q2_generator,
    ("part2", "q2_accuracy"): _p2_q2_accuracy, ("part2", "q4"): _p2_q4,
    ("part3", "q1"): _p3_q1, ("part3", "q2_generator"): _p3_q2_generator,
    ("part3", "q2_accuracy"): _p3_q2_accuracy, ("part3", "q4"): _p3_q4,
    ("part4", "q1"): _p4_q1, ("part4", "q2_generator"): _p4_q2_generator,
    ("part4", "q2_accuracy"): _p4_q2_accuracy, ("part4", "q4"): _p4_q4,
}
for _part in ANSWERS:  # an accurate answer that ignores the generator (a closed form) scores nothing
    CHECKS[(_part, "q2_accuracy")] = (lambda g, gen=CHECKS[(_part, "q2_generator")], acc=CHECKS[(_part, "q2_accuracy")]:
                                      gen(g) and acc(g))
for _part, _letter in ANSWERS.items():
    CHECKS[(_part, "q3")] = lambda g, _letter=_letter: g.get("q3_answer") == _letter

POWER = {
    "part1 q2 (IMSE 4 % off)": power(0.04, math.sqrt(2 / (P1_BIG[1] * P1_BIG[4]))),
    "part2 q2 (MSE 4 % off)": power(0.04, 0.5 / math.sqrt(P2_BIG[5])),
    "part3 q2 (mu 2 % off)": float(norm.cdf(0.02 / _mu_se(*P3_BIG) - Z)),
    "part4 q2 (sd 2 % off)": power(0.02, 1 / math.sqrt(2 * P4_BIG[4] * P4_BIG[1])),
}


def check(part: str, name: str, answers: dict) -> bool:
    """Whether the answer to question ``name`` of assignment ``part`` passes; False on any error."""
    try:
        return bool(CHECKS[(part, name)](answers))
    except Exception:  # a student's answer may raise anything; the test only fails
        return False
