"""Accounting: what each session spent (its own usage, and its subtree's), and the budget rules
(`budget.py`) applied to it.

Usage lives in each session's record (`usage`, written through to the store). A subtree's usage
is summed on demand from the registry's records, so it is never stored twice. Budget checks run
before every model call against the session's whole subtree and every ancestor's: for them the
counters (tokens, cost, calls) of each subtree asked about are summed once and then kept current
as usage is added below it, so a check costs the depth of the tree, not its size.
"""

from __future__ import annotations

import time
from typing import Any

from ..models.router import Completion
from . import budget as budget_rules
from . import usage as usage_mod
from .records import SessionRecord
from .registry import SessionRegistry

# What budgets count; wall time is not among them (a session's seconds are its own).
_COUNTERS = ("total_tokens", "cost", "model_calls")
_TOKENS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "total_tokens",
)


class Accounting:
    """Usage and budgets over the registry's records; the `Ledger` the budget rules read."""

    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry
        # Session id -> the summed counters of its subtree, for the subtrees budgets asked about.
        self._counters: dict[str, dict[str, float]] = {}
        registry.watch(self._updating)

    # -- the Ledger -----------------------------------------------------------------------------
    def get(self, session_id: str) -> SessionRecord:
        return self.registry.get(session_id)

    def chain(self, session_id: str) -> list[SessionRecord]:
        return [self.registry.get(session_id), *self.registry.ancestors(session_id)]

    def spent(self, session_id: str) -> dict[str, float]:
        record = self.registry.get(session_id)
        sub = self._counters.get(session_id)
        if sub is None:
            sub = self._counters[session_id] = {k: self.subtree(session_id)[k] for k in _COUNTERS}
        started = record.started
        elapsed = ((record.ended or time.time()) - started) if started else 0.0
        return {
            "tokens": sub["total_tokens"],
            "dollars": round(sub["cost"], 10),
            "turns": sub["model_calls"],
            "seconds": round(elapsed, 3),
        }

    # -- usage ----------------------------------------------------------------------------------
    def own(self, record: SessionRecord) -> dict[str, float]:
        """The session's own usage, with its wall time so far."""
        u = {**usage_mod.empty(), **record.usage}
        if record.started:
            u["wall_time"] = round((record.ended or time.time()) - record.started, 6)
        return u

    def subtree(self, session_id: str) -> dict[str, float]:
        root = self.registry.get(session_id)
        parts = [self.own(r) for r in (root, *self.registry.descendants(session_id))]
        return usage_mod.summed(parts)

    def add(self, record: SessionRecord, **amounts: float) -> None:
        """Add to the session's own usage counters (tokens, cost, calls, cells, kernel time)."""
        u = dict(record.usage or usage_mod.empty())
        for key, value in amounts.items():
            u[key] = round(u.get(key, 0) + value, 10)
        record.update(usage=u)

    def _updating(self, record: SessionRecord, fields: dict[str, Any]) -> None:
        """Before a record changes: keep the counters of the subtrees above it current."""
        new = fields.get("usage")
        if new is None or not self._counters:
            return
        old = record.usage or {}
        delta = {k: (new.get(k) or 0) - (old.get(k) or 0) for k in _COUNTERS}
        if not any(delta.values()):
            return
        for sid in self.registry.lineage(record.id):
            kept = self._counters.get(sid)
            if kept is not None:
                for key, value in delta.items():
                    kept[key] += value

    def add_completion(self, record: SessionRecord, completion: Completion) -> None:
        usage = completion.usage
        self.add(
            record,
            **{k: usage.get(k, 0) for k in _TOKENS},
            cost=completion.cost,
            uncached_cost=completion.uncached_cost,
            model_calls=1,
        )

    # -- budgets --------------------------------------------------------------------------------
    def check(self, record: SessionRecord) -> None:
        """Raise BudgetExceeded if this session or an ancestor has spent its budget."""
        budget_rules.check(self, record)

    def admit(
        self, parent: SessionRecord | None, requested: Any, default: dict[str, Any] | None
    ) -> dict[str, float] | None:
        return budget_rules.admit(self, parent, requested, default)
