"""Power and false-fail rate of the assignments' simulation checks, by simulation.

``python tools/grading_power.py KEYS_DIR OUT.md [--reps N] [--seed S]`` (run by ``make assignments``)
reads each key ``KEYS_DIR/part*_key.py`` and, for its simulation question (q2), simulates the
check's verdict:

* under the exact law of the intended estimator (each key's ``draw(reps, rng, "reference")``:
  the law the judge assumes, e.g. σ²·χ²_{mR}/R): the **false-fail rate**, the probability that a
  correct function loses the question;
* under each mistaken variant the key lists (``VARIANTS``: μ off by 2 %, ``ddof=0``, a closed
  form with 10⁻⁹ jitter, returning the μ handed in, …): the **power**, the probability that the
  mistake loses the question;
* and the false-fail rate of the test itself on exactly N(0, 1) z values (what a correct
  function gives whatever the law), with a hundred times the repetitions.

Each rate is printed with its Monte Carlo error: ``events/trials`` and, when no or every trial
failed, a one-sided 95 % Clopper–Pearson bound. The table goes to OUT.md, which the course guide
includes. Part 3's law is discrete (two binomial counts): its z values are read from the exact
distribution function on a grid of 201 points over each column's range, interpolated linearly
(an error below 0.01 in z), and it uses a tenth of the repetitions.

``--validate N`` instead runs the reference solution of each master notebook (its code cells,
in this process) through each key's probe and judge N times with fresh requests, as a grading
would, and reports how often it failed and a Kolmogorov–Smirnov test of its 24·N z values against
N(0, 1): the law the judge assumes is the law of the real estimator.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from dpfda_book.teaching.judging import MonteCarloRate

PARTS = ("part1", "part2", "part3", "part4")


def load(keys: Path, part: str):
    spec = importlib.util.spec_from_file_location(f"{part}_key", keys / f"{part}_key.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def z_of(key, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if hasattr(key, "z_grid"):
        return key.z_grid(values, rng)
    return key.z_values(values)


def fail_rate(key, variant: str, reps: int, rng: np.random.Generator) -> MonteCarloRate:
    fails, done = 0, 0
    while done < reps:
        k = min(20_000, reps - done)
        fails += int(np.sum(~key.TEST.passes(z_of(key, key.draw(k, rng, variant), rng))))
        done += k
    return MonteCarloRate(fails, reps)


def table(keys: Path, reps: int, seed: int, parts: tuple[str, ...] = PARTS) -> str:
    rng = np.random.default_rng(seed)
    lines = [":::{table} For each assignment's simulation question, the probability that a correct function "
             "loses it (false-fail rate) and that each typical mistake does (power), with Monte Carlo errors.",
             ":name: course-grading-power", "",
             "| Assignment | Simulation check | Correct function fails (false-fail rate) | "
             "Mistake: probability that it loses the question (power) |",
             "|---|---|---|---|"]
    for part in parts:
        key = load(keys, part)
        n = reps // 10 if hasattr(key, "z_grid") else reps
        test = key.TEST
        groups = " and ".join(str(len(g)) for g in test.groups)
        check = (f"{test.size} settings; location: Σz/√n within ±{test.location_bound:.2f} in "
                 f"{'each of ' if len(test.groups) > 1 else ''}{len(test.groups)} group"
                 f"{'s' * (len(test.groups) > 1)} of {groups} settings; spread: Σz² in "
                 f"[{test.spread_bounds[0]:.1f}, {test.spread_bounds[1]:.1f}]")
        false_fail = (f"{test.false_fail_rate(100 * reps, rng)} (N(0, 1) z values); "
                      f"{fail_rate(key, 'reference', n, rng)} (the estimator's law)")
        power = "; ".join(f"{variant}: {MonteCarloRate(f.events, f.trials)}"
                          for variant in key.VARIANTS for f in [fail_rate(key, variant, n, rng)])
        lines.append(f"| {part} | {check} | {false_fail} | {power} |")
    return "\n".join(lines + [":::"]) + "\n"


def validate(keys: Path, masters: Path, runs: int, seed: int, parts: tuple[str, ...] = PARTS) -> str:
    """Run each master notebook's reference code through its key's probe and judge ``runs`` times."""
    import nbformat
    from IPython.core.interactiveshell import InteractiveShell

    rng = np.random.default_rng(seed)
    lines = ["| Assignment | Gradings of the reference | Failed | KS test of its z values against N(0, 1) | Time |",
             "|---|---|---|---|---|"]
    shell = InteractiveShell.instance()
    for part in parts:
        key = load(keys, part)
        nb = nbformat.read(masters / f"{part}.ipynb", as_version=4)
        shell.reset()
        for cell in nb.cells:
            if cell.cell_type == "code" and "BEGIN TEST CONFIG" not in cell.source:
                shell.run_cell(cell.source, silent=True)
        question = key.KEY.questions["q2"]
        scope: dict = {}
        exec(question.probe, scope)
        failed, zs, start = 0, [], time.monotonic()
        for _ in range(runs):
            request = question.request(rng)
            value = scope["probe"](shell.user_ns, request)["value"]
            failed += not question.judge(request, value, rng)
            values = np.asarray(value["values"], dtype=float)
            zs.append(key.z_values(values, rng) if hasattr(key, "z_grid") else key.z_values(values))
        z = np.concatenate(zs)
        ks = stats.kstest(z, "norm")
        lines.append(f"| {part} | {runs} | {failed} | D = {ks.statistic:.3f}, p = {ks.pvalue:.2f} ({z.size} values) "
                     f"| {time.monotonic() - start:.0f} s |")
        print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("keys", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--reps", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--validate", type=int, default=0, metavar="N")
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    args = parser.parse_args(argv)
    if args.validate:
        text = validate(args.keys, args.keys, args.validate, args.seed, tuple(args.parts))
    else:
        text = table(args.keys, args.reps, args.seed, tuple(args.parts))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
