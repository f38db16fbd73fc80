"""The claims x laws matrix: dpfda.report.claims.

Every Part II observation has a claim; the verdict rule on synthetic tables
(holds / fails / inconclusive); the Holm and Bonferroni corrections; bad input.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpfda.maths.data import LAWS
from dpfda.report import claims as cl
from dpfda.simulation.studies import get_study
from dpfda.simulation.tabulate import RESULT_COLUMNS

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
    assert sorted(labels) == sorted(c.label for c in cl.CLAIMS)
    assert len({c.id for c in cl.CLAIMS}) == len(cl.CLAIMS)
    for c in cl.CLAIMS:
        assert c.doc, c.id  # each encoding says what it tests
        assert set(c.studies) <= {"fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table1"}


# ---------------------------------------------------------------------------
# Synthetic results tables
# ---------------------------------------------------------------------------


def _table(study_name: str, ratio, p=0.0, se=0.01, err=1.0, err_se=0.001, reps=1000, law="default",
           err_ptf=None):
    """A results table with the columns of run_studies for one of the paper's studies;
    ``ratio``, ``p``, ``err`` and ``err_ptf`` (default: ``err``) are functions of a row's
    parameters (or constants)."""
    study = get_study(study_name, law=law)
    rows = []
    call = lambda f, s: f(s) if callable(f) else f  # noqa: E731
    for s in study.settings:
        row = dict.fromkeys(RESULT_COLUMNS, np.nan)
        row.update(s.params())
        r = call(ratio, s)
        row.update(study=study_name, reps=reps, seed=0, ratio=r, se_log_ratio=se,
                   ratio_lo=r * math.exp(-1.96 * se), ratio_hi=r * math.exp(1.96 * se),
                   err_ftp=call(err, s), se_ftp=err_se, err_ptf=call(err if err_ptf is None else err_ptf, s),
                   se_ptf=err_se,
                   p_ptf_active=call(p, s), p_ftp_active=0.0)
        rows.append(row)
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _fig6(end_ratio):
    """Figure 6 with σ₀ = 10 ratios at n = 4096 given by end_ratio(m); 1 elsewhere."""
    return _table("fig6", lambda s: end_ratio(s.m) if (s.sigma0 == 10.0 and s.n == 4096) else 1.0)


def _verdict(claim_id, tables, law="default", **kw):
    comp = cl.components_table({law: tables}, claims=[claim_id])
    return cl.verdicts(comp, **kw)["verdict"].iloc[0]


def test_fig6_claim_6_holds_fails_and_is_inconclusive_as_built():
    paper = {2: 0.5, 4: 0.5, 6: 0.5, 8: 2.0}       # PTF wins only for m = 8: the paper
    assert _verdict("fig6-claim-6", {"fig6": _fig6(paper.get)}) == "holds"
    flipped = {2: 2.0, 4: 2.0, 6: 0.5, 8: 0.5}     # our default run's order
    assert _verdict("fig6-claim-6", {"fig6": _fig6(flipped.get)}) == "fails"
    noise = {2: 0.999, 4: 1.001, 6: 0.998, 8: 1.002}  # within 0.2 SE of one
    assert _verdict("fig6-claim-6", {"fig6": _fig6(noise.get)}) == "inconclusive"


def _fig3_low_noise(end):
    """Figure 3 with sigma0 = 0.1 ratios falling from 1 at n = 4 to end(T) at n = 4096."""
    def ratio(s):
        if s.sigma0 != 0.1:
            return 1.0
        return 1.0 if s.n == 4 else (end(s.T) if s.n == 4096 else 0.9 * end(s.T) + 0.1)
    return _table("fig3", ratio)


def test_fig3_claim_1_reads_close_to_as_the_two_sided_margin():
    """"Near the noiseless references" is a factor 1.5 either way around 1/T, one component pair per T
    (no second test of the same quantity at T = 2)."""
    near = _verdict("fig3-claim-1", {"fig3": _fig3_low_noise(lambda T: 1.2 / T)})
    assert near == "holds"
    assert _verdict("fig3-claim-1", {"fig3": _fig3_low_noise(lambda T: 1.8 / T)}) == "fails"  # beyond 1.5/T
    assert _verdict("fig3-claim-1", {"fig3": _fig3_low_noise(lambda T: 0.5 / T)}) == "fails"  # two-sided
    comp = cl.components_table({"default": {"fig3": _fig3_low_noise(lambda T: 1.2 / T)}}, claims=["fig3-claim-1"])
    assert len(comp) == 12 and comp["component"].is_unique
    assert sum("T=2" in c for c in comp["component"]) == 3


def _radius(study_name, end_ftp="log_n", **changed):
    """Figure 2 or 5 with n × error given per (rule, n, method); ``changed`` maps
    "rule_n_method" to a new value.  The paper's picture: B leads up to n = 256 (others
    1.2), every rule at 1.1 at n = 2⁹, and at 2¹² B at 10 and ``end_ftp`` (FTP) or √log n
    (PTF) the best."""
    def scaled(rule, n, method):
        key = f"{rule}_{n}_{method}"
        if key in changed:
            return changed[key]
        if n <= 256:
            return 1.0 if rule == "B" else 1.2
        if n == 512:
            return 1.1
        end = end_ftp if method == "ftp" else "sqrt_log_n"
        other = "sqrt_log_n" if end == "log_n" else "log_n"
        return {"B": 10.0, end: 1.0, other: 1.3, "sqrt_n": 2.0, "n_2_3": 3.0}[rule]
    return _table(study_name, 1.0, err=lambda s: scaled(s.radius_rule, s.n, "ftp") / s.n,
                  err_ptf=lambda s: scaled(s.radius_rule, s.n, "ptf") / s.n, err_se=1e-6)


def test_fig2_claim_1_asks_that_no_rule_leads_everywhere_a_third_included():
    assert _verdict("fig2-claim-1", {"fig2": _radius("fig2")}) == "holds"
    # √n leads at n = 4 (and loses at the end): B and log n are not the best rules
    assert _verdict("fig2-claim-1", {"fig2": _radius("fig2", sqrt_n_4_ftp=0.8)}) == "fails"
    # the oracle still leads at the end
    assert _verdict("fig2-claim-1", {"fig2": _radius("fig2", B_4096_ptf=0.9)}) == "fails"


@pytest.mark.parametrize("claim_id, study, rule_n", [
    ("fig2-claim-2", "fig2", ("sqrt_n", 4)),        # B at n = 4, against each rule
    ("fig2-claim-4", "fig2", ("B", 16)),            # √log n at n = 8, …, 256, the oracle included
    ("fig5-claim-4", "fig5", ("sqrt_log_n", 64)),   # B at n = 64, √log n included
])
def test_performs_well_has_one_reading_within_1_5_of_every_rule(claim_id, study, rule_n):
    end = "sqrt_log_n" if study == "fig5" else "log_n"
    assert _verdict(claim_id, {study: _radius(study, end)}) == "holds"
    rule, n = rule_n
    # a rival more than 1.5 times better (in FTP) fails the claim
    worse = {f"{rule}_{n}_ftp": 0.4 if rule != "B" else 0.45}
    assert _verdict(claim_id, {study: _radius(study, end, **worse)}) == "fails"
    # within the factor 1.5 is not a failure
    near = {f"{rule}_{n}_ftp": 0.8 if rule != "B" else 0.9}
    assert _verdict(claim_id, {study: _radius(study, end, **near)}) == "holds"
    assert "performs well" in cl.__doc__ and "within a factor 1.5 of every" in cl.get_claim(claim_id).thresholds[0][0]


def test_fig5_claim_7_the_preferred_radius_depends_on_the_space():
    claim = cl.get_claim("fig5-claim-7")
    assert claim.studies == ("fig5", "fig2") and claim.label == "sim-poly-claim-7"
    fig5 = _radius("fig5", "sqrt_log_n")
    assert _verdict("fig5-claim-7", {"fig2": _radius("fig2"), "fig5": fig5}) == "holds"
    # the same rule preferred in both spaces
    assert _verdict("fig5-claim-7", {"fig2": _radius("fig2", "sqrt_log_n"), "fig5": fig5}) == "fails"
    with pytest.raises(ValueError, match="needs the results of study 'fig2'"):
        cl.claim_components("fig5-claim-7", {"fig5": fig5})


def test_close_to_has_one_reading_in_the_registry_docs():
    doc = " ".join(cl.__doc__.split())
    assert '"x is *close to* (near, agrees with) y": abs(log x − log y) < δ = log 1.5' in doc
    assert '"close to or below y": log x − log y < δ only' in doc


def test_one_opposite_component_is_enough_to_fail():
    mostly = {2: 0.5, 4: 0.5, 6: 2.0, 8: 2.0}      # m = 6 significantly the wrong way
    comp = cl.components_table({"default": {"fig6": _fig6(mostly.get)}}, claims=["fig6-claim-6"])
    v = cl.verdicts(comp)
    assert v["verdict"].iloc[0] == "fails" and v["against"].iloc[0] == 1 and v["for"].iloc[0] == 3


def test_equivalence_components_table1_claim_5():
    """p̂ = 0.755 within P_MARGIN: holds at 0.76 (SE ~ 0.01), fails at 0.40, inconclusive
    when the estimate sits at the margin's edge."""
    def tab(p01):
        return {"table1": _table("table1", 1.0, p=lambda s: p01 if (s.T == 8 and s.mu == 0.1 and s.n == 1024)
                                 else 0.0, reps=2000)}
    assert _verdict("table1-claim-5", tab(0.76)) == "holds"
    assert _verdict("table1-claim-5", tab(0.40)) == "fails"
    assert _verdict("table1-claim-5", tab(cl.PAPER_P + cl.P_MARGIN)) == "inconclusive"


