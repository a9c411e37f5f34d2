"""Budgets: limits on what a session and its descendants may spend, enforced by the daemon.

A budget is a dict with any of these keys (each a non-negative number):

- ``tokens``: total tokens (prompt + completion) of the session and all its descendants;
- ``dollars``: cost as litellm reports it, over the same subtree;
- ``turns``: model calls (agent turns and ``llm()`` calls) over the same subtree;
- ``seconds``: wall-clock seconds since the session started running.

What children spend counts against every budget above them: each check walks the session's
ancestors too, so a parent that runs out stops its children at their next model call, and a
child may not be given more than what remains of any budget above it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .errors import BudgetExceeded, PrimeError

if TYPE_CHECKING:
    from .daemon import Daemon, LiveSession

KEYS = ("tokens", "dollars", "seconds", "turns")
_UNITS = {"tokens": "tokens", "dollars": "dollars", "seconds": "seconds", "turns": "model calls"}
_EXAMPLE = "{'tokens': 20000, 'dollars': 0.5, 'seconds': 600, 'turns': 30}"


def parse(value: Any) -> dict[str, float] | None:
    """Validate a requested budget; None (or an empty dict) means no budget of its own."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise PrimeError(
            f"budget must be a dict like {_EXAMPLE}, not {type(value).__name__} {value!r}"
        )
    unknown = sorted(set(value) - set(KEYS))
    if unknown:
        raise PrimeError(
            f"unknown budget keys: {', '.join(map(str, unknown))} (known: {', '.join(KEYS)})"
        )
    out: dict[str, float] = {}
    for key in KEYS:
        v = value.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise PrimeError(f"budget {key} must be a finite number, not {v!r}")
        if v < 0:
            raise PrimeError(f"budget {key} must not be negative (got {v})")
        out[key] = v
    return out or None


def limits(record: dict[str, Any]) -> dict[str, float]:
    """The limits a session record carries (its budget without the bookkeeping)."""
    budget = record.get("budget") or {}
    return {k: budget[k] for k in KEYS if k in budget}


def spent(daemon: Daemon, session_id: str) -> dict[str, float]:
    """What a session and its subtree have spent, in budget units."""
    record = daemon.session_json(session_id)
    sub = record["usage"]["subtree"]
    started = record.get("started")
    elapsed = ((record.get("ended") or time.time()) - started) if started else 0.0
    return {
        "tokens": sub["total_tokens"],
        "dollars": sub["cost"],
        "turns": sub["model_calls"],
        "seconds": round(elapsed, 3),
    }


def _chain(daemon: Daemon, session_id: str) -> list[dict[str, Any]]:
    """The session's record and its ancestors', nearest first."""
    out = []
    record: dict[str, Any] | None = daemon._record(session_id)
    while record is not None:
        out.append(record)
        parent = record.get("parent_id")
        record = daemon._record(parent) if parent else None
    return out


def _chain_limits(daemon: Daemon, session_id: str) -> Iterator[tuple[str, str, float, float]]:
    """(session id, key, allowed, spent) per limit of the session and its ancestors, nearest first.

    Lazy, so a caller that stops early does not total the spending of further ancestors.
    """
    for record in _chain(daemon, session_id):
        lim = limits(record)
        if not lim:
            continue
        used = spent(daemon, record["id"])
        for key, allowed in lim.items():
            yield record["id"], key, allowed, used[key]


def _first_exhausted(daemon: Daemon, session_id: str) -> dict[str, Any] | None:
    for sid, key, allowed, used in _chain_limits(daemon, session_id):
        if used >= allowed:
            return {"limit": key, "allowed": allowed, "spent": used, "session_id": sid}
    return None


def _message(session_id: str, info: dict[str, Any]) -> str:
    whose = (
        "this session's budget"
        if info["session_id"] == session_id
        else f"the budget of ancestor session {info['session_id']}"
    )
    unit = _UNITS[info["limit"]]
    return (
        f"budget exceeded: {info['spent']:g} of {info['allowed']:g} {unit} spent "
        f"({whose}, counting its descendants)"
    )


def check(daemon: Daemon, live: LiveSession) -> None:
    """Raise BudgetExceeded if this session or any ancestor has spent its budget.

    The session's record keeps why (`budget.exceeded`), so `result()` in a parent can tell a
    budget stop from any other failure.
    """
    info = _first_exhausted(daemon, live.id)
    if info is None:
        return
    budget = dict(live.record.get("budget") or {})
    budget["exceeded"] = info
    live.record["budget"] = budget
    daemon.store.update_session(live.id, budget=budget)
    raise BudgetExceeded(_message(live.id, info), **info)


def remainder(daemon: Daemon, session_id: str) -> dict[str, float]:
    """The least that remains, per key, of the budgets of a session and its ancestors."""
    left: dict[str, float] = {}
    for _, key, allowed, used in _chain_limits(daemon, session_id):
        room = allowed - used
        left[key] = min(left.get(key, room), room)
    return left


def admit(
    daemon: Daemon, parent_id: str | None, requested: Any, default: dict[str, Any] | None = None
) -> dict[str, float] | None:
    """The budget a new session gets, checked against what remains above it.

    Raises BudgetExceeded when the parent (or an ancestor) has nothing left: a spawn is
    checked like a model call. A session without a budget whose tree has none above it — a
    root, or a child of a notebook — gets `default` (config).
    """
    budget = parse(requested)
    top = parent_id is None or daemon._record(parent_id)["kind"] == "notebook"
    if budget is None and default and top:
        try:
            budget = parse(default)
        except PrimeError as e:
            raise PrimeError(f"the configured default budget is invalid: {e.message}") from None
    if parent_id is None:
        return budget
    info = _first_exhausted(daemon, parent_id)
    if info is not None:
        raise BudgetExceeded("cannot start a child: " + _message(parent_id, info), **info)
    left = remainder(daemon, parent_id)
    for key, value in (budget or {}).items():
        if key in left and value > left[key]:
            raise PrimeError(
                f"budget {key}={value:g} is more than what remains of the parent's budget "
                f"({left[key]:g} {_UNITS[key]})",
                limit=key,
                requested=value,
                remaining=left[key],
            )
    return budget
