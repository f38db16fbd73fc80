"""The Monte Carlo engine: run a :class:`~dpfda.studies.Study` and tabulate it.

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
paper.

Random streams
--------------
Every random number is drawn from a generator that depends only on
(``seed``, the setting, the repetition):

* latent curves: ``SeedSequence(seed, spawn_key=latent_stream_key(setting))``,
  where the latent key is ("poly", m, n, B) or ("rkhs", n, ρ, centres, B) (the
  names dpfda 0.1.x gave the families "legendre" and "kernel", kept so the streams stay) — it
  leaves out T, μ, σ₀ and B', so every figure uses the same latent functions
  for the same n (and m), and the RKHS functions are evaluated on each grid;
* repetition r: a PCG64 generator seeded by
  ``SeedSequence(seed, spawn_key=stream_key(setting) + (r,))``, from which the
  repetition draws, in this order, the n × T observation-noise normals (none
  when σ₀ = 0), the d normals of FTP's privacy noise and the T normals of
  PTF's — exactly what ``observe``, ``ftp`` and ``ptf`` draw when called in
  that order with that generator (:func:`rep_generator`).  Building it with
  numpy's constructor costs about 14 µs (7 s of CPU over a full run); the
  engine instead computes the same PCG64 states for a whole chunk at once
  (``_pcg64_states``, about 3 µs a repetition, checked against numpy's
  constructor in every chunk).  A cheaper scheme — one stream
  per setting, repetition r starting r·2⁹⁶ draws in (``PCG64.advance``) — was
  tried and rejected: PCG64 states 2⁹⁶ steps apart share their low 96 bits,
  and the repetitions' draws were visibly dependent (tests/test_engine.py
  checks for exactly that).

Setting keys are SHA-256 hashes of the setting's canonical description
(:meth:`~dpfda.studies.Setting.canonical`; never Python's salted ``hash``),
made here (:func:`stream_key`), next to the generators they seed.  Hence the results are bit-identical for
any number of workers, any chunk size and any joblib backend, and a setting
shared by two studies (Figure 1 and Table 1) gets the same numbers in both.

Vectorisation and memory
------------------------
Repetitions are processed in chunks: the observed data of a chunk form one
array (chunk, n, T) that both pipelines' stage functions
(:func:`~dpfda.pipelines.ftp_fit_mean`, :func:`~dpfda.pipelines.ptf_clipped_mean`,
:func:`~dpfda.pipelines.ptf_fit`) process at once; only the draws loop over
repetitions.  The chunk is sized so that it holds at most
:data:`CHUNK_BYTES` bytes.  When σ₀ = 0 the observed data are the latent
curves in every repetition, so the per-curve FTP fits and PTF's clipped
means are computed once and only the privacy noise varies.  The chunks are
generated as they are needed (``Tasks``), never listed, and
:func:`run_studies` first checks (:func:`check_memory`) that every setting's
per-repetition results and the largest chunk fit in the memory this process
may use: a run that cannot fit is refused with ``ValueError`` before anything
runs.

The engine sums with the stage functions' fast path (``exact=False``): an
``einsum`` or BLAS product, curve after curve.  Such a sum can round
differently for two neighbouring datasets (issue #19), which matters for a
release but not for an estimate of the error: the engine releases nothing,
and its sums are within n·u of the exact mean, far below Monte Carlo error.
A public release (:func:`dpfda.ftp`, :func:`dpfda.ptf`) sums exactly and
rounds once (:mod:`dpfda.summation`), so the engine's coefficients equal a
release's to a few ulps, not bit for bit; the published numbers are those of
the engine, unchanged by that fix.

Uncertainty
-----------
With per-repetition errors F_r (FTP) and P_r (PTF), r = 1…R, the table gives
the means, their standard errors sd/√R, and the ratio F̄/P̄ with a 95%
confidence interval from the delta method on the log ratio,
log(F̄/P̄) ± 1.96·sd(F_r/F̄ - P_r/P̄)/√R, which accounts for the correlation
of the two errors (both pipelines see the same data in each repetition).
Activation probabilities are plain proportions with binomial standard errors.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import hashlib
import heapq
import math
import numbers
import os
import sys
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from ._interrupt import pause_for_test
from ._validation import check_int, check_nonnegative, check_positive
from .config import Z95
from .config import quick as quick_mode
from .data import polynomial_curves, rkhs_curves
from .pipelines import (
    add_noise,
    ftp_fit_mean,
    ftp_sigma,
    ptf_clipped_mean,
    ptf_default_clip,
    ptf_default_weights,
    ptf_fit,
    ptf_sigmas,
)
from .spaces import GridGeometry, gaussian_kernel
from .studies import Setting, Study

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CHUNK_BYTES",
    "CI_METHOD",
    "RESULT_COLUMNS",
    "stream_key",
    "latent_stream_key",
    "rep_generator",
    "latent_generator",
    "latent_curves",
    "simulate_chunk",
    "batches",
    "repeated",
    "repeat_releases",
    "bias_variance",
    "compare_on_curves",
    "simulate_setting",
    "summarize",
    "run_study",
    "run_studies",
    "plan",
    "memory_needed",
    "memory_limit",
    "check_memory",
    "quick_mode",
]

CHUNK_BYTES = 16 * 2**20
"""Upper bound on the observed-data array of one chunk (chunk × n × T doubles)."""

CI_METHOD = (
    "95% CI for the ratio of Monte Carlo means FTP/PTF by the delta method on the log ratio, "
    "log(F/P) +- 1.96 * sd(F_r/F - P_r/P)/sqrt(R), using the paired per-repetition errors "
    "(both pipelines see the same data in each repetition)"
)

RESULT_COLUMNS = [
    "study", "source", "family", "T", "m", "n", "mu", "sigma0", "B", "radius_rule", "radius",
    "rho", "centers", "law", "reps", "seed", "metric",
    "err_ftp", "se_ftp", "err_ptf", "se_ptf",
    "ratio", "ratio_lo", "ratio_hi", "se_log_ratio",
    "p_ftp_active", "se_p_ftp_active", "p_ftp_active_curves",
    "p_ptf_active", "se_p_ptf_active",
]
"""Columns of the results table, in order (one row per setting)."""


# ---------------------------------------------------------------------------
# Random streams
# ---------------------------------------------------------------------------


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)):
        raise TypeError(f"seed must be a non-negative integer, got {type(seed).__name__}")
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return seed


def _words(text: str, k: int = 4) -> tuple[int, ...]:
    """A stable (unsalted) hash of ``text`` as k non-negative 32-bit integers (SHA-256)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[4 * i: 4 * i + 4], "little") for i in range(k))


