"""Headless Chromium on loopback only, driven by Playwright for Python.

Used by the browser tests (``test_rendering.py``, ``test_explorer.py``,
``test_live_code.py``, ``before_after.py``) and by the PDF printer (``tools/book_pdf.py``):

* :class:`StaticServer` serves a folder (the built book) on ``127.0.0.1`` at a free port
  from a thread (``http.server.ThreadingHTTPServer``).
* :class:`Sentinel` is a fake HTTP proxy on ``127.0.0.1``: Chromium is told to send every
  request for another host to it. It records the request line and answers 403, so nothing
  leaves the machine, and a test can see what *would* have left.
* :class:`Chromium` launches Debian's ``chromium`` (``/usr/bin/chromium``, Playwright's
  ``executable_path``: no browser is downloaded) with Playwright, and opens pages in it
  (:meth:`Chromium.open_page`), each a :class:`Tab` in a fresh browser context (its own
  cache and storage) that records the page's requests, responses, failed requests,
  WebSockets, JavaScript exceptions and console messages.

Network isolation, two independent layers: ``--host-resolver-rules`` makes every host
name except 127.0.0.1 unresolvable, and ``--proxy-server`` sends everything that is not
127.0.0.1 to the sentinel. Chromium's own background services are switched off by the
launch flags (``--disable-background-networking`` and the others below).

Every wait has a deadline, and :meth:`Chromium.close` closes the browser and stops
Playwright's driver, so a failing or hanging test leaves no browser behind.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import socketserver
import threading
from pathlib import Path
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"
#: Debian's Chromium (package ``chromium``, ``make browser-deps``).
CHROMIUM = "/usr/bin/chromium"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class StaticServer:
    """Serve ``root`` on http://127.0.0.1:<free port>/ from a daemon thread.

    ``extra`` maps URL prefixes (``"/_axe/"``) to other folders served alongside, such as
    axe-core's script for the accessibility check, so the book's folder is not touched.
    """

    def __init__(self, root: Path, extra: dict[str, Path] | None = None):
        extra = {prefix: Path(folder) for prefix, folder in (extra or {}).items()}

        class Handler(_QuietHandler):
            def translate_path(self, path):
                for prefix, folder in extra.items():
                    if path.startswith(prefix):
                        rel = path[len(prefix):].split("?", 1)[0].split("#", 1)[0]
                        return str(folder / rel)
                return super().translate_path(path)

        handler = functools.partial(Handler, directory=str(root))
        self._httpd = http.server.ThreadingHTTPServer((LOOPBACK, 0), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base = f"http://{LOOPBACK}:{self.port}/"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="book-server", daemon=True)

    def __enter__(self) -> StaticServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)


class _SentinelHandler(socketserver.StreamRequestHandler):
    timeout = 5

    def handle(self):
        try:
            line = self.rfile.readline(4096).decode("latin-1").strip()
        except OSError:
            line = "<unreadable>"
        self.server.seen.append(line)
        try:
            self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass


class Sentinel:
    """A proxy on loopback that forwards nothing: it records request lines and refuses."""

    def __init__(self):
        self._server = socketserver.ThreadingTCPServer((LOOPBACK, 0), _SentinelHandler)
        self._server.daemon_threads = True
        self._server.seen = []
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="sentinel-proxy", daemon=True)

    @property
    def seen(self) -> list[str]:
        return list(self._server.seen)

    def __enter__(self) -> Sentinel:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class BrowserError(RuntimeError):
    """Chromium failed, a script failed in the page, or something did not happen in time."""


def chromium_flags(proxy_port: int) -> list[str]:
    """Command-line flags: no first-run chores, no network besides loopback.

    Playwright adds ``--headless``, its own temporary profile and the DevTools pipe.
    """
    return [
        "--no-sandbox",  # we run as root in CI
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--force-color-profile=srgb",
        f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {LOOPBACK}",
        f"--proxy-server=http://{LOOPBACK}:{proxy_port}",
        f"--proxy-bypass-list={LOOPBACK}",
    ]


class Tab:
    """One page in its own browser context, and what it did (Playwright events)."""

    def __init__(self, context, width: int, height: int):
        self.context = context
        self.page = context.new_page()
        self.width, self.height = width, height
        self.requests: list[str] = []
        self.responses: dict[str, int] = {}
        self.failures: list[str] = []
        self.sockets: list[str] = []
        self.exceptions: list[str] = []
        self.console: list[tuple[str, str, str]] = []  # (type, text, url)
        page = self.page
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("response", lambda r: self.responses.__setitem__(r.url, r.status))
        page.on("requestfailed", lambda r: self.failures.append(f"{r.url}: {r.failure}"))
        page.on("websocket", lambda ws: self.sockets.append(ws.url))
        page.on("pageerror", lambda e: self.exceptions.append(e.stack or str(e)))
        page.on("console", lambda m: self.console.append((m.type, m.text, (m.location or {}).get("url", ""))))

    def console_errors(self) -> list[str]:
        """Messages logged at level error (less a missing favicon) and failed console.assert calls."""
        return [text for kind, text, url in self.console
                if kind in ("error", "assert") and not url.endswith("/favicon.ico")]


class Chromium:
    """Debian's Chromium launched by Playwright; pages are opened with :meth:`open_page`.

    The methods take a :class:`Tab` where the DevTools client took a session id:
    ``navigate``, ``evaluate`` (a JavaScript expression, promises awaited, its JSON value
    returned), ``screenshot`` and ``close_page``.
    """

    def __init__(self, executable: str | None = None, proxy_port: int = 9, log_path: Path | None = None,
                 timeout: float = 30.0):
        from playwright.sync_api import sync_playwright

        self.executable = executable or (CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium"))
        if not self.executable:
            raise BrowserError("chromium is not installed (Debian package `chromium`: run `make browser-deps`)")
        self.timeout = timeout
        self._log_path = log_path
        self._playwright = sync_playwright().start()
        try:
            self._browser = self._playwright.chromium.launch(
                executable_path=self.executable, headless=True, args=chromium_flags(proxy_port),
                timeout=timeout * 1000, env=dict(os.environ))
        except Exception as exc:
            self._playwright.stop()
            raise BrowserError(f"cannot launch {self.executable} with Playwright: {exc}") from exc
        self.version = self._browser.version
        self._tabs: list[Tab] = []
        if log_path is not None:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            Path(log_path).write_text(f"Chromium {self.version} ({self.executable}) launched by Playwright\n")

    # --- pages ----------------------------------------------------------------------------
    def open_page(self, width: int, height: int, **context_options) -> Tab:
        """A new page with a fixed viewport, in a fresh context (empty cache and storage)."""
        context = self._browser.new_context(viewport={"width": width, "height": height},
                                            device_scale_factor=1, **context_options)
        context.set_default_timeout(self.timeout * 1000)
        tab = Tab(context, width, height)
        self._tabs.append(tab)
        return tab

    def close_page(self, tab: Tab) -> None:
        if tab in self._tabs:
            self._tabs.remove(tab)
            try:
                tab.context.close()
            except Exception:  # noqa: BLE001 - already gone with the browser
                pass

    def navigate(self, tab: Tab, url: str, timeout: float | None = None) -> None:
        """Load ``url`` and wait for its load event."""
        try:
            tab.page.goto(url, wait_until="load", timeout=(timeout or self.timeout) * 1000)
        except Exception as exc:
            raise BrowserError(f"navigating to {url}: {exc}") from exc

    def evaluate(self, tab: Tab, expression: str, timeout: float | None = None):
        """Evaluate a JavaScript expression in the page (promises awaited); its JSON value."""
        tab.page.set_default_timeout((timeout or self.timeout) * 1000)
        try:
            return tab.page.evaluate(expression)
        except Exception as exc:
            raise BrowserError(f"script failed in the page: {exc}") from exc
        finally:
            tab.page.set_default_timeout(self.timeout * 1000)

    def screenshot(self, tab: Tab, path: Path, clip: dict | None = None) -> bytes:
        """A PNG of the viewport (or of ``clip``: x, y, width, height in CSS px), saved to ``path``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        options = {"clip": {k: clip[k] for k in ("x", "y", "width", "height")}} if clip else {}
        data = tab.page.screenshot(type="png", animations="disabled", caret="initial", **options)
        path.write_bytes(data)
        return data

    def log_tail(self, chars: int = 1500) -> str:
        try:
            return Path(self._log_path).read_text(errors="replace")[-chars:] if self._log_path else ""
        except OSError:
            return "<no log>"

    # --- shutdown -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close every page, the browser and Playwright's driver."""
        for tab in list(self._tabs):
            self.close_page(tab)
        try:
            self._browser.close()
        finally:
            self._playwright.stop()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- what a page did, for the tests of single pages (test_explorer.py, test_live_code.py) ----------
