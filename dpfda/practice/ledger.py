"""A budget ledger for one data set: each release, its μ, and the composed total against a cap.

Every release that reads the same people spends budget again, and μ-GDP releases compose
as μ_total = sqrt(Σ μ_i²) (the paper's §2.2; :func:`dpfda.compose`), whatever was learned
from the earlier ones.  A :class:`Ledger` is a file beside the data that lists each release
of one data set — its μ, what it released, where, when, with which public choices — and
refuses, before any noise is drawn, a release that would take the composed total past the
cap stated when the ledger was started.  ``python -m dpfda release --ledger FILE --cap MU``
keeps one; the record of each release names the ledger's total after it.

*What it takes from OpenDP and Tumult Analytics.*  OpenDP's privacy filter
(``make_privacy_filter`` around an odometer of ``make_fully_adaptive_composition``) holds a
total privacy loss, composes each new query's loss into it in the measure's own rule, and
rejects a query that would take the total past the bound *before running it*; a rejected
query spends nothing.  Tumult Analytics' ``Session`` is created with its whole budget,
each ``evaluate`` states what it spends, a refused ``evaluate`` consumes nothing, and
``remaining_privacy_budget`` says what is left; its privacy promise covers only what goes
through the session (logs and diagnostics are not covered, and public parameters chosen by
looking at the private data are not protected), and it is not built to resist a malicious
user.  The ledger is that design persisted in a file across processes: a cap fixed at
creation, μ composed as sqrt(Σ μ_i²) (for Gaussian mechanisms the sum of zCDP's ρ = μ²/2,
OpenDP's composition measure), the check before the noise, a refusal that spends nothing,
and the total in every record.  Unlike a session it cannot hold the data, so it cannot see
a release made without it.

*Safe against the obvious mistakes, not against a determined one.*

* Two releases at once: the file is locked (``flock``) from the check of the cap until the
  entry is written, so a second release waits and then sees the first one's spend.
* A ledger of another data set: the ledger names its data set and carries a fingerprint of
  the data's *identity*, computed from public facts only — the name the curator gives the
  data set, the file's layout and its column names (for a wide file, the grid's points).
  Never from the values or the subject ids: a hash of the data is a noiseless function of
  the private records, so anyone who holds the ledger and can guess the data (or two
  neighbouring versions of it) could confirm the guess, and it would change when one
  record is corrected, which would start a fresh budget for the same people.
* An edited file: each line holds the hash of the line before it, so a line changed or
  removed in the middle is detected and refused.  The ledger is an honesty aid for the
  curator, not a security boundary: whoever can write the file can rewrite it whole, start
  a new one, or release without it.  The guarantee a reader can rely on is the μ the
  records state; the ledger makes the total across them visible.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..mechanisms.privacy import epsilon_from_mu
from ..validation import check_positive

__all__ = ["CAP_TOLERANCE", "LEDGER_FORMAT", "BudgetExceeded", "Ledger", "LedgerError", "data_identity",
           "identity_fingerprint"]

LEDGER_FORMAT = "dpfda budget ledger, version 1"
"""The first line's ``format``: what the file is."""

CAP_TOLERANCE = 1e-12
"""A composed total within this relative distance above the cap counts as the cap (the rounding of
sqrt(Σ μ²): three releases at μ = √3 reach a cap of 3, not 3 + 2⁻⁵¹)."""

COMPOSITION = "mu-GDP releases compose to sqrt(sum of mu_i^2) (Dong, Roth and Su; the paper's section 2.2)"


class LedgerError(ValueError):
    """The ledger cannot be used: another data set's, damaged or edited, a cap that differs, or in use."""


class BudgetExceeded(LedgerError):
    """The release would take the composed total past the ledger's cap; nothing was spent."""


def data_identity(dataset: str, *, layout: str, columns: Iterable[str], id: str | None = None) -> dict:
    """The public facts that identify a data set for its ledger: never its values or subject ids.

    ``dataset`` is the name the curator gives it; ``layout`` ``"wide"`` or ``"long"``;
    ``columns`` the file's column names (a wide file's grid points among them); ``id`` the
    subject column.  See the module for why nothing computed from the records belongs here.
    """
    if not isinstance(dataset, str) or not dataset.strip():
        raise ValueError(f"dataset must be a non-empty name, got {dataset!r}")
    if layout not in ("wide", "long"):
        raise ValueError(f"layout must be 'wide' or 'long', got {layout!r}")
    return {"dataset": dataset.strip(), "layout": layout, "subject_column": id,
            "columns": sorted(str(c).strip() for c in columns)}


