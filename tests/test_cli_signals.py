"""``python -m dpfda_book reproduce``: SIGTERM/SIGHUP/SIGINT at each phase, ``--out`` locking.

The runs are interrupted at a known point, not after a guessed sleep: with
``DPFDA_TEST_PAUSE_AT=simulation`` every simulation task (in a worker, with
``--jobs 2``) announces itself by writing ``DPFDA_TEST_READY_FILE`` and then
waits to be signalled, so the run cannot finish before the signal; with
``=writing`` the main process does the same once the first study's files are
written under their temporary names.  Each run gets its own session
(``start_new_session``), so its worker processes are found by session id in
/proc, and a SIGINT can go to the whole process group, as a terminal's Ctrl-C
does.

A test sets the dispositions it tests, whatever the process running the tests
inherited (``nohup`` ignores SIGHUP, a shell's background job SIGINT): each
child starts from the default action of SIGHUP, SIGINT and SIGTERM
(:func:`default_signals`) before a test's own ``preexec_fn`` changes one, and
the tests of the guard in this process set them for their duration
(:func:`signals_at_default`).
"""

from __future__ import annotations

import fcntl
import glob
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from test_cli import ENV, ROOT, run_cli

from dpfda_book import cli
from dpfda_book.interrupt import SignalGuard, Terminated

CORES = cli.available_cores()
JOBS = min(2, CORES)  # --jobs 2, as the run will use it on this machine


def wait_for(condition, timeout, what):
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds (an upper bound
    for a slow machine, not a guess at when something happens)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _stat(pid):
    with open(f"/proc/{pid}/stat") as fh:
        text = fh.read()
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    return fields[0], int(fields[3])  # state, session id


