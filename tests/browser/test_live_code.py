"""Live Code in the built book, end to end, with nothing leaving 127.0.0.1.

The test starts a Jupyter server of this environment on 127.0.0.1 (a random token, only the
book's origin allowed), serves ``_build/html`` on another loopback port, and opens the growth
chapter in headless Chromium with ``?thebe-server=...&thebe-token=...`` (see
``_ext/thebe_local.py``), so that the page's Live Code talks to that server instead of Binder.
It then does what a reader does: clicks "Live Code", waits for the kernel, types code into a
cell and runs it. The code imports ``dpfda``, releases a private mean with FTP, draws it with
matplotlib and shows a LaTeX formula. The test checks that

* Thebe's JavaScript came from the book (``thebe/index.js`` on our server), not a CDN;
* the figure (a PNG image) and the formula, typeset by the book's own MathJax 3 through
  ``thebe/mathjax2-shim.js``, appear in the cell's output;
* every request of the page went to 127.0.0.1 (HTTP and WebSocket), no JavaScript exception
  was thrown and no error was logged by the book or by Thebe.

Screenshot: ``_build/test-artifacts/live-code.png``. Marker ``browser`` (``make test-browser``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from _browser import (
    ARTIFACTS_DIR,
    BUILT_HTML,
    CHROMIUM,
    LOOPBACK,
    REPO_ROOT,
    Chromium,
    Sentinel,
    StaticServer,
    page_problems,
)

pytestmark = pytest.mark.browser

ROOT, HTML, ARTIFACTS = REPO_ROOT, BUILT_HTML, ARTIFACTS_DIR
PAGE = "book/growth.html"
# The first live cell a reader sees: not one whose source is folded away (hide-input puts
# it in a closed <details>), where the output would not be shown or typeset.
SHOWN_CELL = ("[...document.querySelectorAll('.thebe-cell')]"
              ".find(c => !c.closest('details:not([open])'))")
WIDTH, HEIGHT = 1280, 1800

CODE = r"""import numpy as np, matplotlib.pyplot as plt, dpfda
from IPython.display import Math, display
from dpfda_book.simulation import models
rng = np.random.default_rng(0)
space = dpfda.LegendreSpace(4)
grid = dpfda.uniform_grid(20)
curves = models.polynomial_curves(200, 4, rng)
rel = dpfda.ftp(curves.values(grid), grid, space, 1.1, 1.0, rng)
t = np.linspace(0, 1, 101)
plt.plot(t, curves.mean_values(t), label="mean"); plt.plot(t, rel(t), label="FTP release"); plt.legend()
plt.show()
display(Math(r"\sigma = \frac{2B'}{n\mu} = %.4f" % rel.noise_scale))"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


class JupyterServer:
    """``python -m jupyter_server`` on 127.0.0.1 in its own process group; killed on exit."""

    def __init__(self, origin: str, root: Path, log: Path, runtime_dir: Path):
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.base = f"http://{LOOPBACK}:{self.port}/"
        argv = [sys.executable, "-m", "jupyter_server", "--no-browser", f"--ServerApp.ip={LOOPBACK}",
                f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.allow_origin={origin}",
                f"--ServerApp.root_dir={root}"]
        if os.geteuid() == 0:  # CI and these machines run as root
            argv.append("--allow-root")
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "wb")
        # Its cookie secret and connection files go to a temporary folder, not the user's.
        env = dict(os.environ, PYTHONUNBUFFERED="1", JUPYTER_RUNTIME_DIR=str(runtime_dir))
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, env=env)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.base}api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"jupyter server did not start; log: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.3)

    def kernels(self) -> list:
        with urllib.request.urlopen(f"{self.base}api/kernels?token={self.token}", timeout=5) as r:
            return json.loads(r.read())

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        self._log.close()


