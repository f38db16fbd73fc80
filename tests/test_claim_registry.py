"""The registry of the paper's claims: dpfda_book.report.claim_registry.

Every Part II observation has exactly one record, each record carries the paper's location, our
paraphrase, our test and its reasons; the chapters show the registry's verdicts and compute none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dpfda_book.report import claim_encodings as enc
from dpfda_book.report import claim_registry as reg
from dpfda_book.simulation.studies import get_study

from _claim_tables import fig6_table, results_table

ROOT = Path(__file__).resolve().parents[1]
PART_II = ["sim_dimension", "sim_radius", "sim_noise", "sim_polynomial"]

def _observation_labels() -> list[str]:
    labels = []
    for name in PART_II:
        nb = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            text = "".join(cell["source"])
            for block in re.findall(r"```\{prf:observation\}.*?```", text, flags=re.S):
                labels += re.findall(r":label:\s*(\S+)", block)
    return labels


def test_every_part_ii_observation_has_exactly_one_claim():
    labels = _observation_labels()
    assert len(labels) >= 21
    assert sorted(labels) == sorted(c.label for c in reg.CLAIMS)
    assert len({c.id for c in reg.CLAIMS}) == len(reg.CLAIMS)
    for c in reg.CLAIMS:
        assert c.doc, c.id  # each encoding says what it tests
        assert set(c.studies) <= {"fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table1"}


def test_every_record_carries_location_paraphrase_test_and_reasons():
    names = [c.name for c in reg.CLAIMS]
    assert len(set(names)) == len(names)
    for c in reg.CLAIMS:
        assert re.fullmatch(r"(Figure|Table) \d, claim \d", c.name), c.name
        study = c.studies[0]
        assert c.where == get_study(study).source and c.where  # the paper's location, from the study
        assert c.paper and c.test and c.statement
        assert c.thresholds and all(len(t) == 2 and t[0] and len(t[1]) > 20 for t in c.thresholds), c.id
    table = reg.registry_table()
    assert list(table.index) == names
    assert list(table.columns) == ["paper", "the paper says (our words)", "we test", "thresholds and why"]


def test_every_claim_has_one_build_function_and_its_docstring_is_the_test():
    assert list(enc.BUILDS) == [c.id for c in reg.CLAIMS]  # one each, in the book's order
    for c in reg.CLAIMS:
        assert c.build is enc.BUILDS[c.id], c.id
        assert ":data:" not in c.test and c.test.splitlines()[0] == c.build.__doc__.strip().splitlines()[0], c.id
    assert reg.get_claim("fig5-claim-7").studies == ("fig5", "fig2")  # a row's other studies follow the id


def test_bad_input_errors():
    with pytest.raises(ValueError, match="unknown claim 'fig9-claim-1'"):
        reg.get_claim("fig9-claim-1")
    with pytest.raises(TypeError, match="claim_id must be a string"):
        reg.get_claim(3)
    with pytest.raises(ValueError, match="needs the results of study 'fig6'"):
        reg.claim_components("fig6-claim-6", {"fig5": results_table("fig5", 1.0)})
    with pytest.raises(TypeError, match="must be a results DataFrame"):
        reg.claim_components("fig6-claim-6", {"fig6": [1, 2]})
    with pytest.raises(ValueError, match="lacks columns"):
        reg.claim_components("fig6-claim-6", {"fig6": fig6_table(lambda m: 1.0).drop(columns=["se_log_ratio"])})
    with pytest.raises(ValueError, match="holds rows of study"):
        reg.claim_components("fig6-claim-6", {"fig6": results_table("fig4", 1.0)})


_OWN_VERDICT = re.compile(r"\b(?:ev|evidence)\.(ratio_above|ratio_below|ratio_near|ratio_falls|ratio_rises|"
                          r"exceeds|within)\(|\bcl\.verdicts\(|\bcl\.components_table\(")


def _claim_cells(name):
    """For each observation box of a chapter: its label, its text, and the code cells after it
    up to the next markdown cell (the cells that judge the claim)."""
    nb = json.loads((ROOT / "book" / f"{name}.ipynb").read_text())
    cells = nb["cells"]
    out = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for block in re.findall(r"```\{prf:observation\}.*?```", "".join(cell["source"]), flags=re.S):
            label = re.search(r":label:\s*(\S+)", block).group(1)
            code = []
            for nxt in cells[i + 1:]:
                if nxt["cell_type"] == "markdown":
                    break
                code.append("".join(nxt["source"]))
            out.append((label, block, code))
    return out


def test_every_claim_a_chapter_asserts_is_a_registry_entry_judged_by_the_registry():
    by_label = {c.label: c for c in reg.CLAIMS}
    seen = []
    for name in PART_II:
        for label, block, code in _claim_cells(name):
            claim = by_label[label]  # every observation box is a claim of the registry
            seen.append(label)
            assert claim.name in block.splitlines()[0], (label, block.splitlines()[0])
            assert ":nonumber:" in block  # one name: the registry's, not "Observation 10.2" as well
            assert claim.paper in block, label  # the statement is the registry's paraphrase
            first = code[0] if code else ""
            assert f'cl.judge("{claim.id}"' in first and re.search(r"assert .*\bverdict\b", first), label
            for src in code:
                assert not _OWN_VERDICT.search(src), (label, _OWN_VERDICT.search(src).group(0))
    assert sorted(seen) == sorted(by_label)


def test_no_chapter_computes_a_verdict_for_a_claim_of_the_paper():
    """Outside the registry, no notebook runs the matrix machinery on a claim, and no chapter's
    claim cell falls back on evidence booleans (checked above); here: the law reruns are gone."""
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        src = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        if path.stem == "robustness":
            continue  # the matrix itself: the one place that judges claims under laws
        assert "cl.verdicts(" not in src and "cl.components_table(" not in src, path.name
        assert "get_claim(" not in src, path.name
