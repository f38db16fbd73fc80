"""The autograded assignments (book/assignments/part*.ipynb, otter-grader 7).

`make assignments` runs in a copy of the files git tracks (a fresh clone, with this .venv),
then each assignment's autograder grades, offline and without Docker:
(i) its reference solution: full marks; (ii) the unanswered student notebook: zero;
(iii) the reference with every simulation function replaced by one returning the value the
reference computed at the notebook's example (a hard-coded answer): every simulation question
scores zero; (iv) rounds of subtle mistakes (mu 2 % off, a missing sqrt(T), a mean for a sum, a
closed form for a simulation, a wrong letter), one per question and round: those questions lose
points, the others keep theirs. The scores found are printed and written to
_build/test-artifacts/assignment-scores.md. No student file holds a solution or a hidden test, and
the grading results (results.json, from the README's command as written) hold no hidden check.
The marker `autograder_env` builds a fresh Python 3.11 venv from the zip's files alone and
grades the reference there, as Gradescope would.
"""

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("otter")

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PARTS = ["part1", "part2", "part3", "part4"]
ARTIFACTS = ROOT / "_build" / "test-artifacts"
SIMULATION = "q2"

# Each simulation function, its arguments at the notebook's example.
SIM_CALL = {
    "part1": ("imse_ftp", "X_leg, grid_leg, space_leg, 1.1, 1.0, theta_bar, 2000, rng"),
    "part2": ("grid_mse", "dpfda.ptf, grid4, space4, 400, 1.0, 8.0, 1.0, 300, rng"),
    "part3": ("estimate_mu", "1.0, 0.5, 20000, rng"),
    "part4": ("coef_noise_sd", "X, grid_leg, space_leg, 1.1, 1.0, 1000, rng"),
}


def _wrap(name: str, args: str, body: str) -> str:
    """Code redefining function ``name(args)`` on top of the student's as ``_orig``."""
    return f"_orig_{name} = {name}\n\n\ndef {name}({args}):\n    " + body.replace("_orig", f"_orig_{name}")


