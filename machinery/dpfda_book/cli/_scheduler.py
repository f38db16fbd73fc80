"""The ``--scheduler`` handshake with a Dask cluster, and the cores available to local workers."""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

import numpy as np

from dpfda import __version__
from dpfda.cli.parsing import UsageError

SCHEDULER_TIMEOUT = 5.0
"""Seconds ``--scheduler`` waits to connect to the scheduler, and then for a worker."""

def _worker_versions() -> tuple[str, str]:
    """(dpfda, numpy) versions of the process that runs it (sent to Dask workers)."""
    return __version__, np.__version__


def connect_scheduler(address: str, timeout: float = SCHEDULER_TIMEOUT) -> Any:
    """A ``distributed.Client`` on the scheduler at ``address``, ready to run a study.

    Raises :class:`UsageError` (one line, exit code 2) when the address is not
    of the form ``[tcp://|tls://]HOST:PORT``, dask.distributed is missing, the
    address cannot be reached within ``timeout`` seconds (at once if the
    connection is refused) or no Dask server answers there, no worker joins
    within ``timeout`` seconds, or a worker runs other versions of dpfda or
    numpy than this process (the results would no longer be those of a local
    run).
    """
    text = address.strip()
    match = re.fullmatch(r"(?:(tcp|tls)://)?\[?([^\s/\[\]]+?)\]?:(\d{1,5})", text)
    if match is None or not 0 < int(match.group(3)) < 65536:
        raise UsageError(f"--scheduler must be a scheduler's address such as tcp://HOST:8786, "
                         f"got {address!r}")
    host, port = match.group(2), int(match.group(3))
    try:  # a plain TCP connection first: a refused or unreachable address fails at once
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise UsageError(f"--scheduler {text!r}: cannot connect ({reason})") from None
    try:
        import distributed
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install 'dpfda[dask]'") from None
    import asyncio

    # A failure is reported in our one line; distributed's own log lines are not needed.
    logging.getLogger("distributed").setLevel(logging.CRITICAL)

    async def handshake() -> None:  # distributed's own, without a Client that would linger on failure
        comm = await distributed.comm.connect(text, timeout=timeout)
        await comm.close()

    async def handshake_within_timeout() -> None:  # a server that accepts and stays silent must not hang us
        await asyncio.wait_for(handshake(), timeout)

    try:
        asyncio.run(handshake_within_timeout())
        client = distributed.Client(text, timeout=timeout, set_as_default=False)
    except Exception as exc:  # timed out, or something other than Dask listens there
        reason = " ".join(str(exc).split())[:160]
        reason = f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__
        raise UsageError(f"--scheduler {text!r}: no Dask scheduler answered within {timeout:g} s "
                         f"({reason})") from None
    try:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise UsageError(f"--scheduler {text!r}: no worker joined the scheduler within "
                             f"{timeout:g} s (start one with: dask worker {text})") from None
        mine = _worker_versions()
        try:
            theirs = client.run(_worker_versions)
        except Exception as exc:  # e.g. ModuleNotFoundError: dpfda is not installed on a worker
            raise UsageError(f"--scheduler {text!r}: the workers cannot run dpfda "
                             f"({type(exc).__name__}: {exc}); install it where they run") from None
        other = {w: v for w, v in theirs.items() if tuple(v) != mine}
        if other:
            worker, (dv, nv) = next(iter(other.items()))
            raise UsageError(f"--scheduler {text!r}: worker {worker} runs dpfda {dv} with numpy {nv}, "
                             f"this process dpfda {mine[0]} with numpy {mine[1]}; use the same versions "
                             "(the results depend on them)")
    except BaseException:
        client.close()
        raise
    return client


def available_cores() -> int:
    """Cores this process may use (CPU affinity and cgroup quota).

    Counted as joblib counts them for ``n_jobs=-1``.
    """
    from joblib import cpu_count

    return max(1, int(cpu_count()))
