"""Fail on any built page that shows a Python traceback or an error output.

    python tools/check_pages.py _build/html [MORE_HTML_FOLDERS ...]

Run by ``make book`` and ``make student`` after each build.  A page fails when a
notebook cell on it shows an error output (myst-nb's ``output traceback`` block) or
a text output holding "Traceback (most recent call last)", unless the cell is
tagged ``raises-exception`` (a cell that is meant to raise, whose traceback is the
point).  Every failing page is reported with the first line of what it shows and
removed, so that no route can publish it; the script then exits with status 1.
Exit 0 when no page fails; 2 when a folder holds no HTML page at all.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bs4 import BeautifulSoup

TRACEBACK = "Traceback (most recent call last)"
MEANT_TO_RAISE = "tag_raises-exception"


def _meant_to_raise(node) -> bool:
    """Whether ``node`` lies inside a notebook cell tagged ``raises-exception``."""
    return any(MEANT_TO_RAISE in (parent.get("class") or []) for parent in node.parents)


def page_errors(html: str) -> list[str]:
    """The errors a page shows outside cells meant to raise: one line each."""
    soup = BeautifulSoup(html, "html.parser")
    found = []
    for block in soup.select("div.output"):
        classes = block.get("class") or []
        text = block.get_text()
        if ("traceback" in classes or TRACEBACK in text) and not _meant_to_raise(block):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            found.append(lines[-1] if lines else "an error output")
    return found


def check(folders) -> dict[Path, list[str]]:
    """Every failing page of ``folders`` with its errors."""
    failing = {}
    for folder in folders:
        pages = sorted(Path(folder).rglob("*.html"))
        if not pages:
            raise FileNotFoundError(f"{folder}: no HTML page to check")
        for page in pages:
            errors = page_errors(page.read_text(encoding="utf-8", errors="replace"))
            if errors:
                failing[page] = errors
    return failing


def main(argv=None) -> int:
    folders = sys.argv[1:] if argv is None else argv
    if not folders:
        print("usage: python tools/check_pages.py HTML_FOLDER [...]", file=sys.stderr)
        return 2
    try:
        failing = check(folders)
    except FileNotFoundError as exc:
        print(f"check_pages: {exc}", file=sys.stderr)
        return 2
    for page, errors in failing.items():
        page.unlink()
        print(f"{page}: shows an error ({errors[0]}); page removed", file=sys.stderr)
    if failing:
        print(f"check_pages: {len(failing)} page(s) show a traceback or an error output; "
              "fix the chapter and build again", file=sys.stderr)
        return 1
    print(f"check_pages: no page of {', '.join(map(str, folders))} shows an error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
