"""Fingerprints of every simulation output, to show a refactoring changed no number.

Runs, with fixed repetitions and seeds, and writes one SHA-256 per array to a
JSON file (``--out``):

* ``engine``: every chunk of every setting that ``reproduce all`` runs (the
  studies of :func:`dpfda_book.simulation.studies.paper_studies`, σ₀ = 0 settings included),
  chunked as ``reproduce all --reps R`` chunks them (:func:`dpfda_book.simulation.engine.plan`),
  through :func:`dpfda_book.simulation.engine.simulate_chunk` with ``keep_releases=True``:
  keys ``engine/<setting hash>/<start>/<array>``;
* ``designs``: :func:`dpfda_book.simulation.design_runs.simulate_designs` of the design-space
  chapter's designs on its 72 settings (fewer repetitions than the chapter, but
  several chunks a setting): ``designs/<setting hash>/<design>/<array>``;
* ``audit``: :func:`dpfda.trust.audit.audit` of FTP and PTF (the mechanism
  constructors and a plain ``dpfda.ftp`` callable; Neyman–Pearson and
  black-box scores) with fixed generators: ``audit/<case>/<field>``;
* ``repeat``: :func:`dpfda_book.simulation.engine.repeat_releases` (the finite-dimensional and
  RKHS chapters' helper) on noiseless and noisy data.

Run it on the tree before a change and after it, and compare::

    PYTHONPATH=/tmp/base:/tmp/base/machinery python benchmarks/chunk_outputs.py --out before.json
    python benchmarks/chunk_outputs.py --out after.json --compare before.json

``--compare`` exits 1 and names the first differences if any fingerprint
differs or is missing.  Only public entry points are called, so the script runs
unchanged on both trees.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
import time
from pathlib import Path

import numpy as np


def digest(a) -> str:
    """SHA-256 of an array's dtype, shape and bytes."""
    a = np.ascontiguousarray(np.asarray(a))
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def _packages() -> tuple[str, ...]:
    """("dpfda_book", "dpfda") when the book's package is the one beside this dpfda (the same
    tree: TREE/dpfda and TREE/machinery/dpfda_book), else ("dpfda",): an older tree, run with
    PYTHONPATH, must not pick up another tree's installed dpfda_book."""
    import importlib.util

    import dpfda

    spec = importlib.util.find_spec("dpfda_book")
    if spec is None or spec.origin is None:
        return ("dpfda",)
    same = Path(spec.origin).resolve().parents[2] == Path(dpfda.__file__).resolve().parents[1]
    return ("dpfda_book", "dpfda") if same else ("dpfda",)


def _module(*paths: str):
    """The first of the modules ``paths`` that exists, in the book's package or the library: the
    two packages, and, for a comparison with an older checkout, the single package they grew from
    (``"simulation.engine"``) and its flat modules (``"designs"``)."""
    import importlib

    for path in paths:
        for package in _packages():
            try:
                return importlib.import_module(f"{package}.{path}")
            except ImportError:
                continue
    raise ImportError(f"none of {', '.join(paths)} in dpfda_book or dpfda")


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def engine_outputs(reps: int, seed: int, out: dict, jobs: int = 1) -> int:
    engine = _module("simulation.engine", "engine")
    paper_studies = _module("simulation.studies", "studies").paper_studies
    plan = _module("simulation.schedule", "schedule", "engine").plan
    settings, tasks = plan(list(paper_studies().values()), reps)

    def one(key, a, b):
        res = engine.simulate_chunk(settings[key], seed, a, b, keep_releases=True)
        return key, a, {k: digest(v) for k, v in res.items()}

    if jobs == 1:
        results = (one(k, a, b) for k, a, b in tasks)
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=jobs, return_as="generator_unordered")(
            delayed(one)(k, a, b) for k, a, b in tasks)
    for key, a, hashes in results:
        for name, h in hashes.items():
            out[f"engine/{_short(key)}/{a}/{name}"] = h
    return len(settings)


