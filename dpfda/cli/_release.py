"""``python -m dpfda release`` and ``python -m dpfda example``: one private mean curve from a CSV."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields

import numpy as np

from ..maths.curves import Curves
from ..maths.spaces import SPACE_FAMILIES, FourierSpace, FunctionSpace, OrthonormalSpace, space_from_spec
from ..mechanisms.bands import plot_band
from ..mechanisms.dimension import public_dimension
from ..mechanisms.irregular import DISPLAY_POINTS
from ..practice.examples import EXAMPLES, write_example
from ..practice.ledger import BudgetExceeded, Ledger, LedgerError, data_identity
from ..practice.publish import (
    CLIP_WARNING_SHARE,
    COMBINE,
    SHRINK_WARNING_SHARE,
    curator_report,
    diagnostics_text,
    evaluation_points,
    read_curves,
    table_columns,
)
from ..practice.realdata import Domain
from ..practice.specification import (
    FTP,
    PTF,
    CuratorWarning,
    ReleaseSpec,
    SpecError,
    SpecifiedMechanism,
    SpecifiedRelease,
)
from .files import discard_temporary, stage_file, text_writer
from .parsing import UsageError, integer_option


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

VALUE_OPTIONS = ("--grid", "--domain", "--eval", "--lower", "--upper", "--clip", "--radius", "--mu",
                 "--epsilon", "--delta", "--cap")
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
        epilog="Exit codes: 0 released (or checked, with --check); 2 bad input, or a release the ledger "
               "refuses (one line on stderr; nothing written, nothing spent). Every public choice is "
               "checked before the data are read. Then, BEFORE any noise is drawn or anything written, "
               "the curator's diagnostics go to stderr (values clipped, fits shrunk onto the ball, the "
               "data's range against the band, with a warning when more than "
               f"{CLIP_WARNING_SHARE:.0%} of the values are clipped or {SHRINK_WARNING_SHARE:.0%} of "
               "the fits shrunk): they are computed from the data without noise, are NOT private and "
               "must not be published, and they never change what is released. The noise is drawn "
               "once, last, before the file is written; it comes from OpenDP unless "
               "--insecure-numpy-noise is given.")
    rel.add_argument("data", metavar="DATA.csv",
                     help="the curves: wide (one row per subject, one column per grid point, headers = "
                          "the points) or long (--layout long: columns subject, point, value)")
    rel.add_argument("--grid", default=None, metavar="POINTS",
                     help="the public grid in the data's units: a,b,c,... or START:STOP:COUNT; the CSV "
                          "must hold exactly these points. Leave it out (with --domain) for curves measured "
                          "at their own points or with empty cells: FTP fits each subject on the points it "
                          "has (PTF needs --grid)")
    rel.add_argument("--space", required=True, metavar="SPACE", help=SPACE_HELP)
    rel.add_argument("--lower", default=None, metavar="L",
                     help="with --upper: a public range of every value, in the data's units (one number; "
                          "with --grid also one per grid point). The data are centred on the range and "
                          "scaled (dpfda.PublicFrame), which gives PTF's clip and, in an orthonormal "
                          "space (legendre:M, fourier:M, ...), B' (a curve inside the range has at most that "
                          "norm about its centre). In "
                          "a kernel space a range bounds no RKHS norm: give --radius")
    rel.add_argument("--upper", default=None, metavar="U", help="see --lower")
    rel.add_argument("--radius", type=_number_option("--radius"), default=None, metavar="B",
                     help="the fitting radius B' > 0 in the data's units: a public bound on the norm of "
                          "each curve (about the range's centre with --lower/--upper, where it replaces "
                          "the range's own bound). With --private-radius: the largest radius considered")
    budget = rel.add_argument_group("the budget (one of --mu, or --epsilon with --delta)")
    budget.add_argument("--mu", type=_number_option("--mu"), default=None,
                        help="the privacy budget: the release is mu-GDP")
    budget.add_argument("--epsilon", type=_number_option("--epsilon"), default=None,
                        help="with --delta: the budget as (epsilon, delta)-DP; the release is mu-GDP with "
                             "the largest mu that implies it (dpfda.mu_from_epsilon_delta)")
    budget.add_argument("--delta", type=_number_option("--delta"), default=None, help="see --epsilon")
    rel.add_argument("--method", choices=("ftp", "ptf"), default="ftp",
                     help="Fit-Then-Protect (default) or Protect-Then-Fit")
    rel.add_argument("--clip", default=None, metavar="C",
                     help="PTF's clipping bounds c_j, in the data's units: one number or one per grid "
                          "point (a,b,c,...); default B' times ||phi(t_j)|| (Theorems 11, 14)")
    rel.add_argument("--domain", default=None, metavar="START,STOP",
                     help="the public interval mapped onto [0, 1] (default: the first and last grid point). "
                          "A fourier space is periodic on it: STOP is the same instant as START, so for "
                          "months 1 to 12 give --domain 1,13")
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
    rel.add_argument("--out", default=None, metavar="release.json",
                     help="the JSON file to write (must not exist yet); required unless --check")
    rel.add_argument("--plot", default=None, metavar="FILE.png|FILE.svg",
                     help="also draw the released curve with a 95%% band of the privacy noise (public: "
                          "from sigma and the basis, free post-processing); the band covers the privacy "
                          "noise only, not sampling variability")
    rel.add_argument("--xlabel", default=None, metavar="TEXT",
                     help="what the points are, with their unit (\"hour\", \"age (years)\"); default: the "
                          "point column's name in long form, \"grid point\" in wide form")
    rel.add_argument("--ylabel", default=None, metavar="TEXT",
                     help="what the values are, with their unit (\"temperature (°C)\"); default: the value "
                          "column's name in long form, \"value\" in wide form")
    best = rel.add_argument_group("choices made from the data or a proxy, with their cost")
    best.add_argument("--dimension-from", default=None, metavar="PROXY.csv",
                      help="choose the dimension M of an orthonormal space that nests (legendre:M, ...) from a "
                           "PUBLIC proxy file "
                           "(curves that are not the data released: another year, a published cohort), read "
                           "with the same layout options: the m in 1..M (M from --space) that minimises the "
                           "proxy mean's energy beyond m plus m sigma^2 (dpfda.mechanisms.dimension."
                           "public_dimension). Free of budget; only as good as the proxy")
    best.add_argument("--private-radius", action="store_true",
                      help="FTP only: choose B' from the data, as a private quantile of the norms of each "
                           "curve's fit (dpfda.mechanisms.radius.ftp_private_radius), with a share of the "
                           "budget; the cap (the largest radius considered) is the range's bound from "
                           "--lower/--upper or --radius. The two steps compose to the budget, and the record "
                           "states each step's mu and the radius chosen. The diagnostics before the release "
                           "are at the cap (the chosen B' is known only after the quantile's noise)")
    best.add_argument("--radius-share", type=_number_option("--radius-share"), default=None, metavar="S",
                      help="with --private-radius: the share of mu^2 spent on choosing B' (default 0.2)")
    best.add_argument("--radius-quantile", type=_number_option("--radius-quantile"), default=None,
                      metavar="Q", help="with --private-radius: which quantile of the fitted norms B' is "
                                        "(default 0.9)")
    best.add_argument("--check", action="store_true",
                      help="print the curator's diagnostics and stop: no noise drawn, nothing written, "
                           "no budget spent. What you change after looking is no longer public (see the "
                           "book's chapter 'Releasing your own data')")
    ledger = rel.add_argument_group("a budget ledger across releases of the same data")
    ledger.add_argument("--ledger", default=None, metavar="FILE",
                        help="the data set's budget ledger: each release is recorded there (mu, what, when) "
                             "and one that would take the composed total sqrt(sum mu_i^2) past the cap is "
                             "refused before any noise is drawn; the record names the total. Created with "
                             "--cap if it does not exist. An honesty aid, not a security boundary")
    ledger.add_argument("--cap", type=_number_option("--cap"), default=None, metavar="MU",
                        help="the ledger's cap: the largest composed mu the data set may spend (fixed when "
                             "the ledger is started)")
    ledger.add_argument("--dataset", default=None, metavar="NAME",
                        help="the data set's name in the ledger (default: DATA.csv's name without .csv)")
    rel.add_argument("--insecure-numpy-noise", action="store_true",
                     help="draw the noise with numpy instead of OpenDP: for teaching only, never for "
                          "a release that leaves the building")
    rel.add_argument("--seed", type=integer_option("--seed"), default=None,
                     help="with --insecure-numpy-noise: numpy's seed (default: fresh OS entropy)")


def add_example_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``example`` command to the subparsers ``sub``."""
    ex = sub.add_parser("example", help="write a sample CSV file to try `release` on",
                        description="Write a sample file of curves: " + "; ".join(
                            f"{k}: {v}" for k, v in EXAMPLES.items()) + ". Never overwrites a file (one that "
                        "already holds this sample is left as it is).")
    ex.add_argument("name", choices=tuple(EXAMPLES), help="which sample")
    ex.add_argument("file", metavar="FILE.csv", help="where to write it (must not exist yet)")


