"""Figures a reader can read: what a drawn figure gets wrong, from its own boxes.

:func:`layout_problems` lists them (text too small or overlapping, a figure too wide,
series alike in colour and marker, bands too thin to see, ...).
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

__all__ = [
    "colour_distance",
    "layout_problems",
    "MIN_COLOUR_DELTA_E",
    "MIN_BAND_PX",
]


# Figures a reader can read: what a drawn figure gets wrong, from its own boxes
# ---------------------------------------------------------------------------

#: Two series of one figure whose colours are closer than this (CIE76 ΔE in CIELAB) look
#: alike to many readers (and in print); each must then differ in marker or line style too.
MIN_COLOUR_DELTA_E = 30.0
#: A filled band thinner than this on average (display pixels at :data:`~dpfda_book.report.style.DPI`) is not seen.
MIN_BAND_PX = 2.5


def _cielab(colour: Any) -> np.ndarray:
    """CIELAB (D65) of a matplotlib colour."""
    rgb = np.asarray(mpl.colors.to_rgb(colour), dtype=float)
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ lin / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def colour_distance(a: Any, b: Any) -> float:
    """CIE76 colour difference ΔE between two matplotlib colours (0: the same colour)."""
    return float(np.linalg.norm(_cielab(a) - _cielab(b)))


def _data_lines(ax: Any) -> list:
    """Lines drawn in data coordinates (not axhline/axvline references), shown, with data."""
    return [ln for ln in ax.lines if ln.get_visible() and ln.get_transform().contains_branch(ax.transData)
            and len(ln.get_xydata()) and not ln.get_label().startswith("_child")
            and (ln.get_linestyle() not in ("None", "", " ") or ln.get_marker() not in (None, "None", "", " "))]


def _data_bands(ax: Axes) -> list:
    return [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_visible()
            and len(c.get_paths())]


def _legend_colours(legend: Any) -> list:
    colours = []
    for handle in getattr(legend, "legend_handles", None) or getattr(legend, "legendHandles", []):
        if handle is None:
            continue
        for getter in ("get_color", "get_facecolor", "get_edgecolor"):
            if hasattr(handle, getter):
                value = getattr(handle, getter)()
                value = np.asarray(mpl.colors.to_rgba_array(value))
                colours += [tuple(v[:3]) for v in value if v[3] > 0]
    return colours


def _series_colour(artist: Any) -> Any:
    if isinstance(artist, Line2D):
        return mpl.colors.to_rgb(artist.get_color())
    face = mpl.colors.to_rgba_array(artist.get_facecolor())
    return tuple(face[0][:3]) if len(face) else None


def _overlap(a: Bbox, b: Bbox, pad: float = 0.5) -> bool:
    return (a.x0 + pad < b.x1 and b.x0 + pad < a.x1 and a.y0 + pad < b.y1 and b.y0 + pad < a.y1)


def _band_thickness(collection: PolyCollection) -> float:
    """Mean thickness (display px) of a filled band: its area over its width."""
    area, width = 0.0, 0.0
    for path in collection.get_paths():
        xy = collection.get_transform().transform(path.vertices)
        x, y = xy[:, 0], xy[:, 1]
        area += 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
        width += float(np.ptp(x))
    return area / width if width > 0 else 0.0


def layout_problems(fig: Any) -> list[str]:
    """What a reader would trip over in ``fig``, measured on matplotlib's own bounding boxes.

    The figure is drawn, then checked for:

    * **colliding text**: titles, axis labels, the figure's title and the legends must not
      overlap one another, and no text may run outside the figure;
    * **a legend over the data**: no point or line vertex of a panel's data, and no filled
      band, under a legend box;
    * **unnamed colours**: when a figure has legends, every colour of every panel's data is
      named by a legend of that panel or of the figure (a legend in a switched-off spare
      panel counts as the figure's); a panel whose data only another panel's legend explains
      is reported;
    * **mixed colours**: two translucent bands of different colours that overlap in one
      panel make a third colour no legend names;
    * **invisible data**: a filled band thinner than ``MIN_BAND_PX`` pixels on average;
    * **hidden series**: a series with markers of which half the points or more sit under
      another series' markers (within a marker's radius);
    * **look-alike series**: two labelled series closer in colour than
      ``MIN_COLOUR_DELTA_E`` with the same marker and line style.

    Returns a list of sentences, empty when nothing was found.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    data_axes = [ax for ax in fig.axes if ax.axison and ax.get_label() != "<colorbar>"]
    boxes = _text_boxes(fig, renderer)
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    legends += [(None, lg) for lg in fig.legends]
    return (_text_outside(fig, boxes) + _text_collisions(boxes)
            + _text_over_ticks(fig, renderer, boxes, data_axes)
            + _legends_over_data(fig, renderer, legends, data_axes)
            + _unnamed_colours(fig, legends, data_axes)
            + _mixed_colours(fig, renderer, data_axes)
            + _thin_bands(fig, data_axes)
            + _hidden_series(fig, data_axes)
            + _look_alike_series(fig, data_axes))


