"""What the curator, and nobody else, looks at: figures computed from the data, before and after a release.

:func:`curator_report` is the report a curator reads *before* the noise is drawn: the values
clipped by the band, the fits shrunk onto the ball, the subjects whose points cannot
determine the space, the data's range against the band and, for a periodic space, points at
both ends of the domain (the same instant).  It takes the curves as the mechanism would be
given them, on a common grid or each subject on its own points, so the report is the same
with or without a grid.  :func:`curator_diagnostics` is the same report after a release,
with one more line: how far the release lies from what these curves give, in units of the
noise.  :func:`diagnostics_text` writes either for the curator's terminal.

Computed from the data without noise, none of it is private, none of it is part of the
record :func:`dpfda.practice.publish.release_record` publishes, and none of it changes
what is released: the functions only read the curves.  What a curator may do after a
warning is a choice with a price (the book's chapter "Releasing your own data"): releasing
as planned keeps every choice public; changing a choice *because of* these figures makes
it a function of the data that no μ covers; a second release composes with the first.
Also importable from :mod:`dpfda.practice.publish`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..maths.curves import Curves, as_curves
from ..maths.fitting import BallLeastSquares
from ..maths.spaces import FourierSpace, GridGeometry, OrthonormalSpace
from ..mechanisms.irregular import irregular_fit_mean
from ..mechanisms.pipelines import ftp_fit_mean, ptf_clipped_mean
from ..mechanisms.release import Release
from .realdata import PublicFrame

__all__ = ["CLIP_WARNING_SHARE", "SHRINK_WARNING_SHARE", "curator_diagnostics", "curator_report",
           "diagnostics_text"]

CLIP_WARNING_SHARE = 0.05
"""Share of the values clipped above which the report warns (data in other units?)."""
SHRINK_WARNING_SHARE = 0.25
"""Share of the curves whose fit is shrunk onto the ball above which the report warns."""
_NOT_PRIVATE = ("computed from the data without noise: NOT private, for the curator only; never "
                "publish these figures")


def curator_report(curves: ArrayLike | Curves, geometry: GridGeometry, radius: float, *,
                   frame: PublicFrame | None = None, clip: ArrayLike | None = None) -> dict:
    """What the curator should look at before a release; computed from the data, so never published.

    Parameters
    ----------
    curves : array (n, T) or Curves
        The curves, in the data's units if ``frame`` is given (mapped with
        :meth:`dpfda.PublicFrame.to_unit`, as the mechanism will be given them), otherwise
        exactly as the mechanism will be given them: an array on ``geometry``'s grid, or a
        :class:`dpfda.Curves` (common grid, or each subject on its own points; then
        ``geometry`` is the layout grid of the release and its space orthonormal).
    geometry : GridGeometry
        The release's space on its grid (``mechanism.geometry``, ``release.geometry``).
    radius : float
        B' of the curves given to the mechanism (with a frame: the frame's mapped units).
    frame : PublicFrame, optional
        The public frame the curves will be mapped with.
    clip : float or array (T,), optional
        PTF's clipping bounds (of the mapped curves with a frame).

    Returns
    -------
    dict
        ``n`` and ``values`` (the number of observed values); ``clipped`` (values changed
        by the frame's band or PTF's clip) and ``clipped_share``; ``shrunk`` (curves whose
        least-squares fit, W = I, lies outside the ball of radius B': FTP's own map; for PTF
        a measure of whether B' suits the curves) and ``shrunk_share``; ``too_few_points``
        (subjects on their own points whose points cannot determine the space: FTP fits
        them as zero); ``data_range`` ([min, max] of the values, in the data's units),
        ``band`` ([lowest lower, highest upper] of the frame, or ±max c_j for PTF without a
        frame; ``None`` otherwise) and ``outside_band`` (values outside it, point by point);
        ``both_ends`` (periodic space only: subjects observed at both ends of the domain,
        which the space takes for one instant); ``noise_distance`` (``None``: see
        :func:`curator_diagnostics`); ``warnings`` (a list of sentences) and ``note``
        (that all of this is not private).
    """
    if frame is not None and not isinstance(frame, PublicFrame):
        raise TypeError(f"frame must be a dpfda PublicFrame, got {type(frame).__name__}")
    if not isinstance(geometry, GridGeometry):
        raise TypeError(f"geometry must be a space's geometry on a grid, got {type(geometry).__name__}")
    c = None if clip is None else np.asarray(clip, dtype=float)
    curves = as_curves(curves, geometry.grid, name="curves")  # an array: on geometry's grid
    if curves.common and np.array_equal(curves.grid, geometry.grid):
        X = curves.values
        assert X is not None  # a common grid
        if X.ndim != 2:
            raise ValueError(f"curves must be one dataset (n, T), got shape {X.shape}")
        parts = [_on_grid(X, frame, geometry, radius, c)]
    else:
        if c is not None:
            raise ValueError("PTF's clip needs the curves on the release's grid")
        parts = [_own_points(curves, frame, geometry, radius)]
    n = sum(p["n"] for p in parts)
    count = sum(p["values"] for p in parts)
    out = {
        "n": n, "values": count,
        "clipped": sum(p["clipped"] for p in parts),
        "shrunk": sum(p["shrunk"] for p in parts),
        "too_few_points": sum(p["too_few"] for p in parts),
        "data_range": [min(p["min"] for p in parts), max(p["max"] for p in parts)],
        "band": None, "outside_band": None,
        "both_ends": sum(p["both_ends"] for p in parts) if isinstance(geometry.space, FourierSpace) else None,
        "noise_distance": None, "warnings": [], "note": _NOT_PRIVATE,
    }
    out["clipped_share"] = out["clipped"] / count
    out["shrunk_share"] = out["shrunk"] / n
    if frame is not None:
        out["band"] = [float(frame.lower.min()), float(frame.upper.max())]
        out["outside_band"] = sum(p["outside"] for p in parts)
    elif c is not None:
        out["band"] = [float(-c.max()), float(c.max())]
        out["outside_band"] = sum(p["outside"] for p in parts)
    _warn(out, radius, frame)
    return out


def _on_grid(X: np.ndarray, frame: PublicFrame | None, geometry: GridGeometry, radius: float,
             c: np.ndarray | None) -> dict:
    """The report's counts for curves (n, T) on the release's grid."""
    clipped = np.zeros(X.shape, dtype=bool)
    outside = 0
    if frame is not None:
        if not np.array_equal(frame.grid, geometry.grid):
            raise ValueError("the release is not made on this frame's grid")
        r, half = frame.centre_at(frame.grid), frame.scale * frame.clip
        clipped |= (X < r - half) | (X > r + half)
        outside = int(np.count_nonzero((X < frame.lower) | (X > frame.upper)))
        Y = frame.to_unit(X)
    else:
        Y = X
    if c is not None:
        beyond = np.abs(Y) > c
        clipped |= beyond
        if frame is None:
            outside = int(np.count_nonzero(beyond))
    _, active = ftp_fit_mean(Y, geometry, float(radius))  # FTP's own fits: who reaches the ball
    ends = bool(geometry.grid[0] == 0.0 and geometry.grid[-1] == 1.0)
    return {"n": X.shape[0], "values": X.size, "clipped": int(np.count_nonzero(clipped)),
            "shrunk": int(np.count_nonzero(active)), "too_few": 0, "min": float(X.min()),
            "max": float(X.max()), "outside": outside, "both_ends": X.shape[0] if ends else 0}


def _own_points(curves: Curves, frame: PublicFrame | None, geometry: GridGeometry, radius: float) -> dict:
    """The report's counts for curves on their own points (each subject fitted on the points it has)."""
    space = geometry.space
    if not isinstance(space, OrthonormalSpace):
        raise TypeError("curves on their own points need an orthonormal space "
                        "(an OrthonormalSpace such as LegendreSpace)")
    if frame is not None and tuple(curves.domain) != (frame.domain.start, frame.domain.stop):
        raise ValueError(f"the curves' domain {tuple(curves.domain)} is not the frame's "
                         f"({frame.domain.start:g}, {frame.domain.stop:g})")
    subjects = curves.subjects()
    clipped = outside = both_ends = count = 0
    lo = hi = None
    groups: dict = {}
    band: dict[bytes, tuple[np.ndarray, ...]] = {}  # the band at each set of points, computed once
    mapped = []
    for i, (t, x) in enumerate(subjects):
        count += x.size
        lo = float(x.min()) if lo is None else min(lo, float(x.min()))
        hi = float(x.max()) if hi is None else max(hi, float(x.max()))
        both_ends += int(t[0] == 0.0 and t[-1] == 1.0)
        if frame is not None:
            key = t.tobytes()
            if key not in band:
                band[key] = (frame.centre_at(t), frame.half_width_at(t), np.interp(t, frame.grid, frame.lower),
                             np.interp(t, frame.grid, frame.upper))
            r, half, band_lo, band_hi = band[key]
            clipped += int(np.count_nonzero((x < r - half) | (x > r + half)))
            outside += int(np.count_nonzero((x < band_lo) | (x > band_hi)))
            x = (np.clip(x, r - half, r + half) - r) / frame.scale
        mapped.append(x)
        groups.setdefault(t.tobytes(), []).append(i)
    shrunk = too_few = 0
    for rows in groups.values():  # subjects with the same points share one design
        t = subjects[rows[0]][0]
        Phi = space.basis(t)
        lam = np.linalg.eigvalsh(Phi.T @ Phi) if t.size >= space.m else np.zeros(1)
        if t.size < space.m or lam[0] <= 1e-12 * max(lam[-1], 1.0):  # FTP fits these as zero
            too_few += len(rows)
            continue
        fit = BallLeastSquares(Phi).solve(np.stack([mapped[i] for i in rows]), float(radius))
        shrunk += int(np.count_nonzero(fit.active))
    return {"n": len(subjects), "values": count, "clipped": clipped, "shrunk": shrunk, "too_few": too_few,
            "min": lo, "max": hi, "outside": outside, "both_ends": both_ends}


def _warn(out: dict, radius: float, frame: PublicFrame | None) -> None:
    warn = out["warnings"]
    if out["clipped_share"] > CLIP_WARNING_SHARE:
        warn.append(f"{out['clipped_share']:.0%} of the values were clipped (more than "
                    f"{CLIP_WARNING_SHARE:.0%}): are the data in the units of the band or clip?")
    if out["shrunk_share"] > SHRINK_WARNING_SHARE:
        warn.append(f"{out['shrunk_share']:.0%} of the curves' fits were shrunk onto the ball of radius "
                    f"B' = {float(radius):g} (more than {SHRINK_WARNING_SHARE:.0%}): is B' in the "
                    "units of the curves given to the mechanism"
                    + (" (mapped by the frame)?" if frame is not None else "?"))
    if out["too_few_points"]:
        warn.append(f"{out['too_few_points']} subject(s) have too few points to determine the space: FTP "
                    "fits each of them as the zero curve (a public rule; it pulls the mean towards "
                    + ("the band's centre)" if frame is not None else "zero)"))
    if out["both_ends"]:
        warn.append(f"{out['both_ends']} curve(s) are observed at both ends of the domain, which a periodic "
                    "space takes for one instant: is the domain one period long (for months 1 to 12: "
                    "domain=(1, 13), or --domain 1,13 on the command line)?")


def curator_diagnostics(release: Release, curves: ArrayLike | Curves, *,
                        frame: PublicFrame | None = None) -> dict:
    """The curator's report after a release (:func:`curator_report`), and whether it was made from these curves.

    These figures are functions of the data with no noise: they are not private and are
    not part of the release or its record (:func:`~dpfda.practice.publish.release_record`).
    They show a release that is private but wrong: values clipped because the data are
    in other units than the band, fits shrunk because B' is far below the curves' size,
    or a release that was not made from these curves (data given to the mechanism
    without the frame's map).

    Parameters
    ----------
    release : Release
        One release of :func:`dpfda.ftp` or :func:`dpfda.ptf`.
    curves : array (n, T) or Curves
        The curves, in the data's units if ``frame`` is given (they are mapped with
        :meth:`dpfda.PublicFrame.to_unit`, as the mechanism should have been given them),
        otherwise exactly as given to the mechanism.
    frame : PublicFrame, optional
        The public frame of the release.

    Returns
    -------
    dict
        :func:`curator_report`'s, with ``noise_distance``: the squared distance of the
        released coordinates from these curves' summary in units of the noise, over the
        number of coordinates (about 1 when the release was made from them; ``None`` for
        PTF without its noisy means).
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpfda Release, got {type(release).__name__}")
    if release.shape != ():
        raise ValueError(f"release must be one release, got repetitions of shape {release.shape}")
    if frame is not None and not isinstance(frame, PublicFrame):
        raise TypeError(f"frame must be a dpfda PublicFrame, got {type(frame).__name__}")
    if frame is not None and not np.array_equal(frame.grid, release.geometry.grid):
        raise ValueError("the release was not made on this frame's grid")
    curves = as_curves(curves, release.geometry.grid, name="curves")  # an array: on the release's grid
    out = curator_report(curves, release.geometry, float(release.radius), frame=frame, clip=release.clip)
    X = curves.values if curves.common and np.array_equal(curves.grid, release.grid) else None
    if X is None:  # FTP on the subjects' own points: its own mean of the fits
        mapped = frame.to_unit(curves) if frame is not None else curves
        mean_fit = irregular_fit_mean(mapped, release.space, float(release.radius))
        offset = (np.asarray(release.coef) - mean_fit) / release.noise_scale
    elif release.method == "ftp":
        Y = frame.to_unit(X) if frame is not None else X
        mean_fit, _ = ftp_fit_mean(Y, release.geometry, float(release.radius))
        offset = (np.asarray(release.coef) - mean_fit) / release.noise_scale
    elif release.method == "ptf" and release.noisy_means is not None:
        Y = frame.to_unit(X) if frame is not None else X
        clip = np.asarray(release.clip, dtype=float)
        offset = (np.asarray(release.noisy_means) - ptf_clipped_mean(Y, clip)) / release.noise_scale
    else:
        return out
    k = offset.size
    out["noise_distance"] = float(np.sum(offset**2) / k)
    # Laurent–Massart: P(chi2_k > k + 2 sqrt(20 k) + 40) <= e^-20.
    if np.sum(offset**2) > k + 2.0 * np.sqrt(20.0 * k) + 40.0:
        out["warnings"].append(
            f"the release lies {np.sqrt(np.sum(offset**2)):.3g} noise standard deviations from what these "
            f"curves give ({k} coordinates; a release made from them would lie about {np.sqrt(k):.2g}): it "
            "was not made from these curves"
            + (" mapped by this frame (frame.to_unit)?" if frame is not None else "?"))
    return out


def diagnostics_text(diagnostics: dict) -> str:
    """:func:`curator_report` or :func:`curator_diagnostics` as lines for the curator's terminal (stderr)."""
    d = diagnostics
    lines = [f"dpfda: curator's diagnostics ({d['note']}):",
             f"  values clipped: {d['clipped']} of {d['values']} ({d['clipped_share']:.1%})",
             f"  fits shrunk onto the ball of radius B': {d['shrunk']} of {d['n']} ({d['shrunk_share']:.1%})",
             f"  data range: {d['data_range'][0]:.6g} to {d['data_range'][1]:.6g}"
             + ("" if d["band"] is None else
                f"; band {d['band'][0]:.6g} to {d['band'][1]:.6g}, {d['outside_band']} values outside it")]
    if d.get("too_few_points"):
        lines.append(f"  subjects with too few points for the space (fitted as zero): {d['too_few_points']}")
    if d.get("both_ends"):
        lines.append(f"  curves observed at both ends of a periodic domain: {d['both_ends']}")
    if d["noise_distance"] is not None:
        lines.append(f"  release vs these curves: {d['noise_distance']:.3g} (squared noise units per "
                     "coordinate; about 1 expected)")
    lines += [f"dpfda: WARNING: {w}" for w in d["warnings"]]
    return "\n".join(lines)