DESIGN_SPECS = {
    "PTF": dict(set="box"),
    "mix 0.25": dict(set="mix", lam=0.25),
    "mix 0.5": dict(set="mix", lam=0.5),
    "mix 0.75": dict(set="mix", lam=0.75),
    "FTP": dict(set="ellipsoid", noise="ellipsoid", fit="none"),
    "FTP+fit": dict(set="ellipsoid"),
    "ball": dict(set="ball"),
}


def _design_specs() -> dict:
    """The chapter's designs, under whichever name ``Design`` gives the set keyword."""
    Design = _module("mechanisms.designs", "designs").Design

    params = inspect.signature(Design).parameters
    if "set" in params:
        return DESIGN_SPECS
    name = "region"  # the keyword's name since the Mechanism type (h24a)
    return {k: {(name if a == "set" else a): v for a, v in kw.items()} for k, kw in DESIGN_SPECS.items()}


def design_outputs(reps_small: int, reps: int, seed: int, out: dict) -> int:
    simulate_designs = _module("simulation.design_runs", "design_runs", "designs").simulate_designs
    Setting = _module("simulation.studies", "studies").Setting

    specs = _design_specs()
    count = 0
    cases = [("kernel", 2, None), ("kernel", 8, None), ("legendre", 20, 4)]
    for family, T, m in cases:
        for s0 in (0.0, 0.1, 1.0, 10.0):
            rule = "1.1B" if s0 == 0 else ("log_n" if family == "kernel" else "sqrt_log_n")
            for n in (4**k for k in range(1, 7)):
                s = Setting(family=family, n=n, T=T, m=m, mu=1.0, sigma0=s0, radius_rule=rule)
                res = simulate_designs(s, specs, reps_small if n <= 64 else reps, seed)
                for name, arrays in res.items():
                    for k, v in arrays.items():
                        out[f"designs/{_short(s.canonical())}/{name}/{k}"] = digest(v)
                count += 1
    return count


def audit_outputs(out: dict) -> int:
    import dataclasses

    import dpfda
    au = _module("trust.audit", "audit")

    cases = []
    for kind in ("legendre", "kernel"):
        if kind == "legendre":
            space, grid, radius = dpfda.LegendreSpace(3), dpfda.uniform_grid(10), 1.0
        else:
            space, grid, radius = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), dpfda.uniform_grid(6), 1.0
        n, mu = 8, 1.0
        X0, X1 = au.worst_case_pair(grid, space, radius, n)
        pX0, pX1 = au.worst_case_pair(grid, space, radius, n, pipeline="ptf")
        cases += [
            (f"{kind}/ftp/lr", au.ftp_mechanism(grid, space, radius, mu, n=n), X0, X1, "lr"),
            (f"{kind}/ftp/blackbox", au.ftp_mechanism(grid, space, radius, mu, n=n), X0, X1, "blackbox"),
            (f"{kind}/ptf/lr", au.ptf_mechanism(grid, space, radius, mu, n=n), pX0, pX1, "lr"),
            (f"{kind}/ftp-callable/lr",
             lambda X, rng, g=grid, sp=space, r=radius: dpfda.ftp(X, g, sp, r, mu, rng), X0, X1, "lr"),
        ]
    for i, (name, mech, X0, X1, stat) in enumerate(cases):
        try:
            res = au.audit(mech, X0, X1, draws=3000, rng=np.random.default_rng(100 + i), statistic=stat,
                           chunk=700)
        except TypeError:  # a plain callable is no longer a mechanism: the FTP mechanism it wrapped
            ftp_mechanism = _module("mechanisms.ftp_ptf", "mechanisms.mechanism", "mechanism").ftp_mechanism

            grid = np.asarray(mech.__defaults__[0])
            mech = ftp_mechanism(grid, mech.__defaults__[1], mech.__defaults__[2], 1.0, n=X0.shape[0])
            res = au.audit(mech, X0, X1, draws=3000, rng=np.random.default_rng(100 + i), statistic=stat,
                           chunk=700)
        for f in dataclasses.fields(res):
            v = getattr(res, f.name)
            if isinstance(v, (np.ndarray, float, int)):
                out[f"audit/{name}/{f.name}"] = digest(v)
    return len(cases)


