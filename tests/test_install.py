"""A plain `pip install .` gives the library alone, working, without the book's package or tools.

A fresh virtual environment (no system site-packages) gets `pip install .` of a copy of
the files git tracks, as a fresh clone would hold them; pip's cache makes it quick after
the first time. In that environment `dpfda.ftp` runs (numpy noise and OpenDP's), the
README's quickstart runs verbatim, the audit imports, and the book's own package
(dpfda_book, with joblib and tqdm), Jupyter Book, Sphinx, myst-nb, nbformat and the book's
data package are absent: the library does not need them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from _readme import ROOT, quickstart_blocks, write_heights_csv

INSTALL_TIMEOUT = 1200

CHECK = r"""
import importlib.util, sys
import numpy as np
import dpfda
grid, space = dpfda.uniform_grid(6), dpfda.LegendreSpace(3)
X = np.tile(space.at(grid).values([0.5, 0.2, 0.0]), (40, 1))
rel = dpfda.ftp(X, grid, space, radius=1.0, mu=1.0, rng=np.random.default_rng(0))
assert rel.coef.shape == (3,) and abs(rel.noise_scale - 0.05) < 1e-15
safe = dpfda.ftp(X, grid, space, radius=1.0, mu=1.0, secure=True)
assert safe.secure and np.isfinite(safe.values).all()
book_tools = ["jupyter_book", "sphinx", "myst_nb", "nbformat", "nbval", "ipykernel", "fdars", "sphinx_proof",
              "dpfda_book", "joblib", "tqdm"]
present = [m for m in book_tools if importlib.util.find_spec(m) is not None]
assert not present, present
import pkgutil
layers = sorted(m.name for m in pkgutil.iter_modules(dpfda.__path__))
assert layers == ["__main__", "_version", "cli", "maths", "mechanisms", "practice", "trust", "validation"], layers
import dpfda.trust.audit
print(dpfda.__file__)
"""


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True, capture_output=True).stdout
    return [f for f in out.decode().split("\0") if f and (ROOT / f).is_file()]


@pytest.mark.slow
def test_plain_pip_install_runs_ftp_and_the_quickstart_without_book_tools(tmp_path):
    repo = tmp_path / "repo"
    for rel in tracked_files():
        if rel.startswith(("book/", "tests/", "benchmarks/", "_ext/", "tools/")):
            continue  # not part of the package; a clone has them, pip ignores them
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, repo / rel)
    # Files of this change that git does not track yet are copied too (the package's modules).
    for path in (ROOT / "dpfda").glob("*.py"):
        shutil.copy2(path, repo / "dpfda" / path.name)
    env_dir = tmp_path / "env"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "DPFDA_QUICK")}
    env["MPLBACKEND"] = "Agg"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, env=env, timeout=300)
    python = str(env_dir / "bin" / "python")
    proc = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "."], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    work = tmp_path / "work"  # outside the copy: the installed package is imported, not the source
    work.mkdir()
    proc = subprocess.run([python, "-c", CHECK], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert str(env_dir) in proc.stdout  # site-packages of the new environment

    write_heights_csv(work)  # written by this process (fdars is not in the new environment)
    code = quickstart_blocks()["python"][0]
    proc = subprocess.run([python, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((work / "release.json").read_text())
    assert record["secure"] is True and record["n"] == 93
