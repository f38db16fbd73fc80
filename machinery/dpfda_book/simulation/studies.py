"""The simulation studies of the paper as data (§5, §5.1–5.3 and the appendix).

A :class:`Setting` is one cell of a simulation: a function space on a grid, a
sample size, a privacy budget, an observation-noise level and a fitting
radius B'.  A :class:`Study` is a named, ordered collection of settings.  The
engine (:mod:`dpfda_book.simulation.engine`) runs any study; :mod:`dpfda_book.report.plots` draws it (how
each study is laid out is its :class:`Layout`, :data:`LAYOUTS` for the paper's).

The paper's studies (all with B = 1 and 1000 repetitions in the paper):

==========  ======================================================================
``fig1``    RKHS (Gaussian kernel, ρ = 0.2), σ₀ = 0, B' = 1.1B, T ∈ {2,4,6,8},
            μ ∈ {0.1, 1} — FTP/PTF MSE ratio against n (§5.1, Figure 1)
``table1``  the settings of Figure 1, tabulated with p̂_PTF (appendix, Table 1)
``fig2``    RKHS, σ₀ = 1, μ = 1, T = 4, B' ∈ {B, √log n, log n, √n, n^{2/3}} —
            n × MSE of each pipeline (§5.2, Figure 2)
``fig3``    RKHS, μ = 1, B' = log n, σ₀ ∈ {0.1, 1, 10}, T ∈ {2,4,6,8} —
            MSE ratio against n (§5.3, Figure 3)
``fig4``    Legendre H_m, T = 20, σ₀ = 0, B' = 1.1B, m ∈ {2,4,6,8},
            μ ∈ {0.1, 1} — IMSE ratio (appendix, Figure 4)
``fig5``    Legendre, T = 20, σ₀ = 1, μ = 1, m = 4, radius rules of Figure 2 —
            n × IMSE (appendix, Figure 5)
``fig6``    Legendre, T = 20, μ = 1, B' = √log n, σ₀ ∈ {0.1, 1, 10},
            m ∈ {2,4,6,8} — IMSE ratio (appendix, Figure 6)
==========  ======================================================================

with n ∈ {2², 2³, …, 2¹²} throughout.

A new study is built the same way, e.g.::

    Study.grid("wide", family="legendre", n=[64, 256], T=40, m=[3, 5], mu=[0.5, 1],
               sigma0=0.5, radius_rule=["log_n", "1.1B"])

Radius rules are named functions of (n, B) (:data:`RADIUS_RULES`); a custom
rule is passed as a ``(name, function)`` pair, and the value it gives is
stored in each setting, so a study can be shipped to other processes or
machines without the function.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, cast

import numpy as np

from dpfda.maths.spaces import (
    SPACE_FAMILIES,
    GridGeometry,
    KernelSpace,
    OrthonormalSpace,
    gaussian_kernel,
    space_from_spec,
    uniform_grid,
)
from dpfda.validation import check_int, check_nonnegative, check_positive

from .models import check_law

__all__ = [
    "FAMILIES",
    "check_family",
    "RADIUS_RULES",
    "radius_rule",
    "Setting",
    "Study",
    "Layout",
    "LAYOUTS",
    "layout_of",
    "PAPER_N",
    "paper_studies",
    "get_study",
    "STUDY_NAMES",
    "DECAY_KERNELS",
    "kernel_study",
]

PAPER_N = tuple(2**k for k in range(2, 13))
"""n ∈ {2², …, 2¹²} (§5)."""


# ---------------------------------------------------------------------------
# Radius rules B' = rule(n, B)
# ---------------------------------------------------------------------------


def _rule_B(n: int, B: float) -> float:
    return B


def _rule_1_1B(n: int, B: float) -> float:
    return 1.1 * B


def _rule_sqrt_log_n(n: int, B: float) -> float:
    return math.sqrt(math.log(n))


def _rule_log_n(n: int, B: float) -> float:
    return math.log(n)


def _rule_sqrt_n(n: int, B: float) -> float:
    return math.sqrt(n)


def _rule_n_2_3(n: int, B: float) -> float:
    return n ** (2.0 / 3.0)


# A radius rule: a name from RADIUS_RULES or a (name, function(n, B)) pair.
_RuleSpec = str | tuple[str, Callable[[int, float], float]]

RADIUS_RULES: dict[str, Callable[[int, float], float]] = {
    "B": _rule_B,
    "1.1B": _rule_1_1B,
    "sqrt_log_n": _rule_sqrt_log_n,
    "log_n": _rule_log_n,
    "sqrt_n": _rule_sqrt_n,
    "n_2_3": _rule_n_2_3,
}
"""The fitting radii of §5, B' ∈ {B, 1.1B, √log n, log n, √n, n^{2/3}} (natural log)."""