THEME_FIRST_VISIT = "Got invalid theme mode: . Resetting to auto."
"""pydata-sphinx-theme's console error on a first visit (empty localStorage): not the book's."""


def off_loopback(urls) -> list[str]:
    """The http(s)/ws(s) URLs among ``urls`` whose host is not 127.0.0.1."""
    return [u for u in urls if urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urlsplit(u).hostname != LOOPBACK]


def page_problems(browser: Chromium, tab: Tab, allowed_console=(THEME_FIRST_VISIT,)) -> dict:
    """Requests (and WebSockets) that left 127.0.0.1, JavaScript exceptions, console errors."""
    return {"outside": off_loopback(tab.requests + tab.sockets), "exceptions": list(tab.exceptions),
            "console": [c for c in tab.console_errors() if c not in allowed_console],
            "requests": list(tab.requests), "sockets": list(tab.sockets)}


# --- where the built book and the test artifacts are (DPFDA_HTML, DPFDA_ARTIFACTS override) -------
REPO_ROOT = Path(__file__).resolve().parents[2]
BUILT_HTML = Path(os.environ.get("DPFDA_HTML", REPO_ROOT / "_build" / "html")).resolve()
ARTIFACTS_DIR = Path(os.environ.get("DPFDA_ARTIFACTS", REPO_ROOT / "_build" / "test-artifacts")).resolve()
#: axe-core (npm package axe-core, installed by `make axe`): its axe.min.js is served beside the book.
AXE_DIR = Path(os.environ.get("DPFDA_AXE", REPO_ROOT / "_build" / "npm" / "node_modules" / "axe-core")).resolve()
