"""The Monte Carlo engine: simulate repetitions of a setting, one vectorised loop.

What one repetition of a setting does (§5, "RKHS simulation setup" and the
appendix's polynomial setup):

1. the latent curves f_1, …, f_n are fixed for the setting (drawn once);
2. fresh observation noise gives X = F + σ₀ε (eq. 2);
3. FTP (Algorithm 1) and PTF (Algorithm 2) are both applied to *this* X,
   each with fresh privacy noise;
4. each release is scored against the sample mean f̄ of the latent curves:
   IMSE ||θ̃ - θ̄||² in H_m (eq. 7), grid MSE in the RKHS (eq. 8).

The errors are averaged over repetitions (conditional on the latent curves),
and the reported ratio is the ratio of the two Monte Carlo means, as in the
paper (:mod:`dpfda_book.simulation.tabulate`; :mod:`dpfda_book.simulation.schedule` runs whole studies).

One loop
--------
Every simulation of the book — the paper's settings (:func:`simulate_chunk`) and
the designs of :mod:`dpfda_book.mechanisms.designs` (:func:`dpfda_book.simulation.design_runs.simulate_designs`) —
runs chunk by chunk through :func:`simulate_mechanisms`: draw the random numbers
(:func:`draw_normals`, the one rule for their order), form X = F + σ₀ε, compute
each distinct summary once for all mechanisms, then privatize every mechanism's
summary with its block of the pre-drawn normals
(:meth:`dpfda.Mechanism.privatize`; each mechanism is an
:class:`Arm`).  Mechanisms that take the same block share it (common random
numbers, so differences between them are measured precisely).  Repeated releases
of one dataset (:func:`repeat_releases`, the audit) are that loop for one mechanism
on noiseless data, from one generator: :func:`dpfda.trust.draws.repeat_mechanism`,
whose normals a chunk, one ``(c, k)`` draw, are those :func:`draw_normals` draws for
one block from one generator.

Random streams
--------------
:mod:`dpfda_book.simulation.seeding` makes the generators; :func:`draw_normals` says what is
drawn from them and in which order: the observation noise first, then the
privacy normals in blocks.  A setting's repetition r has its own stream (the
order is then: its n × T observation normals, none when σ₀ = 0, then FTP's d
privacy normals, then PTF's T — exactly what ``observe``, ``ftp`` and ``ptf``
draw when called in that order with :func:`dpfda_book.simulation.seeding.rep_generator`);
the laws of a setting share those streams (common random numbers:
:func:`simulate_laws` draws them once for all the laws of a task);
the designs draw from one stream a chunk, ``SeedSequence(seed,
spawn_key=stream_key(setting) + (1014, chunk))``; a caller's generator (the
audit, :func:`repeat_releases`) is one stream for all its chunks.

Determinism
-----------
*On one machine, bit for bit:* the results of the engine's settings are the
same bytes for any number of workers, any chunk size, any joblib backend and
on a Dask cluster of workers like the local machine, and a setting shared by
two studies (Figure 1 and Table 1) gets the same numbers in both; the
repetitions' streams do not depend on where they run, and chunks are combined
in a fixed order.  *Across machines, to a relative 1e-12 with the same
verdicts:* the design's eigendecomposition, the sums over curves and the errors
use BLAS and LAPACK, whose last bits depend on the order of summation of the
CPU's kernels, so every Monte Carlo
summary of a study agrees between two machines to a relative error of 1e-12
(measured: at most 1.7e-13 over the 14,399 numbers of ``reproduce all --reps
200`` under OpenBLAS's SkylakeX, Haswell and Prescott kernels), and every
verdict drawn from them is the same.  Tests check the first by two runs made in
the test and the second against stored values with that tolerance, never
against bytes computed elsewhere.  *Everywhere, bit for bit:* a release's exact
sums (:mod:`dpfda.maths.summation`), whose bits privacy depends on, add
integers exactly in any order and round once.

Vectorisation and memory
------------------------
Repetitions are processed in chunks: the observed data of a chunk form one
array (chunk, n, T) that the pipelines' stage functions
(:func:`~dpfda.mechanisms.pipelines.ftp_fit_mean`, :func:`~dpfda.mechanisms.pipelines.ptf_clipped_mean`,
:func:`~dpfda.mechanisms.pipelines.ptf_fit`) process at once; only the draws loop over
repetitions.  The chunk is sized so that it holds at most
:data:`CHUNK_BYTES` bytes (:func:`chunk_size`).  When σ₀ = 0 the observed data
are the latent curves in every repetition, so the per-curve FTP fits and PTF's
clipped means are computed once and only the privacy noise varies.

Each curve's fit in the engine is the release's, bit for bit: the fits are
computed row by row (:class:`~dpfda.maths.fitting.BallLeastSquares`), so a curve's
fit does not depend on how many repetitions share its chunk.  The engine then sums
the fits (and PTF's clipped values) with the stage functions' fast path
(``exact=False``): an ``einsum`` or BLAS product, curve after curve.  Such a sum can
round differently for two neighbouring datasets, which matters for a release but
not for an estimate of the error: the engine releases nothing, and its sums are
within n·u of the exact mean, far below Monte Carlo error.  A public release
(:func:`dpfda.ftp`, :func:`dpfda.ptf`) sums exactly and rounds once
(:mod:`dpfda.maths.summation`), so the engine's coefficients equal a release's to a
few ulps, not bit for bit: what the book's simulations estimate is the error of the
release's per-curve maps averaged by that faster sum.
"""

