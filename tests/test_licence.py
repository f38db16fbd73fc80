"""Licence and citation: stated once in each place a reader or a tool looks."""

import re
import tomllib
from pathlib import Path

import pytest

import dpfda

yaml = pytest.importorskip("yaml")
ROOT = Path(__file__).resolve().parents[1]


def test_licence_files():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    text = (ROOT / "LICENSE-CC-BY-4.0.txt").read_text()
    assert "Creative Commons Attribution 4.0 International Public License" in text
    assert "Section 8 -- Interpretation." in text  # the whole legal code, not a summary


def test_licence_stated_in_pyproject_readme_and_footer():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Licence and citation"):]
    assert "MIT" in section and "CC BY 4.0" in section and "CITATION.cff" in section
    footer = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["extra_footer"]
    assert "creativecommons.org/licenses/by/4.0" in footer and "MIT" in footer


def test_citation_file():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == dpfda.__version__
    assert set(cff["license"]) == {"MIT", "CC-BY-4.0"}
    paper = cff["preferred-citation"]
    assert paper["status"] == "preprint" and "doi" not in paper and "identifiers" not in paper
    bib = (ROOT / "references.bib").read_text()
    entry = bib[bib.index("@misc{chen2026ftp"):]
    title = re.search(r"title\s*=\s*\{(.*)\},", entry).group(1).replace("{", "").replace("}", "")
    assert paper["title"] == title
    assert [a["family-names"] for a in paper["authors"]] == ["Chen", "Chen", "Song", "Awan"]


def test_the_books_package_has_the_librarys_version_and_licence_and_requires_exactly_it():
    import dpfda_book

    book = tomllib.loads((ROOT / "machinery" / "pyproject.toml").read_text())["project"]
    assert dpfda_book.__version__ == dpfda.__version__
    assert book["license"] == "MIT"
    assert f"dpfda=={dpfda.__version__}" in [r.split("#")[0].strip() for r in book["dependencies"]]
