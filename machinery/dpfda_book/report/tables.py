"""Tables for readers: every table of the book goes through :func:`table`.

A numbered, captioned table (MyST ``list-table``, which Sphinx numbers "Table k.j"),
headers typeset (μ, σ₀, B′, not ``mu``; :func:`pretty`), every number formatted by
:func:`number` (no reprs, no 16-digit floats).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .claim_verdicts import Judgement

from .style import (
    setting_text,
)

__all__ = [
    "pretty",
    "number",
    "Table",
    "table",
    "pivot_n_by_mu_T",
    "judgement_table",
    "HEADERS",
]


# ---------------------------------------------------------------------------
# Tables for readers
# ---------------------------------------------------------------------------

#: Column and index names of the package's tables, as a reader should see them.
HEADERS = {
    "mu": "μ", "sigma0": "σ₀", "T": "T", "n": "n", "m": "m", "radius": "B′",
    "radius_rule": "B′ rule", "err_ftp": "error FTP", "err_ptf": "error PTF",
    "se_ftp": "s.e. FTP", "se_ptf": "s.e. PTF", "ratio": "ratio FTP/PTF",
    "ratio_lo": "95% CI low", "ratio_hi": "95% CI high",
    "p_ptf_active": "p̂ PTF active", "p_ftp_active": "p̂ FTP active",
    "p_ftp_active_curves": "p̂ FTP curve active", "MSE_FTP": "MSE FTP",
    "MSE_PTF": "MSE PTF", "p_PTF": "p̂ PTF", "alpha": "α", "eps": "ε", "delta": "δ",
    "kappa": "κ", "lambda_min": "λ_min", "lambda_max": "λ_max",
}
#: Columns that hold settings (shown as given, 0.1 rather than 0.100).
PARAMETERS = {"mu", "sigma0", "T", "n", "m", "radius", "alpha", "delta", "rho"}
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_GREEK = {"alpha": "α", "delta": "δ", "eps": "ε", "kappa": "κ", "lambda": "λ",
          "sigma0": "σ₀", "sigma": "σ", "tau": "τ", "theta": "θ", "rho": "ρ", "mu": "μ",
          "nu": "ν", "phi": "φ", "Phi": "Φ"}
_PRETTY: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(rf"(?<![A-Za-z]){w}(?![A-Za-z])"), g) for w, g in _GREEK.items()
] + [
    (re.compile(r"\^\((-?\d+)\)|\^(-?\d+)"),
     lambda m: (m.group(1) or m.group(2)).translate(_SUPERSCRIPT)),
    (re.compile(r"'"), "′"),
]


def pretty(name: str) -> str:
    """A plain-text column name made readable.

    Greek letters for their names, powers as superscripts
    (``tau^2 tr(A^-1)`` → ``τ² tr(A⁻¹)``), primes as ′.
    """
    name = HEADERS.get(name, name)
    for pattern, repl in _PRETTY:
        name = pattern.sub(repl, name)
    return name


def number(v: object, digits: int = 3) -> str:
    """A number as a reader should see it.

    Integers as integers, others to ``digits`` significant digits, very small or
    large ones as ``1.23 × 10⁻⁵``; NaN as "–".
    """
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not np.isfinite(v):
            return "–" if np.isnan(v) else ("∞" if v > 0 else "−∞")
        if v == 0:
            return "0"
        if v.is_integer() and abs(v) < 1e6:
            return str(int(v))
        exponent = int(np.floor(np.log10(abs(v))))
        if -3 <= exponent < 5:
            decimals = max(digits - 1 - exponent, 0)
            return f"{v:.{decimals}f}"
        mantissa = f"{v / 10 ** exponent:.{digits - 1}f}"
        if mantissa.startswith("10"):  # rounding carried into the next power of ten
            mantissa, exponent = f"{1:.{digits - 1}f}", exponent + 1
        return f"{mantissa} × 10{str(exponent).translate(_SUPERSCRIPT)}"
    return str(v)


def _cell_text(text: str) -> str:
    text = " ".join(str(text).split())
    return text if text else " "


def _escape(text: str) -> str:
    """Markdown's special characters in a data cell, outside $...$ math, escaped."""
    parts = re.split(r"(\$[^$]+\$)", str(text))
    return "".join(p if p.startswith("$") and p.endswith("$") and len(p) > 1
                   else re.sub(r"([\\`*_<\[\]])", r"\\\1", p) for p in parts)