def wait_for(browser: Chromium, session: str, expression: str, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = browser.evaluate(session, expression)
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")


def test_live_code_runs_a_cell_on_a_local_server(tmp_path):
    page = HTML / PAGE
    assert page.is_file(), f"{page} does not exist: build the book first (make book)"
    assert (HTML / "thebe" / "index.js").is_file(), "thebe/index.js is missing: Thebe is not served by the book"
    executable = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    assert executable, "Debian's chromium is not installed: run `make browser-deps`"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with Sentinel() as sentinel, StaticServer(HTML) as site:
        origin = site.base.rstrip("/")
        server = JupyterServer(origin, ROOT / "book", ARTIFACTS / "jupyter-server.log", tmp_path / "runtime")
        try:
            with Chromium(executable, proxy_port=sentinel.port, log_path=ARTIFACTS / "chromium-live.log",
                          timeout=60) as browser:
                session = browser.open_page(WIDTH, HEIGHT)
                query = urllib.parse.urlencode({"thebe-server": server.base, "thebe-token": server.token})
                browser.navigate(session, f"{site.base}{PAGE}?{query}", timeout=60)
                assert browser.evaluate(session, "window.DPFDA_THEBE_SERVER || null") == server.base

                # The reader's click on "Live Code" (the launch menu's button calls initThebe()).
                clicked = browser.evaluate(session, """(() => {
                    const b = document.querySelector('[onclick^="initThebe"]');
                    if (!b) return null; b.click(); return b.className; })()""")
                assert clicked, "no Live Code button on the page"
                wait_for(browser, session, "typeof window.thebe !== 'undefined' && !!window.thebe.notebook",
                         60, "Thebe to load from the book")
                wait_for(browser, session, """(() => { const s = window.thebe && window.thebe.session;
                    return !!(s && s.kernel && s.kernel.status === 'idle'); })()""", 120, "the kernel to be idle")

                # Type the code into the first live cell and press its run button.
                ran = browser.evaluate(session, """((code) => {
                    const cell = %s;
                    const cm = cell && cell.querySelector('.CodeMirror');
                    if (!cm || !cm.CodeMirror) return 'no CodeMirror editor in the first live cell';
                    cm.CodeMirror.setValue(code);
                    const run = cell.querySelector('.thebe-run-button');
                    if (!run) return 'no run button';
                    run.click();
                    return 'ok';
                })(%s)""" % (SHOWN_CELL, json.dumps(CODE)))
                assert ran == "ok", ran
                out = wait_for(browser, session, """(() => {
                    // Thebe renders outputs as JupyterLab output areas (jp-*), the static page
                    // has none of its own, and this chapter has no other image or LaTeX cell
                    // output: look for them in the whole page (a cell without a static output
                    // gets its live output area outside the editor's container).
                    const o = document;
                    if (!o.querySelector('.jp-OutputArea-output')) return null;
                    const img = o.querySelector('.jp-RenderedImage img[src^="data:image/png"]');
                    const math = o.querySelector('.jp-RenderedLatex mjx-container');
                    const err = o.querySelector('[data-mime-type="application/vnd.jupyter.error"]');
                    if (err) return {error: err.innerText.slice(0, 2000)};
                    if (!(img && img.complete && img.naturalWidth > 0 && math)) return null;
                    return {img: [img.naturalWidth, img.naturalHeight], math: math.textContent.slice(0, 200)};
                })()""", 120, "the cell's figure and formula")
                assert "error" not in out, out["error"]
                assert out["img"][0] > 100 and out["img"][1] > 100, out
                browser.evaluate(session, f"({SHOWN_CELL}).scrollIntoView({{block: 'start'}})")
                time.sleep(0.5)
                browser.screenshot(session, ARTIFACTS / "live-code.png")

                problems = page_problems(browser, session)
                requests, sockets = problems["requests"], problems["sockets"]
                thebe_js = [u for u in requests if u.split("?")[0].endswith("/thebe/index.js")]
                assert thebe_js and all(u.startswith(site.base) for u in thebe_js), thebe_js
                assert any(u.startswith(site.base) and "mathjax2-shim.js" in u for u in requests), \
                    "the live formula was not typeset through the book's MathJax shim"
                assert not problems["outside"], f"requests left 127.0.0.1: {problems['outside']}"
                assert sockets and all(urllib.parse.urlsplit(u).port == server.port for u in sockets), sockets
                assert not problems["exceptions"], problems["exceptions"]
                assert not problems["console"], problems["console"]
                assert server.kernels(), "no kernel was started on the local server"
        finally:
            server.close()