def test_fig1_claim_1_on_an_exact_curve():
    """Ratio (1/T)(1 + 100/n): falls to 1/T. Holds with tiny SEs; with the ratio
    stuck at 1 it fails (does not approach 1/T)."""
    good = _table("fig1", lambda s: (1 / s.T) * (1 + 100 / s.n), se=0.01)
    assert _verdict("fig1-claim-1", {"fig1": good}) == "holds"
    stuck = _table("fig1", 1.0, se=0.01)
    assert _verdict("fig1-claim-1", {"fig1": stuck}) == "fails"


def test_the_matrix_correction_is_over_all_laws():
    """A component at z = 3.5 is significant alone, not among thousands (Bonferroni)."""
    z = 3.5
    end = {2: 0.5, 4: 0.5, 6: 0.5, 8: math.exp(z * 0.01)}
    alone = cl.components_table({"default": {"fig6": _fig6(end.get)}}, claims=["fig6-claim-6"])
    assert cl.verdicts(alone, method="bonferroni")["verdict"].iloc[0] == "holds"
    big = pd.concat([alone] * 1000, ignore_index=True)
    copy = np.arange(len(big)) // len(alone)  # copy k: claim c{k} under one law
    big["law"] = [LAWS[k % len(LAWS)] for k in copy]
    big["claim"] = [f"c{k}" for k in copy]
    v = cl.verdicts(big, method="bonferroni")
    assert (v["verdict"] == "inconclusive").all()


