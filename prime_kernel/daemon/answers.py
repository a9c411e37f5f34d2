"""Answers: what a session answered, how it reaches the run that waits for it, and the value a
kernel asks for back.

An agent answers from its REPL (`answer(value)`: the value comes pickled and is kept as a blob,
its repr in the record), by a turn that ends without code (a reply: its text is the answer), or,
replayed, as its recording did. `Answers` records it, tells the event log (after the cell that
answered, never before it: `hold` / `release`), and is what the loop, the run and autonomy ask
whether the session has answered this run (`answered`); a new run or continuation starts with
none (`forget`). Whoever waits on a session (`Runs.wait`) is let go once a session that waits
for more has answered and gone IDLE (the `entered_idle` effect); the lifecycle lets them go
when a session ends.
"""

from __future__ import annotations

import pickle
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol.errors import Forbidden, InvalidRequest, NotFound
from ..protocol.events import EventKind
from ..protocol.states import SessionState
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared

PutBlob = Callable[[bytes | bytearray, str], Awaitable[str]]


class Answers:
    def __init__(self, shared: Shared, *, put_blob: PutBlob) -> None:
        self.registry = shared.registry
        self.store = shared.store
        self.events = shared.events
        # Keeps a blob once its size is checked (Admission.put_blob).
        self.put_blob = put_blob
        # Sessions that answered in their current run.
        self._answered: set[str] = set()
        # Answer events of sessions whose agent cell runs now, told once that cell's is.
        self._held: dict[str, list[dict[str, Any]]] = {}

    # -- answering ------------------------------------------------------------------------
    async def give(self, live: LiveSession, data: bytes | bytearray, text: str) -> None:
        """answer(value) from `live`'s kernel: `data` is the value pickled, kept as it came."""
        check_answering(live)
        if not data:
            raise InvalidRequest("answer() sends its value pickled as the body; it was empty")
        self.record(live, await self.put_blob(data, "the answer"), text, "answer")

    def record(self, live: LiveSession, blob: str | None, text: str, kind: str) -> None:
        """The session's answer: a blob (None: `text` is the answer itself, a reply) and its
        repr; `kind` says how it came ("answer", "reply")."""
        check_answering(live)
        self._answered.add(live.id)
        live.record.update(answer_repr=text, answer_blob=blob)
        text = live.record.answer_repr or ""  # as stored: scrubbed
        event = {"repr": text, "kind": kind}
        held = self._held.get(live.id)
        if held is not None:
            held.append(event)  # after the cell that answered
        else:
            self.events.emit(live.record, EventKind.ANSWER, event)
        if live.state == SessionState.IDLE:
            live.settled.set()

    def answered(self, live: LiveSession) -> bool:
        """Whether the session answered in its current run."""
        return live.id in self._answered

    def kept(self, live: LiveSession) -> bool:
        """Whether the session has an answer: of this run, or the one its record kept (an
        autonomous session's, given before a restart), which then counts as this run's."""
        if live.record.answer_repr is not None:
            self._answered.add(live.id)
        return self.answered(live)

    def forget(self, live: LiveSession) -> None:
        """A new run (a woken session) or continuation: the answer given belongs to what it
        answered; whoever waits on the session now waits for the next."""
        self._answered.discard(live.id)
        live.settled.clear()
        if live.record.answer_blob or live.record.answer_repr is not None:
            live.record.update(answer_repr=None, answer_blob=None)

    # -- while an agent cell runs -----------------------------------------------------------
    def hold(self, live: LiveSession) -> None:
        """An agent cell starts: its answer is told after the cell's own event."""
        self._held[live.id] = []

    def release(self, live: LiveSession) -> None:
        """The cell's event is told: now what it answered."""
        for event in self._held.pop(live.id, []):
            self.events.emit(live.record, EventKind.ANSWER, event)

    # -- lifecycle effects -----------------------------------------------------------------
    def entered_idle(self, record: SessionRecord, live: LiveSession | None, _: Any) -> None:
        """(An effect of IDLE.) A session that answered and waits for more has settled."""
        if live is not None and self.answered(live):
            live.settled.set()

    def session_ended(self, record: SessionRecord, live: LiveSession | None, _: Any) -> None:
        """(An effect of the terminal states.) Nothing more to keep of its run."""
        self._answered.discard(record.id)
        self._held.pop(record.id, None)

    # -- reading --------------------------------------------------------------------------
    async def answer_bytes(self, session_id: str) -> bytes:
        """The session's answer, pickled (a reply's text pickled on demand)."""
        record = self.registry.get(session_id)
        if record.answer_blob is None and record.answer_repr is not None:
            return pickle.dumps(record.answer_repr)  # a reply: the text is the answer
        if not record.answer_blob or not self.store.has_blob(record.answer_blob):
            raise NotFound(f"session {session_id} has no answer")
        return await self.store.get_blob(record.answer_blob)


def check_answering(live: LiveSession) -> None:
    if not live.record.is_agent:
        raise Forbidden("answer() is for agent sessions; this kernel is not running one")
