"""Every floating-point comparison in tests/ and book/ states its absolute tolerance.

numpy's ``isclose``/``allclose`` add ``atol = 1e-8`` unless told otherwise, so
``np.isclose(x, y, rtol=1e-14)`` on values near 0.2 is a test at 5e-8, not at 1e-14;
``pytest.approx`` adds ``abs = 1e-12``. A comparison whose tolerance is written down
must be the comparison that runs: each call of ``np.isclose``, ``np.allclose``,
``np.testing.assert_allclose``, ``pytest.approx`` and ``math.isclose`` in the tests and
the chapters (code cells, the assignments' checks) gives its absolute tolerance
(``atol``, ``abs``, ``abs_tol``) explicitly, as a keyword or in its position. Where each
tolerance comes from is listed in benchmarks/tolerance_audit.md.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# name of the call -> (keyword of its absolute tolerance, its position among the arguments)
ABSOLUTE = {"isclose": ("atol", 3), "allclose": ("atol", 3), "assert_allclose": ("atol", 3),
            "approx": ("abs", 2)}
MATH_ISCLOSE = ("abs_tol", None)  # math.isclose takes its tolerances by keyword only


def _absolute_keyword(call: ast.Call) -> tuple[str, int | None] | None:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name not in ABSOLUTE:
        return None
    if name == "isclose" and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "math":
        return MATH_ISCLOSE
    return ABSOLUTE[name]


def implicit_tolerances(source: str) -> list[tuple[int, str]]:
    """(line, call) of each comparison in ``source`` that leaves its absolute tolerance to the default."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        spec = _absolute_keyword(node)
        if spec is None:
            continue
        keyword, position = spec
        named = {k.arg for k in node.keywords}
        if keyword in named or None in named:  # given, or passed on through **kwargs
            continue
        if position is not None and (len(node.args) > position
                                     or any(isinstance(a, ast.Starred) for a in node.args)):
            continue
        found.append((node.lineno, ast.get_source_segment(source, node) or ""))
    return found


def _cell_source(cell: dict) -> str:
    """A code cell's source with IPython's magics and shell lines blanked (they are not Python)."""
    lines = "".join(cell["source"]).splitlines()
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)


def sources() -> list[tuple[str, str]]:
    """(where, source) of every test module and every code cell and script of the book."""
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(ROOT.glob("tests/**/*.py"))]
    out += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(ROOT.glob("book/**/*.py"))]
    for path in sorted(ROOT.glob("book/**/*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        out += [(f"{path.relative_to(ROOT)} cell {i} ({cell.get('id')})", _cell_source(cell))
                for i, cell in enumerate(cells) if cell["cell_type"] == "code"]
    return out


def test_every_comparison_gives_its_absolute_tolerance():
    problems = [f"{where}, line {line}: {call}" for where, src in sources() for line, call in implicit_tolerances(src)]
    assert not problems, (f"{len(problems)} comparisons leave atol/abs to the default (numpy's 1e-8, pytest's "
                          "1e-12); give it, from a bound:\n  " + "\n  ".join(problems))


def test_the_scan_covers_tests_chapters_and_assignments():
    where = {w.split(" cell ")[0] for w, _ in sources()}
    assert "tests/test_tolerances.py" in where and "book/assignments/part1_key.py" in where
    assert "book/design_space.ipynb" in where and "book/assignments/part1.ipynb" in where


@pytest.mark.parametrize("src, flagged", [
    ("np.isclose(x, 0.2, rtol=1e-14)", True),  # a test at 5e-8, not 1e-14
    ("np.isclose(x, 0.2, rtol=1e-14, atol=0)", False),
    ("np.isclose(x, 0.2, 1e-14, 0.0)", False),
    ("numpy.allclose(a, b)", True),
    ("np.allclose(a, b, atol=1e-12)", False),
    ("np.testing.assert_allclose(a, b, rtol=1e-12)", True),
    ("assert_allclose(a, b, 1e-12, 0)", False),
    ("x == pytest.approx(0.2, rel=1e-12)", True),
    ("x == pytest.approx(0.2, rel=1e-12, abs=0)", False),
    ("x == approx(0.2, 1e-12, 0)", False),
    ("math.isclose(x, 0.2, rel_tol=1e-12)", True),
    ("math.isclose(x, 0.2, rel_tol=1e-12, abs_tol=0.0)", False),
    ("np.isclose(x, y, **tolerances)", False),
    ("f(np.isclose)", False),  # not a call of it
    ("%time np.isclose(x, y)", None),  # a magic line in a cell: blanked, not parsed
])
def test_the_scan_finds_what_it_should(src, flagged):
    if flagged is None:
        assert implicit_tolerances(_cell_source({"source": [src]})) == []
        return
    assert bool(implicit_tolerances(src)) is flagged, src
