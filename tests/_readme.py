"""The README's quickstart: its code blocks, and a heights.csv for them to read."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def section_blocks(title: str = "Quickstart") -> list[tuple[str, str]]:
    """The fenced code blocks of the README's section ``### title``, in order: (language, body)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#{{2,3}} )", text, flags=re.S | re.M)
    assert match, f"README.md has no '### {title}' section"
    return re.findall(r"^```(\w+)\n(.*?)^```", match.group(1), flags=re.S | re.M)


def quickstart_blocks() -> dict[str, list[str]]:
    """The fenced code blocks of the README's "Quickstart" section, by language."""
    blocks: dict[str, list[str]] = {}
    for lang, body in section_blocks():
        blocks.setdefault(lang, []).append(body)
    return blocks


def write_heights_csv(folder: Path) -> Path:
    """The Berkeley growth heights (fdars' wheel) in the wide form the quickstart reads."""
    import pandas as pd
    from fdars.datasets import load_growth

    ages, heights, meta = load_growth(return_fdata=False)
    table = pd.DataFrame(heights, columns=[f"{a:g}" for a in ages])
    table.insert(0, "child", list(meta["id"]))
    folder.mkdir(exist_ok=True)
    path = folder / "heights.csv"
    table.to_csv(path, index=False)
    return path