class Table:
    """A table that the book renders as a numbered table (made by :func:`table`).

    With a caption it displays (in a notebook, or glued and pasted with ``{glue:md}``
    and ``:format: myst``) as a MyST ``list-table`` with that caption and an optional
    label (``name``), which Sphinx numbers "Table k.j". Without one it is a plain pipe
    table, to be pasted with ``{glue:md}`` inside a ``:::{table}`` directive whose
    caption is written in the prose. ``str()`` gives plain text.
    """

    def __init__(self, header_rows: list[list[str]], rows: list[list[str]],
                 caption: str | None = None, name: str | None = None) -> None:
        if caption is not None and not (isinstance(caption, str) and caption.strip()):
            raise ValueError("caption must be a non-empty string or None")
        if name is not None and not (isinstance(name, str) and name.strip()):
            raise ValueError("name must be a non-empty string or None")
        if name is not None and caption is None:
            raise ValueError("name needs a caption: label the {table} directive instead")
        width = {len(r) for r in header_rows + rows}
        if len(width) != 1:
            raise ValueError(f"every row must have the same number of cells, got {sorted(width)}")
        self.header_rows, self.rows, self.caption, self.name = header_rows, rows, caption, name

    def markdown(self) -> str:
        """The table as GitHub-flavoured Markdown."""
        if self.caption is None:
            head = [", ".join(x for x in col if x.strip()) or " "
                    for col in zip(*self.header_rows)]
            lines = ["| " + " | ".join(_cell_text(h) for h in head) + " |",
                     "|" + "|".join("---:" for _ in head) + "|"]
            lines += ["| " + " | ".join(_cell_text(c).replace("|", "\\|") for c in row) + " |"
                      for row in self.rows]
            return "\n".join(lines) + "\n"
        lines = [f":::{{list-table}} {' '.join(self.caption.split())}",
                 f":header-rows: {len(self.header_rows)}"]
        if self.name:
            lines.append(f":name: {self.name}")
        lines.append("")
        for row in self.header_rows + self.rows:
            for k, cell in enumerate(row):
                lines.append(("* - " if k == 0 else "  - ") + _cell_text(cell))
        lines.append(":::")
        return "\n".join(lines) + "\n"

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def __str__(self) -> str:
        table = self.header_rows + self.rows
        widths = [max(len(r[k]) for r in table) for k in range(len(table[0]))]
        out = [self.caption] if self.caption else []
        for i, row in enumerate(table):
            out.append("  ".join(c.rjust(w) for c, w in zip(row, widths)))
            if i == len(self.header_rows) - 1:
                out.append("  ".join("-" * w for w in widths))
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.__str__()


