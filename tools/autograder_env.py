"""Make each otter autograder zip self-contained: dpfda's wheel, pinned requirements on Python 3.11, and
the assignment's key.

``python tools/autograder_env.py ASSIGNMENTS_DIR WHEEL KEYS_DIR`` (run by ``make assignments`` after
``otter assign``) writes ``ASSIGNMENTS_DIR/requirements.txt``: every package grading needs (dpfda's
run-time dependencies, sympy, otter-grader and the Jupyter kernel it runs notebooks with, and all
their dependencies), pinned to the versions of the environment running this script, then the line
``./files/<dpfda wheel>``. Into every ``*/autograder/*-autograder_*.zip`` it adds the wheel under
``files/``, that ``requirements.txt`` at the top, and an ``environment.yml`` (Python 3.11, the same
pip lines) in place of otter's, which installs otter only. Gradescope's setup builds the conda
environment from ``environment.yml`` (pip runs in the zip's folder, so ``./files/...`` resolves);
a plain ``python3.11 -m venv`` + ``pip install -r requirements.txt`` in the unpacked zip builds the
same environment without conda.

Into the zip of assignment NAME it also puts ``KEYS_DIR/NAME_key.py`` at its top (beside
``otter_config.json``, not under ``files/``, whose files otter copies into the submission's
folder): the key that the zip's grading plugin, ``dpfda.teaching.grader.Plugin``, reads and
deletes before the submission runs. No other zip gets it: each assignment's answers are in its
own zip only.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import sys
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

PYTHON = "3.11"
# What grading imports beyond dpfda: the assignments' sympy, otter and the kernel it runs
# notebooks in (otter's "grading" extra without pypdf, which only PDF export uses).
GRADING = ["sympy", "otter-grader", "ipykernel", "jupyter-client"]


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def pins(roots: list[str]) -> dict[str, str]:
    """Installed version of every distribution ``roots`` need, recursively (markers for this Python)."""
    found: dict[str, str] = {}
    stack = [Requirement(r) for r in roots]
    while stack:
        req = stack.pop()
        name = _canonical(req.name)
        if name in found:
            continue
        dist = md.distribution(req.name)
        found[name] = dist.version
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is None or sub.marker.evaluate({"extra": ""}):
                stack.append(sub)
    return found


def requirements(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    runtime = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
    runtime = [r for r in runtime if Requirement(r).marker is None]
    pinned = pins([Requirement(r).name for r in runtime] + GRADING)
    body = [f"{name}=={version}" for name, version in sorted(pinned.items())]
    return "\n".join(body + [f"./files/{wheel.name}"]) + "\n"


def environment(reqs: str) -> str:
    pip = "".join(f"      - {line}\n" for line in reqs.splitlines())
    return (f"name: otter-env\nchannels:\n  - conda-forge\ndependencies:\n  - python={PYTHON}\n"
            f"  - pip\n  - jupyter_server\n  - pip:\n{pip}")


def rewrite(zip_path: Path, wheel: Path, reqs: str, key: Path) -> None:
    with zipfile.ZipFile(zip_path) as z:
        members = {n: z.read(n) for n in z.namelist() if n not in ("environment.yml", "requirements.txt")}
    config = json.loads(members["otter_config.json"])
    named = [p["dpfda.teaching.grader.Plugin"]["key"] for p in config.get("plugins", [])
             if isinstance(p, dict) and "dpfda.teaching.grader.Plugin" in p]
    if named != [key.name]:
        raise SystemExit(f"{zip_path}: its otter_config.json names the key {named}, expected [{key.name!r}]")
    members["environment.yml"] = environment(reqs).encode()
    members["requirements.txt"] = reqs.encode()
    members[f"files/{wheel.name}"] = wheel.read_bytes()
    members[key.name] = key.read_bytes()
    tmp = zip_path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    tmp.replace(zip_path)


def main(folder: Path, wheel: Path, keys: Path) -> None:
    reqs = requirements(wheel)
    (folder / "requirements.txt").write_text(reqs)
    zips = sorted(folder.glob("*/autograder/*-autograder_*.zip"))
    if not zips:
        raise SystemExit(f"no autograder zip under {folder}")
    for zip_path in zips:
        name = zip_path.name.split("-autograder_")[0]
        key = keys / f"{name}_key.py"
        rewrite(zip_path, wheel, reqs, key)
        print(f"{zip_path}: + {wheel.name}, {len(reqs.splitlines()) - 1} pinned requirements, Python {PYTHON}, "
              f"+ {key.name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