from __future__ import annotations

import ctypes
import sys
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Hashable, Iterable, Sequence, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from dpfda.maths.spaces import FunctionSpace, GridGeometry, KernelSpace, OrthonormalSpace
from dpfda.mechanisms.ftp_ptf import Mechanism, ftp, ftp_mechanism, ptf, ptf_mechanism
from dpfda.mechanisms.pipelines import ftp_fit_mean, ptf_clipped_mean, ptf_default_clip, ptf_default_weights
from dpfda.mechanisms.release import Release
from dpfda.trust.draws import batches, repeat_mechanism, repeated  # the audit's draws: one summary, fresh normals
from dpfda.validation import check_int, check_optional_int, check_reps, check_rng

from ..settings import quick as quick_mode
from .models import KernelCurves, PolynomialCurves, polynomial_curves, rkhs_curves
from .seeding import latent_generator, rep_generators, stream_key
from .studies import Setting
from .tabulate import concat_chunks

__all__ = [
    "CHUNK_BYTES",
    "chunk_size",
    "draw_normals",
    "simulate_mechanisms",
    "latent_curves",
    "Arm",
    "PerRepetitionFit",
    "per_repetition",
    "Prepared",
    "prepare",
    "simulate_chunk",
    "simulate_laws",
    "simulate_setting",
    "batches",
    "repeated",
    "repeat_mechanism",
    "repeat_releases",
    "quick_mode",
]

CHUNK_BYTES = 16 * 2**20
"""Upper bound on the observed-data array of one chunk (chunk × n × T doubles)."""


