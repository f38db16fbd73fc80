"""Helpers for the tests: Monte Carlo sizes and standard-error tolerances.

Every stochastic check compares a Monte Carlo mean with an exact value and
allows ``z`` standard errors, SE = (sample standard deviation) / sqrt(reps).
The conventions are the package's (:mod:`dpfda_book.settings`): z = ``Z`` = 4, with
which a correct implementation fails a given check with probability about
6e-5 (the seeds are fixed, so a run is reproducible); when one test makes k
simultaneous comparisons, ``bonferroni_z(k)`` keeps the family-wise
false-alarm rate at the same level instead of loosening anything by hand;
quick mode is ``dpfda_book.settings.quick()``.

``machine_atol`` is the determinism contract's tolerance across machines (the
README's "Determinism"): a stored Monte Carlo summary computed with BLAS on
another machine agrees with this machine's to twice the rounding bound of each
repetition's numbers (:mod:`dpfda.maths.rounding`), plus the summation of the
mean; bit identity is checked only between two runs made in the same test.

``tradeoff_atol`` bounds the rounding of ``dpfda.tradeoff`` (scipy's normal cdf and quantile, no
BLAS), from their stated accuracy; the GDP chapter derives the same bound in its setup cell.
"""

from __future__ import annotations

import numpy as np

from dpfda_book.montecarlo import Z, bonferroni_z, proportion_se
from dpfda_book.settings import quick

__all__ = ["QUICK", "Z", "assert_mc_close", "bonferroni_z", "cancelling_mean_rtol", "machine_atol", "mc_mean_se",
           "ndtr_atol", "proportion_se", "reps", "tradeoff_atol"]

QUICK = quick()

# scipy's ndtr and ndtri are Cephes's, whose documentation states their accuracy as a peak relative
# error over its trials: ndtri 7.2e-16; ndtr 3.4e-14 on [-13, 0], through erfc (5.7e-14, taken).
R_NDTRI, R_NDTR = 7.2e-16, 5.7e-14


def _norm_pdf(x):
    return np.exp(-np.square(x) / 2) / np.sqrt(2 * np.pi)


def ndtr_atol(x, x_err=0.0):
    """How far ``scipy.special.ndtr(x)`` may be from Φ at a point within ``x_err`` of ``x``.

    Cephes computes the smaller tail as erfc/2 (R_NDTR of it) and the larger as 1 minus that (one
    more rounding, U); inside |x| < √2 as 1/2 + erf/2 (erf's 3.7e-16 and U: below R_NDTR of a tail
    >= 0.07). The argument's error costs the slope φ, taken with the tail at the end of
    [x − x_err, x + x_err] nearest 0, where both are largest.
    """
    from scipy import special

    from dpfda.maths.summation import U

    near = np.maximum(np.abs(x) - x_err, 0.0)
    return R_NDTR * special.ndtr(-near) + U + _norm_pdf(near) * x_err


def tradeoff_atol(a, mu, a_err=0.0):
    """How far ``dpfda.tradeoff(a, mu)`` = Φ(Φ⁻¹(1 − a) − μ) may be from G_μ at a level within ``a_err`` of ``a``.

    p = 1 − a rounds by U·p, so the exact 1 − a is within dp = a_err + U·p of p; Φ⁻¹'s slope
    1/φ(Φ⁻¹(q)) is taken at the end of [p − dp, p + dp] nearest 0 or 1, where it is largest (no
    first-order expansion); ndtri adds R_NDTRI·|z| and z − μ rounds by U·|z − μ|; then
    :func:`ndtr_atol` with that argument error. At a = 0 and 1 (a_err = 0) G is exact.
    """
    from scipy import special

    from dpfda.maths.summation import U

    a, mu, a_err = np.broadcast_arrays(*(np.asarray(v, float) for v in (a, mu, a_err)))
    p = 1 - a
    dp = a_err + U * p
    inside = (a > 0) & (a < 1)
    assert np.all(inside | (a_err == 0))
    tail = np.where(inside, np.minimum(p, 1 - p) - dp, 0.5)
    assert np.all(tail > 0)  # the argument's interval stays inside (0, 1)
    z = np.where(inside, special.ndtri(np.where(inside, p, 0.5)), 0.0)
    dz = dp / _norm_pdf(special.ndtri(tail)) + R_NDTRI * np.abs(z) + U * np.abs(z - mu)
    return np.where(inside, ndtr_atol(z - mu, dz), 0.0)


