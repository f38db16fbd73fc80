"""Tolerances from rounding-error bounds (dpfda.maths.rounding)."""

from __future__ import annotations

import numpy as np
import pytest

from dpfda.maths.rounding import solve_rtol
from dpfda.maths.summation import gamma


def test_the_bound_is_condition_number_times_gamma():
    A = np.diag([1.0, 1e-3])
    assert solve_rtol(A, 5) == pytest.approx(1e3 * gamma(40), rel=1e-12)


def test_the_bound_covers_the_error_of_an_ill_conditioned_solve():
    """Hilbert matrices (κ up to 1.6e10 at d = 8): the relative error of tr(A⁻¹), computed
    in floating point against its exact value from fractions, stays below the bound."""
    from fractions import Fraction

    for d in range(2, 9):
        exact = [[Fraction(1, i + j + 1) for j in range(d)] for i in range(d)]
        A = np.array([[float(x) for x in row] for row in exact])
        inv = _exact_inverse(exact)
        trace = sum(inv[i][i] for i in range(d))
        computed = np.trace(np.linalg.inv(A))
        # A's entries are themselves rounded: a relative u per entry, inside the bound's γ_T
        assert abs(computed - float(trace)) / float(trace) <= solve_rtol(A, 2 * d), d


def _exact_inverse(M):
    from fractions import Fraction

    d = len(M)
    aug = [list(row) + [Fraction(int(i == j)) for j in range(d)] for i, row in enumerate(M)]
    for c in range(d):
        p = next(r for r in range(c, d) if aug[r][c] != 0)
        aug[c], aug[p] = aug[p], aug[c]
        piv = aug[c][c]
        aug[c] = [x / piv for x in aug[c]]
        for r in range(d):
            if r != c and aug[r][c] != 0:
                f = aug[r][c]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[c])]
    return [row[d:] for row in aug]


@pytest.mark.parametrize("A, size, word", [
    (np.ones((2, 3)), 4, "square"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), 4, "finite"),
    (np.eye(2), 0, "size"),
    (np.eye(2), 2.5, "size"),
    (np.diag([1.0, 1e-15]), 4, "ill-conditioned"),
])
def test_refusals_name_the_argument(A, size, word):
    with pytest.raises(ValueError, match=word):
        solve_rtol(A, size)