def chunk_size(setting: Setting, chunk_reps: int | None = None) -> int:
    """Repetitions a chunk of ``setting`` holds: ``chunk_reps``, or as many as fit in :data:`CHUNK_BYTES`."""
    chunk_reps = check_optional_int(chunk_reps, "chunk_reps", 1)
    if chunk_reps is not None:
        return chunk_reps
    if setting.sigma0 == 0.0:
        per_rep = 8 * (setting.T + setting.dim) * 8  # privacy noise and a few (d or T) arrays
    else:
        per_rep = 8 * setting.n * setting.T
    return max(1, CHUNK_BYTES // per_rep)


def latent_curves(setting: Setting, seed: int) -> PolynomialCurves | KernelCurves:
    """The fixed latent curves of a setting (``PolynomialCurves`` or ``KernelCurves``)."""
    seed = check_int(seed, "seed", 0)
    rng = latent_generator(setting, seed)
    space = setting.space
    if isinstance(space, OrthonormalSpace):  # H_m: the paper's Legendre space, or another orthonormal family
        return polynomial_curves(setting.n, space.m, rng, B=setting.B, law=setting.law, space=space)
    assert setting.centers is not None  # Setting fills it in
    assert isinstance(space, KernelSpace)  # family "kernel"
    return rkhs_curves(setting.n, rng, kernel=space.kernel,
                       centers=setting.centers, B=setting.B, law=setting.law)


# ---------------------------------------------------------------------------
# The one rule for the order of the random draws, and the one loop
# ---------------------------------------------------------------------------


def draw_normals(streams: np.random.Generator | Iterable[np.random.Generator], c: int, blocks: Iterable[int],
                 *, F: np.ndarray | None = None,
                 sigma0: float = 0.0) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """The standard normals of ``c`` repetitions, drawn in the package's one order.

    ``streams`` is either one ``numpy.random.Generator`` for the whole chunk
    (the designs' per-chunk streams, a caller's generator) or an iterable of
    ``c`` generators, one a repetition (the engine's streams,
    :func:`dpfda_book.simulation.seeding.rep_generators`).  From each stream, in this order:

    1. the observation noise ε, n × T normals a repetition (only if
       ``sigma0 > 0``; ``F`` (n, T) holds the latent values);
    2. the privacy normals, ``blocks`` = (k_1, k_2, …) of them a repetition, in
       that order.

    With one stream a repetition, repetition r draws ε_r, then its blocks
    (ε_r, Z_r1, Z_r2, …); with one stream for the chunk, all the ε come first
    ((c, n, T) at once), then each block for all repetitions ((c, k_1), then
    (c, k_2), …).

    Returns ``(X, Z)``: X = F + σ₀ε (c, n, T), or None when σ₀ = 0, and the list
    of the blocks' normals, each (c, k_i).
    """
    blocks = tuple(int(k) for k in blocks)
    noisy = sigma0 > 0.0
    if noisy and F is None:
        raise ValueError("sigma0 > 0 needs the latent values F")
    X: np.ndarray | None = None
    if isinstance(streams, np.random.Generator):
        if noisy and F is not None:
            X = streams.standard_normal((c,) + F.shape)
            X *= sigma0  # X = F + σ₀ε, as dpfda_book.simulation.models.observe
            X += F
        return X, [streams.standard_normal((c, k)) for k in blocks]
    priv = np.empty((c, sum(blocks)))
    if noisy and F is not None:
        X = np.empty((c,) + F.shape)
        for Xi, priv_i, rng in zip(X, priv, streams, strict=True):
            rng.standard_normal(out=Xi)  # observation noise ε (eq. 2) ...
            rng.standard_normal(out=priv_i)  # ... then the privacy normals, block after block
            Xi *= sigma0  # X = F + σ₀ε, as dpfda_book.simulation.models.observe (while Xi is in cache)
            Xi += F
    else:
        for priv_i, rng in zip(priv, streams, strict=True):
            rng.standard_normal(out=priv_i)
    edges = np.cumsum((0,) + blocks)
    return X, [priv[:, a:b] for a, b in zip(edges[:-1], edges[1:])]


@dataclass(frozen=True, eq=False)
class PerRepetitionFit:
    """A mechanism's fit run with a singleton axis, (c, 1, T): one vector-matrix product per repetition.

    numpy then rounds each repetition's fit the same whatever the number of
    repetitions in its chunk (a (c, T) @ (T, d) product may round differently for
    different c), so a simulation's results do not depend on its chunking.  The
    values of a fit, not its rule: post-processing as before.
    """

    fit: Callable

    @property
    def weights(self) -> np.ndarray | None:
        """The diagonal of W of the wrapped fit (published with a release)."""
        return getattr(self.fit, "weights", None)

    @property
    def grid_factor(self) -> np.ndarray | None:
        """The wrapped post-processing's map to the grid, if any (published with a release)."""
        return getattr(self.fit, "grid_factor", None)

    def __call__(self, noisy: ArrayLike) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(coef (c, d), active (c,) or None, grid means (c, T) or None) of noisy coordinates (c, k)."""
        coef, active, grid = self.fit(np.asarray(noisy)[..., None, :])
        return (coef[..., 0, :], None if active is None else active[..., 0],
                None if grid is None else grid[..., 0, :])


def per_repetition(mechanism: Mechanism) -> Mechanism:
    """``mechanism`` with its post-processing run one repetition at a time (:class:`PerRepetitionFit`)."""
    return replace(mechanism, post=PerRepetitionFit(mechanism.post))


@dataclass(frozen=True, eq=False)
class Arm:
    """A :class:`~dpfda.Mechanism` as :func:`simulate_mechanisms` runs it.

    ``summary``: the key of its summary among the shared parts; ``block``: the
    index of the block of privacy normals it takes (arms with the same block
    share their normals: common random numbers); ``score(release, parts, c)``:
    its per-repetition outputs (a dict of arrays of length c).
    """

    name: str
    mechanism: Mechanism
    summary: Hashable
    block: int
    score: Callable[[Release, dict, int], dict]


def simulate_mechanisms(arms: list[Arm], streams: np.random.Generator | Iterable[np.random.Generator], c: int,
                        blocks: Sequence[int], *, n: int, F: np.ndarray, sigma0: float,
                        summarize: Callable[[np.ndarray], dict], noiseless: Callable[[], dict] | None = None
                        ) -> dict:
    """One chunk of ``c`` repetitions of several mechanisms on the same data and normals.

    Draws (:func:`draw_normals`: ``streams``, ``blocks``; observation noise when
    ``sigma0 > 0``), forms X = F + σ₀ε, computes the summaries every mechanism
    needs once (``summarize(X)``: a dict of shared parts; when σ₀ = 0,
    ``noiseless()``, the parts of F, which a caller computes once), then each
    arm's release, ``mechanism.privatize(parts[summary], normals of its block, n)``,
    scored by the arm.  Returns a dict arm name -> its per-repetition outputs.
    """
    X, Z = draw_normals(streams, c, blocks, F=F, sigma0=sigma0)
    return _run_arms(arms, X, Z, c, n=n, F=F, summarize=summarize, noiseless=noiseless)


def _run_arms(arms: list[Arm], X: np.ndarray | None, Z: list[np.ndarray], c: int, *, n: int, F: np.ndarray,
              summarize: Callable[[np.ndarray], dict], noiseless: Callable[[], dict] | None) -> dict:
    """:func:`simulate_mechanisms` after the draws: summaries of X (or of F), then each arm's release."""
    if X is None:
        parts = noiseless() if noiseless is not None else summarize(np.asarray(F)[None])
    else:
        parts = summarize(X)
        del X
    out = {}
    for arm in arms:
        out[arm.name] = arm.score(arm.mechanism.privatize(parts[arm.summary], Z[arm.block], n), parts, c)
    return out


# ---------------------------------------------------------------------------
# One setting, prepared once per process
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Prepared:
    """What every chunk of a setting shares: geometry, latent values, the target, the calibration."""

    setting: Setting
    geometry: GridGeometry
    F: np.ndarray  # (n, T) latent values on the grid
    target: np.ndarray  # (d,) coordinates of f̄
    clip: np.ndarray  # (T,)
    clip_rows: np.ndarray  # (n, T): the same bounds repeated per curve (a faster clip, same values)
    weights: np.ndarray  # (T,)
    ftp: Mechanism  # Algorithm 1 with the setting's B' and μ
    ptf: Mechanism  # Algorithm 2 with the default clip bounds and weights
    noiseless: tuple | None  # σ₀ = 0: (FTP mean coef (d,), FTP active (n,), PTF clipped mean (T,))


_V = TypeVar("_V")
_LATENT: "OrderedDict[tuple[str, int], PolynomialCurves | KernelCurves]" = OrderedDict()
_LATENT_MAX = 1024
_ON_GRID: "OrderedDict[tuple, tuple[np.ndarray, np.ndarray]]" = OrderedDict()
_NOISELESS: "OrderedDict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]]" = OrderedDict()
_CACHE_MAX = 1024
"""Entries each per-process cache of latent data keeps (at most a few MB each; one latent draw of the
robustness matrix's 528 settings under ten laws has about 900 keys)."""


def _cached(cache: "OrderedDict[Any, _V]", key: Hashable, make: Callable[[], _V], size: int = _CACHE_MAX) -> _V:
    """``cache[key]``, made by ``make()`` on a miss; the least recently used of more than ``size`` dropped."""
    got = cache.get(key)
    if got is None:
        got = make()
        cache[key] = got
        if len(cache) > size:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return got


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)  # shared by every setting and law that reads it