# ---------------------------------------------------------------------------
# Multiplicity corrections
# ---------------------------------------------------------------------------


def test_bonferroni_and_holm():
    p = np.array([0.001, 0.012, 0.02, 0.04, 0.5])
    assert cl.adjust(p, 0.05, "bonferroni").tolist() == [True, False, False, False, False]
    # Holm: 0.001 <= .05/5, 0.012 <= .05/4, 0.02 > .05/3 stops the step-down.
    assert cl.adjust(p, 0.05, "holm").tolist() == [True, True, False, False, False]
    # order does not matter
    perm = np.array([3, 0, 4, 2, 1])
    assert cl.adjust(p[perm], 0.05, "holm").tolist() == cl.adjust(p, 0.05, "holm")[perm].tolist()
    # Holm rejects everything Bonferroni does, and never more than the uncorrected test
    rng = np.random.default_rng(0)
    q = rng.random(200) ** 3
    b, h = cl.adjust(q, 0.05, "bonferroni"), cl.adjust(q, 0.05, "holm")
    assert np.all(h[b]) and not np.any(h & (q > 0.05))
    assert cl.adjust(np.array([]), 0.05).size == 0


def test_holm_keeps_the_family_error_rate():
    """Under the null (uniform p-values), the share of families with any rejection is <= alpha."""
    rng = np.random.default_rng(1)
    hits = sum(cl.adjust(rng.random(50), 0.1).any() for _ in range(2000))
    se = math.sqrt(0.1 * 0.9 / 2000)
    assert hits / 2000 <= 0.1 + 4 * se


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def test_bad_input_errors():
    with pytest.raises(ValueError, match="unknown claim 'fig9-claim-1'"):
        cl.get_claim("fig9-claim-1")
    with pytest.raises(TypeError, match="claim_id must be a string"):
        cl.get_claim(3)
    with pytest.raises(ValueError, match="needs the results of study 'fig6'"):
        cl.claim_components("fig6-claim-6", {"fig5": _table("fig5", 1.0)})
    with pytest.raises(TypeError, match="must be a results DataFrame"):
        cl.claim_components("fig6-claim-6", {"fig6": [1, 2]})
    with pytest.raises(ValueError, match="lacks columns"):
        cl.claim_components("fig6-claim-6", {"fig6": _fig6(lambda m: 1.0).drop(columns=["se_log_ratio"])})
    with pytest.raises(ValueError, match="holds rows of study"):
        cl.claim_components("fig6-claim-6", {"fig6": _table("fig4", 1.0)})
    with pytest.raises(ValueError, match="unknown law 'uniform'"):
        cl.components_table({"uniform": {"fig6": _fig6(lambda m: 1.0)}}, claims=["fig6-claim-6"])
    with pytest.raises(ValueError, match="holds rows of law"):
        cl.components_table({"shift-0.5": {"fig6": _fig6(lambda m: 1.0)}}, claims=["fig6-claim-6"])
    with pytest.raises(ValueError, match="method must be 'holm' or 'bonferroni'"):
        cl.adjust([0.1], method="sidak")
    with pytest.raises(ValueError, match="alpha must be in"):
        cl.adjust([0.1], alpha=1.5)
    with pytest.raises(ValueError, match="probabilities in"):
        cl.adjust([1.5])
    with pytest.raises(ValueError, match="se must be finite and > 0"):
        cl.Component("x", 1.0, 0.0)
    with pytest.raises(ValueError, match="estimate must be finite"):
        cl.Component("x", float("nan"), 1.0)
    with pytest.raises(ValueError, match="ratio must be finite and > 0"):
        cl.claim_components("fig6-claim-6", {"fig6": _fig6(lambda m: 0.0)})


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
    cats = cl.classify(mat)
    assert cats.to_dict() == {"a": "robust", "b": "none", "c": "default only", "d": "norm",
                              "e": "shape and norm", "f": "undecided", "g": "none", "h": "shape", "i": "norm"}
    with pytest.raises(ValueError, match="lacks the laws"):
        cl.classify(mat.drop(columns=["wave-0.9"]))
    with pytest.raises(TypeError, match="matrix must be a DataFrame"):
        cl.classify(mat.to_numpy())