def stream_key(setting: Setting) -> tuple[int, ...]:
    """Spawn key of a setting's repetition streams: four 32-bit words of SHA-256 of its canonical text."""
    return _words(setting.canonical())


def latent_stream_key(setting: Setting) -> tuple[int, ...]:
    """Spawn key of a setting's latent curves (shared by settings with the same latent description)."""
    return _words(setting.latent_canonical())


def _generator(key: tuple, seed: int, rep: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key + (rep,))))


# numpy's SeedSequence and PCG64 seeding, vectorised over repetitions (see _rep_generators).
# The constants are those of numpy/random/bit_generator.pyx and numpy's pcg64.h; NEP 19 fixes
# both algorithms (a seed must give the same stream in every numpy version), and
# _rep_generators checks its first state against numpy's own constructor in every chunk.
_M32 = 0xFFFFFFFF
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R, _XSHIFT = 0xCA01F9DD, 0x4973F715, 16
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_M128 = (1 << 128) - 1


def _n_words(x: int) -> int:
    """Length of SeedSequence's uint32 encoding of a non-negative integer."""
    return max(1, (int(x).bit_length() + 31) // 32)


def _pcg64_states(key: tuple, seed: int, start: int, stop: int) -> list[dict] | None:
    """PCG64 states of ``_generator(key, seed, r)`` for r = start … stop - 1, or None.

    ``SeedSequence(seed, spawn_key=key + (r,))`` hashes its entropy words in
    order; every word before r is the same for all r, so the pool after them
    is that of ``SeedSequence(seed, spawn_key=key)``, and the multiplier of
    its hash has advanced a number of steps that depends only on the word
    count.  What is left — mixing r into the pool, drawing the eight seed
    words, PCG64's two initial steps — is done here for all r at once: about
    1 µs a repetition instead of 14 µs for building each generator.  None
    (use the plain constructor) if r does not fit in one word.
    """
    if stop > _M32 + 1:
        return None
    parent = np.random.SeedSequence(seed, spawn_key=key)
    pool = [int(w) for w in parent.pool]
    size = len(pool)
    words = max(_n_words(seed), size) + sum(_n_words(k) for k in key)
    steps = size + size * (size - 1) + size * (words - size)  # hash multiplier steps so far
    hc = _INIT_A * pow(_MULT_A, steps, 1 << 32) & _M32
    r = np.arange(start, stop, dtype=np.uint32)
    mixer = []
    for i in range(size):  # the word r, mixed into each pool word (SeedSequence.mix_entropy)
        v = r ^ np.uint32(hc)
        hc = hc * _MULT_A & _M32
        v *= np.uint32(hc)
        v ^= v >> np.uint32(_XSHIFT)
        m = np.uint32(_MIX_MULT_L * pool[i] & _M32) - np.uint32(_MIX_MULT_R) * v
        m ^= m >> np.uint32(_XSHIFT)
        mixer.append(m)
    hc = _INIT_B
    out = []
    for i in range(8):  # generate_state(4, np.uint64): eight words cycling over the pool
        v = mixer[i % size] ^ np.uint32(hc)
        hc = hc * _MULT_B & _M32
        v *= np.uint32(hc)
        v ^= v >> np.uint32(_XSHIFT)
        out.append(v.astype(np.uint64))
    w64 = np.column_stack([out[2 * j] | (out[2 * j + 1] << np.uint64(32)) for j in range(4)])
    states = []
    for s_hi, s_lo, i_hi, i_lo in w64.tolist():  # pcg64_set_seed: two steps of the LCG
        inc = (((i_hi << 64) | i_lo) << 1 | 1) & _M128
        state = ((inc + ((s_hi << 64) | s_lo)) * _PCG_MULT + inc) & _M128
        states.append({"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                       "has_uint32": 0, "uinteger": 0})
    return states


def _rep_generators(key: tuple, seed: int, start: int, stop: int):
    """Generators in the states of ``_generator(key, seed, r)``, r = start … stop - 1, in turn.

    One generator object is reset to each repetition's state (so use each
    before asking for the next).  The first state is checked against numpy's
    own constructor; on any difference every repetition falls back to it.
    """
    states = _pcg64_states(key, seed, start, stop)
    if states is None or states[0] != _generator(key, seed, start).bit_generator.state:
        for r in range(start, stop):
            yield _generator(key, seed, r)
        return
    bitgen = np.random.PCG64(0)
    rng = np.random.Generator(bitgen)
    for state in states:
        bitgen.state = state  # type: ignore[assignment]  # a dict is what PCG64 accepts
        yield rng


def rep_generator(setting: Setting, seed: int, rep: int) -> np.random.Generator:
    """A new generator in the state repetition ``rep`` of ``setting`` starts from.

    Drawing from it what the engine draws (module notes) reproduces the
    repetition: e.g. ``X = observe(F, σ₀, g)``, then ``ftp(X, …, g)``, then
    ``ptf(X, …, g)``.
    """
    rep = int(rep)
    if rep < 0:
        raise ValueError(f"rep must be a non-negative integer, got {rep}")
    return _generator(stream_key(setting), _check_seed(seed), rep)


def latent_generator(setting: Setting, seed: int) -> np.random.Generator:
    """The generator of the setting's latent curves.

    Shared by all settings with the same latent key.
    """
    ss = np.random.SeedSequence(seed, spawn_key=latent_stream_key(setting))
    return np.random.Generator(np.random.PCG64(ss))


def latent_curves(setting: Setting, seed: int):
    """The fixed latent curves of a setting (``PolynomialCurves`` or ``KernelCurves``)."""
    seed = _check_seed(seed)
    rng = latent_generator(setting, seed)
    if setting.family == "legendre":
        assert setting.m is not None  # Setting requires m for H_m
        return polynomial_curves(setting.n, setting.m, rng, B=setting.B, law=setting.law)
    assert setting.rho is not None and setting.centers is not None  # Setting fills them in
    return rkhs_curves(setting.n, rng, kernel=gaussian_kernel(setting.rho),
                       centers=setting.centers, B=setting.B, law=setting.law)


# ---------------------------------------------------------------------------
# One setting, prepared once per process
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Prepared:
    setting: Setting
    geometry: GridGeometry
    F: np.ndarray  # (n, T) latent values on the grid
    target: np.ndarray  # (d,) coordinates of f̄
    clip: np.ndarray  # (T,)
    clip_rows: np.ndarray  # (n, T): the same bounds repeated per curve (a faster clip, same values)
    weights: np.ndarray  # (T,)
    sigma_ftp: float
    sigma_ptf: np.ndarray  # (T,)
    noiseless: tuple | None  # σ₀ = 0: (FTP mean coef (d,), FTP active (n,), PTF clipped mean (T,))


@lru_cache(maxsize=32)
def _prepare(setting: Setting, seed: int) -> _Prepared:
    geom = setting.geometry()
    curves = latent_curves(setting, seed)
    grid = geom.grid
    F = curves.values(grid)
    if setting.family == "legendre":
        target = curves.mean_coef
    else:
        target = geom.coef_from_values(curves.mean_values(grid))
    clip = ptf_default_clip(geom, setting.radius)
    weights = ptf_default_weights(geom)
    noiseless = None
    if setting.sigma0 == 0.0:
        mean_coef, active = ftp_fit_mean(F, geom, setting.radius, exact=False)
        noiseless = (mean_coef, active, ptf_clipped_mean(F, clip, exact=False))
    for a in (F, target):
        a.setflags(write=False)
    clip_rows = np.ascontiguousarray(np.broadcast_to(clip, F.shape))
    return _Prepared(setting=setting, geometry=geom, F=F, target=target, clip=clip,
                     clip_rows=clip_rows, weights=weights, sigma_ftp=ftp_sigma(setting.n, setting.radius, setting.mu),
                     sigma_ptf=ptf_sigmas(setting.n, clip, setting.mu), noiseless=noiseless)


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


def simulate_chunk(setting: Setting, seed: int, start: int, stop: int, *,
                   keep_releases: bool = False) -> dict:
    """Repetitions ``start, …, stop - 1`` of one setting, vectorised.

    Returns a dict of per-repetition arrays: ``err_ftp``, ``err_ptf`` (the
    IMSE/MSE of each release against f̄), ``ftp_any_active`` (some curve's FTP
    fit hit the ball), ``ftp_frac_active`` (fraction of curves whose fit did),
    ``ptf_active`` (PTF's fit hit the ball); with ``keep_releases`` also
    ``coef_ftp`` and ``coef_ptf`` (chunk, d), the released coordinates.
    """
    seed = _check_seed(seed)
    if not isinstance(setting, Setting):
        raise TypeError(f"setting must be a Setting, got {type(setting).__name__}")
    start, stop = int(start), int(stop)
    if not 0 <= start < stop:
        raise ValueError(f"need 0 <= start < stop, got start={start}, stop={stop}")
    _tune_malloc()
    prep = _prepare(setting, seed)
    geom = prep.geometry
    n, T, d = setting.n, setting.T, geom.dim
    c = stop - start
    priv = np.empty((c, d + T))
    streams = _rep_generators(stream_key(setting), seed, start, stop)
    if setting.sigma0 > 0.0:
        X = np.empty((c, n, T))
        for Xi, priv_i, rng in zip(X, priv, streams):
            rng.standard_normal(out=Xi)  # observation noise ε (eq. 2) ...
            rng.standard_normal(out=priv_i)  # ... then FTP's d and PTF's T privacy normals
            Xi *= setting.sigma0  # X = F + σ₀ε, as dpfda.data.observe (while Xi is in cache)
            Xi += prep.F
        # The engine's own sums (exact=False): it estimates errors and releases nothing.
        mean_coef, active = ftp_fit_mean(X, geom, setting.radius, exact=False)  # (c, d), (c, n)
        xbar = ptf_clipped_mean(X, prep.clip_rows, exact=False)  # (c, T); clip bounds c_j for every curve
        del X
        any_active = active.any(axis=-1)
        frac_active = active.mean(axis=-1)
    else:
        for priv_i, rng in zip(priv, streams):
            rng.standard_normal(out=priv_i)
        assert prep.noiseless is not None  # prepared whenever sigma0 == 0
        mean_coef, active, xbar = prep.noiseless
        any_active = np.full(c, bool(active.any()))
        frac_active = np.full(c, float(active.mean()))
    # FTP (Algorithm 1): θ̂ + σZ, Z ~ N(0, I_d) in Cameron–Martin coordinates.
    coef_ftp = add_noise(mean_coef, prep.sigma_ftp, priv[:, :d])
    # PTF (Algorithm 2): clipped means + N(0, σ_j²), then the weighted ball fit.
    xtilde = add_noise(xbar, prep.sigma_ptf, priv[:, d:])
    # Per-repetition vectors get a singleton axis, (c, 1, ·): numpy then runs one
    # vector-matrix product per repetition, so a repetition's rounding does not
    # depend on how many repetitions share its chunk (a (c, T) @ (T, d) product
    # may round differently for different c).
    fit = ptf_fit(xtilde[:, None, :], geom, setting.radius, prep.weights)
    coef_ptf = fit.coef[:, 0]
    out = {
        "err_ftp": geom.error(coef_ftp[:, None, :], prep.target)[:, 0],
        "err_ptf": geom.error(fit.coef, prep.target)[:, 0],
        "ftp_any_active": any_active,
        "ftp_frac_active": frac_active,
        "ptf_active": fit.active[:, 0],
    }
    if keep_releases:
        out["coef_ftp"] = coef_ftp
        out["coef_ptf"] = coef_ptf
    return out


def batches(reps: int, size: int):
    """Consecutive chunks ``(start, stop)`` of at most ``size`` of ``reps`` repetitions.

    >>> list(batches(5, 2))
    [(0, 2), (2, 4), (4, 5)]
    """
    for start in range(0, reps, size):
        yield start, min(start + size, reps)


def repeated(release, X, reps: int, size: int, rng):
    """``release(copies, rng)`` on chunks of at most ``size`` copies of the dataset ``X``.

    ``X`` (n, T) is broadcast to (k, n, T), never copied, so one vectorised
    call per chunk draws k releases of the same data, with fresh noise from
    ``rng``.  A generator of the releases, in order.
    """
    X = np.asarray(X, dtype=float)
    for start, stop in batches(reps, size):
        yield release(np.broadcast_to(X, (stop - start,) + X.shape), rng)


def repeat_releases(pipeline, X, grid, space, radius, mu, reps, target, rng, chunk=2_000_000):
    """Errors of ``reps`` releases of ``pipeline`` and whether a ball constraint bound.

    ``pipeline`` is :func:`dpfda.ftp` or :func:`dpfda.ptf`.  ``X`` is either
    (n, T) noiseless data, released ``reps`` times with fresh privacy noise
    (broadcast in chunks of at most ``chunk`` values, so the data are never
    copied), or (reps, n, T) noisy data, released once per repetition.  Returns
    ``(errors (reps,), any_active (reps,))``: the error of each release against
    ``target`` (:meth:`dpfda.Release.error`) and whether a ball constraint was active —
    PTF's final fit (a function of the release) or any curve's FTP fit, which
    comes from the stage function :func:`~dpfda.pipelines.ftp_fit_mean` because a
    release carries no per-curve flag.
    """
    X = np.asarray(X, dtype=float)

    def any_active(rel, data):
        if rel.method == "ptf":
            return np.asarray(rel.active)
        return ftp_fit_mean(data, rel.geometry, rel.radius, exact=False)[1].any(axis=-1)

    if X.ndim == 3:
        rel = pipeline(X, grid, space, radius, mu, rng)
        return rel.error(target), any_active(rel, X)
    n, T = X.shape
    errs, act = [], []
    releases = repeated(lambda Y, g: pipeline(Y, grid, space, radius, mu, g), X, reps,
                        max(1, chunk // (n * T)), rng)
    for rel in releases:
        errs.append(rel.error(target))
        act.append(np.broadcast_to(any_active(rel, X), rel.shape))
    return np.concatenate(errs), np.concatenate(act)


def _concat(parts: list[dict]) -> dict:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def compare_on_curves(F, target, grid, space, *, radius: float, mu: float, sigma0: float,
                      reps: int, seed: int, key=(), chunk_bytes: int = CHUNK_BYTES) -> dict:
    """Monte Carlo comparison of FTP and PTF on fixed latent curves.

    Each repetition observes X = F + σ₀ε (eq. 2), then applies
    :func:`dpfda.ftp` (Algorithm 1) and :func:`dpfda.ptf` (Algorithm 2) to the
    same X and scores both releases against ``target`` — the paper's design
    (§5), run through the public pipelines rather than the engine's stages.

    Parameters
    ----------
    F : array (n, T)
        Latent curves on ``grid``.
    target : array (d,)
        Coordinates of the sample mean f̄ in ``space``'s geometry (θ̄ for
        ``LegendreSpace``; ``geometry.coef_from_values(f̄ on the grid)`` for a
        ``KernelSpace``).
    grid, space
        As for :func:`dpfda.ftp`.
    radius, mu, sigma0
        B', μ and σ₀.
    reps : int
        Repetitions (>= 2).
    seed : int, key : tuple of int
        Chunk j of repetitions draws from
        ``Generator(PCG64(SeedSequence(seed, spawn_key=key + (j,))))``: first the
        observation noise, then FTP's privacy noise, then PTF's.  Results are
        reproducible for a given ``chunk_bytes``.
    chunk_bytes : int
        Upper bound on the (chunk, n, T) observed-data array (default
        :data:`CHUNK_BYTES`).

    Returns
    -------
    dict
        :func:`summarize` of the per-repetition errors
        (``err_ftp``, ``se_ftp``, ``err_ptf``, ``se_ptf``, ``ratio``,
        ``ratio_lo``, ``ratio_hi``, ``se_log_ratio``, activation rates) plus
        ``n``, ``reps`` and ``radius``.
    """
    from .pipelines import ftp_privatize, ptf

    F = np.asarray(F, dtype=float)
    if F.ndim != 2:
        raise ValueError(f"F must be a 2-D array (n, T) of latent curves, got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        raise ValueError("F contains NaN or inf")
    geom = space.at(grid)
    if F.shape[1] != geom.T:
        raise ValueError(f"F has {F.shape[1]} columns, expected T={geom.T} (the grid)")
    target = np.asarray(target, dtype=float)
    if target.shape != (geom.dim,):
        raise ValueError(f"target must have shape ({geom.dim},), got {target.shape}")
    radius = check_positive(radius, "radius")
    mu = check_positive(mu, "mu")
    sigma0 = check_nonnegative(sigma0, "sigma0")
    reps = check_int(reps, "reps", 2)
    seed = check_int(seed, "seed", 0)
    key = tuple(check_int(k, "key entries", 0) for k in key)
    chunk_bytes = check_int(chunk_bytes, "chunk_bytes", 1)
    n, T = F.shape
    size = max(1, chunk_bytes // (8 * n * T))
    parts = []
    for j, (start, stop) in enumerate(batches(reps, size)):
        c = stop - start
        rng = _generator(key, seed, j)
        X = F + sigma0 * rng.standard_normal((c, n, T)) if sigma0 > 0 else np.broadcast_to(F, (c, n, T))
        # FTP as dpfda.ftp runs it, stage by stage: the per-curve activity is a
        # simulation diagnostic that a release does not carry.
        mean_coef, active = ftp_fit_mean(X, geom, radius, exact=False)
        a = ftp_privatize(mean_coef, geom, radius, mu, n, rng)
        b = ptf(X, grid, space, radius, mu, rng)
        parts.append({
            "err_ftp": a.error(target),
            "err_ptf": b.error(target),
            "ftp_any_active": active.any(axis=-1),
            "ftp_frac_active": active.mean(axis=-1),
            "ptf_active": b.active,
        })
    out = summarize(_concat(parts))
    out.update({"n": n, "reps": reps, "radius": radius})
    return out


def simulate_setting(setting: Setting, reps: int, seed: int, *, chunk_reps: int | None = None,
                     keep_releases: bool = False) -> dict:
    """All repetitions of one setting in this process (per-repetition arrays)."""
    reps = _check_reps(reps)
    seed = _check_seed(seed)
    size = _chunk_size(setting, chunk_reps)
    parts = [simulate_chunk(setting, seed, a, b, keep_releases=keep_releases) for a, b in batches(reps, size)]
    return _concat(parts)


# ---------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------


def summarize(per_rep: dict) -> dict:
    """Monte Carlo means, standard errors, ratio CI and activation rates (module notes)."""
    F = np.asarray(per_rep["err_ftp"], dtype=float)
    P = np.asarray(per_rep["err_ptf"], dtype=float)
    R = F.size
    if R < 2:
        raise ValueError("need at least 2 repetitions for standard errors")
    mF, mP = F.mean(), P.mean()
    sq = math.sqrt(R)
    ratio = mF / mP
    se_log = float(np.std(F / mF - P / mP, ddof=1)) / sq
    p_any = float(np.mean(per_rep["ftp_any_active"]))
    p_ptf = float(np.mean(per_rep["ptf_active"]))
    return {
        "err_ftp": float(mF),
        "se_ftp": float(np.std(F, ddof=1)) / sq,
        "err_ptf": float(mP),
        "se_ptf": float(np.std(P, ddof=1)) / sq,
        "ratio": float(ratio),
        "ratio_lo": float(ratio * math.exp(-Z95 * se_log)),
        "ratio_hi": float(ratio * math.exp(Z95 * se_log)),
        "se_log_ratio": se_log,
        "p_ftp_active": p_any,
        "se_p_ftp_active": math.sqrt(p_any * (1 - p_any) / R),
        "p_ftp_active_curves": float(np.mean(per_rep["ftp_frac_active"])),
        "p_ptf_active": p_ptf,
        "se_p_ptf_active": math.sqrt(p_ptf * (1 - p_ptf) / R),
    }


# ---------------------------------------------------------------------------
# Planning and running
# ---------------------------------------------------------------------------


def _check_reps(reps) -> int:
    if isinstance(reps, bool) or not isinstance(reps, (numbers.Integral, np.integer)):
        raise TypeError(f"reps must be an integer, got {type(reps).__name__}")
    reps = int(reps)
    if reps < 2:
        raise ValueError(f"reps must be at least 2 (standard errors need two repetitions), got {reps}")
    return reps


def _chunk_size(setting: Setting, chunk_reps) -> int:
    if chunk_reps is not None:
        if isinstance(chunk_reps, bool) or not isinstance(chunk_reps, (numbers.Integral, np.integer)):
            raise TypeError(f"chunk_reps must be a positive integer or None, got {type(chunk_reps).__name__}")
        if int(chunk_reps) < 1:
            raise ValueError(f"chunk_reps must be a positive integer or None, got {chunk_reps}")
        return int(chunk_reps)
    if setting.sigma0 == 0.0:
        per_rep = 8 * (setting.T + setting.dim) * 8  # privacy noise and a few (d or T) arrays
    else:
        per_rep = 8 * setting.n * setting.T
    return max(1, CHUNK_BYTES // per_rep)


def _cost(setting: Setting, reps: int) -> float:
    """Rough relative cost of ``reps`` repetitions (for scheduling only)."""
    per = 30.0 + (setting.n * setting.T * (1.0 + 0.3 * setting.dim) if setting.sigma0 > 0 else 0.0)
    return reps * per


class Tasks:
    """The chunks ``(canonical, start, stop)`` of a run, generated when iterated.

    A list of every chunk would cost memory in proportion to the repetitions
    (10^12 repetitions are billions of chunks); this object holds only the
    settings and their chunk sizes, and yields the chunks in :func:`plan`'s order
    each time it is iterated.  ``len()`` and :meth:`count` are arithmetic.
    """

    def __init__(self, settings, group: dict, reps: int, sizes: dict):
        self._settings = settings
        self._group = group
        self.reps = reps
        self.sizes = sizes

    def count(self, key: str) -> int:
        """How many chunks setting ``key`` is split into."""
        return -(-self.reps // self.sizes[key])

    def __len__(self) -> int:
        return sum(self.count(key) for key in self._settings)

    def _chunks(self, key: str):
        for a, b in batches(self.reps, self.sizes[key]):
            yield -_cost(self._settings[key], b - a), key, a, b

    def __iter__(self):
        # Study by study; within a study largest first, ties in the order of the settings
        # and of their chunks (heapq.merge is stable across its inputs): the order a stable
        # sort of the whole list by (group, -cost) gives, without the list.
        for g in sorted(set(self._group.values())):
            keys = [k for k in self._settings if self._group[k] == g]
            for _, key, a, b in heapq.merge(*(self._chunks(k) for k in keys), key=lambda t: t[0]):
                yield key, a, b


def plan(studies, reps: int, chunk_reps: int | None = None):
    """Unique settings of ``studies`` and the chunks of repetitions they split into.

    Returns ``(settings, tasks)``: ``settings`` maps each setting's canonical
    text to the Setting; ``tasks`` (a ``Tasks``, generated lazily, with a
    length) yields (canonical, start, stop).
    The tasks come study by study (a setting with the first study that has
    it), so that the studies complete one after another and a caller can
    write each study's outputs while the next ones run (``on_study`` of
    :func:`run_studies`); within a study they come largest first, which keeps
    the workers evenly loaded up to the end.  The order changes no result.
    """
    reps = _check_reps(reps)
    settings: "OrderedDict[str, Setting]" = OrderedDict()
    group: dict[str, int] = {}
    for i, study in enumerate(studies):
        for s in study.settings:
            key = s.canonical()
            settings.setdefault(key, s)
            group.setdefault(key, i)
    sizes = {key: min(_chunk_size(s, chunk_reps), reps) for key, s in settings.items()}
    return settings, Tasks(settings, group, reps, sizes)


RESULT_BYTES_PER_REP = 26
"""Bytes of per-repetition results a setting keeps until its study is tabulated (two errors,
the active share, two flags)."""


def _chunk_memory(setting: Setting, c: int) -> int:
    """Rough working memory of one chunk of ``c`` repetitions, in bytes.

    The observed data, the per-curve fits, the privacy normals and a few (c, T) and
    (c, d) arrays.
    """
    n, T, d = setting.n, setting.T, setting.dim
    per = 8 * 8 * (T + d)  # privacy normals, noisy means, fits, errors
    if setting.sigma0 > 0.0:
        per += 2 * 8 * n * (T + d)  # X, the per-curve fits and their temporaries
    return c * per


def memory_needed(studies, reps: int, chunk_reps: int | None = None, n_jobs: int | None = 1) -> dict:
    """Estimated peak memory of :func:`run_studies` (bytes), without running or planning it.

    ``results``: every setting's per-repetition results, which are kept until the run
    is tabulated (``RESULT_BYTES_PER_REP`` a repetition), and one setting's more
    while its chunks are joined; ``chunks``: the largest chunk's working memory, once
    per worker and once more in this process.
    """
    reps = _check_reps(reps)
    settings = {s.canonical(): s for st in studies for s in st.settings}
    results = (len(settings) + 1) * reps * RESULT_BYTES_PER_REP
    largest = max((_chunk_memory(s, min(_chunk_size(s, chunk_reps), reps)) for s in settings.values()),
                  default=0)
    workers = (os.cpu_count() or 1) if n_jobs in (None, -1) else max(1, int(n_jobs))
    return {"results": results, "chunks": largest * (workers + 1), "settings": len(settings),
            "workers": workers}


def memory_limit() -> int:
    """Memory this process may use, in bytes.

    The least of the physical memory, the cgroup's limit (v2 ``memory.max`` or v1
    ``memory.limit_in_bytes``) and ``RLIMIT_AS``.
    """
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(int(soft))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return min(limits) if limits else 2**63


def _gib(b: float) -> str:
    return f"{b / 2**30:.3g} GiB"


def check_memory(studies, reps: int, chunk_reps: int | None = None, n_jobs: int | None = 1, *,
                 names: tuple[str, str] = ("reps", "chunk_reps")) -> None:
    """``ValueError`` if a run of ``studies`` cannot fit in :func:`memory_limit`.

    The message names ``reps`` or ``chunk_reps`` (``names`` gives their names, e.g.
    the command line's options), whichever is at fault, with the estimate
    (:func:`memory_needed`) and the limit.  Nothing is planned or run.
    """
    need = memory_needed(studies, reps, chunk_reps, n_jobs)
    limit = memory_limit()
    if need["results"] > limit:
        most = limit // ((need["settings"] + 1) * RESULT_BYTES_PER_REP)
        raise ValueError(
            f"{names[0]} {reps} cannot fit in memory: the per-repetition results of "
            f"{need['settings']} settings need about {_gib(need['results'])} "
            f"({RESULT_BYTES_PER_REP} bytes a repetition and setting) and this process may use "
            f"{_gib(limit)}; at most about {most} repetitions fit"
        )
    if need["chunks"] + need["results"] > limit:
        raise ValueError(
            f"{names[1]} {chunk_reps} cannot fit in memory: the largest chunk needs about "
            f"{_gib(need['chunks'] / max(1, need['workers'] + 1))} of working memory, once per worker "
            f"and once more here, and this process may use {_gib(limit)}; use fewer repetitions "
            "per chunk (by default a chunk's data take at most 16 MiB)"
        )


def _task(setting: Setting, seed: int, start: int, stop: int):
    pause_for_test("simulation")  # a no-op unless a test asks for it (dpfda._interrupt)
    return setting.canonical(), start, simulate_chunk(setting, seed, start, stop)


def _execute(settings, tasks, seed, n_jobs, progress, on_setting, on_chunk=None):
    """Run the tasks (in parallel with joblib); hand each setting's arrays on when complete.

    ``on_setting(key, arrays)`` is called in this process as soon as the last
    chunk of a setting has arrived, with its per-repetition arrays in
    repetition order.

    If anything interrupts the loop (an exception from ``on_chunk``, a
    KeyboardInterrupt), joblib's generator is closed at once: that aborts the
    remaining tasks and terminates the workers, rather than leaving them busy
    until the generator happens to be garbage-collected.
    """
    from joblib import Parallel, delayed

    if isinstance(tasks, Tasks):
        remaining = {key: tasks.count(key) for key in settings}
    else:
        remaining = {}
        for key, _, _ in tasks:
            remaining[key] = remaining.get(key, 0) + 1
    parts: dict[str, dict[int, dict]] = {key: {} for key in settings}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(settings), desc="settings", unit="setting", leave=True)
    results = None
    try:
        if n_jobs == 1:
            results = (_task(settings[k], seed, a, b) for k, a, b in tasks)
        else:
            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(_task)(settings[k], seed, a, b) for k, a, b in tasks)
        for key, start, arrays in results:
            parts[key][start] = arrays
            remaining[key] -= 1
            if remaining[key] == 0:
                done = parts.pop(key)
                on_setting(key, _concat([done[a] for a in sorted(done)]))
                if bar is not None:
                    bar.update(1)
            if on_chunk is not None:
                on_chunk()
    finally:
        if results is not None:
            with warnings.catch_warnings():  # joblib's "tasks ... not used" warning on abort
                warnings.simplefilter("ignore", UserWarning)
                results.close()
        if bar is not None:
            bar.close()


def _check_jobs(n_jobs) -> int | None:
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (numbers.Integral, np.integer)):
        raise TypeError(f"n_jobs must be an integer (or None), got {type(n_jobs).__name__}")
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs must not be 0 (use 1 for serial, k > 1 for k workers, -1 for all cores)")
    return n_jobs


def _frame(study: Study, per_setting: dict, reps: int, seed: int, started: str) -> "pd.DataFrame":
    import pandas as pd  # here, not at the top: worker processes never need it

    rows = []
    for s in study.settings:
        row: dict[str, object] = {"study": study.name, "source": study.source}
        row.update(s.params())
        row.update({"reps": reps, "seed": seed})
        row.update(summarize(per_setting[s.canonical()]))
        rows.append(row)
    df = pd.DataFrame(rows)
    df["m"] = df["m"].astype("Int64")
    df["centers"] = df["centers"].astype("Int64")
    df = df[RESULT_COLUMNS]
    df.attrs["dpfda"] = metadata(study, reps, seed, started=started)
    return df


def metadata(study: Study, reps: int, seed: int, *, started: str | None = None) -> dict:
    """What a caption or a sidecar file needs to say about a run."""
    from . import __version__

    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return {
        "study": study.name,
        "title": study.title,
        "source": study.source,
        "reps": int(reps),
        "seed": int(seed),
        "settings": len(study.settings),
        "laws": sorted({s.law for s in study.settings}),
        "dpfda_version": __version__,
        "numpy_version": np.__version__,
        "ci_method": CI_METHOD,
        "streams": "numpy PCG64 per repetition, seeded by SeedSequence(seed, spawn_key=SHA-256 words "
                   "of the setting + (rep,)); latent curves from SeedSequence(seed, spawn_key=SHA-256 "
                   "words of the latent setting)",
        "started": started or now,
        "finished": now,
    }


def run_studies(studies, reps: int, seed: int, n_jobs: int | None = 1, chunk_reps: int | None = None,
                progress: bool = False, *, on_chunk=None, on_study=None) -> "OrderedDict[str, pd.DataFrame]":
    """Run several studies together; a setting they share is simulated once.

    Returns an ordered dict study name → results table (see :func:`run_study`).
    ``on_chunk``, if given, is called (with no arguments, in this process)
    each time a chunk of repetitions has arrived; an exception it raises stops
    the run, and joblib's workers with it (the command line uses it to stop
    promptly on a signal).  ``on_study(name, table)``, if given, is called in
    this process as soon as a study's last setting is done, while the workers
    go on with the next studies (the command line draws a study's figure
    then); an exception it raises stops the run the same way.
    """
    studies = list(studies)
    for st in studies:
        if not isinstance(st, Study):
            raise TypeError(f"studies must be Study objects, got {type(st).__name__}")
    reps = _check_reps(reps)
    seed = _check_seed(seed)
    n_jobs = _check_jobs(n_jobs)
    if on_chunk is not None and not callable(on_chunk):
        raise TypeError(f"on_chunk must be a function of no arguments or None, got {type(on_chunk).__name__}")
    if on_study is not None and not callable(on_study):
        raise TypeError(f"on_study must be a function (name, table) or None, got {type(on_study).__name__}")
    check_memory(studies, reps, chunk_reps, n_jobs)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    settings, tasks = plan(studies, reps, chunk_reps)
    per_setting: dict[str, dict] = {}
    waiting = [{s.canonical() for s in st.settings} for st in studies]
    frames: dict[int, "pd.DataFrame"] = {}

    def setting_done(key, arrays):
        per_setting[key] = arrays
        for i, st in enumerate(studies):
            if key in waiting[i]:
                waiting[i].discard(key)
                if not waiting[i]:
                    frames[i] = _frame(st, per_setting, reps, seed, started)
                    if on_study is not None:
                        on_study(st.name, frames[i])

    _execute(settings, tasks, seed, n_jobs, progress, setting_done, on_chunk=on_chunk)
    return OrderedDict((st.name, frames[i]) for i, st in enumerate(studies))


def run_study(study: Study, reps: int, seed: int, n_jobs: int | None = 1, chunk_reps: int | None = None,
              progress: bool = False) -> "pd.DataFrame":
    """Run every setting of a study with ``reps`` Monte Carlo repetitions.

    Parameters
    ----------
    study : Study
        E.g. ``dpfda.studies.get_study("fig1")`` or a custom ``Study.grid(...)``.
    reps : int
        Repetitions per setting (>= 2; the paper uses 1000).
    seed : int
        Non-negative master seed; every stream derives from it (module notes).
    n_jobs : int or None
        1 runs serially in this process; k > 1 (or -1) uses joblib with k
        workers; None uses joblib's current configuration (e.g. inside
        ``joblib.parallel_config(backend="dask")``).  Results do not depend on it.
    chunk_reps : int, optional
        Repetitions per chunk (default: as many as fit in :data:`CHUNK_BYTES`).
        Results do not depend on it.
    progress : bool
        Show a tqdm progress bar over settings.

    Returns
    -------
    pandas.DataFrame
        One row per setting with the columns :data:`RESULT_COLUMNS`: the
        parameters; ``err_ftp``/``err_ptf`` — the Monte Carlo mean of the IMSE
        (``metric="IMSE"``, H_m) or grid MSE (``"MSE"``, RKHS) against f̄ — with
        standard errors ``se_ftp``/``se_ptf``; ``ratio`` = err_ftp/err_ptf with
        the 95% delta-method interval ``ratio_lo``–``ratio_hi``
        (:data:`CI_METHOD`); ``p_ftp_active`` (share of repetitions in which
        some curve's FTP constraint was active), ``p_ftp_active_curves`` (mean
        share of curves), ``p_ptf_active`` (share of repetitions in which PTF's
        constraint was active), with binomial standard errors.
        ``df.attrs["dpfda"]`` holds the run's metadata (``metadata``).
    """
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study, got {type(study).__name__}")
    return run_studies([study], reps, seed, n_jobs=n_jobs, chunk_reps=chunk_reps,
                       progress=progress)[study.name]


def bias_variance(coef, target, geometry) -> dict:
    """Squared bias and variance of repeated releases, with per-repetition influence values.

    ``coef`` (R, d) holds the coordinates of R releases of one setting (e.g. the
    ``coef_ftp`` of :func:`simulate_setting` with ``keep_releases=True``), ``target``
    (d,) the truth, in the error metric of ``geometry`` (IMSE of H_m, grid MSE of an
    RKHS).  Returns ``bias2`` (the squared bias, corrected for the Monte Carlo error of
    the mean release), ``var`` (the mean squared distance of a release from the mean
    release) and their first-order influence values ``bias2_if``/``var_if`` (R,), whose
    standard deviation over √R is each estimate's standard error.  Influence values of
    two pipelines run on the same data pair up repetition by repetition, so the
    standard error of a difference is that of the difference of the influence values.
    """
    coef = np.asarray(coef, dtype=float)
    target = np.asarray(target, dtype=float)
    if coef.ndim != 2 or coef.shape[1] != geometry.dim or coef.shape[0] < 2:
        raise ValueError(f"coef must be (R, {geometry.dim}) with R >= 2, got shape {coef.shape}")
    if target.shape != (geometry.dim,):
        raise ValueError(f"target must have shape ({geometry.dim},), got {target.shape}")
    if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(target))):
        raise ValueError("coef and target must be finite")
    R = coef.shape[0]
    Q = (np.eye(geometry.dim) if geometry.metric == "IMSE"
         else geometry.Phi.T @ geometry.Phi / geometry.T)
    centre = coef.mean(axis=0)
    dev = coef - centre
    spread = np.einsum("ij,jk,ik->i", dev, Q, dev)  # squared distance to the mean release
    var = float(spread.mean())
    b = centre - target
    bias2 = float(b @ Q @ b) - var / (R - 1)
    return {"bias2": bias2, "var": var, "bias2_if": 2 * dev @ (Q @ b), "var_if": spread - var,
            "reps": R}
