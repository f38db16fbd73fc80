"""``python -m dpfda release`` and ``python -m dpfda example``: one private mean curve from a CSV."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable

import numpy as np

from ..maths.spaces import SPACE_FAMILIES, FunctionSpace, space_from_spec
from ..mechanisms.bands import plot_band
from ..mechanisms.mechanism import Mechanism, ftp_mechanism, ptf_mechanism
from ..practice.examples import EXAMPLES, write_example
from ..practice.publish import (
    CLIP_WARNING_SHARE,
    COMBINE,
    SHRINK_WARNING_SHARE,
    curator_diagnostics,
    diagnostics_text,
    evaluation_points,
    read_curves,
    release_record,
)
from ..practice.realdata import Domain, PublicFrame
from ._files import discard_temporary, stage_file, text_writer
from ._parsing import UsageError, integer_option


def _points_option(text: str, option: str) -> np.ndarray:
    """A list of numbers: ``a,b,c`` or ``START:STOP:COUNT`` (COUNT equally spaced, ends included)."""
    text = text.strip()
    try:
        if text.count(":") == 2 and "," not in text:
            start, stop, count = text.split(":")
            k = int(count)
            if k < 1:
                raise UsageError(f"{option}: the count in START:STOP:COUNT must be >= 1, got {k}")
            values = np.linspace(float(start), float(stop), k)
        else:
            values = np.array([float(v) for v in text.split(",")], dtype=float)
    except ValueError:
        raise UsageError(f"{option} must be numbers separated by commas, or START:STOP:COUNT, "
                         f"got {text!r}") from None
    if not np.all(np.isfinite(values)):
        raise UsageError(f"{option} must hold finite numbers, got {text!r}")
    return values


SPACE_HELP = (", ".join(f"{family.spec_form} ({family.spec_help})" for family in SPACE_FAMILIES.values())
              + "; a kernel space takes :regularize (gaussian:RHO:regularize) to lift K_T's eigenvalues "
              "below 1e-8 to that floor, as the paper's implementation does, instead of refusing the grid")


def space_option(text: str) -> FunctionSpace:
    """The space ``--space`` names: a spec of :data:`dpfda.maths.spaces.SPACE_FAMILIES` (``legendre:8``)."""
    if text.strip().split(":", 1)[0].strip() not in SPACE_FAMILIES:
        raise UsageError(f"--space must be {SPACE_HELP}; got {text!r}")
    try:
        return space_from_spec(text)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--space {text!r}: {exc}") from None


_NEGATIVE = re.compile(r"-(\d|\.\d|inf|nan)", re.IGNORECASE)
"""A value that starts like a negative number (``-1,23``, ``-.5:2:5``) rather than an option."""

VALUE_OPTIONS = ("--grid", "--domain", "--eval", "--lower", "--upper", "--clip", "--radius", "--mu")
"""Options of ``release`` whose value may start with a minus sign."""


def join_negative_values(argv: list) -> list:
    """``--domain -1,23`` as ``--domain=-1,23``: argparse takes ``-1,23`` for an option otherwise."""
    out: list = []
    i = 0
    while i < len(argv):
        if argv[i] in VALUE_OPTIONS and i + 1 < len(argv) and _NEGATIVE.match(str(argv[i + 1])):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _number_option(name: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
    return parse


def add_release_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``release`` command and its options to the subparsers ``sub``."""
    rel = sub.add_parser(
        "release", help="release one private mean curve from a CSV file of curves (secure by default)",
        description="Release the mean curve of the curves in a CSV file under mu-GDP (FTP, or PTF with "
                    "--method ptf) and write it, with every public parameter, as JSON. Every choice "
                    "below is public and must be fixed before looking at the data.",
        epilog="Exit codes: 0 released; 2 bad input (one line on stderr; nothing written). Every public "
               "choice is checked before the data are read, and the noise is drawn once, last, before "
               "the file is written; it comes from OpenDP unless --insecure-numpy-noise is given. After "
               "a release the curator's diagnostics go to stderr (values clipped, fits shrunk onto the "
               "ball, the data's range against the band, with a warning when more than "
               f"{CLIP_WARNING_SHARE:.0%} of the values are clipped or {SHRINK_WARNING_SHARE:.0%} of "
               "the fits shrunk): they are computed from the data without noise, are NOT private and "
               "must not be published.")
    rel.add_argument("data", metavar="DATA.csv",
                     help="the curves: wide (one row per subject, one column per grid point, headers = "
                          "the points) or long (--layout long: columns subject, point, value)")
    rel.add_argument("--grid", default=None, metavar="POINTS",
                     help="the public grid in the data's units: a,b,c,... or START:STOP:COUNT; the CSV "
                          "must hold exactly these points. Leave it out (with --domain) for curves measured "
                          "at their own points or with empty cells: FTP fits each subject on the points it "
                          "has (PTF needs --grid)")
    rel.add_argument("--space", required=True, metavar="SPACE", help=SPACE_HELP)
    rel.add_argument("--radius", type=_number_option("--radius"), default=None, metavar="B",
                     help="the fitting radius B' > 0, in the data's units (required unless --lower and "
                          "--upper are given)")
    rel.add_argument("--lower", default=None, metavar="L",
                     help="with --upper: a public range of every value (one number, or one per grid "
                          "point): the data are centred and scaled by dpfda.PublicFrame, which gives B' "
                          "and PTF's clip (legendre spaces only); excludes --radius and --clip")
    rel.add_argument("--upper", default=None, metavar="U", help="see --lower")
    rel.add_argument("--mu", required=True, type=_number_option("--mu"),
                     help="the privacy budget: the release is mu-GDP")
    rel.add_argument("--method", choices=("ftp", "ptf"), default="ftp",
                     help="Fit-Then-Protect (default) or Protect-Then-Fit")
    rel.add_argument("--clip", default=None, metavar="C",
                     help="PTF's clipping bounds c_j, in the data's units: one number or one per grid "
                          "point (a,b,c,...); default B' times ||phi(t_j)|| (Theorems 11, 14)")
    rel.add_argument("--domain", default=None, metavar="START,STOP",
                     help="the public interval mapped onto [0, 1] (default: the first and last grid point)")
    rel.add_argument("--eval", default=None, metavar="POINTS", dest="eval_points",
                     help="where to publish the curve: a,b,c,... or START:STOP:COUNT (default: 101 "
                          "equally spaced points of the domain)")
    rel.add_argument("--layout", choices=("wide", "long"), default="wide", help="the CSV's form (default wide)")
    rel.add_argument("--id", default=None, metavar="COLUMN",
                     help="the subject column (required with --layout long)")
    rel.add_argument("--combine", choices=sorted(COMBINE), default=None,
                     help="make one curve of each subject's rows by this rule (mean: "
                          f"{COMBINE['mean']}); without it a subject id on two rows (or twice at a "
                          "point) is an error: one subject, one curve")
    rel.add_argument("--point", default="point", metavar="COLUMN", help="long form: the point column")
    rel.add_argument("--value", default="value", metavar="COLUMN", help="long form: the value column")
    rel.add_argument("--out", required=True, metavar="release.json",
                     help="the JSON file to write (must not exist yet)")
    rel.add_argument("--plot", default=None, metavar="FILE.png|FILE.svg",
                     help="also draw the released curve with a 95%% band of the privacy noise (public: "
                          "from sigma and the basis, free post-processing); the band covers the privacy "
                          "noise only, not sampling variability")
    rel.add_argument("--insecure-numpy-noise", action="store_true",
                     help="draw the noise with numpy instead of OpenDP: for teaching only, never for "
                          "a release that leaves the building")
    rel.add_argument("--seed", type=integer_option("--seed"), default=None,
                     help="with --insecure-numpy-noise: numpy's seed (default: fresh OS entropy)")


