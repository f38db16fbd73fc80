"""Function spaces: the Legendre space H_m and kernel spaces H_K of the paper, and a periodic Fourier H_m.

Both pipelines see a space only through its *grid geometry* (``space.at(grid)``):

* ``Phi`` — a design matrix (T, d) taking Cameron–Martin coordinates to grid
  values.  For ``LegendreSpace`` and ``FourierSpace`` these are the orthonormal coefficients θ
  (Example 1, d = m); for ``KernelSpace`` they are β = K_T^{-1/2} f on the
  span of the kernel sections K(t_j, ·) (proof of Theorem 13, eqs. 37 and 41),
  with Phi = K_T^{1/2} and d = T.  In both cases the Cameron–Martin norm of
  the function is the Euclidean norm of its coordinates.
* ``eval_norm`` — ``a_j = sup_{||f|| <= 1} |f(t_j)|``, the norm of evaluation at
  t_j on the unit ball: ||φ(t_j)||_2 for H_m, sqrt(K(t_j, t_j)) for H_K.  It
  gives PTF's default clipping c_j = B' a_j and weights W = diag(a_j^{-2})
  (Theorems 11 and 14).
* ``evaluate(coef, t)`` — the function with those coordinates, anywhere on [0, 1].
* ``error(coef, target)`` — the paper's utility criterion: IMSE (eq. 7) for
  H_m, computed exactly through the coefficients, and grid MSE (eq. 8) for H_K.

Every space implements :class:`FunctionSpace` (the contract, as scikit-fda's
``Basis``: the public :meth:`~dpfda.FunctionSpace.at` checks the grid, then calls
the space's own ``_geometry``); its geometry is a :class:`LegendreGeometry`
or a :class:`KernelGeometry`, whose typed fields hold what each kind of
space adds (M = ΦᵀΦ; K_T, K_T^{-1/2} and its eigenvalues).

Every space also describes itself (:attr:`~dpfda.FunctionSpace.spec`): a short string —
``legendre:8``, ``fourier:7``, ``gaussian:0.2``, ``brownian``, a kernel space's options
after it (``gaussian:0.05:regularize``) — that :func:`~dpfda.space_from_spec` reads
back into an equal space.  Two spaces are equal (and hash alike) when they are of one class
and have one spec, and the spec holds every number that defines the space; the command line
(``--space``), the record of a release (:func:`dpfda.practice.publish.space_description`) and
the cached geometries all go through it.  :data:`SPACE_FAMILIES` is the one list of the
families a spec can name; :attr:`~dpfda.FunctionSpace.nests` says whether a family indexed by its
dimension nests (what :func:`dpfda.mechanisms.dimension.public_dimension` needs).

Shapes follow the project convention: coefficients (..., d), grid values (..., T).
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar, cast

import numpy as np
from numpy.polynomial import legendre as _leg
from numpy.typing import ArrayLike

from ..validation import (
    AssumptionError,
    check_grid,
    check_int,
    check_points,
    check_positive,
    check_rng,
)

__all__ = [
    "space_from_spec",
    "FunctionSpace",
    "OrthonormalSpace",
    "LegendreSpace",
    "FourierSpace",
    "KernelSpace",
    "Kernel",
    "GaussianKernel",
    "BrownianKernel",
    "MaternKernel",
    "gaussian_kernel",
    "brownian_kernel",
    "GridGeometry",
    "LegendreGeometry",
    "KernelGeometry",
    "uniform_grid",
]

EIGEN_FLOOR = 1e-8
"""The eigenvalue floor for K_T used by the paper's implementation (§5)."""


def uniform_grid(T: int) -> np.ndarray:
    """The equally spaced grid t_j = (j - 1) / (T - 1), j = 1, ..., T (§5).

    Parameters
    ----------
    T : int
        Number of grid points, at least 2.

    Examples
    --------
    >>> uniform_grid(5)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    T = check_int(T, "T", 2)
    return np.linspace(0.0, 1.0, T)


# ---------------------------------------------------------------------------
# Specs: a space as a short string
# ---------------------------------------------------------------------------


def _spec_names(form: str) -> list[str]:
    """The names of a spec form's numbers: ``name:A,B`` -> ``["A", "B"]``, ``name`` -> ``[]``."""
    _, _, args = form.partition(":")
    return args.split(",") if args else []


def _spec_parts(text: str, family: str, form: str) -> tuple[list[str], list[str]]:
    """The numbers (as texts) and the options of ``family[:A,B][:OPTION...]``, checked against ``form``."""
    if not isinstance(text, str):
        raise TypeError(f"a space spec must be a string such as {form!r}, got {type(text).__name__}")
    head, *parts = [part.strip() for part in text.strip().split(":")]
    if head != family:
        raise ValueError(f"{text!r} is not a spec of the family {family!r} (written {form})")
    names = _spec_names(form)
    if not names:
        return [], parts
    if not parts or not parts[0]:
        raise ValueError(f"{form} needs {' and '.join(names)}, got {text!r}")
    args = [a.strip() for a in parts[0].split(",")]
    if len(args) != len(names):
        raise ValueError(f"{form} takes {len(names)} number(s), {', '.join(names)}, separated by commas; "
                         f"got {parts[0]!r}")
    return args, parts[1:]


def _spec_whole(text: str, what: str, meaning: str) -> int:
    """A whole number written in a spec (``8``), refused by name otherwise (``8.5``, ``x``)."""
    if not re.fullmatch(r"\+?\d+", text):
        raise ValueError(f"{what} must be a whole number >= 1 ({meaning}), got {text!r}")
    return int(text)