def _shared_latent_curves(setting: Setting, seed: int) -> PolynomialCurves | KernelCurves:
    """:func:`latent_curves`, cached by what they depend on: the latent key and the seed.

    Settings with the same :meth:`~dpfda_book.simulation.studies.Setting.latent_canonical`
    (any T, μ, σ₀ and B') draw the same curves from the same stream, so they are drawn
    once per process (the last ``_LATENT_MAX`` keys kept).
    """
    def make() -> PolynomialCurves | KernelCurves:
        curves = latent_curves(setting, seed)
        _read_only(*(a for a in vars(curves).values() if isinstance(a, np.ndarray)))
        return curves

    return _cached(_LATENT, (setting.latent_canonical(), int(seed)), make, _LATENT_MAX)


@lru_cache(maxsize=2048)
def _public(setting: Setting) -> tuple[GridGeometry, np.ndarray, np.ndarray, np.ndarray, Mechanism, Mechanism]:
    """(geometry, PTF's clip bounds, the bounds repeated per curve, weights, FTP, PTF) of a setting (cached).

    None of them depends on the data: the laws of a setting and its latent draws
    (seeds) share them (:func:`_public_of`).
    """
    geom = setting.geometry()
    grid = geom.grid
    clip = ptf_default_clip(geom, setting.radius)
    weights = ptf_default_weights(geom)
    clip_rows = np.ascontiguousarray(np.broadcast_to(clip, (setting.n, setting.T)))
    _read_only(clip, weights, clip_rows)
    return (geom, clip, clip_rows, weights, ftp_mechanism(grid, geom.space, setting.radius, setting.mu, n=setting.n),
            ptf_mechanism(grid, geom.space, setting.radius, setting.mu, clip=clip, weights=weights, n=setting.n))


