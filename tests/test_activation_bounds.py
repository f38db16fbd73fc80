"""PTF's activation bounds from the design: dpfda_book.report.activation_bounds.
"""

from __future__ import annotations

import math

from dpfda_book.report import activation_bounds as ab
from dpfda_book.report import claim_encodings as enc
from dpfda_book.report import claim_registry as reg
from dpfda_book.simulation.studies import get_study

from _claim_tables import results_table


def test_table1_claim_6_rows_come_from_bounds_that_hold():
    """The quiet/busy rows are fixed by bounds from the design; the bounds contain the engine's
    activation share (default law and a law near the boundary), within Monte Carlo error."""
    from dpfda_book.simulation.schedule import run_study

    lo, hi = ab.theory_activation(2, 1.0, 512)
    assert hi <= enc.QUIET_P and lo == 0.0
    lo, hi = ab.theory_activation(8, 0.1, 16)
    assert lo >= 0.5
    for law in ("default", "shift-0.9"):
        df = run_study(get_study("table1", n=[16, 256, 1024], law=law).subset(mu=0.1), reps=400, seed=3)
        for _, r in df.iterrows():
            lower, upper = ab.theory_activation(int(r["T"]), 0.1, int(r["n"]))
            se = 4 * math.sqrt(0.25 / 400)
            assert lower - se <= r["p_ptf_active"] <= upper + se, (law, r["T"], r["n"])
    comps = reg.claim_components("table1-claim-6", {"table1": results_table("table1", 1.0)})
    quiet = {c.label.split(":")[0] for c in comps if "quiet" in c.label}
    assert "mu=1 T=2 n=4096" in quiet and not any("T=8" in q for q in quiet)