def radius_rule(name: str, n: int, B: float = 1.0) -> float:
    """The fitting radius B' given by the named rule at sample size ``n``.

    >>> round(radius_rule("log_n", 4), 4)
    1.3863
    """
    if not isinstance(name, str):
        raise TypeError(f"radius_rule name must be a string, got {type(name).__name__}")
    try:
        rule = RADIUS_RULES[name]
    except KeyError:
        raise ValueError(
            f"unknown radius rule {name!r}; choose one of {sorted(RADIUS_RULES)} "
            "or pass a (name, function) pair to Study.grid"
        ) from None
    return float(rule(n, B))


# ---------------------------------------------------------------------------
# One setting
# ---------------------------------------------------------------------------

FAMILIES = ("kernel",) + tuple(name for name, cls in SPACE_FAMILIES.items() if issubclass(cls, OrthonormalSpace))
"""The families of function spaces a :class:`Setting` can use: ``"kernel"``
(:class:`~dpfda.maths.spaces.KernelSpace`, an RKHS: the paper's Gaussian kernel unless the
setting names another ``kernel``) and every orthonormal family of
:data:`~dpfda.maths.spaces.SPACE_FAMILIES` (H_m: ``"legendre"``, the paper's, ``"fourier"``, and
any family added there)."""

# Stream compatibility, said here once: the random-stream keys (Setting.canonical,
# Setting.latent_canonical) hash "poly" and "rkhs", the family names of dpfda 0.1.x, and add
# nothing for the default law (its keys predate the law dimension: those of dpfda 0.1.0), so that
# all results of the book stay bit-identical.  Never change these strings (tests/test_engine.py
# pins keys and first draws); other modules refer to this note as _STREAM_TOKEN.  Any other
# orthonormal family is its own token (its name, e.g. "fourier").
_STREAM_TOKEN = {"legendre": "poly", "kernel": "rkhs"}


def _gaussian_spec(rho: float | None) -> str | None:
    """The spec of the paper's space, the RKHS of the Gaussian kernel of bandwidth ρ (None without ρ)."""
    return None if rho is None else KernelSpace(gaussian_kernel(rho)).spec


def _kernel_of(kernel: object, rho: float | None) -> tuple[float | None, str | None]:
    """(ρ, kernel) as a kernel setting holds them.

    The paper's space, the Gaussian kernel of bandwidth ρ, is ``kernel=None`` with ``rho`` (however
    it was written); any other kernel is its spec, with ``rho=None`` (the spec holds its numbers).
    A ``rho`` given beside another kernel must be that kernel's own length-scale.

    >>> _kernel_of(None, None), _kernel_of("gaussian:1/5", None)
    ((0.2, None), (0.2, None))
    >>> _kernel_of("matern:3/2,0.1", None)
    (None, 'matern:1.5,0.1')
    """
    if kernel is None:
        return (0.2 if rho is None else check_positive(rho, "rho")), None
    if not isinstance(kernel, str):
        raise TypeError("kernel must be the spec of a kernel space such as 'matern:1.5,0.2', "
                        f"got {type(kernel).__name__}")
    space = space_from_spec(kernel)
    if not isinstance(space, KernelSpace):
        raise ValueError(f"kernel must be the spec of a kernel space (gaussian:RHO, matern:NU,RHO, ...), "
                         f"got {kernel!r}, a {type(space).__name__}; an orthonormal H_m is its family "
                         "(family='legendre', m=...)")
    own = space.kernel.parameters.get("rho")
    if rho is not None and (own is None or check_positive(rho, "rho") != own):
        raise ValueError(f"rho={rho!r} disagrees with kernel {kernel!r}, whose length-scale is {own!r}: "
                         "give the kernel alone")
    if own is not None and space.spec == _gaussian_spec(own):
        return own, None  # the paper's family, however written
    return None, space.spec


