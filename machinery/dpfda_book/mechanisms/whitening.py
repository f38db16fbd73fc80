"""A design's noise metric ||L⁻¹x||, with no pseudo-inverse, and the extent of its set in it.

What a design's guarantee needs is that σ is at least 2R/(nμ) for the *exact* extent
R = max_{x ∈ C} ||L⁻¹x|| of its set C, for every public parameter it accepts:

* **no pseudo-inverse.**  L⁻¹ is formed by exact division (diagonal L: PTF's
  shape, the isotropic shape, a diagonal covariance — however thin a direction)
  or by Householder QR of L with each row divided by a power of two, with its
  condition number κ checked: the extent's relative rounding is then at most
  8·T·κ²·2⁻⁵², and a noise shape for which that exceeds ``MAX_ROUNDING``
  (10⁻⁶) is refused with a ValueError that says what to change (:class:`Whitening`).
  A pseudo-inverse would instead drop a direction of tiny variance silently — the
  direction in which the noise protects least (kept broken on purpose as
  :func:`dpfda_book.mechanisms.broken.broken_design_pinv`).
* **scale-free extents.**  The set's size (c, r, B') and L⁻¹ are written as
  mantissa·2^exponent, the maximisation runs on the mantissas and the exponents
  are added at the end: R/B' has the same relative accuracy for every B' in
  (0, 2^960] that ftp/ptf accept, and a design whose R leaves the float
  range is refused with a message about the radius (:func:`design_extent`).
* **the rounding is covered.**  Every R except PTF's box (whose T divisions and
  sum of squares round by at most (T + 2)·2⁻⁵³, as PTF's own σ_j do) is
  multiplied by 1 + 10⁻¹⁰ + 8·T·κ²·2⁻⁵², which exceeds the relative error of
  every step above.
* **cached on everything.**  An extent is cached under the geometry, set, λ,
  the bytes of L, the clipping bounds, the ball radius and B' itself (never
  rescaled from another radius; :func:`cached_extent`).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpfda.maths.spaces import GridGeometry
from dpfda.validation import as_float_array

from .projections import sign_vectors, trust_region_max

__all__ = ["MAX_ROUNDING", "NOISE_ROW_RANGE", "RegionInMetric", "Whitening", "cached_extent", "design_extent",
           "noise_factor", "scaled"]

_EPS = float(np.finfo(float).eps)

_EXTENTS: dict = {}
"""Extents already computed, keyed on every input they depend on (see :func:`cached_extent`)."""

_SAFETY = 1.0 + 1e-10
"""Radii computed by SVD or the trust-region dual are raised by at least this factor (rounding)."""

MAX_ROUNDING = 1e-6
"""Largest relative rounding bound of an extent that is accepted.

An extent computed through a whitening with condition number κ (after exact
power-of-two equilibration) is raised by 8·T·κ²·2⁻⁵² (see :class:`Whitening`); a
noise shape for which that exceeds ``MAX_ROUNDING`` is refused with a ValueError
rather than calibrated on numbers that cannot be trusted."""

NOISE_ROW_RANGE = (2.0**-500, 2.0**500)
"""Accepted range of each grid point's largest entry in a non-diagonal noise factor L.

Inside it the whitening L⁻¹ (entries up to about κ·2⁵⁰⁰) and its products with the
set's points, scaled to a unit exponent, stay inside the floating-point range."""


def _exponent(x: float) -> int:
    """e with x = m·2^e and 1/2 <= |m| < 1 (0 for x = 0)."""
    return math.frexp(float(x))[1]


def scaled(v: ArrayLike) -> tuple[np.ndarray, int]:
    """(v̂, e) with v = v̂·2^e exactly and max abs(v̂) in [1/2, 1) (e = 0 for an all-zero array)."""
    v = np.asarray(v, dtype=float)
    top = float(np.max(np.abs(v))) if v.size else 0.0
    if top == 0.0:
        return v.copy(), 0
    e = _exponent(top)
    return np.ldexp(v, -e), e


