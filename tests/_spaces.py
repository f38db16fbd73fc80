"""The one registry of function spaces for the tests: every family of dpfda, with what it needs.

Adding a space to dpfda is its class in ``dpfda/maths/spaces.py`` (entered in
``SPACE_FAMILIES``) and one :class:`SpaceCase` in :data:`CASES` here. The generic tests
then run on it: its spec, equality and nesting, its formula against an independent
reference (tests/test_spaces.py); FTP and PTF bit for bit against their stages, the
privacy of worst-case and random neighbours, the audit, the designs, OpenDP's noise
(tests/test_mechanism.py, test_parts.py, test_adversarial.py, test_audit.py,
test_designs.py, test_designs_calibration.py, test_secure.py, test_whitening.py), the
private covariances (test_covariance.py, test_covariance_audit.py), the command line and
the record (test_release_cli.py, test_publish.py). tests/test_spaces.py
fails while a family of ``SPACE_FAMILIES`` has no case here.

Each test module names its grid; :func:`on_grid` gives the registry's spaces that take it,
as a dictionary from the case's id to the space sized for that grid (``SPACES =
on_grid(GRID)`` — a test that wants one family writes ``SPACES["legendre"]``);
:func:`with_grids` gives every space with a grid it takes, for tests that let the grid vary.  The grids
are those of :data:`GRIDS`; each case says which of them its space refuses and why, and
tests/test_spaces.py checks those claims both ways (refused exactly there), so no test
loses a space silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy import special

import dpfda
from dpfda import FourierSpace, FunctionSpace, KernelSpace, LegendreSpace, MaternKernel, OrthonormalSpace

__all__ = ["CASES", "GRIDS", "SpaceCase", "all_spaces", "case_of", "held", "of_size", "on_grid", "with_grids"]

GRIDS: dict[str, np.ndarray] = {
    "ends3": np.linspace(0.0, 1.0, 3),
    "right4": np.arange(1, 5) / 4,
    "uniform6": np.linspace(0.0, 1.0, 6),
    "uniform8": dpfda.uniform_grid(8),
    "mid9": (np.arange(9) + 0.5) / 9,
    "right10": np.arange(1, 11) / 10,  # t = 0 left out (the Brownian kernel, A.4)
    "uniform20": dpfda.uniform_grid(20),
}
"""The grids of the generic tests, by name."""

ZERO_ON_GRID = "K(0, 0) = 0 and t = 0 is on the grid (A.4)"
FLOOR = "K_T's smallest eigenvalue is below the floor 1e-8 on 20 points (A.4 numerically)"


@dataclass(frozen=True)
class SpaceCase:
    """One family of spaces as the tests use it.

    ``space(T)`` is the space the generic tests run on a grid of T >= 3 points (a smaller
    dimension on a small grid, so that A.3 holds); ``refuses`` names the grids of
    :data:`GRIDS` on which it fails A.3 or A.4, with the reason; ``variants`` are other
    members of the family for the tests of the space itself (specs, equality, formulas);
    ``reference(space, t)`` is an independent formula — φ(t) (len(t), m) for an orthonormal
    basis, the Gram matrix [K(t_j, t_k)] for a kernel space — agreeing with dpfda's to
    ``reference_atol`` (a stated bound).
    """

    id: str
    space: Callable[[int], FunctionSpace]
    reference: Callable[[FunctionSpace, np.ndarray], np.ndarray]
    reference_atol: float
    variants: tuple[FunctionSpace, ...] = ()
    refuses: Mapping[str, str] = field(default_factory=dict)

    def members(self) -> list[FunctionSpace]:
        """The spaces of the case: one per grid size of :data:`GRIDS`, then the variants, without repeats.

        Repeats are found by what the spaces hold (:func:`held`), not by ``==``, which is under test.
        """
        out: list[FunctionSpace] = []
        for s in [self.space(g.size) for g in GRIDS.values()] + list(self.variants):
            if held(s) not in [held(o) for o in out]:
                out.append(s)
        return out


def held(obj: object) -> object:
    """Everything an object holds, recursively (what a pickle of it would hold)."""
    if hasattr(obj, "__dict__"):
        return (type(obj), {k: held(v) for k, v in vars(obj).items()})
    return obj


# -- independent references ---------------------------------------------------------------


def legendre_reference(space: FunctionSpace, t: np.ndarray) -> np.ndarray:
    """φ_k(t) = sqrt(2k − 1)·P*_{k−1}(t) with scipy's shifted Legendre polynomials."""
    assert isinstance(space, OrthonormalSpace)
    return np.stack([np.sqrt(2 * k - 1) * special.eval_sh_legendre(k - 1, t) for k in range(1, space.m + 1)],
                    axis=1)


def fourier_reference(space: FunctionSpace, t: np.ndarray) -> np.ndarray:
    """1, √2 cos 2πt, √2 sin 2πt, √2 cos 4πt, … written out one function at a time."""
    assert isinstance(space, OrthonormalSpace)
    cols = [np.ones_like(t)]
    for k in range(1, space.m):
        f = (k + 1) // 2
        cols.append(np.sqrt(2) * (np.cos(2 * np.pi * f * t) if k % 2 else np.sin(2 * np.pi * f * t)))
    return np.stack(cols, axis=1)


def gaussian_reference(space: FunctionSpace, t: np.ndarray) -> np.ndarray:
    """exp(−(s − t)²/(2ρ²)) (eq. 1)."""
    assert isinstance(space, KernelSpace)
    return np.exp(-np.subtract.outer(t, t) ** 2 / (2 * space.kernel.parameters["rho"] ** 2))


