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

The rounding of ``dpfda.tradeoff`` and of scipy's normal cdf are bounded by
:func:`dpfda.maths.rounding.tradeoff_atol` and :func:`~dpfda.maths.rounding.ndtr_atol`.
"""

from __future__ import annotations

import numpy as np

from dpfda_book.montecarlo import Z, bonferroni_z, proportion_se
from dpfda_book.settings import quick

__all__ = ["QUICK", "Z", "assert_mc_close", "bonferroni_z", "cancelling_mean_rtol", "machine_atol", "mc_mean_se",
           "proportion_se", "reps"]

QUICK = quick()


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
