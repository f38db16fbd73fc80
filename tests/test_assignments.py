"""The autograded assignments (book/assignments/part*.ipynb, otter-grader 7, graded by dpfda_book.teaching.grader).

`make assignments` runs in a copy of the files git tracks (a fresh clone, with this .venv); then each
assignment's autograder grades, offline and without Docker, every submission of the attack table
(:data:`ATTACKS`): the reference solution (full marks), the unanswered notebook (zero), and a student's
attempts to score without the work: a fake ``hidden_checks`` module in ``sys.modules``; the grading
folder's files overwritten (the old hidden checks, the key, otter's tests); the libraries a check could
call patched (sympy, math, numpy, scipy, dpfda) beside wrong answers; a closed form with 10⁻⁹ jitter
drawn from the generator (in part 3, the μ handed in, jittered); a closed form that ignores the
generator; μ off by 2 %; ``ddof=0`` (part 4); the numbers the notebook printed, hard-coded; an answer
whose ``__hash__``, ``__eq__``, ``__repr__`` … print and raise every file they can reach; and a daemon
that waits for the grading to end and rewrites results.json. Each row's scores are asserted exactly:
an attack on the blank notebook scores what the blank scores (0), an attack on one question of the
reference loses that question and keeps the others. Rounds of subtle mistakes (:data:`MISTAKES`, one per
question and round) lose exactly their questions. The tables are printed and written to
_build/test-artifacts/assignment-attacks-PART.md.

The simulation checks are statistical: a correct function fails with probability about 10⁻⁴ and μ off by
2 % passes with probability below 10⁻³ (tools/grading_power.py; the table of ``make assignments``), so
this module fails spuriously with probability about 0.5 %.

No student file holds a solution, a key or a test of the grader; results.json (from the README's command
as written) holds nothing of the key; the multiple-choice questions are not guessable by the length or
the hedging of their options. The marker `autograder_env` builds a fresh Python 3.11 venv from a zip's
files alone, as Gradescope would, and grades the rows ZIP_ROWS of every attack table there with `otter run`;
the other rows are graded through otter's API. Each row is graded once, every part's rows at once in a
pool of worker processes (one per CPU).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("otter")

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PARTS = ["part1", "part2", "part3", "part4"]
ARTIFACTS = ROOT / "_build" / "test-artifacts"
FULL = {"q1": 2, "q2": 4, "q3": 1, "q4": 1}
ZERO = dict.fromkeys(FULL, 0)


def _wrap(name: str, args: str, body: str) -> str:
    """Code redefining function ``name(args)`` on top of the student's as ``_orig``."""
    return f"_orig_{name} = {name}\n\n\ndef {name}({args}):\n    " + body.replace("_orig", f"_orig_{name}")


P1 = "X, grid, space, B, mu, theta_bar, R, rng"
P2 = "pipeline, grid, space, n, sigma0, B, mu, R, rng"
P3 = "mu, t, R, rng"
P4 = "X, grid, space, B, mu, R, rng"

#: Per assignment: the simulation function, its arguments, its closed form (the exact mean), the call
#: at the notebook's example, wrong answers to q1 and q4, and the right letter's wrong neighbour.
PART = {
    "part1": dict(fn="imse_ftp", args=P1, closed="len(theta_bar) * dpfda.ftp_sigma(len(X), B, mu) ** 2",
                  example="X_leg, grid_leg, space_leg, 1.1, 1.0, theta_bar, 2000, rng",
                  q1="delta2 = 2 * c / n  # forgot that T coordinates move at once\nsigma_ptf = delta2 / mu",
                  q4="def composed_mu(mus):\n    return float(np.sum(mus))  # linear", letter="a"),
    "part2": dict(fn="grid_mse", args=P2,
                  closed="sigma0**2 / n + 4 * (len(grid) if pipeline is dpfda.ptf else 1) * B**2 / (n * mu) ** 2",
                  example="dpfda.ptf, grid4, space4, 400, 1.0, 8.0, 1.0, 300, rng",
                  q1="ratio_x = (x + T) / (x + 1)  # PTF over FTP",
                  q4="def n_star(T, sigma0, mu, level):\n    return 8", letter="d"),
    "part3": dict(fn="estimate_mu", args=P3, closed="mu", example="1.0, 0.5, 20000, rng",
                  q1="mu_from_rates = Phi_inv(1 - alpha) + Phi_inv(beta)  # sign of the miss rate",
                  q4="def tradeoff_at(alpha, mu):\n    return float(norm.cdf(norm.ppf(alpha) - mu))", letter="b"),
    "part4": dict(fn="coef_noise_sd", args=P4, closed="dpfda.ftp_sigma(len(X), B, mu)",
                  example="X, grid_leg, space_leg, 1.1, 1.0, 1000, rng",
                  q1="sd_factor = sp.Integer(2)  # budgets halved linearly",
                  q4="def split_budget(mu_total, k):\n    return mu_total / k  # linear", letter="c"),
}

