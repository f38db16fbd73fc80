"""The figures of single chapters, each drawn from what its chapter computes.

The pipelines, the designs, the growth data, the claims' verdict matrix, the laws, ...

They are matplotlib figures in the book's style (:mod:`dpfda_book.report.style`); nothing is
shown or saved here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch
from numpy.typing import ArrayLike

from dpfda.maths.spaces import LegendreSpace, gaussian_kernel

from ..montecarlo import Z95, proportion_se
from ..simulation.models import LAW_SHIFTS, kernel_direction, polynomial_direction
from .claims import P_MARGIN, PAPER_P, VERDICT_MARKS, VERDICTS, get_claim, law_label
from .style import (
    COLOURS,
    MARKERS,
    METHOD_STYLE,
    MIN_FONT_PT,
    TEXT_WIDTH,
    check_results,
    level_style,
    levels_of,
    log_axes,
)

__all__ = [
    "pipeline_diagram",
    "pipeline_run_figure",
    "design_ratio_figure",
    "release_bands_figure",
    "nested_bands_figure",
    "activation_figure",
    "noise_collapse_figure",
    "composition_ratio_figure",
    "activation_by_norm_figure",
    "legendre_limit_figure",
    "kernel_eigenvalue_figure",
    "verdict_figure",
    "law_figure",
    "activation_by_share_figure",
    "VERDICT_COLOURS",
]


def pipeline_diagram() -> Figure:
    """The two pipelines as block diagrams, one row each.

    The order in which each clips or fits, averages over the n curves, and adds
    noise (Algorithms 1 and 2).
    """
    rows = [
        ("FTP", METHOD_STYLE["ftp"]["color"], [
            "n curves\non the grid", "fit each curve\nin the ball B′",
            "average\nthe n fits", "add Gaussian\nnoise once,\nσ = 2B′/(nμ)",
            "release\nthe curve"]),
        ("PTF", METHOD_STYLE["ptf"]["color"], [
            "n curves\non the grid", "clip each value\nto ±cⱼ", "average at\neach tⱼ",
            "add noise σⱼ\nto each of\nthe T means", "fit in the\nball B′,\nrelease"]),
    ]
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH, 2.9))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.2, 4.2)
    ax.set_axis_off()
    width, height, step = 1.74, 1.2, 1.99
    for r, (name, colour, steps) in enumerate(rows):
        y = 3.0 - 2.0 * r
        tint = 0.8 + 0.2 * np.array(mpl.colors.to_rgb(colour))
        ax.text(0.0, y + 0.78, name, fontsize=11, fontweight="bold", color=colour)
        for k, label in enumerate(steps):
            x = 0.1 + k * step
            private = (name == "FTP" and k >= 3) or (name == "PTF" and k >= 3)
            ax.add_patch(FancyBboxPatch((x, y - height / 2), width, height,
                                        boxstyle="round,pad=0.02,rounding_size=0.12",
                                        facecolor=tint if private else "white",
                                        edgecolor=colour, lw=1.3))
            ax.text(x + width / 2, y, label, ha="center", va="center",
                    fontsize=MIN_FONT_PT)
            if k:
                ax.add_patch(FancyArrowPatch((x - step + width + 0.02, y), (x - 0.02, y),
                                             arrowstyle="-|>", mutation_scale=11,
                                             color="0.25", lw=1.1))
    ax.text(5.0, -0.02, "shaded: the noise, and what comes after it (post-processing, "
            "no further privacy cost)", ha="center", fontsize=MIN_FONT_PT, color="0.3")
    fig.tight_layout(pad=0.3)
    return fig



def _tint(colour: Any, share: float) -> tuple:
    """``colour`` mixed with white: ``share`` of the colour, the rest white (opaque)."""
    rgb = np.asarray(mpl.colors.to_rgb(colour))
    return tuple(share * rgb + (1 - share) * 1.0)


def pipeline_run_figure(rows: Sequence[Mapping[str, Any]], t: np.ndarray) -> Figure:
    """One run of both pipelines (the chapter "The two pipelines"), one row per space.

    ``rows`` is a list of dicts, one per space, with ``title``; ``curves`` and ``fits``
    (a few latent curves and their fits inside the ball, evaluated at ``t``); ``grid`` and
    ``observed`` (those curves' noisy values on the grid); ``target``, ``ftp`` and ``ptf``
    (the target mean and the two releases at ``t``) and ``noisy_means`` (PTF's noisy grid
    means). Left: curves, observations and fits; right: the target and the releases.
    Every series is named in one legend under the panels, and each differs from the others
    in line style or marker as well as colour.
    """
    t = np.asarray(t, dtype=float)
    fig, axes = plt.subplots(len(rows), 2, figsize=(TEXT_WIDTH, 2.55 * len(rows) + 1.3),
                             sharex=True, squeeze=False, layout="constrained")
    ftp, ptf = METHOD_STYLE["ftp"]["color"], METHOD_STYLE["ptf"]["color"]
    for (left, right), row in zip(axes, rows):
        left.plot(t, np.asarray(row["curves"]).T, color="0.55", lw=0.8,
                  label=["latent curve"] + ["_"] * (len(row["curves"]) - 1))
        left.plot(row["grid"], np.asarray(row["observed"]).T, ".", color="0.2", ms=3,
                  label=["noisy grid value"] + ["_"] * (len(row["observed"]) - 1))
        left.plot(t, np.asarray(row["fits"]).T, color=COLOURS[2], lw=0.9, ls="--",
                  label=["its fit in the ball"] + ["_"] * (len(row["fits"]) - 1))
        left.set_title(f"{row['title']}\ncurves and their fits", fontsize=MIN_FONT_PT)
        right.plot(t, row["target"], color="k", lw=2.0, label=r"target $\bar f$")
        right.plot(t, row["ftp"], color=ftp, lw=1.3, label="FTP release")
        right.plot(t, row["ptf"], color=ptf, lw=1.3, ls="-.", label="PTF release")
        right.plot(row["grid"], row["noisy_means"], "s", color=ptf, ms=3.5, ls="none",
                   label=r"PTF's noisy means $\tilde x_j$")
        right.set_title(f"{row['title']}\ntarget and the two releases", fontsize=MIN_FONT_PT)
    for ax in axes[-1]:
        ax.set_xlabel("$t$")
    handles, labels = [], []
    for ax in axes[0]:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig


def _design_style(name: str, names: Sequence[str]) -> dict:
    """How a design of the design-space chapter is drawn.

    FTP and PTF as everywhere in the book, FTP followed by the ball fit as FTP with hollow
    markers and a dashed line, the ball in black, the other designs (the mix) in the
    remaining colours and markers.
    """
    fixed = {"PTF": dict(color=METHOD_STYLE["ptf"]["color"], marker="s", ls="-"),
             "FTP": dict(color=METHOD_STYLE["ftp"]["color"], marker="o", ls="-"),
             "FTP+fit": dict(color=METHOD_STYLE["ftp"]["color"], marker="o", ls="--", mfc="white"),
             "ball": dict(color="black", marker="X", ls=":")}
    if name in fixed:
        return fixed[name]
    others = [n for n in names if n not in fixed]
    k = others.index(name)
    palette, marks = [COLOURS[2], COLOURS[3], COLOURS[4], COLOURS[5]], ["^", "D", "v", "P"]
    return dict(color=palette[k % len(palette)], marker=marks[k % len(marks)], ls="-")


def design_ratio_figure(df: pd.DataFrame, designs: Sequence[str], *, panel: str = "sigma0", reference: str = "PTF",
                        z: float = Z95) -> Figure:
    """Error of each design relative to ``reference`` against n, one panel per ``panel`` value.

    ``df`` is :func:`dpfda_book.simulation.design_runs.compare_designs`' table (columns ``design``, ``n``,
    ``panel``, ``ratio_<reference>``, ``se_log_ratio_<reference>``). Error bars: the paired
    confidence interval exp(±z·se_log_ratio). The designs of one n are drawn side by side
    (a small horizontal offset on the log axis), so no design hides another where their
    errors coincide; each has its own marker and line style as well as its colour, and one
    legend under the panels names them all.
    """
    if not isinstance(df, pd.DataFrame) or df.empty:
        raise ValueError("df must be a non-empty DataFrame from compare_designs")
    designs = list(designs)
    need = {"design", "n", panel, f"ratio_{reference}", f"se_log_ratio_{reference}"}
    if need - set(df.columns):
        raise ValueError(f"df lacks columns {sorted(need - set(df.columns))}")
    values = sorted(df[panel].unique())
    cols = 1 if len(values) == 1 else 2
    nrows = -(-len(values) // cols)
    fig, grid = plt.subplots(nrows, cols, figsize=(TEXT_WIDTH, 2.5 * nrows + 0.9), sharey=True,
                             squeeze=False, layout="constrained")
    axes = list(grid.ravel())
    for spare in axes[len(values):]:
        spare.set_axis_off()
    spread = 0.15  # log2 units between neighbouring designs at one n
    for ax, value in zip(axes, values):
        sub = df[df[panel] == value]
        for k, name in enumerate(designs):
            d = sub[sub["design"] == name].sort_values("n")
            if d.empty:
                continue
            r, se = d[f"ratio_{reference}"].to_numpy(float), d[f"se_log_ratio_{reference}"].to_numpy(float)
            x = d["n"].to_numpy(float) * 2.0 ** ((k - (len(designs) - 1) / 2) * spread)
            ax.errorbar(x, r, yerr=[r - r * np.exp(-z * se), r * np.exp(z * se) - r], label=name,
                        ms=3.5, lw=1.0, capsize=1.5, **_design_style(name, designs))
        ax.axhline(1.0, color="0.5", lw=0.8, ls=":")
        log_axes(ax, x_base=2)
        ax.set_title(f"$\\sigma_0 = {value:g}$" if panel == "sigma0" else f"{panel} = {value}")
        ax.set_xlabel("$n$")
    for ax in axes[:len(values):cols]:
        ax.set_ylabel(f"error / error of {reference}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=4)
    return fig


def release_bands_figure(t: ArrayLike, truth: ArrayLike, releases: Mapping[float, Mapping[str, Any]], *,
                         detail_mu: float | None = None, unit: str = "cm",
                         ylabel: str = "mean height (cm)", xlabel: str = "age (years)") -> Figure:
    """Private mean curves: the band holding 90% of the releases, FTP against PTF.

    ``releases[mu][name]`` holds the releases (one per row) of pipeline ``name`` ("FTP" or
    "PTF") at budget ``mu``, evaluated at ``t``; ``truth`` is the non-private mean at ``t``.
    Top: the curves themselves at the smallest budget (or ``detail_mu``), where the bands are
    wide enough to see on the scale of the data. Bottom, one panel per budget on its own
    scale: the bands and one release of each pipeline as differences from the non-private
    mean. FTP's band is filled, PTF's is drawn by its dashed edges, so no band hides the
    other and no mixed colour appears; one legend names everything.
    """
    t, truth = np.asarray(t, dtype=float), np.asarray(truth, dtype=float)
    mus = sorted(releases)
    detail_mu = mus[0] if detail_mu is None else detail_mu
    fig = plt.figure(figsize=(TEXT_WIDTH, 6.2), layout="constrained")
    spec = fig.add_gridspec(2, len(mus), height_ratios=(1.1, 1.0))
    top = fig.add_subplot(spec[0, :])
    bottom = [fig.add_subplot(spec[1, k], sharex=top) for k in range(len(mus))]
    ftp, ptf = METHOD_STYLE["ftp"]["color"], METHOD_STYLE["ptf"]["color"]

    def draw(ax: Axes, curves_by_name: Mapping[str, Any], offset: Any, one: bool) -> None:
        for name, colour in (("FTP", ftp), ("PTF", ptf)):
            lo, hi = np.quantile(np.asarray(curves_by_name[name], dtype=float) - offset, [0.05, 0.95], axis=0)
            if name == "FTP":
                ax.fill_between(t, lo, hi, color=_tint(colour, 0.35), lw=0, label="FTP: 90% of releases")
            else:
                ax.plot(t, lo, color=colour, lw=1.1, ls="--", label="PTF: 90% of releases (edges)")
                ax.plot(t, hi, color=colour, lw=1.1, ls="--", label="_")
            if one:
                ax.plot(t, np.asarray(curves_by_name[name], dtype=float)[0] - offset, color=colour,
                        lw=0.9, ls="-" if name == "FTP" else "-.", label=f"one {name} release")

    draw(top, releases[detail_mu], 0.0, one=False)
    top.plot(t, truth, color="k", lw=1.3, label="non-private mean")
    top.set_title(f"μ = {detail_mu:g}: the curves", fontsize=MIN_FONT_PT)
    top.set_ylabel(ylabel)
    for ax, mu in zip(bottom, mus):
        draw(ax, releases[mu], truth, one=True)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(f"μ = {mu:g}: difference (own scale)", fontsize=MIN_FONT_PT)
        ax.set_xlabel(xlabel)
    bottom[0].set_ylabel(f"difference ({unit})")
    handles, labels = top.get_legend_handles_labels()
    h2, l2 = bottom[0].get_legend_handles_labels()
    for h, lab in zip(h2, l2):
        if lab not in labels and not lab.startswith("_"):
            handles.append(h)
            labels.append(lab)
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig


def nested_bands_figure(t: ArrayLike, panels: Mapping[str, Mapping[Any, Any]], levels: Sequence[Any], *,
                        label: str = "μ", ylabel: str = "", xlabel: str = "", ylim: tuple[float, float] | None = None,
                        mark_x: float | None = None, what: str = "FTP") -> Figure:
    """Bands of several levels (budgets) nested in one panel per group, opaque tints.

    ``panels[title]`` holds ``"target"`` (a curve at ``t``) and, per level in ``levels``,
    an array of curves (one per row) whose pointwise 90% band is drawn. The bands are
    opaque tints of one colour drawn widest first (smallest budget), so a narrower band
    lies on a wider one and no translucent mixture makes a colour without a name; the
    legend names each level. ``mark_x`` draws a dotted vertical line.
    """
    t = np.asarray(t, dtype=float)
    fig, axes = plt.subplots(len(panels), 1, figsize=(TEXT_WIDTH, 2.4 * len(panels) + 0.9),
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    base = METHOD_STYLE["ftp"]["color"]
    shares = np.linspace(0.25, 0.75, len(levels))
    for ax, (title, data) in zip(axes[:, 0], panels.items()):
        bands = []
        for level, share in zip(levels, shares):
            lo, hi = np.quantile(np.asarray(data[level], dtype=float), [0.05, 0.95], axis=0)
            bands.append((float(np.mean(hi - lo)), level, share, lo, hi))
        for _, level, share, lo, hi in sorted(bands, key=lambda b: -b[0]):
            ax.fill_between(t, lo, hi, color=_tint(base, share), lw=0, label=f"{what}, {label} = {level:g}: 90%")
        ax.plot(t, data["target"], color="k", lw=1.4, label="non-private")
        if mark_x is not None:
            ax.axvline(mark_x, color="0.4", ls=":", lw=1)
        ax.set_title(title, fontsize=MIN_FONT_PT)
        ax.set_ylabel(ylabel)
        if ylim is not None:
            ax.set_ylim(*ylim)
    axes[-1, 0].set_xlabel(xlabel)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: (labels[i] != "non-private", i))
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center", ncols=2)
    return fig


def activation_figure(df: pd.DataFrame) -> Figure:
    """p̂_PTF, the share of repetitions in which PTF's fit hit the ball, against n (Table 1).

    One panel per μ, one line per T (markers by level); error bars ±:data:`~dpfda_book.montecarlo.Z95`
    Agresti–Coull standard errors (:func:`dpfda_book.montecarlo.proportion_se`), so an observed 0
    or 1 still carries an uncertainty.  ``df`` is the results table of Table 1's (or
    Figure 1's) study.
    """
    df = check_results(df)
    if not {"p_ptf_active", "reps", "mu", "T"} <= set(df.columns):
        raise ValueError("df must be Table 1's results table (columns p_ptf_active, reps, mu, T)")
    mus, Ts = levels_of(df, "mu"), levels_of(df, "T")
    fig, axes = plt.subplots(1, len(mus), figsize=(TEXT_WIDTH, 3.0), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, mu in zip(axes, mus):
        for k, T in enumerate(Ts):
            d = df[(df["T"] == T) & (df["mu"] == mu)].sort_values("n")
            se = [proportion_se(p, int(r)) for p, r in zip(d["p_ptf_active"], d["reps"])]
            ax.errorbar(d["n"], d["p_ptf_active"], yerr=Z95 * np.array(se), marker=MARKERS[k],
                        ms=4, capsize=2, label=f"T = {T}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sample size $n$")
        ax.set_title(f"μ = {mu:g}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(r"$\hat p_{\mathrm{PTF}}$")
    axes[-1].legend(frameon=False)
    fig.tight_layout()
    return fig

def noise_collapse_figure(df: pd.DataFrame, Ts: Sequence[int] = (2, 8),
                          levels: Sequence[int] = (2, 4, 6, 8)) -> Figure:
    """The noisy cells of a ratio map against x = nμ²σ₀²/(4B′²), on the curves (x + 1)/(x + T).

    ``df`` is a results table with the columns ``x`` and ``free`` added (the chapter
    "Beyond the paper": ``free`` marks the cells where no constraint bound and clipping is
    negligible).  One curve per T in ``Ts``, in the colour T has among ``levels`` (the T of
    Figures 1 and 3); filled markers for the free cells, hollow ones for the others; error
    bars the 95% intervals of the ratio.
    """
    df = check_results(df)
    if not {"x", "free", "T", "sigma0"} <= set(df.columns):
        raise ValueError("df needs the columns x and free (and T, sigma0) of the chapter's map")
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH, 3.8))
    xs = np.geomspace(1e-3, 1e4, 300)
    noisy = df[df["sigma0"] > 0]
    for T in Ts:
        c = level_style(T, levels)["color"]
        ax.plot(xs, (xs + 1) / (xs + T), color=c, lw=1.2, label=f"$(x+1)/(x+{T})$")
        d = noisy[noisy["T"] == T]
        for is_free, face in ((True, c), (False, "none")):
            e = d[d["free"] == is_free]
            yerr = np.vstack([e["ratio"] - e["ratio_lo"], e["ratio_hi"] - e["ratio"]])
            kind = "unconstrained" if is_free else "constrained or clipped"
            ax.errorbar(e["x"], e["ratio"], yerr=yerr, fmt="o", ms=4, mfc=face, mec=c, ecolor=c, lw=0.8,
                        label=f"T = {T}, {kind}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axhline(1, color="0.6", lw=0.8, ls=":")
    ax.set_xlabel(r"$x = n\mu^2\sigma_0^2/(4B'^2)$")
    ax.set_ylabel("MSE ratio FTP/PTF")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def composition_ratio_figure(ratios: pd.DataFrame) -> Figure:
    """PTF/FTP variance ratio for constant curves against T, under pure DP and under GDP.

    ``ratios`` is indexed by T with the columns ``"Laplace ratio"``, ``"Laplace s.e."``,
    ``"Gaussian ratio"`` and ``"Gaussian s.e."`` (the chapter "Pure DP"); the exact ratios
    T (Laplace, basic composition) and 1 (Gaussian) dashed, the simulations with ±2
    standard errors, on log₂ axes.
    """
    need = {"Laplace ratio", "Laplace s.e.", "Gaussian ratio", "Gaussian s.e."}
    if not isinstance(ratios, pd.DataFrame) or not need <= set(ratios.columns):
        raise ValueError(f"ratios must be a DataFrame indexed by T with the columns {sorted(need)}")
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    Tgrid = ratios.index.to_numpy(dtype=float)
    ax.plot(Tgrid, Tgrid, "C3--", lw=1, label=r"$\varepsilon$-DP (Laplace): $T$")
    ax.plot(Tgrid, np.ones_like(Tgrid), "C0--", lw=1, label=r"$\mu$-GDP (Gaussian): $1$")
    ax.errorbar(Tgrid, ratios["Laplace ratio"], yerr=2 * ratios["Laplace s.e."], fmt="o", color="C3", ms=4,
                label="simulation, Laplace")
    ax.errorbar(Tgrid, ratios["Gaussian ratio"], yerr=2 * ratios["Gaussian s.e."], fmt="s", color="C0", ms=4,
                label="simulation, Gaussian")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("number of grid points $T$")
    ax.set_ylabel("variance ratio PTF / FTP")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig

def activation_by_norm_figure(norms: ArrayLike, p: ArrayLike, se: ArrayLike, norm_bar: float) -> Figure:
    """P(PTF's constraint binds) against the norm of the mean curve (Table 1's example).

    ``p[k]`` (with standard error ``se[k]``) is the probability at the mean rescaled to norm
    ``norms[k]``; error bars ±:data:`~dpfda_book.montecarlo.Z95` standard errors.  A dashed line
    marks ``norm_bar``, the norm of the run's own mean, and a dotted one the paper's
    0.755 (:data:`dpfda_book.report.claim_encodings.PAPER_P`).
    """
    norms, p, se = (np.asarray(a, dtype=float) for a in (norms, p, se))
    if not norms.shape == p.shape == se.shape or norms.ndim != 1:
        raise ValueError("norms, p and se must be one-dimensional and of the same length")
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.errorbar(norms, p, yerr=Z95 * se, fmt="o-", ms=4, capsize=2, label="rescaled $\\bar f$")
    ax.axvline(norm_bar, color="C1", ls="--", label=r"our $\|\bar f\|$")
    ax.axhline(PAPER_P, color="0.5", ls=":", label="paper: 0.755")
    ax.set_xlabel(r"$\|\bar f\|_{\mathcal{H}_K}$ (grid interpolant)")
    ax.set_ylabel(r"$P$(PTF constraint active)")
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig

def legendre_limit_figure(m: ArrayLike, limits: ArrayLike, T: int = 20) -> Figure:
    """Corollary 12's limit m/(T tr A⁻¹) of the IMSE ratio against the dimension m, beside 1/m.

    ``limits[k]`` is the limit for dimension ``m[k]`` (Legendre basis on T points); log
    axes with every m labelled.
    """
    m, limits = np.asarray(m), np.asarray(limits, dtype=float)
    if m.shape != limits.shape or m.ndim != 1:
        raise ValueError("m and limits must be one-dimensional and of the same length")
    fig, ax = plt.subplots(figsize=(4.5, 3.4))
    ax.plot(m, 1 / m, "k--", lw=1, label=r"$1/m$")
    ax.plot(m, limits, "o-", ms=4, label=rf"$m/(T\,\mathrm{{tr}}A^{{-1}})$, Legendre, $T={T}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(m, [str(v) for v in m])
    ax.minorticks_off()
    ax.set_xlabel("dimension $m$")
    ax.set_ylabel("limit of IMSE ratio FTP / PTF")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def kernel_eigenvalue_figure(T: ArrayLike, exact: ArrayLike, double: ArrayLike, floor: float,
                             paper_T: Sequence[int] = (2, 8)) -> Figure:
    """The smallest eigenvalue of the Gaussian kernel matrix K_T against T (Assumption A.4).

    ``exact`` from high-precision arithmetic, ``double`` from double precision (drawn as
    its absolute value), the ``floor`` the package refuses to go below dashed, and the
    paper's range of T (``paper_T``) shaded.
    """
    T, exact, double = np.asarray(T), np.asarray(exact, dtype=float), np.asarray(double, dtype=float)
    if not T.shape == exact.shape == double.shape or T.ndim != 1:
        raise ValueError("T, exact and double must be one-dimensional and of the same length")
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    ax.semilogy(T, exact, "o-", ms=3, label="60-digit arithmetic")
    ax.semilogy(T, np.abs(double), "x", ms=5, label="double precision (absolute value)")
    power = np.log10(floor)
    floor_text = f"$10^{{{int(round(power))}}}$" if np.isclose(power, round(power)) else f"{floor:g}"
    ax.axhline(floor, color="k", ls="--", lw=1, label=f"floor {floor_text}")
    ax.axvspan(*paper_T, color="0.9", label="the paper's $T$")
    ax.set_xlabel("$T$")
    ax.set_ylabel(r"$\lambda_{\min}(K_T)$")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig

# ---------------------------------------------------------------------------
# The claims' verdict matrix and the latent laws (the chapter robustness)
# ---------------------------------------------------------------------------

#: Green, grey and red for the three verdicts (each cell also carries its mark,
#: :data:`dpfda_book.report.claim_labels.VERDICT_MARKS`).
VERDICT_COLOURS = {"holds": "#1b7837", "inconclusive": "#d9d9d9", "fails": "#b2182b"}


def verdict_figure(matrix: pd.DataFrame, *, width: float | None = None,
                   fontsize: float | None = None) -> Figure:
    """The verdict matrix as a heatmap: claims down, laws across, coloured by verdict.

    ``matrix`` is :func:`dpfda_book.report.claim_verdicts.verdict_matrix`'s table.  Each cell carries its
    verdict's mark (:data:`dpfda_book.report.claim_labels.VERDICT_MARKS`) as well as its colour
    (:data:`VERDICT_COLOURS`).  ``width`` defaults to the book's column
    (:data:`~dpfda_book.report.style.TEXT_WIDTH`) and ``fontsize`` to its smallest legible size
    (:data:`~dpfda_book.report.style.MIN_FONT_PT`).
    """
    width = TEXT_WIDTH if width is None else width
    fontsize = MIN_FONT_PT if fontsize is None else fontsize
    if not isinstance(matrix, pd.DataFrame):
        raise TypeError(f"matrix must be a DataFrame from verdict_matrix, got {type(matrix).__name__}")
    bad = set(np.unique(matrix.to_numpy().astype(str))) - set(VERDICTS)
    if bad:
        raise ValueError(f"matrix holds values other than {VERDICTS}: {sorted(bad)}")
    codes = matrix.replace({v: i for i, v in enumerate(VERDICTS)}).to_numpy(dtype=float)
    rows, cols = codes.shape
    fig, ax = plt.subplots(figsize=(width, 0.44 * rows + 1.4), layout="constrained")
    ax.imshow(codes, cmap=ListedColormap([VERDICT_COLOURS[v] for v in VERDICTS]), vmin=-0.5,
              vmax=len(VERDICTS) - 0.5, aspect="auto")
    for i in range(rows):
        for j in range(cols):
            v = matrix.iat[i, j]
            ax.text(j, i, VERDICT_MARKS[v], ha="center", va="center", fontsize=fontsize,
                    color="white" if v != "inconclusive" else "0.3")
    ax.set_xticks(range(cols), [law_label(c) for c in matrix.columns], rotation=45, ha="right",
                  fontsize=fontsize)
    ax.set_yticks(range(rows), [_claim_row_label(c) for c in matrix.index], fontsize=fontsize)
    ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    for j, law in enumerate(matrix.columns[1:], start=1):  # gaps between default | shift | wave
        if law.split("-")[0] != matrix.columns[j - 1].split("-")[0]:
            ax.axvline(j - 0.5, color="white", lw=5)
    ax.set_xlabel("latent law", fontsize=fontsize)
    fig.legend(handles=[Patch(color=VERDICT_COLOURS[v], label=f"{VERDICT_MARKS[v]} {v}") for v in VERDICTS],
               loc="outside lower center", ncol=3, frameon=False, fontsize=fontsize)
    return fig


def _claim_row_label(claim_id: str) -> str:
    """A matrix row: the claim's name and its one-line statement."""
    try:
        c = get_claim(claim_id)
    except ValueError:
        return str(claim_id)
    return f"{c.name}:\n{c.statement}"


