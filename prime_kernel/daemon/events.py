"""Recording trajectory events and telling listeners about them.

`EventLog.emit` is the one place an event is made: it is enqueued to the store (which scrubs
its data of every secret the daemon knows: live session tokens, the server's token, provider
keys), then listeners (the server's event bus, the CLI's progress view, the daemon's own
reactions) get a `SessionEvent`, which carries no data of its own.

`EventLog.delta` is the path that stores nothing: a piece of a model reply as it streams (the
protocol's ModelDelta), for delta listeners only (the server's event bus).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..protocol.events import EventKind
from .records import SessionRecord
from .store import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionEvent:
    """What a listener is told: which session, what kind of event, and its state now."""

    session_id: str
    kind: str
    state: str
    seq: int
    root_id: str
    parent_id: str | None

    def to_json(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it deep-copies field by field, on every event.
        return {
            "session_id": self.session_id,
            "kind": self.kind,
            "state": self.state,
            "seq": self.seq,
            "root_id": self.root_id,
            "parent_id": self.parent_id,
        }


Listener = Callable[[SessionEvent], None]
# Told of each ModelDelta (protocol/responses.py MODEL_DELTA), a dict ready for the event bus.
DeltaListener = Callable[[dict[str, Any]], None]


class EventLog:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._listeners: list[Listener] = []
        self._delta_listeners: list[DeltaListener] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def add_delta_listener(self, listener: DeltaListener) -> None:
        self._delta_listeners.append(listener)

    def remove_delta_listener(self, listener: DeltaListener) -> None:
        with contextlib.suppress(ValueError):
            self._delta_listeners.remove(listener)

    def delta(self, record: SessionRecord, call: int, seq: int, text: str, done: bool) -> None:
        """Tell the delta listeners of a piece of a streamed reply; nothing is stored."""
        note = {
            "session_id": record.id,
            "root_id": record.root_id,
            "call": call,
            "seq": seq,
            "text": text,
            "done": done,
        }
        for listener in list(self._delta_listeners):
            try:
                listener(note)
            except Exception:
                log.exception("a delta listener failed")

    def emit(self, record: SessionRecord, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]:
        event = self.store.append_event(record.id, kind.value, data)
        note = SessionEvent(
            record.id,
            kind.value,
            record.state.value,
            event["seq"],
            record.root_id,
            record.parent_id,
        )
        for listener in list(self._listeners):
            try:
                listener(note)
            except Exception:
                log.exception("a session listener failed")
        return event