def run_example(args: argparse.Namespace) -> int:
    """``python -m dpfda example NAME FILE``: 0, or :class:`UsageError`."""
    try:
        what = write_example(args.name, args.file)
    except (FileExistsError, ImportError) as exc:
        raise UsageError(str(exc)) from None
    done = "found" if what.endswith("(already there, unchanged)") else "wrote"
    print(f"dpfda: {done} {args.file}: {what}")
    return 0


@dataclass
class _Plan:
    """The public choices of a release, checked before the data are read: the spec, its mechanism, and more."""

    spec: ReleaseSpec
    mech: SpecifiedMechanism
    at: np.ndarray
    how: dict


def _spec_error(exc: SpecError) -> UsageError:
    """A :class:`SpecError` as the command line says it: the option, then the rule."""
    option = {"lower, upper": "--lower/--upper", "units": "--ylabel",
              "secure": "--insecure-numpy-noise"}.get(exc.argument, "--" + exc.argument.replace("_", "-"))
    rule = re.sub(r"\b(private_radius|radius_share|radius_quantile)\b",
                  lambda m: "--" + m.group(1).replace("_", "-"), str(exc)[len(exc.argument) + 2:])
    return UsageError(f"{option}: {rule}")


def _specified(args: argparse.Namespace, **choices: object) -> tuple[ReleaseSpec, SpecifiedMechanism]:
    """The specification of these public choices and its mechanism (FTP or PTF by --method)."""
    try:
        spec = ReleaseSpec(**choices)  # type: ignore[arg-type]
        return spec, (FTP if args.method == "ftp" else PTF)(spec)
    except SpecError as exc:
        raise _spec_error(exc) from None


