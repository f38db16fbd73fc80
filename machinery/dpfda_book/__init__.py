"""dpfda_book — the machinery of the book, beside the library :mod:`dpfda`.

Everything the book's chapters need beyond releasing a private mean curve: the paper's
simulation studies and their Monte Carlo engine, the results store, the settings the chapters
read from the environment (:mod:`dpfda_book.settings`) and the tolerances they assert with
(:mod:`dpfda_book.montecarlo`).  A practitioner needs only :mod:`dpfda`; this package imports
it, never the other way round (``tests/test_architecture.py``).
"""

from ._version import __version__ as __version__

__all__ = ["__version__"]
