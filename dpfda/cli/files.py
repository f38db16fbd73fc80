"""Writing an output file all or nothing: staged under a temporary name beside it, then renamed."""

from __future__ import annotations

import os
import tempfile
from typing import Protocol

__all__ = ["Writer", "discard_temporary", "stage_file", "temporary_prefix", "text_writer"]

class Writer(Protocol):
    """What :func:`stage_file` calls to write a file: ``write(tmp)`` with the temporary path."""

    def __call__(self, tmp: str, /) -> object:
        """Write the whole file at ``tmp``."""
        ...


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def temporary_prefix(path: str | os.PathLike[str]) -> str:
    """Temporary files for ``path`` are named ``.<name>.<random>.part`` beside it."""
    return "." + os.path.basename(os.fspath(path)) + "."


def discard_temporary(tmp: str | os.PathLike[str]) -> None:
    """Remove a temporary file, if it is there."""
    try:
        os.unlink(tmp)
    except OSError:
        pass


def stage_file(path: str | os.PathLike[str], write: Writer) -> str:
    """Write ``path``'s content under a temporary name beside it; return that name.

    ``write(tmp)`` writes the file.  If it fails (or is interrupted) the
    temporary file is removed.  Renaming the result to ``path`` is the caller's
    step (``os.replace``, or an all-or-nothing commit of several files).
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=temporary_prefix(path), suffix=".part", dir=folder)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
    except BaseException:
        discard_temporary(tmp)
        raise
    return tmp


def text_writer(text: str) -> Writer:
    """A ``write(tmp)`` function for :func:`stage_file` that writes ``text`` (UTF-8)."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)

    return write
