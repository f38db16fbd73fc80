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
paper (:mod:`dpfda.simulation.tabulate`; :mod:`dpfda.simulation.schedule` runs whole studies).

One loop
--------
Every simulation of the package — the paper's settings (:func:`simulate_chunk`),
the designs of :mod:`dpfda.mechanisms.designs` (:func:`dpfda.simulation.design_runs.simulate_designs`) and
repeated releases of one dataset (:func:`repeat_releases`, the audit) — runs
chunk by chunk through :func:`simulate_mechanisms`: draw the random numbers
(:func:`draw_normals`, the one rule for their order), form X = F + σ₀ε, compute
each distinct summary once for all mechanisms, then privatize every mechanism's
summary with its block of the pre-drawn normals
(:meth:`dpfda.Mechanism.privatize`; each mechanism is an
:class:`Arm`).  Mechanisms that take the same block share it (common random
numbers, so differences between them are measured precisely).

Random streams
--------------
:mod:`dpfda.simulation.seeding` makes the generators; :func:`draw_normals` says what is
drawn from them and in which order: the observation noise first, then the
privacy normals in blocks.  A setting's repetition r has its own stream (the
order is then: its n × T observation normals, none when σ₀ = 0, then FTP's d
privacy normals, then PTF's T — exactly what ``observe``, ``ftp`` and ``ptf``
draw when called in that order with :func:`dpfda.simulation.seeding.rep_generator`);
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
from typing import Callable, Hashable, Iterable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_int, check_optional_int, check_reps, check_rng
from ..config import quick as quick_mode
from ..maths.data import KernelCurves, PolynomialCurves, polynomial_curves, rkhs_curves
from ..maths.spaces import FunctionSpace, GridGeometry, KernelSpace
from ..mechanisms.mechanism import Mechanism, ftp, ftp_mechanism, ptf, ptf_mechanism
from ..mechanisms.pipelines import Release, ftp_fit_mean, ptf_clipped_mean, ptf_default_clip, ptf_default_weights
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
    if setting.family == "legendre":
        assert setting.m is not None  # Setting requires m for H_m
        return polynomial_curves(setting.n, setting.m, rng, B=setting.B, law=setting.law)
    assert setting.centers is not None  # Setting fills it in
    space = setting.space
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
    :func:`dpfda.simulation.seeding.rep_generators`).  From each stream, in this order:

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
            X *= sigma0  # X = F + σ₀ε, as dpfda.maths.data.observe
            X += F
        return X, [streams.standard_normal((c, k)) for k in blocks]
    priv = np.empty((c, sum(blocks)))
    if noisy and F is not None:
        X = np.empty((c,) + F.shape)
        for Xi, priv_i, rng in zip(X, priv, streams, strict=True):
            rng.standard_normal(out=Xi)  # observation noise ε (eq. 2) ...
            rng.standard_normal(out=priv_i)  # ... then the privacy normals, block after block
            Xi *= sigma0  # X = F + σ₀ε, as dpfda.maths.data.observe (while Xi is in cache)
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


_LATENT: "OrderedDict[tuple[str, int], PolynomialCurves | KernelCurves]" = OrderedDict()
_LATENT_MAX = 128


def _shared_latent_curves(setting: Setting, seed: int) -> PolynomialCurves | KernelCurves:
    """:func:`latent_curves`, cached by what they depend on: the latent key and the seed.

    Settings with the same :meth:`~dpfda.simulation.studies.Setting.latent_canonical`
    (any T, μ, σ₀ and B') draw the same curves from the same stream, so they are drawn
    once per process (the last ``_LATENT_MAX`` keys kept).
    """
    key = (setting.latent_canonical(), int(seed))
    curves = _LATENT.get(key)
    if curves is None:
        curves = latent_curves(setting, seed)
        for a in vars(curves).values():
            if isinstance(a, np.ndarray):
                a.setflags(write=False)  # shared by every setting of the key
        _LATENT[key] = curves
        if len(_LATENT) > _LATENT_MAX:
            _LATENT.popitem(last=False)
    else:
        _LATENT.move_to_end(key)
    return curves


@lru_cache(maxsize=64)
def _public(setting: Setting) -> tuple[GridGeometry, np.ndarray, np.ndarray, Mechanism, Mechanism]:
    """(geometry, PTF's clip bounds and weights, FTP, PTF) of a setting of the default law (cached).

    None of them depends on the data: the laws of a setting and its latent draws
    (seeds) share them.
    """
    geom = setting.geometry()
    grid = geom.grid
    clip = ptf_default_clip(geom, setting.radius)
    weights = ptf_default_weights(geom)
    for a in (clip, weights):
        a.setflags(write=False)
    return (geom, clip, weights, ftp_mechanism(grid, geom.space, setting.radius, setting.mu, n=setting.n),
            ptf_mechanism(grid, geom.space, setting.radius, setting.mu, clip=clip, weights=weights, n=setting.n))


