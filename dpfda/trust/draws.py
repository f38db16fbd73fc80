"""Many releases of one dataset, cheaply: the draws of an empirical audit.

An audit (:func:`dpfda.trust.audit.audit`) needs thousands of releases of the same data.
A mechanism's summary of a dataset does not depend on the noise, so it is computed once
(exactly, as a release sums it), and each release is the noise step alone
(:meth:`dpfda.Mechanism.privatize` of that summary).  The normals come from the caller's
generator, a chunk after the other, each chunk one ``(c, noise_dim)`` draw: the same
releases, bit for bit, as ``mechanism.release`` of ``c`` copies of the data with that
generator, and the same as the book's simulation loop draws for one mechanism from one
stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import ArrayLike

from ..mechanisms.ftp_ptf import Mechanism
from ..mechanisms.release import Release

__all__ = ["batches", "repeat_mechanism", "repeated"]


def batches(reps: int, size: int) -> Iterator[tuple[int, int]]:
    """Consecutive chunks ``(start, stop)`` of at most ``size`` of ``reps`` repetitions.

    >>> list(batches(5, 2))
    [(0, 2), (2, 4), (4, 5)]
    """
    for start in range(0, reps, size):
        yield start, min(start + size, reps)


def repeated(release: Callable[[np.ndarray, np.random.Generator], Release], X: ArrayLike, reps: int, size: int,
             rng: np.random.Generator) -> Iterator[Release]:
    """``release(copies, rng)`` on chunks of at most ``size`` copies of the dataset ``X``.

    ``X`` (n, T) is broadcast to (k, n, T), never copied, so one vectorised
    call per chunk draws k releases of the same data, with fresh noise from
    ``rng``.  A generator of the releases, in order.
    """
    X = np.asarray(X, dtype=float)
    for start, stop in batches(reps, size):
        yield release(np.broadcast_to(X, (stop - start,) + X.shape), rng)


def repeat_mechanism(mechanism: Mechanism, X: ArrayLike, reps: int, rng: np.random.Generator,
                     score: Callable[[Release, dict, int], dict], *,
                     chunk: int, data: dict | None = None) -> dict:
    """``reps`` releases of one dataset by ``mechanism``, scored chunk by chunk.

    ``X`` (n, T) is summarised once (exactly, as a release sums); the chunks of at
    most ``chunk`` repetitions draw their normals from ``rng`` (one stream, a chunk
    after the other: ``rng.standard_normal((c, mechanism.noise_dim))``), the same
    normals a release of ``chunk`` copies of ``X`` with ``rng`` draws.  ``X`` (reps,
    n, T) is released once per repetition, in one chunk.  ``score(release, parts, c)``
    turns a chunk's release into per-repetition arrays (``parts``: ``centre`` and
    ``moved``, the summary and its per-curve flags, and ``data``); returns them joined
    over the chunks.
    """
    X = np.asarray(X, dtype=float)
    centre, moved = mechanism.summarize(X)
    parts = {"centre": centre, "moved": moved, **(data or {})}
    n = X.shape[-2]
    sizes = batches(reps, chunk) if X.ndim == 2 else [(0, X.shape[0])]
    out = []
    for a, b in sizes:
        normals = rng.standard_normal((b - a, mechanism.noise_dim))
        out.append(score(mechanism.privatize(centre, normals, n), parts, b - a))
    return {k: np.concatenate([p[k] for p in out]) for k in out[0]}
