"""``python -m dpfda_book reproduce …`` — see :mod:`dpfda_book.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
