"""The JSON views of session records: one session in full, lists of them, and what an export
reads of a session (its events, its descendants, its context).

A list entry is brief: text fields that can be long (prompt, name, answer, error) are cut to
`BRIEF_CHARS` (the name to the daemon's name limit), and a sub-agent's instructions are left out
of `options` — `GET /sessions/{id}` has everything.

Lists are served from the registry's indexes (see registry.py), and each entry's JSON text is
kept once made, while no change of its view was recorded since (the registry counts a change
below a session as one of its view) and its kernel is still up or down as it was; its usage is
kept too once its session and everything below it have ended (no wall time runs any more). A
list of 10,000 sessions is then mostly a join of kept strings; what changed is made afresh, and
the usage of what still runs is added up again. The daemon makes every entry once in the
background when it starts (`prepare`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import NotFound
from ..protocol.requests import SessionFilter
from . import usage as usage_mod
from .accounting import Accounting
from .records import SessionRecord
from .registry import SessionRegistry
from .store import Store

BRIEF_CHARS = 500
_PRIVATE = ("answer_blob", "context_blob", "usage")


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + "…"


def encode(value: Any) -> str:
    """JSON as the API writes it (values JSON does not know become their str)."""
    return json.dumps(value, default=str)


@dataclass
class _Kept:
    """A list entry made earlier: valid while its subtree and kernel are as they were (`key`).
    `head` is its JSON without the usage; `usage` (JSON) and `subtree` are kept too once
    nothing in the subtree runs any more."""

    key: tuple[int, bool]
    head: str
    usage: str | None = None
    subtree: dict[str, float] | None = None


class Listing:
    def __init__(
        self,
        registry: SessionRegistry,
        accounting: Accounting,
        kernel_alive: Callable[[str], bool],
        name_chars: Callable[[], int],
        store: Store,
        epoch: str = "",
    ) -> None:
        self.registry = registry
        self.accounting = accounting
        self.kernel_alive = kernel_alive
        self.name_chars = name_chars
        self.store = store
        # An id of the daemon's run: list cursors (`changed_after`) are only valid within it.
        self.epoch = epoch
        self._kept: dict[str, _Kept] = {}

    # -- one record ---------------------------------------------------------------------------
    def _fields(self, record: SessionRecord, *, brief: bool) -> dict[str, Any]:
        """Everything of a session's view but its usage."""
        out = record.to_row()
        for private in _PRIVATE:
            out.pop(private)
        # These fields are there only while they hold something.
        for optional in ("goal", "verified"):
            if out.get(optional) is None:
                out.pop(optional, None)
        if brief:
            out["prompt"] = _cut(record.prompt, BRIEF_CHARS)
            out["name"] = _cut(record.name, self.name_chars())
            out["answer_repr"] = _cut(record.answer_repr, BRIEF_CHARS)
            out["error"] = _cut(record.error, BRIEF_CHARS)
            if "instructions" in record.options:
                out["options"] = {k: v for k, v in record.options.items() if k != "instructions"}
        out["has_answer"] = bool(record.answer_blob or record.answer_repr is not None)
        # Whether the session's kernel is still up (a person can attach a console to it).
        out["kernel_alive"] = self.kernel_alive(record.id)
        out["children"] = [c.id for c in self.registry.children(record.id)]
        return out

    def session_json(self, session_id: str) -> dict[str, Any]:
        """One session's view, nothing cut."""
        record = self.registry.get(session_id)
        out = self._fields(record, brief=False)
        out["usage"] = {
            "own": self.accounting.own(record),
            "subtree": self.accounting.subtree(session_id),
        }
        return out

    # -- lists ----------------------------------------------------------------------------------
    def text(self, filters: SessionFilter = SessionFilter()) -> str:
        """The sessions `filters` selects, brief, as the API's JSON text:
        `{"sessions": [...], "cursor", "epoch"}` (a `cursor` is what `changed_after` takes)."""
        cursor = self.registry.version  # before anything below could change (nothing awaits)
        rows = self.registry.select(filters)
        totals: dict[str, dict[str, float]] = {}
        entries = [self._entry(r, totals) for r in rows]
        epoch = encode(self.epoch)
        return f'{{"sessions": [{", ".join(entries)}], "cursor": {cursor}, "epoch": {epoch}}}'

    def list_sessions(self, filters: SessionFilter = SessionFilter()) -> dict[str, Any]:
        """`text` as a dict: `{"sessions": [Session], "cursor", "epoch"}`."""
        return dict(json.loads(self.text(filters)))

    # -- what an export reads ---------------------------------------------------------------
    def descendant_ids(self, session_id: str) -> list[str]:
        return [r.id for r in self.registry.descendants(session_id)]

    async def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        self.registry.get(session_id)  # a 404 for an unknown session
        return await self.store.events(session_id, after=after)

    async def context_bytes(self, session_id: str) -> bytes:
        """The session's `context`, pickled as it was given."""
        record = self.registry.get(session_id)
        if not record.context_blob or not self.store.has_blob(record.context_blob):
            raise NotFound(f"session {session_id} has no context")
        return await self.store.get_blob(record.context_blob)

    async def prepare(self, slice_seconds: float = 0.01) -> None:
        """Make every entry ahead of the first list (after a start with a large store),
        `slice_seconds` of work at a time so that requests are served meanwhile (a count of
        entries would not do: an entry with a long prompt costs many times a short one, and
        a busy machine all of them more)."""
        until = time.monotonic() + slice_seconds
        for record in list(self.registry):
            self._entry(record, {})
            if time.monotonic() > until:
                await asyncio.sleep(0)
                until = time.monotonic() + slice_seconds

    def _current(self, record: SessionRecord) -> _Kept:
        sid = record.id
        key = (self.registry.changed_at(sid), self.kernel_alive(sid))
        kept = self._kept.get(sid)
        if kept is None or kept.key != key:
            head = encode(self._fields(record, brief=True))
            kept = self._kept[sid] = _Kept(key, head[:-1])  # open: the usage goes last
        return kept

    def _entry(self, record: SessionRecord, totals: dict[str, dict[str, float]]) -> str:
        kept = self._current(record)
        if kept.usage is not None:
            return kept.head + kept.usage
        subtree = self._subtree(record, totals)
        usage = encode({"own": self.accounting.own(record), "subtree": subtree})
        text = f', "usage": {usage}}}'
        if self.registry.settled(record.id):  # no wall time runs below: final
            kept.usage, kept.subtree = text, subtree
        return kept.head + text

    def _subtree(
        self, record: SessionRecord, totals: dict[str, dict[str, float]]
    ) -> dict[str, float]:
        """The usage of a session's subtree: kept sums of ended subtrees, the rest added up
        now (each subtree once per list)."""
        found = totals.get(record.id)
        if found is None:
            kept = self._current(record) if self.registry.settled(record.id) else None
            if kept is not None and kept.subtree is not None:
                found = kept.subtree
            else:
                children = self.registry.children(record.id)
                parts = [self.accounting.own(record), *(self._subtree(c, totals) for c in children)]
                found = usage_mod.summed(parts)
            totals[record.id] = found
        return found
