"""dpfda_book.simulation.seeding: the random streams of the simulations.

Keys are stable (SHA-256, not Python's salted hash) and pinned to dpfda 0.1's; every
repetition's stream is numpy's own ``SeedSequence(seed, spawn_key=key + (r,))``, the
vectorised seeding included; streams are deterministic and behave as independent.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from test_loop import _setting_eps

from dpfda.maths.summation import gamma
from dpfda_book.simulation import engine, seeding
from dpfda_book.simulation.studies import Setting, get_study

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    Setting("legendre", n=64, T=20, m=4, mu=1.0, sigma0=1.0, radius_rule="sqrt_log_n"),
    Setting("legendre", n=32, T=20, m=6, mu=0.1, sigma0=0.0, radius_rule="1.1B"),
    Setting("kernel", n=48, T=6, mu=1.0, sigma0=10.0, radius_rule="log_n"),
]

# Keys and first draws of three settings as dpfda 0.1.x (before the family rename) made them
# (the law's case: its repetitions share the default law's streams).  Every published number
# rests on these streams, so they must never move.
_PINNED_STREAMS = [
    (Setting("legendre", n=8, T=20, m=4, mu=1.0, sigma0=0.0, radius_rule="1.1B"),
     "setting|space=poly|n=8|T=20|m=4|mu=1.0|sigma0=0.0|radius=1.1|B=1.0|rho=None|centers=None",
     "latent|poly|m=4|n=8|B=1.0",
     (1154578363, 3886222810, 2256172808, 683096864), (1175211349, 340908134, 1785224879, 3457850299),
     [-0.6561490784588211, 1.7017053671727662, -0.6374293865368417],
     [-0.4199692840560225, -0.3257459617013297, -0.6672931008893342],
     [-0.11627043421411665, 0.4414732932911444, -0.06857091349715848],
     [-0.6819364169765701, 0.583920539720322, -0.3301392625807852]),
    (Setting("kernel", n=16, T=4, mu=1.0, sigma0=1.0, radius_rule="log_n"),
     "setting|space=rkhs|n=16|T=4|m=None|mu=1.0|sigma0=1.0|radius=2.772588722239781|B=1.0|rho=0.2|centers=20",
     "latent|rkhs|n=16|rho=0.2|centers=20|B=1.0",
     (3812618659, 825415070, 505655102, 680997997), (1490358328, 3882590694, 2073116815, 3831055887),
     [0.6090814270068343, 0.3366960706447348, 0.1133380201560325],
     [0.02389512404082029, 0.020914085854513226, 0.015886137274511884],
     [-0.04065242184194684, -0.0005664793098617005, 0.5376310509591958],
     [0.1794176474321343, 0.574863241858929, 0.043349401448843805]),
    (Setting("legendre", n=8, T=20, m=3, mu=0.5, sigma0=1.0, radius_rule="B", law="wave-0.5"),
     "setting|space=poly|n=8|T=20|m=3|mu=0.5|sigma0=1.0|radius=1.0|B=1.0|rho=None|centers=None|law=wave-0.5",
     "latent|poly|m=3|n=8|B=1.0|law=wave-0.5",
     # the repetitions' key is the default-law setting's (common random numbers across laws);
     # the latent key is the law's own
     (1270206642, 3763937230, 2413006418, 3787997502), (1043684977, 1591016107, 4061551065, 1945484420),
     [0.3279711595472595, 1.132766737209362, -0.8695429980065844],
     [0.3776641492206627, 0.013054829092346202, 0.6014860577692785],
     [-1.0186705638339846, -0.20827818932621614, 0.6358632067134589],
     [-0.2670904066279541, 0.25859004810557196, 0.2162291331359261]),
]


@pytest.mark.parametrize("pinned", _PINNED_STREAMS, ids=lambda p: p[0].family)
def test_stream_keys_and_first_draws_are_those_of_dpfda_0_1(pinned):
    """The family rename ("poly" → "legendre", "rkhs" → "kernel") left the streams alone.

    Keys, texts and a repetition's first normals must match exactly; the latent
    coordinates and the released coefficients (seed 7, repetition 0) to their rounding bounds
    (which allow arithmetic re-ordered by performance work, or another CPU), while a changed
    stream would move them by O(1).
    """
    s, text, latent_text, key, latent_key, normals, latent, ftp, ptf = pinned
    assert s.canonical() == text and s.latent_canonical() == latent_text
    assert seeding.stream_key(s) == key and seeding.latent_stream_key(s) == latent_key
    assert seeding.rep_generator(s, 7, 0).standard_normal(3).tolist() == normals
    curves = engine.latent_curves(s, 7)
    coords = curves.theta if s.family == "legendre" else curves.alpha
    # the latent coordinates: a normalisation (γ₁₆), for kernel curves through the form αᵀK_Cα of an
    # ill-conditioned K_C (γ_{c²+8} times its cancellation amp)
    rel = gamma(16)
    if s.family == "kernel":
        a, KC = curves.alpha[0], curves.kernel.gram(curves.centers)
        rel += gamma(KC.shape[0] ** 2 + 8) * (np.abs(a) @ np.abs(KC) @ np.abs(a)) / (a @ KC @ a)
    np.testing.assert_allclose(coords.ravel()[:3], latent, rtol=rel, atol=0)
    # the released coordinates on two machines: twice the setting's bound (tests/test_loop.py), of
    # B + B' + ||ŷ|| (a stream changed would move them by O(1))
    out = engine.simulate_chunk(s, 7, 0, 3, keep_releases=True)
    eps = _setting_eps(s)
    for k, want in (("coef_ftp", ftp), ("coef_ptf", ptf)):
        scale = s.B + s.radius + np.linalg.norm(out[k][0])
        np.testing.assert_allclose(out[k][0, :3], want, rtol=0, atol=2 * (eps + gamma(16)) * scale)


def test_setting_keys_are_stable_across_interpreters():
    """Keys come from SHA-256, not Python's salted hash: another process agrees."""
    s = get_study("fig3").settings[17]
    code = ("from dpfda_book.simulation.seeding import latent_stream_key, stream_key; "
            "from dpfda_book.simulation.studies import get_study; "
            "s = get_study('fig3').settings[17]; print(stream_key(s), latent_stream_key(s))")
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True).stdout.strip()
    assert out == f"{seeding.stream_key(s)} {seeding.latent_stream_key(s)}"
    assert all(0 <= w < 2**32 for w in seeding.stream_key(s))


