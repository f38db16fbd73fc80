"""The face of the claims: dpfda_book.report.claims re-exports every name from the module of its job.

The chapters, the benchmarks and the tests write ``from dpfda_book.report import claims as cl`` and
``cl.judge(...)``; each name is defined in one of the claim modules (their own tests are
tests/test_claim_*.py, test_activation_bounds.py, test_law_runs.py, test_law_components.py and
test_law_null.py).
"""

from __future__ import annotations

import pytest

from dpfda_book.report import (
    activation_bounds,
    claim_encodings,
    claim_labels,
    claim_registry,
    claim_verdicts,
    law_components,
    law_null,
    law_runs,
)
from dpfda_book.report import claims as cl

from _claim_tables import fig6_table

HOMES = (activation_bounds, claim_encodings, claim_registry, claim_labels, claim_verdicts, law_runs, law_components,
         law_null)


def test_every_name_of_the_face_is_the_object_of_its_home_module():
    homes = {name: mod for mod in HOMES for name in mod.__all__}
    assert sum(len(mod.__all__) for mod in HOMES) == len(homes)  # each name has one home
    assert sorted(cl.__all__) == sorted(homes)  # the face names every public name of the claims, no other
    for name in cl.__all__:
        assert getattr(cl, name) is getattr(homes[name], name), name


@pytest.mark.parametrize("name, home", [("judge", "claim_verdicts"), ("Claim", "claim_registry"),
                                        ("Component", "claim_encodings"), ("simulate", "law_runs"),
                                        ("theory_activation", "activation_bounds"), ("law_label", "claim_labels")])
def test_the_functions_are_defined_in_their_home_not_in_the_face(name, home):
    assert getattr(cl, name).__module__ == f"dpfda_book.report.{home}"


def test_the_face_judges_as_the_home_module_does():
    j = cl.judge("fig6-claim-6", {"fig6": fig6_table({2: 0.5, 4: 0.5, 6: 0.5, 8: 2.0}.get)})
    assert isinstance(j, claim_verdicts.Judgement) and j.verdict == "holds"