def session_processes(sid):
    """Live (not zombie) processes of a session, with their command lines."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            state, session = _stat(entry)
            if session != sid or state == "Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                found[int(entry)] = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # gone while we looked
    return found


def loky_workers(sid):
    return [p for p, cmd in session_processes(sid).items() if "popen_loky_posix" in cmd]


TEMP_PLACES = sorted({"/dev/shm", tempfile.gettempdir()})


def temp_entries():
    """Every entry of the places where joblib and loky put their files, as full paths."""
    return {os.path.join(d, e) for d in TEMP_PLACES if os.path.isdir(d) for e in os.listdir(d)}


def joblib_leftovers(pid, before=frozenset()):
    """joblib's memmapping folders and loky's semaphores named after process ``pid``,
    but those in ``before`` (what existed before the process started: a process id is
    reused, and a process killed with its resource tracker, a notebook kernel say,
    leaves entries under its id that a later run with that id did not make)."""
    found = [p for d in TEMP_PLACES for p in glob.glob(os.path.join(d, f"joblib_memmapping_folder_{pid}_*"))
             + glob.glob(os.path.join(d, f"sem.loky-{pid}-*"))]
    return [p for p in found if p not in before]


TESTED_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)


def default_signals(then=None):
    """A ``preexec_fn``: the default action for every tested signal, unblocked, then ``then()``."""

    def preexec():
        for sig in TESTED_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, TESTED_SIGNALS)
        if then is not None:
            then()

    return preexec


@pytest.fixture
def signals_at_default():
    """This process with the default action for every tested signal, restored afterwards."""
    before = {sig: signal.getsignal(sig) for sig in TESTED_SIGNALS}
    for sig in TESTED_SIGNALS:
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def start_paused(tmp_path, phase, args, preexec_fn=None):
    """Start ``python -m dpfda_book reproduce ARGS`` and wait until it pauses at ``phase``.

    The child starts with the default signal dispositions (:func:`default_signals`),
    then runs ``preexec_fn``.  Returns the process and the id of the process that
    paused (a worker in the simulation with --jobs 2, the main process while writing)."""
    ready = tmp_path / f"ready-{phase}"
    env = dict(ENV, DPFDA_TEST_PAUSE_AT=phase, DPFDA_TEST_READY_FILE=str(ready))
    before = frozenset(temp_entries())  # none of these can be the run's: it has not started
    proc = subprocess.Popen([sys.executable, "-m", "dpfda_book", "reproduce", *args, "--no-progress"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=default_signals(preexec_fn))
    proc.entries_before = before  # type: ignore[attr-defined]
    try:
        wait_for(lambda: ready.exists() or proc.poll() is not None, 300, f"the run to reach {phase}")
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if proc.poll() is not None:
        _, err = proc.communicate()
        raise AssertionError(f"the run ended before reaching {phase}: exit {proc.returncode}\n{err}")
    return proc, int(ready.read_text())


def finish(proc, sig, *, group):
    """Send ``sig`` (to the process group if ``group``, as Ctrl-C in a terminal does) and
    wait for the run and every process it started to end."""
    (os.killpg if group else os.kill)(proc.pid, sig)
    try:
        _, err = proc.communicate(timeout=300)  # an upper bound for a machine under heavy load
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    # Children end once the main process has gone (loky's resource tracker waits
    # for its pipe to close), so allow them a moment after it.
    try:
        wait_for(lambda: not session_processes(proc.pid), 120, "the run's child processes to end")
        try:
            wait_for(lambda: not joblib_leftovers(proc.pid, proc.entries_before), 120,
                     "joblib's temporary files to go")
        except AssertionError as exc:
            left = joblib_leftovers(proc.pid, proc.entries_before)
            raise AssertionError(f"{exc}: {left}\n{err}") from None
    except AssertionError:  # a failing test must not leave the orphans it found behind
        for pid, cmd in session_processes(proc.pid).items():
            if "resource_tracker" not in cmd:  # the trackers then clean up and exit
                os.kill(pid, signal.SIGKILL)
        raise
    return err


def test_leftovers_are_only_the_runs_own():
    """An entry under a process id that was there before the run started is another
    process's (the id was reused); one that appears afterwards is the run's."""
    place = TEMP_PLACES[0]
    pid = 4_194_304 + os.getpid()  # above any pid_max: no live process has it
    old = os.path.join(place, f"joblib_memmapping_folder_{pid}_old_old")
    new = os.path.join(place, f"sem.loky-{pid}-new")
    os.mkdir(old)
    try:
        before = frozenset(temp_entries())
        assert joblib_leftovers(pid, before) == [] and joblib_leftovers(pid) == [old]
        open(new, "w").close()
        try:
            assert joblib_leftovers(pid, before) == [new]
            if place == "/dev/shm":
                assert shm_leftovers(pid, before) == [os.path.basename(new)]
                assert sorted(shm_leftovers(pid)) == sorted(map(os.path.basename, (old, new)))
        finally:
            os.remove(new)
    finally:
        os.rmdir(old)


SIGNALS = [pytest.param(signal.SIGTERM, 143, False, id="SIGTERM"),
           pytest.param(signal.SIGINT, 130, True, id="SIGINT-to-group"),
           # a closed terminal or ssh session: SIGHUP to the process, or to its whole group
           # (workers and loky's resource trackers too, which ignore only SIGINT and SIGTERM)
           pytest.param(signal.SIGHUP, 129, False, id="SIGHUP"),
           pytest.param(signal.SIGHUP, 129, True, id="SIGHUP-to-group")]


def shm_leftovers(pid, before=frozenset()):
    """Anything in /dev/shm that names process ``pid`` as a whole word (joblib's folders,
    loky's semaphores, ...): the pid between non-hex characters, so that the random hex
    names of other processes' entries do not match by accident; but the entries in
    ``before`` (see :func:`joblib_leftovers`)."""
    import re

    if not os.path.isdir("/dev/shm"):
        return []
    word = re.compile(rf"(^|[^0-9a-fA-F]){pid}([^0-9a-fA-F]|$)")
    return [e for e in os.listdir("/dev/shm") if word.search(e) and os.path.join("/dev/shm", e) not in before]


@pytest.mark.parametrize("sig, code, group", SIGNALS + [
    pytest.param(signal.SIGTERM, 143, True, id="SIGTERM-to-group")])  # as systemd stops a service
def test_signal_during_simulation(tmp_path, sig, code, group):
    out = tmp_path / "res"
    proc, paused = start_paused(tmp_path, "simulation", ["all", "--quick", "--jobs", "2", "--out", str(out)])
    # Under load the second worker may still be starting when the first has paused: wait for it.
    wait_for(lambda: len(loky_workers(proc.pid)) >= (JOBS if JOBS > 1 else 0), 120, "the workers to start")
    workers = loky_workers(proc.pid)
    assert len(workers) == (JOBS if JOBS > 1 else 0)
    if JOBS > 1:
        assert paused in workers  # a worker is mid-task: the run cannot have finished
        # Wait until every worker is mid-task: one still importing its modules when the
        # group's SIGINT comes prints a traceback of its own (Python's default handler;
        # loky's workers are not ours before they run a task).  The run ends with 130 and
        # leaves nothing all the same; that first fraction of a second is not tested here.
        ready = tmp_path / "ready-simulation"
        wait_for(lambda: all(os.path.exists(f"{ready}.{w}") for w in workers), 120,
                 "every worker to start a task")
    assert os.listdir(out) == [cli.LOCK_NAME]
    err = finish(proc, sig, group=group)
    assert proc.returncode == code, err
    assert f"interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err, err
    assert os.listdir(out) == []  # no result, no temporary file, no lock file
    wait_for(lambda: not shm_leftovers(proc.pid, proc.entries_before), 120, "the run's /dev/shm entries to go")


@pytest.mark.parametrize("sig, code, group", SIGNALS)
@pytest.mark.slow
def test_signal_while_writing(tmp_path, sig, code, group):
    out = tmp_path / "res"
    out.mkdir()
    (out / "fig1.csv").write_text("from an earlier run\n")
    proc, paused = start_paused(tmp_path, "writing",
                                ["all", "--quick", "--reps", "4", "--jobs", "2", "--out", str(out)])
    assert paused == proc.pid
    assert loky_workers(proc.pid) == []  # shut down once the simulation was done
    staged = sorted(tuple(f.split(".")[1:3]) for f in os.listdir(out) if f.endswith(".part"))
    # Each study's results and figure were staged as it finished; the sidecars come last,
    # with the run's wall time: the first one is written when the pause comes.
    drawn = [(name, ext) for name in cli.STUDY_NAMES
             for ext in (("csv", "md", "html") if name == "table1" else ("csv", "png"))]
    assert staged == sorted(drawn + [("fig1", "json")])
    err = finish(proc, sig, group=group)
    assert proc.returncode == code, err
    assert f"interrupted by {signal.Signals(sig).name}" in err and "Traceback" not in err, err
    wait_for(lambda: not shm_leftovers(proc.pid, proc.entries_before), 120, "the run's /dev/shm entries to go")
    # Nothing of the interrupted run, and the earlier file untouched.
    assert os.listdir(out) == ["fig1.csv"]
    assert (out / "fig1.csv").read_text() == "from an earlier run\n"


def test_interrupted_run_leaves_nothing_that_looks_complete(tmp_path):
    """The serial run (--jobs 1) too; and a SIGINT reaches a run that was started with
    SIGINT ignored (as a shell starts a background job), which used to be swallowed."""
    out = tmp_path / "res"
    proc, paused = start_paused(tmp_path, "simulation", ["fig5", "--quick", "--out", str(out)],
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert paused == proc.pid and loky_workers(proc.pid) == []
    err = finish(proc, signal.SIGINT, group=False)
    assert proc.returncode == 130, err
    assert "interrupted by SIGINT" in err and "Traceback" not in err
    assert os.listdir(out) == []


def test_sighup_is_left_alone_under_nohup(tmp_path):
    """A run started with SIGHUP ignored (``nohup``) keeps going when the terminal closes;
    it still stops on SIGTERM.  (Were SIGHUP honoured, the exit code would be 129.)"""
    out = tmp_path / "res"
    proc, paused = start_paused(tmp_path, "writing", ["fig5", "--quick", "--reps", "3", "--out", str(out)],
                                preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    os.killpg(proc.pid, signal.SIGHUP)
    time.sleep(2)
    assert proc.poll() is None
    err = finish(proc, signal.SIGTERM, group=False)
    assert proc.returncode == 143 and "interrupted by SIGTERM" in err, err
    assert os.listdir(out) == []


@pytest.mark.slow
def test_second_run_into_the_same_folder_exits_2(tmp_path):
    out = tmp_path / "res"
    first, _ = start_paused(tmp_path, "simulation", ["fig5", "--quick", "--jobs", "2", "--out", str(out)])
    try:
        second = run_cli("reproduce", "fig5", "--quick", "--reps", "4", "--out", str(out), "--no-progress")
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("dpfda_book: error: --out"), second.stderr
        assert "in use by another dpfda run" in lines[0] and f"pid {first.pid}" in lines[0]
        assert os.listdir(out) == [cli.LOCK_NAME]  # the second run wrote nothing
    finally:
        finish(first, signal.SIGTERM, group=False)
    assert first.returncode == 143 and os.listdir(out) == []
    # Once the first run has gone, the folder is free again.
    third = run_cli("reproduce", "fig5", "--quick", "--reps", "4", "--out", str(out), "--no-progress")
    assert third.returncode == 0, third.stderr
    assert sorted(os.listdir(out)) == ["fig5.csv", "fig5.json", "fig5.png"]


def test_held_lock_is_bad_input_and_lock_is_released(tmp_path, capsys):
    out = tmp_path / "res"
    out.mkdir()
    args = ["reproduce", "fig5", "--quick", "--reps", "3", "--out", str(out), "--no-progress"]
    with open(out / cli.LOCK_NAME, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        assert cli.main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "in use" in err[0]
    assert cli.main(args) == 0
    assert sorted(os.listdir(out)) == ["fig5.csv", "fig5.json", "fig5.png"]


@pytest.mark.parametrize("requested", [CORES + 1, 64])
def test_jobs_above_the_cores_is_reduced_with_a_message(tmp_path, capsys, requested):
    import json

    out = tmp_path / "res"
    code = cli.main(["reproduce", "fig5", "--quick", "--reps", "3", "--jobs", str(requested),
                     "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert f"--jobs {requested} is more than the {CORES} cores available; using --jobs {CORES}" in err
    assert json.loads((out / "fig5.json").read_text())["jobs"] == CORES
    assert CORES <= (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())


def test_jobs_help_says_what_happens_above_the_cores(capsys):
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--help"])
    assert "above the cores available is reduced" in " ".join(capsys.readouterr().out.split())


def test_signal_guard_turns_signals_into_exceptions_and_remembers_them(signals_at_default):
    before = signal.getsignal(signal.SIGTERM)
    with SignalGuard() as guard:
        assert guard.active
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends
        assert guard.exit_code == 143
        os.kill(os.getpid(), signal.SIGINT)  # a second signal while stopping: recorded only
        with pytest.raises(Terminated):  # the first one's exception again, if it was lost
            guard.check()
    assert signal.getsignal(signal.SIGTERM) is before
    with SignalGuard() as guard:
        with guard.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
        assert guard.exit_code == 130
        with pytest.raises(KeyboardInterrupt):
            guard.check()


def test_signal_guard_takes_sighup_like_sigterm_and_restores_the_mask(signals_at_default):
    before = signal.getsignal(signal.SIGHUP)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with SignalGuard() as guard:
        assert signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # inherited by children
        with pytest.raises(Terminated, match="SIGHUP"):
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(5)  # the guard's thread hands it on before this ends
        assert guard.exit_code == 129
    assert signal.getsignal(signal.SIGHUP) is before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask
    assert not [t for t in threading.enumerate() if t.name == "dpfda-sighup"]
    # nohup: an ignored SIGHUP stays ignored, and nothing is blocked
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with SignalGuard() as guard:
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert signal.SIGHUP not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.1)
            assert guard.received is None
    finally:
        signal.signal(signal.SIGHUP, before)


def test_engine_stops_its_workers_when_the_loop_is_interrupted():
    """An exception out of run_studies' loop (here from on_chunk; a Ctrl-C in a notebook
    is the same) terminates joblib's workers at once instead of leaving them busy."""
    from dpfda_book.simulation.schedule import run_studies
    from dpfda_book.simulation.studies import get_study

    def children():
        mine = str(os.getpid())
        found = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    text = fh.read()
                state, ppid = text[text.rindex(")") + 2:].split()[:2]
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if ppid == mine and state != "Z" and b"popen_loky_posix" in cmd:
                found.append(int(entry))
        return found

    seen = []

    def stop():
        seen.append(children())
        raise KeyboardInterrupt

    # The traceback is kept (as Jupyter keeps sys.last_traceback): it holds the engine's
    # frames, so the workers must not depend on the generator being garbage-collected.
    with pytest.raises(KeyboardInterrupt) as excinfo:
        run_studies([get_study("fig5", n=(4, 16))], 40, seed=1, n_jobs=2, chunk_reps=2, on_chunk=stop)
    assert len(seen) == 1 and len(seen[0]) == JOBS  # the workers were there ...
    assert children() == [] and excinfo.tb is not None  # ... and are gone when the exception arrives
    with pytest.raises(TypeError, match="on_chunk"):
        run_studies([get_study("fig5", n=(4,))], 2, seed=1, on_chunk="stop")