def check_family(value: object, name: str = "family") -> str:
    """``value`` if it names a family of :data:`FAMILIES`, else a ValueError.

    >>> check_family("legendre")
    'legendre'
    >>> check_family("poly")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: family must be one of ('kernel', 'legendre', ...), got 'poly'
    """
    if isinstance(value, str) and value in FAMILIES:
        return value
    raise ValueError(f"{name} must be one of {FAMILIES} ('kernel' or an orthonormal family of "
                     f"dpfda's SPACE_FAMILIES), got {value!r}")


@dataclass(frozen=True)
class Setting:
    """One simulation setting: function space, grid, n, μ, σ₀ and the fitting radius B'.

    Parameters
    ----------
    family : str
        The family of the function space (:attr:`space`), one of :data:`FAMILIES`.  ``"kernel"``: the
        RKHS of ``kernel`` (the paper's Gaussian kernel with bandwidth ``rho``
        unless ``kernel`` names another; :class:`~dpfda.maths.spaces.KernelSpace`),
        latent curves from :func:`dpfda_book.simulation.models.rkhs_curves` in that RKHS with ``centers``
        kernel centres, error = grid MSE (eq. 8).  ``"legendre"``: the Legendre space H_m
        (:class:`~dpfda.maths.spaces.LegendreSpace`), latent curves from
        :func:`dpfda_book.simulation.models.polynomial_curves`, error = IMSE (eq. 7); any
        other orthonormal family (``"fourier"``) likewise, its H_m being ``family:m``.
    n : int
        Number of curves.
    T : int
        Number of equally spaced grid points t_j = (j - 1)/(T - 1).
    mu : float
        Privacy budget μ > 0 (μ-GDP).
    sigma0 : float
        Observation-noise standard deviation σ₀ >= 0 (eq. 2).
    radius_rule : str
        Name of the rule that gave ``radius`` (a key of :data:`RADIUS_RULES`
        or a custom name).
    radius : float, optional
        B' > 0.  Computed from ``radius_rule`` when omitted.
    m : int, optional
        Dimension of H_m (an orthonormal family only; T >= m, Assumption A.3).
    B : float
        Bound on the norm of each latent curve (Assumption A.1), default 1.
    rho : float, optional
        Gaussian-kernel bandwidth (``family="kernel"`` with the paper's kernel; default 0.2).
        None for another ``kernel``, whose spec holds its own length-scale.
    kernel : str, optional
        The RKHS's kernel as a space spec (``family="kernel"`` only), e.g.
        ``"matern:1.5,0.2"`` (:func:`dpfda.space_from_spec`; any kernel of
        :data:`~dpfda.maths.spaces.SPACE_FAMILIES`).  None (the default), or a spec of the
        Gaussian kernel, is the paper's Gaussian kernel of bandwidth ``rho``, held as
        ``kernel=None`` (so ``dataclasses.replace(setting, rho=...)`` works as before);
        :attr:`kernel_spec` is the spec in every case.  Only another kernel enters the
        stream keys (:meth:`stream_canonical`, :meth:`latent_canonical`), so the paper's
        settings keep their keys and draws.
    centers : int, optional
        Number of kernel centres of the latent curves (``"kernel"`` only; default 20).
    law : str
        The latent law, a member of :data:`dpfda_book.simulation.models.LAWS` (default
        ``"default"``, the laws of the paper's setups as :mod:`dpfda_book.simulation.models` reads
        them).  Part of the latent curves' stream key
        (:func:`dpfda_book.simulation.seeding.latent_stream_key`), so each law draws its
        own curves, but not of the repetitions' (:meth:`stream_canonical`): the
        laws share their observation and privacy noise (common random numbers);
        ``"default"`` adds nothing to the keys (see ``_STREAM_TOKEN``).
    """

    family: str
    n: int
    T: int
    mu: float
    sigma0: float
    radius_rule: str
    radius: float = None  # type: ignore[assignment]  # None: from radius_rule (__post_init__)
    m: int | None = None
    B: float = 1.0
    rho: float | None = None
    centers: int | None = None
    law: str = "default"
    kernel: str | None = None

    def __post_init__(self) -> None:
        check_family(self.family)
        assign = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        assign("n", check_int(self.n, "n", 1))
        assign("T", check_int(self.T, "T", 2))
        assign("mu", check_positive(self.mu, "mu"))
        assign("sigma0", check_nonnegative(self.sigma0, "sigma0"))
        B = check_positive(self.B, "B")
        assign("B", B)
        if not isinstance(self.radius_rule, str) or not self.radius_rule:
            raise TypeError("radius_rule must be a non-empty string naming the rule")
        if self.radius is None:
            assign("radius", radius_rule(self.radius_rule, self.n, B))
        assign("radius", check_positive(self.radius, "radius"))
        if self.orthonormal:
            if self.m is None:
                raise ValueError(f"m (the dimension of H_m) is required when family={self.family!r}")
            assign("m", check_int(self.m, "m", 1))
            if self.T < self.m:
                raise ValueError(f"T must be >= m for H_m (Assumption A.3), got T={self.T}, m={self.m}")
            if self.rho is not None or self.centers is not None or self.kernel is not None:
                raise ValueError("rho, centers and kernel apply only to family='kernel'")
        else:
            if self.m is not None:
                raise ValueError("m applies only to an orthonormal family (family='legendre', ...)")
            rho, kernel = _kernel_of(self.kernel, self.rho)
            assign("rho", rho)
            assign("kernel", kernel)
            assign("centers", 20 if self.centers is None else check_int(self.centers, "centers", 1))
        check_law(self.law)

    # -- derived objects ---------------------------------------------------
    @property
    def orthonormal(self) -> bool:
        """Whether the space is an orthonormal H_m (every family but ``"kernel"``)."""
        return self.family != "kernel"

    @property
    def metric(self) -> str:
        """``"IMSE"`` (H_m, eq. 7) or ``"MSE"`` (RKHS grid MSE, eq. 8)."""
        return "IMSE" if self.orthonormal else "MSE"

    @property
    def dim(self) -> int:
        """Dimension d of the fitted coordinates (m for H_m, T for the RKHS)."""
        if self.orthonormal:
            assert self.m is not None  # required for H_m (__post_init__)
            return self.m
        return self.T

    @property
    def space(self) -> OrthonormalSpace | KernelSpace:
        """The setting's space, ``family:m`` (``LegendreSpace(m)``) or :class:`~dpfda.KernelSpace` (``kernel``)."""
        if self.orthonormal:
            assert self.m is not None  # required for H_m (__post_init__)
            return cast(OrthonormalSpace, space_from_spec(f"{self.family}:{self.m}"))
        return cast(KernelSpace, space_from_spec(cast(str, self.kernel_spec)))

    @property
    def kernel_spec(self) -> str | None:
        """The kernel's spec (``"gaussian:0.2"``, ``"matern:1.5,0.2"``); None for an orthonormal family."""
        if self.orthonormal:
            return None
        return self.kernel if self.kernel is not None else _gaussian_spec(self.rho)

    def grid(self) -> np.ndarray:
        """The equally spaced grid of T points (:func:`dpfda.uniform_grid`)."""
        return uniform_grid(self.T)

    def geometry(self) -> GridGeometry:
        """The geometry of :attr:`space` on :meth:`grid`."""
        return self.space.at(self.grid())

    # -- identity ------------------------------------------------------------
    def canonical(self) -> str:
        """A canonical text form of everything that determines the results.

        The figure or study a setting belongs to is *not* part of it: two
        studies that contain the same setting get the same numbers.
        """
        return self.stream_canonical() + self._law_key()

    def stream_canonical(self) -> str:
        """:meth:`canonical` without the law: the key of the repetitions' random streams.

        Settings that differ only in their latent law draw the same observation
        and privacy normals in each repetition (common random numbers across
        laws; :func:`dpfda_book.simulation.seeding.stream_key`), so a run holding
        several laws draws them once (:func:`dpfda_book.simulation.engine.simulate_laws`).
        For the default law it is :meth:`canonical` itself.
        """
        parts = [
            f"space={self._token()}",  # "poly"/"rkhs": see _STREAM_TOKEN
            f"n={self.n}",
            f"T={self.T}",
            f"m={self.m}",
            f"mu={self.mu!r}",
            f"sigma0={self.sigma0!r}",
            f"radius={self.radius!r}",
            f"B={self.B!r}",
            f"rho={self.rho!r}",
            f"centers={self.centers}",
        ]
        return "setting|" + "|".join(parts) + self._kernel_key()

    def _token(self) -> str:
        """The family's token in the stream keys (see ``_STREAM_TOKEN``)."""
        return _STREAM_TOKEN.get(self.family, self.family)

    def _kernel_key(self) -> str:
        """"" for the paper's Gaussian kernel of bandwidth ρ (``rho`` says it all), else "|kernel=<spec>"."""
        if self.kernel is None:  # H_m, or the paper's Gaussian kernel
            return ""
        return f"|kernel={self.kernel}"

    def _law_key(self) -> str:
        """"" for the default law (see ``_STREAM_TOKEN``), else "|law=…"."""
        if self.law == "default":
            return ""
        shape, share = self.law.split("-", 1)
        return "|law=" + ("centred" if float(share) == 0 else self.law)

    def latent_canonical(self) -> str:
        """The latent-data key: what determines the latent curves f_1, …, f_n.

        ``("poly", m, n, B)`` (family ``"legendre"``) or ``("rkhs", n, ρ,
        centres, B)`` (family ``"kernel"``; the tokens of ``_STREAM_TOKEN``),
        plus the kernel unless it is the Gaussian kernel of bandwidth ρ, and the
        law unless it is the default —
        independent of T, μ, σ₀ and B', so every figure uses the same latent
        curves for the same n (and m) and law, and for the RKHS the same
        functions are evaluated on each grid.
        """
        token = self._token()
        if self.orthonormal:
            return f"latent|{token}|m={self.m}|n={self.n}|B={self.B!r}" + self._law_key()
        return (f"latent|{token}|n={self.n}|rho={self.rho!r}|centers={self.centers}|B={self.B!r}"
                + self._kernel_key() + self._law_key())

    def params(self) -> dict:
        """The parameters as a flat dict (one row of the results table)."""
        return {
            "family": self.family,
            "T": self.T,
            "m": self.m,
            "n": self.n,
            "mu": self.mu,
            "sigma0": self.sigma0,
            "B": self.B,
            "radius_rule": self.radius_rule,
            "radius": self.radius,
            "rho": self.rho,
            "kernel": self.kernel_spec,
            "centers": self.centers,
            "law": self.law,
            "metric": self.metric,
        }