def _panel_name(fig: Figure, ax: Axes) -> str:
    """A panel as a sentence names it: "panel 2 (μ = 1)"."""
    title = ax.get_title() or ax.get_title("left") or ax.get_ylabel()
    k = fig.axes.index(ax) + 1
    return f"panel {k}" + (f" ({title})" if title else "")


def _series_name(fig: Any, line: Any) -> str:
    """A line's label; an errorbar's line is named by its container."""
    for ax in fig.axes:
        for container in ax.containers:
            if line in container.get_children():
                return container.get_label()
    return line.get_label()


def _text_boxes(fig: Any, renderer: Any) -> list:
    """(what, window box) of the figure's title, the panels' titles and axis labels, the legends."""
    boxes = []
    if fig._suptitle is not None and fig._suptitle.get_text():
        boxes.append(("figure title", fig._suptitle.get_window_extent(renderer)))
    for ax in fig.axes:
        for loc in ("left", "center", "right"):
            t = ax._left_title if loc == "left" else ax.title if loc == "center" else ax._right_title
            if t.get_visible() and t.get_text():
                boxes.append((f"title {t.get_text()!r}", t.get_window_extent(renderer)))
        if ax.axison:
            for label, what in ((ax.xaxis.label, "x label"), (ax.yaxis.label, "y label")):
                if label.get_visible() and label.get_text():
                    boxes.append((f"{what} {label.get_text()!r}", label.get_window_extent(renderer)))
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            boxes.append((f"legend of {_panel_name(fig, ax)}", legend.get_window_extent(renderer)))
    for legend in fig.legends:
        boxes.append(("figure legend", legend.get_window_extent(renderer)))
    return boxes


def _text_outside(fig: Figure, boxes: list[tuple[str, Bbox]]) -> list[str]:
    """Text that runs outside the figure."""
    frame = fig.bbox
    return [f"{what} runs outside the figure" for what, box in boxes
            if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1 or box.y0 < frame.y0 - 1 or box.y1 > frame.y1 + 1]


def _text_collisions(boxes: list[tuple[str, Bbox]]) -> list[str]:
    """Text boxes that overlap one another."""
    return [f"{a} overlaps {b}" for i, (a, box_a) in enumerate(boxes)
            for b, box_b in boxes[i + 1:] if _overlap(box_a, box_b)]


def _drawn_ticks(ax: Axes, renderer: Any) -> list:
    """The boxes of the tick labels matplotlib draws: those inside the axis' view limits."""
    box_ax = ax.get_window_extent(renderer)
    ticks = [b for t in ax.get_xticklabels() if t.get_visible() and t.get_text()
             for b in [t.get_window_extent(renderer)] if box_ax.x0 - 1 <= (b.x0 + b.x1) / 2 <= box_ax.x1 + 1]
    ticks += [b for t in ax.get_yticklabels() if t.get_visible() and t.get_text()
              for b in [t.get_window_extent(renderer)] if box_ax.y0 - 1 <= (b.y0 + b.y1) / 2 <= box_ax.y1 + 1]
    return ticks


def _text_over_ticks(fig: Figure, renderer: Any, boxes: list[tuple[str, Bbox]], data_axes: list[Axes]) -> list[str]:
    """Tick labels under a title, a legend or another panel's text."""
    problems = []
    for ax in data_axes:
        ticks = _drawn_ticks(ax, renderer)
        for what, box in boxes:
            if what.startswith("legend of") or what.startswith("x label") or what.startswith("y label"):
                continue
            if any(_overlap(box, tick) for tick in ticks):
                problems.append(f"{what} overlaps the tick labels of {_panel_name(fig, ax)}")
    return problems


def _covered_points(box: Bbox, ax: Axes) -> int:
    """How many data vertices and filled band paths of ``ax`` lie under ``box`` (display units)."""
    covered = 0
    for line in _data_lines(ax):
        xy = line.get_transform().transform(line.get_xydata())
        xy = xy[np.isfinite(xy).all(axis=1)]
        covered += int(np.sum((xy[:, 0] > box.x0) & (xy[:, 0] < box.x1)
                              & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)))
    for band in _data_bands(ax):
        covered += sum(bool(p.intersects_bbox(box.transformed(band.get_transform().inverted()),
                                              filled=True)) for p in band.get_paths())
    return covered


def _legends_over_data(fig: Figure, renderer: Any, legends: list[tuple[Axes | None, Legend]],
                       data_axes: list[Axes]) -> list[str]:
    """Legends that cover a point, a line vertex or a filled band of a panel's data."""
    problems = []
    for owner, legend in legends:
        box = legend.get_window_extent(renderer).shrunk(0.98, 0.98)
        for ax in data_axes:
            if _overlap(box, ax.get_window_extent(renderer), pad=0) and _covered_points(box, ax):
                where = "its own panel" if owner is ax else _panel_name(fig, ax)
                problems.append(f"the legend of {_panel_name(fig, owner) if owner else 'the figure'} "
                                f"covers data of {where}")
    return problems


