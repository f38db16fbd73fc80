"""Means over curves whose rounding no single curve can steer.

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

1. **Sum exactly** (:func:`fixed_point_mean`, :func:`fixed_point_ball_mean`).
   Each coordinate v is cut towards zero to the fixed grid β·2⁻⁹⁰, where β is
   a power of two at least twice the *public* bound of the set (not of the
   data): q(v) = β·2⁻⁹⁰·trunc(v·2⁹⁰/β).  The cut is a map of each curve by
   itself that keeps the point inside the set (``|q(v)| <= |v|`` in every
   coordinate: inside any box, any Euclidean ball, any ball in rotated
   coordinates).  The integer trunc(v·2⁹⁰/β) is taken in two 45-bit limbs,
   hi = trunc(s) and lo = trunc((s − hi)·2⁴⁵) with s = v·2⁴⁵/β (a scaling by a
   power of two: exact, or, where s falls below 2⁻¹⁰²² and rounds, so small
   that both limbs are 0 either way; the fraction s − hi is exact and has the
   sign of s, so hi·2⁴⁵ + lo is the cut towards zero, and ``|hi|, |lo|`` < 2⁴⁵).
   The limbs are added exactly: at most 256 of them as doubles (every partial
   sum is an integer below 2⁵³, so no addition rounds, in any order), these
   group sums in 64-bit integers (below 2⁶² for a chunk of at most 2¹⁷
   curves), and the chunks' sums into three normalised 30-bit limbs of 64-bit
   integers (below 2⁶² for up to 2³² curves).  The sum of the n cut points is thus known
   without error, and it does not depend on the order or the batch layout of
   the curves.  The cut changes a point by less than β·2⁻⁹⁰ — about 1e-27 of
   the set's size.
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
  rigorous upper bound (:func:`fixed_point_ball_mean`, the check of
  :func:`bound_ball_rows`; a point failing it is scaled down, which never
  happens for d below a few thousand), so
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
from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "MEAN_ROUNDING",
    "ROUNDING_FREE",
    "RECORD_SLACK",
    "MAX_EXCESS",
    "MAX_CURVES",
    "fixed_point_mean",
    "fixed_point_ball_mean",
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
"""Most curves :func:`fixed_point_mean` adds: its 64-bit running sums stay below 2^62."""

_LIMB = 45
"""Bits of a limb of the cut: two limbs reach the grid 2^(E − 90)."""
_GROUP = 256
"""Limbs added as doubles before their conversion: 256 integers below 2^45 sum below 2^53."""
_CHUNK_VALUES = 1 << 16
"""Values per chunk: a chunk's transposed work arrays stay in the processor's cache."""
_CHUNK_ROWS = 1 << 17
"""Most curves in a chunk: its 64-bit sums of limbs below 2^45 stay below 2^62."""
_OUT = 30
_MASK = (1 << _OUT) - 1  # the running sums: three normalised 30-bit limbs (A1·2^60 + A2·2^30 + A3)
_HI_SPLIT = _LIMB - _OUT  # a chunk's sum of high limbs, H·2^45, is carried as (H >> 15)·2^60 + …


def _power_exponent(bound: np.ndarray) -> np.ndarray:
    """E with 2^E >= 2·bound (so |v| <= bound·(1 + 2⁻²⁰) gives |v|/2^E < 1)."""
    _, e = np.frexp(bound)
    return np.asarray(e, dtype=np.int64) + 1


def _limb_scales(E: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """2^(45 − E) as one or two powers of two (each representable) and whether two are needed."""
    shift = _LIMB - E
    first = np.clip(shift, -1000, 1000)
    return np.ldexp(1.0, first), np.ldexp(1.0, shift - first), bool(np.any(shift != first))


def _chunks(B: int, n: int, rows: int) -> Iterator[tuple[int, int, int, int]]:
    """(b0, b1, r0, r1): whole batches of curves when n <= rows, else slices of one batch's curves."""
    if n <= rows:
        per = max(1, rows // n)
        for b0 in range(0, B, per):
            yield b0, min(B, b0 + per), 0, n
    else:
        for b in range(B):
            for r0 in range(0, n, rows):
                yield b, b + 1, r0, min(n, r0 + rows)


def _chunk_rows(k: int) -> int:
    """Curves per chunk for points with k coordinates: a multiple of ``_GROUP``."""
    return max(_GROUP, min(_CHUNK_ROWS, (_CHUNK_VALUES // k) // _GROUP * _GROUP))


def _limb_sums(limbs: np.ndarray, curves_last: bool) -> np.ndarray:
    """Σ over the curves of integer-valued doubles, |limb| < 2^45: int64 (k, nb), exact.

    ``limbs`` is (k, nb, nr) when ``curves_last``, else (nb, nr, k) (nb
    batches of nr curves).  Groups of at most 256 limbs are added as doubles
    (as a product with a vector of ones: x·1 is x): every partial sum of such a
    group is an integer below 2^53, so each addition is exact in any order;
    the group sums are then added in 64-bit integers.
    """
    axis = -1 if curves_last else 1
    nr = limbs.shape[axis]
    q = nr // _GROUP
    if curves_last:
        k, nb, _ = limbs.shape
        out = limbs[..., q * _GROUP :].sum(axis=-1).astype(np.int64)
        if q:
            out += (limbs[..., : q * _GROUP].reshape(k, nb, q, _GROUP) @ _ONES).astype(np.int64).sum(axis=-1)
        return out
    nb, _, k = limbs.shape
    out = limbs[:, q * _GROUP :].sum(axis=1).astype(np.int64)
    if q:
        out += (_ONES @ limbs[:, : q * _GROUP].reshape(nb, q, _GROUP, k)).astype(np.int64).sum(axis=1)
    return out.T


_ONES = np.ones(_GROUP)


def _add_cut(acc: np.ndarray, S: np.ndarray, b0: int, work: np.ndarray, curves_last: bool) -> None:
    """Add Σ_i trunc(S_i·2^45) over the curves of a chunk to the running sums ``acc``.

    ``S`` (k, nb, nr) if ``curves_last``, else (nb, nr, k), holds the chunk's
    values in units of the first limb, v·2^(45 − E), with |S| < 2^45; it is
    overwritten, as is ``work`` (same shape).  The cut trunc(S·2^45) =
    trunc(v·2^(90 − E)) is taken in two limbs: hi = trunc(S), then lo =
    trunc((S − hi)·2^45) — the fraction S − hi is exact and has the sign of S,
    so hi·2^45 + lo is the cut towards zero, and |hi|, |lo| < 2^45.  ``acc``
    (3, k, B) holds the normalised running sums A1·2^60 + A2·2^30 + A3 (A2, A3
    in [0, 2^30)) of batches b0, b0 + 1, ….
    """
    nb = S.shape[1] if curves_last else S.shape[0]
    hi = np.trunc(S, out=work)
    S -= hi  # the fraction: exact
    S *= 2.0**_LIMB  # exact, |S| < 2^45
    lo = np.trunc(S, out=S)
    # exact, below 2^62 in magnitude (<= 2^17 curves)
    H, L = _limb_sums(hi, curves_last), _limb_sums(lo, curves_last)
    A1, A2, A3 = acc[0, :, b0 : b0 + nb], acc[1, :, b0 : b0 + nb], acc[2, :, b0 : b0 + nb]
    # H·2^45 + L = (H >> 15)·2^60 + ((H & (2^15 − 1))·2^15 + (L >> 30))·2^30 + (L & (2^30 − 1)),
    # arithmetic shifts (floor) and masks of two's complement, so exact for either sign.
    A3 += L & _MASK
    A2 += ((H & ((1 << _HI_SPLIT) - 1)) << _HI_SPLIT) + (L >> _OUT)
    A1 += H >> _HI_SPLIT
    _normalise(A1, A2, A3)


def _normalise(A1: np.ndarray, A2: np.ndarray, A3: np.ndarray) -> None:
    """Carry in place so that A2, A3 lie in [0, 2^30), keeping A1·2^60 + A2·2^30 + A3."""
    A2 += A3 >> _OUT
    A3 &= _MASK
    A1 += A2 >> _OUT
    A2 &= _MASK


def _exact_mean(acc: np.ndarray, n: int, E: np.ndarray) -> np.ndarray:
    """The mean (B, k) of the exact sums ``acc`` (3, k, B) in units 2^(E − 90), rounded once.

    N = A1·2^60 + A2·2^30 + A3 is split into its sign and |N| = B1·2^60 + B2·2^30
    + B3 (all limbs >= 0); three roundings on non-negative terms (the
    conversion of B1 and two additions), one for the division, and an exact
    scaling by a power of two (unless subnormal).
    """
    A1, A2, A3 = acc
    neg = A1 < 0  # then N < 0, since A2·2^30 + A3 < 2^60
    B1, B2, B3 = np.where(neg, -A1, A1), np.where(neg, -A2, A2), np.where(neg, -A3, A3)
    B2 += B3 >> _OUT
    B3 &= _MASK
    B1 += B2 >> _OUT
    B2 &= _MASK  # |N| = B1·2^60 + B2·2^30 + B3, all limbs >= 0
    f = (B1.astype(float) * 2.0**60 + B2.astype(float) * 2.0**30) + B3.astype(float)
    y = np.ldexp(f / n, np.reshape(E, (-1, 1)) - 90)
    return np.where(neg, -y, y).T


def _check_shape(V: np.ndarray, what: str = "values") -> int:
    if V.ndim < 2:
        raise ValueError(f"{what} must have a curves axis (…, n, k), got shape {V.shape}")
    n = V.shape[-2]
    if n < 1:
        raise ValueError("the mean needs at least one curve (n >= 1)")
    if n > MAX_CURVES:
        raise ValueError(f"at most 2^32 curves can be averaged exactly, got n={n}")
    return n


def fixed_point_mean(values: ArrayLike, bound: ArrayLike) -> np.ndarray:
    """The mean over the curves axis (-2) of ``values`` (…, n, k), exact up to one rounding.

    Each value v in column j is cut towards zero to the grid 2^(E_j − 90)
    (2^E_j the smallest power of two at least twice ``bound[j]``, a bound of
    the *set* the values lie in, so the cut of one curve does not depend on
    any other); the cut values are summed exactly in 64-bit integers, whatever
    the order of the curves or the batch layout; the exact sum is then
    converted and divided by n.  The result y satisfies

        ``|y_j − m_j| <= MEAN_ROUNDING·|m_j| + 2⁻¹⁰⁷⁵``,

    m the exact mean of the cut values (``|m_j| <= max_i |v_ij|``), and
    ``|v − cut(v)|`` < 2^(E_j − 90) <= bound_j·2⁻⁸⁸.

    Parameters
    ----------
    values : array (…, n, k)
        Finite points, one per curve; every ``|value|`` must be at most
        ``bound``·(1 + 2⁻²⁰) (a point outside its set, or NaN, is a bug of the
        caller: ``ValueError``).
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
    n = _check_shape(V)
    k = V.shape[-1]
    b = np.broadcast_to(np.asarray(bound, dtype=float), (k,))
    if not np.all(np.isfinite(b) & (b > 0)):
        raise ValueError("bound must be positive and finite")
    E = _power_exponent(b)
    batch = V.shape[:-2]
    if V.size == 0:  # no coordinates, or no batch: nothing to add
        return np.zeros(batch + (k,))
    V3 = V.reshape((-1, n, k))
    B = V3.shape[0]
    # V·2^(45−E) in (at most) two exact steps: the first limb's units, |S| < 2^44(1 + 2^-20).
    s1, s2, two_steps = _limb_scales(E)
    limit = b * (1.0 + 2.0**-20) * s1 * s2  # the caller's bound in limb units (a check only)
    uniform = bool(np.all(s1 == s1[0]) and np.all(s2 == s2[0]))
    rows = _chunk_rows(k)
    S, work = np.empty(k * rows), np.empty(k * rows)
    acc = np.zeros((3, k, B), dtype=np.int64)
    for b0, b1, r0, r1 in _chunks(B, n, rows):
        shape = (b1 - b0, r1 - r0, k)
        size = shape[0] * shape[1] * shape[2]
        Sv = S[:size].reshape(shape)
        # Rows of k values folded into rows of m·k (the same values, in the same
        # order), so that multiplying by a per-column scale and the per-column
        # extremes run in long inner loops.
        folded, m = _fold(Sv)
        if uniform:
            np.multiply(V3[b0:b1, r0:r1], s1[0], out=Sv)  # exact where the result is normal
            if two_steps:
                Sv *= s2[0]
        else:
            np.multiply(V3[b0:b1, r0:r1].reshape(folded.shape), np.tile(s1, m), out=folded)
            if two_steps:
                folded *= np.tile(s2, m)
        top = np.max(folded, axis=0).reshape(m, k).max(axis=0)
        bottom = np.min(folded, axis=0).reshape(m, k).min(axis=0)
        if not (np.all(top <= limit) and np.all(bottom >= -limit)):  # NaN too
            raise ValueError(
                "a point lies outside the bound of its set (values must satisfy |v| <= bound): "
                "the per-curve map is wrong, nothing is averaged"
            )
        _add_cut(acc, Sv, b0, work[:size].reshape(shape), curves_last=False)
    return _exact_mean(acc, n, E).reshape(batch + (k,))


def _fold(a: np.ndarray) -> tuple[np.ndarray, int]:
    """A view (R/m, m·k) of the rows of a (…, k) array (R rows in all; m = 64 when it divides R)."""
    k = a.shape[-1]
    R = a.size // max(k, 1)
    m = 64 if R % 64 == 0 and a.flags.c_contiguous else 1
    return a.reshape(R // m, m * k), m


def _norm_upper_bound(ss: np.ndarray, d: int) -> np.ndarray:
    """A rigorous upper bound of ||S_exact|| from ss = fl(Σ_j fl(S_j²)), summed in any order.

    S (d,) is a computed vector within 2⁻¹⁰⁷⁵ of S_exact in each coordinate (one
    rounding into the subnormal range, or none); σ = Σ S_j² exactly.  A square
    rounds by a factor of at least 1 − u or, underflowing, by at most 2⁻¹⁰⁷⁵, and
    each term passes through at most d − 1 additions (exact when subnormal), so
    ss >= (1 − u)^d·σ − d·2⁻¹⁰⁷⁵.  The bound is ub = fl(fl(fl(√q)·(1 + γ₃)) + b)
    with q = fl(fl(ss·(1 + γ_{d+2})) + a), a = d·2⁻¹⁰⁷⁰, b = √d·2⁻¹⁰⁷⁰.  Inside
    the root two more roundings: q >= (1 − u)^{d+2}(1 + γ_{d+2})·σ + (1 − u)a
    − 2·d·2⁻¹⁰⁷⁵ >= σ, as (1 − u)^{d+2}(1 + γ_{d+2}) >= 1 and a covers the rest
    (an underflowing product included).  Outside, three: ub >= (1 − u)³(1 + γ₃)·√q
    + (1 − u)b >= √σ + √d·2⁻¹⁰⁷⁵ >= ||S_exact||.  (An overflow gives inf, still
    an upper bound.)  Every step rounds monotonically, so the bound of the
    largest ss is the largest bound.
    """
    return np.sqrt(ss * (1.0 + gamma(d + 2)) + d * 2.0**-1070) * (1.0 + gamma(3)) + math.sqrt(d) * 2.0**-1070


def bound_ball_rows(W: np.ndarray, radius: float) -> np.ndarray:
    """Rows of ``W`` (…, d) scaled, in place, so that every norm is at most radius·(1 + 2⁻⁴⁰).

    A rigorous upper bound of each row's norm (``_norm_upper_bound``) is
    computed on the row divided by a power of two (no overflow or underflow
    that matters): the sum of d squares errs by at most γ_d, the square root
    and products by a few u, and underflowed squares by d·2⁻¹⁰⁷⁴.  Rows whose
    bound exceeds radius·(1 + 2⁻⁴¹) — none, for fits computed by dpfda with d
    below a few thousand — are multiplied by (radius/bound)(1 − 4u), which
    brings their norm below radius (plus √d·2⁻¹⁰⁷⁵ if they are subnormal).
    Returns ``W``.  :func:`fixed_point_ball_mean` makes the same check on
    each point it averages.
    """
    d = W.shape[-1]
    _, e = math.frexp(radius)
    S = np.ldexp(W, -(e + 1))
    ub = _norm_upper_bound(np.einsum("...k,...k->...", S, S), d)
    r_s = math.ldexp(radius, -(e + 1))  # exact, in [1/4, 1/2)
    over = ub > r_s * (1.0 + 2.0**-41)
    if np.any(over):
        W[over] *= ((r_s / ub[over]) * (1.0 - 4 * U))[..., None]
    return W


def fixed_point_ball_mean(coords: ArrayLike, basis: ArrayLike, radius: float) -> np.ndarray:
    """The mean over the curves axis (-2) of the points w_i = Σ_k coords[i, k]·basis[k], each in the ball.

    What FTP averages (Algorithm 1): ``coords`` (…, n, d) are the fits in an
    orthonormal basis (the rows of ``basis`` (d, k)), each of norm at most
    ``radius`` up to rounding.  Every point is turned to the original
    coordinates on its own, in a fixed order — w_ij = fl(… fl(fl(c_i0·b_0j) +
    fl(c_i1·b_1j)) + … + fl(c_i,d−1·b_d−1,j)), so a curve's point does not
    depend on its batch — and its norm is checked against radius·(1 + 2⁻⁴⁰)
    as :func:`bound_ball_rows` does: an upper bound (``_norm_upper_bound``)
    of the norm of w·2^(45 − E), compared with radius·2^(45 − E)·(1 + 2⁻⁴¹).
    (The bound is monotone in the sum of squares, so a chunk of points whose
    largest sum passes passes whole; a point that fails — none, for fits
    computed by dpfda — is multiplied by (bound'/bound)(1 − 4u), bound' the
    radius in those units, which brings its norm below radius up to
    √k·2⁻¹⁰⁷⁵.)  The points, all of norm at most radius·(1 + 2⁻⁴⁰)
    (+ √k·2⁻¹⁰⁷⁵), are then averaged as :func:`fixed_point_mean` averages
    points of the box [−radius, radius]^k (the same cut, exact sum and one
    rounding, bit for bit).

    The work is done in chunks of curves laid out coordinate by coordinate, so
    every step is an elementwise operation on long contiguous rows.

    Parameters
    ----------
    coords : array (…, n, d)
        Finite coordinates, one row per curve.
    basis : array (d, k)
        The basis vectors, one per row.
    radius : float
        The radius B' > 0 of the ball the points lie in.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> fixed_point_ball_mean(c, np.eye(2), 1.0).tolist()
    [0.0, 0.3333333333333333]
    """
    Z = np.asarray(coords, dtype=float)
    n = _check_shape(Z, "coords")
    basis = np.asarray(basis, dtype=float)
    d = Z.shape[-1]
    if basis.ndim != 2 or basis.shape[0] != d:
        raise ValueError(f"basis must be a (d, k) matrix with d={d} rows, got shape {basis.shape}")
    k = basis.shape[1]
    radius = float(radius)
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError("radius must be positive and finite")
    E = _power_exponent(np.array([radius]))
    scales = _limb_scales(E)
    s1, s2, two_steps = float(scales[0][0]), float(scales[1][0]), scales[2]
    r_units = math.ldexp(radius, _LIMB - int(E[0]))  # exact, in [2^43, 2^44)
    threshold = r_units * (1.0 + 2.0**-41)
    batch = Z.shape[:-2]
    Z3 = Z.reshape((-1, n, d))
    B = Z3.shape[0]
    columns = [basis[j][:, None] for j in range(d)]  # b_j as a column: (k, 1)
    rows = _chunk_rows(max(d, k))
    zt, W, S, work = (np.empty(m * rows) for m in (d, k, k, k))
    acc = np.zeros((3, k, B), dtype=np.int64)
    for b0, b1, r0, r1 in _chunks(B, n, rows):
        c = (b1 - b0) * (r1 - r0)
        zv = zt[: d * c].reshape(d, c)
        np.copyto(zv.reshape(d, b1 - b0, r1 - r0), Z3[b0:b1, r0:r1].transpose(2, 0, 1))
        Wv, Sv, wv = W[: k * c].reshape(k, c), S[: k * c].reshape(k, c), work[: k * c].reshape(k, c)
        np.multiply(columns[0], zv[0], out=Wv)  # the points w, one column each
        for j in range(1, d):
            np.multiply(columns[j], zv[j], out=wv)
            Wv += wv
        _scale_to_limbs(Wv, s1, s2, two_steps, Sv)
        np.multiply(Sv, Sv, out=wv)
        ss = wv[0].copy()
        for j in range(1, k):
            ss += wv[j]
        if not _norm_upper_bound(np.max(ss), k) <= threshold:  # NaN too
            _shrink_points(Wv, ss, k, r_units, threshold)
            _scale_to_limbs(Wv, s1, s2, two_steps, Sv)
        shape = (k, b1 - b0, r1 - r0)
        _add_cut(acc, Sv.reshape(shape), b0, wv.reshape(shape), curves_last=True)
    return _exact_mean(acc, n, np.repeat(E, k)).reshape(batch + (k,))


def _scale_to_limbs(W: np.ndarray, s1: float, s2: float, two_steps: bool, out: np.ndarray) -> None:
    """out = W·2^(45 − E) (exact unless the result is subnormal, then within 2⁻¹⁰⁷⁵)."""
    np.multiply(W, s1, out=out)
    if two_steps:
        out *= s2


def _shrink_points(W: np.ndarray, ss: np.ndarray, k: int, r_units: float, threshold: float) -> None:
    """Scale, in place, the columns of W (k, c) whose norm bound exceeds ``threshold`` (limb units).

    A column with bound ub is multiplied by fl(fl(r/ub)·(1 − 4u)) <= (r/ub)(1 − 4u)(1 + u)²,
    which rounds once more, so its norm becomes at most r(1 − 4u)(1 + u)³ <= r
    (plus √k·2⁻¹⁰⁷⁵ for subnormal coordinates).  A point that is not finite is a
    bug of the caller: ``ValueError``.
    """
    if not np.all(np.isfinite(W)):
        raise ValueError("a point is not finite (NaN or inf): the per-curve map is wrong, nothing is averaged")
    ub = _norm_upper_bound(ss, k)
    over = ub > threshold
    W[:, over] *= (r_units / ub[over]) * (1.0 - 4 * U)


def box_mean_excess(n: int, bounds: ArrayLike) -> float:
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
