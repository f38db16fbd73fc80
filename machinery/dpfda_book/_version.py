"""The version of dpfda_book: always dpfda's, which it requires exactly (tests/test_licence.py)."""

__version__ = "0.1.1"
