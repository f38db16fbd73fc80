"""The two packages in numbers: lines of each, what a release loads, the names dpfda exports, cycles.

    python benchmarks/packages.py            # a Markdown report
    python benchmarks/packages.py --json     # the same as JSON

* lines: every ``.py`` file of ``dpfda/`` (the library) and ``machinery/dpfda_book/`` (the
  book's machinery), all lines and the non-blank ones, by layer (subpackage) and in total;
* what a release needs: the library's modules (and their lines) that a fresh interpreter
  has imported after the one release path (``dpfda.FTP`` of a ``dpfda.ReleaseSpec``) of a
  small dataset and its JSON record (``SpecifiedRelease.record``), and whether any module of ``dpfda_book`` was
  imported (never);
* ``dpfda.__all__``, the public names of the library;
* the import graph: modules of both packages with an edge for every import (at the top of a
  module, inside a function or under ``if TYPE_CHECKING:``), and its cycles (strongly
  connected components of more than one module); ``tests/test_architecture.py`` holds the
  same graph and fails on a cycle it does not list.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"dpfda": ROOT / "dpfda", "dpfda_book": ROOT / "machinery" / "dpfda_book"}

RELEASE = r"""
import json, sys
import numpy as np
import dpfda
spec = dpfda.ReleaseSpec(space="legendre:4", grid=dpfda.uniform_grid(12), lower=-1, upper=1, mu=1.0,
                         secure=False)
X = np.random.default_rng(0).uniform(-1, 1, (50, 12))
dpfda.FTP(spec).release(X, np.random.default_rng(1)).record(np.linspace(0, 1, 5))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("dpfda", "dpfda_book"))))
"""


def modules() -> dict[str, Path]:
    out = {}
    for folder in PACKAGES.values():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def lines(path: Path) -> tuple[int, int]:
    text = path.read_text(encoding="utf-8").splitlines()
    return len(text), sum(1 for line in text if line.strip())


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and (PACKAGES[parts[0]] / parts[1]).is_dir():
        return f"{parts[0]}.{parts[1]}"
    return f"{parts[0]} (top level)"


def line_counts(mods: dict[str, Path]) -> dict:
    out: dict = {}
    for name, path in mods.items():
        total, code = lines(path)
        pkg = out.setdefault(name.split(".")[0], {"lines": 0, "non_blank": 0, "modules": 0, "layers": {}})
        layer = pkg["layers"].setdefault(layer_of(name), {"lines": 0, "non_blank": 0, "modules": 0})
        for d in (pkg, layer):
            d["lines"] += total
            d["non_blank"] += code
            d["modules"] += 1
    return out


def imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in mods}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in mods else base)
    return {m for m in out if m in mods} - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles: the strongly connected components of more than one module, each sorted."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    nodes = sorted(set(graph).union(*graph.values()))
    edges = [(nodes.index(v), nodes.index(w)) for v, ws in graph.items() for w in ws]
    size = len(nodes)
    matrix = coo_matrix(([1] * len(edges), tuple(zip(*edges)) or ((), ())), shape=(size, size))
    _, label = connected_components(matrix, directed=True, connection="strong")
    return [c for c in ([v for v, g in zip(nodes, label) if g == k] for k in sorted(set(label))) if len(c) > 1]


def report() -> dict:
    mods = modules()
    doors = set(PACKAGES) | {f"{p}.__main__" for p in PACKAGES}
    graph = {m: imports(m, p, mods) - doors for m, p in mods.items() if m not in doors}
    env_path = ":".join(str(p.parent) for p in PACKAGES.values())
    proc = subprocess.run([sys.executable, "-c", RELEASE], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})
    loaded = json.loads(proc.stdout)
    import dpfda

    return {
        "lines": line_counts(mods),
        "release": {"modules": loaded, "book_modules": [m for m in loaded if m.startswith("dpfda_book")],
                    "lines": sum(lines(mods[m])[0] for m in loaded if m in mods)},
        "dpfda_all": sorted(dpfda.__all__, key=str.lower),
        "import_edges": sum(len(v) for v in graph.values()),
        "cycles": cycles(graph),
    }


def markdown(r: dict) -> str:
    out = ["## Lines of the two packages", "", "| package / layer | modules | lines | non-blank |", "|---|---|---|---|"]
    for pkg, d in r["lines"].items():
        out.append(f"| **{pkg}** | {d['modules']} | {d['lines']} | {d['non_blank']} |")
        for layer, e in sorted(d["layers"].items()):
            out.append(f"| {layer} | {e['modules']} | {e['lines']} | {e['non_blank']} |")
    rel = r["release"]
    out += ["", "## What a release loads", "",
            f"`dpfda.FTP(spec).release` and its record import {len(rel['modules'])} modules of dpfda "
            f"({rel['lines']} lines) "
            f"and {len(rel['book_modules'])} of dpfda_book: " + ", ".join(f"`{m}`" for m in rel["modules"]) + ".",
            "", f"## The public names of dpfda ({len(r['dpfda_all'])})", "",
            ", ".join(f"`{n}`" for n in r["dpfda_all"]) + ".", "", "## The import graph", "",
            f"{r['import_edges']} imports between the modules of both packages (TYPE_CHECKING and "
            f"function-level imports counted); cycles: "
            + ("none." if not r["cycles"] else "; ".join(" ↔ ".join(c) for c in r["cycles"]) + ".")]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = ap.parse_args(argv)
    r = report()
    print(json.dumps(r, indent=1) if args.json else markdown(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