def _spec_number(text: str, what: str) -> float:
    """A number written in a spec: a decimal (``0.2``, ``1e-3``) or a fraction (``3/2``)."""
    try:
        return float(Fraction(text)) if "/" in text else float(text)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"{what} must be a number, got {text!r}") from None


# ---------------------------------------------------------------------------
# Geometry on a grid
# ---------------------------------------------------------------------------


class FunctionSpace(ABC):
    """What a function space provides to the pipelines (the interface of a space).

    A space has a dimension-free description (its parameters) and, on each
    public grid, a :class:`GridGeometry` (``space.at(grid)``) that carries
    everything FTP, PTF, the bounds and the simulations need.  Subclasses
    implement ``_geometry`` (build the geometry on a checked grid, checking
    the space's assumption) and ``_evaluate`` (functions with given
    coordinates at any points of [0, 1]).
    """

    metric: ClassVar[str]
    """The utility criterion, ``"IMSE"`` (eq. 7) or ``"MSE"`` on the grid (eq. 8)."""

    nests: ClassVar[bool] = False
    """Whether the space is one of a family indexed by its dimension m that nests.

    ``True`` when the space of dimension m is spanned by the first m functions of one
    orthonormal sequence φ_1, φ_2, …: then H_{m−1} ⊂ H_m, and the coordinates of a
    function's projection onto H_{m−1} are the first m − 1 of its coordinates in H_m, so
    one fit in H_{m_max} scores every m <= m_max (what
    :func:`dpfda.mechanisms.dimension.public_dimension` does).  Legendre and Fourier spaces
    nest (Fourier at every m, not only at odd m: each step adds one function of the
    sequence).  A basis rebuilt for each m does not (cubic B-splines on m equally spaced
    knots: the knots of m − 1 are not among those of m).  A kernel space has no dimension
    to choose — its coordinates are the T points of the grid — so ``nests`` is ``False``
    and the dimension chooser refuses it.
    """

    @property
    @abstractmethod
    def spec(self) -> str:
        """The space as a short string, e.g. ``legendre:8``; :func:`~dpfda.space_from_spec` reads it back.

        It holds every number that defines the space (spaces with one spec and one class
        are equal), written so that it reads back to the same floats.
        """

    @property
    @abstractmethod
    def description(self) -> dict:
        """The space for a JSON record (``spec``, ``kind`` and the parameters by name)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and cast(FunctionSpace, other).spec == self.spec

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.spec))

    def at(self, grid: ArrayLike) -> GridGeometry:
        """The geometry of this space on ``grid`` (checked: strictly increasing, in [0, 1])."""
        grid = check_grid(grid)
        return self._geometry(tuple(grid.tolist()))

    @abstractmethod
    def _geometry(self, grid: tuple) -> GridGeometry:
        """The geometry on a checked grid given as a tuple (cached by subclasses)."""

    @abstractmethod
    def _evaluate(self, geometry: GridGeometry, coef: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Values at checked points ``t`` of the functions with coordinates ``coef``."""


@dataclass(frozen=True, eq=False)
class GridGeometry:
    """Everything the pipelines need to know about a space on a fixed grid.

    Attributes
    ----------
    space : FunctionSpace
    grid : ndarray (T,)
    Phi : ndarray (T, d)
        Design matrix: Cameron–Martin coordinates to grid values.
    eval_norm : ndarray (T,)
        ``a_j = sup_{||f|| <= 1} |f(t_j)|``, the norm of evaluation at t_j.
    metric : {"IMSE", "MSE"}
    """

    space: FunctionSpace
    grid: np.ndarray
    Phi: np.ndarray
    eval_norm: np.ndarray
    metric: str

    @property
    def T(self) -> int:
        """Number of grid points."""
        return self.grid.size

    @property
    def dim(self) -> int:
        """Number d of Cameron–Martin coordinates."""
        return self.Phi.shape[1]

    def values(self, coef: ArrayLike) -> np.ndarray:
        """Grid values Phi @ coef, shape (..., T)."""
        return np.asarray(coef) @ self.Phi.T

    def evaluate(self, coef: ArrayLike, t: ArrayLike) -> np.ndarray:
        """Evaluate the function(s) with coordinates ``coef`` at points ``t``."""
        return self.space._evaluate(self, np.asarray(coef, dtype=float), check_points(t))

    def coef_from_values(self, values: ArrayLike) -> np.ndarray:
        """Coordinates of the function that best matches ``values`` on the grid.

        For ``KernelSpace`` this is the minimum-norm interpolant (β = K_T^{-1/2} f);
        for ``LegendreSpace`` the least-squares fit (exact when f ∈ H_m).
        """
        values = np.asarray(values, dtype=float)
        return np.linalg.lstsq(self.Phi, values.reshape(-1, self.T).T, rcond=None)[0].T.reshape(
            values.shape[:-1] + (self.dim,)
        )

    def error(self, coef: ArrayLike, target: ArrayLike) -> np.ndarray:
        """Squared error of coordinates ``coef`` against ``target`` (..., d).

        IMSE (eq. 7) for H_m — by orthonormality, ∫(f̃ - f̄)² = ||θ̃ - θ̄||²;
        grid MSE (eq. 8) for H_K — (1/T) Σ_j (f̃(t_j) - f̄(t_j))².
        """
        diff = np.asarray(coef, dtype=float) - np.asarray(target, dtype=float)
        if self.metric == "IMSE":
            return np.sum(diff**2, axis=-1)
        return np.mean((diff @ self.Phi.T) ** 2, axis=-1)