def _domain_and_grid(args: argparse.Namespace) -> tuple[np.ndarray | None, Domain]:
    """The public grid (None for curves on their own points) and the domain, named by --xlabel."""
    if args.grid is None:
        if args.domain is None:
            raise UsageError("without --grid (each subject on its own points) give --domain START,STOP: the "
                             "public interval of the points, fixed before the data are read")
        grid_points = None
    else:
        grid_points = _points_option(args.grid, "--grid")
        if grid_points.size > 1 and np.any(np.diff(grid_points) <= 0):
            raise UsageError("--grid must be strictly increasing")
    ends = grid_points[[0, -1]] if args.domain is None else _points_option(args.domain, "--domain")  # type: ignore[index]
    if ends.size != 2:
        raise UsageError(f"--domain must be two numbers START,STOP, got {args.domain!r}")
    xlabel = args.xlabel if args.xlabel is not None else (args.point if args.layout == "long" else "grid point")
    try:
        return grid_points, Domain(float(ends[0]), float(ends[1]), name=xlabel)
    except ValueError as exc:
        raise UsageError(f"--grid/--domain: {exc}") from None


def _bound_option(text: str | None, option: str) -> np.ndarray | float | None:
    """--lower, --upper, --clip: one number, or one per grid point."""
    if text is None:
        return None
    values = _points_option(text, option)
    return float(values[0]) if values.size == 1 else values