FAKE_MODULE = """
import sys, types
fake = types.ModuleType("hidden_checks")
fake.check = lambda *args, **kwargs: True
sys.modules["hidden_checks"] = fake
for name in ("dpfda_book.teaching", "dpfda_book.teaching.grader", "dpfda_book.teaching.judging",
             "dpfda_book.teaching.sandbox", "otter", "otter.test_files", "otter.execute"):
    sys.modules[name] = fake
"""

#: Writes, wherever it can reach under /tmp (its own folder, the grading process's folder and the
#: autograder's source folder beside it), a hidden_checks.py that accepts everything, an accept-all
#: key under the assignment's key name, and otter tests that always pass.
OVERWRITE = """
import os, pathlib
ACCEPT = "def check(*args, **kwargs):\\n    return True\\n"
KEY = ("from dpfda_book.teaching.grader import Key, Question\\n"
       "Q = Question(4, 'def probe(ns, r):\\\\n    return None\\\\n', lambda rng: None, lambda *a: True, '', '')\\n"
       "KEY = Key('{part}', {{q: Q for q in ('q1', 'q2', 'q3', 'q4')}})\\n")
places = {{pathlib.Path.cwd()}}
try:
    there = pathlib.Path(os.readlink(f"/proc/{{os.getppid()}}/cwd"))
    places |= {{there, there / "tests", there.parent / "source", there.parent / "source" / "tests"}}
except OSError:
    pass
for place in places:
    if not str(place).startswith("/tmp/") or not place.is_dir():
        continue
    for name, text in (("hidden_checks.py", ACCEPT), ("{part}_key.py", KEY)):
        (place / name).write_text(text)
    for test in place.glob("*.py"):
        if test.name.startswith("q"):
            test.write_text("OK_FORMAT = True\\ntest = {{'name': test.stem, 'points': 4, 'suites': []}}\\n")
"""

#: An answer whose every special method prints, then raises with, every .py and .json file it can read
#: in its own folder and in the grading process's folders under /tmp.
LEAK = """
import os, pathlib


def _everything():
    roots = [pathlib.Path.cwd()]
    try:
        roots.append(pathlib.Path(os.readlink(f"/proc/{os.getppid()}/cwd")).parent)
    except OSError:
        pass
    texts = []
    for root in roots:
        if str(root).startswith("/tmp/"):
            for path in [*root.rglob("*.py"), *root.rglob("*.json")][:200]:
                try:
                    texts.append(f"{path}:\\n{path.read_text()[:20000]}")
                except OSError:
                    pass
    return "\\n".join(texts) or "nothing found"


class Leak:
    def _leak(self, *args, **kwargs):
        text = _everything()
        print(text)
        raise ValueError(text)

    __hash__ = __eq__ = __ne__ = __lt__ = __repr__ = __str__ = __format__ = __len__ = __bool__ = _leak
    __iter__ = __contains__ = __getitem__ = __float__ = __int__ = __index__ = __reduce__ = __reduce_ex__ = _leak


print(_everything())
q3_answer = Leak()
"""

#: A daemon (double fork, new session) that waits for the grading to end, then writes full marks into
#: results.json (the grading process's, and ``targets``) and beside it a results.pkl that, unpickled, would
#: run code (creating ``marker``): otter's `otter run` reads its results back from such a pickle.
TAMPER = """
import os, pathlib, pickle, time
FORGED = '{{"tests": [{{"name": "q1", "score": 99, "max_score": 2}}], "score": 99, "forged": "FORGED-BY-SUBMISSION"}}'
MARKER = {marker!r}
targets = [pathlib.Path(p) for p in {targets!r}]
try:
    there = pathlib.Path(os.readlink(f"/proc/{{os.getppid()}}/cwd")).parent
    if str(there).startswith("/tmp/"):
        targets.append(there / "results" / "results.json")
except OSError:
    pass


class Evil:
    def __reduce__(self):
        return (exec, ("open(" + repr(MARKER) + ", 'w').write('ran')",))


if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(60):
            time.sleep(0.5)
            for results in targets:
                try:
                    results.write_text(FORGED)
                    results.with_suffix(".pkl").write_bytes(pickle.dumps(Evil()))
                except OSError:
                    pass
        os._exit(0)
    os._exit(0)
"""


def _patched(part: str) -> dict[str, str]:
    """Wrong answers, and every library a check could call patched to say yes."""
    p = PART[part]
    patches = ("import math, sympy, numpy, scipy.stats, dpfda\n"
               "sympy.simplify = lambda *a, **k: sympy.Integer(0)\nsympy.Expr.equals = lambda *a, **k: True\n"
               "math.isclose = lambda *a, **k: True\nnumpy.allclose = lambda *a, **k: True\n"
               "numpy.isclose = lambda *a, **k: True\ndpfda.ftp_sigma = lambda *a, **k: 1.0\n"
               "scipy.stats.norm.cdf = lambda *a, **k: 0.5\n")
    return {"q1": patches + p["q1"], "q2": _wrap(p["fn"], p["args"], f"return {p['closed']}"),
            "q3": f'q3_answer = "{p["letter"]}"', "q4": p["q4"]}