_Public = tuple[GridGeometry, np.ndarray, np.ndarray, np.ndarray, Mechanism, Mechanism]
_PUBLIC_OF: "OrderedDict[Setting, _Public]" = OrderedDict()


def _public_of(setting: Setting) -> tuple[GridGeometry, np.ndarray, np.ndarray, np.ndarray, Mechanism, Mechanism]:
    """:func:`_public` of the setting under the default law (the same for every law), cached by the setting."""
    return _cached(_PUBLIC_OF, setting, lambda: _public(replace(setting, law="default")), 4096)


@lru_cache(maxsize=32)
def prepare(setting: Setting, seed: int) -> Prepared:
    """The latent curves of ``setting`` on its grid, f̄'s coordinates and the pipelines' calibration (cached).

    The values on the grid and f̄'s coordinates depend only on the latent key, the seed and
    the grid, and the noiseless fits (σ₀ = 0) also on B': settings that differ in μ, σ₀ or
    the radius rule alone share them, computed once per process.
    """
    geom, clip, clip_rows, weights, ftp_mech, ptf_mech = _public_of(setting)
    latent = (setting.latent_canonical(), int(seed), setting.T)

    def on_grid() -> tuple[np.ndarray, np.ndarray]:
        curves = _shared_latent_curves(setting, seed)
        F = curves.values(geom.grid)
        if setting.orthonormal:
            assert isinstance(curves, PolynomialCurves)
            target = curves.mean_coef
        else:
            target = geom.coef_from_values(curves.mean_values(geom.grid))
        _read_only(F, target)
        return F, target

    F, target = _cached(_ON_GRID, latent, on_grid)
    noiseless: tuple | None = None
    if setting.sigma0 == 0.0:
        def fits() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            mean_coef, active = ftp_fit_mean(F, geom, setting.radius, exact=False)
            out = (mean_coef, active, ptf_clipped_mean(F, clip, exact=False))
            _read_only(*out)
            return out

        noiseless = _cached(_NOISELESS, latent + (setting.radius,), fits)
    return Prepared(setting=setting, geometry=geom, F=F, target=target, clip=clip, clip_rows=clip_rows,
                    weights=weights, ftp=ftp_mech, ptf=ptf_mech, noiseless=noiseless)


_MALLOC_TUNED = False


