"""A small cron: the 5-field expressions of crontab(5), in the server's local time.

`minute hour day-of-month month day-of-week`; each field a list of `*`, `N`, `A-B`, each with an
optional `/STEP` (`*/5`, `10-40/10`, `5/15` = from 5 to the end by 15); months and weekdays also
by name (`jan`, `mon`); a weekday of 0 or 7 is Sunday. As in Vixie cron, when both day fields are
restricted (neither starts with `*`) a day matches if either does. No new dependency for this:
the grammar is a page, and we need only "the next time after t".
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ..protocol.errors import InvalidRequest

_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_NAMES = {3: {n: i + 1 for i, n in enumerate(_MONTHS)}, 4: {n: i for i, n in enumerate(_DAYS)}}
# How far ahead a next time is looked for: a leap day on a given weekday can be 28 years away.
_HORIZON_DAYS = 366 * 29
_HELP = "minute hour day-of-month month day-of-week, e.g. '*/5 * * * *' or '0 9 * * mon-fri'"


@dataclass(frozen=True)
class Cron:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # the day-of-month field starts with '*'
    any_weekday: bool

    @classmethod
    def parse(cls, expression: object) -> Cron:
        if not isinstance(expression, str):
            raise InvalidRequest(f"a cron expression is a string ({_HELP})")
        fields = expression.split()
        if len(fields) != 5:
            raise InvalidRequest(
                f"{expression!r:.80} has {len(fields)} fields; a cron expression has 5: {_HELP}"
            )
        minutes, hours, days, months, weekdays = (_field(i, t) for i, t in enumerate(fields))
        return cls(
            " ".join(fields),
            minutes,
            hours,
            days,
            months,
            frozenset(d % 7 for d in weekdays),
            fields[2].startswith("*"),
            fields[4].startswith("*"),
        )

    def day_matches(self, day: dt.date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = (day.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week

    def next_after(self, ts: float) -> float | None:
        """The first matching minute strictly after `ts` (epoch seconds); None if none within
        the horizon (an expression such as '0 0 31 2 *' never matches)."""
        start = dt.datetime.fromtimestamp(ts).replace(second=0, microsecond=0)
        start += dt.timedelta(minutes=1)
        hours, minutes = sorted(self.hours), sorted(self.minutes)
        day = start.date()
        for _ in range(_HORIZON_DAYS):
            if self.day_matches(day):
                first_day = day == start.date()
                for hour in hours:
                    if first_day and hour < start.hour:
                        continue
                    for minute in minutes:
                        if first_day and hour == start.hour and minute < start.minute:
                            continue
                        return dt.datetime.combine(day, dt.time(hour, minute)).timestamp()
            day += dt.timedelta(days=1)
        return None


def _field(index: int, text: str) -> frozenset[int]:
    name, low, high = _FIELDS[index]
    out: set[int] = set()
    for item in text.split(","):
        out.update(_item(index, item, name, low, high))
    return frozenset(out)


def _item(index: int, item: str, name: str, low: int, high: int) -> range:
    where = f"the {name} field {item!r}"
    base, _, step_text = item.partition("/")
    step = 1
    if step_text:
        if not step_text.isdigit() or int(step_text) == 0:
            raise InvalidRequest(f"{where}: the step after '/' must be a positive number")
        step = int(step_text)
    if base == "*":
        first, last = low, high
    elif "-" in base:
        a, _, b = base.partition("-")
        first, last = _number(index, a, where, low, high), _number(index, b, where, low, high)
        if first > last:
            raise InvalidRequest(f"{where}: the range runs backwards ({first} > {last})")
    else:
        first = _number(index, base, where, low, high)
        # 'N/STEP' runs from N to the end of the field; a bare 'N' is N alone.
        last = high if step_text else first
    return range(first, last + 1, step)


def _number(index: int, text: str, where: str, low: int, high: int) -> int:
    word = text.strip().lower()
    value = _NAMES.get(index, {}).get(word)
    if value is None:
        if not word.isdigit():
            raise InvalidRequest(f"{where}: {text!r} is not a number ({_HELP})")
        value = int(word)
    if not low <= value <= high:
        raise InvalidRequest(f"{where}: {value} is out of range {low}-{high}")
    return value


def parse(expression: object, now: float) -> Cron:
    """A cron expression that parses and matches at least once after `now`."""
    cron = Cron.parse(expression)
    if cron.next_after(now) is None:
        raise InvalidRequest(f"the cron expression {cron.expression!r} never matches a real date")
    return cron