def repeat_outputs(out: dict) -> int:
    import dpfda
    polynomial_curves = _module("simulation.models", "maths.data", "data").polynomial_curves
    engine = _module("simulation.engine", "engine")

    count = 0
    for kind in ("legendre", "kernel"):
        if kind == "legendre":
            space, grid = dpfda.LegendreSpace(4), dpfda.uniform_grid(12)
        else:
            space, grid = dpfda.KernelSpace(dpfda.gaussian_kernel(0.2)), dpfda.uniform_grid(5)
        geom = space.at(grid)
        curves = polynomial_curves(6, 4, np.random.default_rng(3))
        F = curves.values(grid)
        target = geom.coef_from_values(F.mean(axis=0))
        for pname, pipe in (("ftp", dpfda.ftp), ("ptf", dpfda.ptf)):
            errs, act = engine.repeat_releases(pipe, F, grid, space, 1.0, 1.0, 50, target,
                                               np.random.default_rng(5), chunk=200)
            out[f"repeat/{kind}/{pname}/noiseless/errs"] = digest(errs)
            out[f"repeat/{kind}/{pname}/noiseless/act"] = digest(act)
            X = F + 0.5 * np.random.default_rng(6).standard_normal((7,) + F.shape)
            errs, act = engine.repeat_releases(pipe, X, grid, space, 1.0, 1.0, 7, target,
                                               np.random.default_rng(7))
            out[f"repeat/{kind}/{pname}/noisy/errs"] = digest(errs)
            out[f"repeat/{kind}/{pname}/noisy/act"] = digest(act)
            count += 2
    return count


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--compare", type=Path, help="a JSON written before; exit 1 on any difference")
    p.add_argument("--reps", type=int, default=1000, help="repetitions a setting (engine; default 1000)")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--design-reps", type=int, nargs=2, default=(200, 60), metavar=("SMALL_N", "LARGE_N"))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--only", nargs="*", default=("engine", "designs", "audit", "repeat"))
    args = p.parse_args(argv)
    out: dict[str, str] = {}
    counts = {}
    t0 = time.time()
    if "engine" in args.only:
        counts["engine settings"] = engine_outputs(args.reps, args.seed, out, args.jobs)
    if "designs" in args.only:
        counts["design settings"] = design_outputs(*args.design_reps, args.seed, out)
    if "audit" in args.only:
        counts["audits"] = audit_outputs(out)
    if "repeat" in args.only:
        counts["repeat_releases calls"] = repeat_outputs(out)
    chunks = {k.rsplit("/", 1)[0] for k in out if k.startswith("engine/")}
    counts["engine chunks"] = len(chunks)
    counts["fingerprints"] = len(out)
    import dpfda

    meta = {"package": str(Path(dpfda.__file__).parent),
            "reps": args.reps, "seed": args.seed, "design_reps": list(args.design_reps), "counts": counts,
            "numpy": np.__version__, "seconds": round(time.time() - t0, 1)}
    args.out.write_text(json.dumps({"meta": meta, "digests": dict(sorted(out.items()))}, indent=0))
    print(json.dumps(meta))
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text())["digests"]
    sections = {k.split("/", 1)[0] for k in out}
    before = {k: v for k, v in before.items() if k.split("/", 1)[0] in sections}
    missing = sorted(set(before) - set(out))
    extra = sorted(set(out) - set(before))
    differ = sorted(k for k in set(before) & set(out) if before[k] != out[k])
    print(f"compared {len(set(before) & set(out))} fingerprints: {len(differ)} differ, "
          f"{len(missing)} missing, {len(extra)} new")
    for k in (differ + missing + extra)[:20]:
        print("  ", k)
    return 1 if differ or missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