def _plan(args: argparse.Namespace) -> _Plan:
    """Check every public choice (before the data are read): the spec, its mechanism, the rest of the command."""
    space = space_option(args.space)
    if args.dimension_from is not None and not isinstance(space, OrthonormalSpace):
        raise UsageError("--dimension-from chooses the dimension of an orthonormal space (legendre:M, fourier:M, ...); "
                         f"--space {space.spec} has none")
    grid_points, domain = _domain_and_grid(args)
    spec, mech = _specified(
        args, space=space, domain=domain, grid=grid_points, lower=_bound_option(args.lower, "--lower"),
        upper=_bound_option(args.upper, "--upper"), radius=args.radius, clip=_bound_option(args.clip, "--clip"),
        mu=args.mu, epsilon=args.epsilon, delta=args.delta, secure=not args.insecure_numpy_noise,
        units=args.ylabel if args.ylabel is not None else (args.value if args.layout == "long" else "value"),
        private_radius=args.private_radius, radius_share=args.radius_share, radius_quantile=args.radius_quantile)
    at = (np.linspace(domain.start, domain.stop, 101) if args.eval_points is None
          else _points_option(args.eval_points, "--eval"))
    try:
        evaluation_points(at, domain=domain)
    except ValueError as exc:
        raise UsageError(f"--eval: {exc}") from None
    if args.seed is not None and not args.insecure_numpy_noise:
        raise UsageError("--seed is for --insecure-numpy-noise only: OpenDP's noise cannot be seeded")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.out is None and not args.check:
        raise UsageError("the following arguments are required: --out (the JSON file of the release)")
    if args.out is not None:
        _check_out_path(args.out)
    if args.ledger is None and (args.cap is not None or args.dataset is not None):
        raise UsageError("--cap and --dataset describe a budget ledger: give --ledger FILE")
    if args.cap is not None and not (np.isfinite(args.cap) and args.cap > 0):
        raise UsageError(f"--cap must be a finite number > 0 (a mu), got {args.cap!r}")
    frame = spec.frame
    how = {"grid": (f"the layout grid of {DISPLAY_POINTS} equally spaced points of the domain (curves on their "
                    "own points)" if spec.own_points else "given: --grid"),
           "domain": "given: --domain" if args.domain is not None else "the first and last grid point",
           "space": f"given: --space {space.spec}",
           "radius": (frame.radius_rule if frame is not None else f"given: --radius {args.radius:g} (data's units)"),
           "mu": (f"given: --mu {args.mu:g}" if args.mu is not None else f"from (epsilon, delta) = "
                  f"({args.epsilon:g}, {args.delta:g}): the largest mu that implies it")}
    if frame is not None:
        how["band"] = "given: --lower and --upper (data's units)"
    if spec.private_radius:
        how["radius"] = (f"private: the {spec.radius_quantile:g}-quantile of the fitted norms, with "
                         f"{spec.radius_share:g} of mu^2 (ftp_private_radius; see chosen_privately and budget), "
                         f"among 100 radii up to the cap, {how['radius']}")
    return _Plan(spec, mech, at, how)


def _check_out_path(out: str) -> None:
    """``--out``: a new .json file in an existing folder (checked before the data are read)."""
    if os.path.splitext(out)[1].lower() != ".json":
        raise UsageError(f"--out {out!r}: the record is JSON; name the file *.json (dpfda writes no other format)")
    if os.path.exists(out):
        raise UsageError(f"--out {out!r} exists: dpfda does not overwrite a release (a second "
                         "release of the same data spends the budget again); choose another name")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise UsageError(f"--out {out!r}: the folder {folder!r} does not exist")


