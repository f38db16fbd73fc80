"""dpfda — differentially private functional mean estimation, FTP versus PTF.

A small, exact library that accompanies the paper *Fit-Then-Protect versus Protect-Then-Fit*
(Chen, Chen, Song and Awan), under Gaussian differential privacy: what a practitioner needs
to release a private mean curve and a chapter's reader to follow the argument.  The book's
own machinery (its simulation studies, claims, figures, the design space between the
pipelines and the mechanisms broken on purpose) is the separate package ``dpfda_book``,
which imports this one; nothing here imports it.

The library is built in layers, each a subpackage; any layer may import the shared
top-level modules (``validation``, ``_version``), and otherwise ``maths`` imports no layer,
``mechanisms`` imports ``maths``, ``practice`` and ``trust`` (side by side) import ``maths``
and ``mechanisms``, and the command line ``cli`` imports ``maths``, ``mechanisms`` and
``practice`` (``tests/test_architecture.py`` holds this graph and checks it, and that no
module takes part in an import cycle):

``maths`` — the paper's mathematics
    ``spaces`` (``LegendreSpace``, ``FourierSpace``, ``KernelSpace``, grids), ``curves``
    (``Curves``: data with their points), ``fitting`` (least squares in a ball, the secular
    equation), ``summation`` (exact sums and their rounding bounds), ``rounding``
    (tolerances from rounding-error bounds).
``mechanisms`` — mechanisms and their guarantees
    ``mechanism_type`` (``Mechanism``: per-curve map, calibration, noise shape, fit; the
    noise rule), ``parts`` (the maps, calibrations and fits it is built from), ``ftp_ptf``
    (``ftp``, ``ptf`` and their mechanisms), ``pipelines`` (the stages of Algorithms 1
    and 2), ``release`` (``Release``: what one release holds; its random part off the grid),
    ``calibration`` (the one calibration), ``bands`` (the noise of a
    release, point by point), ``irregular`` (FTP on curves at their own points), ``radius``
    and ``dimension`` (B' and m, chosen publicly or privately), ``covariance`` and
    ``covariance_theory`` (private covariances and principal components), ``privacy``
    (G_μ, composition, GDP ↔ (ε, δ), Laplace), ``secure`` (noise from OpenDP's vetted
    samplers), ``theory`` (the error bounds and limits of Theorems 10–15).
``trust`` — checking the guarantee
    ``draws`` (many releases of one dataset), ``recompute`` (the audit's own summaries, σ
    and noise law), ``audit`` (empirical μ-GDP audits from first principles, worst-case
    neighbours); any :class:`Mechanism` is audited, a design through the public definition
    of its set.
``practice`` — your own data
    ``specification`` (the one way to release: ``ReleaseSpec``, ``FTP``, ``PTF``),
    ``realdata`` (a domain onto [0, 1], public ranges onto c_j and B'), ``reading`` (a
    table of curves in), ``diagnostics`` (the curator's figures, never published),
    ``publish`` (the record of one release out), ``covariance_record``, ``examples``;
    ``cli`` is ``python -m dpfda release``.

How the modules import each other (checked by ``tests/test_architecture.py``): no module
imports a private name (``_x``) of another; a module imports what it uses at its top, except
the imports inside functions that test lists, each with its reason: mostly a heavy or
optional dependency (scipy, pandas, matplotlib; OpenDP) loaded only where it is used, so that
``import dpfda`` stays light.
"""

import importlib
from typing import TYPE_CHECKING

from ._version import __version__ as __version__
from .maths import spaces as _spaces
from .maths.curves import Curves
from .maths.fitting import BallFit, BallLeastSquares, fit_ball
from .maths.spaces import *  # noqa: F403 - every name of the spaces' __all__ (listed below) is dpfda's
from .mechanisms.ftp_ptf import Mechanism, ftp, ftp_mechanism, ptf, ptf_mechanism
from .mechanisms.pipelines import ftp_sigma, ptf_sigmas
from .mechanisms.privacy import (
    compose,
    delta_from_mu,
    epsilon_from_mu,
    gaussian_sigma,
    laplace_mechanism,
    laplace_scale,
    mu_from_epsilon_delta,
    tradeoff,
)
from .mechanisms.release import Release
from .practice.realdata import Domain, PublicFrame, legendre_derivative
from .practice.specification import (
    FTP,
    PTF,
    CuratorWarning,
    ReleaseSpec,
    SpecError,
    SpecifiedMechanism,
    SpecifiedRelease,
)
from .validation import AssumptionError

_LAZY = {"audit": "trust.audit", "secure": "mechanisms.secure", "theory": "mechanisms.theory"}
"""Submodules of ``__all__`` imported on first use (``dpfda.trust.audit``, ``from dpfda import theory``)
if ``import dpfda`` has not loaded them: ``audit`` imports scipy, which a release never needs."""

if TYPE_CHECKING:
    from types import ModuleType

    from .mechanisms import secure, theory
    from .trust import audit


def __getattr__(name: str) -> "ModuleType":
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{_LAZY[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AssumptionError",
    "BallFit",
    "BallLeastSquares",
    "CuratorWarning",
    "Curves",
    "Domain",
    "FTP",
    "Mechanism",
    "PTF",
    "PublicFrame",
    "Release",
    "ReleaseSpec",
    "SpecError",
    "SpecifiedMechanism",
    "SpecifiedRelease",
    "compose",
    "delta_from_mu",
    "epsilon_from_mu",
    "fit_ball",
    "ftp",
    "ftp_mechanism",
    "ftp_sigma",
    "gaussian_sigma",
    "laplace_mechanism",
    "laplace_scale",
    "legendre_derivative",
    "mu_from_epsilon_delta",
    "ptf",
    "ptf_mechanism",
    "ptf_sigmas",
    "audit",
    "secure",
    "theory",
    "tradeoff",
]
__all__ += _spaces.__all__  # the spaces and kernels, as their module lists them
