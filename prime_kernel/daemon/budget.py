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
from collections.abc import Iterator
from typing import Any, Protocol

from ..protocol.errors import BudgetExceeded, PrimeError
from .records import SessionRecord


class Ledger(Protocol):
    """What the budget rules read: records, and what a session's subtree has spent."""

    def get(self, session_id: str) -> SessionRecord: ...

    def chain(self, session_id: str) -> list[SessionRecord]:
        """The session's record and its ancestors', nearest first."""
        ...

    def spent(self, session_id: str) -> dict[str, float]:
        """Tokens, dollars, turns (model calls) of the subtree; seconds since it started."""
        ...


KEYS = ("tokens", "dollars", "seconds", "turns")
_UNITS = {"tokens": "tokens", "dollars": "dollars", "seconds": "seconds", "turns": "model calls"}
# Larger budgets are typos (and 1e400 as an integer would overflow a float).
MAX_VALUE = 1e15
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
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or abs(v) > MAX_VALUE
            or not math.isfinite(v)
        ):
            raise PrimeError(f"budget {key} must be a finite number up to {MAX_VALUE:g}, not {v!r}")
        if v < 0:
            raise PrimeError(f"budget {key} must not be negative (got {v})")
        if v == 0:
            raise PrimeError(f"a budget of 0 {_UNITS[key]} leaves nothing to spend ({key})")
        out[key] = v
    return out or None


def limits(record: SessionRecord) -> dict[str, float]:
    """The limits a session record carries (its budget without the bookkeeping)."""
    budget = record.budget or {}
    return {k: budget[k] for k in KEYS if k in budget}


def _chain_limits(ledger: Ledger, session_id: str) -> Iterator[tuple[str, str, float, float]]:
    """(session id, key, allowed, spent) per limit of the session and its ancestors, nearest first.

    Lazy, so a caller that stops early does not total the spending of further ancestors.
    """
    for record in ledger.chain(session_id):
        lim = limits(record)
        if not lim:
            continue
        used = ledger.spent(record.id)
        for key, allowed in lim.items():
            yield record.id, key, allowed, used[key]


def first_exhausted(ledger: Ledger, session_id: str) -> dict[str, Any] | None:
    for sid, key, allowed, used in _chain_limits(ledger, session_id):
        if used >= allowed:
            return {"limit": key, "allowed": allowed, "spent": used, "session_id": sid}
    return None


def message(session_id: str, info: dict[str, Any]) -> str:
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


def check(ledger: Ledger, record: SessionRecord) -> None:
    """Raise BudgetExceeded if this session or any ancestor has spent its budget.

    The session's record keeps why (`budget.exceeded`), so `result()` in a parent can tell a
    budget stop from any other failure.
    """
    info = first_exhausted(ledger, record.id)
    if info is None:
        return
    record.update(budget={**(record.budget or {}), "exceeded": info})
    raise BudgetExceeded(message(record.id, info), **info)


def remainder(ledger: Ledger, session_id: str) -> dict[str, float]:
    """The least that remains, per key, of the budgets of a session and its ancestors."""
    left: dict[str, float] = {}
    for _, key, allowed, used in _chain_limits(ledger, session_id):
        room = allowed - used
        left[key] = min(left.get(key, room), room)
    return left


def admit(
    ledger: Ledger,
    parent: SessionRecord | None,
    requested: Any,
    default: dict[str, Any] | None = None,
) -> dict[str, float] | None:
    """The budget a new session gets, checked against what remains above it.

    Raises BudgetExceeded when the parent (or an ancestor) has nothing left: a spawn is
    checked like a model call. A session without a budget whose tree has none above it — a
    root, or a child of a notebook — gets `default` (config).
    """
    budget = parse(requested)
    top = parent is None or not parent.is_agent
    if budget is None and default and top:
        try:
            budget = parse(default)
        except PrimeError as e:
            raise PrimeError(f"the configured default budget is invalid: {e.message}") from None
    if parent is None:
        return budget
    info = first_exhausted(ledger, parent.id)
    if info is not None:
        raise BudgetExceeded("cannot start a child: " + message(parent.id, info), **info)
    left = remainder(ledger, parent.id)
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
