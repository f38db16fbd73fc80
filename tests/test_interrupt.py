"""dpfda_book.interrupt: signals as exceptions, the exit codes, and the test pause hook."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from dpfda_book import interrupt as _interrupt
from dpfda_book.interrupt import EXIT_CODES, SignalGuard, Terminated, pause_for_test, shutdown_workers

POSIX = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="SIGHUP is POSIX only")


def test_exit_codes_are_128_plus_the_signal_number():
    assert EXIT_CODES[signal.SIGINT] == 128 + signal.SIGINT
    assert EXIT_CODES[signal.SIGTERM] == 128 + signal.SIGTERM
    assert all(code == 128 + int(sig) for sig, code in EXIT_CODES.items())


def test_terminated_is_not_an_exception():
    """``except Exception`` must not swallow a SIGTERM."""
    assert issubclass(Terminated, BaseException) and not issubclass(Terminated, Exception)


def test_sigterm_raises_terminated_and_sets_the_exit_code():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated, match="SIGTERM"):
        with SignalGuard() as guard:
            assert guard.active and guard.exit_code is None
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
    assert guard.received == signal.SIGTERM and guard.exit_code == 143
    assert not guard.active and signal.getsignal(signal.SIGTERM) == before


def test_sigint_raises_keyboard_interrupt():
    with pytest.raises(KeyboardInterrupt):
        with SignalGuard() as guard:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
    assert guard.exit_code == 130


def test_a_deferred_signal_is_recorded_and_raised_at_check():
    with SignalGuard() as guard:
        with guard.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
        assert guard.received == signal.SIGTERM  # recorded, not raised inside the block
        with pytest.raises(Terminated):
            guard.check()
        os.kill(os.getpid(), signal.SIGTERM)  # a second signal while stopping is ignored
        for _ in range(1000):
            pass
    assert guard.exit_code == 143


def test_check_does_nothing_without_a_signal():
    with SignalGuard() as guard:
        guard.check()
    assert guard.received is None and guard.exit_code is None


@pytest.fixture
def sighup_default():
    """SIGHUP at its default disposition for the test (the suite may run under nohup)."""
    old = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, old)


@POSIX
def test_sighup_ends_the_run_as_sigterm_does_and_the_mask_is_restored(sighup_default):
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    with pytest.raises(Terminated, match="SIGHUP"):
        with SignalGuard() as guard:
            assert signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, set())
            os.kill(os.getpid(), signal.SIGHUP)
            for _ in range(200):
                threading.Event().wait(0.005)
    assert guard.exit_code == 129
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == mask


@POSIX
def test_an_ignored_sighup_stays_ignored(sighup_default):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with SignalGuard():
        assert signal.SIGHUP not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
        os.kill(os.getpid(), signal.SIGHUP)  # nohup's promise: the run goes on
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN


def test_the_guard_is_inactive_outside_the_main_thread():
    seen = {}

    def run():
        with SignalGuard() as guard:
            seen["active"] = guard.active

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == {"active": False}


def test_pause_for_test_does_nothing_without_its_variable(monkeypatch):
    monkeypatch.delenv(_interrupt.PAUSE_ENV, raising=False)
    pause_for_test("anything")
    monkeypatch.setenv(_interrupt.PAUSE_ENV, "other-phase")
    pause_for_test("this-phase")


def test_pause_for_test_names_the_missing_ready_file(monkeypatch):
    monkeypatch.setenv(_interrupt.PAUSE_ENV, "here")
    monkeypatch.delenv(_interrupt.READY_ENV, raising=False)
    with pytest.raises(RuntimeError, match=_interrupt.READY_ENV):
        pause_for_test("here")


def test_pause_for_test_announces_itself_and_fails_without_a_signal(monkeypatch, tmp_path):
    ready = tmp_path / "ready"
    monkeypatch.setenv(_interrupt.PAUSE_ENV, "here")
    monkeypatch.setenv(_interrupt.READY_ENV, str(ready))
    monkeypatch.setattr(_interrupt, "PAUSE_LIMIT", 0.1)
    with pytest.raises(RuntimeError, match="no signal within"):
        pause_for_test("here")
    assert ready.read_text() == f"{os.getpid()}\n"
    assert (tmp_path / f"ready.{os.getpid()}").exists()


def test_shutdown_workers_without_an_executor_is_a_no_op(monkeypatch):
    import sys
    import types

    monkeypatch.setitem(sys.modules, "joblib.externals.loky.reusable_executor", types.ModuleType("fake"))
    shutdown_workers(kill=True)  # no _executor attribute: nothing to stop
    calls = []

    class Executor:
        def terminate(self, kill_workers):
            calls.append(kill_workers)

    fake = types.ModuleType("fake")
    fake._executor = Executor()
    monkeypatch.setitem(sys.modules, "joblib.externals.loky.reusable_executor", fake)
    shutdown_workers(kill=False)
    assert calls == [False]
