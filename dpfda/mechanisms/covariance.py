"""Private covariance functions and principal components: Fit-Then-Protect and Protect-Then-Fit beyond the mean.

The covariance of n curves is their second moment less the outer product of their mean,
c(s, t) = (1/n)Σ f_i(s)f_i(t) − f̄(s)f̄(t).  Both orderings release the two parts by two
Gaussian mechanisms, composed (the chapter "Beyond the mean", ``book/covariance.ipynb``,
derives every number below):

FTP (fit, then protect)::

    x_i ──fit in the ball B'──▶ θ_i (d) ──▶ mean θ̄ (d) ──+σ_m Z──▶ θ̃          (the FTP mean, μ_mean)
                                  └──▶ θ_iθ_iᵀ (d×d) ──mean──▶ M (d×d) ──+σ_c E──▶ M̃   (μ_cov)
    Γ̃ = M̃ − θ̃θ̃ᵀ, projected onto the positive semidefinite cone

PTF (protect, then fit)::

    x_i ──clip to ±c_j──▶ mean x̄ (T) ──+σ_j Z_j──▶ x̃ ──fit──▶ θ̃                (the PTF mean, μ_mean)
      └──u_i = clip(x_i)/c──▶ u_iu_iᵀ (T×T) ──mean──▶ U ──+σ_c E──▶ Ũ          (μ_cov)
    M̃ = P(c cᵀ ⊙ Ũ)Pᵀ with P = (ΦᵀWΦ)⁻¹ΦᵀW, Γ̃ = M̃ − θ̃θ̃ᵀ, projected onto the PSD cone

Sensitivity (replace one curve, n public).  A symmetric k×k matrix S is noised in its
k(k+1)/2 free coordinates ``pack(S)`` = (S_jj, √2·S_jl for j < l), whose Euclidean norm is
the Frobenius norm of S, so a Gaussian mechanism on them is calibrated to a Frobenius
sensitivity; E is then symmetric with N(0, 1) on the diagonal and N(0, 1/2) off it.  For
records v, w of Euclidean norm at most r, ||vvᵀ − wwᵀ||_F² = ||v||⁴ + ||w||⁴ − 2(vᵀw)²
<= 2r⁴, with equality for orthogonal v, w on the sphere:

* FTP: the fits lie in the ball of radius B' (Cameron–Martin coordinates), so the mean
  of the θ_iθ_iᵀ moves by at most Δ = √2·B'²/n, σ_c = Δ/μ_cov;
* PTF: u_i lies in the cube [−1, 1]^T, ||u_i||² <= T, so Δ = √2·T/n, attained when T is
  even (two sign vectors of the cube that are orthogonal); σ_c = Δ/μ_cov, and in the
  data's units the noise on entry (j, l) has standard deviation σ_c·c_j·c_l (times 1/√2
  off the diagonal) — the analogue of Algorithm 2's σ_j ∝ c_j.

The mean is released by the package's own FTP or PTF mechanism (Algorithms 1 and 2) with
μ_mean; the two Gaussian mechanisms compose to μ = sqrt(μ_mean² + μ_cov²)-GDP
(Dong, Roth and Su's composition), which is the budget a release states.  ``mean_share``
(public) is μ_mean²/μ²; everything after the two noisy outputs (the fit of the moment,
the subtraction, the projection onto the cone, the eigen-decomposition) is
post-processing.

Floating point.  Each record's map — its fit (one call of the fitter on that record
alone, a (1, T) problem whatever the batch), or its clip and division, then the packed
outer product, element by element in a fixed order — is a function of that record
alone, bit for bit; the means are exact sums rounded once
(:func:`dpfda.maths.summation.fixed_point_mean`), whatever the order or grouping of the
records; :func:`moment_rounding_excess` bounds what rounding adds to the sensitivity, and
σ covers it as every mechanism of the package does
(:func:`dpfda.maths.summation.calibration_factor`).  The release carries the two Gaussian
outputs, public parameters and their post-processing only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.spaces import FunctionSpace, GridGeometry
from ..maths.summation import (
    MEAN_ROUNDING,
    RECORD_SLACK,
    TINY_ERR,
    bound_ball_rows,
    calibration_factor,
    fixed_point_mean,
    gamma,
)
from ..validation import check_data, check_int, check_positive, check_rng, check_secure
from . import secure as opendp_noise  # a module: its sampler is looked up at each release
from .calibration import NOISE_RESOLUTION, check_secure_budget, gaussian_sigma
from .ftp_ptf import ftp_mechanism, ptf_mechanism
from .mechanism_type import Mechanism
from .pipelines import add_noise, check_radius, fitter
from .release import Release

__all__ = [
    "SQRT2",
    "RADIUS_MAX",
    "packed_size",
    "pack_outer",
    "pack_symmetric",
    "unpack_symmetric",
    "ball_fits",
    "unit_clipped",
    "moment_rounding_excess",
    "metric_root",
    "moment_fit_matrix",
    "moment_map",
    "psd_project",
    "sample_covariance",
    "hs_error",
    "principal_components",
    "component_angles",
    "CovarianceMechanism",
    "CovarianceRelease",
    "covariance_mechanism",
    "ftp_covariance",
    "ptf_covariance",
]

SQRT2 = math.sqrt(2.0)
"""fl(√2), the weight of an off-diagonal entry among the free coordinates (slightly above √2)."""

RADIUS_MAX = 2.0**480
"""The largest B' a covariance release takes (B'², the extent of one outer product, stays below 2^960)."""


# ---------------------------------------------------------------------------
# Symmetric matrices and their free coordinates
# ---------------------------------------------------------------------------


def packed_size(k: int) -> int:
    """k(k+1)/2, the number of free coordinates of a symmetric k×k matrix."""
    k = check_int(k, "k", 1)
    return k * (k + 1) // 2


@lru_cache(maxsize=64)
def _layout(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, columns, weights) of the free coordinates: the upper triangle by rows, weight √2 off it."""
    rows, cols = np.triu_indices(k)
    weights = np.where(rows == cols, 1.0, SQRT2)
    for a in (rows, cols, weights):
        a.setflags(write=False)
    return rows, cols, weights


