"""Long-horizon control from a REPL: `goal` and `schedule`.

Thin calls to the daemon, which records the calling session (from this kernel's token) as the
author of a goal change and the owner of a schedule, and checks everything.

    goal.set("Train a model to 3.28 val loss")   # in the model's context on every turn
    goal.get()                                   # {"text", "status", "progress", ...} or None
    goal.progress("3.41 after 2k steps"); goal.done("3.27 at step 5100"); goal.clear()

    h = schedule.every("10m", "check the run")   # a message from "schedule" every 10 minutes
    schedule.at("in 30m", "time to report")      # once; or a datetime, or an ISO time
    schedule.cron("*/5 * * * *", "poll")         # minute hour day month weekday (local time)
    schedule.list(); schedule.cancel(h)          # h: the schedule (a dict) or its id

A tick wakes an idle agent for a new turn; in a notebook, `recv()` returns it. Schedules end
with the session that made them.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from typing import Any

from .primitives import Handle, client


class Goal:
    """This session's goal: kept in front of its model on every turn, through compactions and
    restarts, until it is marked done or cleared."""

    def __repr__(self) -> str:
        return "<goal: set(text) get() progress(note) done(summary) clear()>"

    def get(self) -> dict[str, Any] | None:
        """The goal ({"text", "status": "active"|"done", "progress", ...}) or None."""
        out = client().request("GET", "goal")["goal"]
        return dict(out) if out is not None else None

    def set(self, text: str) -> dict[str, Any]:
        """Make `text` this session's goal (replacing any other)."""
        return dict(client().request("PUT", "goal", {"text": _text(text, "goal.set()")})["goal"])

    def progress(self, note: str) -> dict[str, Any]:
        """Record progress towards the goal (shown with it on later turns)."""
        body = {"progress": _text(note, "goal.progress()")}
        return dict(client().request("PUT", "goal", body)["goal"])

    def done(self, summary: str = "") -> dict[str, Any]:
        """Mark the goal achieved, saying what was done."""
        if not isinstance(summary, str):
            raise TypeError(f"goal.done() takes a string summary, not {type(summary).__name__}")
        body = {"status": "done", "summary": summary}
        return dict(client().request("PUT", "goal", body)["goal"])

    def clear(self) -> bool:
        """Remove the goal; False if there was none."""
        return bool(client().request("DELETE", "goal")["cleared"])


class Schedule:
    """Messages to this session (or one within its reach, `to=`) on a timer or a cron."""

    def __repr__(self) -> str:
        return (
            "<schedule: every(interval, message) at(when, message) cron(expr, message) "
            "list() cancel(id)>"
        )

    def every(self, interval: float | str, message: str, *, to: Any = None) -> dict[str, Any]:
        """Deliver `message` every `interval`: seconds, or "90s", "10m", "1h30m", "2d"."""
        if isinstance(interval, dt.timedelta):
            interval = interval.total_seconds()
        return self._create({"every": interval}, message, to)

    def at(
        self, when: dt.datetime | float | str, message: str, *, to: Any = None
    ) -> dict[str, Any]:
        """Deliver `message` once at `when`: a datetime (naive: local time), "in 30m", an ISO
        time, or seconds since the epoch."""
        if isinstance(when, dt.datetime):
            when = when.astimezone().isoformat()
        return self._create({"at": when}, message, to)

    def cron(self, expression: str, message: str, *, to: Any = None) -> dict[str, Any]:
        """Deliver `message` whenever the 5-field cron `expression` matches (local time)."""
        return self._create({"cron": expression}, message, to)

    def list(self) -> list[dict[str, Any]]:
        """This session's schedules, and others' that tick to it, newest first."""
        return list(client().request("GET", "schedules")["schedules"])

    def cancel(self, schedule: dict[str, Any] | str) -> dict[str, Any]:
        """Stop a schedule this session made (given as returned, or by its id)."""
        sid = schedule.get("id") if isinstance(schedule, dict) else schedule
        if not isinstance(sid, str) or not sid:
            raise TypeError("schedule.cancel() takes a schedule (as returned) or its id")
        return dict(client().request("DELETE", f"schedules/{urllib.parse.quote(sid, safe='')}"))

    def _create(self, when: dict[str, Any], message: str, to: Any) -> dict[str, Any]:
        body: dict[str, Any] = {**when, "message": _text(message, "a schedule's message")}
        if to is not None:
            body["to"] = to.session_id if isinstance(to, Handle) else to
        return dict(client().request("POST", "schedules", body))


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} takes a string, not {type(value).__name__}")
    return value


goal = Goal()
schedule = Schedule()

EXPORTS: dict[str, Any] = {"goal": goal, "schedule": schedule}
