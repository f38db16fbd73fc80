"""The package's import rules, checked on the source (ast) of every module under dpfda/.

(a) No module imports a private name (one leading underscore, not a dunder such as
    ``__version__``) of another dpfda module: not by ``from .x import _y``, not by
    ``from dpfda.x import _y``, not as ``x._y`` on an imported dpfda module.  A module whose
    own name is private (``dpfda._validation``, ``dpfda._interrupt``) may be imported; the
    names it shares are public in it.  A helper two modules need is public in one of them.
(b) Every import inside a function is listed in :data:`INSIDE_FUNCTION_IMPORTS`, keyed by
    (module, function, imported module), with the reason it is not at the top of its module:
    a heavy or optional dependency loaded only where it is used, or a module that exists on
    POSIX only.  That table is the statement of how many imports inside functions remain
    and why each is there: the test fails on an import inside a function that it does not
    list, and on an entry whose import is gone, so it stays true.

Modules are named by their last dotted component (``cli``, ``plots``; ``dpfda`` for the
package itself), so the tables still hold after the modules move into subpackages; the
test checks that these short names stay unique.

:data:`KNOWN_TODO_PRIVATE` and :data:`KNOWN_TODO_INSIDE` hold violations in modules that
were being rewritten when this test was written, with the helper whose branch owns them;
each must still exist (clear it when the fix is merged), and nothing may be added to them.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dpfda"

SCIPY = "scipy (0.2–1.2 s to import) stays out of `import dpfda` and of a simulation worker"
PANDAS = "pandas (about 0.5 s to import) stays out of `import dpfda` and of a simulation worker"
MATPLOTLIB = "matplotlib (about 0.5 s to import) is loaded only to draw"
PLOTS = "dpfda's figures module imports matplotlib and pandas; loaded only to draw or tabulate"
JOBLIB = "joblib (about 0.1 s to import) is loaded only when a run is scheduled"
BOKEH = "optional dependency (extra `explorer`): only the interactive figure needs bokeh"
POSIX = "a POSIX-only module: at the top it would stop the module importing elsewhere"
CLAIMS_SCIPY = ("scipy.stats and scipy.optimize (about 0.7 s and 60 MiB) stay out of `reproduce`, whose "
                "figures import the claims' verdict marks through plots")

#: (module, function, imported module) -> why the import is inside the function.
INSIDE_FUNCTION_IMPORTS: dict[tuple[str, str, str], str] = {
    # the command line
    ("_scheduler", "connect_scheduler", "distributed"): "optional dependency (extra `dask`), only for --scheduler",
    ("_scheduler", "connect_scheduler", "asyncio"): ("only the --scheduler handshake uses asyncio "
                                                   "(about 35 ms to import)"),
    ("_scheduler", "available_cores", "joblib"): JOBLIB + " (`release` never imports it)",
    ("_reproduce", "run_reproduce", "joblib"): JOBLIB + " (`release` never imports it)",
    ("_reproduce", "run_reproduce", "matplotlib"): MATPLOTLIB + " (`release` never imports it)",
    ("_files", "stage_outputs", "plots"): PLOTS,
    ("_files", "stage_outputs", "matplotlib.pyplot"): MATPLOTLIB,
    ("_release", "_draw_release", "matplotlib.figure"): MATPLOTLIB + " (only `release --plot` draws)",
    ("examples", "_from_fdars", "fdars.datasets"): "an optional dependency (the book's tools): only the "
                                                    "growth and weather examples read it",
    ("radius", "private_radius", "opendp.prelude"): "optional dependency: OpenDP's quantile, only for the "
                                                   "private choice of B'",
    ("bands", "plot_band", "matplotlib.pyplot"): MATPLOTLIB + " (a figure of its own when no axes are given)",
    ("_files", "stage_metadata", "plots"): PLOTS,
    ("_files", "FolderLock.__enter__", "fcntl"): POSIX,
    ("ledger", "_lock", "fcntl"): POSIX,
    ("_files", "stage_outputs", "evidence"): PANDAS + " (`release` never imports it)",
    # settings
    ("config", "n_jobs", "joblib"): JOBLIB,
    ("config", "bonferroni_z", "scipy.special"): SCIPY,
    # theory
    ("theory", "quad_ratio_mean_and_accuracy", "scipy.integrate"): SCIPY,
    # privacy accounting
    ("privacy", "tradeoff", "scipy"): SCIPY,
    ("privacy", "_log_delta", "scipy"): SCIPY,
    ("privacy", "epsilon_from_mu", "scipy"): SCIPY,
    ("privacy", "mu_from_epsilon_delta", "scipy"): SCIPY,
    ("radius", "gdp_of_pure_dp", "scipy"): SCIPY,
    ("radius", "epsilon_of_gdp", "scipy"): SCIPY,
    ("secure", "_opendp", "opendp.prelude"): "optional dependency: OpenDP is needed only for secure=True",
    # reading the curves of a release
    ("reading", "_read_table", "pandas"): PANDAS,
    ("reading", "table_columns", "pandas"): PANDAS,
    # the interactive figure
    ("explorer", "ratio_explorer", "bokeh.layouts"): BOKEH,
    ("explorer", "ratio_explorer", "bokeh.models"): BOKEH,
    ("explorer", "ratio_explorer", "bokeh.plotting"): BOKEH,
    ("explorer", "explorer_html", "bokeh.embed"): BOKEH,
    ("explorer", "explorer_html", "bokeh.resources"): BOKEH,
    # the pipelines
    ("pipelines", "_pivoted_cholesky", "scipy.linalg"): SCIPY,
    ("pipelines", "_ResidualGP.__call__", "scipy.linalg"): SCIPY,
    # scheduling, tabulation and the results store of the simulations
    ("schedule", "_execute", "joblib"): JOBLIB,
    ("schedule", "_execute", "tqdm.auto"): "tqdm (about 0.1 s to import) only when a progress bar is asked for",
    ("schedule", "memory_limit", "resource"): POSIX + " (the ImportError is caught)",
    ("tabulate", "frame", "pandas"): PANDAS,
    ("store", "_compute", "joblib"): JOBLIB,
    # designs and audits
    ("whitening", "Whitening.__init__", "scipy.linalg"): SCIPY,
    ("design_runs", "compare_designs", "pandas"): PANDAS,
    ("recompute", "_mp", "mpmath"): "mpmath, the audit's extended-precision arithmetic (an optional "
                               "dependency: releases never need it)",
    ("recompute", "_exact_box_mean", "fractions"): "fractions, exact means for the audit only",
    ("recompute", "audit_covariance_summary", "fractions"): "fractions, exact second moments for the audit only",
    ("recompute", "_exactly_in_range", "fractions"): "fractions, exact span test for the audit only",
    ("recompute", "NoiseLaw._solve", "scipy.linalg"): "scipy.linalg (about 0.2 s more than the scipy.special "
                                                  "audit needs at import) only when a noise law whitens",
    # the assignments' autograder
    ("sandbox", "_limits", "resource"): POSIX + " (set in the grading child between fork and exec)",
    ("sandbox", "_child", "IPython.core.interactiveshell"): ("IPython (the kernel's shell, which otter "
                                                            "installs) only in the grading child process"),
    # the claims
    ("activation_bounds", "_chi2_mix_bounds", "scipy.optimize"): CLAIMS_SCIPY,
    ("activation_bounds", "_chi2_mix_bounds", "scipy.stats"): CLAIMS_SCIPY,
    ("claim_verdicts", "components_table", "scipy.stats"): CLAIMS_SCIPY,
    ("law_runs", "law_level_null_size", "scipy"): CLAIMS_SCIPY,
    ("law_runs", "pool_draws", "scipy.stats"): CLAIMS_SCIPY,
    ("law_components", "p_values", "scipy"): CLAIMS_SCIPY,
    ("law_components", "_plan", "scipy"): CLAIMS_SCIPY,
}

#: Private names imported from another module: (module, imported module, name) -> owner and fix.
KNOWN_TODO_PRIVATE: dict[tuple[str, str, str], str] = {

}

#: Imports inside functions with no reason to be there: (module, function, imported) -> owner and fix.
KNOWN_TODO_INSIDE: dict[tuple[str, str, str], str] = {

}


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()
ROOT = PACKAGE.name


def _short(dotted: str) -> str:
    """A module's name in the tables: the last component of a dpfda module, else the full name."""
    return dotted.rsplit(".", 1)[-1] if dotted in MODULES else dotted


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module a ``from … import`` reads from, relative levels resolved."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class _Scan(ast.NodeVisitor):
    """Private names taken from other dpfda modules, and imports inside functions, of one module."""

    def __init__(self, module: str):
        self.module = module
        self.scope: list[tuple[str, bool]] = []  # (name, is a function) of the enclosing defs
        self.bound: dict[str, str] = {}  # local name -> the dpfda module it is bound to
        self.private: list[tuple[tuple[str, str, str], int]] = []
        self.inside: list[tuple[tuple[str, str, str], int]] = []

    def _def(self, node, is_function: bool):
        self.scope.append((node.name, is_function))
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node):
        self._def(node, True)

    def visit_AsyncFunctionDef(self, node):
        self._def(node, True)

    def visit_ClassDef(self, node):
        self._def(node, False)

    def _imported(self, node, targets: list[str]) -> None:
        if any(is_function for _, is_function in self.scope):
            function = ".".join(name for name, _ in self.scope)
            for target in dict.fromkeys(targets):
                self.inside.append(((_short(self.module), function, target), node.lineno))

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name in MODULES:
                self.bound[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or ROOT
        self._imported(node, [_short(alias.name) for alias in node.names])

    def visit_ImportFrom(self, node):
        base = _absolute(self.module, node)
        targets = []
        for alias in node.names:
            full = f"{base}.{alias.name}"
            if full in MODULES:  # a submodule: `from . import plots`, `from . import _validation`
                self.bound[alias.asname or alias.name] = full
                targets.append(_short(full))
                continue
            targets.append(_short(base))
            if base in MODULES and base != self.module and _private(alias.name):
                self.private.append(((_short(self.module), _short(base), alias.name), node.lineno))
        self._imported(node, targets)

    def _resolve(self, node) -> str | None:
        """The dpfda module an expression names (``plots``, ``dpfda.report.plots``), or None."""
        if isinstance(node, ast.Name):
            return self.bound.get(node.id)
        if isinstance(node, ast.Attribute):
            outer = self._resolve(node.value)
            if outer is not None and f"{outer}.{node.attr}" in MODULES:
                return f"{outer}.{node.attr}"
        return None

    def visit_Attribute(self, node):
        owner = self._resolve(node.value)
        if owner is not None and owner != self.module and _private(node.attr):
            self.private.append(((_short(self.module), _short(owner), node.attr), node.lineno))
        self.generic_visit(node)


def _scan() -> tuple[dict, dict]:
    """(private-name imports, imports inside functions): key -> the places it occurs."""
    private: dict[tuple[str, str, str], list[str]] = {}
    inside: dict[tuple[str, str, str], list[str]] = {}
    for module, path in MODULES.items():
        scan = _Scan(module)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in tree.body:  # the bindings first, so attribute access anywhere sees them
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                scan.visit(node)
        scan.private.clear()
        scan.visit(tree)
        where = path.relative_to(PACKAGE.parent)
        for found, out in ((scan.private, private), (scan.inside, inside)):
            for key, line in found:
                out.setdefault(key, []).append(f"{where}:{line}")
    return private, inside


PRIVATE, INSIDE = _scan()


def test_the_short_module_names_are_unique():
    counts = Counter(_short(m) for m in MODULES)
    assert not [name for name, k in counts.items() if k > 1], counts
    assert "cli" in counts and "_validation" in counts  # the scan sees the package


def test_no_module_imports_a_private_name_of_another():
    new = {key: where for key, where in PRIVATE.items() if key not in KNOWN_TODO_PRIVATE}
    assert not new, ("private names imported from another dpfda module (make the helper public, "
                     f"or move it): {new}")


def test_every_import_inside_a_function_has_a_reason():
    listed = INSIDE_FUNCTION_IMPORTS.keys() | KNOWN_TODO_INSIDE.keys()
    new = {key: where for key, where in INSIDE.items() if key not in listed}
    assert not new, ("imports inside functions without a reason: move each to the top of its module, "
                     f"or add it with its reason to INSIDE_FUNCTION_IMPORTS: {new}")


def test_every_listed_import_still_exists():
    gone = sorted((INSIDE_FUNCTION_IMPORTS.keys() | KNOWN_TODO_INSIDE.keys()) - INSIDE.keys())
    gone += sorted(KNOWN_TODO_PRIVATE.keys() - PRIVATE.keys())
    assert not gone, f"listed here but no longer in the code (remove the entries): {gone}"


def test_no_import_is_both_allowed_and_a_todo():
    assert not INSIDE_FUNCTION_IMPORTS.keys() & KNOWN_TODO_INSIDE.keys()


def test_the_scan_finds_what_it_should():
    """The checks themselves: a private import, a private attribute, an import inside a method."""
    source = ("from ..report import plots\nfrom ..simulation.engine import _prepare\nimport dpfda.simulation.studies\n"
              "from .._validation import check_int\n"
              "class A:\n    def f(self):\n        import pandas as pd\n        from ..mechanisms import theory\n"
              "        return plots._fmt, dpfda.simulation.studies._RENAMED, theory.x\n")
    scan = _Scan("dpfda.cli._reproduce")
    scan.visit(ast.parse(source))
    assert sorted(key for key, _ in scan.private) == [("_reproduce", "engine", "_prepare"),
                                                       ("_reproduce", "plots", "_fmt"),
                                                       ("_reproduce", "studies", "_RENAMED")]
    assert sorted(key for key, _ in scan.inside) == [("_reproduce", "A.f", "pandas"), ("_reproduce", "A.f", "theory")]


#: The package's layers and what each may import: layer -> the layers it may import from (its
#: own layer always).  The real import graph, as tight as the code allows; it must be acyclic.
#: ``cli`` is a layer whether it is one module (dpfda/cli.py) or a package (dpfda/cli/).
LAYERS: dict[str, set[str]] = {
    "maths": set(),
    "mechanisms": {"maths"},
    "simulation": {"maths", "mechanisms"},
    "practice": {"maths", "mechanisms"},
    "trust": {"maths", "mechanisms", "simulation"},
    "report": {"maths", "mechanisms", "simulation"},
    "cli": {"maths", "mechanisms", "simulation", "report", "practice"},
    # the autograder of the book's assignments: reads no other layer (the keys import dpfda)
    "teaching": set(),
}

#: Top-level modules every layer may import: module -> the shared modules it may import.
#: They import no layer.  The package's own ``__init__`` and ``__main__`` are its front door
#: and may import anything.
SHARED: dict[str, set[str]] = {
    "_validation": set(),
    "_version": set(),
    "_interrupt": set(),
    "config": {"_validation"},
}


def _node(rel: tuple[str, ...]) -> str:
    """The layer or shared module a file (its path under dpfda/) belongs to."""
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def _package_imports(path: Path) -> list[tuple[str, int]]:
    """(imported layer or top-level module of dpfda, line) of every dpfda import in ``path``.

    A name imported from the package itself that is no module (``from .. import ftp``) is
    reported as ``dpfda``, which no layer may import.
    """
    rel = path.relative_to(PACKAGE).with_suffix("").parts
    here = list(rel[:-1]) if rel[-1] != "__init__" else list(rel[:-1])
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name.split(".")[1], node.lineno) for a in node.names
                    if a.name.startswith(ROOT + ".")]
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            if not (node.module == ROOT or (node.module or "").startswith(ROOT + ".")):
                continue
            parts = node.module.split(".")[1:]
        else:
            base = here[: len(here) - (node.level - 1)]
            parts = base + (node.module.split(".") if node.module else [])
        if parts:
            out.append((parts[0], node.lineno))
            continue
        for alias in node.names:
            top = PACKAGE / alias.name
            known = (top / "__init__.py").exists() or top.with_suffix(".py").exists()
            out.append((alias.name if known else ROOT, node.lineno))
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """A cycle of ``graph`` (a list of nodes, first = last), or [] when it has none."""
    state: dict[str, int] = {}  # 1 = on the path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_declared_layers_are_the_package_and_acyclic():
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert subpackages <= LAYERS.keys(), f"a subpackage that is no declared layer: {subpackages - LAYERS.keys()}"
    assert (subpackages | top) == (LAYERS.keys() | SHARED.keys()), (
        "every subpackage and top-level module is a layer or a shared module: "
        f"{(subpackages | top) ^ (LAYERS.keys() | SHARED.keys())}")
    for name, allowed in {**LAYERS, **SHARED}.items():
        assert name not in allowed and allowed <= LAYERS.keys() | SHARED.keys(), name
    for name, allowed in SHARED.items():
        assert allowed <= SHARED.keys(), f"shared module {name} may import no layer"
    assert not _cycle({**LAYERS, **SHARED}), _cycle({**LAYERS, **SHARED})