def _jittered(part: str) -> str:
    p = PART[part]
    return (f"def {p['fn']}({p['args']}):\n    "
            f"return float({p['closed']}) * (1 + 1e-9 * rng.standard_normal())  # closed form, jittered")


def _hard_coded(part: str) -> str:
    p = PART[part]
    return (f"_value = {p['fn']}({p['example']})\n\n\ndef {p['fn']}(*args, **kwargs):\n"
            f"    return _value  # the value the notebook printed, hard-coded")


def _mu_off(part: str) -> str:
    p = PART[part]
    call = {"part1": "_orig(X, grid, space, B, 0.98 * mu, theta_bar, R, rng)",
            "part2": "_orig(pipeline, grid, space, n, sigma0, B, 0.98 * mu, R, rng)",
            "part3": "_orig(0.98 * mu, t, R, rng)", "part4": "_orig(X, grid, space, B, 0.98 * mu, R, rng)"}[part]
    return _wrap(p["fn"], p["args"], f"return {call}  # mu 2 % off")


DDOF0 = ("def coef_noise_sd(X, grid, space, B, mu, R, rng):\n"
         "    coefs = np.array([dpfda.ftp(X, grid, space, B, mu, rng).coef for _ in range(R)])\n"
         "    return float(np.sqrt(coefs.var(axis=0, ddof=0).mean()))  # ddof=0 where the text asks ddof=1")

#: name -> (base notebook, cells to insert before the check of each question (None: before q1's), expected
#: scores per part (a dict, or a function of the part)).
ATTACKS = {
    "blank + a fake hidden_checks module in sys.modules": ("blank", lambda part, marker: {None: FAKE_MODULE}, ZERO),
    "blank + the grading folder's files overwritten": (
        "blank", lambda part, marker: {None: OVERWRITE.format(part=part)}, ZERO),
    "libraries patched, wrong answers": ("blank", lambda part, marker: _patched(part), ZERO),
    "closed form × (1 + 1e-9·N(0, 1)); part 3: the μ handed in, jittered": (
        "reference", lambda part, marker: {"q2": _jittered(part)}, {**FULL, "q2": 0}),
    "closed form, generator ignored": ("reference", lambda part, marker: {"q2": _wrap(
        PART[part]["fn"], PART[part]["args"], f"return float({PART[part]['closed']})")}, {**FULL, "q2": 0}),
    "μ off by 2 %": ("reference", lambda part, marker: {"q2": _mu_off(part)}, {**FULL, "q2": 0}),
    "hard-coding the printed numbers": ("reference", lambda part, marker: {"q2": _hard_coded(part)}, {**FULL, "q2": 0}),
    "an answer whose __hash__, __eq__, __repr__ … print and raise every file": (
        "reference", lambda part, marker: {"q3": LEAK}, {**FULL, "q3": 0}),
    "blank + a daemon rewriting results.json and planting a pickle for otter": (
        "blank", lambda part, marker: {None: TAMPER.format(marker=str(marker), targets=[])}, ZERO),
}
ATTACKS_PART4 = {"ddof=0 where the text asks for ddof=1": ("reference", lambda part, marker: {"q2": DDOF0},
                                                           {**FULL, "q2": 0})}