def test_latent_curves_shared_across_figures():
    """The latent key leaves out T, μ, σ₀ and B': same n (and m) → same curves."""
    f1 = get_study("fig1").subset(n=64, T=2, mu=0.1).settings[0]
    f3 = get_study("fig3").subset(n=64, T=8, sigma0=10.0).settings[0]
    assert seeding.latent_stream_key(f1) == seeding.latent_stream_key(f3)
    assert seeding.stream_key(f1) != seeding.stream_key(f3)
    c1, c3 = engine.latent_curves(f1, 5), engine.latent_curves(f3, 5)
    np.testing.assert_array_equal(c1.alpha, c3.alpha)
    p4 = get_study("fig4").subset(n=64, m=6, mu=1.0).settings[0]
    p6 = get_study("fig6").subset(n=64, m=6, sigma0=1.0).settings[0]
    np.testing.assert_array_equal(engine.latent_curves(p4, 5).theta, engine.latent_curves(p6, 5).theta)
    # ... and a different seed or n gives different curves.
    assert not np.array_equal(engine.latent_curves(p4, 6).theta, engine.latent_curves(p4, 5).theta)


def test_repetition_streams_are_independent():
    """Each repetition's stream is SeedSequence(seed, spawn_key=key + (r,)), and the
    streams behave as independent: across 40 settings the standardised means of
    ξ₀² and ξ₀ξ₁ over 500 repetitions are N(0, 1) (their sum of squares is χ²₈₀).
    A scheme with dependent repetitions (one PCG64 stream per setting advanced
    by r·2⁹⁶) gave a sum of squares near 1800 here."""
    s = CASES[0]
    expect = np.random.Generator(np.random.PCG64(np.random.SeedSequence(4, spawn_key=seeding.stream_key(s) + (7,))))
    np.testing.assert_array_equal(seeding.rep_generator(s, 4, 7).standard_normal(6), expect.standard_normal(6))
    R = 500
    z = []
    for st in get_study("fig1").settings[:40]:
        draws = np.array([seeding.rep_generator(st, 1, r).standard_normal(2) for r in range(R)])
        z.append((np.mean(draws[:, 0] ** 2) - 1.0) / math.sqrt(2.0 / R))
        z.append(np.mean(draws[:, 0] * draws[:, 1]) * math.sqrt(R))
    from scipy import stats

    assert np.sum(np.square(z)) <= stats.chi2.isf(6e-5, len(z)), np.round(z, 1)
    with pytest.raises(ValueError, match="rep"):
        seeding.rep_generator(s, 4, -1)


