"""Every session the store knows, in memory, and the runtime state of those being driven.

The registry loads all session records once when the daemon starts and then caches them (records
write through to the store), so looking a session up, walking a tree, checking reach and listing
never touch the database or block the event loop. Lists are served by indexes kept as records
change — admission order, sessions per state, the order of their last changes, and per subtree
the last change and how many sessions are still open — so a filtered or incremental list costs
what it returns, not what the store holds.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from ..protocol.errors import NotFound
from ..protocol.requests import SessionFilter
from ..protocol.states import SessionState
from .records import SessionRecord, Sink
from .session import Conversation, LiveSession, Message


class Conversations(Protocol):
    """Where a driven session's conversation is written through to (the store)."""

    def append_conversation(self, session_id: str, messages: list[Message]) -> list[Message]: ...

    def replace_conversation(self, session_id: str, messages: list[Message]) -> list[Message]: ...


class SessionRegistry:
    def __init__(self, conversations: Conversations | None = None) -> None:
        self.conversations = conversations
        self._records: dict[str, SessionRecord] = {}
        self._children: dict[str | None, list[str]] = {}
        self.live: dict[str, LiveSession] = {}
        # A counter bumped on every change, and each session's value of it at the last change
        # of its view — of the session or of anything below it (its children and its
        # subtree's usage are part of its view) — oldest change first: lists can be asked for
        # what changed since a point (`changed_after`) and read only that.
        self.version = 0
        self._changed: OrderedDict[str, int] = OrderedDict()
        # Sessions not ended in each subtree (itself included): while none is, nothing in it
        # changes with time (wall times are final).
        self._open: dict[str, int] = {}
        # Admission order (the store's `created` order at load) and each session's place in it.
        self._order: list[str] = []
        self._pos: dict[str, int] = {}
        self._by_state: dict[SessionState, set[str]] = {s: set() for s in SessionState}
        self._watchers: list[Callable[[SessionRecord, dict[str, Any]], None]] = []

    # -- loading and adding -------------------------------------------------------------------
    def load(self, rows: Iterable[dict[str, Any]], sink: Sink) -> None:
        for row in rows:
            self._add(SessionRecord.from_row(row, self._tracking(sink)))

    def add(self, record: SessionRecord, sink: Sink) -> SessionRecord:
        """A new session: stored (the caller inserted its row) and indexed."""
        record.sink = self._tracking(sink)
        self._add(record)
        self.touch(record.id)  # its ancestors' `children` lists changed
        return record

    def _add(self, record: SessionRecord) -> None:
        sid = record.id
        self._records[sid] = record
        self._children.setdefault(record.parent_id, []).append(sid)
        self._pos[sid] = len(self._order)
        self._order.append(sid)
        self._by_state[record.state].add(sid)
        self._open.setdefault(sid, 0)
        if not record.terminal:
            self._count_open(sid, 1)

    def attach(self, record: SessionRecord) -> LiveSession:
        """Drive `record`'s session: its runtime state, its conversation written through."""
        sid, store = record.id, self.conversations
        conversation = (
            Conversation()
            if store is None
            else Conversation(
                on_append=lambda ms: store.append_conversation(sid, ms),
                on_replace=lambda ms: store.replace_conversation(sid, ms),
            )
        )
        live = self.live[sid] = LiveSession(record, conversation)
        return live

    def watch(self, watcher: Callable[[SessionRecord, dict[str, Any]], None]) -> None:
        """Call `watcher(record, fields)` before any record changes (it still has the old
        values)."""
        self._watchers.append(watcher)

    def _tracking(self, sink: Sink) -> Sink:
        def write(session_id: str, fields: dict[str, Any]) -> dict[str, Any] | None:
            written = sink(session_id, fields)
            fields = written if written is not None else fields
            record = self._records[session_id]  # still with its old values
            if "state" in fields:
                self._moved(record, SessionState(fields["state"]))
            for watcher in self._watchers:
                watcher(record, fields)
            self.touch(session_id)
            return fields

        return write

    def _moved(self, record: SessionRecord, state: SessionState) -> None:
        if state == record.state:
            return
        self._by_state[record.state].discard(record.id)
        self._by_state[state].add(record.id)
        if state.terminal != record.terminal:
            self._count_open(record.id, -1 if state.terminal else 1)

    def _count_open(self, session_id: str, delta: int) -> None:
        for sid in self.lineage(session_id):
            self._open[sid] = self._open.get(sid, 0) + delta

    def lineage(self, session_id: str) -> Iterator[str]:
        """The session's id, its parent's, ... up to its root's."""
        record = self._records.get(session_id)
        while record is not None:
            yield record.id
            record = self._records.get(record.parent_id) if record.parent_id else None

    def touch(self, session_id: str) -> None:
        self.version += 1
        for sid in self.lineage(session_id):
            self._changed[sid] = self.version
            self._changed.move_to_end(sid)

    def changed_at(self, session_id: str) -> int:
        """The version of the last change of the session's view (0: none since loading)."""
        return self._changed.get(session_id, 0)

    def settled(self, session_id: str) -> bool:
        """Whether the session and everything below it has ended."""
        return not self._open.get(session_id, 0)

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

    def select(self, filters: SessionFilter = SessionFilter()) -> list[SessionRecord]:
        """Records matching every filter given, newest first (the `limit` newest)."""
        wanted = filters.states or None
        root_id, changed_after, limit = filters.root_id, filters.changed_after, filters.limit
        pool: Iterable[str]
        if filters.parent_id is not None:
            pool = self._children.get(filters.parent_id, [])
        elif root_id is not None:
            root = self._records.get(root_id)
            pool = [root_id, *(r.id for r in self.descendants(root_id))] if root else []
        elif changed_after is not None:
            pool = self._changed_since(changed_after)
        elif wanted is not None:
            pool = [sid for state in wanted for sid in self._by_state[state]]
        else:  # everything: admission order is newest first, read only as far as needed
            newest = (self._records[sid] for sid in reversed(self._order))
            return list(itertools.islice(newest, limit) if limit else newest)
        records = self._records
        out = [
            records[sid]
            for sid in pool
            if (wanted is None or records[sid].state in wanted)
            and (root_id is None or records[sid].root_id == root_id)
            and (changed_after is None or self._changed.get(sid, 0) > changed_after)
        ]
        out.sort(key=lambda r: self._pos[r.id], reverse=True)
        return out[:limit] if limit else out

    def _changed_since(self, version: int) -> list[str]:
        """Sessions changed after `version` (the most recent changes are last: read back)."""
        out = []
        for sid, changed in reversed(self._changed.items()):
            if changed <= version:
                break
            out.append(sid)
        return out
