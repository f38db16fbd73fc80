"""Argument parsing shared by the commands: one-line usage errors and integer options.

The library's ``python -m dpfda`` and the book's ``python -m dpfda_book`` both parse with
:class:`Parser`, which turns argparse's errors into a :class:`UsageError` (reported in one
line, exit code 2) instead of printing the usage and exiting.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import NoReturn

__all__ = ["Parser", "UsageError", "integer_option"]


class UsageError(Exception):
    """Bad command-line input: reported in one line with exit code 2."""


class Parser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` whose errors raise :class:`UsageError` (no usage dump, no exit)."""

    def error(self, message: str) -> NoReturn:
        """Raise :class:`UsageError` with argparse's ``message`` (one line, exit code 2, no usage dump)."""
        raise UsageError(message)


def integer_option(name: str) -> Callable[[str], int]:
    """A parser of integer arguments, whole numbers in scientific notation too (``1e9``).

    ``name`` is the option's name in the error message; the sign and range are checked by the
    command that uses the option.
    """

    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            pass
        try:  # 1e9, 2.5e3: a whole number in scientific notation
            value = Decimal(text.strip())
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value != value.to_integral_value():
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value.adjusted() > 30:
            raise argparse.ArgumentTypeError(f"{name} is far too large, got {text!r}")
        return int(value)
    return parse