def law_figure(*, width: float | None = None, fontsize: float | None = None) -> Figure:
    """The mean directions h of the shift and wave laws, in the RKHS and in H_m.

    RKHS: one curve on a fine grid, with its values at the grid points t_j of each T;
    H_m: one curve for each m.

    Every law of the family moves each latent curve a share S of the way to S·B·h, so these curves
    are what "shift" and "wave" mean; the mean curve of a law is about S·B·h.
    """
    width = TEXT_WIDTH if width is None else width
    fontsize = MIN_FONT_PT if fontsize is None else fontsize
    t = np.linspace(0.0, 1.0, 401)
    kern = gaussian_kernel(0.2)
    centres = np.linspace(0.0, 1.0, 20)
    fig, axes = plt.subplots(2, 2, figsize=(width, 0.62 * width), sharex=True, layout="constrained")
    for j, shape in enumerate(("shift", "wave")):
        ax = axes[0, j]
        h = kernel_direction(shape, kern, centres) @ kern(centres[:, None], t[None, :])
        ax.plot(t, h, color="0.15", lw=1.4, label="h on [0, 1]")
        for k, T in enumerate((2, 4, 6, 8)):
            tj = np.linspace(0.0, 1.0, T)
            hj = kernel_direction(shape, kern, centres) @ kern(centres[:, None], tj[None, :])
            ax.plot(tj, hj, ls="none", marker=MARKERS[k % len(MARKERS)], ms=4, label=f"grid T = {T}")
        ax.set_title(f"RKHS, {shape}", fontsize=fontsize)
        ax.axhline(0, color="0.6", lw=0.6)
        ax = axes[1, j]
        for k, m in enumerate((2, 4, 6, 8)):
            ax.plot(t, LegendreSpace(m).evaluate(polynomial_direction(shape, m), t), lw=1.2,
                    ls=("-", "--", "-.", ":")[k], label=f"m = {m}")
        ax.set_title(f"$\\mathcal{{H}}_m$, {shape}", fontsize=fontsize)
        ax.axhline(0, color="0.6", lw=0.6)
        ax.set_xlabel("t", fontsize=fontsize)
    for ax in axes.flat:
        ax.tick_params(labelsize=fontsize)
    axes[0, 0].set_ylabel("h(t)", fontsize=fontsize)
    axes[1, 0].set_ylabel("h(t)", fontsize=fontsize)
    axes[0, 0].legend(fontsize=fontsize, frameon=False, loc="lower center", ncol=2)
    axes[1, 0].legend(fontsize=fontsize, frameon=False, loc="upper center", ncol=2)
    return fig


