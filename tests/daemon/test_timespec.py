"""Durations and moments as people and agents write them for schedules."""

from __future__ import annotations

import datetime as dt

import pytest

from prime_kernel.daemon import timespec
from prime_kernel.protocol.errors import InvalidRequest

# A Monday: 2030-01-07 10:02:30 local time.
NOW = dt.datetime(2030, 1, 7, 10, 2, 30).timestamp()


def test_durations_and_moments() -> None:
    assert [timespec.duration(x) for x in (90, "90s", "10m", "1h30m", "1.5h", "2 days")] == [
        90,
        90,
        600,
        5400,
        5400,
        172800,
    ]
    for bad in ("soon", "", "10 parsecs", True, None, float("inf")):
        with pytest.raises(InvalidRequest):
            timespec.duration(bad)
    assert timespec.moment("in 30m", NOW) == NOW + 1800
    assert timespec.moment("2030-01-07T11:00", NOW) == NOW + 57.5 * 60
    assert (
        timespec.moment("2030-01-07T10:00:00+00:00", NOW)
        == dt.datetime(2030, 1, 7, 10, tzinfo=dt.timezone.utc).timestamp()
    )
    with pytest.raises(InvalidRequest, match="is not a time"):
        timespec.moment("next tuesday", NOW)