def _entrywise_product(A: np.ndarray, c: ArrayLike) -> tuple[np.ndarray, int]:
    """(N̂, E) with A·diag(c) = N̂·2^E: each product formed on mantissas and exponents.

    No product over- or underflows on the way; only entries below 2^-1074 of the largest
    are lost when they are put on the common exponent E.
    """
    mA, eA = np.frexp(A)
    mc, ec = np.frexp(np.asarray(c, dtype=float))
    exps = eA.astype(np.int64) + ec.astype(np.int64)[None, :]
    mant = mA * mc[None, :]
    nz = mant != 0
    if not np.any(nz):
        return np.zeros_like(mant), 0
    E = int(np.max(exps[nz]))
    with np.errstate(under="ignore"):
        return np.ldexp(mant, exps - E), E




class Whitening:
    """The noise metric ||x||_{Σ⁻¹} = ||L⁻¹x|| of a noise factor L, with no pseudo-inverse.

    ``M`` (k, T) is L⁻¹ for a square L and L⁺ = (LᵀL)⁻¹Lᵀ for FTP's tall L = Φ (used
    on the span of Φ only).  How it is computed, and what rounding it can carry:

    * diagonal L: M = diag(1/ℓ_j), one correctly rounded division per entry
      (relative error 2⁻⁵³), condition κ = 1 — however thin a direction is;
    * any other L: the rows are divided by powers of two, L = D·L̃ with D = diag(2^{r_j})
      (exact), so each row of L̃ has its largest entry in [1/2, 1); then Householder QR,
      L̃ = QR, and M = R⁻¹Qᵀ·D⁻¹ by triangular solves (backward stable; the column
      scaling by D⁻¹ is exact).  κ = cond₂(R) = cond₂(L̃) from R's singular values.

    An extent R = max_{x ∈ C} ||Mx|| computed with the rounded M is then within
    ``rounding`` = 8·T·κ²·2⁻⁵² of the exact one, relatively (the error of M is at most
    about T·κ·2⁻⁵²·||L̃⁻¹|| per unit of D⁻¹x, and R >= ||D⁻¹x||/||L̃|| at the maximiser);
    a factor whose bound exceeds ``MAX_ROUNDING`` is refused with a ValueError
    instead of giving a silently wrong extent (a pseudo-inverse would drop the thin
    direction, whose variance is what the extent is about).
    """

    def __init__(self, L: np.ndarray, label: str, check: bool = True) -> None:
        L = np.asarray(L, dtype=float)
        T, k = L.shape
        rows = np.max(np.abs(L), axis=1)
        self.diagonal = k == T and not np.any(L - np.diag(np.diag(L)))
        if self.diagonal:  # exact division: any ℓ_j whose reciprocal is a finite normal float
            with np.errstate(divide="ignore", over="ignore"):
                inv = 1.0 / np.diag(L)
            bad = ~(np.isfinite(inv) & (np.abs(inv) >= np.finfo(float).tiny))
            if check and np.any(bad):
                j = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"the noise shape {label} has standard deviation {L[j, j]:.3g} at grid point index "
                    f"{j}, whose reciprocal is not a normal floating-point number; rescale the noise "
                    "matrix, or leave grid points this close to 0 out of the grid"
                )
            self.M = np.diag(inv)
            self.kappa = 1.0
            self.rounding = 0.0
            return
        lo, hi = NOISE_ROW_RANGE
        if check and (np.any(rows < lo) or np.any(rows > hi)):
            j = int(np.argmin(rows)) if np.any(rows < lo) else int(np.argmax(rows))
            raise ValueError(
                f"the noise shape {label} has a standard deviation of scale {rows[j]:.3g} at grid point "
                f"index {j}, outside [2^-500, 2^500] ≈ [3e-151, 3e150]: the extent cannot be computed "
                "in floating point; rescale the noise matrix, or leave grid points this close to 0 "
                "out of the grid"
            )
        if k > T:
            raise ValueError(f"the noise factor of {label} has more columns than grid points")
        _, r = np.frexp(rows)
        Lt = np.ldexp(L, -r[:, None])
        Q, Rf = np.linalg.qr(Lt)
        sv = np.linalg.svd(Rf, compute_uv=False)
        self.kappa = float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf
        self.rounding = 8.0 * T * self.kappa**2 * _EPS
        if check and not self.rounding <= MAX_ROUNDING:
            raise ValueError(
                f"the noise shape {label} is too ill-conditioned for a reliable extent: with each grid "
                f"point scaled, its factor has condition number {self.kappa:.3g}, so rounding could move "
                f"the extent by up to {self.rounding:.2g} of itself (the limit is {MAX_ROUNDING:g}). "
                "Choose a better-conditioned noise: noise='diagonal' or 'isotropic', a covariance "
                "without nearly dependent grid points, lam further from 1, or fewer/more widely "
                "spaced grid points"
            )
        from scipy.linalg import solve_triangular

        Mt = solve_triangular(Rf, Q.T)  # L̃⁺ (k, T)
        self.M = np.ldexp(Mt, -r[None, :])

    def apply(self, v: ArrayLike) -> np.ndarray:
        """M·v for the rows of ``v`` (…, T), each row scaled by a power of two first."""
        v = np.asarray(v, dtype=float)
        top = np.max(np.abs(v), axis=-1, keepdims=True)
        _, e = np.frexp(top)
        Ms, eM = scaled(self.M)
        with np.errstate(over="ignore", under="ignore"):
            return np.ldexp(np.ldexp(v, -e) @ Ms.T, e + eM)