def test_every_import_between_layers_is_declared():
    """A module imports its own layer, the layers LAYERS allows it, and the shared modules."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).parts
        if rel in {("__init__.py",), ("__main__.py",)}:
            continue
        own = _node(rel)
        if own in LAYERS:
            allowed = LAYERS[own] | SHARED.keys() | {own}
        else:
            allowed = SHARED[own] | {own}
        for imported, line in _package_imports(path):
            if imported not in allowed:
                wrong.append(f"{'/'.join(rel)}:{line} ({own}) imports dpfda.{imported}")
    assert not wrong, wrong


def test_the_layer_check_sees_what_it_should():
    """The checker itself: a cycle is found, and the imports of a real module are read."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []
    found = {name for name, _ in _package_imports(PACKAGE / "report" / "law_runs.py")}
    assert "simulation" in found or "mechanisms" in found, found


#: Modules whose tests live in a file not named after them: module -> that file (relative to tests/).
TESTED_ELSEWHERE = {
    "_version": None,                 # the version string only, nothing to test
    "summation": "test_fpsum.py",     # sums whose rounding no curve steers, tried in every mechanism
    "curves": "test_data.py",         # the curve families, drawn and checked with the data
    "calibration": "test_designs_calibration.py",
    "schedule": "test_engine.py",     # scheduling of the engine's runs
    "_parsing": "test_cli.py",        # the command line's parser, tried through its commands
    "_files": "test_cli.py",          # the output folder's lock, staging and commit
    "_reproduce": "test_cli.py",      # `python -m dpfda reproduce`
    "_release": "test_release_cli.py",  # `python -m dpfda release` and `example`
    "_scheduler": "test_dask.py",     # the Dask scheduler's handshake
    "recompute": "test_audit.py",     # the audit's own recomputation, tried with the audit
    "gaussian": "test_mechanism.py",  # the Mechanism type, tried through every constructor
    "_checks": "test_broken.py",      # the trust modules' argument checks, tried by their refusals
}

