"""Glue references between chapters point at a notebook that glues the key.

MyST-NB resolves ``{glue:text}`doc.ipynb::key``` only with the file's suffix (without it
the build warns "Pending glue reference document not found"), and a key the other notebook
never glues is a build warning too, found only at the end of a full build. This reads the
sources instead: every cross-chapter reference names an existing notebook, with its suffix,
and a key that notebook glues (literally, or as an f-string pattern over the claims' ids).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dpfda_book.report import claims as cl

BOOK = Path(__file__).resolve().parents[1] / "book"
CROSS = re.compile(r"\{glue:(?:text|any|)\}`([^`:]+)::([^`]+?)(?::[^`:]*)?`")


def _sources(path: Path) -> tuple[str, str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    md = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    return md, code


def _glued_keys(code: str) -> set[str]:
    keys = set(re.findall(r"glue\(\s*\"([^\"{}]+)\"", code))
    for pattern in re.findall(r"glue\(\s*f\"([^\"]+)\"", code):
        if pattern.count("{") == 1 and "{cid}" in pattern:
            keys |= {pattern.replace("{cid}", c.id) for c in cl.CLAIMS}
    return keys


def test_cross_chapter_glue_names_a_notebook_and_a_key_it_glues():
    refs = []
    for path in sorted(BOOK.glob("*.ipynb")):
        md, _ = _sources(path)
        refs += [(path.name, doc, key) for doc, key in CROSS.findall(md)]
    assert refs, "no cross-chapter glue found: the pattern no longer matches the chapters"
    glued: dict[str, set[str]] = {}
    for page, doc, key in refs:
        target = BOOK / doc
        assert doc.endswith(".ipynb"), f"{page}: {doc}::{key} needs the suffix .ipynb"
        assert target.is_file(), f"{page}: no notebook {doc}"
        if doc not in glued:
            glued[doc] = _glued_keys(_sources(target)[1])
        assert key in glued[doc], f"{page}: {doc} never glues {key!r}"


def test_every_claim_shows_the_matrix_verdict_once():
    shown = []
    for path in sorted(BOOK.glob("*.ipynb")):
        md, _ = _sources(path)
        shown += [key for doc, key in CROSS.findall(md) if key.startswith("rob-verdict-")]
    assert sorted(shown) == sorted(f"rob-verdict-{c.id}" for c in cl.CLAIMS)


TEXT_CROSS = re.compile(r"\{glue:text\}`([^`]*::[^`]*)`")


def _without_format(content: str) -> bool:
    """MyST-NB reads ``{glue:text}`` content as ``KEY:FORMAT``, splitting at the last ':'.

    ``doc.ipynb::key`` with no format is therefore read as key 'doc.ipynb:' and format
    'key', a build warning; the reference needs a format of its own (``:s`` for text).
    """
    return content.rsplit(":", 1)[0].endswith(":")


def test_cross_chapter_glue_text_gives_its_format():
    assert _without_format("sim_noise.ipynb::noise-dir-ftp-8-min-text")  # the control: caught
    assert not _without_format("sim_noise.ipynb::noise-dir-ftp-8-min-text:s")
    assert not _without_format("sim_noise.ipynb::noise-dir-ftp-8-max:.2f")
    bad = [(path.name, content) for path in sorted(BOOK.glob("*.ipynb"))
           for content in TEXT_CROSS.findall(_sources(path)[0]) if _without_format(content)]
    assert not bad, f"cross-chapter {{glue:text}} without a format (add ':s'): {bad}"