def noise_factor(geom: GridGeometry, noise: object, region: str, lam: float | None) -> np.ndarray:
    """The factor L (T, k) of a design's noise shape Σ = LLᵀ (:class:`~dpfda_book.mechanisms.designs.Design`).

    ``noise`` is a name ("matched", "diagonal", "isotropic", "ellipsoid") or a positive
    definite (T, T) covariance (its Cholesky factor); "matched" picks the shape of
    ``region`` (the mix: (1−λ)·diag(ΦΦᵀ) + λ·ΦΦᵀ).  A ValueError names what to change when
    the covariance is not positive definite or a rank-d shape cannot protect the set.
    """
    T, a, Phi = geom.T, geom.eval_norm, geom.Phi
    if not isinstance(noise, str):
        S = as_float_array(noise, "noise")
        if S.shape != (T, T) or not np.all(np.isfinite(S)) or not np.allclose(S, S.T):
            raise ValueError(f"noise must be a symmetric finite (T, T) matrix with T={T}")
        try:
            return np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            raise ValueError("noise must be positive definite (its Cholesky factorisation failed)") from None
    if noise == "matched":
        noise = {"box": "diagonal", "ball": "isotropic", "ellipsoid": "ellipsoid"}.get(region)
        if noise is None:  # the mix
            noise = "diagonal" if lam == 0 else "ellipsoid" if lam == 1 else None
        if noise is None and lam is not None:  # a mix strictly inside (0, 1)
            K = Phi @ Phi.T
            S = (1.0 - lam) * np.diag(np.diag(K)) + lam * K
            try:
                return np.linalg.cholesky((S + S.T) / 2.0)
            except np.linalg.LinAlgError:
                raise ValueError(
                    f"noise='matched' for lam={lam!r} is not numerically positive definite on "
                    "this grid; use lam further from 1 or noise='diagonal'"
                ) from None
    if noise == "diagonal":
        return np.diag(a)
    if noise == "isotropic":
        return np.eye(T)
    if geom.dim < T and region != "ellipsoid" and not (region == "mix" and lam == 1):
        raise ValueError(
            f"noise='ellipsoid' has rank d={geom.dim} < T={T}: it can only protect a set inside "
            "the span of Φ (region='ellipsoid'); choose a full-rank noise shape"
        )
    return Phi


class RegionInMetric(Protocol):
    """What the extent of a set reads: the set's public definition and the noise metric.

    A :class:`~dpfda_book.mechanisms.designs.Design` is one (so are the designs broken on
    purpose): ``geometry`` (the grid and space), ``region`` ("box", "ellipsoid", "mix" or
    "ball"), ``lam`` (the mix's λ), ``radius`` (B'), ``clip`` (the box's c_j), ``ball_radius``,
    the noise factor ``L`` and its :class:`Whitening`, the two parts' weights, whether the
    noise is on the coefficients (``coefficient_noise``), and a ``name`` for messages.
    """

    @property
    def geometry(self) -> GridGeometry: ...  # noqa: D102

    @property
    def region(self) -> str: ...  # noqa: D102

    @property
    def lam(self) -> float | None: ...  # noqa: D102

    @property
    def radius(self) -> float: ...  # noqa: D102

    @property
    def clip(self) -> np.ndarray | None: ...  # noqa: D102

    @property
    def ball_radius(self) -> float | None: ...  # noqa: D102

    @property
    def L(self) -> np.ndarray: ...  # noqa: D102

    @property
    def whitening(self) -> Whitening: ...  # noqa: D102

    @property
    def box_weight(self) -> float: ...  # noqa: D102

    @property
    def ellipsoid_weight(self) -> float: ...  # noqa: D102

    @property
    def coefficient_noise(self) -> bool: ...  # noqa: D102

    @property
    def name(self) -> str: ...  # noqa: D102