TESTS = Path(__file__).resolve().parent


def test_every_module_has_a_test_module():
    """dpfda/**/NAME.py has tests/test_NAME.py (tests/test_PACKAGE_NAME.py inside a package)."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.stem
        if name in {"__init__", "__main__"}:
            continue
        bare = name.lstrip("_")
        candidates = [f"test_{bare}.py", f"test_{path.parent.name}_{bare}.py"]
        if name in TESTED_ELSEWHERE:
            candidates = [TESTED_ELSEWHERE[name]] if TESTED_ELSEWHERE[name] else []
            if not candidates:
                continue
        if not any((TESTS / c).exists() for c in candidates):
            missing.append(f"{path.relative_to(PACKAGE.parent)} (expected tests/{candidates[0]})")
    assert not missing, missing
    stale = sorted(set(TESTED_ELSEWHERE) - {p.stem for p in PACKAGE.rglob("*.py")})
    assert not stale, f"no longer modules of dpfda (remove from TESTED_ELSEWHERE): {stale}"


ISSUE = re.compile(r"issue #\d", re.IGNORECASE)

#: Files still holding an issue number, with the helper whose branch owns them (clear when merged).
KNOWN_TODO_ISSUE: dict[str, str] = {}


def test_no_file_of_the_package_names_an_issue():
    """Docstrings and comments say what the code does; its history is in CHANGELOG.md."""
    found = {str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
             if ISSUE.search(p.read_text(encoding="utf-8"))}
    assert not found - KNOWN_TODO_ISSUE.keys(), sorted(found - KNOWN_TODO_ISSUE.keys())
    assert not KNOWN_TODO_ISSUE.keys() - found, "fixed: remove from KNOWN_TODO_ISSUE"


def _fully_annotated(tree: ast.AST) -> bool:
    """Whether every function of ``tree`` (methods included) annotates its return and every
    parameter but ``self``/``cls``."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        params = a.posonlyargs + a.args + a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p]
        if node.returns is None or any(p.annotation is None and p.arg not in ("self", "cls")
                                       for p in params):
            return False
    return True


