"""dpfda_book.report.chapter_figures: the chapters' figures fit the column, pass the layout checks
and refuse bad input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from dpfda_book.report import chapter_figures, figure_checks, style


# --- figures a reader can read (issue #23 item 2): figure_checks.layout_problems on the old and the
# new drawing of each figure. Each "old_*" function is the chapter's drawing code before the
# fix, on synthetic data of the same shape; the check must find the defect the issue names
# in it, and nothing in the new figure.
def _curves(rng, k, t):
    return np.array([np.sin(2 * np.pi * (t + rng.uniform())) * rng.uniform(0.3, 0.9) for _ in range(k)])


def _pipeline_rows(rng):
    t = np.linspace(0, 1, 301)
    rows = []
    for title, T in (("RKHS, Gaussian kernel, $T=8$", 8), ("Legendre, $m=4$, $T=20$", 20)):
        grid = (np.arange(T) + 0.5) / T
        curves = _curves(rng, 12, t)
        idx = np.searchsorted(t, grid)
        target = curves.mean(axis=0)
        rows.append(dict(title=title, curves=curves, fits=curves * 0.95, grid=grid,
                         observed=curves[:, idx] + 0.1 * rng.standard_normal((12, T)), target=target,
                         ftp=target + 0.05 * np.cos(6 * t), ptf=target + 0.3 * np.sin(9 * t) + 0.2,
                         noisy_means=target[idx] + 0.5 * rng.standard_normal(T) + 0.4))
    return t, rows


def old_pipeline_run_figure(t, rows):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(6.4, 5.6), sharex=True)
    for row, r in zip(axes, rows):
        row[0].plot(t, r["curves"].T, color="0.6", lw=0.8)
        row[0].plot(t, r["fits"].T, color="tab:blue", lw=0.8, ls="--")
        row[0].plot(r["grid"], r["observed"].T, ".", color="0.3", ms=3)
        row[0].set_title(r["title"] + ": curves (grey), fits (blue)", fontsize=9)
        row[1].plot(t, r["target"], "k", lw=2, label=r"target $\bar f$")
        row[1].plot(t, r["ftp"], color="tab:red", label="FTP release")
        row[1].plot(t, r["ptf"], color="tab:green", label="PTF release")
        row[1].plot(r["grid"], r["noisy_means"], "g.", ms=5, label=r"PTF noisy means $\tilde x$")
        row[1].set_title(r["title"] + ": target and releases", fontsize=9)
    axes[0, 1].legend(frameon=False)
    for ax in axes[1]:
        ax.set_xlabel("$t$")
    fig.tight_layout()
    return fig


def test_pipelines_figure_titles_and_legend():
    import matplotlib.pyplot as plt

    style.use_style()
    t, rows = _pipeline_rows(np.random.default_rng(3))
    old = figure_checks.layout_problems(old_pipeline_run_figure(t, rows))
    assert any("title" in p and "overlaps title" in p for p in old), old  # titles run together
    assert any("covers data" in p for p in old), old  # legend over the PTF curve / means
    new_fig = chapter_figures.pipeline_run_figure(rows, t)
    assert figure_checks.layout_problems(new_fig) == []
    assert new_fig.get_size_inches()[0] <= style.TEXT_WIDTH
    plt.close("all")


def _design_table(rng):
    names = ["PTF", "mix 0.25", "mix 0.5", "mix 0.75", "FTP", "FTP+fit", "ball"]
    rows = []
    for s in (0.0, 0.1, 1.0, 10.0):
        for n in (4, 16, 64, 256, 1024, 4096):
            ftp = 0.5 + 0.3 * rng.uniform()
            for name in names:
                r = {"PTF": 1.0, "FTP": ftp, "FTP+fit": ftp if n >= 16 else 0.8 * ftp,
                     "mix 0.25": 0.9, "mix 0.5": 0.9 * (1 + 0.02 * rng.uniform()), "mix 0.75": 0.7,
                     "ball": 0.6}[name]
                se = 0.0 if name == "PTF" else 0.03  # PTF against itself: no interval, caps on the point
                rows.append(dict(design=name, n=n, sigma0=s, ratio_PTF=r, se_log_ratio_PTF=se))
    return pd.DataFrame(rows), names


def old_design_ratio_figure(df, designs, z=1.96):
    fig, axes, spare = style.panel_grid(4, height=2.4)
    for ax, value in zip(axes, sorted(df["sigma0"].unique())):
        sub = df[df["sigma0"] == value]
        for name in designs:
            d = sub[sub["design"] == name].sort_values("n")
            r, se = d["ratio_PTF"], d["se_log_ratio_PTF"]
            ax.errorbar(d["n"], r, yerr=[r - r * np.exp(-z * se), r * np.exp(z * se) - r], label=name,
                        ms=3.5, lw=1.0, capsize=1.5, **style.level_style(name, list(designs)))
        ax.axhline(1.0, color="0.5", lw=0.8, ls=":")
        style.log_axes(ax, x_base=2)
        ax.set_title(f"$\\sigma_0 = {value:g}$")
        ax.set_xlabel("$n$")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def test_design_figure_shows_every_design():
    import matplotlib.pyplot as plt

    style.use_style()
    df, names = _design_table(np.random.default_rng(4))
    old = figure_checks.layout_problems(old_design_ratio_figure(df, names))
    assert any("'FTP' is hidden under 'FTP+fit'" in p for p in old), old
    assert any("'mix 0.25' is hidden under 'mix 0.5'" in p for p in old), old
    assert figure_checks.colour_distance(style.COLOURS[0], style.COLOURS[5]) < figure_checks.MIN_COLOUR_DELTA_E + 20
    fig = chapter_figures.design_ratio_figure(df, names)
    assert figure_checks.layout_problems(fig) == []
    # FTP and PTF drawn as in every other chapter, FTP+fit told from FTP by more than colour
    lines = {c.get_label(): c.lines[0] for c in fig.axes[0].containers}
    assert lines["FTP"].get_color() == style.METHOD_STYLE["ftp"]["color"]
    assert lines["PTF"].get_color() == style.METHOD_STYLE["ptf"]["color"]
    assert lines["FTP+fit"].get_linestyle() != lines["FTP"].get_linestyle()
    plt.close("all")


def _growth_data(rng):
    t = np.linspace(1, 18, 200)
    truth = 75 + 6 * (t - 1)
    releases = {mu: {name: truth + (scale / mu) * rng.standard_normal((400, 1)) * (1 + 0.3 * np.cos(t))
                     for name, scale in (("FTP", 1.0), ("PTF", 1.2))} for mu in (0.25, 4.0)}
    return t, truth, releases


def old_release_figure(t, truth, releases):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(style.TEXT_WIDTH, 5.4), sharex=True, sharey="row")
    for k, mu in enumerate((0.25, 4.0)):
        for name in ("FTP", "PTF"):
            colour = style.METHOD_STYLE[name.lower()]["color"]
            curves = releases[mu][name]
            lo, hi = np.quantile(curves, [0.05, 0.95], axis=0)
            axes[0, k].fill_between(t, lo, hi, color=colour, alpha=0.3, lw=0, label=f"{name}: 90% of releases")
            lo_d, hi_d = np.quantile(curves - truth, [0.05, 0.95], axis=0)
            axes[1, k].fill_between(t, lo_d, hi_d, color=colour, alpha=0.3, lw=0)
            axes[1, k].plot(t, curves[0] - truth, color=colour, lw=1, label=f"one {name} release")
        axes[0, k].plot(t, truth, "k", lw=1.3, label="non-private mean")
        axes[0, k].set_title(f"μ = {mu:g}")
        axes[1, k].axhline(0, color="k", lw=0.8)
    axes[0, 0].legend(loc="upper left")
    axes[1, 1].legend(loc="lower left")
    fig.tight_layout()
    return fig


def test_growth_release_figure():
    import matplotlib.pyplot as plt

    style.use_style()
    t, truth, releases = _growth_data(np.random.default_rng(5))
    old = figure_checks.layout_problems(old_release_figure(t, truth, releases))
    assert any("μ = 4" in p and "px thick" in p for p in old), old  # the empty-looking panel
    assert any("(μ = 4)" in p and "no legend" in p for p in old), old  # legend in the other panel
    assert any("mixing a colour no legend names" in p for p in old), old  # the brown
    assert figure_checks.layout_problems(chapter_figures.release_bands_figure(t, truth, releases)) == []
    plt.close("all")


def old_velocity_figure(t, panels, mus):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(style.TEXT_WIDTH, 5.6), sharex=True, sharey=True)
    for ax, (g, data) in zip(axes, panels.items()):
        ax.plot(t, data["target"], "k", lw=1.4, label="non-private")
        for k, mu in enumerate(mus):
            lo, hi = np.quantile(data[mu], [0.05, 0.95], axis=0)
            ax.fill_between(t, lo, hi, color=style.COLOURS[k], alpha=0.25, lw=0, label=f"FTP, μ = {mu:g}: 90%")
        ax.set(title=g, ylim=(-5, 30))
    axes[0].legend(loc="upper right")
    fig.tight_layout()
    return fig


def test_growth_velocity_figure():
    import matplotlib.pyplot as plt

    style.use_style()
    rng = np.random.default_rng(6)
    t = np.linspace(1, 18, 200)
    mus = (1.0, 4.0, 16.0)
    panels = {g: {"target": 6 + 8 * np.exp(-((t - c) ** 2)), **{
        mu: 6 + 8 * np.exp(-((t - c) ** 2)) + (12 / mu) * rng.standard_normal((300, 1)) * np.cos(t)
        for mu in mus}} for g, c in (("girls", 11.5), ("boys", 13.5))}
    old = figure_checks.layout_problems(old_velocity_figure(t, panels, mus))
    assert any("mixing a colour no legend names" in p for p in old), old
    fig = chapter_figures.nested_bands_figure(t, panels, mus, ylabel="velocity", xlabel="age", ylim=(-5, 30), mark_x=8)
    assert figure_checks.layout_problems(fig) == []
    plt.close("all")



def test_activation_figure_one_panel_per_mu_a_line_per_T():
    style.use_style()
    rows = [dict(mu=mu, T=T, n=n, p_ptf_active=min(1.0, T / n), reps=100, ratio=1.0, ratio_lo=0.9,
                 ratio_hi=1.1, err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for mu in (0.1, 1.0) for T in (2, 8) for n in (4, 64, 1024)]
    fig = chapter_figures.activation_figure(pd.DataFrame(rows))
    assert fig.get_size_inches()[0] <= style.TEXT_WIDTH
    assert [ax.get_title() for ax in fig.axes] == ["μ = 0.1", "μ = 1"]
    assert [c.get_label() for c in fig.axes[0].containers] == ["T = 2", "T = 8"]


def test_the_chapters_figures_fit_and_refuse_bad_input():
    from dpfda_book.report import claims as cl
    from dpfda_book.simulation.models import LAW_SHIFTS, LAWS

    style.use_style()
    ids = [c.id for c in cl.CLAIMS[:3]]
    matrix = pd.DataFrame([[cl.VERDICTS[(i + j) % 3] for j in range(len(LAWS))] for i in range(3)],
                          index=ids, columns=list(LAWS))
    shares = pd.DataFrame([{"law": "default", "shape": "default", "S": np.nan, "p": 0.3, "se": 0.02}]
                          + [{"law": f"{sh}-{S:g}", "shape": sh, "S": S, "p": 0.2 + 0.5 * S, "se": 0.02}
                             for sh in ("shift", "wave") for S in LAW_SHIFTS])
    ratios = pd.DataFrame({"Laplace ratio": [1.0, 2.1, 3.9], "Laplace s.e.": [0.1] * 3,
                           "Gaussian ratio": [1.0, 1.02, 0.98], "Gaussian s.e.": [0.05] * 3},
                          index=pd.Index([1, 2, 4], name="T"))
    figures = [chapter_figures.verdict_figure(matrix), chapter_figures.law_figure(),
               chapter_figures.activation_by_share_figure(shares),
               chapter_figures.composition_ratio_figure(ratios),
               chapter_figures.activation_by_norm_figure([0.1, 0.5, 1.0], [0.1, 0.4, 0.9], [0.01] * 3, 0.6),
               chapter_figures.legendre_limit_figure(np.arange(1, 5), 1 / np.arange(1, 5) ** 1.2),
               chapter_figures.kernel_eigenvalue_figure(np.arange(2, 9), 10.0 ** -np.arange(2, 9),
                                                        10.0 ** -np.arange(2, 9), 1e-8)]
    for fig in figures:
        assert fig.get_size_inches()[0] <= style.TEXT_WIDTH
    assert "✓" in [t.get_text() for t in figures[0].axes[0].texts]  # the mark, not colour alone
    assert figure_checks.layout_problems(figures[2]) == []
    with pytest.raises(ValueError, match="values other than"):
        chapter_figures.verdict_figure(matrix.replace("holds", "yes"))
    with pytest.raises(ValueError, match="activation_by_share"):
        chapter_figures.activation_by_share_figure(shares.drop(columns="se"))
    with pytest.raises(ValueError, match="indexed by T"):
        chapter_figures.composition_ratio_figure(ratios.drop(columns="Gaussian s.e."))
    with pytest.raises(ValueError, match="same length"):
        chapter_figures.activation_by_norm_figure([0.1, 0.5], [0.1], [0.01], 0.6)
    assert "floor $10^{-8}$" in figures[-1].axes[0].get_legend_handles_labels()[1]
    with pytest.raises(ValueError, match="same length"):
        chapter_figures.legendre_limit_figure([1, 2], [1.0])
    with pytest.raises(ValueError, match="same length"):
        chapter_figures.kernel_eigenvalue_figure([2, 3], [1.0, 0.1], [1.0], 1e-8)
    with pytest.raises(ValueError, match="columns x and free"):
        chapter_figures.noise_collapse_figure(pd.DataFrame({
            "n": [4], "err_ftp": [1.0], "err_ptf": [1.0], "ratio": [1.0], "ratio_lo": [0.9], "ratio_hi": [1.1],
            "se_ftp": [0.1], "se_ptf": [0.1], "metric": ["MSE"]}))