def cached_extent(des: RegionInMetric) -> tuple[float, dict[str, np.ndarray | None]]:
    """:func:`design_extent`, cached on everything it depends on.

    The key holds the geometry (by identity, checked on a hit), the set, λ, the noise
    factor's bytes and shape, the clipping bounds, the ball radius and the radius B'
    itself: nothing is rescaled from another radius, so a design at one radius can
    never change the extent of another.
    """
    key = (id(des.geometry), des.region, des.lam, des.L.shape, des.L.tobytes(),
           None if des.clip is None else des.clip.tobytes(), des.ball_radius, des.radius)
    hit = _EXTENTS.get(key)
    if hit is not None and hit[0] is des.geometry:
        R, ext = hit[1]
        return R, {k: (None if v is None else v.copy()) for k, v in ext.items()}
    R, ext = design_extent(des)
    if len(_EXTENTS) > 256:
        _EXTENTS.clear()
    _EXTENTS[key] = (des.geometry, (R, {k: (None if v is None else v.copy()) for k, v in ext.items()}))
    return R, ext

def design_extent(des: RegionInMetric) -> tuple[float, dict[str, np.ndarray | None]]:
    """R = max_{x ∈ C} ||L⁻¹x|| (raised by the rounding bound) and a maximiser x*.

    Computed scale-free: the set's size (c, r or B') and the whitening M are each
    written as mantissa·2^exponent, the maximisation runs on the mantissas (unit
    scale, where neither squares nor sums can over- or underflow) and the exponents
    are added at the end, so B' from 5e-324 to 2^960 gives R/B' to the same relative
    accuracy.  Where each number comes from, and its rounding:

    * ellipsoid with FTP's noise (L = Φ): R = B' exactly (L⁺Φ = I), no rounding;
    * ball of radius r: R = r·||M||₂ (SVD: largest singular value to O(T·2⁻⁵²));
    * ellipsoid with a square L: R = B'·||MΦ||₂ (the same);
    * box with diagonal L: R = ||c/ℓ||, one product and a sum of T positive squares
      (relative error <= (T + 2)·2⁻⁵³);
    * box with any other L, and the mix: the maximum over the 2^(T−1) sign vectors s
      of max_{||u||<=1} ||M((1−λ)c∘s + λB'Φu)||, by the trust-region dual
      (:func:`~dpfda_book.mechanisms.projections.trust_region_max`: an upper bound up to O(d·2⁻⁵²)).

    Every R is then multiplied by 1 + 10⁻¹⁰ + ``rounding`` (:class:`Whitening`: the
    error M itself may carry), which covers these relative errors by orders of
    magnitude; σ = 2R/(nμ) is then at least the exact σ, so the pair μ of any two
    neighbours is at most μ in exact arithmetic on the rounded summaries.
    """
    geom, W = des.geometry, des.whitening
    box_w, e_w = des.box_weight, des.ellipsoid_weight
    safety = _SAFETY + W.rounding
    Ms, eM = scaled(W.M)
    if des.region == "ball":
        assert des.ball_radius is not None
        rs, er = scaled(des.ball_radius)
        _, s, Vt = np.linalg.svd(Ms)
        return _finish(des, float(rs) * float(s[0]) * safety, er + eM), {"x": des.ball_radius * Vt[0]}
    if des.region == "ellipsoid" or (des.region == "mix" and des.lam == 1.0):
        Gs = Ms @ geom.Phi
        _, s, Vt = np.linalg.svd(Gs)
        e = des.radius * (geom.Phi @ Vt[0])
        if des.coefficient_noise:
            return des.radius, {"x": e, "e": e}  # L⁺Φ = I: R = B' exactly (FTP)
        Bs, eB = scaled(des.radius)
        return _finish(des, float(Bs) * float(s[0]) * safety, eB + eM), {"x": e, "e": e}
    c = des.clip
    assert c is not None  # a region with a box part
    if W.diagonal and e_w == 0.0:
        # PTF's analysis: coordinate j moves by 2c_j/n against noise σℓ_j, so R = ||c/ℓ||.
        # Each c_j/ℓ_j is one division of mantissas (the bits of c_j/ℓ_j wherever that is a
        # normal float), the sum of T squares on a common exponent and the root round to a
        # relative error below (T + 2)·2⁻⁵³ — the few ulps PTF's own σ_j carry; no safety
        # factor, so the box member releases exactly what PTF releases.
        mc, ec = np.frexp(c)
        ml, el = np.frexp(np.diag(des.L))
        mant, expo = mc / ml, ec.astype(np.int64) - el.astype(np.int64)
        E = int(np.max(expo))
        with np.errstate(under="ignore"):
            ratio = np.ldexp(mant, expo - E)
        return _finish(des, float(np.sqrt(ratio @ ratio)), E), {"x": c.copy()}
    signs = sign_vectors(geom.T)
    # g_s = (1−λ)·M(c∘s) and G = λB'·MΦ, both on one power-of-two scale 2^E.
    Nb, Eb = _entrywise_product(W.M, c)  # M·diag(c) = Nb·2^Eb
    MPhi, eMPhi = scaled(Ms @ geom.Phi)
    Bs, eB = scaled(des.radius)
    EG = eB + eM + eMPhi
    E = max(Eb, EG) if e_w > 0 else Eb
    with np.errstate(under="ignore"):
        g = box_w * (signs @ np.ldexp(Nb, Eb - E).T)  # (N, k)
        G = np.ldexp(e_w * float(Bs) * MPhi, EG - E) if e_w > 0 else np.zeros_like(MPhi)
    # Prune: ||g + Gu||² <= ||g||² + 2||Gᵀg|| + ||G||₂² for ||u|| <= 1, so a sign vector
    # whose bound is below a value attained by another cannot hold the maximum.
    gG = g @ G
    gGnorm = np.sqrt(np.einsum("ij,ij->i", gG, gG))
    u0 = gG / np.maximum(gGnorm, 1e-300)[:, None]
    r0 = g + u0 @ G.T
    attained = np.einsum("ij,ij->i", r0, r0)
    lower = float(np.max(attained))
    upper = np.einsum("ij,ij->i", g, g) + 2.0 * gGnorm + np.linalg.norm(G, 2) ** 2
    keep = np.union1d(np.flatnonzero(upper >= lower * (1.0 - 1e-9)), [int(np.argmax(attained))])
    values, u = trust_region_max(g[keep], G)
    best = int(np.argmax(values))
    u, best = u[best:best + 1], int(keep[best])
    b = box_w * signs[best] * c
    e = e_w * des.radius * (geom.Phi @ u[0])
    return (_finish(des, float(np.sqrt(np.max(values))) * safety, E),
            {"x": b + e, "e": e / e_w if e_w else None})

def _finish(des: RegionInMetric, mantissa: float, exponent: int) -> float:
    """R = mantissa·2^exponent as a float, or a ValueError about the user's radius."""
    with np.errstate(over="ignore", under="ignore"):
        R = float(np.ldexp(mantissa, exponent))
    what = f"region={des.region!r}" + (f", lam={des.lam!r}" if des.lam is not None else "")
    if not np.isfinite(R):
        raise ValueError(
            f"radius={des.radius!r} is too large for this design ({what}, {des.name}): its radius in "
            f"the noise metric would be about {mantissa:.4g}·2^{exponent}, beyond the floating-point "
            "range; lower the radius (or clip / ball_radius), or use a noise shape with more "
            "variance in the set's thin directions"
        )
    if R < np.finfo(float).tiny:
        raise ValueError(
            f"radius={des.radius!r} is too small for this design ({what}, {des.name}): its radius "
            f"in the noise metric, {R!r}, is not a normal floating-point number; raise the "
            "radius (or clip / ball_radius)"
        )
    return R