# Rounds of subtle mistakes: in each round, at most one mistake per question, all in one submission.
MISTAKES = {
    "part1": [
        {"q1": PART["part1"]["q1"], "q3": 'q3_answer = "a"  # budgets added linearly', "q4": PART["part1"]["q4"],
         "q2": _wrap("imse_ftp", P1, "return _orig(X, grid, space, B, mu, theta_bar, R, rng) / len(theta_bar)"
                                     "  # mean over coefficients instead of sum")},
    ],
    "part2": [
        {"q1": PART["part2"]["q1"], "q3": 'q3_answer = "a"',
         "q4": "_orig_n_star = n_star\n\n\ndef n_star(T, sigma0, mu, level):\n"
               "    return max(8, _orig_n_star(T, sigma0, mu, level) // 2)  # the last n below the level",
         "q2": _wrap("grid_mse", P2, "return _orig(pipeline, grid, space, n, 0.0, B, mu, R, rng)"
                                     "  # curves observed without their noise")},
    ],
    "part3": [
        {"q1": PART["part3"]["q1"], "q3": 'q3_answer = "d"  # a pass read as a proof', "q4": PART["part3"]["q4"],
         "q2": "def estimate_mu(mu, t, R, rng):\n    x0 = rng.standard_normal(R)\n"
               "    x1 = mu + rng.standard_normal(R)\n"
               "    return float(norm.ppf(1 - np.mean(x0 > t)) - norm.ppf(np.mean(x1 > t)))"
               "  # power, not the miss rate"},
    ],
    "part4": [
        {"q1": PART["part4"]["q1"], "q3": 'q3_answer = "b"', "q4": PART["part4"]["q4"],
         "q2": _wrap("coef_noise_sd", P4, "return _orig(X, grid, space, B, mu, R, rng) ** 2  # the variance")},
    ],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`make assignments` in a fresh copy of the tracked files."""
    clone = tmp_path_factory.mktemp("clone")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    for rel in ["tools/autograder_env.py", "tools/grading_power.py", "Makefile", "README.md", "pyproject.toml",
                *[str(p.relative_to(ROOT)) for p in (ROOT / "dpfda").rglob("*.py")]]:  # also before they are committed
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, clone / rel)
    (clone / "book" / "assignments").mkdir(parents=True, exist_ok=True)
    for src in (ROOT / "book" / "assignments").glob("*.*"):
        if src.suffix in (".ipynb", ".py", ".md"):
            shutil.copy2(src, clone / "book" / "assignments" / src.name)
    (clone / ".venv").symlink_to(BIN.parent)
    result = subprocess.run(["make", "-o", ".venv/.installed", "assignments"], cwd=clone,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return clone / "_build" / "assignments"


def _autograder(built: Path, part: str) -> Path:
    (zip_path,) = (built / part / "autograder").glob(f"{part}-autograder_*.zip")
    return zip_path


def _grade_in_process(notebook: Path, autograder: Path) -> tuple[dict, str]:
    """Scores and results.json's text, from otter's Python API (the same steps as `otter run`)."""
    from otter.api import grade_submission

    results = grade_submission(str(notebook), str(autograder), quiet=True)
    scores = {name: r.score for name, r in results.results.items()}
    from otter.run.run_autograder.autograder_config import AutograderConfig

    return scores, json.dumps(results.to_gradescope_dict(AutograderConfig({})))


def _with_cells(notebook: Path, codes: dict, out: Path) -> Path:
    """``notebook`` with code inserted before the check cell of each question in ``codes`` (None: q1)."""
    nb = nbformat.read(notebook, as_version=4)
    for question, code in codes.items():
        check = next(i for i, c in enumerate(nb.cells)
                     if c.cell_type == "code" and f'grader.check("{question or "q1"}")' in c.source)
        nb.cells.insert(check, nbformat.v4.new_code_cell(code))
    nbformat.write(nb, out)
    return out


def _key_lines(part: str) -> list[str]:
    """Lines of the assignment's key long enough to identify it, and its answer (not the lines it shares
    with the notebook's own set-up, such as the symbols' definitions)."""
    text = (ROOT / "book" / "assignments" / f"{part}_key.py").read_text()
    notebook = (ROOT / "book" / "assignments" / f"{part}.ipynb").read_text()
    lines = [line.strip() for line in text.splitlines()
             if len(line.strip()) > 24 and not line.strip().startswith(("#", '"""', "def ", "return ", "import "))
             and json.dumps(line.strip())[1:-1] not in notebook]
    return lines + [line for line in text.splitlines() if line.startswith("ANSWER")]


def _submissions(built: Path, part: str, tmp: Path, rows: tuple[str, ...] | None = None
                 ) -> list[tuple[str, Path, dict]]:
    """(label, notebook, expected scores) of every row of the attack table and of the mistake rounds
    (or of those ``rows`` only)."""
    wanted = rows
    folder = built / part
    bases = {"reference": folder / "autograder" / f"{part}.ipynb", "blank": folder / "student" / f"{part}.ipynb"}
    rows = [("reference", bases["reference"], FULL), ("blank", bases["blank"], ZERO)]
    attacks = {**ATTACKS, **(ATTACKS_PART4 if part == "part4" else {})}
    for i, (label, (base, cells, expected)) in enumerate(attacks.items()):
        rows.append((label, _with_cells(bases[base], cells(part, tmp / "pwned-by-pickle"), tmp / f"attack{i}.ipynb"),
                     expected))
    for i, mistakes in enumerate(MISTAKES[part]):
        rows.append((f"mistakes, round {i + 1} ({', '.join(sorted(mistakes))})",
                     _with_cells(bases["reference"], mistakes, tmp / f"wrong{i}.ipynb"),
                     {q: 0 if q in mistakes else FULL[q] for q in FULL}))
    return [row for row in rows if wanted is None or row[0] in wanted]


def _table(part: str, where: str, rows: list[tuple[str, dict, float]]) -> str:
    lines = [f"| {part} ({where}) | q1 | q2 | q3 | q4 | total | seconds |", "|---|---|---|---|---|---|---|"]
    for label, got, seconds in rows:
        lines.append(f"| {label} | " + " | ".join(f"{got.get(q, 0):g}/{FULL[q]}" for q in FULL)
                     + f" | {sum(got.values()):g}/8 | {seconds:.0f} |")
    text = "\n".join(lines)
    print("\n" + text)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"assignment-attacks-{part}-{where.split()[0]}.md").write_text(text + "\n")
    return text


def _workers() -> int:
    """Gradings run at once: one per CPU this process may use (at least 2, at most 4)."""
    return max(2, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2))


def _timed(grade, notebook: Path) -> tuple[dict, str, float]:
    start = time.monotonic()
    scores, text = grade(notebook)
    return scores, text, time.monotonic() - start


