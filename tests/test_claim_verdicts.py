"""From components to verdicts: dpfda_book.report.claim_verdicts.

The verdict rule (one opposite component fails a claim), the Holm and Bonferroni corrections and
their family, judge, classify, bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpfda_book.report import claim_verdicts as cv
from dpfda_book.simulation.models import LAWS

from _claim_tables import fig6_table


def test_one_opposite_component_is_enough_to_fail():
    mostly = {2: 0.5, 4: 0.5, 6: 2.0, 8: 2.0}      # m = 6 significantly the wrong way
    comp = cv.components_table({"default": {"fig6": fig6_table(mostly.get)}}, claims=["fig6-claim-6"])
    v = cv.verdicts(comp)
    assert v["verdict"].iloc[0] == "fails" and v["against"].iloc[0] == 1 and v["for"].iloc[0] == 3


def test_the_matrix_correction_is_over_all_laws():
    """A component at z = 3.5 is significant alone, not among thousands (Bonferroni)."""
    z = 3.5
    end = {2: 0.5, 4: 0.5, 6: 0.5, 8: math.exp(z * 0.01)}
    alone = cv.components_table({"default": {"fig6": fig6_table(end.get)}}, claims=["fig6-claim-6"])
    assert cv.verdicts(alone, method="bonferroni")["verdict"].iloc[0] == "holds"
    big = pd.concat([alone] * 1000, ignore_index=True)
    copy = np.arange(len(big)) // len(alone)  # copy k: claim c{k} under one law
    big["law"] = [LAWS[k % len(LAWS)] for k in copy]
    big["claim"] = [f"c{k}" for k in copy]
    v = cv.verdicts(big, method="bonferroni")
    assert (v["verdict"] == "inconclusive").all()


def test_bonferroni_and_holm():
    p = np.array([0.001, 0.012, 0.02, 0.04, 0.5])
    assert cv.adjust(p, 0.05, "bonferroni").tolist() == [True, False, False, False, False]
    # Holm: 0.001 <= .05/5, 0.012 <= .05/4, 0.02 > .05/3 stops the step-down.
    assert cv.adjust(p, 0.05, "holm").tolist() == [True, True, False, False, False]
    # order does not matter
    perm = np.array([3, 0, 4, 2, 1])
    assert cv.adjust(p[perm], 0.05, "holm").tolist() == cv.adjust(p, 0.05, "holm")[perm].tolist()
    # Holm rejects everything Bonferroni does, and never more than the uncorrected test
    rng = np.random.default_rng(0)
    q = rng.random(200) ** 3
    b, h = cv.adjust(q, 0.05, "bonferroni"), cv.adjust(q, 0.05, "holm")
    assert np.all(h[b]) and not np.any(h & (q > 0.05))
    assert cv.adjust(np.array([]), 0.05).size == 0


def test_holm_keeps_the_family_error_rate():
    """Under the null (uniform p-values), the share of families with any rejection is <= alpha."""
    rng = np.random.default_rng(1)
    hits = sum(cv.adjust(rng.random(50), 0.1).any() for _ in range(2000))
    se = math.sqrt(0.1 * 0.9 / 2000)
    assert hits / 2000 <= 0.1 + 4 * se


def test_bad_input_errors():
    with pytest.raises(ValueError, match="unknown law 'uniform'"):
        cv.components_table({"uniform": {"fig6": fig6_table(lambda m: 1.0)}}, claims=["fig6-claim-6"])
    with pytest.raises(ValueError, match="holds rows of law"):
        cv.components_table({"shift-0.5": {"fig6": fig6_table(lambda m: 1.0)}}, claims=["fig6-claim-6"])
    with pytest.raises(ValueError, match="method must be 'holm' or 'bonferroni'"):
        cv.adjust([0.1], method="sidak")
    with pytest.raises(ValueError, match="alpha must be in"):
        cv.adjust([0.1], alpha=1.5)
    with pytest.raises(ValueError, match="probabilities in"):
        cv.adjust([1.5])


def test_classify():
    H, F, U = "holds", "fails", "inconclusive"
    #            default shift 0 .25 .5 .75 .9 | wave .25 .5 .75 .9  (S = 0: shift-0 for both)
    mat = pd.DataFrame([[H] * 10, [F] * 10], index=["a", "b"], columns=list(LAWS))
    mat.loc["c"] = [H] + [F] * 9
    mat.loc["d"] = [F, F, F, H, H, H, F, H, H, H]   # by S, the same for both shapes
    mat.loc["e"] = [F, F, F, H, H, H, F, F, H, H]   # S = 0.5: shift holds, wave fails; and by S
    mat.loc["h"] = [H, U, H, H, H, H, F, F, F, F]   # the shape alone: each shape keeps its verdict
    mat.loc["i"] = [U, H, U, U, U, U, F, F, F, F]   # wave by S, through its S = 0, shift-0
    mat.loc["f"] = [H, U, H, H, U, H, H, H, H, U]   # never fails: power, not the law
    mat.loc["g"] = [U] * 10
    cats = cv.classify(mat)
    assert cats.to_dict() == {"a": "robust", "b": "none", "c": "default only", "d": "norm",
                              "e": "shape and norm", "f": "undecided", "g": "none", "h": "shape", "i": "norm"}
    with pytest.raises(ValueError, match="lacks the laws"):
        cv.classify(mat.drop(columns=["wave-0.9"]))
    with pytest.raises(TypeError, match="matrix must be a DataFrame"):
        cv.classify(mat.to_numpy())


def test_holm_family_is_the_whole_matrix():
    """verdicts corrects over every component of every claim and law at once, whatever their order;
    correcting per law instead would reject more."""
    rng = np.random.default_rng(4)
    rows = []
    for law in LAWS[:4]:
        for claim in ("c1", "c2", "c3"):
            for k in range(20):
                z = rng.normal(3.2, 0.3)
                rows.append({"claim": claim, "law": law, "component": f"k{k}", "estimate": z, "se": 1.0,
                             "direction": 1, "z": z, "df": np.nan, "p": 2 * math.erfc(z / math.sqrt(2)) / 2})
    comp = pd.DataFrame(rows)
    v = cv.verdicts(comp)
    assert v.attrs["k"] == len(comp)
    shuffled = cv.verdicts(comp.sample(frac=1, random_state=0))
    key = ["claim", "law"]
    assert v.sort_values(key)["verdict"].tolist() == shuffled.sort_values(key)["verdict"].tolist()
    per_law_for = sum(int(cv.verdicts(g)["for"].sum()) for _, g in comp.groupby("law"))
    assert per_law_for > v["for"].sum()  # a smaller family rejects more: the family matters
    sig = cv.adjust(comp["p"].to_numpy(), 0.05, "holm")
    assert v.attrs["components"]["significant"].tolist() == sig.tolist()


def test_judge_on_one_claim():
    j = cv.judge("fig6-claim-6", {"fig6": fig6_table({2: 2.0, 4: 2.0, 6: 0.5, 8: 0.5}.get)})
    assert j.verdict == "fails" and j.claim.name == "Figure 6, claim 6"
    assert [c.split(":")[0] for c in j.against] == ["m=2", "m=4", "m=8"]
    s = j.summary()
    assert s.loc["Figure 6, claim 6", "verdict"] == "✗ fails" and s.loc["Figure 6, claim 6", "against"] == 3


def test_judge_corrects_at_alpha_over_the_number_of_claims():
    """A chapter's family is declared and common: each claim at alpha / C, C = len(CLAIMS), so
    that the C claims' conditional results together keep alpha (a union bound)."""
    from dpfda_book.report.claim_registry import CLAIMS

    tables = {"fig6": fig6_table({2: 0.5, 4: 0.5, 6: 0.5, 8: 2.0}.get)}
    j = cv.judge("fig6-claim-6", tables)
    assert j.family_size == len(CLAIMS) and j.alpha == 0.05
    assert math.isclose(j.level, 0.05 / len(CLAIMS), rel_tol=1e-12, abs_tol=0.0)  # one division each: a rounding
    row = j.record().iloc[:, 0]["this run (one draw of the curves, conditional design)"]
    assert f"α/{len(CLAIMS)} = {0.05 / len(CLAIMS):.2g}" in row and "together at 0.05" in row
    # the same components, corrected by hand at alpha / C
    comp = cv.components_table({"default": tables}, claims=["fig6-claim-6"])
    by_hand = cv.adjust(comp["p"].to_numpy(), 0.05 / len(CLAIMS), "holm")
    assert j.components["significant"].tolist() == by_hand.tolist()
    assert cv.judge("fig6-claim-6", tables, family_size=4, alpha=0.1).level == 0.1 / 4