def _tune_malloc() -> None:
    """Keep freed chunk-sized arrays in this process's heap (glibc only).

    Each chunk allocates arrays of a few MB; by default glibc hands such blocks
    back to the kernel on free and page-faults them in again on the next
    allocation, which costs 10-20% of the run in system time.  Raising the mmap
    and trim thresholds lets the allocator reuse them.  Peak memory is
    unchanged (the arrays are the same size every chunk).  Elsewhere: no-op.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GiB of free heap
        libc.mallopt(-3, 256 << 20)  # M_MMAP_THRESHOLD: blocks below 256 MiB come from the heap
    except (OSError, AttributeError):  # not glibc
        pass


def _engine_summaries(prep: Prepared) -> tuple[Callable[[np.ndarray], dict], Callable[[], dict]]:
    def summarize(X: np.ndarray) -> dict:
        # The engine's own sums (exact=False): it estimates errors and releases nothing.
        # PTF's clipped means come straight from the stage function, with the bounds
        # repeated per curve (a faster clip, same values): the mechanism's map would
        # also flag the clipped curves, a pass over X that no result uses.
        mean_coef, active = prep.ftp.per_curve(X, exact=False)  # (c, d), (c, n)
        xbar = ptf_clipped_mean(X, prep.clip_rows, exact=False)  # (c, T)
        return {"ftp": mean_coef, "ftp_any": active.any(axis=-1), "ftp_frac": active.mean(axis=-1),
                "ptf": xbar}

    def noiseless() -> dict:
        assert prep.noiseless is not None  # prepared whenever sigma0 == 0
        mean_coef, active, xbar = prep.noiseless
        return {"ftp": mean_coef, "ftp_any": bool(active.any()), "ftp_frac": float(active.mean()),
                "ptf": xbar}

    return summarize, noiseless


def _paper_arms(prep: Prepared, keep_releases: bool) -> list[Arm]:
    """FTP (block 0: d normals) and PTF (block 1: T normals) as the engine scores them."""
    geom = prep.geometry

    def ftp_score(rel: Release, parts: dict, c: int) -> dict:
        out = {"err": geom.error(rel.coef[:, None, :], prep.target)[:, 0],
               "any_active": np.broadcast_to(parts["ftp_any"], (c,)),
               "frac_active": np.broadcast_to(parts["ftp_frac"], (c,))}
        if keep_releases:
            out["coef"] = rel.coef
        return out

    def ptf_score(rel: Release, parts: dict, c: int) -> dict:
        out = {"err": geom.error(rel.coef[:, None, :], prep.target)[:, 0], "active": rel.active}
        if keep_releases:
            out["coef"] = rel.coef
        return out

    return [Arm("ftp", prep.ftp, "ftp", 0, ftp_score), Arm("ptf", per_repetition(prep.ptf), "ptf", 1, ptf_score)]


def simulate_chunk(setting: Setting, seed: int, start: int, stop: int, *,
                   keep_releases: bool = False) -> dict:
    """Repetitions ``start, …, stop - 1`` of one setting, vectorised.

    Returns a dict of per-repetition arrays: ``err_ftp``, ``err_ptf`` (the
    IMSE/MSE of each release against f̄), ``ftp_any_active`` (some curve's FTP
    fit hit the ball), ``ftp_frac_active`` (fraction of curves whose fit did),
    ``ptf_active`` (PTF's fit hit the ball); with ``keep_releases`` also
    ``coef_ftp`` and ``coef_ptf`` (chunk, d), the released coordinates.
    """
    seed = check_int(seed, "seed", 0)
    if not isinstance(setting, Setting):
        raise TypeError(f"setting must be a Setting, got {type(setting).__name__}")
    start, stop = int(start), int(stop)
    if not 0 <= start < stop:
        raise ValueError(f"need 0 <= start < stop, got start={start}, stop={stop}")
    _tune_malloc()
    prep = prepare(setting, seed)
    summarize, noiseless = _engine_summaries(prep)
    res = simulate_mechanisms(
        _paper_arms(prep, keep_releases), rep_generators(stream_key(setting), seed, start, stop),
        stop - start, (prep.geometry.dim, setting.T), n=setting.n, F=prep.F, sigma0=setting.sigma0,
        summarize=summarize, noiseless=noiseless)
    return _chunk_outputs(res, keep_releases)


def _chunk_outputs(res: dict, keep_releases: bool) -> dict:
    """:func:`simulate_chunk`'s per-repetition arrays from the two arms' outputs."""
    a, b = res["ftp"], res["ptf"]
    out = {
        "err_ftp": a["err"],
        "err_ptf": b["err"],
        "ftp_any_active": np.array(a["any_active"]),
        "ftp_frac_active": np.array(a["frac_active"]),
        "ptf_active": b["active"],
    }
    if keep_releases:
        out["coef_ftp"] = a["coef"]
        out["coef_ptf"] = b["coef"]
    return out


def _draw_raw(streams: Iterable[np.random.Generator], c: int, blocks: tuple[int, ...],
              shape: tuple[int, ...] | None) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """:func:`draw_normals` with one stream a repetition, returning ε itself (shape ``shape``) instead of X."""
    priv = np.empty((c, sum(blocks)))
    E = None if shape is None else np.empty((c,) + tuple(shape))
    for i, rng in zip(range(c), streams, strict=True):
        if E is not None:
            rng.standard_normal(out=E[i])  # observation noise ε (eq. 2) ...
        rng.standard_normal(out=priv[i])  # ... then the privacy normals, block after block
    edges = np.cumsum((0,) + blocks)
    return E, [priv[:, a:b] for a, b in zip(edges[:-1], edges[1:])]


def simulate_laws(settings: Sequence[Setting], seed: int, start: int, stop: int, *,
                  keep_releases: bool = False) -> list[dict]:
    """:func:`simulate_chunk` of several settings that differ only in their latent law, drawn once.

    The settings share their repetitions' streams
    (:meth:`~dpfda_book.simulation.studies.Setting.stream_canonical`: common random numbers
    across laws), so each repetition's observation noise ε and privacy normals are
    drawn once, in :func:`draw_normals`' order, and every law forms its own
    X = F + σ₀ε from them with the same two operations (σ₀ε, then + F) in the same
    order.  The two pipelines then privatise every law's summary in one call each, with
    the same normals (σ·L·Z is computed once and added to each law's summary), and each
    repetition's fits and errors are computed with the same per-repetition products as
    alone.  The result, one dict per setting in order, is therefore bit for bit what
    :func:`simulate_chunk` gives for each setting alone; only the random numbers are
    drawn once instead of once a law.  Working memory: one more (c, n, T) array.
    """
    seed = check_int(seed, "seed", 0)
    settings = list(settings)
    if not settings or not all(isinstance(s, Setting) for s in settings):
        raise TypeError("settings must be a non-empty sequence of Setting objects")
    streams = {s.stream_canonical() for s in settings}
    if len(streams) != 1:
        raise ValueError("settings must differ only in their latent law (one stream_canonical() for all); "
                         f"got {len(streams)} different ones")
    if len(settings) == 1:
        return [simulate_chunk(settings[0], seed, start, stop, keep_releases=keep_releases)]
    start, stop = int(start), int(stop)
    if not 0 <= start < stop:
        raise ValueError(f"need 0 <= start < stop, got start={start}, stop={stop}")
    _tune_malloc()
    first = settings[0]
    c, n = stop - start, first.n
    preps = [prepare(s, seed) for s in settings]
    geom = preps[0].geometry
    E, Z = _draw_raw(rep_generators(stream_key(first), seed, start, stop), c, (geom.dim, first.T),
                     preps[0].F.shape if first.sigma0 > 0.0 else None)
    if E is not None:
        # The summaries law by law, on one (c, n, T) array at a time: X = σ₀ε + F (draw_normals' two
        # operations), FTP's per-curve fits of X, then PTF's clip of X in place and its mean.
        E *= first.sigma0
        X = np.empty_like(E)
        ftp_centre = np.empty((len(preps), c, geom.dim))
        xbar = np.empty((len(preps), c, first.T))
        any_active = np.empty((len(preps), c), dtype=bool)
        frac_active = np.empty((len(preps), c))
        for i, prep in enumerate(preps):
            np.add(E, prep.F, out=X)
            ftp_centre[i], active = prep.ftp.per_curve(X, exact=False)
            any_active[i], frac_active[i] = active.any(axis=-1), active.mean(axis=-1)
            np.clip(X, -prep.clip_rows, prep.clip_rows, out=X)  # ptf_clipped_mean(X, clip, exact=False)
            np.divide(np.einsum("...ij->...j", X), n, out=xbar[i])
        del X, E
    else:  # σ₀ = 0: every law's summaries were computed once, from its latent values
        fits = [p.noiseless for p in preps if p.noiseless is not None]
        assert len(fits) == len(preps)  # prepared whenever sigma0 == 0
        ftp_centre = np.stack([f[0] for f in fits])[:, None, :]
        xbar = np.stack([f[2] for f in fits])[:, None, :]
        any_active = np.broadcast_to(np.array([f[1].any() for f in fits])[:, None], (len(preps), c))
        frac_active = np.broadcast_to(np.array([f[1].mean() for f in fits])[:, None], (len(preps), c))
    # One privatisation per pipeline for every law: the same normals (and σ·L·Z) for all of them.
    ftp_rel = preps[0].ftp.privatize(ftp_centre, Z[0], n)
    ptf_rel = per_repetition(preps[0].ptf).privatize(xbar, Z[1], n)
    targets = np.stack([p.target for p in preps])[:, None, None, :]
    err_ftp = geom.error(ftp_rel.coef[..., None, :], targets)[..., 0]
    err_ptf = geom.error(ptf_rel.coef[..., None, :], targets)[..., 0]
    out = []
    for i in range(len(preps)):
        res = {"err_ftp": err_ftp[i], "err_ptf": err_ptf[i], "ftp_any_active": np.array(any_active[i]),
               "ftp_frac_active": np.array(frac_active[i]), "ptf_active": np.asarray(ptf_rel.active)[i]}
        if keep_releases:
            res["coef_ftp"], res["coef_ptf"] = ftp_rel.coef[i], ptf_rel.coef[i]
        out.append(res)
    return out


def repeat_releases(pipeline: Callable[..., Release], X: ArrayLike, grid: ArrayLike, space: FunctionSpace,
                    radius: float, mu: float, reps: int, target: ArrayLike, rng: np.random.Generator,
                    chunk: int = 2_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Errors of ``reps`` releases of ``pipeline`` and whether a ball constraint bound.

    ``pipeline`` is :func:`dpfda.ftp` or :func:`dpfda.ptf`.  ``X`` is either
    (n, T) noiseless data, released ``reps`` times with fresh privacy noise
    (in chunks of at most ``chunk`` values of the data, (chunk, n, T)), or
    (reps, n, T) noisy data, released once per repetition.  The releases are
    those the pipeline makes with ``rng`` (:func:`dpfda.trust.draws.repeat_mechanism`).  Returns
    ``(errors (reps,), any_active (reps,))``: the error of each release against
    ``target`` (:meth:`dpfda.Release.error`) and whether a ball constraint was active —
    PTF's final fit or any curve's FTP fit (the mechanism's per-curve flags; a
    release carries none).
    """
    if pipeline is ftp:
        mech = ftp_mechanism(grid, space, radius, mu)
    elif pipeline is ptf:
        mech = ptf_mechanism(grid, space, radius, mu)
    else:
        raise TypeError("pipeline must be dpfda.ftp or dpfda.ptf")
    rng = check_rng(rng)
    X = np.asarray(X, dtype=float)
    reps = check_int(reps, "reps", 1)

    def score(rel: Release, parts: dict, c: int) -> dict:
        if rel.method == "ptf":
            act = np.asarray(rel.active)
        else:
            act = np.broadcast_to(parts["moved"].any(axis=-1), (c,))
        return {"err": rel.error(target), "act": act}

    n, T = X.shape[-2:]
    out = repeat_mechanism(mech, X, reps, rng, score, chunk=max(1, chunk // (n * T)))
    return out["err"], out["act"]


def simulate_setting(setting: Setting, reps: int, seed: int, *, chunk_reps: int | None = None,
                     keep_releases: bool = False) -> dict:
    """All repetitions of one setting in this process (per-repetition arrays)."""
    reps = check_reps(reps)
    seed = check_int(seed, "seed", 0)
    size = chunk_size(setting, chunk_reps)
    parts = [simulate_chunk(setting, seed, a, b, keep_releases=keep_releases) for a, b in batches(reps, size)]
    return concat_chunks(parts)
