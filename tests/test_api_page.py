"""The API reference page (book/api.md) documents every public name and is up to date.

The page is written by tools/api_page.py from dpfda.__all__ and the modules' __all__ of both
packages (the library dpfda and the book's dpfda_book); the book build (-W -n) then checks that
every docstring renders and every reference resolves.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import yaml

import dpfda

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "book" / "api.md").read_text(encoding="utf-8")


def documented() -> set[str]:
    return set(re.findall(r"^\.\. auto(?:function|class|exception|data|module):: (\S+)$", PAGE, flags=re.M))


FOLDERS = {"dpfda": ROOT / "dpfda", "dpfda_book": ROOT / "machinery" / "dpfda_book"}


def public_modules() -> list[str]:
    """Every public module and subpackage of both packages, dotted (e.g. "dpfda_book.simulation.engine")."""
    out = []
    for package, folder in FOLDERS.items():
        for p in folder.rglob("*.py"):
            parts = p.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and not any(part.startswith("_") for part in parts):
                out.append(".".join((package,) + parts))
    return sorted(out)


def test_the_committed_page_is_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("api_page", ROOT / "tools" / "api_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == PAGE, "book/api.md is out of date: run .venv/bin/python tools/api_page.py"


def test_every_name_of_dpfda_all_is_documented():
    names = documented()
    for name in dpfda.__all__:
        obj = getattr(dpfda, name)
        # a module of __all__ (imported on first use) is documented under its own path
        target = obj.__name__ if isinstance(obj, type(dpfda)) else f"dpfda.{name}"
        assert target in names, f"{target} is not on the API page"


def test_every_public_module_and_its_names_are_documented():
    names = documented()
    modules = public_modules()
    assert "dpfda_book.simulation.engine" in modules and "dpfda.trust.audit" in modules
    for mod_name in modules:
        mod = importlib.import_module(mod_name)
        assert mod_name in names, f"module {mod_name} has no section"
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if f"{mod_name}.{name}" in names:
                continue
            # otherwise documented where the very same object is documented
            owners = ["dpfda"] + modules
            same = [o for o in owners if f"{o}.{name}" in names
                    and getattr(importlib.import_module(o), name, None) is obj]
            assert same, f"{mod_name}.{name} is not on the API page"


def test_the_page_is_in_the_back_matter_and_autodoc_is_enabled():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    back = [p for p in toc["parts"] if p["caption"] == "Back matter"][0]
    files = [c["file"] for c in back["chapters"]]
    assert "book/api" in files and files[-1] == "book/references"
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    ext = config["sphinx"]["extra_extensions"]
    assert {"sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon"} <= set(ext)
