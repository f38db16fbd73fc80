"""dpfda — differentially private functional mean estimation, FTP versus PTF.

A small, exact companion package to the paper *Fit-Then-Protect versus
Protect-Then-Fit* (Chen, Chen, Song and Awan), under Gaussian differential
privacy.  Modules, each readable beside the chapter that introduces it:

=============  ==============================================================
``spaces``     ``LegendreSpace``, ``KernelSpace``, kernels, ``uniform_grid``
``fitting``    ball-constrained weighted least squares (secular equation)
``privacy``    G_μ, composition, Gaussian calibration, GDP ↔ (ε, δ), Laplace
``pipelines``  ``ftp`` (Algorithm 1), ``ptf`` (Algorithm 2), ``Release``
``mechanism``  ``Mechanism``: summary map, calibration, noise shape, fit (every mechanism)
``theory``     the bounds and limits of Theorems 10–15
``data``       the paper's generative models
``audit``      empirical μ-GDP audits, worst-case neighbours (Theorem 6, Prop. 9)
``secure``     release noise from OpenDP's vetted samplers (``secure=True``)
``realdata``   a study's domain onto [0, 1], public value ranges onto c_j and B'
``publish``    a table of curves in, the record of one release to publish out
``explorer``   the interactive ratio figure as one HTML fragment for static pages (bokeh)
``designs``    beyond the paper: one mechanism from PTF's box to FTP's ellipsoid
=============  ==============================================================

How the modules import each other (checked by ``tests/test_architecture.py``): no module
imports a private name (``_x``) of another; a module imports what it uses at its top, except
the imports inside functions that test lists, each with its reason: mostly a heavy or
optional dependency (scipy, pandas, matplotlib, joblib; OpenDP, bokeh, dask.distributed)
loaded only where it is used, so that ``import dpfda`` and a simulation worker stay light.
"""

import importlib
from typing import TYPE_CHECKING

from ._validation import AssumptionError
from .data import KernelCurves, PolynomialCurves, observe, polynomial_curves, rkhs_curves, uniform_ball
from .fitting import BallFit, BallLeastSquares, fit_ball
from .mechanism import Mechanism, ftp, ftp_mechanism, ptf, ptf_mechanism
from .pipelines import Release, ftp_sigma, ptf_sigmas
from .privacy import (
    compose,
    delta_from_mu,
    epsilon_from_mu,
    gaussian_sigma,
    laplace_mechanism,
    laplace_scale,
    mu_from_epsilon_delta,
    tradeoff,
)
from .realdata import Domain, PublicFrame, legendre_derivative
from .spaces import (
    BrownianKernel,
    FunctionSpace,
    GaussianKernel,
    GridGeometry,
    Kernel,
    KernelGeometry,
    KernelSpace,
    LegendreGeometry,
    LegendreSpace,
    brownian_kernel,
    gaussian_kernel,
    uniform_grid,
)

__version__ = "0.1.1"

_LAZY = ("audit", "designs", "secure", "theory")
"""Submodules of ``__all__`` imported on first use (``dpfda.audit``, ``from dpfda import theory``)
if ``import dpfda`` has not loaded them: ``audit`` imports scipy, which a simulation worker never needs."""

if TYPE_CHECKING:
    from . import audit, designs, secure, theory


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AssumptionError",
    "BallFit",
    "BallLeastSquares",
    "BrownianKernel",
    "Domain",
    "FunctionSpace",
    "GaussianKernel",
    "GridGeometry",
    "Kernel",
    "KernelCurves",
    "KernelGeometry",
    "KernelSpace",
    "Mechanism",
    "LegendreGeometry",
    "LegendreSpace",
    "PolynomialCurves",
    "PublicFrame",
    "Release",
    "brownian_kernel",
    "compose",
    "delta_from_mu",
    "epsilon_from_mu",
    "fit_ball",
    "ftp",
    "ftp_mechanism",
    "ftp_sigma",
    "gaussian_kernel",
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
    "uniform_grid",
]