@pytest.mark.parametrize("seed", [0, 1, 2026, 2**32 - 1, 2**32, 2**100, 2**130 + 7])
def test_fast_repetition_streams_are_numpys_generators(seed):
    """The engine sets each repetition's PCG64 state from a vectorised copy of
    SeedSequence's hash (seeding.pcg64_states): it must be the state numpy's
    own SeedSequence(seed, spawn_key=key + (r,)) gives, for seeds of one to
    five words, keys of any length and r up to 2³² - 1."""
    for key in [seeding.stream_key(CASES[0]), (), (0,), (5, 2**32 - 1, 0, 7, 9)]:
        for start, stop in [(0, 40), (2**32 - 6, 2**32)]:
            states = seeding.pcg64_states(key, seed, start, stop)
            assert len(states) == stop - start
            for r, state in zip(range(start, stop), states):
                assert state == seeding.generator(key, seed, r).bit_generator.state, (key, r)
    gens = seeding.rep_generators(seeding.stream_key(CASES[0]), seed, 3, 9)
    for r, rng in zip(range(3, 9), gens):
        expected = seeding.rep_generator(CASES[0], seed, r).standard_normal(5)
        np.testing.assert_array_equal(rng.standard_normal(5), expected)


def test_wrong_fast_streams_fall_back_to_numpys_constructor(monkeypatch):
    """If the vectorised hash ever disagreed with numpy (a changed SeedSequence),
    the check against numpy's constructor in every chunk would fall back to it."""
    s = CASES[2]
    ref = engine.simulate_chunk(s, 5, 0, 6, keep_releases=True)

    right = seeding.pcg64_states
    monkeypatch.setattr(seeding, "pcg64_states", lambda key, seed, a, b: right(key, seed + 1, a, b))
    engine.prepare.cache_clear()
    other = engine.simulate_chunk(s, 5, 0, 6, keep_releases=True)
    for k in ref:
        np.testing.assert_array_equal(ref[k], other[k], err_msg=k)




def test_hash_words_is_sha256_in_little_endian_words():
    import hashlib

    digest = hashlib.sha256(b"abc").digest()
    assert seeding.hash_words("abc") == tuple(int.from_bytes(digest[4 * i:4 * i + 4], "little")
                                              for i in range(4))
    assert len(seeding.hash_words("abc", 8)) == 8 and seeding.hash_words("abc", 2) == seeding.hash_words("abc")[:2]
    assert seeding.hash_words("abc") != seeding.hash_words("abd")


def test_a_stream_is_determined_by_seed_setting_and_repetition_only():
    s = CASES[1]
    first = seeding.rep_generator(s, 3, 5).standard_normal(4)
    np.testing.assert_array_equal(seeding.rep_generator(s, 3, 5).standard_normal(4), first)
    others = [seeding.rep_generator(s, 4, 5), seeding.rep_generator(s, 3, 6), seeding.rep_generator(CASES[0], 3, 5)]
    for rng in others:
        assert not np.array_equal(rng.standard_normal(4), first)
    assert seeding.rep_generator(s, 3, 5) is not seeding.rep_generator(s, 3, 5)  # new each call


def test_the_latent_generator_is_the_seedsequence_of_the_latent_key():
    s = CASES[0]
    expect = np.random.Generator(np.random.PCG64(np.random.SeedSequence(9, spawn_key=seeding.latent_stream_key(s))))
    np.testing.assert_array_equal(seeding.latent_generator(s, 9).standard_normal(5), expect.standard_normal(5))
    assert not np.array_equal(seeding.latent_generator(s, 9).standard_normal(5),
                              seeding.rep_generator(s, 9, 0).standard_normal(5))


def test_rep_generator_names_a_bad_seed_or_repetition():
    for seed, rep, name in [(-1, 0, "seed"), (1.5, 0, "seed"), (0, -1, "rep"), (0, 2.0, "rep")]:
        with pytest.raises((TypeError, ValueError), match=name):
            seeding.rep_generator(CASES[0], seed, rep)


def test_pcg64_states_gives_up_beyond_one_word_of_repetition():
    assert seeding.pcg64_states((1, 2), 0, 2**32 - 1, 2**32 + 1) is None
    gens = list(seeding.rep_generators((1, 2), 0, 2**32 - 1, 2**32 + 1))  # numpy's constructor then
    assert [g.bit_generator.state for g in gens] == [seeding.generator((1, 2), 0, r).bit_generator.state
                                                     for r in (2**32 - 1, 2**32)]