# ---------------------------------------------------------------------------
# The registry: one record per claim, with the paper's words, our test and its reasons
# ---------------------------------------------------------------------------


def test_every_record_carries_location_paraphrase_test_and_reasons():
    names = [c.name for c in cl.CLAIMS]
    assert len(set(names)) == len(names)
    for c in cl.CLAIMS:
        assert re.fullmatch(r"(Figure|Table) \d, claim \d", c.name), c.name
        study = c.studies[0]
        assert c.where == get_study(study).source and c.where  # the paper's location, from the study
        assert c.paper and c.test and c.statement
        assert c.thresholds and all(len(t) == 2 and t[0] and len(t[1]) > 20 for t in c.thresholds), c.id
    table = cl.registry_table()
    assert list(table.index) == names
    assert list(table.columns) == ["paper", "the paper says (our words)", "we test", "thresholds and why"]


def test_no_duplicated_helpers():
    """The log-ratio helpers live in dpfda.report.evidence, the sources in Study.source."""
    import dpfda.report.claims as mod

    for name in ("_lr", "_SOURCES"):
        assert not hasattr(mod, name), name
    assert cl._ratio_compared_to.__module__ == "dpfda.report.claims"
    src = Path(mod.__file__).read_text()
    assert "ev.log_ratio(" in src and "def _lr(" not in src