@dataclass(frozen=True, eq=False)
class LegendreGeometry(GridGeometry):
    """The geometry of an orthonormal H_m (Legendre or Fourier) on a grid; ``M`` = ΦᵀΦ (positive definite by A.3)."""

    M: np.ndarray


@dataclass(frozen=True, eq=False)
class KernelGeometry(GridGeometry):
    """The geometry of an RKHS on a grid (Phi = K_T^{1/2}).

    Attributes
    ----------
    K : ndarray (T, T)
        The Gram matrix K_T.
    Phi_inv : ndarray (T, T)
        K_T^{-1/2} (from the eigenvalues below).
    eigenvalues : ndarray (T,)
        Eigenvalues of K_T, ascending, after the floor.
    floored : bool
        Whether some eigenvalue was lifted to the floor (``regularize=True``).
    """

    K: np.ndarray
    Phi_inv: np.ndarray
    eigenvalues: np.ndarray
    floored: bool


# ---------------------------------------------------------------------------
# Finite-dimensional Hilbert space of Legendre polynomials (Example 1)
# ---------------------------------------------------------------------------


class OrthonormalSpace(FunctionSpace):
    """A space H_m spanned by m functions orthonormal in L²[0,1] (Legendre or Fourier).

    The Cameron–Martin space of Z_m = Σ ξ_k φ_k, ξ ~ N(0, I_m), is H_m itself and the
    norm of θᵀφ is ||θ||_2 (Example 1, Corollary 7, which use only orthonormality).
    Subclasses give the basis (``basis``) and a quadrature (``project``); the
    geometry on a grid (:class:`LegendreGeometry`: Φ and M = ΦᵀΦ, checked
    positive definite by Assumption A.3), the norm, evaluation and Gaussian
    draws are shared.
    """

    metric = "IMSE"
    family: ClassVar[str]
    """The name of the family in a spec (``legendre`` in ``legendre:8``)."""
    spec_form: ClassVar[str]
    """How a spec of the family is written, e.g. ``legendre:M``."""
    spec_help: ClassVar[str]
    """What the spec's numbers mean, in a few ASCII words (for ``--space``'s help)."""
    singular_hint: ClassVar[str] = ""
    """Added to the A.3 error when M = ΦᵀΦ is singular on a grid (e.g. Fourier's repeated end point)."""

    def __init__(self, m: int) -> None:
        self.m = check_int(m, "m", 1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(m={self.m})"

    @property
    def spec(self) -> str:
        """``family:M``, e.g. ``legendre:8``."""
        return f"{self.family}:{self.m}"

    @property
    def description(self) -> dict:
        """``{"kind": family, "dimension": m, "spec": spec}``."""
        return {"kind": self.family, "dimension": self.m, "spec": self.spec}

    @classmethod
    def from_spec(cls, text: str) -> OrthonormalSpace:
        """The space ``text`` (``family:M``) describes (:func:`~dpfda.space_from_spec` for any family)."""
        (m,), options = _spec_parts(text, cls.family, cls.spec_form)
        if options:
            raise ValueError(f"{cls.spec_form} takes no options, got {':'.join(options)!r} in {text!r}")
        return cls(_spec_whole(m, f"the dimension M of {cls.spec_form}", "the number of basis functions"))

    @property
    def kind(self) -> str:
        """The family's name (``family``; the older name of the attribute)."""
        return self.family

    def with_dimension(self, m: int) -> OrthonormalSpace:
        """The space of dimension ``m`` in this family (a subclass with more parameters overrides it)."""
        return type(self)(m)

    @property
    def dim(self) -> int:
        """Dimension m of H_m."""
        return self.m

    @abstractmethod
    def basis(self, t: ArrayLike) -> np.ndarray:
        """φ(t) for each point: shape (len(t), m)."""

    def design(self, grid: ArrayLike) -> np.ndarray:
        """Design matrix Φ = [φ_k(t_j)] of shape (T, m) (§4.2.1)."""
        return self.at(grid).Phi

    def _geometry(self, grid: tuple) -> LegendreGeometry:
        """Geometry on a checked grid; checks Assumption A.3."""
        return _basis_geometry(self, grid)

    def norm(self, coef: ArrayLike) -> np.ndarray:
        """Cameron–Martin (= L²[0,1]) norm of θᵀφ: ||θ||_2."""
        return np.linalg.norm(np.asarray(coef, dtype=float), axis=-1)

    def evaluate(self, coef: ArrayLike, t: ArrayLike) -> np.ndarray:
        """(..., m) coefficients -> (..., len(t)) function values."""
        coef = np.asarray(coef, dtype=float)
        if coef.shape[-1] != self.m:
            raise ValueError(f"coef's last axis must have length m={self.m}, got {coef.shape[-1]}")
        return coef @ self.basis(t).T

    def _evaluate(self, geom: GridGeometry, coef: np.ndarray, t: np.ndarray) -> np.ndarray:
        return self.evaluate(coef, t)

    def _quadrature(
        self, func: Callable[[np.ndarray], ArrayLike], t: np.ndarray, w: np.ndarray
    ) -> np.ndarray:
        if not callable(func):
            raise TypeError("func must be callable, e.g. a Release or lambda t: ...")
        vals = np.asarray(func(t), dtype=float)
        return (vals * w) @ self.basis(t)

    def sample_gaussian(
        self, rng: np.random.Generator, size: int | Sequence[int] = ()
    ) -> np.ndarray:
        """Coefficients ξ ~ N(0, I_m) of Z_m = Σ ξ_k φ_k (Example 1): shape size + (m,)."""
        rng = check_rng(rng)
        return rng.standard_normal(_shape(size) + (self.m,))


class LegendreSpace(OrthonormalSpace):
    """H_m spanned by the L²[0,1]-orthonormal shifted Legendre polynomials.

    φ_k(t) = sqrt(2k - 1) P_{k-1}(2t - 1), k = 1, ..., m, has degree k - 1
    (appendix, polynomial setup); m = 2 gives (1, sqrt(12)(t - 1/2)).  The
    Cameron–Martin space of Z_m = Σ ξ_k φ_k is H_m itself and the norm of
    θᵀφ is ||θ||_2 (Example 1, Corollary 7).

    Written ``legendre:M`` (:attr:`~dpfda.OrthonormalSpace.spec`); the spaces nest
    (:attr:`~dpfda.FunctionSpace.nests`): H_{m−1} is spanned by the first m − 1 functions of H_m.

    Parameters
    ----------
    m : int
        Dimension of the space (number of basis functions), at least 1.

    Examples
    --------
    >>> space = LegendreSpace(2)
    >>> space.basis([0.0, 0.5, 1.0]).round(4)  # 1 and sqrt(12)(t - 1/2)
    array([[ 1.    , -1.7321],
           [ 1.    ,  0.    ],
           [ 1.    ,  1.7321]])
    >>> geom = space.at(uniform_grid(3))
    >>> geom.eval_norm.round(4)  # a_j = ||φ(t_j)||_2
    array([2., 1., 2.])
    """

    family = "legendre"
    spec_form = "legendre:M"
    spec_help = "polynomials of degree < M"
    nests = True

    def basis(self, t: ArrayLike) -> np.ndarray:
        """φ(t) for each point: shape (len(t), m)."""
        t = check_points(t)
        V = _leg.legvander(2.0 * t - 1.0, self.m - 1)
        return V * np.sqrt(2.0 * np.arange(1, self.m + 1) - 1.0)

    def project(
        self, func: Callable[[np.ndarray], ArrayLike], *, nodes: int | None = None
    ) -> np.ndarray:
        """Coefficients θ_k = ∫ f φ_k of a callable by Gauss–Legendre quadrature.

        Exact for polynomials of degree < 2·nodes - m + 1; the default uses
        ``max(2m, 32)`` nodes.
        """
        k = max(2 * self.m, 32) if nodes is None else check_int(nodes, "nodes", 1)
        x, w = _leg.leggauss(k)
        return self._quadrature(func, (x + 1.0) / 2.0, w / 2.0)


class FourierSpace(OrthonormalSpace):
    """H_m spanned by the first m functions of the trigonometric basis of L²[0,1] (periodic).

    φ_1 = 1, φ_{2k}(t) = √2 cos(2πkt), φ_{2k+1}(t) = √2 sin(2πkt): orthonormal on
    [0, 1] and of period 1, so every function of H_m takes the same value and slope at
    t = 0 and t = 1 — the space for a daily or yearly cycle, with the public domain
    (:class:`dpfda.Domain`) one period long (hours [0, 24), days [0, 365)).  An odd m
    holds whole harmonics (m = 7: the mean and three harmonics).  ||φ(t)||_2² = m when
    m is odd, at every t: the noise of an FTP release has the same standard deviation
    everywhere, where a Legendre space's grows at the ends.  As for Legendre, the
    Cameron–Martin norm of θᵀφ is ||θ||_2 (Example 1, Corollary 7, which use only
    orthonormality).  Written ``fourier:M`` (:attr:`~dpfda.OrthonormalSpace.spec`); the spaces nest at every m
    (:attr:`~dpfda.FunctionSpace.nests`), each adding the next function of the sequence.

    Parameters
    ----------
    m : int
        How many functions of the trigonometric basis, in the order above (at least 1).

    Examples
    --------
    >>> space = FourierSpace(3)
    >>> space.basis([0.0, 0.25]).round(4)  # 1, √2 cos 2πt, √2 sin 2πt
    array([[1.    , 1.4142, 0.    ],
           [1.    , 0.    , 1.4142]])
    >>> space.at(uniform_grid(4)[:-1] + 0.1).eval_norm.round(4)  # sqrt(m) everywhere
    array([1.7321, 1.7321, 1.7321])
    """

    family = "fourier"
    spec_form = "fourier:M"
    spec_help = "M functions 1, cos 2pi t, sin 2pi t, ...; periodic on the domain"
    nests = True
    singular_hint = (" (for a Fourier space, t = 0 and t = 1 are the same point of the period: "
                     "leave one out, or widen the domain by one step)")

    def basis(self, t: ArrayLike) -> np.ndarray:
        """φ(t) for each point: shape (len(t), m)."""
        t = check_points(t)
        k = np.arange(1, self.m)  # columns 2, ..., m
        freq = (k + 1) // 2
        angle = 2.0 * np.pi * t[:, None] * freq[None, :]
        waves = np.where(k % 2 == 1, np.cos(angle), np.sin(angle)) * np.sqrt(2.0)
        return np.concatenate([np.ones((t.size, 1)), waves], axis=1)

    def project(
        self, func: Callable[[np.ndarray], ArrayLike], *, nodes: int | None = None
    ) -> np.ndarray:
        """Coefficients θ_k = ∫ f φ_k of a callable by the trapezoidal rule on a period.

        With N equally spaced nodes t = 0, 1/N, …, (N-1)/N the rule is exact for
        trigonometric polynomials of degree below N - m/2; the default N is ``max(2m, 64)``.
        """
        k = max(2 * self.m, 64) if nodes is None else check_int(nodes, "nodes", 1)
        return self._quadrature(func, np.arange(k) / k, np.full(k, 1.0 / k))


@lru_cache(maxsize=256)
def _basis_geometry(space: OrthonormalSpace, grid: tuple) -> LegendreGeometry:
    m = space.m
    grid_arr = np.array(grid)
    T = grid_arr.size
    if T < m:
        raise AssumptionError(
            f"A.3 fails: M = ΦᵀΦ cannot be positive definite with T={T} grid points "
            f"for m={m} basis functions (need T >= m distinct points)"
        )
    Phi = space.basis(grid_arr)
    Phi.setflags(write=False)
    M = Phi.T @ Phi
    lam = np.linalg.eigvalsh(M)
    if lam[0] <= 1e-12 * max(lam[-1], 1.0):
        raise AssumptionError(
            f"A.3 fails: M = ΦᵀΦ is singular on this grid (smallest eigenvalue {lam[0]:.3g})"
            + space.singular_hint
        )
    eval_norm = np.linalg.norm(Phi, axis=1)
    if np.any(eval_norm <= 0):
        raise AssumptionError("A.3 fails: ||φ(t_j)||_2 = 0 at some grid point")
    for a in (eval_norm, M):
        a.setflags(write=False)
    return LegendreGeometry(space=space, grid=grid_arr, Phi=Phi, eval_norm=eval_norm,
                            metric="IMSE", M=M)


# ---------------------------------------------------------------------------
# Kernels and reproducing kernel Hilbert spaces (Definition 1, Example 2)
# ---------------------------------------------------------------------------


class Kernel(ABC):
    """A symmetric positive semidefinite kernel on [0, 1]² (broadcasting call).

    A kernel describes itself as a space does: its ``family`` name and its
    :attr:`~dpfda.Kernel.parameters` make its :attr:`~dpfda.Kernel.spec` (``gaussian:0.2``), and the constructor takes
    the parameters in that order, so :meth:`~dpfda.Kernel.from_spec` rebuilds it.  Two kernels are equal
    when they are of one class with one spec.
    """

    family: ClassVar[str]
    """The name of the kernel in a spec (``gaussian`` in ``gaussian:0.2``)."""
    spec_form: ClassVar[str]
    """How a spec of the kernel's space is written, e.g. ``gaussian:RHO``."""
    spec_help: ClassVar[str]
    """What the spec's numbers mean, in a few ASCII words (for ``--space``'s help)."""

    @abstractmethod
    def __call__(self, s: ArrayLike, t: ArrayLike) -> np.ndarray:
        """K(s, t), broadcasting ``s`` against ``t``."""

    @property
    @abstractmethod
    def parameters(self) -> dict[str, float]:
        """The numbers that define the kernel, by name, in the constructor's order."""

    def diag(self, t: ArrayLike) -> np.ndarray:
        """K(t, t) at each point of ``t``."""
        t = np.asarray(t, dtype=float)
        return self(t, t)

    def gram(self, points: ArrayLike) -> np.ndarray:
        """The Gram matrix [K(p_j, p_k)] of ``points``."""
        points = np.asarray(points, dtype=float)
        return self(points[:, None], points[None, :])

    @property
    def name(self) -> str:
        """The kernel's family name (``family``; the older name of the attribute)."""
        return self.family

    @property
    def spec(self) -> str:
        """``family`` or ``family:P1,P2`` (each parameter as the shortest text of its float)."""
        values = ",".join(repr(float(v)) for v in self.parameters.values())
        return f"{self.family}:{values}" if values else self.family

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and cast(Kernel, other).spec == self.spec

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.spec))

    @classmethod
    def from_spec(cls, text: str) -> KernelSpace:
        """The kernel space ``text`` describes: ``family[:P1,P2][:regularize][:floor=F]``.

        The options are those of :class:`~dpfda.KernelSpace` (``regularize=True``, ``floor=F``).
        """
        args, options = _spec_parts(text, cls.family, cls.spec_form)
        names = _spec_names(cls.spec_form)
        kernel = cls(*(_spec_number(a, f"{name} in {cls.spec_form}") for a, name in zip(args, names)))
        return KernelSpace._from_options(kernel, options, text)


