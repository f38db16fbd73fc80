"""The labels of the verdict matrix: dpfda_book.report.claim_labels."""

from __future__ import annotations

import pytest

from dpfda_book.report import claim_labels as lab
from dpfda_book.report import claim_verdicts as cv
from dpfda_book.simulation.models import LAWS


def test_every_verdict_has_its_own_mark():
    assert set(lab.VERDICT_MARKS) == set(cv.VERDICTS)
    assert len(set(lab.VERDICT_MARKS.values())) == len(cv.VERDICTS)  # readable without colour


def test_law_label_names_the_shape_and_the_share():
    labels = [lab.law_label(law) for law in LAWS]
    assert labels[0] == "default" and len(set(labels)) == len(LAWS)
    assert lab.law_label("shift-0.25") == "shift 0.25" and lab.law_label("wave-0.9") == "wave 0.9"
    assert all(" " in x for x in labels[1:]) and not any("-" in x for x in labels)
    with pytest.raises(ValueError, match="unknown law 'uniform'"):
        lab.law_label("uniform")