def activation_by_share_figure(shares: pd.DataFrame) -> Figure:
    """p̂_PTF of Table 1's example under each latent law, against the share S of the mean direction.

    ``shares`` is :func:`dpfda_book.report.law_runs.activation_by_share`'s table.  The shift and wave
    laws as two series (offset a little in S, so neither hides the other; circles and
    squares), error bars ±:data:`~dpfda_book.montecarlo.Z95` standard errors; the default law as
    a dashed line, the paper's 0.755 (:data:`dpfda_book.report.claim_encodings.PAPER_P`) dotted, and the
    margin of Table 1's claim 5 (:data:`dpfda_book.report.claim_encodings.P_MARGIN`) shaded.
    """
    if not isinstance(shares, pd.DataFrame) or not {"shape", "S", "p", "se", "law"} <= set(shares.columns):
        raise ValueError("shares must be the table of dpfda_book.report.claims.activation_by_share")
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH, 4.0), layout="constrained")
    for k, shape in enumerate(["shift", "wave"]):
        d = shares[shares["shape"] == shape].sort_values("S")
        ax.errorbar(d["S"] + 0.01 * (2 * k - 1), d["p"], yerr=Z95 * d["se"],
                    marker="os"[k], ms=5, capsize=3, label=f"{shape} laws")
    default = shares[shares["law"] == "default"]
    if len(default):
        ax.axhline(float(default["p"].iloc[0]), color="C2", ls="--", lw=1, label="default law")
    ax.axhline(PAPER_P, color="0.3", ls=":", lw=1.2, label="paper: 0.755")
    ax.axhspan(PAPER_P - P_MARGIN, PAPER_P + P_MARGIN, color="0.5", alpha=0.12,
               label="0.755 ± 0.1 (the claim's margin)")
    ax.set_ylim(top=PAPER_P + P_MARGIN + 0.03)
    ax.set_xlabel("share $S$ of the fixed mean direction")
    ax.set_ylabel(r"$\hat p_{\mathrm{PTF}}$  ($T=8$, $n=2^{10}$, $\mu=0.1$)")
    ax.set_xticks(LAW_SHIFTS)
    fig.legend(loc="outside lower center", ncol=2)
    return fig

