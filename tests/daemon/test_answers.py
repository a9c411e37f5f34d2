"""Answers over fakes (no server, no kernel, no store on disk): an answer is recorded and told
after the cell that gave it, counts for the current run only, lets waiters go once a session
that waits for more is IDLE, and is read back pickled (a reply's text too)."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest

from prime_kernel.daemon.answers import Answers
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.protocol.errors import Forbidden, InvalidRequest, NotFound
from prime_kernel.protocol.states import SessionKind, SessionState
from tests.daemon.conftest import agent_record, shared


class FakeStore:
    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def has_blob(self, blob_id: str) -> bool:
        return blob_id in self.blobs

    async def get_blob(self, blob_id: str) -> bytes:
        return self.blobs[blob_id]


class FakeEvents:
    def __init__(self) -> None:
        self.told: list[tuple[str, dict[str, Any]]] = []

    def emit(self, record: Any, kind: Any, data: dict[str, Any]) -> dict[str, Any]:
        self.told.append((kind.value, data))
        return data


class World:
    def __init__(self) -> None:
        self.registry = SessionRegistry()
        self.store = FakeStore()
        self.events = FakeEvents()
        self.answers = Answers(
            shared(self.registry, store=self.store, events=self.events), put_blob=self.put_blob
        )

    async def put_blob(self, data: bytes | bytearray, what: str) -> str:
        blob_id = f"b{len(self.store.blobs)}"
        self.store.blobs[blob_id] = bytes(data)
        return blob_id

    def session(self, sid: str, **fields: Any) -> LiveSession:
        record = self.registry.add(agent_record(sid, **fields), lambda sid, fields: None)
        return self.registry.attach(record)


def test_an_answer_from_the_kernel_is_kept_as_it_came_and_read_back() -> None:
    async def main() -> None:
        w = World()
        live = w.session("s1")
        assert not w.answers.answered(live)
        await w.answers.give(live, pickle.dumps([1, 2]), "[1, 2]")
        assert w.answers.answered(live)
        assert live.record.answer_repr == "[1, 2]" and live.record.answer_blob == "b0"
        assert w.events.told == [("answer", {"repr": "[1, 2]", "kind": "answer"})]
        assert pickle.loads(await w.answers.answer_bytes("s1")) == [1, 2]
        with pytest.raises(InvalidRequest, match="it was empty"):
            await w.answers.give(live, b"", "x")

    asyncio.run(main())


def test_a_reply_is_the_answer_its_text_pickled_on_demand() -> None:
    async def main() -> None:
        w = World()
        live = w.session("s1")
        w.answers.record(live, None, "forty-two", "reply")
        assert pickle.loads(await w.answers.answer_bytes("s1")) == "forty-two"
        w.session("s2")
        with pytest.raises(NotFound, match="session s2 has no answer"):
            await w.answers.answer_bytes("s2")

    asyncio.run(main())


def test_only_agents_answer() -> None:
    w = World()
    notebook = w.session("n1", kind=SessionKind.NOTEBOOK)
    with pytest.raises(Forbidden, match="for agent sessions"):
        w.answers.record(notebook, None, "x", "reply")
    assert not w.answers.answered(notebook)


def test_an_answer_given_in_a_cell_is_told_after_that_cell() -> None:
    w = World()
    live = w.session("s1")
    w.answers.hold(live)
    w.answers.record(live, None, "7", "answer")
    assert w.events.told == [] and w.answers.answered(live)  # the loop knows at once
    w.events.told.append(("cell", {}))  # what the host tells when the cell ends
    w.answers.release(live)
    assert [kind for kind, _ in w.events.told] == ["cell", "answer"]
    w.answers.release(live)  # nothing held twice
    assert len(w.events.told) == 2


def test_an_answer_counts_for_its_run_and_lets_waiters_go_once_idle() -> None:
    w = World()
    live = w.session("s1")
    w.answers.record(live, None, "1", "reply")
    assert not live.settled.is_set()  # RUNNING: the run settles it (DONE or IDLE)
    live.record.update(state=SessionState.IDLE)
    w.answers.entered_idle(live.record, live, SessionState.RUNNING)
    assert live.settled.is_set()

    # Woken for another request: no answer yet, and waiters wait for the next.
    w.answers.forget(live)
    assert not w.answers.answered(live) and not live.settled.is_set()
    assert live.record.answer_repr is None and live.record.answer_blob is None
    w.answers.entered_idle(live.record, live, SessionState.RUNNING)
    assert not live.settled.is_set()  # idle without an answer: nothing to look at
    # Answered while IDLE (a replayed child's recorded answer): settled at once.
    w.answers.record(live, None, "2", "reply")
    assert live.settled.is_set()


def test_an_answer_the_record_kept_counts_once_asked_for() -> None:
    w = World()
    live = w.session("s1", answer_repr="from before a restart")
    assert not w.answers.answered(live)
    assert w.answers.kept(live) and w.answers.answered(live)
    w.answers.session_ended(live.record, live, SessionState.RUNNING)
    assert not w.answers.answered(live)
    assert not w.answers.kept(w.session("s2"))