def pack_outer(v: ArrayLike) -> np.ndarray:
    """The free coordinates of vvᵀ for each row v (…, k): (…, k(k+1)/2).

    Element by element, in a fixed order: fl(fl(v_j·v_l)·fl(√2)) off the diagonal and
    fl(v_j²) on it, so each row's result is a function of that row alone, whatever the
    batch (no BLAS product, no reduction).  ||pack_outer(v)|| = ||v||² up to three
    roundings per coordinate.

    Examples
    --------
    >>> pack_outer([3.0, 4.0]).round(6).tolist()
    [9.0, 16.970563, 16.0]
    """
    v = np.asarray(v, dtype=float)
    rows, cols, weights = _layout(v.shape[-1])
    return (v[..., rows] * v[..., cols]) * weights


def pack_symmetric(S: ArrayLike) -> np.ndarray:
    """The free coordinates (S_jj, √2·S_jl for j < l) of symmetric matrices (…, k, k).

    The Euclidean norm of the result is the Frobenius norm of S (for symmetric S).
    """
    S = np.asarray(S, dtype=float)
    if S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"S must hold square matrices (…, k, k), got shape {S.shape}")
    rows, cols, weights = _layout(S.shape[-1])
    return S[..., rows, cols] * weights


def unpack_symmetric(p: ArrayLike) -> np.ndarray:
    """The symmetric matrices (…, k, k) whose free coordinates are ``p`` (…, k(k+1)/2)."""
    p = np.asarray(p, dtype=float)
    K = p.shape[-1]
    k = int(round((math.sqrt(8 * K + 1) - 1) / 2))
    if k * (k + 1) // 2 != K or K < 1:
        raise ValueError(f"p's last axis must have length k(k+1)/2 for some k >= 1, got {K}")
    rows, cols, weights = _layout(k)
    out = np.zeros(p.shape[:-1] + (k, k))
    vals = p / weights
    out[..., rows, cols] = vals
    out[..., cols, rows] = vals
    return out


# ---------------------------------------------------------------------------
# The per-record maps
# ---------------------------------------------------------------------------


def ball_fits(X: ArrayLike, geometry: GridGeometry, radius: float, *, exact: bool = True) -> np.ndarray:
    """Each curve's least-squares fit (W = I) in the ball of radius B': (…, n, d) coordinates.

    ``exact=True`` (what a release uses): the fitter is called on one curve at a time, a
    (1, T) problem whatever the batch; every fit's norm is then checked to be at most
    B'(1 + 2⁻⁴⁰) with a rigorous bound (:func:`dpfda.maths.summation.bound_ball_rows`).
    ``exact=False`` is the simulations' call, one call for the whole batch.  Both give the
    same bits: :class:`~dpfda.maths.fitting.BallLeastSquares` computes each row by the same
    fixed-order element-wise arithmetic whatever the batch, so each curve's fit is a
    function of that curve alone either way; the one-curve loop keeps a release from
    resting on that property of the fitter alone.
    """
    radius = check_radius(radius)
    X = np.asarray(X, dtype=float)
    solver = fitter(geometry)
    if not exact:
        coef = np.array(solver.solve(X, radius).coef, dtype=float)
        return bound_ball_rows(coef, radius)
    flat = X.reshape(-1, X.shape[-1])
    out = np.empty((flat.shape[0], geometry.dim))
    for i in range(flat.shape[0]):
        out[i] = solver.solve(flat[i : i + 1], radius).coef[0]
    bound_ball_rows(out, radius)
    return out.reshape(X.shape[:-1] + (geometry.dim,))


def unit_clipped(X: ArrayLike, clip: ArrayLike) -> np.ndarray:
    """fl(clip(x_ij, ±c_j)/c_j) for every value: each curve in the cube [−1, 1]^T.

    Clipping is exact and division rounds monotonically, so ``|u| <= 1`` exactly; element
    by element, so each curve's result depends on that curve alone.
    """
    c = np.asarray(clip, dtype=float)
    X = np.asarray(X, dtype=float)
    return np.clip(X, -c, c) / c