def add_example_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``example`` command to the subparsers ``sub``."""
    ex = sub.add_parser("example", help="write a sample CSV file to try `release` on",
                        description="Write a sample file of curves: " + "; ".join(
                            f"{k}: {v}" for k, v in EXAMPLES.items()) + ". Never overwrites a file.")
    ex.add_argument("name", choices=tuple(EXAMPLES), help="which sample")
    ex.add_argument("file", metavar="FILE.csv", help="where to write it (must not exist yet)")


def run_example(args: argparse.Namespace) -> int:
    """``python -m dpfda example NAME FILE``: 0, or :class:`UsageError`."""
    try:
        what = write_example(args.name, args.file)
    except (FileExistsError, ImportError) as exc:
        raise UsageError(str(exc)) from None
    print(f"dpfda: wrote {args.file}: {what}")
    return 0


def _release_inputs(args: argparse.Namespace
                    ) -> tuple[np.ndarray, Domain, Mechanism, np.ndarray, PublicFrame | None]:
    """Check the public choices (before the data are read); return the objects they describe."""
    grid_points = _points_option(args.grid, "--grid")
    if grid_points.size > 1 and np.any(np.diff(grid_points) <= 0):
        raise UsageError("--grid must be strictly increasing")
    if args.domain is None:
        domain_ends = grid_points[[0, -1]]
    else:
        domain_ends = _points_option(args.domain, "--domain")
        if domain_ends.size != 2:
            raise UsageError(f"--domain must be two numbers START,STOP, got {args.domain!r}")
    try:
        domain = Domain(float(domain_ends[0]), float(domain_ends[1]), name="grid point")
        grid = domain.to_unit(grid_points)
    except ValueError as exc:
        raise UsageError(f"--grid/--domain: {exc}") from None
    space = space_option(args.space)
    if args.method == "ftp" and args.clip is not None:
        raise UsageError("--clip is PTF's clipping bound; FTP does not clip (use --method ptf)")
    clip: np.ndarray | float | None = None
    if args.clip is not None:
        clip_points = _points_option(args.clip, "--clip")
        clip = float(clip_points[0]) if clip_points.size == 1 else clip_points
    frame = None
    if (args.lower is None) != (args.upper is None):
        raise UsageError("--lower and --upper go together (a public range of the values)")
    if args.lower is not None:
        if args.radius is not None or args.clip is not None:
            raise UsageError("--lower/--upper give B' and the clip (dpfda.PublicFrame); leave out "
                             "--radius and --clip")
        band = [_points_option(v, o) for v, o in ((args.lower, "--lower"), (args.upper, "--upper"))]
        band = [b[0] if b.size == 1 else b for b in band]
        try:
            frame = PublicFrame(space, grid_points, domain, band[0], band[1])
        except (TypeError, ValueError) as exc:
            raise UsageError(f"--lower/--upper: {exc}") from None
    elif args.radius is None:
        raise UsageError("give --radius (B' in the data's units), or a public range with --lower and --upper")
    at = (np.linspace(domain.start, domain.stop, 101) if args.eval_points is None
          else _points_option(args.eval_points, "--eval"))
    try:
        evaluation_points(at, frame=frame, domain=None if frame is not None else domain)
    except ValueError as exc:
        raise UsageError(f"--eval: {exc}") from None
    if args.seed is not None and not args.insecure_numpy_noise:
        raise UsageError("--seed is for --insecure-numpy-noise only: OpenDP's noise cannot be seeded")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    if os.path.exists(args.out):
        raise UsageError(f"--out {args.out!r} exists: dpfda does not overwrite a release (a second "
                         "release of the same data spends the budget again); choose another name")
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        raise UsageError(f"--out {args.out!r}: the folder {folder!r} does not exist")
    secure = not args.insecure_numpy_noise
    radius: float | None
    try:  # the mechanism checks grid, space, B', mu, clip and weights
        if frame is not None:  # public centre, scale, B', clip and weights from the range
            radius, clip, weights = frame.radius, frame.clip, frame.weights
        else:
            radius, weights = args.radius, None
        if args.method == "ftp":
            mech = ftp_mechanism(grid, space, radius, args.mu,  # type: ignore[arg-type]  # None: a named TypeError
                                 secure=secure)
        else:
            mech = ptf_mechanism(grid, space, radius, args.mu,  # type: ignore[arg-type]  # None: a named TypeError
                                 clip=clip, weights=weights, secure=secure)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return grid_points, domain, mech, at, frame


def run_release(args: argparse.Namespace) -> int:
    """``python -m dpfda release``: check, read, release, write; 0 or :class:`UsageError`.

    Every public choice is checked (:func:`_release_inputs`) before the data are read; the
    noise is drawn once, by the mechanism's release, after every other check and right
    before the record is written.
    """
    own_points = args.grid is None
    if own_points:  # each subject on its own points: FTP, laid out on a public grid of the domain
        args.grid = _own_points_grid(args)
    grid_points, domain, mech, at, frame = _release_inputs(args)
    _check_plot_path(args.plot)
    try:
        data = read_curves(args.data, layout=args.layout, id=args.id, point=args.point, value=args.value,
                           combine=args.combine, curves=own_points,
                           domain=(domain.start, domain.stop) if own_points else None)
    except ValueError as exc:
        raise UsageError(f"{args.data}: {exc}") from None
    if own_points:
        X = data
    else:
        points, X = data
        if points.shape != grid_points.shape or not np.allclose(points, grid_points, rtol=1e-12, atol=0.0):
            raise UsageError(f"{args.data}: the data's grid ({_short_points(points)}) is not the public "
                             f"--grid ({_short_points(grid_points)}); the grid is fixed before the data "
                             "are read, and every curve must be observed on it (or leave out --grid: "
                             "FTP then fits each subject on its own points)")
    rng = None if mech.secure else np.random.default_rng(args.seed)
    try:
        Y = frame.to_unit(X) if frame is not None else X
        rel = mech.release(Y, rng)  # the noise: drawn here, once
        record = (release_record(rel, at, frame=frame, combine=args.combine) if frame is not None
                  else release_record(rel, at, domain=domain, combine=args.combine))
    except ImportError as exc:
        raise UsageError(f"{exc} (or, for teaching only, --insecure-numpy-noise)") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    record["command"] = {"data": os.path.basename(args.data), "layout": args.layout,
                         "grid": None if own_points else args.grid, "space": args.space}
    if own_points:
        record["sampling"] = ("each subject fitted on its own points (no common grid); the release is laid "
                              f"out on {args.grid} for the record's grid")
    text = json.dumps(record, indent=2) + "\n"
    tmp = stage_file(args.out, text_writer(text))
    try:
        os.link(tmp, args.out)  # fails if --out appeared meanwhile: never overwrite a release
    except FileExistsError:
        raise UsageError(f"--out {args.out!r} appeared while releasing; not overwritten") from None
    except OSError:  # a file system without hard links: check, then rename
        if os.path.exists(args.out):
            raise UsageError(f"--out {args.out!r} appeared while releasing; not overwritten") from None
        os.replace(tmp, args.out)
    finally:
        discard_temporary(tmp)
    if args.plot is not None:
        _draw_release(record, args.plot, domain.name if frame is None else frame.domain.name)
    pairs = ", ".join(f"ε = {p['epsilon']:.3g} at δ = {p['delta']:g}" for p in record["epsilon_delta"])
    noise = "OpenDP" if mech.secure else "numpy (INSECURE: teaching only, do not publish)"
    print(f"dpfda: released the {args.method.upper()} mean of n = {rel.n} curves at μ = {rel.mu:g} "
          f"({pairs}); noise from {noise}; wrote {args.out}")
    # For the curator only, after the release is written: computed from the data without noise.
    if not own_points:  # the curator's diagnostics read the curves on the grid
        print(diagnostics_text(curator_diagnostics(rel, X, frame=frame)), file=sys.stderr)
    return 0


def _own_points_grid(args: argparse.Namespace) -> str:
    """Without ``--grid``: check the options FTP on each subject's own points needs; its layout grid."""
    if args.domain is None:
        raise UsageError("without --grid (each subject on its own points) give --domain START,STOP: the "
                         "public interval of the points, fixed before the data are read")
    if args.method != "ftp":
        raise UsageError("--method ptf needs --grid: PTF clips and averages each point of one common public "
                         "grid over subjects, so it cannot take curves measured at their own points (FTP "
                         "can: leave out --method; or put each curve on a public grid yourself first, e.g. "
                         "with dpfda.Curves.on_grid, a map of each record alone)")
    if args.lower is not None or args.upper is not None:
        raise UsageError("--lower/--upper need --grid (the band is interpolated on the grid); without "
                         "--grid give --radius")
    ends = _points_option(args.domain, "--domain")
    if ends.size != 2:
        raise UsageError(f"--domain must be two numbers START,STOP, got {args.domain!r}")
    return f"{float(ends[0])!r}:{float(ends[1])!r}:101"


