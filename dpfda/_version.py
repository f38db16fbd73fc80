"""The version of dpfda: the one place it is written (pyproject.toml and CITATION.cff read it)."""

__version__ = "0.1.1"
