"""The error bounds and limits of §4.2 (Theorems 10–11, 13–14, Corollaries 12, 15).

Every bound takes the grid geometry of a space (``space.at(grid)``): a
:class:`~dpfda.maths.spaces.LegendreGeometry` for H_m or a
:class:`~dpfda.maths.spaces.KernelGeometry` for an RKHS, which is how this module
tells the two apart (``_is_legendre``); the noise scales and the default
weights come from :mod:`dpfda.mechanisms.pipelines`, the one place those formulas live.
Every bound returns a :class:`Bound`: its value, whether the theorem's condition on B'
holds, and the condition in words.  A bound whose condition fails is still
computed (it is a formula) but says so in ``holds`` and ``condition``; use
``bound.require()`` to turn a failed condition into a ``ValueError``.

Note on Theorem 10.  The displayed statement (9) writes the constraint term as
(1 - 1/n)·sqrt(3κ(M)σ₀² tr M⁻¹)·exp(…), while its proof (eqs. 24–32) derives
(1 - 1/n)·κ(M)·√3·σ₀²·tr(M⁻¹)·exp(…).  The proof's form is the one that
follows from the argument (and has the units of an IMSE), so we implement it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..maths.rounding import eigh_rtol
from ..maths.spaces import GridGeometry, KernelGeometry, LegendreGeometry
from ..maths.summation import gamma
from ..validation import check_int, check_nonnegative, check_positive, check_rng
from .pipelines import (
    check_radius,
    fitter,
    ftp_sigma,
    ptf_clip_bounds,
    ptf_default_weights,
    ptf_sigmas,
    ptf_weight_vector,
)

__all__ = [
    "Bound",
    "tau",
    "ftp_noiseless_error",
    "ftp_unconstrained_terms",
    "ptf_unconstrained_error",
    "ftp_imse_bound",
    "ptf_imse_lower_bound",
    "ftp_mse_bound",
    "ptf_mse_lower_bound",
    "ratio_limit",
    "ratio_limit_upper",
    "quad_ratio_mean",
    "quad_ratio_mean_and_accuracy",
    "ptf_saturated_error",
    "ptf_A",
    "chi2_tail_bound",
    "IdenticalCurvesError",
    "ftp_identical_curves",
    "quad_form_moments",
]


@dataclass(frozen=True)
class Bound:
    """A bound of the paper with the status of its condition."""

    value: float
    holds: bool
    condition: str
    theorem: str

    def require(self) -> "Bound":
        """Return the bound, or raise ``ValueError`` if its condition fails."""
        if not self.holds:
            raise ValueError(f"{self.theorem}: condition fails: {self.condition}")
        return self

    def __float__(self) -> float:
        return float(self.value)


def _is_legendre(geometry: GridGeometry) -> bool:
    """The kind of space, decided one way: H_m (True) or an RKHS (False)."""
    if isinstance(geometry, LegendreGeometry):
        return True
    if isinstance(geometry, KernelGeometry):
        return False
    raise TypeError(
        "geometry must be the geometry of an orthonormal space or a KernelSpace (use space.at(grid)), "
        f"got {type(geometry).__name__}"
    )


def _common(geometry: GridGeometry, radius: float, n: int, mu: float) -> tuple[float, int, float]:
    _is_legendre(geometry)
    return (check_positive(radius, "radius"), check_int(n, "n", 1), check_positive(mu, "mu"))


def _bound_args(
    geometry: GridGeometry, B: float, radius: float, n: int, mu: float, sigma0: float = 0.0
) -> tuple[float, int, float, float, float]:
    """The checked arguments of a bound: (B', n, μ, B, σ₀)."""
    radius, n, mu = _common(geometry, radius, n, mu)
    return radius, n, mu, check_positive(B, "B"), check_nonnegative(sigma0, "sigma0")


def tau(radius: float, T: int, n: int, mu: float) -> float:
    """τ = 2B'·sqrt(T)/(nμ), the PTF noise level of Theorems 11 and 14.

    It is PTF's σ_j (:func:`dpfda.ptf_sigmas`) for clipping bounds
    c_j = B', i.e. σ_j/a_j under the default clipping.

    >>> round(tau(1.0, 4, 10, 1.0), 12)
    0.4
    """
    T = check_int(T, "T", 1)
    return float(ptf_sigmas(n, np.full(T, check_positive(radius, "radius")), mu)[0])


def ptf_A(geometry: GridGeometry, weights: ArrayLike | None = None) -> np.ndarray:
    """A = ΦᵀWΦ with the default W = diag(a_j^{-2}) (Theorems 11, 14)."""
    w = ptf_default_weights(geometry) if weights is None else np.asarray(weights, dtype=float)
    return geometry.Phi.T @ (w[:, None] * geometry.Phi)


def ftp_noiseless_error(geometry: GridGeometry, radius: float, n: int, mu: float) -> float:
    """Exact noiseless FTP error for B' >= B.

    H_m: IMSE = 4mB'²/(n²μ²) (Theorem 10).  H_K: MSE = 4B'² tr(K_T)/(n²μ²T) (Theorem 13).
    """
    radius, n, mu = _common(geometry, radius, n, mu)
    s2 = ftp_sigma(n, radius, mu) ** 2
    if _is_legendre(geometry):
        return s2 * geometry.dim
    return s2 * np.trace(geometry.Phi @ geometry.Phi.T) / geometry.T


def ftp_unconstrained_terms(geometry: GridGeometry, radius: float, n: int, mu: float,
                            sigma0: float) -> tuple[float, float]:
    """FTP's error when nothing binds, as (sampling part, privacy part), in closed form.

    The sampling part is (σ₀²/n)·tr(Q(ΦᵀΦ)⁻¹), with Q the metric of the space: I for the
    IMSE of H_m, ΦᵀΦ/T for the grid MSE of an RKHS, where it is σ₀²·d/(nT) exactly. The
    privacy part is :func:`ftp_noiseless_error`. These are the floors of the design-space
    chapter's proposition, which ``Design.unconstrained_error`` attains for FTP.
    """
    radius, n, mu = _common(geometry, radius, n, mu)
    sigma0 = check_nonnegative(sigma0, "sigma0")
    if _is_legendre(geometry):
        trace = float(np.trace(np.linalg.inv(geometry.Phi.T @ geometry.Phi)))
    else:
        trace = geometry.dim / geometry.T
    return sigma0**2 / n * trace, ftp_noiseless_error(geometry, radius, n, mu)


def ptf_unconstrained_error(geometry: GridGeometry, radius: float, n: int, mu: float) -> float:
    """PTF error when neither clipping nor the ball binds (σ₀ = 0).

    H_m: τ² tr(A⁻¹) (eq. 33).  H_K: τ² tr(W⁻¹)/T (eq. 60–61).
    """
    radius, n, mu = _common(geometry, radius, n, mu)
    t2 = tau(radius, geometry.T, n, mu) ** 2
    if _is_legendre(geometry):
        return t2 * np.trace(np.linalg.inv(ptf_A(geometry)))
    return t2 * np.sum(geometry.eval_norm**2) / geometry.T


def chi2_tail_bound(m: int, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Laurent–Massart: P(χ²_m >= m + 2 sqrt(m x) + 2x) <= exp(-x) (eq. 27).

    Returns the pair (threshold, bound) for each x >= 0.
    """
    m = check_int(m, "m", 1)
    x = np.asarray(x, dtype=float)
    if np.any(x < 0) or not np.all(np.isfinite(x)):
        raise ValueError("x must be finite and >= 0")
    return m + 2.0 * np.sqrt(m * x) + 2.0 * x, np.exp(-x)


def _remainder(delta_scaled: float, root_dim: float) -> float:
    return float(np.exp(-0.25 * (delta_scaled - root_dim) ** 2))


def ftp_imse_bound(geometry: GridGeometry, B: float, radius: float, n: int, mu: float,
                   sigma0: float) -> Bound:
    """Theorem 10: upper bound on IMSE_FTP in H_m (exact when σ₀ = 0).

    σ₀ > 0 requires B' >= B + sqrt(m)σ₀/sqrt(λ_min(M)); σ₀ = 0 requires B' >= B.
    """
    radius, n, mu, B, sigma0 = _bound_args(geometry, B, radius, n, mu, sigma0)
    if not isinstance(geometry, LegendreGeometry):
        raise TypeError("Theorem 10 concerns the geometry of an orthonormal H_m (a LegendreGeometry)")
    m = geometry.dim
    privacy = ftp_noiseless_error(geometry, radius, n, mu)
    if sigma0 == 0.0:
        return Bound(privacy, radius >= B, f"B' = {radius:g} >= B = {B:g}", "Theorem 10")
    M = geometry.M
    lam = np.linalg.eigvalsh(M)
    kappa = lam[-1] / lam[0]
    trMinv = np.trace(np.linalg.inv(M))
    need = B + np.sqrt(m) * sigma0 / np.sqrt(lam[0])
    value = (privacy + kappa * sigma0**2 * trMinv / n
             + (1 - 1 / n) * kappa * np.sqrt(3) * sigma0**2 * trMinv
             * _remainder((radius - B) * np.sqrt(lam[0]) / sigma0, np.sqrt(m)))
    return Bound(float(value), radius >= need,
                 f"B' = {radius:g} >= B + sqrt(m)σ₀/sqrt(λ_min(M)) = {need:g}", "Theorem 10")


def ptf_imse_lower_bound(geometry: GridGeometry, B: float, radius: float, n: int,
                         mu: float) -> Bound:
    """Theorem 11 (eq. 10): lower bound on IMSE_PTF in H_m, σ₀ = 0.

    Requires B' >= B + τ sqrt(m)/sqrt(λ_min(A)).
    """
    radius, n, mu, B, _ = _bound_args(geometry, B, radius, n, mu)
    if not isinstance(geometry, LegendreGeometry):
        raise TypeError("Theorem 11 concerns the geometry of an orthonormal H_m (a LegendreGeometry)")
    m = geometry.dim
    A = ptf_A(geometry)
    lam = np.linalg.eigvalsh(A)
    t = tau(radius, geometry.T, n, mu)
    need = B + t * np.sqrt(m) / np.sqrt(lam[0])
    base = t**2 * np.trace(np.linalg.inv(A))
    value = base * (1 - np.sqrt(3) * _remainder((radius - B) * np.sqrt(lam[0]) / t, np.sqrt(m)))
    return Bound(float(value), radius >= need,
                 f"B' = {radius:g} >= B + τ sqrt(m)/sqrt(λ_min(A)) = {need:g}", "Theorem 11")


def ftp_mse_bound(geometry: GridGeometry, B: float, radius: float, n: int, mu: float,
                  sigma0: float) -> Bound:
    """Theorem 13 (eq. 58): upper bound on MSE_FTP in H_K (exact when σ₀ = 0).

    σ₀ > 0 requires B' >= B + σ₀ sqrt(T)/sqrt(λ_min(K_T)); σ₀ = 0 requires B' >= B.
    """
    radius, n, mu, B, sigma0 = _bound_args(geometry, B, radius, n, mu, sigma0)
    if not isinstance(geometry, KernelGeometry):
        raise TypeError("Theorem 13 concerns a KernelSpace geometry")
    T = geometry.T
    privacy = ftp_noiseless_error(geometry, radius, n, mu)
    if sigma0 == 0.0:
        return Bound(privacy, radius >= B, f"B' = {radius:g} >= B = {B:g}", "Theorem 13")
    lam_min = float(geometry.eigenvalues[0])
    need = B + sigma0 * np.sqrt(T) / np.sqrt(lam_min)
    value = (privacy + sigma0**2 / n
             + (1 - 1 / n) * sigma0**2 * np.sqrt((T + 2) / T)
             * _remainder((radius - B) * np.sqrt(lam_min) / sigma0, np.sqrt(T)))
    return Bound(float(value), radius >= need,
                 f"B' = {radius:g} >= B + σ₀ sqrt(T)/sqrt(λ_min(K_T)) = {need:g}", "Theorem 13")


def ptf_mse_lower_bound(geometry: GridGeometry, B: float, radius: float, n: int,
                        mu: float) -> Bound:
    """Theorem 14 (eq. 12): lower bound on MSE_PTF in H_K, σ₀ = 0.

    Requires B' >= B + τ sqrt(T)/sqrt(λ_min(A)), A = K_T^{1/2} W K_T^{1/2}.
    """
    radius, n, mu, B, _ = _bound_args(geometry, B, radius, n, mu)
    if not isinstance(geometry, KernelGeometry):
        raise TypeError("Theorem 14 concerns a KernelSpace geometry")
    T = geometry.T
    A = ptf_A(geometry)
    lam = np.linalg.eigvalsh(A)
    t = tau(radius, T, n, mu)
    need = B + t * np.sqrt(T) / np.sqrt(lam[0])
    base = t**2 * np.sum(geometry.eval_norm**2) / T
    value = base * (1 - np.sqrt(3) * _remainder((radius - B) * np.sqrt(lam[0]) / t, np.sqrt(T)))
    return Bound(float(value), radius >= need,
                 f"B' = {radius:g} >= B + τ sqrt(T)/sqrt(λ_min(A)) = {need:g}", "Theorem 14")


def ratio_limit(geometry: GridGeometry) -> float:
    """The noiseless limit bound on FTP/PTF error as n → ∞.

    H_m: m/(T tr A⁻¹) (Corollary 12).  H_K: tr(K_T)/(T tr W⁻¹) = 1/T (Corollary 15).
    """
    T = geometry.T
    if _is_legendre(geometry):
        return geometry.dim / (T * np.trace(np.linalg.inv(ptf_A(geometry))))
    trK = np.trace(geometry.Phi @ geometry.Phi.T)
    return trK / (T * np.sum(geometry.eval_norm**2))


def quad_ratio_mean(A: ArrayLike, B: ArrayLike) -> float:
    """E[zᵀAz / zᵀBz] for z ~ N(0, I_d), A symmetric and B symmetric positive definite.

    From 1/q = ∫₀^∞ e^{−tq} dt and the Gaussian integrals E[z_j² e^{−t zᵀΛz}]:

        E[zᵀAz / zᵀBz] = ∫₀^∞ det(I + 2tB)^{−1/2} · tr(A (I + 2tB)^{−1}) dt,

    evaluated in the eigenbasis of B (where only the diagonal of A counts) by adaptive
    quadrature on t = u/(1 − u), u ∈ [0, 1), to a relative 1e-12.  Exact in special cases:
    A = B gives 1, and B = I gives tr(A)/d (zᵀz is independent of the direction ``z/|z|``).
    :func:`quad_ratio_mean_and_accuracy` also returns how far the value may be from the exact one.

    Examples
    --------
    >>> round(quad_ratio_mean(np.diag([1.0, 3.0]), np.eye(2)), 12)
    2.0
    >>> round(quad_ratio_mean(np.diag([4.0, 1.0]), np.diag([2.0, 1.0])), 10)  # 3 − √2
    1.5857864376
    """
    return quad_ratio_mean_and_accuracy(A, B)[0]


_QUAD_LIMIT = 400
"""Subintervals the adaptive quadrature may use (QUADPACK's ``limit``)."""


def quad_ratio_mean_and_accuracy(A: ArrayLike, B: ArrayLike) -> tuple[float, float]:
    """:func:`quad_ratio_mean` and an absolute bound on its distance from the exact expectation.

    The accuracy is the sum of four terms, each relative to R = ``E[zᵀ|Â|z / zᵀBz]`` (Â the
    diagonal of A in B's computed eigenbasis, R = the value itself when A is positive
    semidefinite; otherwise a second quadrature with ``|Â|``):

    * the quadrature's own error: QUADPACK's estimate ``abserr`` (scipy.integrate.quad),
      Gauss–Kronrod 21-point differences on each subinterval.  This is an estimate, designed
      to be pessimistic for smooth integrands, not a proof; the integrand here is smooth on
      [0, 1) (analytic in t, with an integrable endpoint at u = 1);
    * the integrand's rounding: t = u/(1 − u) and g = 1 + 2tλ to γ₄; each log g to γ₄ plus
      ``u·|log g|`` with ``|log g| < 38`` (t < 2⁵³); their sum γ_d; the exponential adds u to the
      error of its argument; Σ a/g to γ_{d+5} of ``Σ|a|/g``; the Jacobian γ₃.  At most
      γ_{20(d+1)²} of the ``|Â|``-integrand at each node, and the quadrature's positive-weight
      sums over 21 nodes and at most 400 subintervals add γ_{421}: (γ_{20(d+1)²} + γ_{421})·R;
    * B's eigendecomposition (:func:`dpfda.maths.rounding.eigh_rtol`, e): the computed
      eigenvalues are exact for B + E with ‖E‖₂ <= e·λ_max, which moves every zᵀBz by at most
      e·κ(B) of itself, so each ratio and the mean by eκ/(1 − eκ) of R, with
      κ = λ_max/(λ_min − eλ_max) from the computed eigenvalues;
    * A's diagonal in that basis: V̂ is within e of orthogonal, so each â_j = v̂_jᵀAv̂_j is
      within (3e + √d·γ_{2d+1})·‖A‖₂ of the exact one (the einsum's rounding over ``|v̂|ᵀ|A||v̂|``),
      which moves the mean by that times ``E[|z|²/zᵀBz] <= 1/λ_min``.

    Returns ``(value, accuracy)``; the accuracy is ``inf`` when e·κ(B) >= 1/2, where the
    first-order bounds no longer hold.

    >>> value, acc = quad_ratio_mean_and_accuracy(np.diag([4.0, 1.0]), np.diag([2.0, 1.0]))
    >>> bool(abs(value - (3 - np.sqrt(2))) <= acc < 1e-11)
    True
    """
    from scipy.integrate import quad  # here: importing dpfda (a simulation worker) needs no scipy

    A = np.atleast_2d(np.asarray(A, dtype=float))
    B = np.atleast_2d(np.asarray(B, dtype=float))
    if A.ndim != 2 or A.shape[0] != A.shape[1] or B.shape != A.shape:
        raise ValueError(f"A and B must be square matrices of one shape, got {A.shape} and {B.shape}")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise ValueError("A and B must be finite")
    lam, V = np.linalg.eigh((B + B.T) / 2.0)
    if lam[0] <= 0.0:
        raise ValueError(f"B must be positive definite, got smallest eigenvalue {lam[0]:.3g}")
    A_sym = (A + A.T) / 2.0
    a = np.einsum("ji,jk,ki->i", V, A_sym, V)  # diagonal of VᵀAV
    scale = float(lam[-1])
    lam = lam / scale  # t is measured in units of 1/λ_max: the integral is scale-free

    def integral(weights: np.ndarray) -> tuple[float, float]:
        def integrand(u: float) -> float:
            if u >= 1.0:
                return 0.0
            t = u / (1.0 - u)
            g = 1.0 + 2.0 * t * lam
            return float(np.exp(-0.5 * np.sum(np.log(g))) * np.sum(weights / g)) / (1.0 - u) ** 2

        value, abserr = quad(integrand, 0.0, 1.0, epsabs=0.0, epsrel=1e-12, limit=_QUAD_LIMIT)
        return float(value) / scale, float(abserr) / scale

    value, abserr = integral(a)
    d = a.size
    e = eigh_rtol(d)
    if e * float(lam[-1]) >= 0.5 * float(lam[0]):
        return value, float("inf")
    kappa = float(lam[-1]) / (float(lam[0]) - e * float(lam[-1]))
    size = value if np.all(a >= 0) else integral(np.abs(a))[0]
    rounding = gamma(20 * (d + 1) ** 2) + gamma(_QUAD_LIMIT + 21)
    basis = e * kappa / (1.0 - e * kappa)
    diagonal = (3 * e + np.sqrt(d) * gamma(2 * d + 1)) * float(np.linalg.norm(A_sym, 2)) * kappa / scale
    return value, float(abserr + (rounding + basis) * size + diagonal)


def ptf_saturated_error(geometry: GridGeometry, radius: float, target: ArrayLike,
                        clip: ArrayLike | None = None, weights: ArrayLike | None = None) -> float:
    """The limit of PTF's noiseless error as its noise grows without bound (nμ → 0).

    PTF's fit minimises (x̃ − Φθ)ᵀW(x̃ − Φθ) over the ball ||θ|| <= B′, where x̃ = f̄ + Dz
    holds the (unclipped: noiseless values of norm at most B′ never reach the clip) means
    plus noise of scales D = diag(σ_j), σ_j ∝ c_j.  As D grows, the linear term of the
    objective dominates its bounded quadratic one and the fit tends to the point of the
    ball's sphere along g = ΦᵀWDz, θ = B′g/||g||.  Its error against the target θ̄ in the
    metric Q of the space (I for the IMSE of H_m, ΦᵀΦ/T for the grid MSE of an RKHS) has
    expectation

        B′² · E[gᵀQg / gᵀg] + θ̄ᵀQθ̄

    (the cross term vanishes: z and −z are equally likely), where g ~ N(0, MMᵀ),
    M = ΦᵀWD, and the expectation is :func:`quad_ratio_mean` of (LQL, L²), L = (MMᵀ)^{1/2}.
    It is B′² + ||θ̄||² in H_m (Q = I), and for a kernel with K(t, t) = 1 (W = I, D ∝ I)
    it is (B′²·E[zᵀK_T²z / zᵀK_Tz] + ||f̄(t)||²)/T: the "size" of the ball in the grid
    metric, larger when K_T's spectrum is concentrated on few eigenvalues.

    ``target`` is θ̄, the coordinates of the mean (``geometry.coef_from_values``);
    ``clip`` and ``weights`` as for :func:`dpfda.ptf` (default: c_j = B′a_j, W = diag(a_j⁻²)).
    """
    radius = check_radius(radius)
    _is_legendre(geometry)
    target = np.asarray(target, dtype=float)
    if target.shape != (geometry.dim,) or not np.all(np.isfinite(target)):
        raise ValueError(f"target must be a finite vector of length {geometry.dim}, got shape {target.shape}")
    c = ptf_clip_bounds(geometry, radius, clip)
    w = ptf_weight_vector(geometry, weights)
    M = geometry.Phi.T * (w * c)[None, :]  # ΦᵀWD, with D = diag(c) (the scale cancels)
    G = M @ M.T
    lam, V = np.linalg.eigh((G + G.T) / 2.0)
    if lam[0] <= 0.0:
        raise ValueError("ΦᵀWD must have full row rank (d <= T with a positive definite geometry)")
    L = (V * np.sqrt(lam)) @ V.T
    Q = np.eye(geometry.dim) if geometry.metric == "IMSE" else geometry.Phi.T @ geometry.Phi / geometry.T
    return radius**2 * quad_ratio_mean(L @ Q @ L, G) + float(target @ Q @ target)


def ratio_limit_upper(geometry: GridGeometry) -> float:
    """The dimension-only bound: 1/m (Corollary 12) or 1/T (Corollary 15)."""
    return 1.0 / (geometry.dim if _is_legendre(geometry) else geometry.T)


def quad_form_moments(Sigma: ArrayLike, scale: float = 1.0) -> tuple[float, float]:
    """Mean and standard deviation of scale·||v||² for v ~ N(0, Σ).

    tr(Σ) and sqrt(2 tr(Σ²)), times ``scale``.  A release's error is such a
    quadratic form whenever no constraint binds (e.g. FTP's σ²||ξ||², PTF's
    τ²ξᵀA⁻¹ξ), so a Monte Carlo check can use this exact standard deviation
    instead of the sample one: the sample standard deviation of a skewed error
    is itself noisy, and too small exactly when the sample mean is too small.

    Examples
    --------
    >>> quad_form_moments(np.eye(3))  # ||ξ||² ~ χ²_3: mean 3, variance 6
    (3.0, 2.449489742783178)
    """
    S = np.atleast_2d(np.asarray(Sigma, dtype=float))
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"Sigma must be a square matrix, got shape {S.shape}")
    if not np.all(np.isfinite(S)):
        raise ValueError("Sigma must be finite")
    scale = check_nonnegative(scale, "scale")
    return scale * float(np.trace(S)), scale * float(np.sqrt(2.0 * np.trace(S @ S)))


@dataclass(frozen=True)
class IdenticalCurvesError:
    """FTP's error when all n curves are one curve: a Monte Carlo estimate for any n.

    With every curve equal to the same function, the n fits are i.i.d. draws of one
    fit θ̂ (bias b = E θ̂ − θ, covariance C), so the error of their average plus FTP's
    privacy noise is exactly ``err(b) + tr(QC)/n + privacy(n)``, where ``err`` is the
    chapter's metric with matrix Q (I for the IMSE of H_m, K_T/T for the grid MSE of an
    RKHS).  One sample of single-curve fits therefore estimates the error for every
    n, including sample sizes too large to simulate curve by curve.
    """

    geometry: GridGeometry
    radius: float
    bias_sq: float  # unbiased estimate of err(b)
    spread: float  # estimate of tr(QC)
    var_bias_sq: float  # variance of the bias_sq estimate (first order)
    var_spread: float  # variance of the spread estimate
    draws: int

    def estimate(self, n: int, mu: float) -> tuple[float, float]:
        """(error estimate, Monte Carlo standard error) at sample size n, budget μ."""
        n = check_int(n, "n", 1)
        privacy = ftp_noiseless_error(self.geometry, self.radius, n, mu)
        est = privacy + self.bias_sq + self.spread / n
        se = np.sqrt(self.var_bias_sq + self.var_spread * (1 / n - 1 / self.draws) ** 2)
        return float(est), float(se)


def ftp_identical_curves(geometry: GridGeometry, radius: float, coef: ArrayLike, sigma0: float,
                         draws: int, rng: np.random.Generator,
                         chunk: int = 200_000) -> IdenticalCurvesError:
    """Fit ``draws`` noisy copies of the curve with coordinates ``coef`` as FTP does.

    Each copy is the curve's grid values plus N(0, σ₀²I) observation noise, fitted by
    FTP's ball-constrained least squares (W = I, radius B′).  Returns the moments that
    give FTP's expected error for n copies of the curve (:class:`IdenticalCurvesError`).
    """
    radius = check_radius(radius)
    sigma0 = check_positive(sigma0, "sigma0")
    draws = check_int(draws, "draws", 2)
    chunk = check_int(chunk, "chunk", 1)
    rng = check_rng(rng)
    coef = np.asarray(coef, dtype=float)
    if coef.shape != (geometry.dim,) or not np.all(np.isfinite(coef)):
        raise ValueError(f"coef must be a finite vector of length {geometry.dim}, "
                         f"got shape {coef.shape}")
    Q = np.eye(geometry.dim) if geometry.metric == "IMSE" else geometry.Phi.T @ geometry.Phi / geometry.T
    values = geometry.Phi @ coef
    solver = fitter(geometry)
    parts = []
    for start in range(0, draws, chunk):
        k = min(chunk, draws - start)
        X = values + sigma0 * rng.standard_normal((k, geometry.T))
        parts.append(solver.solve(X, radius).coef)
    fits = np.concatenate(parts)
    centre = fits.mean(axis=0)
    d = fits - centre
    C = d.T @ d / (draws - 1)
    b = centre - coef
    s = np.einsum("ij,jk,ik->i", d, Q, d) * draws / (draws - 1)  # unbiased for tr(QC)
    spread = float(s.mean())
    QCQ = Q @ C @ Q
    var_b = 4 * float(b @ QCQ @ b) / draws + 2 * float(np.trace(Q @ C @ Q @ C)) / draws**2
    return IdenticalCurvesError(geometry=geometry, radius=float(radius),
                                bias_sq=float(b @ Q @ b) - spread / draws, spread=spread,
                                var_bias_sq=var_b, var_spread=float(s.var(ddof=1)) / draws,
                                draws=draws)
