"""dpfda — differentially private functional mean estimation, FTP versus PTF.

A small, exact companion package to the paper *Fit-Then-Protect versus
Protect-Then-Fit* (Chen, Chen, Song and Awan), under Gaussian differential
privacy.  The package is built in layers, each a subpackage; any layer may import the
shared top-level modules (``config``, ``_validation``, ``_interrupt``, ``_version``), and
otherwise ``maths`` imports no layer, ``mechanisms`` imports ``maths``, ``simulation``
and ``practice`` (side by side) import ``maths`` and ``mechanisms``, ``trust`` and
``report`` import those and ``simulation``, and the command line ``cli`` imports every
layer but ``trust`` (tests/test_architecture.py holds this graph and checks it):

``maths`` — the paper's mathematics
    ``spaces`` (``LegendreSpace``, ``FourierSpace``, ``KernelSpace``, grids), ``curves``
    (``Curves``: data with their points), ``fitting`` (least squares in
    a ball, the secular equation), ``data`` (the generative models of the simulations),
    ``summation`` (exact sums and their rounding bounds).
``mechanisms`` — mechanisms and their guarantees
    ``gaussian`` (``Mechanism``: per-curve map, calibration, noise shape, fit; the noise
    rule), ``parts`` (the maps, calibrations and fits it is built from), ``mechanism``
    (``ftp``, ``ptf`` and their mechanisms), ``pipelines`` (the stages of Algorithms 1
    and 2, ``Release``), ``projections`` (a design's projections, exact at every
    magnitude), ``whitening`` (a design's noise metric and the extent of its set),
    ``designs`` (beyond the paper: from PTF's box to FTP's ellipsoid), ``privacy`` (G_μ,
    composition, GDP ↔ (ε, δ), Laplace), ``secure`` (noise from OpenDP's vetted
    samplers), ``theory`` (the error bounds and limits of Theorems 10–15).
``simulation`` — the Monte Carlo study
    ``studies`` (settings and studies), ``seeding`` (random streams), ``engine`` (the one
    simulation loop over mechanisms), ``schedule`` (planning, joblib and Dask),
    ``tabulate`` (results tables), ``store`` (the book's results store), ``design_runs``
    (the designs' simulations).
``trust`` — checking the guarantee
    ``broken`` (mechanisms broken on purpose), ``recompute`` (the audit's own summaries, σ
    and noise law), ``audit`` (empirical μ-GDP audits from first principles, worst-case
    neighbours).
``report`` — the book's figures and claims
    ``style`` (one style for every figure), ``tables`` (tables for readers),
    ``study_figures`` (the paper's studies drawn), ``chapter_figures`` (the figures of single
    chapters), ``figure_checks`` (what a drawn figure gets wrong), ``explorer`` (the
    interactive figure as HTML), ``plots`` (all of their names, from one place),
    ``evidence`` (Monte Carlo checks), ``activation_bounds`` (PTF's activation bounds from
    the design), ``claim_encodings`` (each claim as signed comparisons), ``claim_registry``
    (one record per claim of the paper), ``claim_labels`` (the verdict matrix's labels),
    ``claim_verdicts`` (from components to verdicts), ``law_runs`` (the claims under every
    latent law), ``claims`` (all of their names, from one place).
``practice`` — your own data
    ``realdata`` (a domain onto [0, 1], public ranges onto c_j and B'), ``reading`` (a
    table of curves in), ``diagnostics`` (the curator's figures, never published),
    ``publish`` (the record of one release out); ``cli`` is ``python -m dpfda``.

How the modules import each other (checked by ``tests/test_architecture.py``): no module
imports a private name (``_x``) of another; a module imports what it uses at its top, except
the imports inside functions that test lists, each with its reason: mostly a heavy or
optional dependency (scipy, pandas, matplotlib, joblib; OpenDP, bokeh, dask.distributed)
loaded only where it is used, so that ``import dpfda`` and a simulation worker stay light.
"""

import importlib
from typing import TYPE_CHECKING

from ._validation import AssumptionError
from ._version import __version__ as __version__
from .maths import spaces as _spaces
from .maths.curves import Curves
from .maths.data import KernelCurves, PolynomialCurves, observe, polynomial_curves, rkhs_curves, uniform_ball
from .maths.fitting import BallFit, BallLeastSquares, fit_ball
from .maths.spaces import *  # noqa: F403 - every name of the spaces' __all__ (listed below) is dpfda's
from .mechanisms.mechanism import Mechanism, ftp, ftp_mechanism, ptf, ptf_mechanism
from .mechanisms.pipelines import Release, ftp_sigma, ptf_sigmas
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
from .practice.realdata import Domain, PublicFrame, legendre_derivative

_LAZY = {"audit": "trust.audit", "designs": "mechanisms.designs", "secure": "mechanisms.secure",
         "theory": "mechanisms.theory"}
"""Submodules of ``__all__`` imported on first use (``dpfda.trust.audit``, ``from dpfda import theory``)
if ``import dpfda`` has not loaded them: ``audit`` imports scipy, which a simulation worker never needs."""

if TYPE_CHECKING:
    from types import ModuleType

    from .mechanisms import designs, secure, theory
    from .trust import audit


def __getattr__(name: str) -> "ModuleType":
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{_LAZY[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AssumptionError",
    "BallFit",
    "BallLeastSquares",
    "Curves",
    "Domain",
    "KernelCurves",
    "Mechanism",
    "PolynomialCurves",
    "PublicFrame",
    "Release",
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
    "observe",
    "polynomial_curves",
    "ptf",
    "ptf_mechanism",
    "ptf_sigmas",
    "rkhs_curves",
    "audit",
    "designs",
    "secure",
    "theory",
    "tradeoff",
    "uniform_ball",
]
__all__ += _spaces.__all__  # the spaces and kernels, as their module lists them
