"""dpfda_book.report.study_figures: the paper's studies drawn in their layouts."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from dpfda_book.report import chapter_figures, study_figures, style
from dpfda_book.simulation import studies


def test_ratio_figure_is_two_panels_to_a_row_at_column_width():
    style.use_style()
    rows = [dict(sigma0=s, T=T, n=n, ratio=1 / T, ratio_lo=0.9 / T, ratio_hi=1.1 / T,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for s in (0.1, 1.0, 10.0) for T in (2, 8) for n in (4, 64, 4096)]
    fig = study_figures.ratio_figure(pd.DataFrame(rows), group="T", panel="sigma0")
    width, height = fig.get_size_inches()
    assert width <= style.TEXT_WIDTH + 1e-9 and height > width / 2  # 2 x 2, not 1 x 3
    data_axes = [ax for ax in fig.axes if ax.axison]
    assert len(data_axes) == 3 and all(ax.get_xscale() == "log" for ax in data_axes)
    fig.canvas.draw()
    labels = [t.get_text() for t in data_axes[0].get_xticklabels() if t.get_text()]
    assert "4096" in labels and all(label.isdigit() for label in labels), labels
    # the same level drawn alike: T = 8 is the second level in both calls
    assert style.level_style(8, (2, 8)) == style.level_style(4, (2, 4))


def test_pipeline_diagram_and_ratio_map_fit_the_column():
    style.use_style()
    assert chapter_figures.pipeline_diagram().get_size_inches()[0] <= style.TEXT_WIDTH
    rows = [dict(T=T, sigma0=s, n=n, ratio=r, ratio_lo=r * 0.9, ratio_hi=r * 1.1,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="MSE")
            for T in (2, 8) for s in (0.1, 1.0) for n, r in ((4, 2.0), (64, 0.5))]
    fig = study_figures.ratio_map(pd.DataFrame(rows))
    assert fig.get_size_inches()[0] <= style.TEXT_WIDTH


# --- presentation out of the data model (issue #24 item 4) -------------------------------


def test_each_paper_study_carries_its_layout_and_layout_of_reads_it():
    from dpfda_book.simulation.studies import STUDY_NAMES, Study, get_study, paper_studies

    assert set(studies.LAYOUTS) == set(STUDY_NAMES)
    assert all(st.layout == studies.LAYOUTS[name] for name, st in paper_studies(n=(4, 8)).items())
    mine = Study.grid("mine", family="legendre", n=[4], m=[2, 3], layout=studies.Layout("ratio", group="m"))
    assert studies.layout_of(mine) is mine.layout and mine.subset(m=2).layout is mine.layout
    assert Study.grid("mine", family="legendre", n=[4], m=2).layout is None
    with pytest.raises(TypeError, match="layout must be a Layout or None"):
        Study.grid("mine", family="legendre", n=[4], m=2, layout="ratio")
    assert studies.layout_of("fig3") == studies.Layout("ratio", group="T", panel="sigma0")
    assert studies.layout_of(get_study("fig2")).kind == "scaled"
    assert studies.layout_of("fig6__shift_0p5") is studies.LAYOUTS["fig6"]  # the robustness runs' names
    assert not {"kind", "group", "panel", "reference"} & set(Study.__dataclass_fields__)
    with pytest.raises(ValueError, match="pass its Layout"):
        studies.layout_of("mine")
    with pytest.raises(ValueError, match="kind must be one of"):
        studies.Layout("pie")
    with pytest.raises(ValueError, match="group must be a Setting field"):
        studies.Layout("ratio", group="colour")
    with pytest.raises(ValueError, match="panel must be a Setting field"):
        studies.Layout("ratio", panel="colour")


def test_a_study_of_ones_own_is_drawn_in_the_layout_given():
    style.use_style()
    rows = [dict(study="mine", mu=mu, m=m, n=n, ratio=1 / m, ratio_lo=0.9 / m, ratio_hi=1.1 / m,
                 err_ftp=1.0, err_ptf=1.0, se_ftp=0.1, se_ptf=0.1, metric="IMSE")
            for mu in (0.5, 1.0) for m in (3, 5) for n in (16, 64)]
    df = pd.DataFrame(rows)
    with pytest.raises(ValueError, match="pass its Layout"):
        study_figures.figure(df)
    fig = study_figures.figure(df, layout=studies.Layout("ratio", group="m", panel="mu"))
    assert [ax.get_title() for ax in fig.axes if ax.axison] == ["μ = 0.5", "μ = 1"]
    with pytest.raises(ValueError, match="the layout is a table"):
        study_figures.figure(df, layout=studies.LAYOUTS["table1"])
    meta = {"study": "mine", "title": "t", "reps": 10, "seed": 1}
    assert "delta-method confidence intervals" in study_figures.caption(meta, studies.Layout("ratio"))
    assert "±1.96 Monte Carlo" in study_figures.caption({**meta, "study": "fig5"})