def test_mypy_requires_annotations_on_the_whole_package():
    """mypy checks every module with ``disallow_untyped_defs``, and every module is annotated.

    The setting is global in pyproject.toml (no override turns it off for a module), and a
    module with an unannotated function fails here even before mypy runs.
    """
    good = "class C:\n    def m(self, x: int, *a: str, **k: float) -> int: ...\n"
    assert _fully_annotated(ast.parse(good))
    for bad in ("def f(x) -> None: ...", "def f(x: int): ...", "def f(*a) -> None: ...",
                "class C:\n    async def m(self, *, k) -> None: ..."):
        assert not _fully_annotated(ast.parse(bad)), bad
    config = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    mypy = config["tool"]["mypy"]
    assert mypy.get("disallow_untyped_defs") is True and mypy.get("disallow_incomplete_defs") is True
    assert mypy.get("files") == ["dpfda"]
    for o in mypy.get("overrides", []):
        mods = o["module"] if isinstance(o["module"], list) else [o["module"]]
        ours = [m for m in mods if m == "dpfda" or m.startswith("dpfda.")]
        assert not ours or not ({"disallow_untyped_defs", "disallow_incomplete_defs", "ignore_errors"} & o.keys()), o
    unannotated = sorted(name for name, path in MODULES.items()
                         if not _fully_annotated(ast.parse(path.read_text(encoding="utf-8"))))
    assert not unannotated, f"modules with unannotated functions: {unannotated}"