def _read(args: argparse.Namespace, plan: _Plan, source: str) -> Curves:
    """The curves of ``source``: each subject on its own points, or (with --grid) on one common grid."""
    spec = plan.spec
    try:
        data = read_curves(source, layout=args.layout, id=args.id, point=args.point, value=args.value,
                           combine=args.combine, own_points=spec.own_points,
                           domain=spec.domain)
    except ValueError as exc:
        error = _data_error(source, exc)
        if not spec.own_points and "not measured at the same points" in str(exc):
            error = UsageError(str(error).replace(
                "). ", f"; the public --grid: {_short_points(spec.points)}). ", 1))
        raise error from None
    return data


def _data_error(source: str, exc: ValueError) -> UsageError:
    """The reader's message with the file named once, as the command line names it."""
    text = str(exc)
    for said in (f"{source!r}: ", "source: "):
        if text.startswith(said):
            text = text[len(said):]
    text = text.replace(f"no such file {source!r}", "no such file").replace(f"{source!r} is not", "not")
    return UsageError(f"{source}: {text}")


def _common(plan: _Plan, data: Curves, source: str) -> np.ndarray:
    """The values of curves read on one common grid, which must be the public --grid."""
    points, X = data.points, data.values
    assert points is not None and X is not None  # read without own points: a common grid
    grid = plan.spec.points
    if points.shape != grid.shape or not np.allclose(points, grid, rtol=1e-12, atol=0.0):
        raise UsageError(f"{source}: the data's grid ({_short_points(points)}) is not the public "
                         f"--grid ({_short_points(grid)}); the grid is fixed before the data "
                         "are read, and every curve must be observed on it (or leave out --grid: "
                         "FTP then fits each subject on its own points)")
    return X


def _choose_dimension(args: argparse.Namespace, plan: _Plan, n: int) -> _Plan:
    """--dimension-from: the dimension from a public proxy file (n, μ and B' public); the spec remade with it."""
    spec, mech = plan.spec, plan.mech.mechanism
    space = spec.space
    assert isinstance(space, OrthonormalSpace)
    proxy = _read(args, plan, args.dimension_from)
    family = type(space)
    if spec.own_points:
        curves = proxy if proxy.common and np.array_equal(proxy.grid, mech.geometry.grid) else \
            proxy.on_grid(mech.geometry.grid, periodic=isinstance(space, FourierSpace))
        assert curves.values is not None  # a common grid
        values = curves.values
    else:
        values = _common(plan, proxy, args.dimension_from)
    if spec.frame is not None:
        values = spec.frame.to_unit(values)
    try:
        choice = public_dimension(values, mech.geometry.grid, family, n, spec.budget_mu, float(mech.radius),
                                  m_max=space.m)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--dimension-from {args.dimension_from}: {exc}") from None
    chosen = family(choice.m)
    choices = {f.name: getattr(spec, f.name) for f in fields(spec) if f.init}
    new, new_mech = _specified(args, **{**choices, "space": chosen})
    how = {**plan.how, "space": (
        f"public_dimension on the public proxy {os.path.basename(args.dimension_from)} ({values.shape[0]} curves): "
        f"the m in 1..{space.m} minimising the proxy mean's energy beyond m plus m sigma^2, sigma = 2B'/(n mu) = "
        f"{choice.sigma:.4g}; chose {chosen.spec}")}
    return _Plan(new, new_mech, plan.at, how)


def _parameters(args: argparse.Namespace, plan: _Plan) -> dict:
    """The public choices that shape a release's mechanism, as the ledger compares them.

    μ is left out: a later release at another μ is what the ledger's composition counts
    (GDP composes adaptively, μ chosen after the earlier releases included); the evaluation
    points are post-processing.
    """
    spec = plan.spec
    return {"method": args.method, "space": spec.space.spec, "grid": args.grid,  # type: ignore[union-attr]
            "domain": args.domain, "lower": args.lower, "upper": args.upper, "radius": args.radius,
            "clip": args.clip, "dimension_from": args.dimension_from,
            "private_radius": ({"share": spec.radius_share, "quantile": spec.radius_quantile}
                               if spec.private_radius else None)}


