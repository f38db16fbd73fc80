"""Headless Chromium on loopback only, driven over the DevTools protocol (standard library only).

Three pieces used by ``test_rendering.py``:

* :class:`StaticServer` serves a folder (the built book) on ``127.0.0.1`` at a free port
  from a thread (``http.server.ThreadingHTTPServer``).
* :class:`Sentinel` is a fake HTTP proxy on ``127.0.0.1``: Chromium is told to send every
  request for another host to it. It records the request line and answers 403, so nothing
  leaves the machine, and a test can see what *would* have left.
* :class:`Chromium` starts Debian's ``chromium`` headless with ``--remote-debugging-pipe``
  (the protocol runs over file descriptors 3 and 4, NUL-terminated JSON messages: no port,
  no websocket library, no chromedriver) and talks to it with :meth:`Chromium.send`.

Network isolation, two independent layers: ``--host-resolver-rules`` makes every host
name except 127.0.0.1 unresolvable, and ``--proxy-server`` sends everything that is not
127.0.0.1 to the sentinel. Chromium's own background services (component updates, sign-in)
still try to call home at start-up; both layers stop them too, and they are not requests
of the page, which the test reads from the page's own ``Network`` events.

Every wait has a deadline, and :meth:`Chromium.close` kills the browser's whole process
group, so a failing or hanging test leaves no browser behind.
"""

from __future__ import annotations

import base64
import fcntl
import functools
import http.server
import json
import os
import shutil
import signal
import socketserver
import tempfile
import threading
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


class StaticServer:
    """Serve ``root`` on http://127.0.0.1:<free port>/ from a daemon thread."""

    def __init__(self, root: Path):
        handler = functools.partial(_QuietHandler, directory=str(root))
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
    """Chromium failed, answered with a protocol error, or did not answer in time."""


def chromium_flags(user_data_dir: str, proxy_port: int) -> list[str]:
    """Command-line flags: headless, no first-run chores, no network besides loopback."""
    return [
        "--headless",
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
        f"--user-data-dir={user_data_dir}",
        f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {LOOPBACK}",
        f"--proxy-server=http://{LOOPBACK}:{proxy_port}",
        f"--proxy-bypass-list={LOOPBACK}",
        "--remote-debugging-pipe",
        "about:blank",
    ]