def brownian_reference(space: FunctionSpace, t: np.ndarray) -> np.ndarray:
    """min(s, t)."""
    return np.minimum.outer(t, t)


def matern_reference(space: FunctionSpace, t: np.ndarray) -> np.ndarray:
    """The general Matérn formula 2^{1−ν}/Γ(ν)·a^ν·K_ν(a), a = √(2ν)|s − t|/ρ, with scipy's Bessel K_ν; 1 at a = 0."""
    assert isinstance(space, KernelSpace)
    nu, rho = space.kernel.parameters["nu"], space.kernel.parameters["rho"]
    a = np.sqrt(2 * nu) * np.abs(np.subtract.outer(t, t)) / rho
    with np.errstate(invalid="ignore", over="ignore"):
        k = 2 ** (1 - nu) / special.gamma(nu) * a**nu * special.kv(nu, a)
    return np.where(a == 0, 1.0, k)


# -- the registry ---------------------------------------------------------------------------

CASES: list[SpaceCase] = [
    SpaceCase("legendre", lambda T: LegendreSpace(3 if T <= 6 else 4), legendre_reference,
              # scipy's and numpy's recurrences, each accurate to a few ulps of |φ_k| <= sqrt(2k − 1) <= 5
              reference_atol=1e-12, variants=(LegendreSpace(1), LegendreSpace(8), LegendreSpace(12))),
    SpaceCase("fourier", lambda T: FourierSpace(3 if T < 10 else 5), fourier_reference,
              # cos and sin of 2πft <= 2π·6 to an ulp of the argument (~4e-15), times √2
              reference_atol=1e-13, variants=(FourierSpace(1), FourierSpace(4), FourierSpace(11)),
              refuses={"ends3": "t = 0 and t = 1 are one point of the period: 2 points for m = 3 (A.3)"}),
    SpaceCase("gaussian", lambda T: KernelSpace(dpfda.gaussian_kernel(0.2)), gaussian_reference,
              # the same exp of the same argument to an ulp each: |K| <= 1
              reference_atol=1e-15,
              variants=(KernelSpace(dpfda.gaussian_kernel(0.05)), KernelSpace(dpfda.gaussian_kernel(0.5)),
                        KernelSpace(dpfda.gaussian_kernel(0.2), regularize=True),
                        KernelSpace(dpfda.gaussian_kernel(0.2), floor=1e-10)),
              refuses={"uniform20": FLOOR}),
    SpaceCase("brownian", lambda T: KernelSpace(dpfda.brownian_kernel()), brownian_reference,
              reference_atol=0.0,  # min(s, t) is exact
              variants=(KernelSpace(dpfda.brownian_kernel(), regularize=True),),
              refuses={"ends3": ZERO_ON_GRID, "uniform6": ZERO_ON_GRID, "uniform8": ZERO_ON_GRID,
                       "uniform20": ZERO_ON_GRID}),
    SpaceCase("matern", lambda T: KernelSpace(MaternKernel(1.5, 0.2)), matern_reference,
              # scipy's K_ν (AMOS) keeps about 14 significant digits and |K| <= 1
              reference_atol=1e-13,
              variants=tuple(KernelSpace(MaternKernel(nu, rho)) for nu in (0.5, 1.5, 2.5) for rho in (0.05, 0.2, 1.0))
              + (KernelSpace(MaternKernel(2.5, 0.2), regularize=True),)),
]
"""Every family, once."""


def _grid_name(grid: np.ndarray) -> str:
    for name, g in GRIDS.items():
        if g.shape == np.shape(grid) and np.array_equal(g, grid):
            return name
    raise ValueError("the generic tests run on the grids of tests/_spaces.py GRIDS: add this grid there "
                     "(and each case's refusals of it)")


def on_grid(grid: np.ndarray, kind: type | None = None) -> dict[str, FunctionSpace]:
    """Every registered space that takes ``grid`` (one of :data:`GRIDS`), sized for it, by case id.

    ``kind`` keeps only the spaces of that class (``OrthonormalSpace``, ``KernelSpace``).
    """
    name = _grid_name(grid)
    out = {c.id: c.space(len(grid)) for c in CASES if name not in c.refuses}
    return {k: s for k, s in out.items() if kind is None or isinstance(s, kind)}


def with_grids(*names: str) -> dict[str, tuple[FunctionSpace, np.ndarray]]:
    """Each registered space on the first of the named grids of :data:`GRIDS` it takes: ``{id: (space, grid)}``.

    A case that takes none of them is an error (name another grid), so no family is left out.
    """
    out = {}
    for c in CASES:
        name = next((n for n in names if n not in c.refuses), None)
        if name is None:
            raise ValueError(f"{c.id} refuses every grid of {names}: name one it takes")
        out[c.id] = (c.space(GRIDS[name].size), GRIDS[name])
    return out


def of_size(T: int, kind: type = OrthonormalSpace) -> dict[str, FunctionSpace]:
    """The registered spaces of class ``kind`` for T points wherever they lie (curves on their own points)."""
    return {c.id: s for c in CASES if isinstance(s := c.space(T), kind)}


def case_of(space: FunctionSpace) -> SpaceCase:
    """The case whose family ``space`` belongs to."""
    family = space.spec.split(":", 1)[0]
    for c in CASES:
        if c.space(8).spec.split(":", 1)[0] == family:
            return c
    raise KeyError(f"no case in tests/_spaces.py for {space!r}")


def all_spaces() -> list[tuple[str, FunctionSpace]]:
    """(case id, space) for every member of every case."""
    return [(c.id, s) for c in CASES for s in c.members()]