def moment_rounding_excess(n: int, k: int, extent: float, sup: float, bound: float, base: float) -> float:
    """Proven bound ε on the relative excess of a packed second moment's sensitivity from rounding.

    The records' exact packed outer products q_i (k×k, K = k(k+1)/2 free coordinates) lie
    in a set of Euclidean radius ``extent`` (FTP: r², r = B'(1 + ρ) the fits' checked
    norm; PTF: T), two of them differ by at most ``sup`` (√2·r², √2·T), and the noise is
    calibrated to ``base``/n (√2·B'², √2·T).  The computed p_i = :func:`pack_outer` is
    within γ₃||q_i|| of q_i (a product and a multiplication by fl(√2), each rounded), the
    exact sum cuts each coordinate towards zero by less than ``bound``·2⁻⁸⁸, and the mean
    is within γ₄||m|| + √K·2⁻¹⁰⁷⁵ of the exact mean m of the cut points
    (:func:`dpfda.maths.summation.fixed_point_mean`).  Hence neighbours' means differ by at
    most

        [sup + 2γ₃·extent + 2√K·bound·2⁻⁸⁸]/n + 2γ₄·((1 + γ₃)·extent + √K·bound·2⁻⁸⁸) + 2√K·2⁻¹⁰⁷⁵,

    and ε is that times n/``base``, minus one: about (sup/base − 1) + n·√2·γ₄, below
    2⁻³¹ (where σ keeps its formula) up to a few hundred thousand curves.

    Examples
    --------
    >>> moment_rounding_excess(100, 4, 4.0, 2**0.5 * 4.0, 1.5, 2**0.5 * 4.0) < 2**-31
    True
    """
    n = check_int(n, "n", 1)
    root_k = math.sqrt(packed_size(k))
    cut = root_k * bound * 2.0**-88
    g3, g4 = gamma(3), MEAN_ROUNDING
    moved = (sup + 2.0 * g3 * extent + 2.0 * cut) + n * (2.0 * g4 * ((1.0 + g3) * extent + cut)
                                                         + 2.0 * root_k * TINY_ERR)
    return moved / base - 1.0


# ---------------------------------------------------------------------------
# The metric of the error, and post-processing in it
# ---------------------------------------------------------------------------


@lru_cache(maxsize=128)
def metric_root(geometry: GridGeometry) -> tuple[np.ndarray, np.ndarray]:
    """(S, S⁻¹): a symmetric square root of the Gram matrix of the space's error metric, and its inverse.

    The Hilbert–Schmidt error of a covariance with Cameron–Martin coordinates Γ (d×d) is
    the Frobenius norm of SΓS, with G = S² the Gram matrix of the basis in the metric the
    space is judged by (``geometry.metric``): G = I for "IMSE" (the coordinates are
    L²[0, 1]-orthonormal: the operator norm on L²), G = ΦᵀΦ/T for "MSE" (the discrete
    inner product (1/T)Σ_j f(t_j)g(t_j) of eq. 8).  Eigenvectors u of SΓS give the
    principal components' coordinates S⁻¹u, of norm one in that metric.  Public: the
    space and the grid only.
    """
    d = geometry.dim
    if geometry.metric == "IMSE":
        eye = np.eye(d)
        eye.setflags(write=False)
        return eye, eye
    G = geometry.Phi.T @ geometry.Phi / geometry.T
    lam, V = np.linalg.eigh((G + G.T) / 2.0)
    if not lam[0] > 0:
        raise ValueError("the grid Gram matrix ΦᵀΦ/T is singular: the space has no metric on this grid")
    S = (V * np.sqrt(lam)) @ V.T
    S_inv = (V / np.sqrt(lam)) @ V.T
    for a in (S, S_inv):
        a.setflags(write=False)
    return S, S_inv


def _to_metric(Gamma: np.ndarray, geometry: GridGeometry) -> np.ndarray:
    """SΓS, symmetrised: the covariance operator in the metric's orthonormal coordinates."""
    S, _ = metric_root(geometry)
    A = S @ Gamma @ S
    return (A + np.swapaxes(A, -1, -2)) / 2.0


def _from_metric(A: np.ndarray, geometry: GridGeometry) -> np.ndarray:
    """S⁻¹AS⁻¹, symmetrised: Cameron–Martin coordinates of an operator given in the metric's."""
    _, S_inv = metric_root(geometry)
    G = S_inv @ A @ S_inv
    return (G + np.swapaxes(G, -1, -2)) / 2.0


def moment_fit_matrix(geometry: GridGeometry, weights: ArrayLike) -> np.ndarray:
    """P = (ΦᵀWΦ)⁻¹ΦᵀW (d×T): the weighted least-squares fit of grid values (eq. 4, unconstrained).

    PTF's moment on the grid, M_x, is fitted as PMₓPᵀ, the minimiser of
    ||W^{1/2}(ΦΓΦᵀ − Mₓ)W^{1/2}||_F over symmetric Γ: eq. 4 applied on both sides.
    Post-processing of public parameters.
    """
    w = np.asarray(weights, dtype=float)
    Phi = geometry.Phi
    A = Phi.T @ (w[:, None] * Phi)
    return np.linalg.solve((A + A.T) / 2.0, Phi.T * w[None, :])


_MAPS: dict = {}


