"""dpfda.report.plots: the book's figure style and its tables (issue #11)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from dpfda.report import plots


@pytest.mark.parametrize("value, text", [
    (0.1, "0.100"), (1.0, "1"), (4096.0, "4096"), (0.75512, "0.755"), (12.345, "12.3"),
    (1.2345e-5, "1.23 × 10⁻⁵"), (2.5e7, "2.50 × 10⁷"), (np.float64(0.9999998), "1.000"),
    (np.int64(7), "7"), (np.nan, "–"), (np.inf, "∞"), (0.0, "0"), (True, "yes"),
    (9.9996e-4, "1.00 × 10⁻³"), ("text", "text"),
])
def test_number(value, text):
    assert plots.number(value) == text


def test_pretty_headers():
    assert plots.pretty("tau^2 tr(A^-1)") == "τ² tr(A⁻¹)"
    assert plots.pretty("4mB'^2/(n mu)^2") == "4mB′²/(n μ)²"
    assert plots.pretty("lambda_min(A)") == "λ_min(A)"
    assert plots.pretty("sigma0") == "σ₀" and plots.pretty("mu") == "μ"
    assert plots.pretty("sqrt_log_n") == "sqrt_log_n"  # words are left alone


def test_table_is_a_numbered_list_table_with_typeset_headers():
    df = pd.DataFrame({"mu": [0.1, 1.0], "n": [4, 4096], "ratio": [1.23456, 0.1254]})
    md = plots.table(df, "A caption with $\\mu$.", name="tab-x").markdown()
    assert md.startswith(":::{list-table} A caption with $\\mu$.\n:header-rows: 1\n:name: tab-x")
    assert "* - μ\n  - n\n  - ratio FTP/PTF" in md
    assert "1.23" in md and "0.125" in md and "1.23456" not in md
    assert "4096" in md and "4096.0" not in md
    assert "* - 0.1\n" in md  # a setting as given, not to three digits
    assert md.rstrip().endswith(":::")


def test_table_without_caption_is_a_pipe_table_and_escapes_markdown():
    df = pd.DataFrame({"rule": ["sqrt_log_n", "*x*"], "value": [1.0, 2.5]})
    md = plots.table(df).markdown()
    lines = md.splitlines()
    assert lines[0] == "| rule | value |" and lines[1] == "|---:|---:|"
    assert "sqrt\\_log\\_n" in md and "\\*x\\*" in md


def test_table_two_header_levels_and_overrides():
    t1 = pd.DataFrame({"mu": [0.1, 0.1, 1.0, 1.0], "T": [2, 4, 2, 4], "n": [4] * 4,
                       "ratio": [1.2, 0.5, 0.3, 0.2]})
    laid = plots.pivot_n_by_mu_T(t1, "ratio")
    assert list(laid.index) == [4]
    md = plots.table(laid, "Table 1.").markdown()
    assert ":header-rows: 2" in md and "μ = 0.1" in md and "T = 4" in md
    md = plots.table(pd.DataFrame([[1.0, 2.0]], columns=[2, 4]), headers={2: "T = 2"}).markdown()
    assert md.startswith("| T = 2 | 4 |")


def test_table_rejects_bad_input():
    with pytest.raises(TypeError, match="data must be a pandas DataFrame"):
        plots.table([[1, 2]], "c")
    with pytest.raises(ValueError, match="data is empty"):
        plots.table(pd.DataFrame(), "c")
    with pytest.raises(ValueError, match="caption must be a non-empty string"):
        plots.table(pd.DataFrame({"a": [1]}), "  ")
    with pytest.raises(ValueError, match="name needs a caption"):
        plots.table(pd.DataFrame({"a": [1]}), name="x")
    with pytest.raises(ValueError, match="value must be a column"):
        plots.pivot_n_by_mu_T(pd.DataFrame({"mu": [1], "T": [2], "n": [4]}), "ratio")


def test_no_reprs_in_a_table():
    df = pd.DataFrame({"x": [np.float64(0.1 + 0.2), np.float32(1e-9)]})
    text = plots.table(df, "c").markdown() + str(plots.table(df, "c"))
    assert "np.float" not in text and "dtype" not in text and "0.30000000000000004" not in text


def test_ratio_figure_is_two_panels_to_a_row_at_column_width():
    plots.use_style()
    rows = [dict(sigma0=s, T=T, n=n, ratio=1 / T, ratio_lo=0.9 / T, ratio_hi=1.1 / T,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for s in (0.1, 1.0, 10.0) for T in (2, 8) for n in (4, 64, 4096)]
    fig = plots.ratio_figure(pd.DataFrame(rows), group="T", panel="sigma0")
    width, height = fig.get_size_inches()
    assert width <= plots.TEXT_WIDTH + 1e-9 and height > width / 2  # 2 x 2, not 1 x 3
    data_axes = [ax for ax in fig.axes if ax.axison]
    assert len(data_axes) == 3 and all(ax.get_xscale() == "log" for ax in data_axes)
    fig.canvas.draw()
    labels = [t.get_text() for t in data_axes[0].get_xticklabels() if t.get_text()]
    assert "4096" in labels and all(label.isdigit() for label in labels), labels
    # the same level drawn alike: T = 8 is the second level in both calls
    assert plots.level_style(8, (2, 8)) == plots.level_style(4, (2, 4))


def test_pipeline_diagram_and_ratio_map_fit_the_column():
    plots.use_style()
    assert plots.pipeline_diagram().get_size_inches()[0] <= plots.TEXT_WIDTH
    rows = [dict(T=T, sigma0=s, n=n, ratio=r, ratio_lo=r * 0.9, ratio_hi=r * 1.1,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for T in (2, 8) for s in (0.1, 1.0) for n, r in ((4, 2.0), (64, 0.5))]
    fig = plots.ratio_map(pd.DataFrame(rows))
    assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH


# --- figures a reader can read (issue #23 item 2): plots.layout_problems on the old and the
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

    plots.use_style()
    t, rows = _pipeline_rows(np.random.default_rng(3))
    old = plots.layout_problems(old_pipeline_run_figure(t, rows))
    assert any("title" in p and "overlaps title" in p for p in old), old  # titles run together
    assert any("covers data" in p for p in old), old  # legend over the PTF curve / means
    new_fig = plots.pipeline_run_figure(rows, t)
    assert plots.layout_problems(new_fig) == []
    assert new_fig.get_size_inches()[0] <= plots.TEXT_WIDTH
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
    fig, axes, spare = plots.panel_grid(4, height=2.4)
    for ax, value in zip(axes, sorted(df["sigma0"].unique())):
        sub = df[df["sigma0"] == value]
        for name in designs:
            d = sub[sub["design"] == name].sort_values("n")
            r, se = d["ratio_PTF"], d["se_log_ratio_PTF"]
            ax.errorbar(d["n"], r, yerr=[r - r * np.exp(-z * se), r * np.exp(z * se) - r], label=name,
                        ms=3.5, lw=1.0, capsize=1.5, **plots.level_style(name, list(designs)))
        ax.axhline(1.0, color="0.5", lw=0.8, ls=":")
        plots.log_axes(ax, x_base=2)
        ax.set_title(f"$\\sigma_0 = {value:g}$")
        ax.set_xlabel("$n$")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def test_design_figure_shows_every_design():
    import matplotlib.pyplot as plt

    plots.use_style()
    df, names = _design_table(np.random.default_rng(4))
    old = plots.layout_problems(old_design_ratio_figure(df, names))
    assert any("'FTP' is hidden under 'FTP+fit'" in p for p in old), old
    assert any("'mix 0.25' is hidden under 'mix 0.5'" in p for p in old), old
    assert plots.colour_distance(plots.COLOURS[0], plots.COLOURS[5]) < plots.MIN_COLOUR_DELTA_E + 20
    fig = plots.design_ratio_figure(df, names)
    assert plots.layout_problems(fig) == []
    # FTP and PTF drawn as in every other chapter, FTP+fit told from FTP by more than colour
    lines = {c.get_label(): c.lines[0] for c in fig.axes[0].containers}
    assert lines["FTP"].get_color() == plots.METHOD_STYLE["ftp"]["color"]
    assert lines["PTF"].get_color() == plots.METHOD_STYLE["ptf"]["color"]
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

    fig, axes = plt.subplots(2, 2, figsize=(plots.TEXT_WIDTH, 5.4), sharex=True, sharey="row")
    for k, mu in enumerate((0.25, 4.0)):
        for name in ("FTP", "PTF"):
            colour = plots.METHOD_STYLE[name.lower()]["color"]
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

    plots.use_style()
    t, truth, releases = _growth_data(np.random.default_rng(5))
    old = plots.layout_problems(old_release_figure(t, truth, releases))
    assert any("μ = 4" in p and "px thick" in p for p in old), old  # the empty-looking panel
    assert any("(μ = 4)" in p and "no legend" in p for p in old), old  # legend in the other panel
    assert any("mixing a colour no legend names" in p for p in old), old  # the brown
    assert plots.layout_problems(plots.release_bands_figure(t, truth, releases)) == []
    plt.close("all")


def old_velocity_figure(t, panels, mus):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(plots.TEXT_WIDTH, 5.6), sharex=True, sharey=True)
    for ax, (g, data) in zip(axes, panels.items()):
        ax.plot(t, data["target"], "k", lw=1.4, label="non-private")
        for k, mu in enumerate(mus):
            lo, hi = np.quantile(data[mu], [0.05, 0.95], axis=0)
            ax.fill_between(t, lo, hi, color=plots.COLOURS[k], alpha=0.25, lw=0, label=f"FTP, μ = {mu:g}: 90%")
        ax.set(title=g, ylim=(-5, 30))
    axes[0].legend(loc="upper right")
    fig.tight_layout()
    return fig


def test_growth_velocity_figure():
    import matplotlib.pyplot as plt

    plots.use_style()
    rng = np.random.default_rng(6)
    t = np.linspace(1, 18, 200)
    mus = (1.0, 4.0, 16.0)
    panels = {g: {"target": 6 + 8 * np.exp(-((t - c) ** 2)), **{
        mu: 6 + 8 * np.exp(-((t - c) ** 2)) + (12 / mu) * rng.standard_normal((300, 1)) * np.cos(t)
        for mu in mus}} for g, c in (("girls", 11.5), ("boys", 13.5))}
    old = plots.layout_problems(old_velocity_figure(t, panels, mus))
    assert any("mixing a colour no legend names" in p for p in old), old
    fig = plots.nested_bands_figure(t, panels, mus, ylabel="velocity", xlabel="age", ylim=(-5, 30), mark_x=8)
    assert plots.layout_problems(fig) == []
    plt.close("all")


def test_layout_problems_finds_colliding_text_and_passes_a_clean_figure():
    import matplotlib.pyplot as plt

    plots.use_style()
    fig, (a, b) = plt.subplots(1, 2, figsize=(4, 2))
    a.plot([0, 1], [0, 1], label="x")
    a.set_title("a very long title that runs into the next panel's title")
    b.set_title("another long title for the right-hand panel")
    problems = plots.layout_problems(fig)
    assert any("overlaps title" in p for p in problems), problems
    fig2, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([0, 1], [0, 1], label="rising", color=plots.COLOURS[0])
    ax.plot([0, 1], [1, 0], label="falling", color=plots.COLOURS[1], ls="--")
    ax.legend(loc="upper center")
    assert plots.layout_problems(fig2) == [], plots.layout_problems(fig2)
    plt.close("all")


# --- presentation out of the data model (issue #24 item 4) -------------------------------


def test_each_paper_study_has_a_layout_and_a_study_has_none():
    from dpfda.simulation.studies import STUDY_NAMES, Study, get_study

    assert set(plots.LAYOUTS) == set(STUDY_NAMES)
    assert plots.layout_of("fig3") == plots.Layout("ratio", group="T", panel="sigma0")
    assert plots.layout_of(get_study("fig2")).kind == "scaled"
    assert plots.layout_of("fig6__shift_0p5") is plots.LAYOUTS["fig6"]  # the robustness runs' names
    assert not {"kind", "group", "panel", "reference"} & set(Study.__dataclass_fields__)
    with pytest.raises(ValueError, match="pass its Layout"):
        plots.layout_of("mine")
    with pytest.raises(ValueError, match="kind must be one of"):
        plots.Layout("pie")
    with pytest.raises(ValueError, match="group must be a Setting field"):
        plots.Layout("ratio", group="colour")
    with pytest.raises(ValueError, match="panel must be a Setting field"):
        plots.Layout("ratio", panel="colour")


def test_a_study_of_ones_own_is_drawn_in_the_layout_given():
    plots.use_style()
    rows = [dict(study="mine", mu=mu, m=m, n=n, ratio=1 / m, ratio_lo=0.9 / m, ratio_hi=1.1 / m,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="IMSE")
            for mu in (0.5, 1.0) for m in (3, 5) for n in (16, 64)]
    df = pd.DataFrame(rows)
    with pytest.raises(ValueError, match="pass its Layout"):
        plots.figure(df)
    fig = plots.figure(df, layout=plots.Layout("ratio", group="m", panel="mu"))
    assert [ax.get_title() for ax in fig.axes if ax.axison] == ["μ = 0.5", "μ = 1"]
    with pytest.raises(ValueError, match="the layout is a table"):
        plots.figure(df, layout=plots.LAYOUTS["table1"])
    meta = {"study": "mine", "title": "t", "reps": 10, "seed": 1}
    assert "delta-method confidence intervals" in plots.caption(meta, plots.Layout("ratio"))
    assert "±1.96 Monte Carlo" in plots.caption({**meta, "study": "fig5"})


def test_table1_frame_is_the_data_and_the_pivot_its_layout():
    from dpfda.report import evidence

    rows = [dict(mu=mu, T=T, n=n, err_ftp=1.0 * T, err_ptf=2.0, ratio=T / 2, ratio_lo=T / 3, ratio_hi=T,
                 p_ptf_active=0.5, extra="x")
            for mu in (1.0, 0.1) for T in (4, 2) for n in (16, 4)]
    t1 = evidence.table1_frame(pd.DataFrame(rows))
    assert list(t1.columns) == ["mu", "T", "n", "MSE_FTP", "MSE_PTF", "ratio", "ratio_lo", "ratio_hi", "p_PTF"]
    assert list(t1[["mu", "T", "n"]].itertuples(index=False, name=None))[:3] == [(0.1, 2, 4), (0.1, 2, 16),
                                                                                (0.1, 4, 4)]
    laid = plots.pivot_n_by_mu_T(t1, "ratio")
    assert list(laid.index) == [4, 16] and laid.columns[0] == ("μ = 0.1", "T = 2")
    with pytest.raises(ValueError, match="lacks columns"):
        evidence.table1_frame(pd.DataFrame(rows).drop(columns="p_ptf_active"))


def test_activation_figure_one_panel_per_mu_a_line_per_T():
    plots.use_style()
    rows = [dict(mu=mu, T=T, n=n, p_ptf_active=min(1.0, T / n), reps=100, ratio=1.0, ratio_lo=0.9,
                 ratio_hi=1.1, err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for mu in (0.1, 1.0) for T in (2, 8) for n in (4, 64, 1024)]
    fig = plots.activation_figure(pd.DataFrame(rows))
    assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH
    assert [ax.get_title() for ax in fig.axes] == ["μ = 0.1", "μ = 1"]
    assert [c.get_label() for c in fig.axes[0].containers] == ["T = 2", "T = 8"]


def test_the_chapters_figures_moved_into_plots_fit_and_refuse_bad_input():
    from dpfda.maths.data import LAW_SHIFTS, LAWS
    from dpfda.report import claims as cl

    plots.use_style()
    ids = [c.id for c in cl.CLAIMS[:3]]
    matrix = pd.DataFrame([[cl.VERDICTS[(i + j) % 3] for j in range(len(LAWS))] for i in range(3)],
                          index=ids, columns=list(LAWS))
    shares = pd.DataFrame([{"law": "default", "shape": "default", "S": np.nan, "p": 0.3, "se": 0.02}]
                          + [{"law": f"{sh}-{S:g}", "shape": sh, "S": S, "p": 0.2 + 0.5 * S, "se": 0.02}
                             for sh in ("shift", "wave") for S in LAW_SHIFTS])
    ratios = pd.DataFrame({"Laplace ratio": [1.0, 2.1, 3.9], "Laplace s.e.": [0.1] * 3,
                           "Gaussian ratio": [1.0, 1.02, 0.98], "Gaussian s.e.": [0.05] * 3},
                          index=pd.Index([1, 2, 4], name="T"))
    figures = [plots.verdict_figure(matrix), plots.law_figure(), plots.activation_by_share_figure(shares),
               plots.composition_ratio_figure(ratios),
               plots.activation_by_norm_figure([0.1, 0.5, 1.0], [0.1, 0.4, 0.9], [0.01] * 3, 0.6),
               plots.legendre_limit_figure(np.arange(1, 5), 1 / np.arange(1, 5) ** 1.2),
               plots.kernel_eigenvalue_figure(np.arange(2, 9), 10.0 ** -np.arange(2, 9), 10.0 ** -np.arange(2, 9),
                                              1e-8)]
    for fig in figures:
        assert fig.get_size_inches()[0] <= plots.TEXT_WIDTH
    assert "✓" in [t.get_text() for t in figures[0].axes[0].texts]  # the mark, not colour alone
    assert plots.layout_problems(figures[2]) == []
    with pytest.raises(ValueError, match="values other than"):
        plots.verdict_figure(matrix.replace("holds", "yes"))
    with pytest.raises(ValueError, match="activation_by_share"):
        plots.activation_by_share_figure(shares.drop(columns="se"))
    with pytest.raises(ValueError, match="indexed by T"):
        plots.composition_ratio_figure(ratios.drop(columns="Gaussian s.e."))
    with pytest.raises(ValueError, match="same length"):
        plots.activation_by_norm_figure([0.1, 0.5], [0.1], [0.01], 0.6)
    assert "floor $10^{-8}$" in figures[-1].axes[0].get_legend_handles_labels()[1]
    with pytest.raises(ValueError, match="same length"):
        plots.legendre_limit_figure([1, 2], [1.0])
    with pytest.raises(ValueError, match="same length"):
        plots.kernel_eigenvalue_figure([2, 3], [1.0, 0.1], [1.0], 1e-8)
    with pytest.raises(ValueError, match="columns x and free"):
        plots.noise_collapse_figure(pd.DataFrame({"n": [4], "err_ftp": [1.0], "err_ptf": [1.0], "ratio": [1.0],
                                                  "ratio_lo": [0.9], "ratio_hi": [1.1], "se_ftp": [0.1],
                                                  "se_ptf": [0.1], "metric": ["MSE"]}))
