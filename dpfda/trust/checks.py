"""Argument checks shared by the audit, its recomputation and mechanisms built outside the library.

:func:`check_mechanism` insists on a :class:`dpfda.Mechanism` (a plain function does not say
what to audit), :func:`check_n` on the number of curves it was calibrated for,
:func:`check_neighbour_curves` on two neighbouring datasets, :func:`check_grid_space` on the
argument order (grid, space, ...) every constructor takes, and :func:`setup` checks the public
parameters of a mechanism on ``n`` curves (the book's mechanisms broken on purpose use it).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.spaces import FunctionSpace, GridGeometry
from ..mechanisms.ftp_ptf import Mechanism
from ..mechanisms.pipelines import check_radius
from ..validation import check_int, check_positive

__all__ = ["check_grid_space", "check_mechanism", "check_n", "check_neighbour_curves", "dataset_n", "geometry",
           "neighbours", "setup"]


def check_grid_space(grid: object, space: object, who: str) -> None:
    """Refuse arguments given in the order (space, grid): every constructor takes (grid, space, ...).

    A TypeError names the argument when ``grid`` is a function space or ``space`` an array.
    """
    if isinstance(grid, FunctionSpace):
        raise TypeError(f"{who} takes (grid, space, ...): got a space as `grid` "
                        f"({type(grid).__name__}); write {who}(grid, space, ...)")
    if isinstance(space, (np.ndarray, list, tuple)):
        raise TypeError(f"{who} takes (grid, space, ...): got an array as `space`; "
                        f"write {who}(grid, space, ...)")


def geometry(grid: ArrayLike, space: FunctionSpace) -> GridGeometry:
    """The geometry of ``space`` on ``grid``; a TypeError when ``space`` is no function space."""
    if not isinstance(space, FunctionSpace):
        raise TypeError(
            f"space must be a FunctionSpace (an orthonormal space such as LegendreSpace, or a KernelSpace), "
            f"got {type(space).__name__}"
        )
    return space.at(grid)


def setup(grid: ArrayLike, space: FunctionSpace, radius: float, mu: float,
          n: int) -> tuple[GridGeometry, float, float, int]:
    """The geometry and the checked (radius, mu, n) of a mechanism on ``n`` curves."""
    geom = geometry(grid, space)
    return geom, check_radius(radius), check_positive(mu, "mu"), check_int(n, "n", 1)



def check_mechanism(mechanism: object) -> Mechanism:
    """``mechanism`` if it is a :class:`dpfda.Mechanism`, else a TypeError saying how to build one."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a dpfda.Mechanism, got {type(mechanism).__name__}: build it "
            "with dpfda.trust.audit.ftp_mechanism / ptf_mechanism (or dpfda.ftp_mechanism / "
            "ptf_mechanism, dpfda_book.mechanisms.designs.Design(...).mechanism(n, mu), or a broken_* constructor "
            "of dpfda_book.mechanisms.broken); a plain function (X, rng) -> Release does not say what to audit"
        )
    return mechanism


def dataset_n(X: np.ndarray | Curves) -> int:
    """The number of curves of one dataset: an array (n, T) or a :class:`dpfda.Curves`."""
    return X.n if isinstance(X, Curves) else int(X.shape[-2])


def check_n(mechanism: Mechanism, X: np.ndarray | Curves) -> None:
    """A ValueError when ``X`` holds another number of curves than the ``n`` ``mechanism`` was built for."""
    n = dataset_n(X)
    if mechanism.n is not None and n != mechanism.n:
        raise ValueError(
            f"the datasets hold n={n} curves but {mechanism.name} was calibrated for "
            f"n={mechanism.n}"
        )


def check_neighbour_curves(X0: object, X1: object) -> tuple[Curves, Curves]:
    """Two Curves with the same number of subjects that differ in at most one (points or values)."""
    if not (isinstance(X0, Curves) and isinstance(X1, Curves)):
        raise TypeError("X0 and X1 must both be arrays (n, T) or both dpfda Curves")
    s0, s1 = X0.subjects(), X1.subjects()
    if len(s0) != len(s1):
        raise ValueError(f"X0 and X1 must hold the same number of subjects, got {len(s0)} and {len(s1)}")
    changed = sum(1 for (t0, x0), (t1, x1) in zip(s0, s1)
                  if t0.shape != t1.shape or not (np.array_equal(t0, t1) and np.array_equal(x0, x1)))
    if changed > 1:
        raise ValueError(f"X0 and X1 must be neighbours (differ in at most one subject); they differ in {changed}")
    return X0, X1


def neighbours(mechanism: Mechanism, X0: object, X1: object, *,
               adjacent: bool = True) -> tuple[np.ndarray, np.ndarray] | tuple[Curves, Curves]:
    """Neighbouring datasets for an audit: two Curves (:func:`check_neighbour_curves`), or two arrays (n, T).

    Arrays are checked as :class:`dpfda.Curves` on the mechanism's grid
    (:func:`dpfda.maths.curves.as_curves`, errors naming ``X0`` and ``X1``), then, with
    ``adjacent``, must have one shape and differ in at most one curve.
    """
    if isinstance(X0, Curves) or isinstance(X1, Curves):  # FTP of curves on their own points
        return check_neighbour_curves(X0, X1)
    grid = mechanism.geometry.grid
    A = as_curves(X0, grid, name="X0").values  # type: ignore[arg-type]  # as_curves names what it refuses
    B = as_curves(X1, grid, name="X1").values  # type: ignore[arg-type]
    assert A is not None and B is not None  # arrays make curves on one common grid
    if not adjacent:
        return A, B
    if A.ndim != 2 or A.shape != B.shape:
        raise ValueError(f"X0 and X1 must both be (n, T) arrays of one shape, got {A.shape} and {B.shape}")
    changed = int(np.sum(np.any(A != B, axis=1)))
    if changed > 1:
        raise ValueError(f"X0 and X1 must be neighbours (differ in at most one curve); they differ in {changed}")
    return A, B