def test_a_component_significant_at_alpha_but_not_at_alpha_over_c_is_undecided():
    z = 2.5  # two-sided p about 0.012: below 0.05, above 0.05 / 22
    end = {2: 0.5, 4: 0.5, 6: 0.5, 8: math.exp(z * 0.01)}  # se of the log ratio: 0.01
    tables = {"fig6": fig6_table(end.get)}
    alone = cv.judge("fig6-claim-6", tables, family_size=1)
    assert alone.verdict == "holds" and alone.level == 0.05
    j = cv.judge("fig6-claim-6", tables)
    assert j.verdict == "inconclusive"
    assert [c.split(":")[0] for c in j.undecided] == ["m=8"] and not j.against
    p8 = float(j.components.set_index("component").loc[j.undecided[0], "p"])
    assert j.level < p8 < 0.05


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "22", None])
def test_judge_refuses_a_bad_family_size(bad):
    tables = {"fig6": fig6_table(lambda m: 1.0)}
    with pytest.raises(ValueError, match="family_size must be a positive integer"):
        cv.judge("fig6-claim-6", tables, family_size=bad)


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, True, "0.05"])
def test_judge_refuses_a_bad_alpha(bad):
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        cv.judge("fig6-claim-6", {"fig6": fig6_table(lambda m: 1.0)}, alpha=bad)
