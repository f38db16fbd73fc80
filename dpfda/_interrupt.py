"""Ending a run cleanly on SIGTERM and SIGINT (used by :mod:`dpfda.cli`).

* :class:`SignalGuard` turns the first SIGTERM into :class:`Terminated` and the
  first SIGINT into ``KeyboardInterrupt``, raised in the main thread, so that
  ``finally`` blocks run: joblib aborts its tasks and kills its workers,
  temporary files are removed, the output folder's lock is released.  It
  remembers the signal, so a handler's exception that Python swallowed (one
  raised inside a ``__del__``, say) is raised again at the next
  :meth:`SignalGuard.check`, and the exit code is 128 + the signal number
  (143 for SIGTERM, 130 for SIGINT) whatever exception the run ended with.
  Signals that come while the run is already stopping are recorded, not
  raised, so they cannot cut the clean-up short.
* :func:`shutdown_workers` stops joblib's reusable loky executor (and removes
  its ``joblib_memmapping_folder_*``), if this process started one.
* :func:`pause_for_test` is a test hook: with ``DPFDA_TEST_PAUSE_AT=<phase>``
  in the environment the run writes its process id to
  ``DPFDA_TEST_READY_FILE`` (and creates ``<that file>.<pid>``) when it
  reaches that phase and then waits to be signalled, so a test can interrupt it at a known point without guessing
  with sleeps.  Without the variable it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

__all__ = ["Terminated", "SignalGuard", "EXIT_CODES", "shutdown_workers", "pause_for_test"]

EXIT_CODES: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}
"""Exit code of a run ended by each signal (128 + the signal number)."""

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
    """Context manager: SIGTERM/SIGINT become exceptions while it is active.

    Only the main thread can install signal handlers; elsewhere the guard is
    inactive (:attr:`active` is False) and signals keep their handlers.  The
    previous handlers are restored on exit.  Handlers are installed even when
    the signal was ignored when Python started (a job started in the
    background by a shell ignores SIGINT), so that an explicit
    ``kill -INT`` still stops the run.
    """

    def __init__(self):
        self.received: int | None = None
        self.active = False
        self._previous: dict = {}
        self._defer = 0

    def __enter__(self) -> "SignalGuard":
        if threading.current_thread() is threading.main_thread():
            for sig in EXIT_CODES:
                self._previous[sig] = signal.signal(sig, self._handle)
            self.active = True
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
        self.active = False

    def _handle(self, signum, frame) -> None:
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
    def deferred(self):
        """Raise no exception for a signal inside the block.

        For a few renames that must happen together; after the block,
        :attr:`received` tells whether a signal came.
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