P1 = "X, grid, space, B, mu, theta_bar, R, rng"
P2 = "pipeline, grid, space, n, sigma0, B, mu, R, rng"
P4 = "X, grid, space, B, mu, R, rng"
# Rounds of mistakes: in each round, at most one mistake per question, all in one submission.
MISTAKES = {
    "part1": [
        {"q1": "delta2 = 2 * c / n  # forgot that T coordinates move at once\nsigma_ptf = delta2 / mu",
         "q2": _wrap("imse_ftp", P1, "return _orig(X, grid, space, B, 0.98 * mu, theta_bar, R, rng)  # mu 2 % off"),
         "q3": 'q3_answer = "a"  # budgets added linearly',
         "q4": "def composed_mu(mus):\n    return float(np.sum(mus))  # linear"},
        {"q2": _wrap("imse_ftp", P1, "return _orig(X, grid, space, B, mu, theta_bar, R, rng) / len(theta_bar)"
                                     "  # mean over coefficients instead of sum"),
         "q3": 'q3_answer = "d"'},
        {"q2": _wrap("imse_ftp", P1, "rng.standard_normal()\n    "
                                     "return len(theta_bar) * dpfda.ftp_sigma(len(X), B, mu) ** 2"
                                     "  # closed form, no simulation")},
    ],
    "part2": [
        {"q1": "ratio_x = (x + T) / (x + 1)  # PTF over FTP",
         "q2": _wrap("grid_mse", P2, "return _orig(pipeline, grid, space, n, sigma0, B, 0.98 * mu, R, rng)"
                                     "  # mu 2 % off"),
         "q3": 'q3_answer = "d"',
         "q4": "_orig_n_star = n_star\n\n\ndef n_star(T, sigma0, mu, level):\n"
               "    return max(8, _orig_n_star(T, sigma0, mu, level) // 2)  # the last n below the level"},
        {"q2": _wrap("grid_mse", P2, "return _orig(pipeline, grid, space, n, 0.0, B, mu, R, rng)"
                                     "  # curves observed without their noise")},
    ],
    "part3": [
        {"q1": "mu_from_rates = Phi_inv(1 - alpha) + Phi_inv(beta)  # sign of the miss rate",
         "q2": _wrap("estimate_mu", "mu, t, R, rng", "return _orig(0.98 * mu, t, R, rng)  # mu 2 % off"),
         "q3": 'q3_answer = "a"  # a pass read as a proof',
         "q4": "def tradeoff_at(alpha, mu):\n    return float(norm.cdf(norm.ppf(alpha) - mu))  # level, not 1 - level"},
        {"q2": "def estimate_mu(mu, t, R, rng):\n    x0 = rng.standard_normal(R)\n"
               "    x1 = mu + rng.standard_normal(R)\n"
               "    return float(norm.ppf(1 - np.mean(x0 > t)) - norm.ppf(np.mean(x1 > t)))"
               "  # power, not the miss rate"},
    ],
    "part4": [
        {"q1": "sd_factor = sp.Integer(2)  # budgets halved linearly",
         "q2": _wrap("coef_noise_sd", P4, "return _orig(X, grid, space, B, 0.98 * mu, R, rng)  # mu 2 % off"),
         "q3": 'q3_answer = "c"',
         "q4": "def split_budget(mu_total, k):\n    return mu_total / k  # linear"},
        {"q2": _wrap("coef_noise_sd", P4, "return _orig(X, grid, space, B, mu, R, rng) ** 2  # the variance")},
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
    for rel in ["tools/autograder_env.py", "Makefile", "README.md"]:  # also before they are committed
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


def _grade(notebook: Path, autograder: Path):
    from otter.api import grade_submission

    results = grade_submission(str(notebook), str(autograder), quiet=True)
    return {name: (r.score, r.possible) for name, r in results.results.items()}


def _with_cells(reference: Path, codes: dict[str, str], out: Path) -> Path:
    """The reference with code inserted before the check cell of each question in ``codes``."""
    nb = nbformat.read(reference, as_version=4)
    for question, code in codes.items():
        check = next(i for i, c in enumerate(nb.cells)
                     if c.cell_type == "code" and f'grader.check("{question}")' in c.source)
        nb.cells.insert(check, nbformat.v4.new_code_cell(code))
    nbformat.write(nb, out)
    return out


def _hard_coded(part: str) -> str:
    name, args = SIM_CALL[part]
    return (f"_value = {name}({args})\n\n\ndef {name}(*args, **kwargs):\n"
            f"    return _value  # the reference's value at the example, hard-coded")


def _report(part: str, rows: list[tuple[str, dict]]) -> None:
    questions = sorted(rows[0][1])
    lines = [f"| {part} submission | " + " | ".join(questions) + " | total |",
             "|---|" + "---|" * (len(questions) + 1)]
    for label, got in rows:
        total, possible = sum(s for s, _ in got.values()), sum(p for _, p in got.values())
        lines.append(f"| {label} | " + " | ".join(f"{got[q][0]:g}/{got[q][1]:g}" for q in questions)
                     + f" | {total:g}/{possible:g} |")
    text = "\n".join(lines)
    print("\n" + text)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"assignment-scores-{part}.md").write_text(text + "\n")


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.slow
def test_assignment_grades(built, part, tmp_path):
    folder = built / part
    autograder = _autograder(built, part)
    assert (built / f"{part}-student.zip").is_file()
    reference = folder / "autograder" / f"{part}.ipynb"
    rows = []

    full = _grade(reference, autograder)
    rows.append(("reference", full))
    assert set(full) == {"q1", "q2", "q3", "q4"}, full  # q5 is graded by hand
    assert all(score == possible > 0 for score, possible in full.values()), full

    blank = _grade(folder / "student" / f"{part}.ipynb", autograder)
    rows.append(("blank", blank))
    assert all(score == 0 for score, _ in blank.values()), blank

    hard = _grade(_with_cells(reference, {SIMULATION: _hard_coded(part)}, tmp_path / "hard.ipynb"), autograder)
    rows.append(("simulation hard-coded", hard))
    assert hard[SIMULATION][0] == 0, hard
    assert all(s == p for q, (s, p) in hard.items() if q != SIMULATION), hard

    for i, mistakes in enumerate(MISTAKES[part]):
        got = _grade(_with_cells(reference, mistakes, tmp_path / f"wrong{i}.ipynb"), autograder)
        rows.append((f"mistakes, round {i + 1} ({', '.join(mistakes)})", got))
        for question in got:
            score, possible = got[question]
            if question in mistakes:
                assert score < possible, (i, question, mistakes[question], got)
            else:
                assert score == possible, (i, question, got)
    _report(part, rows)


def test_power_of_the_hidden_checks():
    """The largest setting of each simulation check fails a 2 % error in mu with high probability."""
    sys.path.insert(0, str(ROOT / "book" / "assignments"))
    try:
        import hidden_checks
    finally:
        sys.path.pop(0)
    print(hidden_checks.POWER)
    assert len(hidden_checks.POWER) == len(PARTS)
    assert all(p >= 0.98 for p in hidden_checks.POWER.values()), hidden_checks.POWER
    assert sorted(hidden_checks.ANSWERS.values()) == ["a", "b", "c", "d"]  # one answer per letter


def _readme_grading_command() -> str:
    text = (ROOT / "README.md").read_text()
    (command,) = re.findall(r"`(mkdir -p grades && \.venv/bin/otter run [^`]+)`", text)
    return command


@pytest.mark.slow
def test_readme_grading_command_and_results_hold_no_hidden_check(built, tmp_path):
    """The README's command, as written, grades; its results.json holds nothing of the hidden checks."""
    clone = built.parents[1]
    wrong = _with_cells(built / "part1" / "autograder" / "part1.ipynb",
                        {SIMULATION: _hard_coded("part1"), "q3": 'q3_answer = "a"'}, clone / "submission.ipynb")
    assert wrong.is_file()
    subprocess.run(["bash", "-c", _readme_grading_command()], cwd=clone, check=True, capture_output=True)
    results = json.loads((clone / "grades" / "results.json").read_text())
    text = json.dumps(results)
    by_name = {t["name"]: t for t in results["tests"]}
    assert by_name["q2"]["score"] == 0 and by_name["q3"]["score"] == 0, by_name
    assert all(by_name[q]["visibility"] == "hidden" for q in ("q1", "q2", "q3", "q4"))
    checks = (ROOT / "book" / "assignments" / "hidden_checks.py").read_text()
    code = [line.strip() for line in checks.splitlines()
            if len(line.strip()) > 12
            and not line.strip().startswith(("#", '"""', "def ", "return True", "return False"))]
    leaked = [line for line in code if line in text]
    assert not leaked, leaked
    assert '"c"' not in text and "== 'c'" not in text  # the answer to q3


@pytest.mark.autograder_env
@pytest.mark.slow
def test_autograder_zip_alone_grades_in_a_fresh_python311_venv(built, tmp_path):
    """As Gradescope would: only the zip's files (requirements.txt and the dpfda wheel), Python 3.11."""
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
    version = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sys, dpfda; print(sys.version_info[:2], dpfda.__file__)"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    assert "(3, 11)" in version and str(venv) in version, version
    out = tmp_path / "out"
    out.mkdir()
    run = subprocess.run([str(venv / "bin" / "otter"), "run", "-a", str(autograder), "-o", str(out),
                          str(built / "part1" / "autograder" / "part1.ipynb")],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    scores = {t["name"]: (t["score"], t["max_score"]) for t in results["tests"] if "score" in t}
    print("fresh venv, part1 reference:", scores)
    assert scores and all(s == p > 0 for s, p in scores.values()), scores


def _solutions_and_hidden_tests(master: Path):
    """Solution lines and hidden test lines of an otter master notebook.

    Solution lines: in the solution blocks, code lines marked ``# SOLUTION`` (the code before the
    mark), code lines between ``# BEGIN SOLUTION`` and ``# END SOLUTION`` comments, and every line of
    a markdown answer (a rubric)."""
    nb = nbformat.read(master, as_version=4)
    solutions, hidden, in_solution = [], [], False
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
        if cell.cell_type == "code" and "hidden: true" in text:
            hidden += [line.strip() for line in text.splitlines() if line.strip().startswith("assert")]
    return [s for s in solutions if len(s) > 6], hidden


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.slow
def test_no_student_file_holds_a_solution_or_a_hidden_test(built, part):
    solutions, hidden = _solutions_and_hidden_tests(ROOT / "book" / "assignments" / f"{part}.ipynb")
    assert solutions and hidden
    texts = [p.read_text() for p in (built / part / "student").rglob("*") if p.is_file()]
    with zipfile.ZipFile(built / f"{part}-student.zip") as z:
        texts += [z.read(name).decode() for name in z.namelist()]
    assert texts
    for text in texts:
        assert "hidden_checks" not in text and "Rubric" not in text
        # the notebook is JSON: compare with its cells' sources as well as the raw text
        sources = text
        if text.lstrip().startswith("{"):
            nb = nbformat.reads(text, as_version=4)
            sources = "\n".join(c.source for c in nb.cells) + "\n" + str(nb.metadata)
        for line in solutions:
            assert line not in sources, f"solution in a student file: {line}"
        for line in hidden:
            assert line not in sources, f"hidden test in a student file: {line}"
