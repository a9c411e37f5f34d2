"""The small cron of schedules: next times as crontab(5) reads them, and errors that say
what is wrong."""

from __future__ import annotations

import datetime as dt

import pytest

from prime_kernel.daemon import cron
from prime_kernel.protocol.errors import InvalidRequest

# A Monday: 2030-01-07 10:02:30 local time.
NOW = dt.datetime(2030, 1, 7, 10, 2, 30).timestamp()


def _next(expression: str, after: float = NOW) -> str:
    ts = cron.parse(expression, after).next_after(after)
    assert ts is not None
    return dt.datetime.fromtimestamp(ts).strftime("%a %Y-%m-%d %H:%M")


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("*/5 * * * *", "Mon 2030-01-07 10:05"),
        ("2 10 * * *", "Tue 2030-01-08 10:02"),  # strictly after now
        ("0 9 * * mon-fri", "Tue 2030-01-08 09:00"),
        ("5/20 * * * *", "Mon 2030-01-07 10:05"),
        ("10-40/15 * * * *", "Mon 2030-01-07 10:10"),
        ("0 0 1,15 * *", "Tue 2030-01-15 00:00"),
        ("0 12 * feb sun", "Sun 2030-02-03 12:00"),
        ("0 0 29 2 *", "Sun 2032-02-29 00:00"),
        ("0 0 * * 7", "Sun 2030-01-13 00:00"),  # 7 is Sunday, as 0
        # Both day fields restricted: either matches (the 13th, or a Friday).
        ("0 0 13 * fri", "Fri 2030-01-11 00:00"),
    ],
)
def test_next_times(expression: str, expected: str) -> None:
    assert _next(expression) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("* * * *", "has 4 fields"),
        ("60 * * * *", "the minute field '60': 60 is out of range 0-59"),
        ("* 24 * * *", "the hour field '24': 24 is out of range 0-23"),
        ("*/0 * * * *", "the step after '/' must be a positive number"),
        ("5-1 * * * *", "the range runs backwards"),
        ("* * * smarch *", "'smarch' is not a number"),
        ("0 0 30 2 *", "never matches a real date"),
    ],
)
def test_bad_expressions(expression: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        cron.parse(expression, NOW)