def _verdict(part: str, where: str, graded: list[tuple[str, dict, dict, str, float]], tmp: Path) -> None:
    """Each row's scores are what it expects, and results.json holds nothing of the key or a forgery.

    ``graded``: (label, expected, scores, results.json's text, seconds) of each row."""
    failures = []
    for label, expected, scores, text, _ in graded:
        if scores != expected:
            failures.append((label, scores, expected))
        leaked = [line for line in _key_lines(part) if line in text]
        if leaked or "FORGED-BY-SUBMISSION" in text:
            failures.append((label, "results.json holds", leaked or "a forged result"))
    _table(part, where, [(label, scores, seconds) for label, _, scores, _, seconds in graded])
    assert not (tmp / "pwned-by-pickle").exists(), "a planted pickle ran in the grading process"
    assert not failures, failures


def _grade_api_row(notebook: Path, autograder: Path, cwd: Path) -> tuple[dict, str, float]:
    """One row through otter's API, in a worker process of its own (otter changes the working folder)."""
    os.chdir(cwd)
    return _timed(lambda nb: _grade_in_process(nb, autograder), notebook)


#: The rows graded through otter's API in this process's pool; ZIP_ROWS (below) are graded once, with
#: `otter run` in the fresh venv built from the zip alone, and not again here.
def _api_rows(part: str) -> tuple[str, ...]:
    attacks = {**ATTACKS, **(ATTACKS_PART4 if part == "part4" else {})}
    mistakes = [f"mistakes, round {i + 1} ({', '.join(sorted(m))})" for i, m in enumerate(MISTAKES[part])]
    return tuple(label for label in ["reference", "blank", *attacks, *mistakes] if label not in ZIP_ROWS)


