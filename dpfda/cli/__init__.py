"""Command line: ``python -m dpfda release`` (and ``python -m dpfda example``).

``python -m dpfda release DATA.csv --space … --mu … --out release.json`` releases one
private mean curve of the curves in ``DATA.csv`` (wide or long form,
:func:`dpfda.practice.reading.read_curves`) with FTP, or PTF with ``--method ptf [--clip …]``,
and writes the curve on a public evaluation grid with every public parameter
(:func:`dpfda.practice.publish.release_record`) as JSON.  The bounds are given in the data's
units, for every layout and space: ``--lower``/``--upper`` (a public range of the values:
the data are centred and scaled by :class:`dpfda.PublicFrame`, which gives B' in a
Legendre or Fourier space, and PTF's clip), or ``--radius``.  With ``--grid`` the CSV's grid
must be the ``--grid`` given; without it (and with ``--domain``) FTP fits each subject on the
points it has.  The budget is ``--mu``, or ``--epsilon`` with ``--delta``; ``--dimension-from``
chooses the dimension from a public proxy file; ``--private-radius`` chooses FTP's B' from the
data as a private quantile of the fitted norms, with a share of the budget
(:func:`dpfda.mechanisms.radius.ftp_private_radius`; the record states both steps' μ);
``--ledger`` keeps the data set's budget across releases (:mod:`dpfda.practice.ledger`) and
refuses one past its ``--cap``.  The noise comes from
OpenDP (``secure=True``); ``--insecure-numpy-noise`` uses numpy's generator instead, for
teaching only.  Every choice is given on the command line, none is read from the data (but
B' under ``--private-radius``, which is paid for from the budget).  Bad
input (a missing value, a grid that differs, a subject id on two rows without ``--combine
mean``, a periodic space on a domain that makes the first and last point one instant, …) gives
one line on stderr and exit code 2; ``--out`` is never overwritten (a second release of the
same data spends the budget again).  The options are one :class:`dpfda.ReleaseSpec`, and the
release is the library's one path, :func:`dpfda.FTP` or :func:`dpfda.PTF` of it, its
``release`` and the release's ``record`` (to which the command adds how each choice was made
and the ledger): every public choice is checked, and the mechanism built, before the data are
read.  Then the curator's report
(:func:`dpfda.practice.diagnostics.curator_report`: values clipped, fits shrunk onto the ball,
the data's range against the band) goes to stderr, the same with or without a grid, before
any noise is drawn or anything written; it is computed from the data without noise, is not
private, must not be published, and never changes what is released (``--check`` stops after
it).  The noise is drawn once, last, before the record is written.

``python -m dpfda example NAME FILE`` writes a sample file to try a release on
(:mod:`dpfda.practice.examples`).  The paper's simulation studies are re-run by the book's
own package, ``python -m dpfda_book reproduce`` (not part of this library).  Bad input gives
a one-line message on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._release import (  # noqa: F401 (re-exported)
    add_example_parser,
    add_release_parser,
    join_negative_values,
    run_example,
    run_release,
    space_option,
)
from .files import stage_file, text_writer  # noqa: F401 (re-exported)
from .parsing import Parser, UsageError

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m dpfda",
                    description="dpfda: release a private mean curve from your data (the paper's simulation "
                                "studies are the book's: python -m dpfda_book reproduce).")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    add_release_parser(sub)
    add_example_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code: 0 ok, 2 bad input or an output that cannot be written, 130 after Ctrl-C."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(join_negative_values(argv))
        if args.command == "release":
            return run_release(args)
        if args.command == "example":
            return run_example(args)
        raise UsageError("choose a command: release or example (see python -m dpfda --help)")
    except UsageError as exc:
        print(f"dpfda: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dpfda: error: cannot write output: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dpfda: interrupted; no output was written", file=sys.stderr)
        return 130
