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
    ("examples", "write_example", "fdars.datasets"): "an optional dependency (the book's tools): only the "
                                                    "growth example reads it",
    ("radius", "private_radius", "opendp.prelude"): "optional dependency: OpenDP's quantile, only for the "
                                                   "private choice of B'",
    ("bands", "plot_band", "matplotlib.pyplot"): MATPLOTLIB + " (a figure of its own when no axes are given)",
    ("_files", "stage_metadata", "plots"): PLOTS,
    ("_files", "FolderLock.__enter__", "fcntl"): POSIX,
    ("_files", "stage_outputs", "evidence"): PANDAS + " (`release` never imports it)",
    # settings
    ("config", "n_jobs", "joblib"): JOBLIB,
    ("config", "bonferroni_z", "scipy.special"): SCIPY,
    # privacy accounting
    ("privacy", "tradeoff", "scipy"): SCIPY,
    ("privacy", "_log_delta", "scipy"): SCIPY,
    ("privacy", "epsilon_from_mu", "scipy"): SCIPY,
    ("privacy", "mu_from_epsilon_delta", "scipy"): SCIPY,
    ("secure", "_opendp", "opendp.prelude"): "optional dependency: OpenDP is needed only for secure=True",
    # publishing a release
    ("publish", "_read_table", "pandas"): PANDAS,
    # the interactive figure
    ("plots", "ratio_explorer", "bokeh.layouts"): BOKEH,
    ("plots", "ratio_explorer", "bokeh.models"): BOKEH,
    ("plots", "ratio_explorer", "bokeh.plotting"): BOKEH,
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
    ("designs", "_Whitening.__init__", "scipy.linalg"): SCIPY,
    ("design_runs", "compare_designs", "pandas"): PANDAS,
    ("audit", "_mp", "mpmath"): "mpmath, the audit's extended-precision arithmetic (an optional "
                               "dependency: releases never need it)",
    ("audit", "_exact_box_mean", "fractions"): "fractions, exact means for the audit only",
    ("audit", "_exactly_in_range", "fractions"): "fractions, exact span test for the audit only",
    ("audit", "NoiseLaw._solve", "scipy.linalg"): "scipy.linalg (about 0.2 s more than the scipy.special "
                                                  "audit needs at import) only when a noise law whitens",
    # the claims
    ("claims", "_chi2_mix_bounds", "scipy.optimize"): CLAIMS_SCIPY,
    ("claims", "_chi2_mix_bounds", "scipy.stats"): CLAIMS_SCIPY,
    ("claims", "components_table", "scipy.stats"): CLAIMS_SCIPY,
    ("claims", "law_level_null_size", "scipy"): CLAIMS_SCIPY,
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


#: The package's layers, in the order they may import each other (dpfda/__init__.py).
LAYERS = ["maths", "mechanisms", "simulation", "trust", "report", "practice", "cli"]


def _layer_imports(path: Path) -> list[tuple[str, int]]:
    """(imported layer, line) of every relative import in ``path`` that names a layer."""
    rel = path.relative_to(PACKAGE).parts
    own = rel[0] if len(rel) == 2 else None
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        parts = node.module.split(".") if node.module else []
        if node.level == 1 and own is not None:
            out.append((own, node.lineno))
        elif parts and parts[0] in LAYERS:
            out.append((parts[0], node.lineno))
        elif not parts:
            out += [(a.name, node.lineno) for a in node.names if a.name in LAYERS]
    return out


def test_the_layers_import_only_the_layers_before_them():
    """A module of a layer imports from its own layer, earlier layers and the top level only."""
    assert sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()) == sorted(LAYERS)
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        if len(rel) != 2:
            continue
        for layer, line in _layer_imports(path):
            if LAYERS.index(layer) > LAYERS.index(rel[0]):
                wrong.append(f"{'/'.join(rel)}:{line} imports dpfda.{layer}")
    assert not wrong, wrong