def table(data: pd.DataFrame | pd.Series, caption: str | None = None, *, name: str | None = None,
          index: bool | None = None, digits: int = 3, formats: dict | None = None,
          headers: dict | None = None) -> Table:
    """A DataFrame or Series as a numbered, captioned table: the one way the book makes a table.

    The result displays in a notebook (and glues, ``{glue:md}`` with ``:format: myst``) as
    a MyST ``list-table`` with the caption, which Sphinx numbers "Table k.j"; without a
    caption, as a plain pipe table to paste inside a ``:::{table}`` directive of the prose.
    Its ``markdown()`` is that text, and ``str()`` plain text.

    Parameters
    ----------
    data : pandas.DataFrame or pandas.Series
        The table; a Series becomes one column. Columns with two levels get two header
        rows (the upper label written once above its group).
    caption : str, optional
        The table's caption (MyST markdown: ``$...$`` math and roles allowed). Without
        one, a pipe table to paste into a ``:::{table}`` directive of the prose.
    name : str, optional
        Label for cross-references (``{numref}`name```).
    index : bool, optional
        Show the index as the first column; by default unless it is a plain range.
    digits : int
        Significant digits of the numbers (see :func:`number`).
    formats : dict, optional
        Column -> format string (``"{:.3f}"``) or callable, overriding :func:`number`.
    headers : dict, optional
        Column or index name -> header text, overriding :data:`HEADERS`.
    """
    if isinstance(data, pd.Series):
        data = data.to_frame(name=data.name if data.name is not None else " ")
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame or Series, got {type(data).__name__}")
    if data.empty:
        raise ValueError("data is empty: there is no table to show")
    formats, names = dict(formats or {}), {**HEADERS, **(headers or {})}

    def head(x: object) -> str:
        if isinstance(x, tuple):
            return " ".join(head(y) for y in x)
        if x in names:
            return names[x]
        if isinstance(x, (float, np.floating, int, np.integer)):
            return setting_text(x)
        return names[str(x)] if str(x) in names else pretty(str(x))

    if index is None:
        index = not isinstance(data.index, pd.RangeIndex)
    levels = data.columns.nlevels
    if levels > 2:
        raise ValueError(f"at most two levels of columns, got {levels}")
    if levels == 2:
        top, seen = [], None
        for a, _ in data.columns:
            top.append(head(a) if a != seen else "")
            seen = a
        header_rows = [top, [head(b) for _, b in data.columns]]
    else:
        header_rows = [[head(c) for c in data.columns]]
    if index:
        idx_names = [head(n) if n is not None else "" for n in data.index.names]
        idx_label = " · ".join(x for x in idx_names if x)
        header_rows = [[""] + r for r in header_rows[:-1]] + [[idx_label] + header_rows[-1]]
    rows = []
    for key, row in zip(data.index, data.itertuples(index=False)):
        cells = []
        for col, v in zip(data.columns, row):
            f = formats.get(col)
            if f is None and col in PARAMETERS:
                f = setting_text  # a setting, not an estimate: 0.1, not 0.100
            text = f(v) if callable(f) else f.format(v) if f else number(v, digits)
            cells.append(_escape(text))
        if index:
            keys = key if isinstance(key, tuple) else (key,)
            cells = [" · ".join(_escape(names.get(k, k)) if isinstance(k, str) else setting_text(k)
                                for k in keys)] + cells
        rows.append(cells)
    return Table(header_rows, rows, caption, name)


def pivot_n_by_mu_T(table1_frame: pd.DataFrame, value: str) -> pd.DataFrame:
    """One quantity of Table 1 as the paper lays it out: rows n, columns T within μ.

    ``table1_frame`` is :func:`dpfda_book.report.evidence.table1_frame`'s table; the columns carry two
    header levels ("μ = 0.1" above "T = 2"), for :func:`table`.
    """
    if value not in table1_frame.columns:
        raise ValueError(f"value must be a column of table1_frame(df), one of {list(table1_frame.columns)}")
    out = table1_frame.pivot_table(index="n", columns=["mu", "T"], values=value)
    out.columns = pd.MultiIndex.from_tuples([(f"μ = {setting_text(mu)}", f"T = {int(T)}")
                                             for mu, T in out.columns])
    return out


# ---------------------------------------------------------------------------


def judgement_table(judgement: Judgement) -> Table:
    """A claim's registry record beside this run's result, as a captioned table for a chapter.

    ``judgement`` is a :class:`~dpfda_book.report.claim_verdicts.Judgement`
    (:func:`dpfda_book.report.claim_verdicts.judge`).
    The claim's verdict is the matrix's (chapter ``robustness``); the table shows the
    evidence of one run, one draw of the latent curves (the conditional design).
    """
    return table(judgement.record(), f"The registry's record of {judgement.claim.name} "
                 f"(`dpfda_book.report.claims`) and the test on this run: one draw of the curves, "
                 f"conditional design ({judgement.law} law; {judgement.family_text()}).")