@lru_cache(maxsize=32)
def prepare(setting: Setting, seed: int) -> Prepared:
    """The latent curves of ``setting`` on its grid, f̄'s coordinates and the pipelines' calibration (cached)."""
    geom, clip, weights, ftp_mech, ptf_mech = _public(replace(setting, law="default"))
    curves = _shared_latent_curves(setting, seed)
    grid = geom.grid
    F = curves.values(grid)
    if setting.family == "legendre":
        assert isinstance(curves, PolynomialCurves)
        target = curves.mean_coef
    else:
        target = geom.coef_from_values(curves.mean_values(grid))
    noiseless = None
    if setting.sigma0 == 0.0:
        mean_coef, active = ftp_fit_mean(F, geom, setting.radius, exact=False)
        noiseless = (mean_coef, active, ptf_clipped_mean(F, clip, exact=False))
    for a in (F, target):
        a.setflags(write=False)
    clip_rows = np.ascontiguousarray(np.broadcast_to(clip, F.shape))
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
    (:meth:`~dpfda.simulation.studies.Setting.stream_canonical`: common random numbers
    across laws), so each repetition's observation noise ε and privacy normals are
    drawn once, in :func:`draw_normals`' order, and every law forms its own
    X = F + σ₀ε from them with the same two operations (σ₀ε, then + F) in the same
    order.  The result, one dict per setting in order, is therefore bit for bit what
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
    c = stop - start
    preps = [prepare(s, seed) for s in settings]
    blocks = (preps[0].geometry.dim, first.T)
    noisy = first.sigma0 > 0.0
    E, Z = _draw_raw(rep_generators(stream_key(first), seed, start, stop), c, blocks,
                     preps[0].F.shape if noisy else None)
    X = np.empty_like(E) if E is not None else None
    out = []
    for prep in preps:
        if E is not None and X is not None:
            np.multiply(E, first.sigma0, out=X)  # σ₀ε, then + F: draw_normals' two operations
            X += prep.F
        summarize, noiseless = _engine_summaries(prep)
        res = _run_arms(_paper_arms(prep, keep_releases), X, Z, c, n=first.n, F=prep.F,
                        summarize=summarize, noiseless=noiseless)
        out.append(_chunk_outputs(res, keep_releases))
    return out


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
    """``reps`` releases of one dataset by ``mechanism``, through the loop, scored chunk by chunk.

    ``X`` (n, T) is summarised once (exactly, as a release sums); the chunks of at
    most ``chunk`` repetitions draw their normals from ``rng`` (one stream, a chunk
    after the other: :func:`draw_normals`), the same normals a release of ``chunk``
    copies of ``X`` with ``rng`` draws.  ``X`` (reps, n, T) is released once per
    repetition, in one chunk.  ``score(release, parts, c)`` turns a chunk's release
    into per-repetition arrays (``parts``: ``centre`` and ``moved``, the summary and
    its per-curve flags, and ``data``); returns them joined over the chunks.
    """
    X = np.asarray(X, dtype=float)
    centre, moved = mechanism.summarize(X)
    parts = {"centre": centre, "moved": moved, **(data or {})}
    n = X.shape[-2]
    sizes = batches(reps, chunk) if X.ndim == 2 else [(0, X.shape[0])]
    arm = Arm("mechanism", mechanism, "centre", 0, score)
    out = [simulate_mechanisms([arm], rng, b - a, (mechanism.noise_dim,), n=n, F=X, sigma0=0.0,
                               summarize=lambda Y: parts, noiseless=lambda: parts)["mechanism"]
           for a, b in sizes]
    return concat_chunks(out)


def repeat_releases(pipeline: Callable[..., Release], X: ArrayLike, grid: ArrayLike, space: FunctionSpace,
                    radius: float, mu: float, reps: int, target: ArrayLike, rng: np.random.Generator,
                    chunk: int = 2_000_000) -> tuple[np.ndarray, np.ndarray]:
    """Errors of ``reps`` releases of ``pipeline`` and whether a ball constraint bound.

    ``pipeline`` is :func:`dpfda.ftp` or :func:`dpfda.ptf`.  ``X`` is either
    (n, T) noiseless data, released ``reps`` times with fresh privacy noise
    (in chunks of at most ``chunk`` values of the data, (chunk, n, T)), or
    (reps, n, T) noisy data, released once per repetition.  The releases are
    those the pipeline makes with ``rng`` (:func:`repeat_mechanism`).  Returns
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
