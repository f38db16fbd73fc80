"""How each of the paper's studies is drawn: :class:`Layout`, :data:`LAYOUTS`, :func:`layout_of`.

The names are public in :mod:`dpfda.report.plots`, which documents them.  They live
apart from it so that the command line can name a study's output files before it
simulates without importing matplotlib and pandas, as plots does (``reproduce``
draws and tabulates while its workers simulate).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..simulation.studies import Setting, Study

__all__ = ["Layout", "LAYOUTS", "layout_of"]

_KINDS = ("ratio", "scaled", "table")


@dataclass(frozen=True)
class Layout:
    """How a study's results are drawn.

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

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {self.kind!r}")
        fields = set(Setting.__dataclass_fields__)
        if self.group not in fields:
            raise ValueError(f"group must be a Setting field, got {self.group!r}")
        if self.panel is not None and self.panel not in fields:
            raise ValueError(f"panel must be a Setting field or None, got {self.panel!r}")


LAYOUTS: dict[str, Layout] = {
    "fig1": Layout("ratio", group="T", panel="mu"),
    "fig2": Layout("scaled", group="radius_rule", panel=None, reference=False),
    "fig3": Layout("ratio", group="T", panel="sigma0"),
    "fig4": Layout("ratio", group="m", panel="mu"),
    "fig5": Layout("scaled", group="radius_rule", panel=None, reference=False),
    "fig6": Layout("ratio", group="m", panel="sigma0"),
    "table1": Layout("table", group="T", panel="mu"),
}
"""The layout of each of the paper's studies (:func:`dpfda.simulation.studies.paper_studies`), by name."""


def layout_of(study) -> Layout:
    """The layout of one of the paper's studies: a :class:`~dpfda.simulation.studies.Study` or its name.

    A name with a suffix after ``"__"`` (the robustness runs' ``"fig3__shift_0p5"``) is the
    study before it.
    """
    name = study.name if isinstance(study, Study) else study
    if not isinstance(name, str):
        raise TypeError(f"study must be a Study or a study name, got {type(study).__name__}")
    base = name.split("__", 1)[0]
    if base not in LAYOUTS:
        raise ValueError(f"study {name!r} is not one of the paper's ({', '.join(LAYOUTS)}): "
                         "pass its Layout (plots.figure(df, layout=plots.Layout(...)))")
    return LAYOUTS[base]
