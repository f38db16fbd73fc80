"""``python -m dpfda example``: the sample files, written offline, never over an existing file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpfda import cli
from dpfda.practice.examples import DST_DAY, daily_temperatures, write_example


def test_growth_example_is_the_berkeley_heights(tmp_path, capsys):
    assert cli.main(["example", "growth", str(tmp_path / "h.csv")]) == 0
    table = pd.read_csv(tmp_path / "h.csv")
    assert table.shape == (93, 32) and table.columns[0] == "child" and table.columns[-1] == "18"
    assert "93 children" in capsys.readouterr().out


def test_daily_example_is_synthetic_reproducible_and_irregular(tmp_path):
    assert cli.main(["example", "daily", str(tmp_path / "a.csv")]) == 0
    write_example("daily", tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    t = pd.read_csv(tmp_path / "a.csv")
    per_day = t.groupby("day").hour.count()
    assert per_day.size == 365 and per_day[DST_DAY] <= 23 and 2.0 not in set(t[t.day == DST_DAY].hour)
    assert (per_day < 24).sum() > 1  # besides the clock change, some readings are missing
    assert daily_temperatures(1) != daily_temperatures(2)  # the seed decides the file
    temps = t.temp.to_numpy()
    assert np.isfinite(temps).all() and -30 < temps.min() and temps.max() < 45


def test_example_never_overwrites_and_names_its_choices(tmp_path, capsys):
    path = tmp_path / "x.csv"
    path.write_text("mine\n")
    assert cli.main(["example", "daily", str(path)]) == 2
    assert "exists" in capsys.readouterr().err and path.read_text() == "mine\n"
    assert cli.main(["example", "rainfall", str(tmp_path / "y.csv")]) == 2
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(ValueError, match="example must be one of growth, weather, daily, daily-proxy"):
        write_example("rainfall", tmp_path / "y.csv")


def test_an_example_already_there_is_left_as_it_is(tmp_path, capsys):
    """Running the README's block twice: the second `example` finds its own file and says so."""
    path = tmp_path / "temps.csv"
    assert cli.main(["example", "daily", str(path)]) == 0
    before = path.read_bytes()
    capsys.readouterr()
    assert cli.main(["example", "daily", str(path)]) == 0
    assert "already there, unchanged" in capsys.readouterr().out and path.read_bytes() == before
    path.write_bytes(before[:-10])  # another file under that name: never overwritten
    assert cli.main(["example", "daily", str(path)]) == 2
    assert "exists" in capsys.readouterr().err and path.read_bytes() == before[:-10]


def test_weather_example_is_the_canadian_weather_from_fdars(tmp_path, capsys):
    from fdars.datasets import load_canadian_weather

    assert cli.main(["example", "weather", str(tmp_path / "w.csv")]) == 0
    assert "35 Canadian stations" in capsys.readouterr().out
    days, temps, meta = load_canadian_weather(return_fdata=False)
    table = pd.read_csv(tmp_path / "w.csv")
    assert table.columns[0] == "station" and table.shape == (35, 366)
    assert list(table.station) == [str(s).strip() for s in meta["station"]]
    assert np.array_equal(table.iloc[:, 1:].to_numpy(), temps)  # every value, exactly (written with %g)
    assert [float(c) for c in table.columns[1:]] == days.tolist()


def test_daily_proxy_is_another_year_in_the_same_form(tmp_path):
    write_example("daily", tmp_path / "a.csv")
    write_example("daily-proxy", tmp_path / "b.csv")
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert list(a.columns) == list(b.columns) and a.day.nunique() == b.day.nunique() == 365
    assert not a.temp.equals(b.temp)