RHO_RANGE = (1e-100, 1e100)
"""Bandwidths and length-scales accepted by the kernels (far wider than any useful on [0, 1])."""


def _check_rho(rho: float, what: str) -> float:
    rho = check_positive(rho, "rho")
    if not RHO_RANGE[0] <= rho <= RHO_RANGE[1]:
        raise ValueError(
            f"rho must lie in [1e-100, 1e100] (a {what} on [0, 1]; beyond, the kernel's "
            f"arithmetic in rho over- or underflows floating point), got {rho!r}"
        )
    return rho


class GaussianKernel(Kernel):
    """K(s, t) = exp(-(s - t)² / (2ρ²)) (eq. 1); the paper uses ρ = 0.2.  Written ``gaussian:RHO``."""

    family = "gaussian"
    spec_form = "gaussian:RHO"
    spec_help = "the Gaussian kernel exp(-(s - t)^2 / (2 RHO^2)) of bandwidth RHO"

    def __init__(self, rho: float) -> None:
        self.rho = _check_rho(rho, "bandwidth")

    def __call__(self, s: ArrayLike, t: ArrayLike) -> np.ndarray:
        """K(s, t), broadcasting ``s`` against ``t``."""
        s = np.asarray(s, dtype=float)
        t = np.asarray(t, dtype=float)
        return np.exp(-((s - t) ** 2) / (2.0 * self.rho**2))

    def diag(self, t: ArrayLike) -> np.ndarray:
        """K(t, t) = 1 at each point of ``t``."""
        return np.ones_like(np.asarray(t, dtype=float))

    @property
    def parameters(self) -> dict[str, float]:
        """``{"rho": ρ}``."""
        return {"rho": self.rho}

    def __repr__(self) -> str:
        return f"gaussian_kernel(rho={self.rho!r})"