def identity_fingerprint(identity: Mapping[str, Any]) -> str:
    """SHA-256 of :func:`data_identity`'s public facts (hex): the same facts, the same fingerprint."""
    text = json.dumps(dict(identity), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _lock(fd: int, wait: float, path: str) -> None:
    """An exclusive ``flock`` on ``fd``, waiting up to ``wait`` seconds for another holder."""
    try:
        import fcntl  # here: a POSIX-only module
    except ImportError:  # pragma: no cover - POSIX only
        raise LedgerError("the ledger's lock needs a POSIX system (fcntl)") from None
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LedgerError(f"the ledger {path!r} is in use by another release (waited {wait:g} s); "
                                  "try again when it has finished") from None
            time.sleep(0.05)


class Ledger:
    """A budget ledger file, open and locked for the length of a ``with`` block.

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file; created (with ``cap``) if it does not exist.
    identity : dict
        :func:`data_identity` of the data set being released; a ledger started for another
        identity is refused (:class:`LedgerError`).
    cap : float, optional
        The largest composed μ the ledger allows, > 0.  Required to start a ledger; on an
        existing one it must equal the cap stated at its start (or be left out): a cap,
        like a session's budget, is fixed when the ledger is started.
    wait : float
        Seconds to wait for another release holding the ledger, >= 0.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "heights.ledger")
    >>> who = data_identity("Berkeley heights", layout="wide", columns=["child", "1", "2"], id="child")
    >>> with Ledger(path, who, cap=2.0) as ledger:
    ...     _ = ledger.spend(1.0, {"what": "FTP mean curve"})
    >>> with Ledger(path, who) as ledger:
    ...     round(ledger.total, 6), round(ledger.after(1.0), 6), ledger.allows(1.8)
    (1.0, 1.414214, False)
    """

    def __init__(self, path: str | os.PathLike[str], identity: Mapping[str, Any], *, cap: float | None = None,
                 wait: float = 60.0) -> None:
        self.path = os.fspath(path)
        self.identity = dict(identity)
        self.fingerprint = identity_fingerprint(self.identity)
        self._cap_given = None if cap is None else check_positive(cap, "cap")
        self.wait = float(wait)
        self._fd: int | None = None
        self.header: dict = {}
        self.entries: list[dict] = []
        self._last: bytes = b""

    # -- opening ------------------------------------------------------------------------

    def __enter__(self) -> Ledger:
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):
            raise LedgerError(f"the ledger {self.path!r}: the folder {folder!r} does not exist")
        if os.path.exists(self.path) and not os.path.isfile(self.path):
            raise LedgerError(f"the ledger {self.path!r} is not a file")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            _lock(fd, self.wait, self.path)
            self._fd = fd
            self._read()
        except BaseException:
            self._fd = None
            os.close(fd)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file releases the lock
            self._fd = None

    def _read(self) -> None:
        assert self._fd is not None
        os.lseek(self._fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(self._fd, 1 << 16):
            chunks.append(chunk)
        data = b"".join(chunks)
        if not data:
            self._start()
            return
        if not data.endswith(b"\n"):
            raise LedgerError(f"the ledger {self.path!r}: its last line is incomplete (a write was interrupted?). "
                              "If that release's file was not written, remove the incomplete line by hand")
        lines = data.split(b"\n")[:-1]
        try:
            rows = [json.loads(line) for line in lines]
        except ValueError:
            raise LedgerError(f"the ledger {self.path!r} is not a dpfda ledger (a line is not JSON)") from None
        header = rows[0]
        if not isinstance(header, dict) or header.get("format") != LEDGER_FORMAT:
            raise LedgerError(f"{self.path!r} is not a dpfda budget ledger (its first line does not say "
                              f"{LEDGER_FORMAT!r})")
        for k in range(1, len(rows)):
            if not isinstance(rows[k], dict) or rows[k].get("prev") != _line_hash(lines[k - 1]):
                raise LedgerError(
                    f"the ledger {self.path!r} was edited: line {k + 1} does not follow line {k} (each line "
                    "holds the hash of the one before). A ledger is an honesty aid, not a security boundary; "
                    "restore it from a copy, or start a new one that states the earlier releases")
        self.header, self.entries, self._last = header, rows[1:], lines[-1]
        if header.get("fingerprint") != self.fingerprint:
            theirs = header.get("identity", {})
            raise LedgerError(
                f"the ledger {self.path!r} belongs to another data set: it was started for "
                f"{theirs.get('dataset')!r} ({theirs.get('layout')} form, columns {theirs.get('columns', [])[:6]}"
                f"{'…' if len(theirs.get('columns', [])) > 6 else ''}), this release reads "
                f"{self.identity.get('dataset')!r} ({self.identity.get('layout')} form, columns "
                f"{self.identity.get('columns', [])[:6]}{'…' if len(self.identity.get('columns', [])) > 6 else ''}). "
                "Use this data set's own ledger, or name it as the ledger does (--dataset)")
        cap = float(header["cap_mu"])
        if self._cap_given is not None and self._cap_given != cap:
            raise LedgerError(f"the ledger {self.path!r} was started with the cap μ = {cap:g}; a cap is fixed "
                              f"when a ledger starts (got {self._cap_given:g}): leave it out, or start a new "
                              "ledger for a new budget")

    def _start(self) -> None:
        if self._cap_given is None:
            raise LedgerError(f"the ledger {self.path!r} does not exist yet: state its cap, the largest composed μ "
                              "the data set may spend (--cap on the command line)")
        header = {"format": LEDGER_FORMAT, "created": _now(), "identity": self.identity,
                  "fingerprint": self.fingerprint, "cap_mu": self._cap_given,
                  "cap_epsilon_at_1e-5": float(epsilon_from_mu(self._cap_given, 1e-5)),
                  "composition": COMPOSITION,
                  "note": ("an honesty aid for the curator, not a security boundary: it counts the releases "
                           "recorded here, not releases made without it")}
        self._append(header, chained=False)
        self.header, self.entries = header, []

    def _append(self, row: dict, chained: bool = True) -> dict:
        """Write ``row`` as the next line (with the hash of the line before), flushed to disk; the row."""
        if self._fd is None:
            raise LedgerError("the ledger is not open: use it in a `with Ledger(...) as ledger:` block")
        if chained:
            row = {**row, "prev": _line_hash(self._last)}
        line = json.dumps(row, ensure_ascii=False, sort_keys=False).encode("utf-8")
        os.write(self._fd, line + b"\n")
        os.fsync(self._fd)
        self._last = line
        return row

    # -- the budget -----------------------------------------------------------------------

    @property
    def cap(self) -> float:
        """The largest composed μ the ledger allows."""
        return float(self.header["cap_mu"])

    @property
    def releases(self) -> list[dict]:
        """The entries that spent budget, in order."""
        return [e for e in self.entries if e.get("kind") == "release"]

    @property
    def total(self) -> float:
        """The composed μ of the releases so far, sqrt(Σ μ_i²) (0 before the first)."""
        return math.sqrt(math.fsum(float(e["mu"]) ** 2 for e in self.releases))

    def after(self, mu: float) -> float:
        """The composed μ if a release at ``mu`` were added."""
        mu = check_positive(mu, "mu")
        return math.sqrt(math.fsum([*(float(e["mu"]) ** 2 for e in self.releases), mu * mu]))

    def allows(self, mu: float) -> bool:
        """Whether a release at ``mu`` keeps the composed total within the cap (:data:`CAP_TOLERANCE`)."""
        return self.after(mu) <= self.cap * (1.0 + _tolerance())

    def check(self, mu: float) -> float:
        """The total after a release at ``mu``; :class:`BudgetExceeded` if it passes the cap (nothing spent)."""
        after = self.after(mu)
        if not self.allows(mu):
            left = math.sqrt(max(self.cap**2 - self.total**2, 0.0))
            raise BudgetExceeded(
                f"the ledger {self.path!r} refuses this release: {len(self.releases)} release(s) of "
                f"{self.identity.get('dataset')!r} have spent μ = {self.total:.4g} (composed), and one more at "
                f"μ = {mu:g} would make {after:.4g}, past the cap μ = {self.cap:g}. At most μ = {left:.4g} is "
                "left for one more release; nothing was spent")
        return after

    def changed(self, parameters: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
        """The public choices that differ from the last entry's: (name, before, now), in order."""
        if not self.entries:
            return []
        before = self.entries[-1].get("parameters", {})
        keys = list(dict.fromkeys([*before, *parameters]))
        return [(k, before.get(k), parameters.get(k)) for k in keys if before.get(k) != parameters.get(k)]

    def spend(self, mu: float, what: Mapping[str, Any], parameters: Mapping[str, Any] | None = None) -> dict:
        """Record a release at ``mu`` (checked against the cap first); the entry written.

        Call it before the noise is drawn: the spend is then on disk whatever happens next
        (a release whose file is never written still counts, the cautious side).
        """
        after = self.check(mu)
        entry = {"kind": "release", "time": _now(), "mu": float(mu), "total_after": after,
                 "what": dict(what), "parameters": dict(parameters or {})}
        self.entries.append(self._append(entry))
        return entry

    def note_check(self, what: Mapping[str, Any], parameters: Mapping[str, Any] | None = None) -> dict:
        """Record that the curator looked at the diagnostics without releasing (μ = 0 spent)."""
        entry = {"kind": "check", "time": _now(), "mu": 0.0, "total_after": self.total,
                 "what": dict(what), "parameters": dict(parameters or {})}
        self.entries.append(self._append(entry))
        return entry

    def summary(self, mu_after: float | None = None) -> dict:
        """The ledger as the record names it: data set, releases, composed total, cap."""
        total = self.total if mu_after is None else mu_after
        count = len(self.releases)
        return {"file": os.path.basename(self.path), "dataset": self.identity.get("dataset"),
                "fingerprint": self.fingerprint, "releases": count, "mu_total": float(total),
                "epsilon_total_at_1e-5": float(epsilon_from_mu(total, 1e-5)) if total > 0 else 0.0,
                "cap_mu": self.cap, "composition": COMPOSITION,
                "note": ("the composed μ of every release of this data set recorded in the ledger, this one "
                         "included; the ledger is the curator's honesty aid, not a security boundary")}



def _tolerance() -> float:
    return CAP_TOLERANCE  # read at call time, so the module constant is the one rule
