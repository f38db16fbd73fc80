"""The autograded assignments (book/assignments/part*.ipynb, otter-grader 7).

`make assignments` runs in a copy of the files git tracks (a fresh clone, with this .venv),
then each assignment's autograder grades, offline and without Docker:
(i) its reference solution: full marks; (ii) the unanswered student notebook: zero;
(iii) for each question, the reference with one typical mistake in that question: that
question fails and the others pass. No student file holds a solution or a hidden test.
"""

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

# One typical mistake per question: code run after the student's answer, before the check.
MISTAKES = {
    "part1": {
        "q1": "delta2 = 2 * c / n  # forgot that T coordinates move at once\nsigma_ptf = delta2 / mu",
        "q2": "imse_hat = float(np.mean([np.sum((dpfda.ftp(X_leg, grid_leg, space_leg, 1.0, 1.0, rng).coef"
              " - theta_bar) ** 2) for _ in range(R)]))  # used B = 1 instead of B' = 1.1",
        "q3": 'q3_answer = "a"  # budgets added linearly',
    },
    "part2": {
        "q1": "ratio_x = (x + T) / (x + 1)  # PTF over FTP",
        "q2": "ratio_hat = 1 / ratio_hat  # PTF over FTP",
        "q3": "n_star = n_star // 2  # the last n below the threshold",
    },
    "part3": {
        "q1": "mu_from_rates = Phi_inv(1 - alpha) + Phi_inv(beta)  # sign of the miss rate",
        "q2": "beta_hat = float(np.mean(x1 > 0.5))  # power, not the miss rate\n"
              "mu_hat = float(norm.ppf(1 - alpha_hat) - norm.ppf(beta_hat))",
        "q3": 'q3_answer = "a"  # a pass read as a proof',
    },
    "part4": {
        "q1": "sd_factor = sp.Integer(2)  # budgets halved linearly",
        "q2": "sd_hat = sd_hat**2  # the variance, not the standard deviation",
        "q3": 'q3_answer = "c"',
    },
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
    (clone / "book" / "assignments").mkdir(parents=True, exist_ok=True)
    for src in (ROOT / "book" / "assignments").glob("part*.ipynb"):  # also before they are committed
        shutil.copy2(src, clone / "book" / "assignments" / src.name)
    (clone / ".venv").symlink_to(BIN.parent)
    result = subprocess.run(["make", "-o", ".venv/.installed", "assignments"], cwd=clone,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return clone / "_build" / "assignments"


def _grade(notebook: Path, autograder: Path):
    from otter.api import grade_submission

    results = grade_submission(str(notebook), str(autograder), quiet=True)
    return {name: (r.score, r.possible) for name, r in results.results.items()}


def _with_mistake(reference: Path, question: str, code: str, out: Path) -> Path:
    nb = nbformat.read(reference, as_version=4)
    check = next(i for i, c in enumerate(nb.cells)
                 if c.cell_type == "code" and f'grader.check("{question}")' in c.source)
    nb.cells.insert(check, nbformat.v4.new_code_cell(code))
    nbformat.write(nb, out)
    return out


@pytest.mark.parametrize("part", PARTS)
def test_assignment_grades(built, part, tmp_path):
    folder = built / part
    (autograder,) = (folder / "autograder").glob(f"{part}-autograder_*.zip")
    assert (built / f"{part}-student.zip").is_file()

    full = _grade(folder / "autograder" / f"{part}.ipynb", autograder)
    assert set(full) == set(MISTAKES[part])
    assert all(score == possible > 0 for score, possible in full.values()), full

    blank = _grade(folder / "student" / f"{part}.ipynb", autograder)
    assert all(score == 0 for score, _ in blank.values()), blank

    for question, code in MISTAKES[part].items():
        wrong = _with_mistake(folder / "autograder" / f"{part}.ipynb", question, code,
                              tmp_path / f"{part}-{question}.ipynb")
        got = _grade(wrong, autograder)
        assert got[question][0] < got[question][1], (question, got)
        others = {q: s for q, s in got.items() if q != question}
        assert all(score == possible for score, possible in others.values()), (question, got)


def _solutions_and_hidden_tests(master: Path):
    """Solution lines and hidden test lines of an otter master notebook."""
    nb = nbformat.read(master, as_version=4)
    solutions, hidden, in_solution = [], [], False
    for cell in nb.cells:
        text = cell.source.strip()
        if cell.cell_type == "raw":
            in_solution = text == "# BEGIN SOLUTION" or (in_solution and text != "# END SOLUTION")
            continue
        if cell.cell_type != "code":
            continue
        if in_solution:
            solutions += [line.split("# SOLUTION")[0].strip() for line in text.splitlines()
                          if not line.strip().startswith("#")]
        if "hidden: true" in text:
            hidden += [line.strip() for line in text.splitlines() if line.strip().startswith("assert")]
    return [s for s in solutions if len(s) > 6], hidden


@pytest.mark.parametrize("part", PARTS)
def test_no_student_file_holds_a_solution_or_a_hidden_test(built, part):
    solutions, hidden = _solutions_and_hidden_tests(ROOT / "book" / "assignments" / f"{part}.ipynb")
    assert solutions and hidden
    texts = [p.read_text() for p in (built / part / "student").rglob("*") if p.is_file()]
    with zipfile.ZipFile(built / f"{part}-student.zip") as z:
        texts += [z.read(name).decode() for name in z.namelist()]
    assert texts
    for text in texts:
        # the notebook is JSON: compare with its code cells' sources as well as the raw text
        sources = text
        if text.lstrip().startswith("{"):
            nb = nbformat.reads(text, as_version=4)
            sources = "\n".join(c.source for c in nb.cells) + "\n" + str(nb.metadata)
        for line in solutions:
            assert line not in sources, f"solution in a student file: {line}"
        for line in hidden:
            assert line not in sources, f"hidden test in a student file: {line}"