def run_release(args: argparse.Namespace) -> int:
    """``python -m dpfda release``: check, read, report, release, write; 0 or :class:`UsageError`.

    Every public choice is checked (:func:`_plan`: a :class:`~dpfda.ReleaseSpec` and its
    mechanism, :func:`~dpfda.FTP` or :func:`~dpfda.PTF`) before the data are read; the
    curator's report goes to stderr before any noise is drawn or anything written; a ledger
    refuses a release past its cap before the data are read; the noise is drawn once, by the
    specified mechanism's release, after every other check and right before the record is written.
    """
    plan = _plan(args)
    _check_plot_path(args.plot)
    columns = _columns(args.data)
    with _open_ledger(args, columns) as ledger:
        if ledger is not None and not args.check:
            _ledger_check(ledger, plan.spec.budget_mu)
        data = _read(args, plan, args.data)
        n = data.n
        if args.dimension_from is not None:
            plan = _choose_dimension(args, plan, n)
        spec, mech = plan.spec, plan.mech.mechanism
        try:
            mech.sigma(n)  # the calibration at this public n, checked before the report
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        curves: Curves | np.ndarray = data if spec.own_points else _common(plan, data, args.data)
        try:
            report = curator_report(curves, mech.geometry, float(mech.radius), frame=spec.frame,
                                    clip=mech.clip if spec.frame is None else None)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{args.data}: {exc}") from None
        print(diagnostics_text(report), file=sys.stderr)  # before any noise: the curator only
        if spec.private_radius:
            print("  (--private-radius: B' above is the cap, the largest radius considered; the B' released is "
                  "chosen below it with part of the budget, and fits above that B' are shrunk onto it)",
                  file=sys.stderr)
        parameters = _parameters(args, plan)
        if ledger is not None:
            _say_changes(ledger, parameters)
        if args.check:
            if ledger is not None:
                ledger.note_check({"what": "the curator's diagnostics only (--check)", "n": n}, parameters)
            print("dpfda: --check: the diagnostics above only; no noise drawn, nothing written, nothing spent. "
                  "Release as planned to keep every choice public; a choice changed because of these "
                  "figures is a function of the data that no mu covers", file=sys.stderr)
            return 0
        noise = "OpenDP" if spec.secure else "numpy (INSECURE: teaching only, do not publish)"
        if ledger is not None:  # the spend is on disk before the noise is drawn
            ledger.spend(spec.budget_mu, {"what": f"{args.method.upper()} mean curve, {spec.space.spec}",  # type: ignore[union-attr]
                                          "n": n, "out": os.path.basename(args.out), "noise": noise.split(" ")[0]},
                         parameters)
        record = _record(args, plan, _release(args, plan, curves), ledger)
    _write_record(record, args.out)
    if args.plot is not None:
        _draw_release(record, args.plot, record["units"]["points"], record["units"]["values"])
    pairs = ", ".join(f"ε = {p['epsilon']:.3g} at δ = {p['delta']:g}" for p in record["epsilon_delta"])
    print(f"dpfda: released the {args.method.upper()} mean of n = {record['n']} curves at μ = {record['mu']:g} "
          f"({pairs}); noise from {noise}; wrote {args.out}"
          + ("" if ledger is None else f"; the ledger's total is now μ = {record['ledger']['mu_total']:.4g} "
             f"of its cap {record['ledger']['cap_mu']:g}"))
    return 0


def _columns(source: str) -> list[str]:
    try:
        return table_columns(source)
    except ValueError as exc:
        raise _data_error(source, exc) from None