def _random_tables(rng, law="default"):
    """Every study's table with random ratios, errors and activation shares."""
    out = {}
    for name in ("fig1", "table1", "fig2", "fig3", "fig4", "fig5", "fig6"):
        out[name] = _table(name, lambda s: float(np.exp(rng.normal(0, 1))), p=lambda s: float(rng.random()),
                           err=lambda s: float(np.exp(rng.normal(-3, 1))), law=law)
    return out


def test_no_selection_inside_a_test():
    """Which settings a claim reads never depends on the results: the component labels are the same
    on two tables with unrelated values."""
    a, b = _random_tables(np.random.default_rng(1)), _random_tables(np.random.default_rng(2))
    for c in cl.CLAIMS:
        la = [x.label for x in c.components(a)]
        lb = [x.label for x in c.components(b)]
        assert la == lb and la, c.id


def test_table1_claim_6_rows_come_from_bounds_that_hold():
    """The quiet/busy rows are fixed by bounds from the design; the bounds contain the engine's
    activation share (default law and a law near the boundary), within Monte Carlo error."""
    from dpfda.simulation.schedule import run_study

    lo, hi = cl.theory_activation(2, 1.0, 512)
    assert hi <= cl.QUIET_P and lo == 0.0
    lo, hi = cl.theory_activation(8, 0.1, 16)
    assert lo >= 0.5
    for law in ("default", "shift-0.9"):
        df = run_study(get_study("table1", n=[16, 256, 1024], law=law).subset(mu=0.1), reps=400, seed=3)
        for _, r in df.iterrows():
            lower, upper = cl.theory_activation(int(r["T"]), 0.1, int(r["n"]))
            se = 4 * math.sqrt(0.25 / 400)
            assert lower - se <= r["p_ptf_active"] <= upper + se, (law, r["T"], r["n"])
    comps = cl.claim_components("table1-claim-6", {"table1": _table("table1", 1.0)})
    quiet = {c.label.split(":")[0] for c in comps if "quiet" in c.label}
    assert "mu=1 T=2 n=4096" in quiet and not any("T=8" in q for q in quiet)


# ---------------------------------------------------------------------------
# Law-level tables: K latent draws, pooled; the standard error includes the between-draw part
# ---------------------------------------------------------------------------


def test_draw_seeds():
    assert cl.draw_seeds(5, 1) == [5]
    s = cl.draw_seeds(5, 4)
    assert len(set(s)) == 4 and s == cl.draw_seeds(5, 4)
    with pytest.raises(ValueError, match="draws"):
        cl.draw_seeds(5, 0)


