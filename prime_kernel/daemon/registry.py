"""Every session the store knows, in memory, and the runtime state of those being driven.

The registry loads all session records once when the daemon starts and then caches them (records
write through to the store), so looking a session up, walking a tree, checking reach and listing
never touch the database or block the event loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..protocol.errors import NotFound
from ..protocol.states import SessionState
from .records import SessionRecord, Sink
from .session import LiveSession


class SessionRegistry:
    def __init__(self) -> None:
        self._records: dict[str, SessionRecord] = {}
        self._children: dict[str | None, list[str]] = {}
        self.live: dict[str, LiveSession] = {}
        # A counter bumped on every change, and each session's value of it at its last change:
        # lists can be asked for what changed since a point (`changed_after`).
        self.version = 0
        self._changed: dict[str, int] = {}

    # -- loading and adding -------------------------------------------------------------------
    def load(self, rows: Iterable[dict[str, Any]], sink: Sink) -> None:
        for row in rows:
            self._add(SessionRecord.from_row(row, self._tracking(sink)))

    def add(self, record: SessionRecord, sink: Sink) -> SessionRecord:
        """A new session: stored (the caller inserted its row) and indexed."""
        record.sink = self._tracking(sink)
        self._add(record)
        self.touch(record.id, ancestors=True)  # their `children` lists changed
        return record

    def _add(self, record: SessionRecord) -> None:
        self._records[record.id] = record
        self._children.setdefault(record.parent_id, []).append(record.id)

    def _tracking(self, sink: Sink) -> Sink:
        def write(session_id: str, fields: dict[str, Any]) -> None:
            sink(session_id, fields)
            # What a session spends is in every ancestor's subtree usage too.
            self.touch(session_id, ancestors="usage" in fields)

        return write

    def touch(self, session_id: str, *, ancestors: bool = False) -> None:
        """Mark a session (and its ancestors) changed, for `select(changed_after=...)`."""
        self.version += 1
        record = self._records.get(session_id)
        while record is not None:
            self._changed[record.id] = self.version
            parent = record.parent_id if ancestors else None
            record = self._records.get(parent) if parent else None

    # -- lookups --------------------------------------------------------------------------------
    def get(self, session_id: str) -> SessionRecord:
        record = self._records.get(session_id) if isinstance(session_id, str) else None
        if record is None:
            raise NotFound(f"no session {session_id}")
        return record

    def find(self, session_id: str) -> SessionRecord | None:
        return self._records.get(session_id)

    def __iter__(self) -> Iterator[SessionRecord]:
        return iter(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    def children(self, session_id: str) -> list[SessionRecord]:
        """The session's children, oldest first."""
        return [self._records[c] for c in self._children.get(session_id, [])]

    def descendants(self, session_id: str) -> list[SessionRecord]:
        """Every session below `session_id` (not itself), parents before children."""
        out: list[SessionRecord] = []
        level = self.children(session_id)
        while level:
            out.extend(level)
            level = [c for r in level for c in self.children(r.id)]
        return out

    def ancestors(self, session_id: str) -> list[SessionRecord]:
        """The session's parent, grandparent, ... up to its root (nearest first)."""
        out = []
        record = self.get(session_id)
        while record.parent_id is not None:
            record = self.get(record.parent_id)
            out.append(record)
        return out

    def is_below(self, session_id: str, ancestor_id: str) -> bool:
        """Whether `session_id` is a descendant of `ancestor_id` (not the session itself)."""
        record = self._records.get(session_id)
        while record is not None and record.parent_id is not None:
            if record.parent_id == ancestor_id:
                return True
            record = self._records.get(record.parent_id)
        return False

    def select(
        self,
        *,
        states: Iterable[str] | None = None,
        root_id: str | None = None,
        parent_id: str | None = None,
        changed_after: int | None = None,
    ) -> list[SessionRecord]:
        """Records matching every filter given, newest first."""
        wanted = {SessionState(s) for s in states} if states else None
        if parent_id is not None:
            pool: Iterable[SessionRecord] = self.children(parent_id)
        elif root_id is not None:
            root = self._records.get(root_id)
            pool = [root, *self.descendants(root_id)] if root is not None else []
        else:
            pool = self._records.values()
        out = [
            r
            for r in pool
            if (wanted is None or r.state in wanted)
            and (root_id is None or r.root_id == root_id)
            and (changed_after is None or self._changed.get(r.id, 0) > changed_after)
        ]
        out.sort(key=lambda r: r.created, reverse=True)
        return out
