"""The errors of the private covariances in closed form: Hilbert–Schmidt error and principal angles.

For a :class:`~dpfda.mechanisms.covariance.CovarianceMechanism` on n curves, in the
orthonormal coordinates of the space's error metric (:func:`~dpfda.mechanisms.covariance.metric_root`,
S = G^{1/2}), the released covariance before the projection onto the cone is

    SΓ̃S = SΓS + E_c − (aeᵀ + eaᵀ + eeᵀ),   a = Sθ̄,

where E_c = σ_c·Q·Sym(Z)·Qᵀ is the second moment's noise (Sym(Z) symmetric, N(0, 1) on
the diagonal and N(0, 1/2) off it) and e ~ N(0, Σ_e) the mean's noise, both mapped by
the post-processing — provided no constraint binds: the fits of FTP reproduce the curves
(noiseless curves of norm at most B'), PTF clips nothing and its fit of the mean stays
inside its ball.  Then (the chapter "Beyond the mean" derives each line):

* FTP: Q = S, Σ_e = σ_m²·S²;
* PTF: Q = S·P·diag(c), Σ_e = S·P·diag(σ_j²)·Pᵀ·S, with P = (ΦᵀWΦ)⁻¹ΦᵀW;
* E||E_c||_F² = (σ_c²/2)·((tr R)² + tr R²), R = QQᵀ (Isserlis);
* E||aeᵀ + eaᵀ + eeᵀ||_F² = 2||a||²tr Σ_e + 2aᵀΣ_e a + (tr Σ_e)² + 2 tr Σ_e² (odd moments vanish),

so :func:`expected_hs_error` is exact for the unprojected estimate under those
conditions; the projection onto the cone can only lower the error (it is non-expansive
and the target lies in the cone).  For the principal components, first-order
perturbation of the eigenvector u_k of SΓS gives

    E sin²∠(ψ̃_k, ψ_k) ≈ Σ_{j≠k} [ (σ_c²/2)((u_jᵀRu_j)(u_kᵀRu_k) + (u_jᵀRu_k)²)
                                   + (α_j u_k + β_k u_j)ᵀ Σ_e (α_j u_k + β_k u_j) ] / (λ_k − λ_j)²,

α_j = u_jᵀa, β_k = u_kᵀa (:func:`first_order_angles`): asymptotic, as the noise becomes
small against the eigengaps.  Every term is proportional to 1/n² (σ_c, σ_m ∝ 1/n), apart
from the mean's quadratic terms (1/n⁴), which gives the limits of :func:`limit_ratio` and
the sample size :func:`recovery_n` at which the first-order angle reaches a given value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..validation import check_int, check_positive
from .covariance import CovarianceMechanism, metric_root, moment_fit_matrix

__all__ = [
    "NoiseModel",
    "noise_model",
    "error_terms",
    "expected_hs_error",
    "first_order_angles",
    "limit_ratio",
    "recovery_n",
]


@dataclass(frozen=True)
class NoiseModel:
    """The law of a covariance release's noise in the metric's orthonormal coordinates.

    Attributes
    ----------
    moment_factor : ndarray (d, k)
        Q: the second moment's noise is σ_c·Q·Sym(Z)·Qᵀ, Sym(Z) (k×k) symmetric with N(0, 1)
        on its diagonal and N(0, 1/2) off it.
    moment_sigma : float
        σ_c.
    mean_cov : ndarray (d, d)
        Σ_e, the covariance of the mean's noise in the metric's coordinates.
    """

    moment_factor: np.ndarray
    moment_sigma: float
    mean_cov: np.ndarray

    @property
    def moment_gram(self) -> np.ndarray:
        """R = QQᵀ (d, d)."""
        return self.moment_factor @ self.moment_factor.T


def noise_model(mech: CovarianceMechanism, n: int) -> NoiseModel:
    """Q, σ_c and Σ_e of a mechanism on n curves (module docstring); public parameters only."""
    if not isinstance(mech, CovarianceMechanism):
        raise TypeError(f"mech must be a CovarianceMechanism, got {type(mech).__name__}")
    S, _ = metric_root(mech.geometry)
    sigma_c = mech.moment_sigma(n)
    sigma_m = np.asarray(mech.mean_sigma(n), dtype=float)
    if mech.method == "ftp":
        return NoiseModel(moment_factor=np.array(S), moment_sigma=sigma_c, mean_cov=float(sigma_m) ** 2 * (S @ S))
    P = moment_fit_matrix(mech.geometry, np.asarray(mech.weights, dtype=float))
    SP = S @ P
    Q = SP * np.asarray(mech.clip, dtype=float)[None, :]
    return NoiseModel(moment_factor=Q, moment_sigma=sigma_c, mean_cov=(SP * sigma_m**2) @ SP.T)


def _metric_mean(mech: CovarianceMechanism, mean_coef: ArrayLike) -> np.ndarray:
    S, _ = metric_root(mech.geometry)
    a = np.asarray(mean_coef, dtype=float)
    if a.shape != (mech.geometry.dim,):
        raise ValueError(f"mean_coef must have length d={mech.geometry.dim}, got shape {a.shape}")
    return S @ a


def error_terms(mech: CovarianceMechanism, n: int, mean_coef: ArrayLike) -> dict[str, float]:
    """The three parts of the expected squared Hilbert–Schmidt error (unprojected, no constraint binding).

    ``moment``: (σ_c²/2)((tr R)² + tr R²); ``mean_linear``: 2||a||²tr Σ_e + 2aᵀΣ_e a;
    ``mean_quadratic``: (tr Σ_e)² + 2 tr Σ_e²; a = Sθ̄ for the target mean's coordinates θ̄.
    """
    model = noise_model(mech, n)
    a = _metric_mean(mech, mean_coef)
    R, Se = model.moment_gram, model.mean_cov
    tr_r, tr_e = float(np.trace(R)), float(np.trace(Se))
    return {
        "moment": model.moment_sigma**2 / 2.0 * (tr_r**2 + float(np.sum(R * R))),
        "mean_linear": 2.0 * float(a @ a) * tr_e + 2.0 * float(a @ Se @ a),
        "mean_quadratic": tr_e**2 + 2.0 * float(np.sum(Se * Se)),
    }


def expected_hs_error(mech: CovarianceMechanism, n: int, mean_coef: ArrayLike) -> float:
    """E||S(Γ̃ − Γ)S||_F² of the unprojected release, exact where no constraint binds (module docstring).

    The target Γ does not enter: the noise is additive in the second moment and the mean's
    noise enters through θ̄ only.  An upper bound of the projected release's error.
    """
    return float(sum(error_terms(mech, n, mean_coef).values()))


def first_order_angles(mech: CovarianceMechanism, n: int, target: ArrayLike, mean_coef: ArrayLike,
                       k: int = 1) -> np.ndarray:
    """First-order E sin² of the angle between the j-th released and target components, j < k (module docstring).

    ``target`` (d, d) are the target covariance's Cameron–Martin coordinates; its first k
    eigenvalues must be simple (``ValueError`` otherwise: the angle is not defined).
    """
    k = check_int(k, "k", 1)
    model = noise_model(mech, n)
    S, _ = metric_root(mech.geometry)
    A = S @ np.asarray(target, dtype=float) @ S
    lam, U = np.linalg.eigh((A + A.T) / 2.0)
    lam, U = lam[::-1], U[:, ::-1]
    d = lam.size
    if k > d:
        raise ValueError(f"k must be at most d={d}, got {k}")
    a = _metric_mean(mech, mean_coef)
    R, Se, s2 = model.moment_gram, model.mean_cov, model.moment_sigma**2
    RU = U.T @ R @ U  # u_jᵀRu_l
    proj = U.T @ a
    out = np.zeros(k)
    for kk in range(k):
        total = 0.0
        for j in range(d):
            if j == kk:
                continue
            gap = lam[kk] - lam[j]
            if not abs(gap) > 1e-12 * max(abs(lam[0]), 1e-300):
                raise ValueError(f"eigenvalue {kk + 1} of the target is not simple: its component is not defined")
            v = proj[j] * U[:, kk] + proj[kk] * U[:, j]
            var = s2 / 2.0 * (RU[j, j] * RU[kk, kk] + RU[j, kk] ** 2) + float(v @ Se @ v)
            total += var / gap**2
        out[kk] = total
    return out


def limit_ratio(ftp: CovarianceMechanism, ptf: CovarianceMechanism, mean_coef: ArrayLike) -> float:
    """lim_{n→∞} of FTP's expected Hilbert–Schmidt error over PTF's (fixed T, B', budgets).

    n² times each error converges to its moment and linear mean terms (the quadratic mean
    term is O(1/n⁴)); evaluated at n = 1 where σ is exactly its formula (no rounding cover).
    """
    num = error_terms(ftp, 1, mean_coef)
    den = error_terms(ptf, 1, mean_coef)
    return (num["moment"] + num["mean_linear"]) / (den["moment"] + den["mean_linear"])


def recovery_n(mech: CovarianceMechanism, target: ArrayLike, mean_coef: ArrayLike, angle: float) -> float:
    """The n at which the first-order root-mean-square sine of the first component's angle is sin(angle).

    First-order E sin² = κ/n² (every term of :func:`first_order_angles` scales as 1/n²), so
    n* = √κ / sin(angle); κ is computed at n = 1.  ``angle`` in radians, in (0, π/2).
    """
    angle = check_positive(angle, "angle")
    if not angle < math.pi / 2:
        raise ValueError(f"angle must lie in (0, π/2) radians, got {angle!r}")
    kappa = float(first_order_angles(mech, 1, target, mean_coef, 1)[0])
    return math.sqrt(kappa) / math.sin(angle)
