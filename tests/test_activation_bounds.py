"""PTF's activation bounds from the design: dpfda.report.activation_bounds.
"""

from __future__ import annotations

import math

from dpfda.report import activation_bounds as ab
from dpfda.report import claim_encodings as enc
from dpfda.report import claim_registry as reg
from dpfda.simulation.studies import get_study

from _claim_tables import results_table


def test_table1_claim_6_rows_come_from_bounds_that_hold():
    """The quiet/busy rows are fixed by bounds from the design; the bounds contain the engine's
    activation share (default law and a law near the boundary), within Monte Carlo error."""
    from dpfda.simulation.schedule import run_study

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


def test_the_bracket_of_any_kernel_setting_holds_and_is_table_1s_for_its_settings():
    """setting_activation is theory_activation for Table 1's settings, and brackets the engine's
    activation share in the RKHS of a Matérn kernel too (4 standard errors of 400 repetitions)."""
    import pytest

    from dpfda.simulation.schedule import run_study
    from dpfda.simulation.studies import Setting, kernel_study

    s = get_study("table1", n=[64]).subset(T=6, mu=1.0).settings[0]
    assert ab.setting_activation(s) == ab.theory_activation(6, 1.0, 64)
    study = kernel_study(kernels=["matern:0.5,0.2", "matern:2.5,0.2"], n=[16, 32, 64]).subset(T=8, mu=1.0)
    df = run_study(study, reps=400, seed=3)
    se = 4 * math.sqrt(0.25 / 400)
    lowers = []
    for setting, (_, r) in zip(study.settings, df.iterrows()):
        lower, upper = ab.setting_activation(setting)
        assert lower - se <= r["p_ptf_active"] <= upper + se, (setting.kernel, setting.n)
        lowers.append(lower)
    assert max(lowers) > 0.1  # the bracket has a lower end with bite here, not only [0, 1]
    base = dict(n=16, T=4, mu=1.0, radius_rule="1.1B")
    with pytest.raises(ValueError, match="derived for an RKHS"):
        ab.setting_activation(Setting("legendre", m=2, sigma0=0.0, **base))
    with pytest.raises(ValueError, match="noiseless data"):
        ab.setting_activation(Setting("kernel", sigma0=1.0, **base))
    with pytest.raises(ValueError, match="radius B' >= B"):
        ab.setting_activation(Setting("kernel", sigma0=0.0, radius=1.0, B=2.0, **base))
    with pytest.raises(TypeError, match="must be a Setting"):
        ab.setting_activation("table1")