def test_pooled_standard_error_matches_a_brute_force_nested_simulation():
    """Toy setting (Figure 1, T = 6, μ = 0.1, n = 4: the latent draw matters). Repeat the whole
    K-draw experiment M times: the spread of the pooled log ratio across the M experiments is
    what its standard error must estimate. The within-draw standard error alone falls short."""
    from dpfda.simulation.schedule import run_study

    study = get_study("fig1", n=[4]).subset(T=6, mu=0.1)
    K, R, M = 5, 100, 60
    est, se_pooled, se_within = [], [], []
    for j in range(M):
        draws = [run_study(study, reps=R, seed=s) for s in cl.draw_seeds(1000 + j, K)]
        pooled = cl.pool_draws(draws).iloc[0]
        est.append(math.log(pooled["ratio"]))
        se_pooled.append(pooled["se_log_ratio"])
        se_within.append(math.sqrt(np.mean([d["se_log_ratio"].iloc[0] ** 2 for d in draws]) / K))
    sd = float(np.std(est, ddof=1))
    rms = float(np.sqrt(np.mean(np.square(se_pooled))))
    rel = 1 / math.sqrt(2 * (M - 1))  # relative standard error of a standard deviation from M values
    assert abs(rms / sd - 1) < 4 * rel * 1.5, (rms, sd)
    assert float(np.sqrt(np.mean(np.square(se_within)))) < 0.8 * sd  # between-draw variance is real here


def test_pool_draws_columns_and_floor():
    a = _table("fig6", 1.0, se=0.05, reps=10)
    b = _table("fig6", 1.0, se=0.05, reps=10)
    pooled = cl.pool_draws([a, b, a])
    assert (pooled["draws"] == 3).all() and (pooled["reps"] == 30).all()
    assert np.allclose(pooled["ratio"], 1.0)
    # identical draws: the across-draw spread is 0, the floor keeps the within part
    assert np.allclose(pooled["se_log_ratio"], 0.05 / math.sqrt(3))
    with pytest.raises(ValueError, match="at least two"):
        cl.pool_draws([a])
    with pytest.raises(ValueError, match="equal repetitions"):
        cl.pool_draws([a, _table("fig6", 1.0, reps=20)])


def test_law_level_components_use_the_pooled_standard_error():
    """A law-level table's component carries the pooled (across-draw) standard error; a component
    that states its own degrees of freedom is tested with Student's t."""
    t5 = _fig6({2: 0.5, 4: 0.5, 6: 0.5, 8: 2.0}.get)
    t5["err_ftp"] = t5["ratio"] * t5["err_ptf"]  # pooling recomputes the ratio from the errors
    spread = t5.copy()
    spread["err_ftp"] = spread["err_ftp"] * 1.3  # a second kind of draw: the ratio moves by 1.3
    pooled = cl.pool_draws([t5, spread, t5, spread, t5])
    comp = cl.components_table({"default": {"fig6": pooled}}, claims=["fig6-claim-6"])
    row = pooled[(pooled["sigma0"] == 10.0) & (pooled["n"] == 4096) & (pooled["m"] == 8)].iloc[0]
    assert comp["se"].iloc[-1] == pytest.approx(row["se_log_ratio"])
    assert row["se_log_ratio"] > 0.01 / math.sqrt(5)  # the between-draw spread, above the within floor
    assert comp["df"].isna().all()  # a normal reference, as random-effects meta-analysis uses
    with pytest.raises(ValueError, match="df must be"):
        cl.Component("x", 3.0, 1.0, 1, df=0.5)