class BrownianKernel(Kernel):
    """K(s, t) = min(s, t), the covariance of Brownian motion (Example 2).  Written ``brownian``.

    K(0, 0) = 0, so a grid containing t = 0 violates Assumption A.4.
    """

    family = "brownian"
    spec_form = "brownian"
    spec_help = "the Brownian-motion kernel min(s, t); leave t = 0 out of the grid"

    def __call__(self, s: ArrayLike, t: ArrayLike) -> np.ndarray:
        """K(s, t) = min(s, t), broadcasting ``s`` against ``t``."""
        return np.minimum(np.asarray(s, dtype=float), np.asarray(t, dtype=float))

    def diag(self, t: ArrayLike) -> np.ndarray:
        """K(t, t) = t at each point of ``t``."""
        return np.asarray(t, dtype=float).copy()

    @property
    def parameters(self) -> dict[str, float]:
        """None: ``{}``."""
        return {}

    def __repr__(self) -> str:
        return "brownian_kernel()"


class MaternKernel(Kernel):
    """The Matérn kernel of smoothness ν ∈ {1/2, 3/2, 5/2} and length-scale ρ.  Written ``matern:NU,RHO``.

    With a = √(2ν)·r/ρ, r = ``|s − t|``,

    * ν = 1/2: K(s, t) = exp(−a), the covariance of the Ornstein–Uhlenbeck process;
    * ν = 3/2: K(s, t) = (1 + a)·exp(−a);
    * ν = 5/2: K(s, t) = (1 + a + a²/3)·exp(−a),

    the closed forms at half-integer ν of 2^{1−ν}/Γ(ν)·a^ν·K_ν(a), K_ν the modified Bessel
    function of the second kind (Rasmussen and Williams, *Gaussian Processes for Machine
    Learning*, 2006, §4.2.1).  K(t, t) = 1, so the norm of evaluation a_j is 1 at every
    point, as for the Gaussian kernel.  It is positive definite on any distinct points:
    its spectral density, proportional to (2ν/ρ² + ω²)^−(ν+1/2), is positive (Bochner's
    theorem).  Its RKHS is the Sobolev space of order ν + 1/2 on [0, 1] with an equivalent
    norm — functions with ν − 1/2 continuous derivatives — and the eigenvalues of the
    kernel's integral operator decay like j^−(2ν+1): polynomially, where those of the
    Gaussian kernel decay faster than any power (the Gaussian kernel is the limit ν → ∞).

    Parameters
    ----------
    nu : {0.5, 1.5, 2.5}
        The smoothness ν.
    rho : float
        The length-scale ρ > 0 (in [1e-100, 1e100]).

    Examples
    --------
    >>> k = MaternKernel(1.5, 0.2)
    >>> k.spec
    'matern:1.5,0.2'
    >>> float(k(0.3, 0.3)), round(float(k(0.0, 0.2)), 6)  # 1, and (1 + √3)e^−√3 at r = ρ
    (1.0, 0.483358)
    """

    family = "matern"
    spec_form = "matern:NU,RHO"
    spec_help = "the Matern kernel of smoothness NU = 0.5, 1.5 or 2.5 and length-scale RHO"
    SMOOTHNESS: ClassVar[tuple[float, ...]] = (0.5, 1.5, 2.5)
    """The values of ν with a closed form."""

    def __init__(self, nu: float, rho: float) -> None:
        nu = check_positive(nu, "nu")
        if nu not in self.SMOOTHNESS:
            raise ValueError(f"nu must be 0.5, 1.5 or 2.5 (the Matérn smoothness values with a closed "
                             f"form), got {nu!r}")
        self.nu = nu
        self.rho = _check_rho(rho, "length-scale")

    def __call__(self, s: ArrayLike, t: ArrayLike) -> np.ndarray:
        """K(s, t), broadcasting ``s`` against ``t``."""
        r = np.abs(np.asarray(s, dtype=float) - np.asarray(t, dtype=float))
        # a past 800: exp(−a) and K are 0 in floating point; the cap keeps a² finite (no inf·0)
        a = np.minimum(r * (math.sqrt(2.0 * self.nu) / self.rho), 800.0)
        e = np.exp(-a)
        if self.nu == 0.5:
            return e
        if self.nu == 1.5:
            return (1.0 + a) * e
        return (1.0 + a + a * a / 3.0) * e

    def diag(self, t: ArrayLike) -> np.ndarray:
        """K(t, t) = 1 at each point of ``t``."""
        return np.ones_like(np.asarray(t, dtype=float))

    @property
    def parameters(self) -> dict[str, float]:
        """``{"nu": ν, "rho": ρ}``."""
        return {"nu": self.nu, "rho": self.rho}