def machine_atol(values, scale, eps: float) -> float:
    """How far the mean of ``values`` (R repetitions) may be from the same mean computed elsewhere.

    The caller gives the rounding bound of each repetition: a value may be off by ``eps·scale_r``
    from its exact value on any machine whose arithmetic is IEEE double with any summation order
    (another BLAS kernel). Two machines are then at most 2·eps·mean(scale) apart, and each mean
    adds its own summation's γ_R·mean|value| (Higham, §3.1, any order).
    """
    from dpfda.maths.summation import gamma

    v = np.abs(np.asarray(values, dtype=float))
    s = np.broadcast_to(np.asarray(scale, dtype=float), v.shape)
    return 2 * (eps * float(np.mean(s)) + gamma(max(v.shape[0], 1)) * float(np.mean(v)))


def cancelling_mean_rtol(geom, n: int) -> float:
    """Relative error of a pair μ through the cancelling mean of fits (``dpfda_book.mechanisms.broken``) at
    scale 1, where it equals FTP's in exact arithmetic.

    Per dataset: Σx_i and Σ(fitted_i − x_i) round by γ_{2n} of the sums of magnitudes, about
    3n·||x||, and the fit of the mean curve amplifies that by ||Φ⁺||·||Φ|| = √κ(ΦᵀΦ): 3√κ·γ_{2n}·B';
    the fitted values carry their fits' errors (fit_rtol·B', which the fit of the mean gives back
    unamplified, Φ⁺Φ = I) and their own rounding (√κ·√d·γ_d·B'); the final fit adds fit_rtol·B'.
    Against the sensitivity 2B'/n, for both datasets: 3n·fit_rtol(ΦᵀΦ, 4n + T + d) covers it all.
    """
    from dpfda.maths.rounding import fit_rtol

    return 3 * n * fit_rtol(geom.Phi.T @ geom.Phi, 4 * n + geom.T + geom.dim)


def reps(full: int, quick: int) -> int:
    """Monte Carlo size: ``full`` normally, ``quick`` under DPFDA_QUICK=1."""
    return quick if QUICK else full


def mc_mean_se(samples, axis=0):
    """Sample mean and its standard error along ``axis``."""
    x = np.asarray(samples, dtype=float)
    r = x.shape[axis]
    return x.mean(axis=axis), x.std(axis=axis, ddof=1) / np.sqrt(r)


def assert_mc_close(samples, exact, *, z: float = Z, axis=0, what: str = "value"):
    """|mean(samples) - exact| <= z * SE, elementwise; a helpful message otherwise."""
    mean, se = mc_mean_se(samples, axis=axis)
    exact = np.asarray(exact, dtype=float)
    assert np.all(se > 0), f"{what}: zero standard error, the check would be vacuous"
    dev = np.abs(mean - exact) / se
    assert np.all(dev <= z), (
        f"{what}: Monte Carlo mean {mean} vs exact {exact}: {np.max(dev):.2f} SE apart "
        f"(allowed {z:.2f}; SE {se})"
    )
    return mean, se


def _solution_spans():
    gated = r"\{solution-start\}(.*?)\{solution-end\}"
    plain = r"\{solution\}[^\n]*\n(.*?)\n(?:`{3,}|:{3,})\s*$"
    return gated, plain


def text_outside_solutions(nb) -> str:
    """Notebook ``nb``'s sources with its solutions (gated spans, ``{solution}`` blocks) cut out."""
    import re

    gated, plain = _solution_spans()
    text = "\n".join(cell.source for cell in nb.cells)
    return re.sub(plain, "", re.sub(gated, "", text, flags=re.S), flags=re.S | re.M)


def solution_lines(nb) -> list[str]:
    """Lines of a chapter's solutions (gated spans, across cells, and ``{solution}`` blocks), longer
    than 30 characters and not also outside the solutions: the text a solution-free copy of
    notebook ``nb`` must not hold."""
    import re

    text = "\n".join(cell.source for cell in nb.cells)
    gated, plain = r"\{solution-start\}(.*?)\{solution-end\}", r"\{solution\}[^\n]*\n(.*?)\n(?:`{3,}|:{3,})\s*$"
    spans = re.findall(gated, text, re.S) + re.findall(plain, text, re.S | re.M)
    rest = re.sub(plain, "", re.sub(gated, "", text, flags=re.S), flags=re.S | re.M)
    lines = [line.strip() for span in spans for line in span.splitlines()]
    return [line for line in lines if len(line) > 30 and not line.startswith(":") and line not in rest]
