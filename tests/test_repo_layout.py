"""`_ext/` holds the Sphinx extensions the book loads; the scripts the build runs are in `tools/`.

Every module in `_ext/` defines ``setup(app)``, is listed under ``sphinx: local_extensions`` in
_config.yml, has no ``__main__`` block and is run by no Makefile recipe. Every script in `tools/`
has a ``__main__`` block, no ``setup``, is listed in tools/README.md, and is run by a Makefile
recipe or by a test; every script a recipe runs exists, in `tools/`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "_ext"
TOOLS = ROOT / "tools"


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _defines_setup(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.FunctionDef) and node.name == "setup" and len(node.args.args) == 1
               for node in tree.body)


def _has_main_block(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body)


def _recipe_lines() -> list[str]:
    return [line for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
            if line.startswith("\t")]


def _local_extensions() -> dict[str, str]:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return config["sphinx"]["local_extensions"]


def test_every_module_in_ext_is_a_loaded_sphinx_extension_and_no_script():
    modules = sorted(EXT.glob("*.py"))
    assert modules
    loaded = _local_extensions()
    for path in modules:
        tree = _tree(path)
        assert _defines_setup(tree), f"{path.name} defines no setup(app): a script belongs in tools/"
        assert not _has_main_block(tree), f"{path.name} has a __main__ block: its script part belongs in tools/"
        assert loaded.get(path.stem, "").rstrip("/") == "_ext", f"{path.name} is not in _config.yml's local_extensions"
    assert sorted(loaded) == sorted(p.stem for p in modules)  # and nothing listed there is missing


def test_no_makefile_recipe_runs_a_file_of_ext():
    ran = [line.strip() for line in _recipe_lines() if re.search(r"_ext/\S*\.py\b", line)]
    assert ran == [], ran


def test_every_script_a_recipe_runs_is_in_tools():
    scripts = {m for line in _recipe_lines() for m in re.findall(r"python\s+(\S+\.py)\b", line)}
    assert scripts, "no recipe runs a Python script"
    for rel in scripts:
        assert rel.startswith("tools/") and (ROOT / rel).is_file(), rel


def test_every_tool_is_a_script_run_by_the_makefile_or_a_test():
    scripts = sorted(TOOLS.glob("*.py"))
    assert scripts
    recipes = "\n".join(_recipe_lines())
    tests = {path: path.read_text(encoding="utf-8") for path in (ROOT / "tests").rglob("*.py")}
    listed = (TOOLS / "README.md").read_text(encoding="utf-8")
    for path in scripts:
        tree = _tree(path)
        assert _has_main_block(tree) and not _defines_setup(tree), path.name
        assert f"`{path.name}`" in listed, f"tools/README.md does not list {path.name}"
        by_make = f"tools/{path.name}" in recipes
        by_test = [t for t, text in tests.items() if t.name != Path(__file__).name and (
            f"tools/{path.name}" in text or f'"tools" / "{path.name}"' in text
            or ('"tools"' in text and re.search(rf"^\s*import {path.stem}\b", text, re.M)))]
        assert by_make or by_test, f"tools/{path.name} is run by no Makefile recipe and no test"