def gaussian_kernel(rho: float = 0.2) -> GaussianKernel:
    """The Gaussian kernel of eq. (1) with bandwidth ``rho`` > 0."""
    return GaussianKernel(rho)


def brownian_kernel() -> BrownianKernel:
    """The Brownian-motion kernel min(s, t)."""
    return BrownianKernel()


class KernelSpace(FunctionSpace):
    """The RKHS H_K of a kernel, fitted through the span of K(t_j, ·) on a grid.

    By the representer theorem, every fit in the paper lies in
    span{K(t_1, ·), ..., K(t_T, ·)} (the minimum-norm choice, eq. 40); with
    β = K_T^{1/2} α the RKHS norm is ||β||_2 and grid values are K_T^{1/2} β
    (eq. 41).  ``K_T^{1/2}`` is computed by an eigendecomposition.

    Written as the kernel's spec with the options that differ from the defaults
    (``gaussian:0.2``, ``brownian:regularize``, ``gaussian:0.1:floor=1e-10``).  A kernel
    space does not nest (:attr:`~dpfda.FunctionSpace.nests` is ``False``): its dimension
    is the number T of grid points, fixed by the data's design, not a parameter to choose.

    Parameters
    ----------
    kernel : Kernel
        Any kernel of :data:`~dpfda.maths.spaces.SPACE_FAMILIES`, e.g. ``gaussian_kernel(0.2)``.
    floor : float
        Eigenvalue floor (the paper's 1e-8, §5).  Assumption A.4 asks K_T to be
        positive definite; numerically, an eigenvalue below ``floor`` means K_T
        is singular at the resolution the computation can trust.
    regularize : bool
        What to do when an eigenvalue falls below ``floor``: ``False`` (default)
        raises an ``AssumptionError`` naming A.4; ``True`` lifts such eigenvalues
        to ``floor``, as the paper's implementation does, and records it in
        ``geometry.floored``.
    """

    metric = "MSE"
    nests = False  # no dimension to choose: the coordinates are the grid's T points

    def __init__(self, kernel: Kernel, *, floor: float = EIGEN_FLOOR, regularize: bool = False) -> None:
        if not isinstance(kernel, Kernel):
            kernels = ", ".join(f"{c.__name__}" for c in SPACE_FAMILIES.values() if issubclass(c, Kernel))
            raise TypeError(f"kernel must be a dpfda Kernel ({kernels}), got {type(kernel).__name__}")
        self.kernel = kernel
        self.floor = check_positive(floor, "floor")
        if not isinstance(regularize, bool):
            raise TypeError("regularize must be True or False")
        self.regularize = regularize

    def __repr__(self) -> str:
        options = (", regularize=True" if self.regularize else "") + (
            "" if self.floor == EIGEN_FLOOR else f", floor={self.floor!r}")
        return f"KernelSpace({self.kernel!r}{options})"

    @property
    def spec(self) -> str:
        """The kernel's spec, then ``:regularize`` and ``:floor=F`` where they differ from the defaults."""
        return (self.kernel.spec + (":regularize" if self.regularize else "")
                + ("" if self.floor == EIGEN_FLOOR else f":floor={self.floor!r}"))

    @property
    def description(self) -> dict:
        """``{"kind": "<family>-kernel", <the kernel's parameters>, "spec": spec}``.

        With ``regularize`` and ``floor`` when the eigenvalues are lifted to the floor.
        """
        lifted = {"regularize": True, "floor": self.floor} if self.regularize else {}
        return {"kind": f"{self.kernel.family}-kernel", **self.kernel.parameters, **lifted, "spec": self.spec}

    @classmethod
    def _from_options(cls, kernel: Kernel, options: Sequence[str], text: str) -> KernelSpace:
        """``KernelSpace(kernel, ...)`` with the options of a spec (``regularize``, ``floor=F``)."""
        kwargs: dict = {}
        for option in options:
            key, eq, value = option.partition("=")
            if key in kwargs:
                raise ValueError(f"the option {key} is given twice in {text!r}")
            if option == "regularize":
                kwargs["regularize"] = True
            elif key == "floor" and eq:
                kwargs["floor"] = _spec_number(value, "the eigenvalue floor F in :floor=F")
            else:
                raise ValueError(f"{option!r} is not an option of a kernel space (write :regularize or "
                                 f":floor=F after {kernel.spec_form}), in {text!r}")
        return cls(kernel, **kwargs)

    def gram(self, grid: ArrayLike) -> np.ndarray:
        """K_T = [K(t_j, t_k)] on a grid."""
        return self.kernel.gram(check_grid(grid))

    def sqrt_gram(self, grid: ArrayLike) -> np.ndarray:
        """K_T^{1/2} (symmetric square root by eigendecomposition)."""
        return self.at(grid).Phi

    def _geometry(self, grid: tuple) -> KernelGeometry:
        """Geometry on a checked grid; checks Assumption A.4."""
        return _kernel_geometry(self, grid)

    def rkhs_norm(self, alpha: ArrayLike, points: ArrayLike) -> np.ndarray:
        """||Σ α_j K(p_j, ·)||_H = sqrt(αᵀ K α) for kernel sections at ``points``."""
        alpha = np.asarray(alpha, dtype=float)
        K = self.kernel.gram(np.asarray(points, dtype=float))
        q = np.einsum("...i,ij,...j->...", alpha, K, alpha)
        return np.sqrt(np.maximum(q, 0.0))

    # A KernelSpace is only ever handed its own geometry (built by _geometry).
    def _evaluate(  # type: ignore[override]
        self, geom: KernelGeometry, coef: np.ndarray, t: np.ndarray
    ) -> np.ndarray:
        if coef.shape[-1] != geom.T:
            raise ValueError(f"coef's last axis must have length T={geom.T}, got {coef.shape[-1]}")
        alpha = coef @ geom.Phi_inv  # K_T^{-1/2} β (symmetric)
        return alpha @ self.kernel(geom.grid[:, None], t[None, :])

    def sample_gaussian(
        self, rng: np.random.Generator, t: ArrayLike, size: int | Sequence[int] = ()
    ) -> np.ndarray:
        """Draw Z_K ~ GP(0, K) at points ``t``: shape size + (len(t),) (Example 2)."""
        rng = check_rng(rng)
        t = check_points(t)
        root = _psd_sqrt(self.kernel.gram(t))
        return rng.standard_normal(_shape(size) + (t.size,)) @ root.T


