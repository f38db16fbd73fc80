"""A code fence whose info string holds a backtick is not a fence (CommonMark), so MyST shows
the directive and everything after it as raw source.
Every directive opened with backticks in a markdown cell must have an info string free of
backticks, and every backtick fence must be closed within its cell."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parent.parent / "book"
NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))
FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")


def _problems(text: str) -> list[str]:
    out, open_fence = [], None
    for k, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if not m:
            continue
        ticks, info = m.group(2), m.group(3)
        if open_fence is None:
            if "`" in info:
                out.append(f"line {k}: backtick in the info string of {line.strip()[:60]!r}")
            open_fence = len(ticks)
        elif len(ticks) >= open_fence and not info.strip():
            open_fence = None
    if open_fence is not None:
        out.append("a backtick fence is never closed")
    return out


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_fence_opens_and_closes(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    bad = {i: p for i, c in enumerate(cells) if c["cell_type"] == "markdown"
           for p in [_problems("".join(c["source"]))] if p}
    assert not bad, bad