def _check_plot_path(path: str | None) -> None:
    """``--plot``: a new .png or .svg file in an existing folder (checked before the data are read)."""
    if path is None:
        return
    if os.path.splitext(path)[1].lower() not in (".png", ".svg"):
        raise UsageError(f"--plot {path!r}: the figure must be a .png or .svg file")
    if os.path.exists(path):
        raise UsageError(f"--plot {path!r} exists; choose another name")
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UsageError(f"--plot {path!r}: the folder does not exist")


def _draw_release(record: dict, path: str, xlabel: str) -> None:
    """The record's curve with the 95 % band of its privacy noise, as PNG or SVG."""
    from matplotlib.figure import Figure  # here: only `release --plot` draws

    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    plot_band(record["curve"]["points"], record["curve"]["values"], record["noise_sd"], level=0.95, ax=ax,
              xlabel=xlabel, ylabel="released mean (data's units)",
              title=f"{record['method'].upper()} at μ = {record['mu']:g}, n = {record['n']}")
    fig.savefig(path, metadata={"Date": None} if path.lower().endswith(".svg") else None)


def _short_points(points: np.ndarray) -> str:
    shown = ", ".join(f"{p:g}" for p in points[:4])
    return f"{points.size} points: {shown}{', …' if points.size > 4 else ''}"