def _shape(size: int | Sequence[int]) -> tuple[int, ...]:
    """A draw's ``size`` as a shape tuple: a scalar count ``k`` becomes ``(k,)``."""
    if np.isscalar(size):
        return (cast(int, size),)
    return tuple(cast(Sequence[int], size))


def _psd_sqrt(C: np.ndarray) -> np.ndarray:
    """A symmetric square root of a PSD matrix, negative rounding clipped to 0."""
    lam, V = np.linalg.eigh((C + C.T) / 2.0)
    return (V * np.sqrt(np.clip(lam, 0.0, None))) @ V.T


@lru_cache(maxsize=256)
def _kernel_geometry(space: KernelSpace, grid: tuple) -> KernelGeometry:
    grid_arr = np.array(grid)
    diag = space.kernel.diag(grid_arr)
    if np.any(diag <= 0):
        bad = grid_arr[diag <= 0]
        raise AssumptionError(
            f"A.4 fails: K(t_j, t_j) must be > 0 at every grid point; it is {diag[diag <= 0][0]:.3g} "
            f"at t = {bad[0]:.3g} (for the Brownian kernel, leave t = 0 out of the grid)"
        )
    K = space.kernel.gram(grid_arr)
    lam, V = np.linalg.eigh((K + K.T) / 2.0)
    floored = bool(lam[0] < space.floor)
    if floored and not space.regularize:
        raise AssumptionError(
            f"A.4 fails numerically: K_T has smallest eigenvalue {lam[0]:.3g}, below the floor "
            f"{space.floor:g}; K_T is singular at that floor. Use fewer or more widely spaced "
            "grid points, a wider kernel, or KernelSpace(..., regularize=True)"
        )
    lam = np.maximum(lam, space.floor)
    root = np.sqrt(lam)
    Phi = (V * root) @ V.T
    Phi_inv = (V / root) @ V.T
    eval_norm = np.sqrt(diag)
    for a in (Phi, Phi_inv, K, lam, eval_norm):
        a.setflags(write=False)
    return KernelGeometry(space=space, grid=grid_arr, Phi=Phi, eval_norm=eval_norm, metric="MSE",
                          K=K, Phi_inv=Phi_inv, eigenvalues=lam, floored=floored)


