"""Durations ("10m", "1h30m", 90) and moments ("in 30m", an ISO time, epoch seconds) as people
and agents write them for schedules. Stdlib only; errors say what would have been accepted."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from ..protocol.errors import InvalidRequest

_UNITS = {
    "": 1.0,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
    "w": 604800.0,
    "week": 604800.0,
    "weeks": 604800.0,
}
_PART = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*,?")
# Ten years: longer intervals (and times further ahead) are typos.
MAX_SECONDS = 10 * 365 * 86400.0
_DURATION_HELP = "seconds, or a duration such as '90s', '10m', '1h30m', '2d'"
_MOMENT_HELP = (
    "an ISO time such as '2030-01-31T09:00' (local time unless it has an offset), "
    "'in 30m', or seconds since the epoch"
)


def duration(value: Any) -> float:
    """Seconds from a number or a duration string; InvalidRequest if it is neither."""
    if isinstance(value, bool):
        raise InvalidRequest(f"{value!r} is not a duration: use {_DURATION_HELP}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _parse_duration(value)
    else:
        raise InvalidRequest(
            f"a duration must be {_DURATION_HELP}, not {type(value).__name__} {value!r:.60}"
        )
    if not math.isfinite(seconds) or seconds > MAX_SECONDS:
        raise InvalidRequest(f"the duration {value!r:.60} is longer than ten years")
    return seconds


def _parse_duration(text: str) -> float:
    words = text.strip().lower()
    total, pos = 0.0, 0
    while pos < len(words):
        match = _PART.match(words, pos)
        if match is None or match.end() == pos or match.group(2) not in _UNITS:
            raise InvalidRequest(f"{text!r:.60} is not a duration: use {_DURATION_HELP}")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not words:
        raise InvalidRequest(f"an empty duration: use {_DURATION_HELP}")
    return total


def moment(value: Any, now: float) -> float:
    """Epoch seconds from an ISO time, "in <duration>", or a number (not checked against now)."""
    if isinstance(value, bool):
        raise InvalidRequest(f"{value!r} is not a time: use {_MOMENT_HELP}")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise InvalidRequest(f"{value!r} is not a time: use {_MOMENT_HELP}")
        return float(value)
    if not isinstance(value, str):
        raise InvalidRequest(f"a time must be {_MOMENT_HELP}, not {type(value).__name__}")
    text = value.strip()
    if text.lower().startswith("in "):
        return now + duration(text[3:])
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidRequest(f"{value!r:.60} is not a time: use {_MOMENT_HELP}") from None
    # A naive time is the server's local time (timestamp() reads it so).
    return when.timestamp()


def describe(ts: float) -> str:
    """A local time for messages: '2030-01-31 09:00:00'."""
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def iso(ts: float) -> str:
    """A local ISO time with its offset (how an `at` schedule's time is kept)."""
    return dt.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")