def _high_fd(fd: int) -> int:
    """Move ``fd`` to a number >= 10 (close-on-exec), so dup2 onto 3 and 4 cannot collide."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Chromium:
    """One headless Chromium process and its DevTools pipe.

    ``send(method, params, session=...)`` runs a protocol command and returns its result;
    events are collected per session and read with :meth:`events` / :meth:`wait_event`.
    """

    def __init__(self, executable: str | None = None, proxy_port: int = 9, log_path: Path | None = None,
                 timeout: float = 30.0):
        self.executable = executable or shutil.which("chromium")
        if not self.executable:
            raise BrowserError("chromium is not installed (Debian package `chromium`: run `make browser-deps`)")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="dpfda-chromium-")
        self._log_path = log_path or Path(self._profile) / "chromium.log"
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._next_id = 0
        self._replies: dict[int, dict] = {}
        self._events: list[dict] = []
        self._closed_reason: str | None = None
        self._targets: dict[str, str] = {}  # session id -> target id

        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        to_browser_r, from_browser_w = _high_fd(to_browser_r), _high_fd(from_browser_w)
        argv = [self.executable, *chromium_flags(self._profile, proxy_port)]
        log_fd = os.open(self._log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self.pid = os.posix_spawn(
                self.executable,
                argv,
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, log_fd, 1),
                    (os.POSIX_SPAWN_DUP2, log_fd, 2),
                    (os.POSIX_SPAWN_DUP2, to_browser_r, 3),
                    (os.POSIX_SPAWN_DUP2, from_browser_w, 4),
                ],
                setsid=True,  # its own process group: close() kills renderers and helpers too
            )
        finally:
            for fd in (log_fd, to_browser_r, from_browser_w):
                os.close(fd)
        self._write = os.fdopen(to_browser_w, "wb", buffering=0)
        self._read = os.fdopen(from_browser_r, "rb", buffering=0)
        self._reader = threading.Thread(target=self._read_loop, name="cdp-reader", daemon=True)
        self._reader.start()
        self.version = self.send("Browser.getVersion")

    # --- the pipe -----------------------------------------------------------------------
    def _read_loop(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self._read.read(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._closed_reason = self._closed_reason or "chromium closed its DevTools pipe"
                    self._cond.notify_all()
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._cond:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self._events.append(message)
                self._cond.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict:
        with self._cond:
            if self._closed_reason:
                raise BrowserError(f"{method}: {self._closed_reason}; log: {self.log_tail()}")
            self._next_id += 1
            ident = self._next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            self._write.write(json.dumps(message).encode() + b"\0")
        except OSError as exc:
            raise BrowserError(f"{method}: cannot write to chromium ({exc}); log: {self.log_tail()}") from exc
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while ident not in self._replies:
                left = deadline - time.monotonic()
                if self._closed_reason or left <= 0:
                    why = self._closed_reason or f"no answer within {timeout or self.timeout:.0f} s"
                    raise BrowserError(f"{method}: {why}; log: {self.log_tail()}")
                self._cond.wait(left)
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def events(self, session: str | None = None, method: str | None = None) -> list[dict]:
        with self._lock:
            return [e for e in self._events
                    if (session is None or e.get("sessionId") == session) and (method is None or e["method"] == method)]

    def wait_event(self, method: str, session: str | None = None, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while True:
                for event in self._events:
                    if event["method"] == method and (session is None or event.get("sessionId") == session):
                        return event
                left = deadline - time.monotonic()
                if self._closed_reason or left <= 0:
                    why = self._closed_reason or f"not within {timeout or self.timeout:.0f} s"
                    raise BrowserError(f"waiting for {method}: {why}")
                self._cond.wait(left)

    # --- pages ----------------------------------------------------------------------------
    def open_page(self, width: int, height: int) -> str:
        """A new tab with a fixed viewport and no cache; returns its session id.

        Page, Runtime, Network and Log events of the tab are recorded. The cache is off so
        that every resource a page uses shows up in its own Network events.
        """
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self._targets[session] = target
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Network.setCacheDisabled", {"cacheDisabled": True}, session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
        return session

    def close_page(self, session: str) -> None:
        target = self._targets.pop(session, None)
        if target:
            self.send("Target.closeTarget", {"targetId": target})

    def navigate(self, session: str, url: str, timeout: float | None = None) -> None:
        """Load ``url`` and wait for its load event."""
        before = len(self.events(session, "Page.loadEventFired"))
        reply = self.send("Page.navigate", {"url": url}, session=session)
        if reply.get("errorText"):
            raise BrowserError(f"navigating to {url}: {reply['errorText']}")
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.events(session, "Page.loadEventFired")) <= before:
            if time.monotonic() > deadline:
                raise BrowserError(f"{url}: no load event within {timeout or self.timeout:.0f} s")
            time.sleep(0.05)

    def evaluate(self, session: str, expression: str, timeout: float | None = None):
        """Evaluate JavaScript in the page (promises awaited) and return its JSON value."""
        reply = self.send("Runtime.evaluate",
                          {"expression": expression, "awaitPromise": True, "returnByValue": True},
                          session=session, timeout=timeout)
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"script failed in the page: {text}")
        return reply["result"].get("value")

    def screenshot(self, session: str, path: Path) -> bytes:
        self.send("Page.bringToFront", session=session)
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data

    def log_tail(self, chars: int = 1500) -> str:
        try:
            return self._log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "<no log>"

    # --- shutdown -----------------------------------------------------------------------------
    def close(self) -> None:
        """Ask Chromium to quit; after 5 s kill its process group. Always reaps the process."""
        try:
            self.send("Browser.close", timeout=5)
        except BrowserError:
            pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            time.sleep(0.05)
        try:
            os.killpg(self.pid, signal.SIGKILL)  # helpers (zygote, renderers) share the group
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        for stream in (self._write, self._read):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- what a page did, for the tests of single pages (test_explorer.py, test_live_code.py) ----------
THEME_FIRST_VISIT = "Got invalid theme mode: . Resetting to auto."
"""pydata-sphinx-theme's console error on a first visit (empty localStorage): not the book's."""


def off_loopback(urls) -> list[str]:
    """The http(s)/ws(s) URLs among ``urls`` whose host is not 127.0.0.1."""
    from urllib.parse import urlsplit

    return [u for u in urls if urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urlsplit(u).hostname != LOOPBACK]


def page_problems(browser: Chromium, session: str, allowed_console=(THEME_FIRST_VISIT,)) -> dict:
    """Requests (and WebSockets) that left 127.0.0.1, JavaScript exceptions, console errors.

    Console errors are those logged at level "error" (except a missing favicon) and
    ``console.error``/``console.assert`` calls, less the messages in ``allowed_console``.
    """
    requests = [e["params"]["request"]["url"] for e in browser.events(session, "Network.requestWillBeSent")]
    sockets = [e["params"]["url"] for e in browser.events(session, "Network.webSocketCreated")]
    exceptions = [e["params"]["exceptionDetails"].get("exception", {}).get("description")
                  or e["params"]["exceptionDetails"].get("text", "?")
                  for e in browser.events(session, "Runtime.exceptionThrown")]
    console = [e["params"]["entry"]["text"] for e in browser.events(session, "Log.entryAdded")
               if e["params"]["entry"]["level"] == "error"
               and not e["params"]["entry"].get("url", "").endswith("/favicon.ico")]
    console += [" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"])
                for e in browser.events(session, "Runtime.consoleAPICalled") if e["params"]["type"] in {"error", "assert"}]
    return {"outside": off_loopback(requests + sockets), "exceptions": exceptions,
            "console": [c for c in console if c not in allowed_console],
            "requests": requests, "sockets": sockets}


# --- where the built book and the test artifacts are (DPFDA_HTML, DPFDA_ARTIFACTS override) -------
REPO_ROOT = Path(__file__).resolve().parents[2]
BUILT_HTML = Path(os.environ.get("DPFDA_HTML", REPO_ROOT / "_build" / "html")).resolve()
ARTIFACTS_DIR = Path(os.environ.get("DPFDA_ARTIFACTS", REPO_ROOT / "_build" / "test-artifacts")).resolve()
