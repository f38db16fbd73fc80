"""dpfda_book.report.figure_checks: what a drawn figure gets wrong."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")


from dpfda_book.report import figure_checks, style


def test_layout_problems_finds_colliding_text_and_passes_a_clean_figure():
    import matplotlib.pyplot as plt

    style.use_style()
    fig, (a, b) = plt.subplots(1, 2, figsize=(4, 2))
    a.plot([0, 1], [0, 1], label="x")
    a.set_title("a very long title that runs into the next panel's title")
    b.set_title("another long title for the right-hand panel")
    problems = figure_checks.layout_problems(fig)
    assert any("overlaps title" in p for p in problems), problems
    fig2, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([0, 1], [0, 1], label="rising", color=style.COLOURS[0])
    ax.plot([0, 1], [1, 0], label="falling", color=style.COLOURS[1], ls="--")
    ax.legend(loc="upper center")
    assert figure_checks.layout_problems(fig2) == [], figure_checks.layout_problems(fig2)
    plt.close("all")