@contextlib.contextmanager
def _open_ledger(args: argparse.Namespace, columns: list[str]) -> Iterator[Ledger | None]:
    if args.ledger is None:
        yield None
        return
    name = args.dataset if args.dataset is not None else os.path.splitext(os.path.basename(args.data))[0]
    try:
        identity = data_identity(name, layout=args.layout, columns=columns, id=args.id)
        with Ledger(args.ledger, identity, cap=args.cap) as ledger:
            yield ledger
    except LedgerError as exc:
        raise UsageError(f"--ledger: {exc}") from None


def _ledger_check(ledger: Ledger, mu: float) -> None:
    try:
        ledger.check(mu)
    except BudgetExceeded as exc:
        raise UsageError(f"--ledger: {exc}") from None


def _say_changes(ledger: Ledger, parameters: dict) -> None:
    changed = ledger.changed(parameters)
    if not changed:
        return
    last = ledger.entries[-1]
    what = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in changed)
    print(f"dpfda: NOTE: the ledger's last entry ({last.get('kind')}, {last.get('time')}) had other public "
          f"choices ({what}). If you changed them after looking at its diagnostics or its release, the new "
          "values are functions of the data, no longer public, and this release's mu does not cover them; "
          "the ledger records both", file=sys.stderr)


def _release(args: argparse.Namespace, plan: _Plan, curves: Curves | np.ndarray) -> SpecifiedRelease:
    """The noise: drawn here, once, by the spec's mechanism (with --private-radius: the quantile's, then FTP's)."""
    rng = None if plan.spec.secure else np.random.default_rng(args.seed)
    try:
        with warnings.catch_warnings():  # the curator's diagnostics are on stderr already, before the noise
            warnings.simplefilter("ignore", CuratorWarning)
            return plan.mech.release(curves, rng)
    except ImportError as exc:
        raise UsageError(f"{exc} (or, for teaching only, --insecure-numpy-noise)") from None
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def _record(args: argparse.Namespace, plan: _Plan, rel: SpecifiedRelease, ledger: Ledger | None) -> dict:
    """The release's own record, with the command, how each choice was made and the ledger."""
    try:
        record = rel.record(plan.at, combine=args.combine)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    own = {k: record.pop(k) for k in ("units", "budget_requested", "sampling") if k in record}
    record["command"] = {"data": os.path.basename(args.data), "layout": args.layout,
                         "grid": args.grid, "space": plan.spec.space.spec}  # type: ignore[union-attr]
    record["units"] = own.pop("units")
    record["how_chosen"] = plan.how
    record.update(own)
    if ledger is not None:
        record["ledger"] = ledger.summary()
    return record


def _write_record(record: dict, out: str) -> None:
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    tmp = stage_file(out, text_writer(text))
    try:
        os.link(tmp, out)  # fails if --out appeared meanwhile: never overwrite a release
    except FileExistsError:
        raise UsageError(f"--out {out!r} appeared while releasing; not overwritten") from None
    except OSError:  # a file system without hard links: check, then rename
        if os.path.exists(out):
            raise UsageError(f"--out {out!r} appeared while releasing; not overwritten") from None
        os.replace(tmp, out)
    finally:
        discard_temporary(tmp)


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


def _draw_release(record: dict, path: str, xlabel: str, ylabel: str) -> None:
    """The record's curve with the 95 % band of its privacy noise, as PNG or SVG."""
    from matplotlib.figure import Figure  # here: only `release --plot` draws

    fig = Figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.add_subplot()
    plot_band(record["curve"]["points"], record["curve"]["values"], record["noise_sd"], level=0.95, ax=ax,
              xlabel=xlabel, ylabel=f"released mean {ylabel}",
              title=f"{record['method'].upper()} at μ = {record['mu']:g}, n = {record['n']}")
    fig.savefig(path, metadata={"Date": None} if path.lower().endswith(".svg") else None)


def _short_points(points: np.ndarray) -> str:
    shown = ", ".join(f"{p:g}" for p in points[:4])
    return f"{points.size} points: {shown}{', …' if points.size > 4 else ''}"