def test_law_level_components_with_the_t_reference_use_k_minus_1_df():
    t5 = _fig6({2: 0.5, 4: 0.5, 6: 0.5, 8: 2.0}.get)
    t5["err_ftp"] = t5["ratio"] * t5["err_ptf"]
    spread = t5.copy()
    spread["err_ftp"] = spread["err_ftp"] * 1.3
    pooled = cl.pool_draws([t5, spread, t5, spread, t5])
    res = {"default": {"fig6": pooled}}
    normal = cl.components_table(res, claims=["fig6-claim-6"])
    t = cl.components_table(res, claims=["fig6-claim-6"], reference="t")
    assert (t["df"] == 4).all() and np.allclose(t["z"], normal["z"])
    assert (t["p"] > normal["p"]).all()  # t on 4 df has the heavier tails
    # one latent draw (no draws column): the normal reference stays
    single = cl.components_table({"default": {"fig6": t5}}, claims=["fig6-claim-6"], reference="t")
    assert single["df"].isna().all()
    with pytest.raises(ValueError, match="reference"):
        cl.components_table(res, claims=["fig6-claim-6"], reference="z")


@pytest.mark.parametrize("draws", [5, 20])
@pytest.mark.parametrize("rho", [0.0, 0.2])
def test_law_level_test_keeps_its_level_at_the_holm_threshold(draws, rho):
    """The test of the test: simulate the pooled statistic under its null (known truth) and count
    rejections at a Holm threshold alpha / k. With Student's t on K - 1 df the rate is not above
    nominal beyond Monte Carlo error; with the normal reference at K = 5 it is (the defect the t
    reference repairs), and the quadrature agrees with the simulation."""
    rng = np.random.default_rng(np.random.SeedSequence([32, draws, int(10 * rho)]))
    level, reps = 0.05 / 100, 400_000  # a family of 100 components: Holm's first threshold
    rate, se = cl.law_level_null_size(level, draws, rho, reference="t", reps=reps, rng=rng)
    assert rate <= level + 3 * se, (rate, se)
    exact, _ = cl.law_level_null_size(level, draws, rho, reference="t")
    assert exact <= level * (1 + 1e-6) and abs(rate - exact) <= 4 * se
    if draws == 5:
        naive, se_n = cl.law_level_null_size(level, draws, rho, reference="normal", reps=reps, rng=rng)
        assert naive > level + 4 * se_n, (naive, se_n)
        assert cl.law_level_null_size(0.05, 5, 0.0, reference="normal")[0] == pytest.approx(0.1216, abs=1e-3)


def test_law_level_null_size_refuses_bad_input():
    with pytest.raises(ValueError, match="draws"):
        cl.law_level_null_size(0.05, 1, 0.0, reference="t")
    with pytest.raises(ValueError, match="reference"):
        cl.law_level_null_size(0.05, 5, 0.0, reference="z")
    with pytest.raises(TypeError, match="Generator"):
        cl.law_level_null_size(0.05, 5, 0.0, reference="t", reps=10)


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
    v = cl.verdicts(comp)
    assert v.attrs["k"] == len(comp)
    shuffled = cl.verdicts(comp.sample(frac=1, random_state=0))
    key = ["claim", "law"]
    assert v.sort_values(key)["verdict"].tolist() == shuffled.sort_values(key)["verdict"].tolist()
    per_law_for = sum(int(cl.verdicts(g)["for"].sum()) for _, g in comp.groupby("law"))
    assert per_law_for > v["for"].sum()  # a smaller family rejects more: the family matters
    sig = cl.adjust(comp["p"].to_numpy(), 0.05, "holm")
    assert v.attrs["components"]["significant"].tolist() == sig.tolist()


def test_judge_on_one_claim():
    j = cl.judge("fig6-claim-6", {"fig6": _fig6({2: 2.0, 4: 2.0, 6: 0.5, 8: 0.5}.get)})
    assert j.verdict == "fails" and j.claim.name == "Figure 6, claim 6"
    assert [c.split(":")[0] for c in j.against] == ["m=2", "m=4", "m=8"]
    s = j.summary()
    assert s.loc["Figure 6, claim 6", "verdict"] == "✗ fails" and s.loc["Figure 6, claim 6", "against"] == 3


# ---------------------------------------------------------------------------
# The chapters show the registry's verdicts; none computes its own
# ---------------------------------------------------------------------------

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
    by_label = {c.label: c for c in cl.CLAIMS}
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
