"""dpfda.practice.ledger: the budget of one data set across releases, against a cap."""

from __future__ import annotations

import json
import math
import threading
import time

import pytest

import dpfda
from dpfda.maths.summation import gamma
from dpfda.practice import ledger as ledger_module
from dpfda.practice.ledger import (
    BudgetExceeded,
    Ledger,
    LedgerError,
    data_identity,
    identity_fingerprint,
)

WHO = data_identity("daily temperatures", layout="long", columns=["day", "hour", "temp"], id="day")


def test_releases_compose_and_one_past_the_cap_is_refused_spending_nothing(tmp_path):
    path = tmp_path / "temps.ledger"
    with Ledger(path, WHO, cap=2.0) as book:
        assert book.total == 0.0 and book.cap == 2.0
        book.spend(1.0, {"what": "FTP mean curve"}, {"space": "fourier:7"})
    with Ledger(path, WHO) as book:
        book.spend(1.0, {"what": "FTP mean curve"}, {"space": "fourier:7"})
        # exact: 1² and 1 + 1 are exact, and sqrt is correctly rounded (IEEE 754), in the ledger and in compose
        assert book.total == math.sqrt(2) == dpfda.compose(1.0, 1.0)
    before = path.read_bytes()
    with Ledger(path, WHO) as book, pytest.raises(BudgetExceeded) as info:
        book.spend(1.5, {"what": "FTP mean curve"})
    text = str(info.value)
    assert "μ = 1.414" in text and "past the cap μ = 2" in text and "At most μ = 1.414 is left" in text
    assert "nothing was spent" in text
    assert path.read_bytes() == before  # a refused release writes nothing
    with Ledger(path, WHO) as book:
        book.spend(math.sqrt(2.0), {"what": "the rest"})  # exactly the rest: sqrt(2 + 2) = 2
        # (√2)² by the C library's pow (under one ulp, 2u), fsum correctly rounded (u), sqrt halves it and adds u:
        # relative error at most u + (2u + u)/2 < γ₃
        assert book.total == pytest.approx(2.0, rel=gamma(3), abs=0) and len(book.releases) == 3
        summary = book.summary()
    assert summary["releases"] == 3 and summary["mu_total"] == pytest.approx(2.0, rel=gamma(3), abs=0)  # as above
    assert summary["cap_mu"] == 2.0 and summary["dataset"] == "daily temperatures"
    # exact: the same scalar function (no BLAS) on the same μ
    assert summary["epsilon_total_at_1e-5"] == float(dpfda.epsilon_from_mu(summary["mu_total"], 1e-5))


def test_three_thirds_reach_the_cap(tmp_path, monkeypatch):
    """Three releases at μ = 3/√3 reach a cap of 3, though sqrt of the sum of their squares rounds above it."""
    mu = 3 / math.sqrt(3)
    assert math.sqrt(math.fsum([mu * mu] * 3)) > 3.0  # the rounding the tolerance is for
    with Ledger(tmp_path / "l.ledger", WHO, cap=3.0) as book:
        for _ in range(3):
            book.spend(mu, {"what": "a third"})
        assert not book.allows(1e-3)
    monkeypatch.setattr(ledger_module, "CAP_TOLERANCE", 0.0)  # without it the third is refused
    with Ledger(tmp_path / "m.ledger", WHO, cap=3.0) as book, pytest.raises(BudgetExceeded):
        for _ in range(3):
            book.spend(mu, {"what": "a third"})


def test_a_ledger_needs_its_cap_to_start_and_keeps_it(tmp_path):
    path = tmp_path / "l.ledger"
    with pytest.raises(LedgerError, match="state its cap"):
        with Ledger(path, WHO):
            pass
    with Ledger(path, WHO, cap=3.0):
        pass
    with pytest.raises(LedgerError, match="started with the cap μ = 3"):
        with Ledger(path, WHO, cap=4.0):
            pass
    with Ledger(path, WHO, cap=3.0) as book:  # the same cap: fine
        assert book.cap == 3.0


def test_a_ledger_of_another_data_set_is_refused(tmp_path):
    path = tmp_path / "l.ledger"
    with Ledger(path, WHO, cap=1.0) as book:
        book.spend(0.5, {"what": "x"})
    other = data_identity("heights", layout="wide", columns=["child", "1", "2"], id="child")
    with pytest.raises(LedgerError, match="belongs to another data set.*'daily temperatures'.*'heights'"):
        with Ledger(path, other):
            pass