# ---------------------------------------------------------------------------
# The families a spec can name
# ---------------------------------------------------------------------------

SPACE_FAMILIES: dict[str, type[OrthonormalSpace] | type[Kernel]] = {
    family.family: family
    for family in (  # one class a line: a new space adds one
        LegendreSpace,
        FourierSpace,
        GaussianKernel,
        BrownianKernel,
        MaternKernel,
    )
}
"""Every family of spaces a spec can name, and the class whose ``from_spec`` reads its specs.

An orthonormal family maps to its space's class (``LegendreSpace``), a kernel to the
kernel's class, whose ``from_spec`` gives the :class:`~dpfda.KernelSpace`.  A new space is one
class with ``family``, ``spec_form``, ``spec_help`` and ``from_spec``, added here; the
command line, the record of a release and the tests read this dictionary.
"""


def space_from_spec(text: str) -> FunctionSpace:
    """The space a spec describes: ``legendre:8``, ``fourier:7``, ``gaussian:0.2``, ``brownian``.

    The family's name comes first (:data:`~dpfda.maths.spaces.SPACE_FAMILIES`), then its numbers
    separated by commas, then, for a kernel space, the options ``:regularize`` and ``:floor=F``
    (:class:`~dpfda.KernelSpace`).  ``space_from_spec(space.spec) == space`` for every space.

    Raises
    ------
    ValueError
        An unknown family, or numbers the family refuses (named in the message).

    Examples
    --------
    >>> space_from_spec("legendre:8")
    LegendreSpace(m=8)
    >>> space_from_spec("gaussian:0.05:regularize")
    KernelSpace(gaussian_kernel(rho=0.05), regularize=True)
    >>> space_from_spec("gaussian:1/5").spec  # a number may be written as a fraction
    'gaussian:0.2'
    """
    if not isinstance(text, str):
        raise TypeError(f"a space spec must be a string such as 'legendre:8', got {type(text).__name__}")
    family = text.strip().split(":", 1)[0].strip()
    if family not in SPACE_FAMILIES:
        forms = ", ".join(cls.spec_form for cls in SPACE_FAMILIES.values())
        raise ValueError(f"unknown space family {family!r} in {text!r}: a space is written as one of {forms}")
    return SPACE_FAMILIES[family].from_spec(text)
