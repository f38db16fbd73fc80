"""Ending a run cleanly on SIGTERM, SIGHUP and SIGINT (used by :mod:`dpfda_book.cli`).

* :class:`SignalGuard` turns the first SIGTERM or SIGHUP into :class:`Terminated`
  and the first SIGINT into ``KeyboardInterrupt``, raised in the main thread, so that
  ``finally`` blocks run: joblib aborts its tasks and kills its workers,
  temporary files are removed, the output folder's lock is released.  It
  remembers the signal, so a handler's exception that Python swallowed (one
  raised inside a ``__del__``, say) is raised again at the next
  :meth:`SignalGuard.check`, and the exit code is 128 + the signal number
  (143 for SIGTERM, 129 for SIGHUP, 130 for SIGINT) whatever exception the run
  ended with.  Signals that come while the run is already stopping are recorded,
  not raised, so they cannot cut the clean-up short.
* SIGHUP (a closed terminal or ssh session) usually goes to the whole process
  group, and loky's resource trackers ignore SIGINT and SIGTERM but not SIGHUP:
  killed by it, they could not remove joblib's shared-memory files.  So the
  guard blocks SIGHUP in every thread, and with it in every process the run
  starts (a blocked signal stays blocked across fork and exec), and one thread
  of its own waits for it (``sigwait``) and hands it to the main thread's
  handler (``_thread.interrupt_main``).  The main process then stops as on
  SIGTERM: it terminates its workers, and the trackers clean up and exit when
  it has gone.  A run started with SIGHUP ignored (``nohup``) keeps ignoring it.
* :func:`shutdown_workers` stops joblib's reusable loky executor (and removes
  its ``joblib_memmapping_folder_*``), if this process started one.
* :func:`pause_for_test` is a test hook: with ``DPFDA_TEST_PAUSE_AT=<phase>``
  in the environment the run writes its process id to
  ``DPFDA_TEST_READY_FILE`` (and creates ``<that file>.<pid>``) when it
  reaches that phase and then waits to be signalled, so a test can interrupt it at a known point without guessing
  with sleeps.  Without the variable it does nothing.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "SignalGuard", "EXIT_CODES", "shutdown_workers", "pause_for_test"]

EXIT_CODES: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}
"""Exit code of a run ended by each signal (128 + the signal number)."""
_HAS_SIGHUP = hasattr(signal, "SIGHUP")  # not on Windows
if _HAS_SIGHUP:
    EXIT_CODES[signal.SIGHUP] = 129

PAUSE_ENV = "DPFDA_TEST_PAUSE_AT"
READY_ENV = "DPFDA_TEST_READY_FILE"
PAUSE_LIMIT = 300.0
"""Seconds a test pause waits for its signal before failing the run."""


class Terminated(BaseException):
    """SIGTERM, raised as an exception.

    A ``BaseException``, like ``KeyboardInterrupt``, so that ``except Exception``
    does not catch it.
    """


class SignalGuard:
    """Context manager: SIGTERM/SIGHUP/SIGINT become exceptions while it is active.

    Only the main thread can install signal handlers; elsewhere the guard is
    inactive (its ``active`` is False) and signals keep their handlers.  The
    previous handlers (and signal mask) are restored on exit.  SIGINT and SIGTERM
    handlers are installed even when the signal was ignored when Python started
    (a job started in the background by a shell ignores SIGINT), so that an
    explicit ``kill -INT`` still stops the run; an ignored SIGHUP (``nohup``)
    stays ignored.  SIGHUP is blocked and waited for by a thread of the guard
    (module notes), so the processes the run starts do not die of it.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self.active = False
        self._previous: dict = {}
        self._defer = 0
        self._hup_thread: threading.Thread | None = None
        self._hup_closing = False
        self._mask: set | None = None

    def __enter__(self) -> "SignalGuard":
        if threading.current_thread() is threading.main_thread():
            for sig in EXIT_CODES:
                if _HAS_SIGHUP and sig == signal.SIGHUP and signal.getsignal(sig) == signal.SIG_IGN:
                    continue  # nohup: the user asked for the run to outlive the terminal
                self._previous[sig] = signal.signal(sig, self._handle)
            if _HAS_SIGHUP and signal.SIGHUP in self._previous and hasattr(signal, "sigwait"):
                self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
                self._hup_thread = threading.Thread(target=self._wait_for_hup, daemon=True,
                                                    name="dpfda-sighup")
                self._hup_thread.start()
            self.active = True
        return self

    def _wait_for_hup(self) -> None:
        """The SIGHUP thread: hand each SIGHUP to the main thread's handler (module notes)."""
        while True:
            signal.sigwait({signal.SIGHUP})
            if self._hup_closing:
                return
            _thread.interrupt_main(signal.SIGHUP)

    def __exit__(self, *exc: object) -> None:
        if self._hup_thread is not None and self._hup_thread.ident is not None:
            self._hup_closing = True
            signal.pthread_kill(self._hup_thread.ident, signal.SIGHUP)  # wakes its sigwait only
            self._hup_thread.join()
            self._hup_thread = None
        if self._mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
            self._mask = None
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        self.active = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            return  # already stopping: let the clean-up finish
        self.received = signum
        if not self._defer:
            self._raise()

    def _raise(self) -> None:
        if self.received == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(f"received signal {signal.Signals(self.received or signal.SIGTERM).name}")

    def check(self) -> None:
        """Raise the exception of a signal that came but whose exception was lost."""
        if self.received is not None:
            self._raise()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Raise no exception for a signal inside the block.

        For a few renames that must happen together; after the block,
        the guard's ``received`` tells whether a signal came.
        """
        self._defer += 1
        try:
            yield
        finally:
            self._defer -= 1

    @property
    def exit_code(self) -> int | None:
        """128 + the signal number of the first signal, or None if none came."""
        return None if self.received is None else EXIT_CODES[self.received]


def shutdown_workers(*, kill: bool) -> None:
    """Shut down joblib's reusable loky executor, if this process has one.

    ``kill=True`` terminates busy workers (after an interruption); ``kill=False``
    lets idle workers exit.  Either way the call returns when they are gone, and
    the executor's temporary memmapping folders are removed.
    """
    module = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(module, "_executor", None)
    if executor is None:
        return
    terminate = getattr(executor, "terminate", None)  # joblib's MemmappingExecutor
    if terminate is not None:
        terminate(kill_workers=kill)
    else:
        executor.shutdown(wait=True, kill_workers=kill)


def pause_for_test(phase: str) -> None:
    """Test hook (module notes): at ``phase``, announce it and wait for a signal."""
    if os.environ.get(PAUSE_ENV) != phase:
        return
    ready = os.environ.get(READY_ENV)
    if not ready:
        raise RuntimeError(f"{PAUSE_ENV} is set but {READY_ENV} is not")
    tmp = f"{ready}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        fh.write(f"{os.getpid()}\n")
    open(f"{ready}.{os.getpid()}", "w").close()  # stays: which processes have paused
    os.replace(tmp, ready)  # the test never sees a half-written file
    deadline = time.monotonic() + PAUSE_LIMIT
    while time.monotonic() < deadline:
        time.sleep(0.05)
    raise RuntimeError(f"test pause at {phase!r}: no signal within {PAUSE_LIMIT:.0f} s")