# ---------------------------------------------------------------------------
# A study
# ---------------------------------------------------------------------------

def _as_list(value: object) -> list:
    """One value or many: strings and (name, function) pairs count as one."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and callable(value[1]):
        return [value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Iterable):
        return list(value)
    return [value]


_KINDS = ("ratio", "scaled", "table")


@dataclass(frozen=True)
class Layout:
    """How a study's results are drawn (:func:`dpfda_book.report.study_figures.figure` draws them).

    Parameters
    ----------
    kind : {"ratio", "scaled", "table"}
        ``"ratio"``: FTP/PTF error ratio against n, one line per ``group``
        value, one panel per ``panel`` value (Figures 1, 3, 4, 6).
        ``"scaled"``: n × error against n, FTP left and PTF right, one line per
        ``group`` value (Figures 2, 5).  ``"table"``: a table (Table 1).
    group : str
        The setting parameter that colours the lines (``"T"``, ``"m"``, ``"radius_rule"``…).
    panel : str or None
        The setting parameter that splits the panels (``"mu"``, ``"sigma0"``) or None.
    reference : bool
        Whether ratio plots draw the dashed 1/T (RKHS) or 1/m (H_m) lines.
    """

    kind: str = "ratio"
    group: str = "T"
    panel: str | None = None
    reference: bool = True

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {self.kind!r}")
        fields = set(Setting.__dataclass_fields__)
        if self.group not in fields:
            raise ValueError(f"group must be a Setting field, got {self.group!r}")
        if self.panel is not None and self.panel not in fields:
            raise ValueError(f"panel must be a Setting field or None, got {self.panel!r}")


@dataclass(frozen=True)
class Study:
    """A named, ordered collection of settings.

    Parameters
    ----------
    name : str
        Short identifier, e.g. ``"fig1"``; used for output file names.
    settings : tuple of Setting
    title : str
        One-line description (used in captions).
    source : str
        Where the study comes from (e.g. "§5.1, Figure 1").
    layout : Layout or None
        How its results are drawn; None for a study that has no figure of its own
        (:func:`dpfda_book.report.study_figures.figure` then needs one).
    """

    name: str
    settings: tuple
    title: str = ""
    source: str = ""
    layout: Layout | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"study name must be an identifier-like string, got {self.name!r}")
        settings = tuple(self.settings)
        if not settings:
            raise ValueError("a study needs at least one setting")
        for s in settings:
            if not isinstance(s, Setting):
                raise TypeError(f"settings must be Setting objects, got {type(s).__name__}")
        seen = set()
        for s in settings:
            c = s.canonical() + "|" + s.radius_rule
            if c in seen:
                raise ValueError(f"duplicate setting in study {self.name!r}: {s}")
            seen.add(c)
        object.__setattr__(self, "settings", settings)
        if self.layout is not None and not isinstance(self.layout, Layout):
            raise TypeError(f"layout must be a Layout or None, got {type(self.layout).__name__}")

    def __len__(self) -> int:
        return len(self.settings)

    def __iter__(self) -> Iterator[Setting]:
        return iter(self.settings)

    @classmethod
    def grid(cls, name: str, *, family: str | None = None, n: int | Iterable[int] = PAPER_N,
             T: int | Iterable[int] | None = None, m: int | Iterable[int] | None = None,
             mu: float | Iterable[float] = 1.0, sigma0: float | Iterable[float] = 0.0,
             radius_rule: _RuleSpec | Iterable[_RuleSpec] = "1.1B", B: float = 1.0, rho: float | None = None,
             centers: int | None = None, law: str | Iterable[str] = "default",
             kernel: str | Iterable[str] | None = None, **study_kwargs: Any) -> "Study":
        """All combinations of the given parameter values, in a fixed order.

        Each of ``n``, ``T``, ``m``, ``mu``, ``sigma0``, ``radius_rule``, ``law``
        and ``kernel`` (``family="kernel"``: kernel specs such as
        ``"matern:0.5,0.2"``) may be a single value or a list.  A radius rule is a name from
        :data:`RADIUS_RULES` or a ``(name, function(n, B))`` pair.  Settings are
        ordered with ``n`` varying fastest and ``kernel`` slowest.  ``family`` (required) is
        ``"kernel"`` or an orthonormal family such as ``"legendre"`` (:data:`FAMILIES`).  ``T``
        defaults to 20 for an orthonormal family (the paper's polynomial setup).

        Examples
        --------
        >>> st = Study.grid("demo", family="legendre", n=[64, 256], m=[2, 4], mu=1.0)
        >>> len(st), [(s.m, s.n) for s in st]
        (4, [(2, 64), (2, 256), (4, 64), (4, 256)])
        >>> st.settings[0].radius, st.settings[0].T  # B' = 1.1B, T = 20
        (1.1, 20)
        """
        unknown = sorted(set(study_kwargs) - {"title", "source", "layout"})
        if unknown:
            raise TypeError(f"Study.grid got unknown keywords {unknown}; besides the setting parameters "
                            "it takes title, source and layout (a Layout: how the study is drawn)")
        if family is None:
            raise TypeError(f"Study.grid needs family, one of {FAMILIES}")
        check_family(family)
        if family != "kernel" and T is None:
            T = 20
        if T is None:
            raise ValueError("T is required for family='kernel'")
        rules = _as_list(radius_rule)
        named_rules = []
        for r in rules:
            if isinstance(r, str):
                rule_function = RADIUS_RULES.get(r)
                if rule_function is None:
                    raise ValueError(f"unknown radius rule {r!r}; choose one of {sorted(RADIUS_RULES)} "
                                     "or pass a (name, function) pair")
                named_rules.append((r, rule_function))
            elif isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], str) and callable(r[1]):
                named_rules.append(r)
            else:
                raise TypeError("radius_rule entries must be rule names or (name, function) pairs")
        settings = []
        for kernel_i, law_i, sigma0_i, mu_i, T_i, m_i, (rule_name, rule_function), n_i in itertools.product(
                _as_list(kernel), _as_list(law), _as_list(sigma0), _as_list(mu), _as_list(T), _as_list(m),
                named_rules, _as_list(n)):
            settings.append(Setting(family=family, n=n_i, T=T_i, m=m_i, mu=mu_i, sigma0=sigma0_i,
                                    radius_rule=rule_name, radius=float(rule_function(int(n_i), float(B))),
                                    B=B, rho=rho, centers=centers, law=law_i, kernel=kernel_i))
        return cls(name=name, settings=tuple(settings), **study_kwargs)

    def subset(self, **criteria: object) -> "Study":
        """The settings whose parameters take the given values (lists allowed).

        ``study.subset(n=[4, 4096], T=8)`` keeps n ∈ {4, 4096} and T = 8.  A ``kernel`` is
        matched by its spec, however written (``kernel="gaussian:1/5"`` keeps the paper's
        settings, whose ``kernel`` field is None).
        """
        keep = []
        for s in self.settings:
            ok = True
            for k, v in criteria.items():
                if k not in Setting.__dataclass_fields__:
                    raise ValueError(f"unknown setting parameter {k!r}; choose from "
                                     f"{sorted(Setting.__dataclass_fields__)}")
                allowed = _as_list(v)
                if k == "family":
                    for value in allowed:
                        check_family(value)
                if k == "kernel":
                    allowed = [space_from_spec(a).spec if isinstance(a, str) else a for a in allowed]
                if (s.kernel_spec if k == "kernel" else getattr(s, k)) not in allowed:
                    ok = False
                    break
            if ok:
                keep.append(s)
        if not keep:
            raise ValueError(f"no setting of study {self.name!r} matches {criteria}")
        return replace(self, settings=tuple(keep))

    @property
    def n_values(self) -> tuple:
        """The sample sizes of the study, in increasing order."""
        return tuple(sorted({s.n for s in self.settings}))


# ---------------------------------------------------------------------------
# The paper's studies
# ---------------------------------------------------------------------------

_PAPER_RULES_SCALED = ["B", "sqrt_log_n", "log_n", "sqrt_n", "n_2_3"]


def paper_studies(n: int | Iterable[int] = PAPER_N, law: str | Iterable[str] = "default") -> dict[str, Study]:
    """The six figures and Table 1 of the paper, in order.

    ``n`` may be narrowed; ``law`` (a name from :data:`dpfda_book.simulation.models.LAWS`, or a
    list of them) replaces the latent law of every setting.
    """
    return {
        "fig1": Study.grid(
            "fig1", law=law, family="kernel", n=n, T=[2, 4, 6, 8], mu=[0.1, 1.0], sigma0=0.0,
            radius_rule="1.1B",
            title="Noiseless RKHS: MSE ratio FTP/PTF against n (B' = 1.1, Gaussian kernel, rho = 0.2)",
            source="§5.1, Figure 1",
            layout=Layout("ratio", group="T", panel="mu")),
        "fig2": Study.grid(
            "fig2", law=law, family="kernel", n=n, T=4, mu=1.0, sigma0=1.0, radius_rule=_PAPER_RULES_SCALED,
            title="RKHS, sigma0 = 1, mu = 1, T = 4: n x MSE under different fitting radii",
            source="§5.2, Figure 2",
            layout=Layout("scaled", group="radius_rule", panel=None, reference=False)),
        "fig3": Study.grid(
            "fig3", law=law, family="kernel", n=n, T=[2, 4, 6, 8], mu=1.0, sigma0=[0.1, 1.0, 10.0],
            radius_rule="log_n",
            title="RKHS with observation noise: MSE ratio FTP/PTF against n (mu = 1, B' = log n)",
            source="§5.3, Figure 3",
            layout=Layout("ratio", group="T", panel="sigma0")),
        "fig4": Study.grid(
            "fig4", law=law, family="legendre", n=n, T=20, m=[2, 4, 6, 8], mu=[0.1, 1.0], sigma0=0.0,
            radius_rule="1.1B",
            title="Noiseless Legendre space (T = 20): IMSE ratio FTP/PTF against n (B' = 1.1)",
            source="Appendix, Figure 4",
            layout=Layout("ratio", group="m", panel="mu")),
        "fig5": Study.grid(
            "fig5", law=law, family="legendre", n=n, T=20, m=4, mu=1.0, sigma0=1.0, radius_rule=_PAPER_RULES_SCALED,
            title="Legendre space, sigma0 = 1, mu = 1, m = 4, T = 20: n x IMSE under different fitting radii",
            source="Appendix, Figure 5",
            layout=Layout("scaled", group="radius_rule", panel=None, reference=False)),
        "fig6": Study.grid(
            "fig6", law=law, family="legendre", n=n, T=20, m=[2, 4, 6, 8], mu=1.0, sigma0=[0.1, 1.0, 10.0],
            radius_rule="sqrt_log_n",
            title="Legendre space with observation noise: IMSE ratio FTP/PTF (mu = 1, B' = sqrt(log n))",
            source="Appendix, Figure 6",
            layout=Layout("ratio", group="m", panel="sigma0")),
        "table1": Study.grid(
            "table1", law=law, family="kernel", n=n, T=[2, 4, 6, 8], mu=[0.1, 1.0], sigma0=0.0,
            radius_rule="1.1B",
            title="Noiseless RKHS (B = 1, B' = 1.1, rho = 0.2): MSEs, ratio and p_PTF",
            source="Appendix, Table 1",
            layout=Layout("table", group="T", panel="mu")),
    }


STUDY_NAMES = ("fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "table1")


LAYOUTS: dict[str, Layout] = {name: study.layout for name, study in paper_studies(n=(4,)).items()
                               if study.layout is not None}
"""The layout of each of the paper's studies (:func:`paper_studies`), by name."""


def layout_of(study: Study | str) -> Layout:
    """The layout of a study: a :class:`Study` (its own layout) or the name of one of the paper's.

    A name with a suffix after ``"__"`` (the robustness runs' ``"fig3__shift_0p5"``) is the
    study before it.
    """
    if isinstance(study, Study) and study.layout is not None:
        return study.layout
    name = study.name if isinstance(study, Study) else study
    if not isinstance(name, str):
        raise TypeError(f"study must be a Study or a study name, got {type(study).__name__}")
    base = name.split("__", 1)[0]
    if base not in LAYOUTS:
        raise ValueError(f"study {name!r} is not one of the paper's ({', '.join(LAYOUTS)}) and has no "
                         "layout: pass its Layout (plots.figure(df, layout=Layout(...)))")
    return LAYOUTS[base]


DECAY_KERNELS = ("matern:0.5,0.2", "matern:1.5,0.2", "matern:2.5,0.2", "gaussian:0.2")
"""The kernels of one length-scale ρ = 0.2 whose eigenvalues decay ever faster, Matérn ν = 1/2, 3/2, 5/2
(like j^−(2ν+1)) and the paper's Gaussian kernel (faster than any power; the Matérn limit ν → ∞)."""


def kernel_study(kernels: str | Iterable[str] = DECAY_KERNELS, n: int | Iterable[int] = PAPER_N) -> Study:
    """Figure 1's design in the RKHS of each kernel: σ₀ = 0, B' = 1.1B, T ∈ {2, 4, 6, 8}, μ ∈ {0.1, 1}.

    The Gaussian kernel's settings are Figure 1's own (the same keys, so the same latent curves
    and streams); each other kernel draws its latent curves in its own RKHS
    (:func:`dpfda_book.simulation.models.rkhs_curves`, the default law with 20 centres and B = 1) and its own noise.

    >>> st, fig1 = kernel_study(n=[4]), get_study("fig1", n=[4])
    >>> len(st), st.settings[0].kernel, st.settings[-1].canonical() == fig1.settings[-1].canonical()
    (32, 'matern:0.5,0.2', True)
    """
    return Study.grid(
        "kernels", family="kernel", kernel=_as_list(kernels), n=n, T=[2, 4, 6, 8], mu=[0.1, 1.0],
        sigma0=0.0, radius_rule="1.1B",
        title="Noiseless RKHS of several kernels: MSE ratio FTP/PTF against n (B' = 1.1, rho = 0.2)",
        source="§5.1's design, Figure 1, under the kernels of §6's open question")


def get_study(name: str, n: int | Iterable[int] = PAPER_N, law: str | Iterable[str] = "default") -> Study:
    """One of the paper's studies by name (see :data:`STUDY_NAMES`), under ``law``."""
    studies = paper_studies(n, law)
    if name not in studies:
        raise ValueError(f"unknown study {name!r}; choose one of {', '.join(STUDY_NAMES)}")
    return studies[name]