@pytest.fixture(scope="module")
def api_graded(built, tmp_path_factory) -> dict[str, tuple[list, Path]]:
    """Every part's API rows, graded by otter's API in a pool of worker processes (one per CPU).

    part -> ([(label, expected, scores, results.json's text, seconds)], the part's folder)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    jobs = {}
    with ProcessPoolExecutor(_workers(), mp_context=multiprocessing.get_context("spawn")) as pool:
        for part in PARTS:
            tmp = tmp_path_factory.mktemp(f"api-{part}")
            for label, notebook, expected in _submissions(built, part, tmp, _api_rows(part)):
                work = Path(tempfile.mkdtemp(prefix="row-", dir=tmp))
                future = pool.submit(_grade_api_row, notebook, _autograder(built, part), work)
                jobs[part, label] = (expected, tmp, future)
    out: dict[str, tuple[list, Path]] = {}
    for (part, label), (expected, tmp, future) in jobs.items():
        scores, text, seconds = future.result()
        out.setdefault(part, ([], tmp))[0].append((label, expected, scores, text, seconds))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("part", PARTS)
def test_attack_table(built, api_graded, part):
    """Every row of the attack table scores exactly what it should (see the module's docstring): the rows
    but ZIP_ROWS here, through otter's API; ZIP_ROWS with `otter run` in a fresh venv from the zip."""
    assert (built / f"{part}-student.zip").is_file()
    graded, tmp = api_graded[part]
    assert [row[0] for row in graded] == list(_api_rows(part)) and len(graded) >= 6
    _verdict(part, "otter's API", graded, tmp)


def _readme_grading_command() -> str:
    text = (ROOT / "README.md").read_text()
    (command,) = re.findall(r"`(mkdir -p grades && \.venv/bin/otter run [^`]+)`", text)
    return command


@pytest.mark.slow
def test_readme_grading_command_and_results_hold_nothing_of_the_key(built):
    """The README's command, as written, grades; a daemon of the submission cannot rewrite its results."""
    clone = built.parents[1]
    marker = clone / "pwned-by-pickle"
    tamper = TAMPER.format(marker=str(marker), targets=[str(clone / "grades" / "results.json")])
    wrong = _with_cells(built / "part1" / "autograder" / "part1.ipynb",
                        {"q2": _hard_coded("part1"), "q3": 'q3_answer = "a"', None: tamper}, clone / "submission.ipynb")
    subprocess.run(["bash", "-c", _readme_grading_command()], cwd=clone, check=True, capture_output=True)
    time.sleep(5)  # the daemon, had it survived, would have rewritten the file by now
    assert not marker.exists()
    results = json.loads((clone / "grades" / "results.json").read_text())
    text = json.dumps(results)
    by_name = {t["name"]: t for t in results["tests"]}
    assert wrong.is_file() and "FORGED" not in text
    assert by_name["q1"]["score"] == 2 and by_name["q2"]["score"] == 0 and by_name["q3"]["score"] == 0, by_name
    assert all(by_name[q]["visibility"] == "hidden" for q in ("q1", "q2", "q3", "q4"))
    leaked = [line for line in _key_lines("part1") if line in text]
    assert not leaked, leaked


@pytest.mark.slow
@pytest.mark.parametrize("part", ["part3", "part4"])
def test_the_grading_process_imports_nothing_once_the_submission_has_run(built, tmp_path, part):
    """A module first imported after the child ran could be one the submission rewrote on disk: from the
    moment the child is gone (judging the reference's answers, writing and printing the results), the
    grading process imports nothing new. Parts 3 and 4 judge by both kinds of law (binomial, χ²)."""
    notebook = built / part / "autograder" / f"{part}.ipynb"
    script = f"""
import sys
from dpfda_book.teaching import grader
from otter.api import grade_submission
seen = {{}}
run = grader.run_probes
def recording(*args, **kwargs):
    out = run(*args, **kwargs)
    seen["modules"] = set(sys.modules)
    return out
grader.run_probes = recording
results = grade_submission({str(notebook)!r}, {str(_autograder(built, part))!r}, quiet=False)
print("SCORES", {{name: r.score for name, r in results.results.items()}})
print("NEW", sorted(set(sys.modules) - seen["modules"]))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "SCORES {'q1': 2, 'q2': 4, 'q3': 1, 'q4': 1}" in out.stdout, out.stdout[-2000:]
    assert "NEW []" in out.stdout, out.stdout[-2000:]


@pytest.mark.slow
def test_each_key_is_in_its_own_zip_only(built):
    """No shared answers file: part N's key is in part N's autograder zip, at its top, and nowhere else."""
    for part in PARTS:
        with zipfile.ZipFile(_autograder(built, part)) as z:
            names = z.namelist()
            config = json.loads(z.read("otter_config.json"))
        assert f"{part}_key.py" in names, names
        assert not [n for n in names if n.endswith("_key.py") and n != f"{part}_key.py"], names
        assert not [n for n in names if "hidden_checks" in n or (n.startswith("files/") and n.endswith(".py"))]
        assert config["plugins"] == [{"dpfda_book.teaching.grader.Plugin": {"key": f"{part}_key.py"}}]


#: The rows the fresh environment grades in each assignment, with `otter run` in a process of its own: the
#: two ends, an attack on the grader's modules, one on a simulation answer, one on the output and one on the
#: results file (which `otter run` reads back). The other rows take the same paths through the grader and
#: are graded through otter's API (test_attack_table); each row is graded once, in one of the two places.
ZIP_ROWS = ("reference", "blank", "blank + a fake hidden_checks module in sys.modules",
            "closed form × (1 + 1e-9·N(0, 1)); part 3: the μ handed in, jittered",
            "an answer whose __hash__, __eq__, __repr__ … print and raise every file",
            "blank + a daemon rewriting results.json and planting a pickle for otter")


@pytest.mark.slow
@pytest.mark.autograder_env
def test_attack_table_in_a_fresh_python311_venv_from_the_zip_alone(built, tmp_path):
    """As Gradescope would: only a zip's files (requirements.txt and the dpfda wheel), Python 3.11, and
    `otter run` in a process of its own; the rows ZIP_ROWS of every assignment's attack table."""
    autograder = _autograder(built, "part1")
    source = tmp_path / "source"
    with zipfile.ZipFile(autograder) as z:
        z.extractall(source)
        names = z.namelist()
    assert "requirements.txt" in names and any(n.startswith("files/dpfda-") and n.endswith(".whl") for n in names)
    env_yml = (source / "environment.yml").read_text()
    assert "python=3.11" in env_yml and "./files/dpfda-" in env_yml
    reqs = (source / "requirements.txt").read_text().splitlines()
    assert all("==" in r for r in reqs if not r.startswith("./")), reqs
    python = shutil.which("python3.11") or sys.executable
    venv = tmp_path / "venv"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(Path.home()), "LANG": "C.UTF-8",
           "JUPYTER_PATH": str(venv / "share" / "jupyter")}
    subprocess.run([python, "-m", "venv", str(venv)], check=True, env=env)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-r", "requirements.txt"],
                         cwd=source, env=env, capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    probe = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import sys, dpfda, dpfda_book.teaching.grader as g; "
                            "print(sys.version_info[:2], dpfda.__file__, g.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    version = probe.stdout
    # both wheels installed in the venv, under Python 3.11
    assert probe.returncode == 0 and version.startswith("(3, 11)") and version.count(str(venv)) == 2, \
        version + probe.stderr[-3000:]

    def grade(part: str, notebook: Path) -> tuple[dict, str]:
        (tmp_path / "out").mkdir(exist_ok=True)
        out = Path(tempfile.mkdtemp(prefix=f"{part}-{notebook.stem}-", dir=tmp_path / "out"))
        done = subprocess.run([str(venv / "bin" / "otter"), "run", "-a", str(_autograder(built, part)), "-o",
                               str(out), str(notebook)], cwd=out, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        text = (out / "results.json").read_text()
        return {t["name"]: t["score"] for t in json.loads(text)["tests"] if "score" in t}, text

    from concurrent.futures import ThreadPoolExecutor

    # every part's rows at once, one `otter run` (a process of its own) per CPU
    jobs = []
    with ThreadPoolExecutor(_workers()) as pool:
        for part in PARTS:
            (tmp_path / part).mkdir()
            for label, notebook, expected in _submissions(built, part, tmp_path / part, ZIP_ROWS):
                future = pool.submit(_timed, lambda nb, part=part: grade(part, nb), notebook)
                jobs.append((part, label, expected, future))
    for part in PARTS:
        graded = [(label, expected, *future.result()) for p, label, expected, future in jobs if p == part]
        assert [row[0] for row in graded] == list(ZIP_ROWS)
        _verdict(part, "fresh venv from the zip", graded, tmp_path / part)


# ---- what students get ------------------------------------------------------------------------------


def _solutions_and_hidden_tests(master: Path):
    """Solution lines of an otter master notebook.

    Solution lines: in the solution blocks, code lines marked ``# SOLUTION`` (the code before the
    mark), code lines between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` comments, and every line of
    a markdown answer (a rubric)."""
    nb = nbformat.read(master, as_version=4)
    solutions, in_solution = [], False
    for cell in nb.cells:
        text = cell.source.strip()
        if cell.cell_type == "raw":
            in_solution = text == "# BEGIN SOLUTION" or (in_solution and text != "# END SOLUTION")
            continue
        if in_solution and cell.cell_type == "markdown":
            solutions += [line.strip() for line in text.splitlines()]
        elif in_solution:
            inside = False
            for line in text.splitlines():
                stripped = line.strip()
                if stripped in ("# BEGIN SOLUTION", "# END SOLUTION"):
                    inside = stripped == "# BEGIN SOLUTION"
                elif inside or stripped.endswith("# SOLUTION"):
                    solutions.append(stripped.split("# SOLUTION")[0].strip())
    return [s for s in solutions if len(s) > 6]


@pytest.mark.slow
@pytest.mark.parametrize("part", PARTS)
def test_no_student_file_holds_a_solution_or_the_key(built, part):
    solutions = _solutions_and_hidden_tests(ROOT / "book" / "assignments" / f"{part}.ipynb")
    assert solutions
    nb = nbformat.read(ROOT / "book" / "assignments" / f"{part}.ipynb", as_version=4)
    assert not [c for c in nb.cells if "hidden: true" in c.source], "a hidden test in the kernel again"
    texts = [p.read_text() for p in (built / part / "student").rglob("*") if p.is_file()]
    with zipfile.ZipFile(built / f"{part}-student.zip") as z:
        texts += [z.read(name).decode() for name in z.namelist()]
    assert texts
    for text in texts:
        assert "hidden_checks" not in text and "Rubric" not in text and "_key" not in text
        sources = text
        if text.lstrip().startswith("{"):
            student = nbformat.reads(text, as_version=4)
            sources = "\n".join(c.source for c in student.cells) + "\n" + str(student.metadata)
        for line in solutions:
            assert line not in sources, f"solution in a student file: {line}"
        for line in _key_lines(part):
            assert line not in sources, f"key in a student file: {line}"


# ---- the keys' own guarantees -------------------------------------------------------------------------


def _key(part: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_test_{part}_key", ROOT / "book" / "assignments" / f"{part}_key.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_points_match_the_master_notebooks():
    for part in PARTS:
        nb = nbformat.read(ROOT / "book" / "assignments" / f"{part}.ipynb", as_version=4)
        points = {m.group(1): float(m.group(2)) for c in nb.cells if c.cell_type == "raw"
                  for m in [re.search(r"name: (q\d)\n(?:manual: true\n)?points: (\d+)", c.source)] if m}
        key = _key(part).KEY
        assert key.assignment == part
        assert {q: float(x.points) for q, x in key.questions.items()} == {q: points[q] for q in key.questions}
        assert points["q5"] == 4 and set(key.questions) == {"q1", "q2", "q3", "q4"}


@pytest.mark.parametrize("part", PARTS)
def test_the_simulation_check_has_its_stated_power_and_false_fail_rate(part):
    """Under the estimator's exact law a correct function passes; each listed mistake fails.

    By simulation from the law (10 000 gradings; part 3, whose law is a pair of binomial counts read on a
    grid, 500): the reference fails at most 1 time in 1 000 (its rate is about 10⁻⁴), and every mistake
    of the key's list fails with probability above 0.995 (μ off by 2 %: about 0.9995)."""
    import numpy as np

    key = _key(part)
    rng = np.random.default_rng(20261206)
    reps = 500 if hasattr(key, "z_grid") else 10_000

    def passes(variant: str) -> float:
        values = key.draw(reps, rng, variant)
        z = key.z_grid(values, rng) if hasattr(key, "z_grid") else key.z_values(values)
        return float(key.TEST.passes(z).mean())

    assert passes("reference") >= 0.999
    for variant in key.VARIANTS:
        assert passes(variant) <= 0.005, variant
    assert "mu 2 % off" in key.VARIANTS and len(key.SETTINGS) >= 20
    # negative control: the test is not vacuous (a law off by a factor the test cannot see would pass)
    assert key.TEST.passes(np.zeros(key.TEST.size)) == np.False_


def test_part3_law_is_the_exact_law_of_the_counts():
    """The distribution function of part 3's estimator against a brute-force sum over every (K₀, K₁)."""
    import numpy as np
    from scipy import stats

    key = _key("part3")
    for mu, t, R in ((1.0, 0.5, 300), (2.0, 1.5, 150)):
        p0, p1 = key.rates(mu, t)
        k = np.arange(R + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            values = stats.norm.isf(k / R)[:, None] - stats.norm.ppf(k / R)[None, :]
        weights = stats.binom.pmf(k, R, p0)[:, None] * stats.binom.pmf(k, R, p1)[None, :]
        for x in np.linspace(mu - 0.6, mu + 0.6, 13):
            assert key.cdf(np.array([x]), mu, t, R)[0] == pytest.approx(weights[values <= x].sum(), abs=1e-12)
    # negative control: the law at another mu is not this one
    assert abs(key.cdf(np.array([1.0]), 1.0, 0.5, 300)[0] - key.cdf(np.array([1.0]), 1.1, 0.5, 300)[0]) > 0.05


def test_part2_nothing_binds_or_clips():
    key = _key("part2")
    assert key.binding_margin() > 0.5
    assert key.clip_probability() < 1e-5


# ---- multiple choice --------------------------------------------------------------------------------

#: Words that soften or qualify a statement: "pick the most hedged option" counts them.
HEDGES = {"may", "might", "can", "could", "possibly", "perhaps", "probably", "likely", "unlikely", "some", "often",
          "usually", "generally", "typically", "mostly", "necessarily", "depends", "only", "still", "about",
          "roughly", "approximately", "tends", "less", "suggests"}


def _bank() -> dict[str, tuple[str, list[str], bool]]:
    """The bank's multiple-choice questions: label -> (answer, options a–d, used)."""
    text = (ROOT / "book" / "assignments" / "question_bank.md").read_text()
    found, part = {}, None
    for block in re.split(r"\n(?=\d+\. \*\*|## )", text):
        if block.startswith("## Part"):
            part = block.split("(assignment ")[1].split(")")[0]
            continue
        head = re.match(r"(\d+)\. \*\*I( \[used\])?\*\*", block)
        if head:
            options = re.findall(r"^\s+- \(([a-d])\) (.+)$", block, re.M)
            (answer,) = re.findall(r"Answer: \(([a-d])\)", block)
            assert [letter for letter, _ in options] == list("abcd"), block
            found[f"part{part}-{head.group(1)}"] = (answer, [o for _, o in options], bool(head.group(2)))
    return found


def _strategies(questions: list[tuple[str, list[str]]]) -> dict[str, float]:
    """Expected score of each strategy (ties broken at random) over ``questions``."""
    def hedged(option: str) -> int:
        return sum(word in HEDGES for word in re.findall(r"[a-z']+", option.lower()))

    measures = {"longest (characters)": len, "longest (words)": lambda o: len(o.split()), "most hedged": hedged}
    out = {}
    for name, measure in measures.items():
        score = 0.0
        for answer, options in questions:
            values = [measure(o) for o in options]
            best = [i for i, v in enumerate(values) if v == max(values)]
            score += ("abcd".index(answer) in best) / len(best)
        out[name] = score
    return out


def test_multiple_choice_is_not_guessable_by_form():
    """Over the bank's 8 interpretation questions (and the 4 the assignments use), picking the longest
    option or the most hedged one scores no more than chance (1 in 4); options are of similar length."""
    bank = _bank()
    assert len(bank) == 8 and sum(used for _, _, used in bank.values()) == 4
    for label, (answer, options, _) in bank.items():
        words = [len(o.split()) for o in options]
        assert max(words) <= 1.5 * min(words), (label, words)
        assert max(map(len, options)) <= 1.5 * min(map(len, options)), label
    every = [(a, o) for a, o, _ in bank.values()]
    used = [(a, o) for a, o, u in bank.values() if u]
    for questions in (every, used):
        scores = _strategies(questions)
        print(len(questions), scores)
        assert all(score <= len(questions) / 4 for score in scores.values()), scores
    assert sorted(a for a, _ in used) == ["a", "b", "c", "d"]  # one answer per letter over the assignments
    # negative control: the old options of part 3's question 3 gave their answer away
    old = ("d", ["The mechanism is $\\mu$-GDP.", "The mechanism is not $\\mu$-GDP.",
                 "The mechanism is $\\mu_{\\mathrm{lb}}$-GDP.",
                 "At this pair the audit found no evidence against $\\mu$-GDP; another pair may still break it."])
    assert _strategies([old]) == {"longest (characters)": 1.0, "longest (words)": 1.0, "most hedged": 1.0}


def test_each_assignment_asks_the_banks_question_with_the_keys_answer():
    bank = _bank()
    for part in PARTS:
        number = part[-1]
        answer, options, used = bank[f"part{number}-3"]
        nb = nbformat.read(ROOT / "book" / "assignments" / f"{part}.ipynb", as_version=4)
        (cell,) = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("**Question 3")]
        assert re.findall(r"^\* \([a-d]\) (.+)$", cell.source, re.M) == options, part
        (solution,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("q3_answer =")]
        assert solution.source.startswith(f'q3_answer = "{answer}"') and _key(part).ANSWER == answer and used