def test_the_fingerprint_is_of_public_facts_only():
    """The same name, layout and columns give the same fingerprint, whatever the records: a fingerprint
    of the values would tell two neighbouring data sets apart (a noiseless function of the data)."""
    a = data_identity("daily temperatures", layout="long", columns=["temp", "day", "hour"], id="day")
    assert identity_fingerprint(a) == identity_fingerprint(WHO)  # column order does not matter
    assert set(WHO) == {"dataset", "layout", "subject_column", "columns"}  # no values, no subject ids
    for changed in (data_identity("another year", layout="long", columns=["day", "hour", "temp"], id="day"),
                    data_identity("daily temperatures", layout="wide", columns=["day", "hour", "temp"], id="day"),
                    data_identity("daily temperatures", layout="long", columns=["day", "hour", "tmax"], id="day")):
        assert identity_fingerprint(changed) != identity_fingerprint(WHO)
    with pytest.raises(ValueError, match="dataset must be a non-empty name"):
        data_identity(" ", layout="long", columns=[])


def test_an_edited_or_damaged_ledger_is_refused(tmp_path):
    path = tmp_path / "l.ledger"
    with Ledger(path, WHO, cap=5.0) as book:
        for mu in (1.0, 2.0, 1.0):
            book.spend(mu, {"what": "x"})
    lines = path.read_text().splitlines()
    entry = json.loads(lines[2])
    entry["mu"] = 0.5  # someone makes room by lowering a spend
    edited = tmp_path / "edited.ledger"
    edited.write_text("\n".join([*lines[:2], json.dumps(entry), *lines[3:]]) + "\n")
    with pytest.raises(LedgerError, match="was edited: line 4 does not follow line 3.*honesty aid"):
        with Ledger(edited, WHO):
            pass
    dropped = tmp_path / "dropped.ledger"  # a spend removed from the middle
    dropped.write_text("\n".join([lines[0], lines[1], lines[3]]) + "\n")
    with pytest.raises(LedgerError, match="was edited"):
        with Ledger(dropped, WHO):
            pass
    cut = tmp_path / "cut.ledger"
    cut.write_text(path.read_text()[:-5])
    with pytest.raises(LedgerError, match="last line is incomplete"):
        with Ledger(cut, WHO):
            pass
    other = tmp_path / "notes.txt"
    other.write_text('{"hello": 1}\n')
    with pytest.raises(LedgerError, match="not a dpfda budget ledger"):
        with Ledger(other, WHO, cap=1.0):
            pass


def test_changed_choices_and_checks_are_recorded(tmp_path):
    path = tmp_path / "l.ledger"
    with Ledger(path, WHO, cap=2.0) as book:
        book.note_check({"what": "diagnostics only"}, {"radius": 50, "space": "fourier:7"})
        assert book.total == 0.0 and book.releases == []
        assert book.changed({"radius": 20, "space": "fourier:7"}) == [("radius", 50, 20)]
        book.spend(1.0, {"what": "FTP"}, {"radius": 20, "space": "fourier:7"})
    kinds = [json.loads(line).get("kind") for line in path.read_text().splitlines()]
    assert kinds == [None, "check", "release"]


def _hold(path, started, release_at, spend=True):
    with Ledger(path, WHO) as book:
        started.set()
        if spend:
            book.check(1.0)
        while time.monotonic() < release_at:
            time.sleep(0.01)
        if spend:
            book.spend(1.0, {"what": "first"})


def test_a_second_release_waits_for_the_first_and_sees_its_spend(tmp_path):
    path = tmp_path / "l.ledger"
    with Ledger(path, WHO, cap=1.2):
        pass
    started = threading.Event()
    first = threading.Thread(target=_hold, args=(path, started, time.monotonic() + 0.5))
    first.start()
    started.wait(5)
    with pytest.raises(BudgetExceeded):  # waits for the first, then finds μ = 1 spent of 1.2
        with Ledger(path, WHO, wait=10) as book:
            book.spend(1.0, {"what": "second"})
    first.join()
    with Ledger(path, WHO) as book:
        assert len(book.releases) == 1
    with pytest.raises(LedgerError, match="in use by another release"):  # no waiting: refused by name
        started.clear()
        holder = threading.Thread(target=_hold, args=(path, started, time.monotonic() + 0.5, False))
        try:
            holder.start()
            started.wait(5)
            with Ledger(path, WHO, wait=0.0):
                pass
        finally:
            holder.join()


def test_without_the_lock_the_race_overspends(tmp_path, monkeypatch):
    """The negative control of the test above: the same two releases with the lock removed."""
    monkeypatch.setattr(ledger_module, "_lock", lambda fd, wait, path: None)
    path = tmp_path / "l.ledger"
    with Ledger(path, WHO, cap=1.2):
        pass
    started = threading.Event()
    first = threading.Thread(target=_hold, args=(path, started, time.monotonic() + 0.5))
    first.start()
    started.wait(5)
    with Ledger(path, WHO) as book:  # reads before the first has written: sees nothing spent
        book.spend(1.0, {"what": "second"})
    first.join()
    lines = path.read_text().splitlines()
    assert [json.loads(line).get("kind") for line in lines] == [None, "release", "release"]  # μ √2 > 1.2
