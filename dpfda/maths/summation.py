"""Means over curves whose rounding no single curve can steer (issue #19, defect 4).

Every mechanism of dpfda averages one point per curve — a clipped curve (PTF,
the box), a fit in the ball (FTP, the ellipsoid), a projection onto a ball —
and adds Gaussian noise calibrated to how far one curve can move that average.
In exact arithmetic the average of n points of a set C moves by at most
diam(C)/n when one curve changes.  A floating-point sum added curve after
curve does not keep that promise: its rounding depends on every partial sum,
so replacing one curve can change how all the others round (a sum that
crosses a power of two, with ties to even, moves by up to n ulps instead of
one).  The excess grows like n²·2⁻⁵⁴ relative to the sensitivity and passes
the noise's margin near n = 2^15 (Casacuberta et al., "Widespread
underestimation of sensitivity in differentially private libraries and how
to fix it", CCS 2022).

The fix here has two parts.

1. **Sum exactly** (:func:`fixed_point_mean`).  Each point is cut into three
   30-bit integer limbs on the fixed grid β·2⁻⁹⁰, where β is a power of two
   at least twice the *public* bound of the set (not of the data); the cut
   rounds towards zero, so it is a map of each curve by itself that keeps the
   point inside the set (``|q(v)| <= |v|`` in every coordinate: inside any box, any
   Euclidean ball, any ball in rotated coordinates).  The limbs are added in
   64-bit integers, which is exact in any order: the sum of the n cut points is
   known without error, and it does not depend on the order or the batch
   layout of the curves.  The cut changes a point by less than β·2⁻⁹⁰ — about
   1e-27 of the set's size.
2. **Round once, and pay for it.**  The exact sum is turned into a double and
   divided by n with four roundings, so the mean y satisfies, in every
   coordinate, ``|y − m| <= γ₄·|m| + 2⁻¹⁰⁷⁵`` where m is the exact mean of the
   cut points and γ₄ = 4u/(1 − 4u), u = 2⁻⁵³ (:data:`MEAN_ROUNDING`).  That
   last rounding is unavoidable for a mean stored as a double: the
   difference of two neighbours' means, 2c/n, is compared with an error of
   u·c, so the relative excess is about n·u — below the package's tolerance
   for n of a few million, 3.7e-9 at n = 2^25.  Each mechanism therefore
   computes a proven bound ε on the relative excess of its pair μ
   (``*_excess`` below) and, where ε exceeds :data:`ROUNDING_FREE` = 2⁻³¹,
   calibrates σ to the sensitivity Δ·(1 + ε) instead of Δ
   (:func:`calibration_factor`), as OpenDP adds its rounding bound to the
   sensitivity.  Below 2⁻³¹ σ keeps the paper's formula bit for bit, and pair
   μ stays below μ(1 + 2⁻³¹ + 4u) < μ(1 + 1e-9).

Why not only a rounding bound on the ordinary sum?  Its proven bound,
(n − 1)u·Σ|v_i| per sum, is n times the one above: about n²u relative to the
sensitivity, 12 % of σ at n = 2^25.  Why not shrink the set by ε instead of
inflating σ?  Shrinking biases the mean by ε·c, which is n·ε/2 noise
standard deviations — 0.5σ at n = 2^25; inflating σ by ε costs a relative
variance of 2ε, nothing visible.

The bounds per mechanism (proofs in the docstrings of the functions):

* PTF (:func:`box_mean_excess`): clipping is exact, the points lie in the box
  ∏[−c_j, c_j], and ``|Δy_j|`` <= 2c_j/n + 2γ₄c_j + 2⁻¹⁰⁷⁴, so
  ε = n·γ₄ + n·2⁻¹⁰⁷⁴/min_j c_j.  The secure path hands OpenDP the mean of
  fl(clip(x)/c) in [−1, 1] (division rounds monotonically, so the unit box is
  kept), with the same bound at c_j = 1.
* FTP (:func:`ball_mean_excess`): each fit is rotated to the original
  coordinates on its own and its norm is checked against B'(1 + 2⁻⁴⁰) with a
  rigorous upper bound (:func:`bound_ball_rows`; a row failing the check is
  scaled down, which never happens for d below a few thousand), so
  ||Δy|| <= 2B'(1 + ρ)/n + 2γ₄B'(1 + ρ) + 2√d·2⁻¹⁰⁷⁵ and
  ε = (1 + ρ)(1 + nγ₄) − 1 + n√d·2⁻¹⁰⁷⁵/B', ρ = 2⁻⁴⁰ + √d·2⁻¹⁰⁷⁵/B'.
* Designs: the same for the parts (box, fits, ball), plus the rounding of the
  linear maps applied after the mean (Φ·θ̄, the weights of a mix), measured in
  the noise's metric through ||L⁺||₂; see ``Design.rounding_excess``.

A bound above :data:`MAX_EXCESS` (a tiny bound at a huge n, or more than 2^32
curves) is refused with a ``ValueError``: floating point cannot resolve the
sensitivity there.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "MEAN_ROUNDING",
    "ROUNDING_FREE",
    "RECORD_SLACK",
    "MAX_EXCESS",
    "MAX_CURVES",
    "fixed_point_mean",
    "bound_ball_rows",
    "box_mean_excess",
    "ball_mean_excess",
    "calibration_factor",
    "gamma",
]

U = 2.0**-53
"""Unit roundoff of a double (round to nearest)."""

TINY_ERR = 2.0**-1074
"""Bound on the absolute error of one rounding into the subnormal range (2⁻¹⁰⁷⁵; 2.0**-1075 is 0.0)."""


def gamma(k: int) -> float:
    """γ_k = k·u/(1 − k·u): the relative error bound of k roundings (Higham, §3.1)."""
    return k * U / (1.0 - k * U)


MEAN_ROUNDING = gamma(4)
"""Relative error of :func:`fixed_point_mean` against the exact mean of the cut points."""

ROUNDING_FREE = 2.0**-31
"""Excess of pair μ below which σ keeps its formula (≈ 4.7e-10, under half the 1e-9 tolerance)."""

RECORD_SLACK = 2.0**-40
"""How far above B' a fit's norm may be (checked rigorously by :func:`bound_ball_rows`)."""

MAX_EXCESS = 2.0**-10
"""Largest rounding excess compensated by a larger σ; above it calibration is refused."""

MAX_CURVES = 2**32
"""Most curves :func:`fixed_point_mean` adds: the 64-bit limb sums stay exact up to 2^33."""

_LIMB = 30
_MASK = (1 << _LIMB) - 1
_CHUNK_ROWS = 1 << 20  # float sums of at most 2^20 limbs of 30 bits: below 2^53, exact in any order
_CHUNK_VALUES = 1 << 16  # values per chunk: the work arrays stay in the processor's cache


def _power_exponent(bound: np.ndarray) -> np.ndarray:
    """E with 2^E >= 2·bound (so |v| <= bound·(1 + 2⁻²⁰) gives |v|/2^E < 1)."""
    _, e = np.frexp(bound)
    return np.asarray(e, dtype=np.int64) + 1


def fixed_point_mean(values, bound) -> np.ndarray:
    """The mean over the curves axis (-2) of ``values`` (…, n, k), exact up to one rounding.

    Each value v in column j is cut towards zero to the grid 2^(E_j − 90)
    (2^E_j the smallest power of two at least twice ``bound[j]``, a bound of
    the *set* the values lie in, so the cut of one curve does not depend on
    any other); the cut values are summed exactly in three 64-bit integer
    limbs, whatever the order of the curves or the batch layout; the exact
    sum is then converted and divided by n.  The result y satisfies

        ``|y_j − m_j| <= MEAN_ROUNDING·|m_j| + 2⁻¹⁰⁷⁵``,

    m the exact mean of the cut values (``|m_j| <= max_i |v_ij|``), and
    ``|v − cut(v)|`` < 2^(E_j − 90) <= bound_j·2⁻⁸⁸.

    Parameters
    ----------
    values : array (…, n, k)
        Finite points, one per curve; every ``|value|`` must be at most
        ``bound``·(1 + 2⁻²⁰) (a point outside its set is a bug of the caller:
        ``ValueError``).
    bound : float or array (k,)
        Positive public bound of each coordinate over the set.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[1.0], [2.0**-60], [-1.0]])  # the naive sum loses 2^-60
    >>> float(fixed_point_mean(v, 1.0)[0]) == 2.0**-60 / 3
    True
    """
    V = np.asarray(values, dtype=float)
    if V.ndim < 2:
        raise ValueError(f"values must have a curves axis (…, n, k), got shape {V.shape}")
    n, k = V.shape[-2:]
    if n < 1:
        raise ValueError("the mean needs at least one curve (n >= 1)")
    if n > MAX_CURVES:
        raise ValueError(f"at most 2^32 curves can be averaged exactly, got n={n}")
    b = np.broadcast_to(np.asarray(bound, dtype=float), (k,))
    if not np.all(np.isfinite(b) & (b > 0)):
        raise ValueError("bound must be positive and finite")
    E = _power_exponent(b)
    batch = V.shape[:-2]
    V3 = V.reshape((-1, n, k))
    B = V3.shape[0]
    acc = [np.zeros((B, k), dtype=np.int64) for _ in range(3)]
    # V·2^(30-E) in (at most) two exact steps: the first limb's units, |S| < 2^29(1 + 2^-20).
    shift = 30 - E
    first = np.clip(shift, -1000, 1000)
    s1, s2 = np.ldexp(1.0, first), np.ldexp(1.0, shift - first)
    two_steps = bool(np.any(shift != first))
    limit = b * (1.0 + 2.0**-20) * s1 * s2  # the caller's bound in limb units (a check only)
    rows = max(1, min(n, _CHUNK_VALUES // max(1, B * k), _CHUNK_ROWS))
    S = np.empty((B, rows, k))
    L = np.empty((B, rows, k))
    scale = float(2**_LIMB)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        Sv, Lv = S[:, : stop - start], L[:, : stop - start]
        np.multiply(V3[:, start:stop], s1, out=Sv)  # exact where the result is normal
        if two_steps:
            Sv *= s2
        np.abs(Sv, out=Lv)
        if np.any(np.max(Lv, axis=(0, 1)) > limit):
            raise ValueError(
                "a point lies outside the bound of its set (values must satisfy |v| <= bound): "
                "the per-curve map is wrong, nothing is averaged"
            )
        for j in range(3):
            np.trunc(Sv, out=Lv)  # the limb, rounded towards zero
            acc[j] += np.einsum("bij->bj", Lv).astype(np.int64)  # integers below 2^50: exact
            if j < 2:
                Sv -= Lv  # the fraction: exact
                Sv *= scale  # the next 30 bits: exact, |S| < 2^30
    A1, A2, A3 = acc
    # N = A1·2^60 + A2·2^30 + A3 (units 2^(E-90)), normalised so that A2, A3 lie in [0, 2^30).
    A2 += A3 >> _LIMB
    A3 &= _MASK
    A1 += A2 >> _LIMB
    A2 &= _MASK
    neg = A1 < 0  # then N < 0, since A2·2^30 + A3 < 2^60
    B1, B2, B3 = np.where(neg, -A1, A1), np.where(neg, -A2, A2), np.where(neg, -A3, A3)
    B2 += B3 >> _LIMB
    B3 &= _MASK
    B1 += B2 >> _LIMB
    B2 &= _MASK  # |N| = B1·2^60 + B2·2^30 + B3, all limbs >= 0
    # Three roundings on non-negative terms (the conversion of B1 and two additions),
    # one for the division, and an exact scaling by a power of two (unless subnormal).
    f = (B1.astype(float) * 2.0**60 + B2.astype(float) * 2.0**30) + B3.astype(float)
    y = np.ldexp(f / n, E - 90)
    return np.where(neg, -y, y).reshape(batch + (k,))


def bound_ball_rows(W: np.ndarray, radius: float) -> np.ndarray:
    """Rows of ``W`` (…, d) scaled, in place, so that every norm is at most radius·(1 + 2⁻⁴⁰).

    A rigorous upper bound of each row's norm is computed on the row divided
    by a power of two (no overflow or underflow that matters): the sum of d
    squares errs by at most γ_d, the square root and products by a few u, and
    underflowed squares by d·2⁻¹⁰⁷⁴.  Rows whose bound exceeds
    radius·(1 + 2⁻⁴¹) — none, for fits computed by dpfda with d below a few
    thousand — are multiplied by (radius/bound)(1 − 4u), which brings their
    norm below radius (plus √d·2⁻¹⁰⁷⁵ if they are subnormal).  Returns ``W``.
    """
    d = W.shape[-1]
    _, e = math.frexp(radius)
    S = np.ldexp(W, -(e + 1))
    ss = np.einsum("...k,...k->...", S, S)
    ub = np.sqrt(ss * (1.0 + gamma(d + 2)) + d * 2.0**-1070) * (1.0 + gamma(3)) + math.sqrt(d) * 2.0**-1070
    r_s = math.ldexp(radius, -(e + 1))  # exact, in [1/4, 1/2)
    over = ub > r_s * (1.0 + 2.0**-41)
    if np.any(over):
        W[over] *= ((r_s / ub[over]) * (1.0 - 4 * U))[..., None]
    return W


def box_mean_excess(n: int, bounds) -> float:
    """ε for a mean of n points of a box ∏[−c_j, c_j] (PTF): n·γ₄ + n·2⁻¹⁰⁷⁴/min c_j.

    Two neighbours' cut points differ in one curve only, so their exact means
    differ by at most 2c_j/n in coordinate j; each computed mean is within
    γ₄c_j + 2⁻¹⁰⁷⁵ of its exact mean.  Hence ``|Δy_j|`` <= (2c_j/n)(1 + ε) and
    pair μ, a weighted ℓ₂ norm of Δy_j/σ_j with σ_j ∝ c_j, is at most μ(1 + ε).
    """
    cmin = float(np.min(np.asarray(bounds, dtype=float)))
    return n * MEAN_ROUNDING + n * 2.0**-1074 / cmin


def ball_mean_excess(n: int, d: int, radius: float) -> float:
    """ε for a mean of n fits in the ball ||θ|| <= B' (FTP), checked by :func:`bound_ball_rows`.

    Every fit has norm at most B'(1 + ρ), ρ = 2⁻⁴⁰ + √d·2⁻¹⁰⁷⁵/B', so the exact
    means of neighbours differ by at most 2B'(1 + ρ)/n; each computed mean is
    within γ₄·B'(1 + ρ) + √d·2⁻¹⁰⁷⁵ of its exact mean (ℓ₂, coordinate bounds
    summed in squares).  Relative to Δ = 2B'/n:
    ε = (1 + ρ)(1 + nγ₄) − 1 + n√d·2⁻¹⁰⁷⁵/B'.
    """
    tiny = math.sqrt(d) * TINY_ERR / radius
    rho = RECORD_SLACK + tiny
    return (1.0 + rho) * (1.0 + n * MEAN_ROUNDING) - 1.0 + n * tiny


def calibration_factor(excess: float, what: str = "the summary") -> float:
    """The factor σ is multiplied by to cover a rounding excess ε of pair μ.

    1.0 when ε <= :data:`ROUNDING_FREE` (σ keeps its formula; pair μ stays
    below μ(1 + 2⁻³¹ + 4u)); otherwise 1 + ε + 8u, which covers ε and the few
    roundings of σ itself.  ``ValueError`` when ε > :data:`MAX_EXCESS`.
    """
    if not excess <= MAX_EXCESS:  # also NaN
        raise ValueError(
            f"floating point cannot resolve the sensitivity of {what}: its rounding could move a "
            f"neighbour's release by {excess:.3g} of the sensitivity (more than 2^-10); the bound "
            "(radius, clip or extent) is too small for this n, or n is too large"
        )
    return 1.0 if excess <= ROUNDING_FREE else 1.0 + excess + 8 * U
