"""The exercises keep the preface's promises.

Every chapter of the numbered Parts ends with at least two exercises; every exercise carries
exactly one difficulty mark from the set the preface defines, and a **Check.** paragraph inside
the exercise itself (so the student edition, which leaves out solutions, keeps it); no two
exercises ask the same thing.
"""

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = re.compile(r"^(`{3,})\{exercise\}([^\n]*)\n:label: (\S+)\n(.*?)^\1\s*$", re.M | re.S)


def chapters():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [c["file"] for part in toc["parts"] if part.get("numbered") for c in part["chapters"]]


def markdown(doc):
    path = ROOT / f"{doc}.ipynb"
    if path.exists():
        nb = nbformat.read(path, as_version=4)
        return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return (ROOT / f"{doc}.md").read_text()


def exercises(doc):
    return [(m.group(3), m.group(2).strip(), m.group(4)) for m in EXERCISE.finditer(markdown(doc))]


def preface_marks():
    text = markdown("book/preface")
    box = re.search(r":::\{admonition\} Difficulty marks\n:name: preface-marks\n(.*?)\n:::", text, re.S)
    assert box, "the preface defines the marks in one admonition, preface-marks"
    marks = re.findall(r"^\* (★+) \*\*", box.group(1), re.M)
    assert marks == ["★", "★★", "★★★"], marks
    return set(marks)


ALL = [(doc, *ex) for doc in chapters() for ex in exercises(doc)]


def test_every_chapter_has_at_least_two_exercises():
    counts = {doc: len(exercises(doc)) for doc in chapters()}
    assert len(counts) >= 15
    assert all(n >= 2 for n in counts.values()), counts


@pytest.mark.parametrize("doc,label,title,body", ALL, ids=[a[1] for a in ALL])
def test_exercise_has_one_mark_and_a_check(doc, label, title, body):
    marks = preface_marks()
    mark = title.split(" ", 1)[0]
    assert mark in marks, f"{label}: title {title!r} does not start with a mark of {sorted(marks)}"
    assert "★" not in title.split(" ", 1)[1], f"{label}: more than one mark"
    check = re.search(r"\*\*Check\.\*\* (.+)", body, re.S)
    assert check and len(check.group(1).split()) >= 8, f"{label}: no Check paragraph in the exercise"


def _objects(body):
    """Formulas of at least 12 characters in the question (not its Check), settings left out."""
    question = body.split("**Check.**")[0]
    found = {re.sub(r"\s+", "", m) for m in re.findall(r"\$([^$]+)\$", question)}
    return {m for m in found if len(m) >= 12 and "=" not in m and "\\in" not in m}


def test_no_two_exercises_ask_the_same_thing():
    labels = [a[1] for a in ALL]
    assert len(labels) == len(set(labels))
    titles = [a[2].split(" ", 1)[1].lower() for a in ALL]
    assert len(titles) == len(set(titles))
    # Two exercises about the same object (a formula of the question) must be linked: the
    # later one cites the earlier with {ref}, so that it builds on it rather than repeats it.
    for i, (_, a, _, body_a) in enumerate(ALL):
        for _, b, _, body_b in ALL[i + 1:]:
            shared = _objects(body_a) & _objects(body_b)
            assert not shared or f"{{ref}}`{a}`" in body_b, f"{a} and {b} both ask about {shared}"
    # only one exercise asks to show this basis orthonormal
    asking = [a[1] for a in ALL if "orthonormal" in a[3].split("**Check.**")[0]
              and "3t^2-1" in a[3] and "shown orthonormal" not in a[3]]
    assert asking == ["fd-ex-1"], asking
