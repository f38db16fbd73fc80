"""Output folder of ``reproduce``: the folder lock, the files staged under temporary names, the commit."""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from dpfda.cli.files import Writer, discard_temporary, stage_file, temporary_prefix, text_writer
from dpfda.cli.parsing import UsageError

from ..simulation.studies import layout_of

if TYPE_CHECKING:
    import pandas as pd

    from ..simulation.studies import Study

def check_output_dir(out: str) -> None:
    """Refuse an ``--out`` that exists and is not a folder."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out!r} exists and is not a folder")
    try:
        os.makedirs(out, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".dpfda-write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"cannot write to --out {out!r}: {exc.strerror or exc}") from None


LOCK_NAME = ".dpfda.lock"
"""The lock file a run holds in its output folder (not an output; removed at the end)."""


class FolderLock:
    """An exclusive ``flock`` on ``<out>/.dpfda.lock`` for the length of a run.

    Taken without waiting: if another process holds it, :class:`UsageError`.
    The file is removed when the run ends; a run that finds the file removed
    under it (by the run that held it before) takes the lock again on a new one.
    """

    def __init__(self, out: str, run_id: str) -> None:
        self.path = os.path.join(out, LOCK_NAME)
        self.out = out
        self.run_id = run_id
        self.fd: int | None = None

    def __enter__(self) -> "FolderLock":
        import fcntl

        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip()
                os.close(fd)
                by = f" ({holder})" if holder else ""
                raise UsageError(f"--out {self.out!r} is in use by another dpfda run{by}; "
                                 "wait for it to finish or choose another folder") from None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the previous holder removed the file as we opened it: start again
        self.fd = fd
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, run {self.run_id}\n".encode())
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            os.unlink(self.path)  # while still holding the lock
        except OSError:
            pass
        if self.fd is not None:
            os.close(self.fd)


# ---------------------------------------------------------------------------
# Atomic writes: a file either is complete or does not exist under its name
# ---------------------------------------------------------------------------


def output_names(study: Study) -> list[str]:
    """The names of the files a study writes into ``--out``."""
    exts = (".csv", ".json", ".md", ".html") if layout_of(study).kind == "table" else (".csv", ".json", ".png")
    return [study.name + ext for ext in exts]


def remove_temporaries(out: str, names: Iterable[str]) -> None:
    """Remove the temporary files of the given outputs (ours: the folder is locked)."""
    for name in names:
        pattern = os.path.join(glob.escape(out), glob.escape(temporary_prefix(name)) + "*.part")
        for tmp in glob.glob(pattern):
            discard_temporary(tmp)


def check_final_names(out: str, names: Iterable[str]) -> None:
    """Refuse, before any work, an output name taken by something other than a file.

    A folder (or a socket, ...) named ``table1.json`` in ``--out`` would make the
    run's last step fail; better to say so at once than after the simulation.
    """
    for name in names:
        path = os.path.join(out, name)
        if os.path.lexists(path) and not os.path.isfile(path):  # a link to a file is fine
            kind = ("a folder" if os.path.isdir(path) else "a broken link" if os.path.islink(path)
                    else "not a file")
            raise UsageError(f"--out {out!r}: {name} is {kind}; the run writes a file of that name, "
                             "so remove or rename it (or choose another --out)")


def commit_staged(staged: list[tuple[str, str]]) -> None:
    """Rename every staged file into place, all or none.

    Each final name that already holds a file (from an earlier run) is first
    hard-linked (a symbolic link: copied as a link) to a hidden
    ``.<name>.<random>.old.part`` (the file stays where it is); then the
    temporaries are renamed over the finals.  If a rename fails, the files
    renamed so far are taken back: an earlier run's file is restored
    from its link, a new name is removed.  The links are removed at the end.
    So the folder shows either all of this run's files or what it held before.
    """
    backups: dict[str, str] = {}
    done: list[str] = []
    try:
        for _, final in staged:
            if not os.path.lexists(final):
                continue
            backup = os.path.join(os.path.dirname(final), temporary_prefix(final)
                                  + uuid.uuid4().hex[:12] + ".old.part")
            if os.path.islink(final):  # keep the link itself, not what it points to
                os.symlink(os.readlink(final), backup)
            else:
                try:
                    os.link(final, backup)
                except OSError:  # no hard links here: a copy does as well
                    shutil.copy2(final, backup)
            backups[final] = backup
        for tmp, final in staged:
            os.replace(tmp, final)
            done.append(final)
    except BaseException:
        for final in reversed(done):
            try:
                if final in backups:
                    os.replace(backups.pop(final), final)
                else:
                    os.unlink(final)
            except OSError:
                pass
        raise
    finally:
        for backup in backups.values():
            discard_temporary(backup)


def _provenance_comment(run: dict) -> str:
    return (f"<!-- dpfda run_id {run['run_id']}: {run['command']}; seed {run['seed']}; "
            f"started {run['started']}; dpfda {run['dpfda_version']} -->\n")


def _staging(out: str) -> tuple[list[tuple[str, str]], Callable[[str, Writer], None]]:
    """``(staged, stage)``: ``stage(name, write)`` stages one file of ``out`` and records it."""
    staged: list[tuple[str, str]] = []

    def stage(name: str, write: Writer) -> None:
        final = os.path.join(out, name)
        staged.append((stage_file(final, write), final))

    return staged, stage


def stage_outputs(study: Study, df: pd.DataFrame, out: str, run: dict) -> list[tuple[str, str]]:
    """Write a study's results (CSV, and the figure or the table) under temporary names.

    Returns (temporary, final) pairs.  Called as soon as the study's
    simulation is done, while the workers go on with the other studies.
    """
    from ..report import plots
    from ..report.evidence import table1_frame

    staged, stage = _staging(out)
    try:
        stage(study.name + ".csv", text_writer(df.assign(run_id=run["run_id"]).to_csv(index=False)))
        if plots.layout_of(study).kind == "table":
            table = table1_frame(df)
            comment = _provenance_comment(run)
            stage(study.name + ".md", text_writer(comment + plots.table(table, digits=4).markdown()))
            html = table.to_html(index=False, float_format=lambda v: f"{v:.4g}")
            stage(study.name + ".html", text_writer(comment + html))
        else:
            import matplotlib.pyplot as plt

            fig = plots.figure(df, study, title=f"{study.source}: {study.title}")
            png_meta = {"Title": f"{study.source}: {study.title}", "Description": plots.caption(df),
                        "Software": f"dpfda {run['dpfda_version']}", "dpfda run_id": run["run_id"],
                        "dpfda command": run["command"], "dpfda seed": str(run["seed"]),
                        "dpfda started": run["started"]}
            try:
                stage(study.name + ".png",
                      lambda tmp: fig.savefig(tmp, format="png", dpi=150, metadata=png_meta))
            finally:
                plt.close(fig)
    except BaseException:
        for tmp, _ in staged:
            discard_temporary(tmp)
        raise
    return staged


def stage_metadata(study: Study, df: pd.DataFrame, out: str, meta: dict, run: dict) -> list[tuple[str, str]]:
    """Write a study's JSON sidecar under a temporary name (once the whole run is done)."""
    from ..report import plots

    staged, stage = _staging(out)
    meta = {**df.attrs.get("dpfda", {}), **meta, **run}  # the run's start time wins
    meta["columns"] = list(df.columns) + ["run_id"]
    meta["caption"] = plots.caption(df)
    stage(study.name + ".json", text_writer(json.dumps(meta, indent=2, sort_keys=True) + "\n"))
    return staged