def moment_map(geometry: GridGeometry, clip: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The linear map (K, d²) from PTF's packed unit moment to P·(ccᵀ ⊙ U)·Pᵀ: public parameters only.

    With q_j the j-th column of P·diag(c), the free coordinate (j, l) of U contributes
    q_jq_jᵀ (j = l) or (q_jq_lᵀ + q_lq_jᵀ)/√2 (j < l), the inverse of its √2 weight.  Cached
    by geometry, clip and weights.
    """
    key = (id(geometry), clip.tobytes(), weights.tobytes())
    hit = _MAPS.get(key)
    if hit is not None and hit[0] is geometry:
        return hit[1]
    Q = moment_fit_matrix(geometry, weights) * clip[None, :]  # (d, T)
    rows, cols, w = _layout(geometry.T)
    A = Q.T[rows][:, :, None] * Q.T[cols][:, None, :]  # (K, d, d): q_j q_lᵀ
    L = ((A + np.swapaxes(A, -1, -2)) * (w / 2.0)[:, None, None]).reshape(rows.size, -1)
    L.setflags(write=False)
    if len(_MAPS) > 32:
        _MAPS.clear()
    _MAPS[key] = (geometry, L)
    return L


def psd_project(A: ArrayLike) -> np.ndarray:
    """The nearest positive semidefinite matrix in Frobenius norm: negative eigenvalues set to 0.

    The projection onto a closed convex set that holds every covariance, so it never
    moves an estimate further from a covariance (non-expansive).
    """
    A = np.asarray(A, dtype=float)
    lam, V = np.linalg.eigh((A + np.swapaxes(A, -1, -2)) / 2.0)
    out = (V * np.clip(lam, 0.0, None)[..., None, :]) @ np.swapaxes(V, -1, -2)
    return (out + np.swapaxes(out, -1, -2)) / 2.0


def sample_covariance(coef: ArrayLike) -> np.ndarray:
    """(1/n)Σθ_iθ_iᵀ − θ̄θ̄ᵀ of coordinates (…, n, d): the non-private covariance, (…, d, d).

    Not private (it reads every record): the target the releases are compared with.
    """
    c = np.asarray(coef, dtype=float)
    mean = c.mean(axis=-2)
    centred = c - mean[..., None, :]
    return np.swapaxes(centred, -1, -2) @ centred / c.shape[-2]


def hs_error(Gamma: ArrayLike, target: ArrayLike, geometry: GridGeometry) -> np.ndarray:
    """Squared Hilbert–Schmidt error ||S(Γ − Γ₀)S||_F² in the space's metric (:func:`metric_root`)."""
    D = np.asarray(Gamma, dtype=float) - np.asarray(target, dtype=float)
    A = _to_metric(D, geometry)
    return np.sum(A * A, axis=(-2, -1))


def principal_components(Gamma: ArrayLike, geometry: GridGeometry, k: int | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues (…, k) descending, coordinates (…, d, k)) of the covariance operator Γ.

    Eigen-decomposition of SΓS (:func:`metric_root`); the coordinates S⁻¹u have norm one in
    the space's metric (the eigenfunctions are orthonormal in L²[0, 1] for "IMSE", on the
    grid's discrete inner product for "MSE").  The sign of each component is fixed so
    that its largest coordinate in the metric's basis is positive.
    """
    A = _to_metric(np.asarray(Gamma, dtype=float), geometry)
    d = A.shape[-1]
    k = d if k is None else check_int(k, "k", 1)
    if k > d:
        raise ValueError(f"k must be at most the dimension d={d}, got {k}")
    lam, U = np.linalg.eigh(A)
    lam, U = lam[..., ::-1][..., :k], U[..., :, ::-1][..., :, :k]
    top = np.take_along_axis(U, np.argmax(np.abs(U), axis=-2)[..., None, :], axis=-2)
    U = U * np.where(top < 0, -1.0, 1.0)
    _, S_inv = metric_root(geometry)
    return lam, S_inv @ U


def component_angles(Gamma: ArrayLike, target: ArrayLike, geometry: GridGeometry, k: int = 1) -> np.ndarray:
    """Angles (radians, in [0, π/2]) between the first k components of Γ and of the target (…, k).

    The angle between the eigenfunctions as elements of the metric's Hilbert space,
    arccos|⟨ψ̃_j, ψ_j⟩|; the sign of a component is arbitrary, so it does not count.
    """
    _, V1 = principal_components(Gamma, geometry, k)
    _, V0 = principal_components(target, geometry, k)
    S, _ = metric_root(geometry)
    cos = np.abs(np.sum((S @ V1) * (S @ V0), axis=-2))
    return np.arccos(np.clip(cos, 0.0, 1.0))


# ---------------------------------------------------------------------------
# The mechanism
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class CovarianceMechanism:
    """A private covariance of curves: a mean mechanism and a second-moment mechanism, composed.

    Build it with :func:`covariance_mechanism` (which checks every public parameter).
    Immutable, public parameters only, picklable.

    Attributes
    ----------
    name : str
    method : {"ftp", "ptf"}
        The ordering (module docstring).
    geometry : GridGeometry
    radius : float
        B'.
    mu : float
        The whole budget: sqrt(mu_mean² + mu_cov²).
    mu_mean, mu_cov : float
        The budgets of the mean and of the second moment.
    mean : Mechanism
        The package's FTP or PTF mechanism for the mean (Algorithm 1 or 2) at ``mu_mean``.
    clip, weights : ndarray (T,) or None
        PTF's clipping bounds and fitting weights (public); None for FTP.
    n : int or None
        If set, the only number of curves accepted.
    secure : bool
        Whether releases draw their noise with OpenDP by default.
    """

    name: str
    method: str
    geometry: GridGeometry
    radius: float
    mu: float
    mu_mean: float
    mu_cov: float
    mean: Mechanism
    clip: np.ndarray | None = None
    weights: np.ndarray | None = None
    n: int | None = None
    secure: bool = False

    def __repr__(self) -> str:
        return (f"CovarianceMechanism({self.name}, {self.geometry.space!r}, T={self.geometry.T}, "
                f"mu={self.mu:g} = sqrt({self.mu_mean:g}² + {self.mu_cov:g}²))")

    # -- sizes and calibration ------------------------------------------------------------
    @property
    def dim(self) -> int:
        """The side k of the matrix whose free coordinates are noised (d for FTP, T for PTF)."""
        return self.geometry.dim if self.method == "ftp" else self.geometry.T

    @property
    def moment_dim(self) -> int:
        """The number k(k+1)/2 of noised free coordinates of the second moment."""
        return packed_size(self.dim)

    def _n(self, n: int) -> int:
        n = check_int(n, "n", 1)
        if self.n is not None and n != self.n:
            raise ValueError(f"the datasets hold n={n} curves but {self.name} was calibrated for n={self.n}")
        return n

    def extent(self) -> float:
        """The Euclidean radius of one record's packed outer product: B'² (FTP) or T (PTF)."""
        return self.radius * self.radius if self.method == "ftp" else float(self.geometry.T)

    def moment_sensitivity(self, n: int) -> float:
        """Δ = √2·B'²/n (FTP) or √2·T/n (PTF): the Frobenius sensitivity of the mean outer product."""
        return SQRT2 * self.extent() / self._n(n)

    def moment_excess(self, n: int) -> float:
        """The proven rounding excess ε of the second moment's sensitivity (:func:`moment_rounding_excess`).

        FTP: the fits' norms are checked against B'(1 + ρ), ρ = 2⁻⁴⁰ + √d·2⁻¹⁰⁷⁵/B', so their
        outer products lie within r² = B'²(1 + ρ)²; PTF: the cube's points have ||u||² <= T.
        """
        n = self._n(n)
        if self.method == "ftp":
            rho = RECORD_SLACK + math.sqrt(self.geometry.dim) * TINY_ERR / self.radius
            r2 = (self.radius * (1.0 + rho)) ** 2
            return moment_rounding_excess(n, self.dim, r2, SQRT2 * r2, self.moment_bound(),
                                          SQRT2 * self.radius * self.radius)
        T = float(self.geometry.T)
        return moment_rounding_excess(n, self.dim, T, SQRT2 * T, self.moment_bound(), SQRT2 * T)

    def moment_bound(self) -> float:
        """A bound of every packed coordinate of one record: B'²(1 + 2⁻³⁸) (FTP), 1.5 >= √2(1 + γ₃) (PTF)."""
        if self.method == "ftp":
            return self.radius * self.radius * (1.0 + 2.0**-38)
        return 1.5

    def declared_moment_sensitivity(self, n: int) -> float:
        """The sensitivity told to OpenDP: Δ times σ's rounding factor (so ρ = μ_cov²/2 exactly as σ's formula)."""
        return self.moment_sensitivity(n) * calibration_factor(self.moment_excess(n), "the second moment")

    def moment_sigma(self, n: int) -> float:
        """σ_c = Δ(1 + ε)/μ_cov (ε covered only where it exceeds 2⁻³¹, as everywhere in the package)."""
        n = self._n(n)
        sigma = gaussian_sigma(self.moment_sensitivity(n), self.mu_cov, rounding=self.moment_excess(n))
        if sigma < NOISE_RESOLUTION * (self.extent() if self.method == "ftp" else 1.0):
            raise ValueError(
                f"the second moment's noise scale {sigma:.3g} is below 2^-40 of the extent of a record "
                "(n·mu_cov is too large: rounding would erase the noise)")
        return sigma

    def mean_sigma(self, n: int) -> float | np.ndarray:
        """σ of the mean: 2B'/(nμ_mean) (FTP) or σ_j = 2c_j√T/(nμ_mean) (PTF)."""
        return self.mean.sigma(self._n(n))

    def privacy(self, n: int) -> float:
        """The μ of the GDP guarantee of a release on n curves: sqrt(μ_mean² + μ_cov²)."""
        self.mean_sigma(n)
        self.moment_sigma(n)
        return self.mu

    # -- the per-record maps and the summaries (non-private) ------------------------------
    def records(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(first parts (…, n, ·), packed outer products (…, n, K)) of each record, alone.

        FTP: the fits θ_i (d) and pack_outer(θ_i); PTF: the clipped values clip(x_i) (T)
        and pack_outer(fl(clip(x_i)/c)).  Each row is a function of that record alone, bit
        for bit (``exact=True``).  Not private: for the audit, tests and simulations.
        """
        X = check_data(X, self.geometry.T)
        if self.method == "ftp":
            fits = ball_fits(X, self.geometry, self.radius, exact=exact)
            return fits, pack_outer(fits)
        c = np.asarray(self.clip, dtype=float)
        return np.clip(X, -c, c), pack_outer(unit_clipped(X, c))

    def summary(self, X: ArrayLike, *, exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(mean centre (…, d or T), moment centre (…, K)): the two non-private summaries noised.

        Exact sums rounded once (:func:`dpfda.maths.summation.fixed_point_mean`) whatever
        the order or grouping of the records.  ``exact=False``: the simulations' batched fits
        (the sums are still exact).
        """
        X = check_data(X, self.geometry.T)
        self._n(X.shape[-2])
        first, packed = self.records(X, exact=exact)
        if self.method == "ftp":
            return fixed_point_mean(first, self.radius), fixed_point_mean(packed, self.moment_bound())
        c = np.asarray(self.clip, dtype=float)
        return fixed_point_mean(first, c), fixed_point_mean(packed, self.moment_bound())

    # -- releases -----------------------------------------------------------------------
    def privatize(self, mean_centre: ArrayLike, moment_centre: ArrayLike, mean_normals: ArrayLike,
                  moment_normals: ArrayLike, n: int) -> CovarianceRelease:
        """The two summaries plus noise from the given standard normals, then the post-processing.

        The simulations' entry point (normals shared or drawn in bulk): μ-GDP only if the
        normals are fresh draws, independent of the data and never published.
        ``mean_normals`` (…, ``mean.noise_dim``), ``moment_normals`` (…, ``moment_dim``).
        """
        n = self._n(n)
        sigma_c = self.moment_sigma(n)
        moment_centre = np.asarray(moment_centre, dtype=float)
        moment_normals = np.asarray(moment_normals, dtype=float)
        if moment_normals.shape[-1:] != (self.moment_dim,):
            raise ValueError(f"moment_normals must have {self.moment_dim} entries on the last axis, "
                             f"got shape {moment_normals.shape}")
        mean_rel = self.mean.privatize(mean_centre, mean_normals, n)
        noisy = add_noise(moment_centre, sigma_c, moment_normals)
        return self.post(mean_rel, noisy, n, secure=False)

    def release(self, X: ArrayLike | Curves, rng: np.random.Generator | None, *,
                secure: bool | None = None) -> CovarianceRelease:
        """A private covariance of data ``X``: sqrt(μ_mean² + μ_cov²)-GDP.

        ``X``: an array (n, T) or (reps, n, T) on the mechanism's grid, or a
        :class:`dpfda.Curves` on that grid (:func:`dpfda.maths.curves.as_curves`).

        Every public parameter, both σ and (secure) OpenDP's budgets are checked before the
        data are read; both summaries are computed before any noise is drawn; the noise
        comes from ``rng`` (the mean's normals, then the moment's) or, with ``secure``, from
        OpenDP (``rng`` may then be None).
        """
        secure = self.secure if secure is None else check_secure(secure)
        if rng is None and not secure:
            raise TypeError("rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)); "
                            "only secure=True, whose noise comes from OpenDP, may leave it out")
        if not (secure and rng is None):
            rng = check_rng(rng)
        if secure:
            check_secure_budget(self.mu_mean)
            check_secure_budget(self.mu_cov)
        curves = as_curves(X, self.geometry.grid)
        if not (curves.common and np.array_equal(curves.grid, self.geometry.grid)):
            raise ValueError("X: a private covariance needs every curve on the mechanism's grid; put curves "
                             "measured at their own points on it first by a per-subject map (Curves.on_grid)")
        values = curves.values
        assert values is not None  # a common grid
        n = self._n(values.shape[-2])
        sigma_m, sigma_c = self.mean_sigma(n), self.moment_sigma(n)  # errors before the data are read
        mean_centre, moment_centre = self.summary(values)
        if secure:
            noisy_mean = self.mean.calibration.secure_noisy(mean_centre, n, self.mu_mean, sigma_m)
            noisy = opendp_noise.gaussian_release(moment_centre, sigma_c,
                                                  sensitivity=self.declared_moment_sensitivity(n), mu=self.mu_cov)
            mean_rel = self.mean.post_process(noisy_mean, n, secure=True)
            return self.post(mean_rel, noisy, n, secure=True)
        assert rng is not None
        normals_m = rng.standard_normal(mean_centre.shape[:-1] + (self.mean.noise_dim,))
        normals_c = rng.standard_normal(moment_centre.shape[:-1] + (self.moment_dim,))
        mean_rel = self.mean.privatize(mean_centre, normals_m, n)
        noisy = add_noise(moment_centre, sigma_c, normals_c)
        return self.post(mean_rel, noisy, n, secure=False)

    def __call__(self, X: ArrayLike | Curves, rng: np.random.Generator | None, *,
                 secure: bool | None = None) -> CovarianceRelease:
        """The same as :meth:`release`."""
        return self.release(X, rng, secure=secure)

    def moment_matrix(self, noisy_moment: ArrayLike) -> np.ndarray:
        """The noisy second moment in Cameron–Martin coordinates (…, d, d): post-processing.

        FTP: the unpacked matrix itself.  PTF: the grid moment c_jc_l·Ũ_jl fitted on both
        sides by P (:func:`moment_fit_matrix`), P·(ccᵀ ⊙ Ũ)·Pᵀ, computed as one linear map of
        the free coordinates (:func:`moment_map`), so a batch never builds its T×T matrices.
        """
        noisy_moment = np.asarray(noisy_moment, dtype=float)
        if self.method == "ftp":
            return unpack_symmetric(noisy_moment)
        L = moment_map(self.geometry, np.asarray(self.clip, dtype=float), np.asarray(self.weights, dtype=float))
        d = self.geometry.dim
        out = (noisy_moment @ L).reshape(noisy_moment.shape[:-1] + (d, d))
        return (out + np.swapaxes(out, -1, -2)) / 2.0

    def post(self, mean_release: Release, noisy_moment: ArrayLike, n: int, *,
             secure: bool = False) -> CovarianceRelease:
        """The post-processing of the two Gaussian outputs, as a :class:`CovarianceRelease`.

        Γ̃ = M̃ − θ̃θ̃ᵀ (θ̃ the mean release's coordinates), then the nearest positive
        semidefinite operator in the space's metric (:func:`psd_project` of SΓ̃S).
        """
        n = self._n(n)
        noisy_moment = np.asarray(noisy_moment, dtype=float)
        theta = np.asarray(mean_release.coef, dtype=float)
        raw = self.moment_matrix(noisy_moment) - theta[..., :, None] * theta[..., None, :]
        projected = _from_metric(psd_project(_to_metric(raw, self.geometry)), self.geometry)
        return CovarianceRelease(mechanism=self, n=n, mean=mean_release, noisy_moment=noisy_moment,
                                 moment_scale=self.moment_sigma(n), unprojected=raw, coef=projected,
                                 secure=check_secure(secure))


# ---------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------


class CovarianceRelease:
    """A private covariance operator and its principal components (a release of :class:`CovarianceMechanism`).

    What it holds — and so what anyone holding it, or its pickle, can learn — is the
    output of two Gaussian mechanisms (``mean``, itself a :class:`~dpfda.mechanisms.release.Release`,
    and ``noisy_moment``), the public parameters of its mechanism, and functions of those:
    ``unprojected`` = M̃ − θ̃θ̃ᵀ and ``coef``, its projection onto the positive semidefinite
    cone (Cameron–Martin coordinates, (…, d, d)).  No array has an axis of length n; no
    non-private intermediate (the moments before noise, the fits) is kept.

    Attributes
    ----------
    mechanism : CovarianceMechanism
    method : {"ftp", "ptf"}
    geometry : GridGeometry
    n : int
    mu, mu_mean, mu_cov : float
        The whole budget, sqrt(mu_mean² + mu_cov²), and its two parts.
    mean : Release
        The private mean (FTP or PTF, at ``mu_mean``).
    noisy_moment : ndarray (…, K)
        The second moment's free coordinates plus N(0, σ_c²) noise (the Gaussian output).
    moment_scale : float
        σ_c.
    unprojected, coef : ndarray (…, d, d)
        Γ̃ before and after the projection onto the positive semidefinite cone.
    secure : bool
        Whether the noise came from OpenDP.
    """

    def __init__(self, *, mechanism: CovarianceMechanism, n: int, mean: Release, noisy_moment: np.ndarray,
                 moment_scale: float, unprojected: np.ndarray, coef: np.ndarray, secure: bool) -> None:
        self.mechanism = mechanism
        self.n = n
        self.mean = mean
        self.noisy_moment = noisy_moment
        self.moment_scale = moment_scale
        self.unprojected = unprojected
        self.coef = coef
        self.secure = secure

    method = property(lambda self: self.mechanism.method)
    geometry = property(lambda self: self.mechanism.geometry)
    space = property(lambda self: self.mechanism.geometry.space)
    grid = property(lambda self: self.mechanism.geometry.grid)
    mu = property(lambda self: self.mechanism.mu)
    mu_mean = property(lambda self: self.mechanism.mu_mean)
    mu_cov = property(lambda self: self.mechanism.mu_cov)
    radius = property(lambda self: self.mechanism.radius)

    @property
    def shape(self) -> tuple[int, ...]:
        """Repetition axes (() for one dataset)."""
        return tuple(self.coef.shape[:-2])

    def __repr__(self) -> str:
        reps = f", shape={self.shape}" if self.shape else ""
        return (f"CovarianceRelease({self.method}, {self.space!r}, T={self.geometry.T}, n={self.n}, "
                f"mu={self.mu:g}{reps})")

    def components(self, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(eigenvalues (…, k) descending, coordinates (…, d, k)): :func:`principal_components` of ``coef``."""
        return principal_components(self.coef, self.geometry, k)

    def eigenfunctions(self, t: ArrayLike, k: int = 1) -> np.ndarray:
        """The first k principal components at points ``t`` of [0, 1]: (…, k, len(t))."""
        _, V = self.components(k)
        return self.geometry.evaluate(np.swapaxes(V, -1, -2), t)

    def covariance(self, s: ArrayLike, t: ArrayLike) -> np.ndarray:
        """The released covariance function c̃(s_a, t_b): (…, len(s), len(t))."""
        d = self.geometry.dim
        Bs = self.geometry.evaluate(np.eye(d), s)
        Bt = self.geometry.evaluate(np.eye(d), t)
        return Bs.T @ self.coef @ Bt

    def error(self, target: ArrayLike) -> np.ndarray:
        """Squared Hilbert–Schmidt error against target coordinates (d, d) (:func:`hs_error`)."""
        return hs_error(self.coef, target, self.geometry)

    def angles(self, target: ArrayLike, k: int = 1) -> np.ndarray:
        """Angles between the first k components and the target's (:func:`component_angles`)."""
        return component_angles(self.coef, target, self.geometry, k)


# ---------------------------------------------------------------------------
# Constructors and one-call releases
# ---------------------------------------------------------------------------


def _split(mu: float, mean_share: float, secure: bool) -> tuple[float, float, float]:
    mu = check_secure_budget(mu) if secure else check_positive(mu, "mu")
    share = check_positive(mean_share, "mean_share")
    if not share < 1:
        raise ValueError(f"mean_share must lie in (0, 1) (the share μ_mean²/μ² of the budget spent on "
                         f"the mean), got {mean_share!r}")
    mu_mean = mu * math.sqrt(share)
    mu_cov = mu * math.sqrt(1.0 - share)
    return mu, mu_mean, mu_cov


def covariance_mechanism(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float, *,
                         method: str = "ftp", mean_share: float = 0.5, clip: ArrayLike | None = None,
                         weights: ArrayLike | None = None, n: int | None = None,
                         secure: bool = False) -> CovarianceMechanism:
    """A private covariance mechanism (module docstring), μ-GDP with μ = ``mu`` in all.

    ``method``: "ftp" or "ptf"; ``mean_share``: the share μ_mean²/μ² of the budget for the
    mean (public, in (0, 1); default an even split, μ_mean = μ_cov = μ/√2); ``clip`` and
    ``weights`` as for :func:`dpfda.ptf` (PTF only; default c_j = B'·a_j, W = diag(a_j⁻²));
    ``n``: if given, the only number of curves accepted; ``secure``: OpenDP's noise by
    default.  B' must be at most 2^480 (so that B'² is a float).

    Examples
    --------
    >>> from dpfda import LegendreSpace, uniform_grid
    >>> mech = covariance_mechanism(uniform_grid(20), LegendreSpace(4), 1.0, 1.0)
    >>> round(mech.moment_sigma(100) * 100 * mech.mu_cov, 12), mech.moment_dim
    (1.414213562373, 10)
    """
    if not isinstance(space, FunctionSpace):
        raise TypeError(f"space must be a FunctionSpace (an orthonormal space such as LegendreSpace, "
                        f"or a KernelSpace), got {type(space).__name__}")
    if method not in ("ftp", "ptf"):
        raise ValueError(f"method must be 'ftp' or 'ptf', got {method!r}")
    secure = check_secure(secure)
    radius = check_radius(radius)
    if radius > RADIUS_MAX:
        raise ValueError(f"radius must be at most 2^480 ≈ 3.1e144 for a covariance (B'² must stay "
                         f"below 2^960), got {radius!r}")
    if clip is not None and method == "ftp" or weights is not None and method == "ftp":
        raise ValueError("clip and weights apply to method='ptf' only")
    mu, mu_mean, mu_cov = _split(mu, mean_share, secure)
    declared = None if n is None else check_int(n, "n", 1)
    if method == "ftp":
        mean = ftp_mechanism(grid, space, radius, mu_mean, n=declared, secure=secure)
        c = w = None
    else:
        mean = ptf_mechanism(grid, space, radius, mu_mean, clip=clip, weights=weights, n=declared,
                             secure=secure)
        c = mean.clip
        w = np.array(getattr(mean.post, "weights"), dtype=float)
        w.setflags(write=False)
    mech = CovarianceMechanism(name=method.upper() + " covariance" + (" (OpenDP)" if secure else ""),
                               method=method, geometry=mean.geometry, radius=radius, mu=mu, mu_mean=mu_mean,
                               mu_cov=mu_cov, mean=mean, clip=c, weights=w, n=declared, secure=secure)
    if declared is not None:
        mech.privacy(declared)
    return mech


def ftp_covariance(X: ArrayLike, grid: ArrayLike, space: FunctionSpace, radius: float, mu: float,
                   rng: np.random.Generator | None = None, *, mean_share: float = 0.5,
                   secure: bool = False) -> CovarianceRelease:
    """Fit-Then-Protect covariance and principal components of curves ``X`` (n, T), μ-GDP in all.

    ``covariance_mechanism(..., method="ftp").release(X, rng)``; see the module docstring.
    """
    return covariance_mechanism(grid, space, radius, mu, method="ftp", mean_share=mean_share,
                                secure=secure).release(X, rng)


def ptf_covariance(X: ArrayLike, grid: ArrayLike, space: FunctionSpace, radius: float, mu: float,
                   rng: np.random.Generator | None = None, *, mean_share: float = 0.5,
                   clip: ArrayLike | None = None, weights: ArrayLike | None = None,
                   secure: bool = False) -> CovarianceRelease:
    """Protect-Then-Fit covariance and principal components of curves ``X`` (n, T), μ-GDP in all.

    ``covariance_mechanism(..., method="ptf").release(X, rng)``; see the module docstring.
    """
    return covariance_mechanism(grid, space, radius, mu, method="ptf", mean_share=mean_share, clip=clip,
                                weights=weights, secure=secure).release(X, rng)
