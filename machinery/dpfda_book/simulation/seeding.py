"""Random streams of the simulations: keys, generators and their vectorised seeding.

Every random number of a simulation is drawn from a generator that depends
only on (``seed``, the setting, the repetition):

* latent curves: ``SeedSequence(seed, spawn_key=latent_stream_key(setting))``,
  where the latent key is ("poly", m, n, B) or ("rkhs", n, ρ, centres, B) (the
  stream tokens of the families "legendre" and "kernel",
  ``dpfda_book.simulation.studies._STREAM_TOKEN``) — it leaves out T, μ, σ₀ and B', so every
  figure uses the same latent functions for the same n (and m), and the RKHS
  functions are evaluated on each grid;
* repetition r: a PCG64 generator seeded by
  ``SeedSequence(seed, spawn_key=stream_key(setting) + (r,))``
  (:func:`rep_generator`); what it draws, and in which order, is the rule of
  :func:`dpfda_book.simulation.engine.draw_normals`.  The repetition key leaves out the
  latent law: the laws of one setting share their observation and privacy noise
  (common random numbers), and differ only in their latent curves.

Setting keys are SHA-256 hashes of the setting's canonical description
(:meth:`~dpfda_book.simulation.studies.Setting.canonical`; never Python's salted ``hash``).
:func:`rep_generators` computes the PCG64 states of a whole chunk of
repetitions at once, checked against numpy's constructor in every chunk.
The repetitions never share one stream at offsets (repetition r starting
r·2⁹⁶ draws in, ``PCG64.advance``): PCG64 states 2⁹⁶ steps apart share
their low 96 bits, and their draws are dependent (tests/test_seeding.py
checks for exactly that).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np

from dpfda.validation import check_int

from .studies import Setting

__all__ = [
    "hash_words",
    "stream_key",
    "latent_stream_key",
    "generator",
    "pcg64_states",
    "rep_generators",
    "rep_generator",
    "latent_generator",
]


def hash_words(text: str, k: int = 4) -> tuple[int, ...]:
    """A stable (unsalted) hash of ``text`` as k non-negative 32-bit integers (SHA-256)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[4 * i: 4 * i + 4], "little") for i in range(k))


def stream_key(setting: Setting) -> tuple[int, ...]:
    """Spawn key of a setting's repetition streams: four 32-bit words of SHA-256 of its canonical text.

    The text is :meth:`~dpfda_book.simulation.studies.Setting.stream_canonical`, the canonical
    text without the latent law, so settings that differ only in their law share their
    repetitions' streams (common random numbers across laws).
    """
    return hash_words(setting.stream_canonical())


def latent_stream_key(setting: Setting) -> tuple[int, ...]:
    """Spawn key of a setting's latent curves (shared by settings with the same latent description)."""
    return hash_words(setting.latent_canonical())


def generator(key: tuple, seed: int, rep: int) -> np.random.Generator:
    """``Generator(PCG64(SeedSequence(seed, spawn_key=key + (rep,))))``: the stream of one repetition or chunk."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key + (rep,))))


# numpy's SeedSequence and PCG64 seeding, vectorised over repetitions (see rep_generators).
# The constants are those of numpy/random/bit_generator.pyx and numpy's pcg64.h; NEP 19 fixes
# both algorithms (a seed must give the same stream in every numpy version), and
# rep_generators checks its first state against numpy's own constructor in every chunk.
_M32 = 0xFFFFFFFF
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R, _XSHIFT = 0xCA01F9DD, 0x4973F715, 16
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_M128 = (1 << 128) - 1


def _n_words(x: int) -> int:
    """Length of SeedSequence's uint32 encoding of a non-negative integer."""
    return max(1, (int(x).bit_length() + 31) // 32)


def pcg64_states(key: tuple, seed: int, start: int, stop: int) -> list[dict] | None:
    """PCG64 states of ``generator(key, seed, r)`` for r = start … stop - 1, or None.

    ``SeedSequence(seed, spawn_key=key + (r,))`` hashes its entropy words in
    order; every word before r is the same for all r, so the pool after them
    is that of ``SeedSequence(seed, spawn_key=key)``, and the multiplier of
    its hash has advanced a number of steps that depends only on the word
    count.  What is left — mixing r into the pool, drawing the eight seed
    words, PCG64's two initial steps — is done here for all r at once.  None
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


def rep_generators(key: tuple, seed: int, start: int, stop: int) -> Iterator[np.random.Generator]:
    """Generators in the states of ``generator(key, seed, r)``, r = start … stop - 1, in turn.

    One generator object is reset to each repetition's state (so use each
    before asking for the next).  The first state is checked against numpy's
    own constructor; on any difference every repetition falls back to it.
    """
    states = pcg64_states(key, seed, start, stop)
    if states is None or states[0] != generator(key, seed, start).bit_generator.state:
        for r in range(start, stop):
            yield generator(key, seed, r)
        return
    bitgen = np.random.PCG64(0)
    rng = np.random.Generator(bitgen)
    for state in states:
        bitgen.state = state  # type: ignore[assignment]  # a dict is what PCG64 accepts
        yield rng


def rep_generator(setting: Setting, seed: int, rep: int) -> np.random.Generator:
    """A new generator in the state repetition ``rep`` of ``setting`` starts from.

    Drawing from it what the engine draws (:func:`dpfda_book.simulation.engine.draw_normals`) reproduces the
    repetition: e.g. ``X = observe(F, σ₀, g)``, then ``ftp(X, …, g)``, then
    ``ptf(X, …, g)``.
    """
    return generator(stream_key(setting), check_int(seed, "seed", 0), check_int(rep, "rep", 0))


def latent_generator(setting: Setting, seed: int) -> np.random.Generator:
    """The generator of the setting's latent curves.

    Shared by all settings with the same latent key.
    """
    ss = np.random.SeedSequence(seed, spawn_key=latent_stream_key(setting))
    return np.random.Generator(np.random.PCG64(ss))
