"""Compare two `python -m dpfda_book reproduce` output folders: every published number, every verdict.

Usage::

    OPENBLAS_CORETYPE=SkylakeX python -m dpfda_book reproduce all --reps 200 --out /tmp/skx
    OPENBLAS_CORETYPE=Haswell python -m dpfda_book reproduce all --reps 200 --out /tmp/hsw
    python benchmarks/compare_results.py /tmp/skx /tmp/hsw --rtol 1e-12

Reads every results table (``*.csv``) of both folders and prints how many numbers were
compared, the largest relative and absolute differences and where they are.  Exit 1 if a
number differs by more than ``--rtol`` (relative to the first folder's value), if a text
column or a missing value differs, or if a verdict differs: a ratio's confidence interval on
another side of 1, or ``table1.md`` other than in its first line (the run's id and command).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def _side(df: pd.DataFrame) -> np.ndarray:
    """-1, 0 or 1 per row: the ratio's interval below 1, across it, above it."""
    return (np.sign(df["ratio_lo"] - 1) + np.sign(df["ratio_hi"] - 1)).to_numpy() // 2


def compare(a: Path, b: Path) -> dict:
    """The largest differences between the results tables of folders ``a`` and ``b``."""
    out = {"numbers": 0, "rel": 0.0, "rel_at": None, "abs": 0.0, "abs_at": None, "mismatches": []}
    tables = sorted(a.glob("*.csv"))
    if not tables:
        raise SystemExit(f"no results tables (*.csv) in {a}")
    for f in tables:
        x, y = pd.read_csv(f), pd.read_csv(b / f.name)
        if list(x.columns) != list(y.columns) or len(x) != len(y):
            out["mismatches"].append(f"{f.name}: other columns or rows")
            continue
        for c in x.columns:
            if c == "run_id":
                continue
            if pd.api.types.is_numeric_dtype(x[c]) and pd.api.types.is_numeric_dtype(y[c]):
                u, v = x[c].to_numpy(float), y[c].to_numpy(float)
                if not np.array_equal(np.isnan(u), np.isnan(v)):
                    out["mismatches"].append(f"{f.name}:{c}: missing values differ")
                    continue
                keep = ~np.isnan(u)
                u, v = u[keep], v[keep]
                d = np.abs(u - v)
                r = np.divide(d, np.abs(u), out=np.where(d > 0, np.inf, 0.0), where=u != 0)
                out["numbers"] += u.size
                if u.size and d.max() > out["abs"]:
                    out["abs"], out["abs_at"] = float(d.max()), f"{f.name}:{c}"
                if u.size and r.max() > out["rel"]:
                    out["rel"], out["rel_at"] = float(r.max()), f"{f.name}:{c}"
            elif not (x[c].astype(str) == y[c].astype(str)).all():
                out["mismatches"].append(f"{f.name}:{c}: text differs")
        if "ratio_lo" in x.columns and not np.array_equal(_side(x), _side(y)):
            out["mismatches"].append(f"{f.name}: a ratio's interval on another side of 1")
    md_a, md_b = a / "table1.md", b / "table1.md"
    if md_a.exists() and md_a.read_text().splitlines()[1:] != md_b.read_text().splitlines()[1:]:
        out["mismatches"].append("table1.md differs")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--rtol", type=float, default=1e-12, help="largest relative difference allowed")
    args = ap.parse_args(argv)
    res = compare(args.first, args.second)
    print(f"{res['numbers']} numbers; largest relative difference {res['rel']:.3g} ({res['rel_at']}), "
          f"largest absolute {res['abs']:.3g} ({res['abs_at']})")
    for m in res["mismatches"]:
        print("MISMATCH", m)
    ok = not res["mismatches"] and res["rel"] <= args.rtol
    print("verdicts identical, within tolerance" if ok else f"FAILED (rtol {args.rtol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
