"""Sample files to try a release on: ``python -m dpfda example NAME FILE``.

* ``growth`` — the Berkeley growth heights (93 children, heights in cm at 31 ages from 1
  to 18 years; Tuddenham and Snyder, 1954), read from the ``fdars`` wheel, which ships
  them (no download), written in wide form: a ``child`` column and one column per age.
* ``weather`` — the Canadian weather: daily mean temperatures in °C at 35 stations, averaged
  over 1960–1994 (Ramsay and Silverman's data), read from the ``fdars`` wheel, written in wide
  form: a ``station`` column and one column per day of the year, 1 to 365.  A year is
  periodic: release it with ``fourier:M`` on the domain ``0.5,365.5`` (or ``1,366``), so that
  31 December and 1 January are a day apart.
* ``daily`` — **synthetic** hourly temperatures, in °C, of one year in a city that does
  not exist: 365 daily curves at hours 0–23, made by a seeded generator (no such data set
  ships with the package's dependencies).  The day the clocks go forward has 23 hours (no
  reading at 2:00), and about one reading in 150 is missing (a sensor's gap), so the
  subjects are measured at their own points; written in long form (``day``, ``hour``,
  ``temp``).  The daily cycle makes it a case for a periodic basis (``fourier:M`` on the
  domain ``0,24``: hour 24 is hour 0 of the next day).
* ``daily-proxy`` — another synthetic year from the same generator (seed ``DAILY_SEED + 1``),
  in the same form: a public proxy for ``release --dimension-from`` (curves the curator may
  look at because they are not the data released).
"""

from __future__ import annotations

import csv
import io
import os

import numpy as np

__all__ = ["EXAMPLES", "daily_temperatures", "write_example"]

EXAMPLES = {
    "growth": "Berkeley growth heights, cm at ages 1-18, wide form (from the fdars wheel)",
    "weather": "Canadian weather, daily mean °C at 35 stations, days 1-365, wide form (from the fdars wheel)",
    "daily": "synthetic hourly temperatures, °C at hours 0-23 of 365 days, long form, own points (seeded)",
    "daily-proxy": "another synthetic year of the daily example (the next seed): a public proxy for "
                   "--dimension-from",
}
"""The sample files ``write_example`` knows, with one line each."""

DAILY_SEED = 20240331
"""The seed of the synthetic daily temperatures (the file is the same on every machine up to rounding)."""

DST_DAY = 89
"""The day (0-based) the clocks go forward: its 2:00 reading does not exist."""


def daily_temperatures(seed: int = DAILY_SEED) -> list[tuple[int, float, float]]:
    """The synthetic year of hourly temperatures: rows (day, hour, °C), from ``seed``.

    Each day is a season's level (a yearly cosine, 4 to 22 °C), a daily cycle (peak mid-
    afternoon, amplitude varying from day to day), a day's own offset and hourly noise.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    hours = np.arange(24.0)
    rows = []
    for day in range(365):
        level = 13.0 - 9.0 * np.cos(2 * np.pi * (day - 15) / 365) + rng.normal(0.0, 2.5)
        amplitude = max(0.5, 4.0 + rng.normal(0.0, 1.2))
        values = (level + amplitude * np.sin(2 * np.pi * (hours - 9.0) / 24)
                  + 0.8 * rng.normal(0.0, 1.0) * np.cos(4 * np.pi * hours / 24)
                  + rng.normal(0.0, 0.6, 24))
        seen = rng.random(24) >= 1 / 150
        if day == DST_DAY:
            seen[2] = False
        rows += [(day, float(h), round(float(v), 2)) for h, v, s in zip(hours, values, seen) if s]
    return rows


def _from_fdars(name: str) -> tuple[str, str]:
    """The text of the growth or weather sample (wide form) and its description, from the fdars wheel."""
    try:
        from fdars.datasets import load_canadian_weather, load_growth  # here: an optional dependency
    except ImportError:
        raise ImportError(f"the {name} example reads its data from the fdars wheel: pip install fdars") from None
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if name == "growth":
        ages, heights, meta = load_growth(return_fdata=False)
        writer.writerow(["child", *(f"{a:g}" for a in ages)])
        writer.writerows([c, *(f"{v:.1f}" for v in row)] for c, row in zip(meta["id"], heights))
        return out.getvalue(), (f"{len(heights)} children's heights (cm) at {len(ages)} ages, {ages[0]:g} to "
                                f"{ages[-1]:g} years")
    days, temps, meta = load_canadian_weather(return_fdata=False)
    writer.writerow(["station", *(f"{d:g}" for d in days)])
    writer.writerows([str(s).strip(), *(f"{v:g}" for v in row)] for s, row in zip(meta["station"], temps))
    return out.getvalue(), (f"{len(temps)} Canadian stations' daily mean temperatures (°C) on days {days[0]:g} to "
                            f"{days[-1]:g} of the year (a year is periodic: --domain 0.5,365.5)")


def write_example(name: str, path: str | os.PathLike[str]) -> str:
    """Write the sample file ``name`` (a key of :data:`EXAMPLES`) to ``path``; a one-line description.

    Never overwrites: a file at ``path`` that holds exactly this sample is left as it is (so a
    script that writes the sample can run twice), any other file there raises
    ``FileExistsError``.  ``growth`` and ``weather`` need ``fdars`` (``pip install fdars``;
    ``ImportError`` otherwise).
    """
    if name not in EXAMPLES:
        raise ValueError(f"example must be one of {', '.join(EXAMPLES)}, got {name!r}")
    path = os.fspath(path)
    if os.path.lexists(path) and not os.path.isfile(path):
        raise FileExistsError(f"{path!r} exists and is not a file; choose another name")
    if name in ("growth", "weather"):
        text, what = _from_fdars(name)
    else:
        rows = daily_temperatures(DAILY_SEED if name == "daily" else DAILY_SEED + 1)
        text = "day,hour,temp\n" + "".join(f"{d},{h:g},{v:.2f}\n" for d, h, v in rows)
        what = (f"synthetic hourly temperatures (°C) of 365 days, {len(rows)} readings: day {DST_DAY} has 23 "
                "hours and some readings are missing (long form: day, hour, temp)"
                + ("" if name == "daily" else "; another year than the daily example's, a public proxy"))
    if os.path.exists(path):
        with open(path, "rb") as fh:
            same = fh.read() == text.encode("utf-8")
        if not same:
            raise FileExistsError(f"{path!r} exists and is not this sample; choose another name")
        return f"{what} (already there, unchanged)"
    with open(path, "x", encoding="utf-8") as fh:
        fh.write(text)
    return what
