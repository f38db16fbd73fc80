"""The generative models of the paper's simulations (§5 and the appendix).

* Polynomial setup (appendix): f_i = θ_iᵀφ with θ_i uniform in the m-ball of
  radius B, so ||f_i||_{L²} = ||θ_i||_2 <= B.
* RKHS setup (§5): f_i = α_iᵀK_c(·) over M = 20 kernel centres, with
  ||f_i||_{H_K} = sqrt(α_iᵀK_Cα_i) <= B and a non-zero mean direction.
* Observations (eq. 2, A.2): x_ij = f_i(t_j) + ε_ij, ε_ij ~ N(0, σ₀²).

The paper leaves the law of α_i open ("i.i.d. with a nonzero mean direction
from a common bounded distribution").  We use

    α_i = B · U_i · (a + ε_i) / ||a + ε_i||_{K_C},   a = (1, …, 1),
    ε_i ~ N(0, I_M),   U_i ~ Uniform(0, 1),

with equally spaced centres c_k = (k - 1)/(M - 1).  Why: the norm of f_i is
exactly B·U_i <= B, so A.1 holds by construction, never at the boundary
with probability one; the shared vector a (a sum of Gaussian bumps, a smooth
hump) dominates the K_C-norm of a + ε_i, which gives the non-trivial mean
function the paper asks for; and the coefficients stay of order one, so no
ill-conditioned K_C^{-1/2} is ever formed.  Results that depend on this
choice (for example the exact activation probabilities of Table 1) may differ
from the paper's numbers; the book says so where it matters.

Latent laws
-----------
Because the paper does not state its laws, the book tests its conclusions
against a family fixed in advance (:data:`LAWS`).  ``"default"`` is the pair of
laws above.  ``"shift-S"``, S ∈ {0, 0.25, 0.5, 0.75, 0.9}, and ``"wave-S"``,
S ∈ {0.25, 0.5, 0.75, 0.9}, make every curve

    f_i = (1 − S)·g_i + S·B·h,

with g_i centred and ||g_i|| <= B and h a fixed function of norm one, so
||f_i|| <= B always and the mean curve has norm about S·B:

* polynomial: g_i has coefficients uniform in the B-ball; ``shift``: h has
  coefficients (1, …, 1)/√m; ``wave``: h = φ_m, the basis function of highest
  degree;
* RKHS (M centres c_k): g_i = B·U_i·ε_iᵀK_c(·)/||ε_iᵀK_c||_H with ε_i ~ N(0, I_M),
  U_i ~ U(0, 1); ``shift``: h ∝ Σ_k K(c_k, ·); ``wave``: h ∝ Σ_k sin(3πc_k)K(c_k, ·),
  each scaled to ||h||_H = 1.

S = 0 is the centred law, the same for both shapes: it has one name, ``shift-0``
(a second name would count its results twice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dpfda.maths.spaces import Kernel, LegendreSpace, OrthonormalSpace, gaussian_kernel
from dpfda.validation import check_int, check_nonnegative, check_positive, check_rng

__all__ = [
    "LAWS",
    "LAW_SHIFTS",
    "check_law",
    "PolynomialCurves",
    "KernelCurves",
    "polynomial_curves",
    "rkhs_curves",
    "polynomial_direction",
    "kernel_direction",
    "observe",
    "uniform_ball",
]


LAW_SHIFTS = (0.0, 0.25, 0.5, 0.75, 0.9)
"""The shares S of the mean direction in the ``shift-S`` and ``wave-S`` laws."""

LAWS = ("default",) + tuple(f"{shape}-{S:g}" for shape in ("shift", "wave") for S in LAW_SHIFTS
                            if S > 0 or shape == "shift")
"""The latent laws, fixed before any run (``default``, ``shift-S`` and ``wave-S``; the centred law S = 0
is ``shift-0`` only)."""


def check_law(law: object) -> str:
    """``law`` if it names a member of :data:`LAWS`, else ``ValueError``/``TypeError``."""
    if not isinstance(law, str):
        raise TypeError(f"law must be a string naming a latent law, got {type(law).__name__}")
    if law not in LAWS:
        raise ValueError(f"unknown law {law!r}; choose one of {', '.join(LAWS)}")
    return law


def _law_parts(law: str) -> tuple[str, float]:
    """("default", 0) or (shape, S) for a checked law name."""
    if law == "default":
        return "default", 0.0
    shape, share = law.split("-", 1)
    return shape, float(share)


def uniform_ball(n: int, dim: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    """n points uniform in the dim-dimensional Euclidean ball of the given radius."""
    n = check_int(n, "n", 1)
    dim = check_int(dim, "dim", 1)
    radius = check_positive(radius, "radius")
    rng = check_rng(rng)
    z = rng.standard_normal((n, dim))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    r = radius * rng.random(n) ** (1.0 / dim)
    return z * r[:, None]


@dataclass(frozen=True)
class PolynomialCurves:
    """n latent curves θ_iᵀφ in an orthonormal space (the paper's: a Legendre space)."""

    space: OrthonormalSpace
    theta: np.ndarray  # (n, m)

    @property
    def n(self) -> int:
        """Number of curves."""
        return self.theta.shape[0]

    def values(self, t: ArrayLike) -> np.ndarray:
        """(n, len(t)) curve values."""
        return self.space.evaluate(self.theta, t)

    def mean_values(self, t: ArrayLike) -> np.ndarray:
        """Values of the sample mean f̄ at points ``t``, shape (len(t),)."""
        return self.space.evaluate(self.theta.mean(axis=0), t)

    @property
    def mean_coef(self) -> np.ndarray:
        """θ̄, the coefficients of the target f̄."""
        return self.theta.mean(axis=0)

    def norms(self) -> np.ndarray:
        """Norms ||θ_i||_2 of the curves in H_m (= their L² norms), shape (n,)."""
        return self.space.norm(self.theta)


@dataclass(frozen=True)
class KernelCurves:
    """n latent curves Σ_k α_ik K(c_k, ·) in an RKHS."""

    kernel: Kernel
    centers: np.ndarray  # (M,)
    alpha: np.ndarray  # (n, M)

    @property
    def n(self) -> int:
        """Number of curves."""
        return self.alpha.shape[0]

    def values(self, t: ArrayLike) -> np.ndarray:
        """Values of the curves at points ``t``, shape (n, len(t))."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        return self.alpha @ self.kernel(self.centers[:, None], t[None, :])

    def mean_values(self, t: ArrayLike) -> np.ndarray:
        """Values of the sample mean f̄ at points ``t``, shape (len(t),)."""
        return self.values(t).mean(axis=0)

    def norms(self) -> np.ndarray:
        """RKHS norms sqrt(α_iᵀ K_C α_i)."""
        K = self.kernel.gram(self.centers)
        return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", self.alpha, K, self.alpha), 0.0))


def polynomial_direction(shape: str, m: int) -> np.ndarray:
    """The unit coefficient vector h of the ``shape`` laws in H_m: (1, …, 1)/√m (shift) or e_m (wave)."""
    m = check_int(m, "m", 1)
    if shape == "shift":
        return np.full(m, 1.0 / np.sqrt(m))
    if shape == "wave":
        return np.eye(m)[-1]
    raise ValueError(f"shape must be 'shift' or 'wave', got {shape!r}")


def kernel_direction(shape: str, kernel: Kernel, centers: ArrayLike) -> np.ndarray:
    """The coefficients α_h (on the kernel sections at ``centers``) of the ``shape`` laws' h, ||h||_H = 1.

    shift: h ∝ Σ_k K(c_k, ·); wave: h ∝ Σ_k sin(3πc_k) K(c_k, ·).
    """
    c = np.asarray(centers, dtype=float)
    if shape == "shift":
        h = np.ones(c.size)
    elif shape == "wave":
        h = np.sin(3.0 * np.pi * c)
    else:
        raise ValueError(f"shape must be 'shift' or 'wave', got {shape!r}")
    KC = kernel.gram(c)
    return h / np.sqrt(float(h @ KC @ h))


def polynomial_curves(n: int, m: int, rng: np.random.Generator, *, B: float = 1.0,
                      law: str = "default", space: OrthonormalSpace | None = None) -> PolynomialCurves:
    """θ_i i.i.d. uniform in the m-ball of radius B (appendix, polynomial setup).

    With ``law="shift-S"`` or ``"wave-S"`` (module docstring), θ_i = (1 − S)·g_i
    + S·B·h with g_i drawn as above and h = (1, …, 1)/√m or e_m.  The coefficients are
    those of ``space``, an orthonormal H_m of dimension m (default the Legendre space: the
    paper's); the draws do not depend on it.
    """
    if space is None:
        space = LegendreSpace(m)
    if not isinstance(space, OrthonormalSpace) or space.m != m:
        raise ValueError(f"space must be an orthonormal space of dimension m={m}, got {space!r}")
    B = check_positive(B, "B")
    shape, share = _law_parts(check_law(law))
    theta = uniform_ball(n, space.m, B, rng)
    if shape != "default":
        theta = (1.0 - share) * theta + share * B * polynomial_direction(shape, space.m)
    return PolynomialCurves(space=space, theta=theta)


def rkhs_curves(n: int, rng: np.random.Generator, *, kernel: Kernel | None = None, centers: int = 20,
                B: float = 1.0, law: str = "default") -> KernelCurves:
    """α_i as described in the module docstring (§5, RKHS simulation setup).

    ``law="default"``: the law of the module docstring.  ``"shift-S"``,
    ``"wave-S"``: α_i = (1 − S)·α_g + S·B·α_h with α_g = B·U_i·ε_i/||ε_i||_{K_C}
    (ε_i, then U_i, drawn for all curves in that order) and α_h the
    coefficients of h, scaled to ||h||_H = 1.
    """
    n = check_int(n, "n", 1)
    M = check_int(centers, "centers", 1)
    B = check_positive(B, "B")
    rng = check_rng(rng)
    shape, share = _law_parts(check_law(law))
    kernel = gaussian_kernel(0.2) if kernel is None else kernel
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a dpfda Kernel, got {type(kernel).__name__}")
    c = np.linspace(0.0, 1.0, M) if M > 1 else np.array([0.5])
    KC = kernel.gram(c)
    knorm = lambda a: np.sqrt(np.maximum(np.einsum("...j,jk,...k->...", a, KC, a), 0.0))  # noqa: E731
    if shape == "default":
        direction = np.ones(M) + rng.standard_normal((n, M))
        u = rng.random(n)
        alpha = B * (u / knorm(direction))[:, None] * direction
        return KernelCurves(kernel=kernel, centers=c, alpha=alpha)
    eps = rng.standard_normal((n, M))
    u = rng.random(n)
    alpha = B * (u / knorm(eps))[:, None] * eps
    if share > 0:
        alpha = (1.0 - share) * alpha + share * B * kernel_direction(shape, kernel, c)
    return KernelCurves(kernel=kernel, centers=c, alpha=alpha)


def observe(F: ArrayLike, sigma0: float, rng: np.random.Generator, reps: int | None = None) -> np.ndarray:
    """Noisy observations X = F + σ₀ε (eq. 2, A.2).

    ``F`` is (n, T); with ``reps`` the result is (reps, n, T), fresh noise per
    repetition around the same latent curves.  σ₀ = 0 returns copies of F.
    """
    sigma0 = check_nonnegative(sigma0, "sigma0")
    rng = check_rng(rng)
    F = np.asarray(F, dtype=float)
    if F.ndim != 2:
        raise ValueError(f"F must be 2-D (n, T), got shape {F.shape}")
    shape = F.shape if reps is None else (check_int(reps, "reps", 1),) + F.shape
    if sigma0 == 0.0:
        return np.broadcast_to(F, shape).copy()
    return F + sigma0 * rng.standard_normal(shape)

