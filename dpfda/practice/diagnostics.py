"""What the curator, and nobody else, looks at after a release: figures computed from the data.

:func:`curator_diagnostics` counts the values clipped and the fits shrunk onto the ball,
sets the data's range against the band, and measures how far the release lies from what
these curves give; :func:`diagnostics_text` writes it for the curator's terminal.
Computed from the data without noise, none of it is private, and none of it is part of
the record :func:`dpfda.practice.publish.release_record` publishes.  Also importable
from :mod:`dpfda.practice.publish`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_data
from ..mechanisms.pipelines import Release, ftp_fit_mean, ptf_clipped_mean
from .realdata import PublicFrame

__all__ = ["CLIP_WARNING_SHARE", "SHRINK_WARNING_SHARE", "curator_diagnostics", "diagnostics_text"]

CLIP_WARNING_SHARE = 0.05
"""Share of the values clipped above which :func:`curator_diagnostics` warns (data in other units?)."""
SHRINK_WARNING_SHARE = 0.25
"""Share of the curves whose fit is shrunk onto the ball above which :func:`curator_diagnostics` warns."""
_NOT_PRIVATE = ("computed from the data without noise: NOT private, for the curator only; never "
                "publish these figures")


def curator_diagnostics(release: Release, curves: ArrayLike, *,
                        frame: PublicFrame | None = None) -> dict:
    """What the curator should look at after a release; computed from the data, so never published.

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
    curves : array (n, T)
        The curves, in the data's units if ``frame`` is given (they are mapped with
        :meth:`dpfda.PublicFrame.to_unit`, as the mechanism should have been given them),
        otherwise exactly as given to the mechanism.
    frame : PublicFrame, optional
        The public frame of the release.

    Returns
    -------
    dict
        ``n`` and ``values`` (n·T); ``clipped`` (values changed by the frame's band or PTF's
        clip) and ``clipped_share``; ``shrunk`` (curves whose least-squares fit, W = I, is
        shrunk onto the ball of radius B': FTP's own map; for PTF a measure of whether B'
        suits the curves) and ``shrunk_share``; ``data_range`` ([min, max] of the curves,
        in the data's units), ``band`` ([lowest lower, highest upper] of the frame, or
        ±max c_j for PTF without a frame; ``None`` otherwise) and ``outside_band`` (values
        outside it, point by point); ``noise_distance`` (the squared distance of the
        released coordinates from these curves' summary in units of the noise, over the
        number of coordinates: about 1 when the release was made from them);
        ``warnings`` (a list of sentences) and ``note`` (that all of this is not private).
    """
    if not isinstance(release, Release):
        raise TypeError(f"release must be a dpfda Release, got {type(release).__name__}")
    if release.shape != ():
        raise ValueError(f"release must be one release, got repetitions of shape {release.shape}")
    if frame is not None and not isinstance(frame, PublicFrame):
        raise TypeError(f"frame must be a dpfda PublicFrame, got {type(frame).__name__}")
    geometry = release.geometry
    X = check_data(curves, geometry.T, "curves")
    if X.ndim != 2:
        raise ValueError(f"curves must be one dataset (n, T), got shape {X.shape}")
    n, T = X.shape
    clipped = np.zeros(X.shape, dtype=bool)
    band = outside = None
    if frame is not None:
        if not np.array_equal(frame.grid, geometry.grid):
            raise ValueError("the release was not made on this frame's grid")
        r = frame.geometry.values(frame.reference)
        half = frame.scale * frame.clip
        clipped |= (X < r - half) | (X > r + half)
        band = [float(frame.lower.min()), float(frame.upper.max())]
        outside = int(np.count_nonzero((X < frame.lower) | (X > frame.upper)))
        Y = frame.to_unit(X)
    else:
        Y = X
    if release.clip is not None:
        clip = np.asarray(release.clip, dtype=float)
        beyond = np.abs(Y) > clip
        clipped |= beyond
        if frame is None:
            band = [float(-clip.max()), float(clip.max())]
            outside = int(np.count_nonzero(beyond))
    mean_fit, active = ftp_fit_mean(Y, geometry, float(release.radius))
    if release.method == "ftp":
        offset = (np.asarray(release.coef) - mean_fit) / release.noise_scale
    elif release.method == "ptf" and release.noisy_means is not None:
        offset = (np.asarray(release.noisy_means) - ptf_clipped_mean(Y, clip)) / release.noise_scale
    else:
        offset = None
    n_clipped, n_shrunk = int(np.count_nonzero(clipped)), int(np.count_nonzero(active))
    out = {
        "n": n, "values": n * T,
        "clipped": n_clipped, "clipped_share": n_clipped / (n * T),
        "shrunk": n_shrunk, "shrunk_share": n_shrunk / n,
        "data_range": [float(X.min()), float(X.max())], "band": band, "outside_band": outside,
        "noise_distance": None if offset is None else float(np.sum(offset**2) / offset.size),
        "warnings": [], "note": _NOT_PRIVATE,
    }
    warn = out["warnings"]
    if out["clipped_share"] > CLIP_WARNING_SHARE:
        warn.append(f"{out['clipped_share']:.0%} of the values were clipped (more than "
                    f"{CLIP_WARNING_SHARE:.0%}): are the data in the units of the band or clip?")
    if out["shrunk_share"] > SHRINK_WARNING_SHARE:
        warn.append(f"{out['shrunk_share']:.0%} of the curves' fits were shrunk onto the ball of radius "
                    f"B' = {float(release.radius):g} (more than {SHRINK_WARNING_SHARE:.0%}): is B' in the "
                    "units of the curves given to the mechanism"
                    + (" (mapped by the frame)?" if frame is not None else "?"))
    if offset is not None:
        k = offset.size
        # Laurent–Massart: P(chi2_k > k + 2 sqrt(20 k) + 40) <= e^-20.
        if np.sum(offset**2) > k + 2.0 * np.sqrt(20.0 * k) + 40.0:
            warn.append(f"the release lies {np.sqrt(np.sum(offset**2)):.3g} noise standard deviations from "
                        f"what these curves give ({k} coordinates; a release made from them would lie "
                        f"about {np.sqrt(k):.2g}): it was not made from these curves"
                        + (" mapped by this frame (frame.to_unit)?" if frame is not None else "?"))
    return out


def diagnostics_text(diagnostics: dict) -> str:
    """:func:`curator_diagnostics` as lines for the curator's terminal (the command line's stderr)."""
    d = diagnostics
    lines = [f"dpfda: curator's diagnostics ({d['note']}):",
             f"  values clipped: {d['clipped']} of {d['values']} ({d['clipped_share']:.1%})",
             f"  fits shrunk onto the ball of radius B': {d['shrunk']} of {d['n']} ({d['shrunk_share']:.1%})",
             f"  data range: {d['data_range'][0]:.6g} to {d['data_range'][1]:.6g}"
             + ("" if d["band"] is None else
                f"; band {d['band'][0]:.6g} to {d['band'][1]:.6g}, {d['outside_band']} values outside it")]
    if d["noise_distance"] is not None:
        lines.append(f"  release vs these curves: {d['noise_distance']:.3g} (squared noise units per "
                     "coordinate; about 1 expected)")
    lines += [f"dpfda: WARNING: {w}" for w in d["warnings"]]
    return "\n".join(lines)
