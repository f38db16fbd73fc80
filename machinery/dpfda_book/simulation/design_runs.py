"""Monte Carlo over designs: paired errors of several mechanism designs on one simulation setting.

The simulations of the design-space chapter: every design of :mod:`dpfda_book.mechanisms.designs` built on
a setting of :mod:`dpfda_book.simulation.studies`, run through the engine's one loop
(:func:`dpfda_book.simulation.engine.simulate_mechanisms`) with shared observation noise and privacy
normals (common random numbers), and tabulated with paired ratios to reference designs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dpfda.mechanisms.pipelines import ftp_fit_mean, ptf_clipped_mean
from dpfda.validation import check_int

from ..mechanisms.designs import Design
from .engine import Arm, per_repetition, prepare, simulate_mechanisms
from .seeding import generator, stream_key

if TYPE_CHECKING:
    import pandas as pd

    from dpfda.mechanisms.release import Release

    from .studies import Setting

__all__ = ["simulate_designs", "compare_designs"]




def simulate_designs(setting: Setting, designs: dict, reps: int, seed: int, *,
                     chunk_values: int = 2_000_000) -> dict[str, dict[str, np.ndarray]]:
    """Errors of several designs on one simulation setting of the engine, paired.

    ``setting`` is a :class:`dpfda_book.simulation.studies.Setting` (latent curves, grid, n,
    μ, σ₀, B' as in :mod:`dpfda_book.simulation.engine`); ``designs`` maps a name to the
    keyword arguments of :class:`~dpfda_book.mechanisms.designs.Design`.  Every repetition draws fresh
    observation noise and one set of privacy normals (Z_T, Z_d) shared by all
    designs (common random numbers, so differences between designs are
    measured precisely); the curves' projections are computed once per
    repetition and shared.  Streams: ``SeedSequence(seed, spawn_key=stream_key(setting)
    + (1014, chunk))`` (:func:`dpfda_book.simulation.seeding.stream_key`) with chunks fixed by the
    setting, so results do not depend on anything but (seed, setting, reps).

    Returns a dict name -> dict of per-repetition arrays ``err`` (IMSE or grid
    MSE against f̄) and ``free`` (no curve clipped or projected and the final
    fit not constrained).
    """
    reps = check_int(reps, "reps", 2)
    prep = prepare(setting, seed)
    geom, F, target = prep.geometry, prep.F, prep.target
    n, T, d = setting.n, geom.T, geom.dim
    built = {name: Design(geom.grid, geom.space, setting.radius, **kw) for name, kw in designs.items()}
    per_chunk = max(1, chunk_values // (n * T))
    out = {name: {"err": np.empty(reps), "free": np.empty(reps, dtype=bool)} for name in built}

    def summarize(X: np.ndarray) -> dict:
        shared = _shared_parts(built, X)
        parts: dict = {}
        for name, des in built.items():
            own = shared[id(des)]
            parts[name] = des.summary_from_parts(own)
            moved = [own[flag] for flag in ("box_active", "ellipsoid_active", "ball_active") if flag in own]
            parts["moved", name] = np.logical_or.reduce(moved) if moved else False
        return parts

    def scorer(name: str) -> Callable[[Release, dict, int], dict[str, np.ndarray]]:
        def score(rel: Release, parts: dict, c: int) -> dict[str, np.ndarray]:
            moved = np.broadcast_to(parts["moved", name], (c,))
            active = np.zeros(c, dtype=bool) if rel.active is None else rel.active  # None: unconstrained
            return {"err": geom.error(rel.coef[:, None, :], target)[:, 0], "free": ~(moved | active)}

        return score

    # Two blocks of privacy normals a repetition, Z_T then Z_d, shared by all designs: a
    # design whose noise factor has d (≠ T) columns takes Z_d, every other Z_T.
    # A ball fit runs one repetition at a time (engine.per_repetition), the unconstrained
    # fit on the whole chunk, as they always have: the results stay those published.
    arms = [Arm(name, per_repetition(m) if des.fit == "ball" else m, name,
                1 if des.L.shape[1] == d and des.L.shape[1] != T else 0, scorer(name))
            for name, des in built.items() for m in [des.mechanism(n, setting.mu)]]
    cache: dict = {}

    def noiseless() -> dict:
        if "parts" not in cache:
            cache["parts"] = summarize(F[None])
        return cache["parts"]

    key = stream_key(setting) + (1014,)
    for k, start in enumerate(range(0, reps, per_chunk)):
        c = min(per_chunk, reps - start)
        res = simulate_mechanisms(arms, generator(key, seed, k), c, (T, d), n=n, F=F, sigma0=setting.sigma0,
                                  summarize=summarize, noiseless=noiseless)
        for name, arrays in res.items():
            for field, v in arrays.items():
                out[name][field][start:start + c] = v
    return out


def _shared_parts(built: dict, X: np.ndarray) -> dict:
    """Each design's :meth:`~dpfda_book.mechanisms.designs.Design.parts`, computing each distinct piece of work once."""
    pieces: dict = {}
    out: dict = {}
    for des in built.values():
        parts: dict = {}
        if des.clip is not None:
            key = ("box", des.clip.tobytes())
            if key not in pieces:
                pieces[key] = (ptf_clipped_mean(X, des.clip, exact=False),
                               np.any(np.abs(X) > des.clip, axis=(-2, -1)))
            parts["box"], parts["box_active"] = pieces[key]
        if des.ellipsoid_weight > 0:
            if "ellipsoid" not in pieces:
                mean_coef, active = ftp_fit_mean(X, des.geometry, des.radius, exact=False)
                pieces["ellipsoid"] = (mean_coef, mean_coef @ des.geometry.Phi.T, active.any(axis=-1))
            parts["ellipsoid_coef"], parts["ellipsoid"], parts["ellipsoid_active"] = pieces["ellipsoid"]
        if des.region == "ball":
            key = ("ball", des.ball_radius)
            if key not in pieces:
                sub = des.parts(X, exact=False)
                pieces[key] = (sub[key], sub["ball_active"])
            parts[key], parts["ball_active"] = pieces[key]
        out[id(des)] = parts
    return out


def compare_designs(settings: Iterable[Setting], designs: dict, reps: int, seed: int, *,
                    references: Sequence[str] = ("PTF", "FTP")) -> pd.DataFrame:
    """A results table: one row per (setting, design), with paired ratios to the references.

    Columns: the setting's parameters (``family``, ``T``, ``m``, ``n``, ``sigma0``,
    ``radius`` …), ``design``, ``err`` and ``se`` (Monte Carlo mean and standard
    error), ``free`` (share of repetitions in which no constraint bound),
    ``formula`` (:meth:`~dpfda_book.mechanisms.designs.Design.unconstrained_error`, exact when nothing binds) with
    ``formula_se`` (:meth:`~dpfda_book.mechanisms.designs.Design.unconstrained_sd` over √reps: the exact standard
    error of ``err`` when nothing binds), and
    for each reference R in ``references`` ``ratio_R`` = err/err_R with
    ``se_log_ratio_R``, the delta-method standard error of its logarithm from
    the paired repetitions, sd(e_r/ē − e_R,r/ē_R)/√reps (as the engine's
    FTP/PTF ratio).
    """
    import pandas as pd

    reps = check_int(reps, "reps", 2)
    rows = []
    for setting in settings:
        out = simulate_designs(setting, designs, reps, seed)
        geom = setting.geometry()
        for name, kw in designs.items():
            e = out[name]["err"]
            des = Design(geom.grid, geom.space, setting.radius, **kw)
            sampling, privacy = des.unconstrained_error(setting.n, setting.mu, setting.sigma0)
            sd = des.unconstrained_sd(setting.n, setting.mu, setting.sigma0)
            row = dict(setting.params(), design=name, reps=reps, err=float(e.mean()),
                       se=float(e.std(ddof=1) / math.sqrt(reps)), free=float(out[name]["free"].mean()),
                       formula=sampling + privacy, formula_se=sd / math.sqrt(reps))
            for ref in references:
                f = out[ref]["err"]
                rel = e / e.mean() - f / f.mean()
                row[f"ratio_{ref}"] = float(e.mean() / f.mean())
                row[f"se_log_ratio_{ref}"] = float(rel.std(ddof=1) / math.sqrt(reps))
            rows.append(row)
    return pd.DataFrame(rows)