def _unnamed_colours(fig: Figure, legends: list[tuple[Axes | None, Legend]], data_axes: list[Axes]) -> list[str]:
    """Colours of a panel's data that no legend of the panel or of the figure names (if any legend)."""
    if not legends:
        return []
    problems = []
    figure_level = [lg for ax, lg in legends if ax is None or not ax.axison]
    named_figure = [c for lg in figure_level for c in _legend_colours(lg)]
    for ax in data_axes:
        named = named_figure + (_legend_colours(ax.get_legend()) if ax.get_legend() else [])
        for artist in _data_lines(ax) + _data_bands(ax):
            colour = _series_colour(artist)
            if colour is None or any(colour_distance(colour, c) < 1.0 for c in named):
                continue
            kind = "band" if artist in ax.collections else "line"
            problems.append(f"{_panel_name(fig, ax)}: a {kind} in {mpl.colors.to_hex(colour)} that no legend "
                            "of this panel or of the figure names")
    return problems


def _translucent(band: Any) -> bool:
    """Whether a band is drawn with an alpha strictly between 0 and 1."""
    alpha = band.get_alpha() if band.get_alpha() is not None else mpl.colors.to_rgba_array(band.get_facecolor())[0][3]
    return 0 < alpha < 1


def _paths_meet(a: PolyCollection, b: PolyCollection) -> bool:
    """Whether two collections' filled paths intersect (display units)."""
    return any(pa.intersects_path(pb, filled=True)
               for pa in (p.transformed(a.get_transform()) for p in a.get_paths())
               for pb in (p.transformed(b.get_transform()) for p in b.get_paths()))


def _mixed_colours(fig: Figure, renderer: Any, data_axes: list[Axes]) -> list[str]:
    """Translucent bands of different colours overlapping: a mixed colour without a name."""
    problems = []
    for ax in data_axes:
        bands = [b for b in _data_bands(ax) if _translucent(b)]
        for i, a in enumerate(bands):
            for b in bands[i + 1:]:
                ca, cb = _series_colour(a), _series_colour(b)
                if ca is None or cb is None or colour_distance(ca, cb) < 1.0:
                    continue
                if _overlap(a.get_window_extent(renderer), b.get_window_extent(renderer)) and _paths_meet(a, b):
                    problems.append(f"{_panel_name(fig, ax)}: translucent bands in {mpl.colors.to_hex(ca)} and "
                                    f"{mpl.colors.to_hex(cb)} overlap, mixing a colour no legend names")
    return problems


def _thin_bands(fig: Figure, data_axes: list[Axes]) -> list[str]:
    """Bands too thin to see."""
    problems = []
    for ax in data_axes:
        for band in _data_bands(ax):
            thickness = _band_thickness(band)
            if thickness < MIN_BAND_PX:
                problems.append(f"{_panel_name(fig, ax)}: a band ({band.get_label()!r}) is {thickness:.1f} px "
                                "thick on average: a reader sees nothing")
    return problems


def _marked_lines(ax: Axes) -> list:
    """The panel's data lines with markers, an errorbar's caps left out (part of its own series)."""
    caps = {cap for c in ax.containers if hasattr(c, "lines") and len(c.lines) > 1
            for cap in (c.lines[1] or ())}
    return [ln for ln in _data_lines(ax) if ln.get_marker() not in (None, "None", "", " ") and ln not in caps]


def _hidden_series(fig: Figure, data_axes: list[Axes]) -> list[str]:
    """Series with markers of which half the points or more sit under another series' markers."""
    px_per_pt = fig.dpi / 72
    problems = []
    for ax in data_axes:
        lines = _marked_lines(ax)
        for i, low in enumerate(lines):
            xy_low = low.get_transform().transform(low.get_xydata())
            for high in lines[i + 1:]:
                if high.get_zorder() < low.get_zorder():
                    continue
                xy_high = high.get_transform().transform(high.get_xydata())
                radius = 0.5 * max(low.get_markersize(), 1.0) * px_per_pt
                d = np.min(np.linalg.norm(xy_low[:, None, :] - xy_high[None, :, :], axis=2), axis=1)
                if len(d) and np.mean(d < radius) >= 0.5:
                    problems.append(f"{_panel_name(fig, ax)}: {_series_name(fig, low)!r} is hidden under "
                                    f"{_series_name(fig, high)!r} at {int(np.sum(d < radius))} of {len(d)} points")
    return problems


def _look_alike_series(fig: Figure, data_axes: list[Axes]) -> list[str]:
    """Labelled series closer in colour than MIN_COLOUR_DELTA_E with the same marker and line style."""
    series: dict[str, Any] = {}
    for ax in data_axes:
        for ln in _data_lines(ax):
            if not _series_name(fig, ln).startswith("_"):
                series.setdefault(_series_name(fig, ln), ln)
    items = list(series.items())
    problems = []
    for i, (la, a) in enumerate(items):
        for lb, b in items[i + 1:]:
            if (colour_distance(a.get_color(), b.get_color()) < MIN_COLOUR_DELTA_E
                    and a.get_marker() == b.get_marker() and a.get_linestyle() == b.get_linestyle()):
                problems.append(f"{la!r} and {lb!r} look alike: colours ΔE = "
                                f"{colour_distance(a.get_color(), b.get_color()):.0f} with the same marker "
                                "and line style")
    return problems
