"""The mailbox's limits over fakes (no server, no kernel): a message too big, a mailbox full
and a sender too fast are each refused before anything is stored, naming the setting; an IDLE
agent a message reaches is woken."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from prime_kernel.daemon import usage as usage_mod
from prime_kernel.daemon.mailbox import Mailbox
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.daemon.slots import Slots
from prime_kernel.protocol.errors import MailboxFull, RateLimited, TooLarge
from prime_kernel.protocol.states import SessionKind, SessionState
from tests.daemon.conftest import shared


class FakeStore:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.read: set[tuple[str, Any]] = set()  # (message id, reader)
        self.reads = 0  # questions asked of the store about mail

    def put_message(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    def mark_read(self, message_ids: Any, reader: Any) -> None:
        self.read |= {(i, reader) for i in message_ids}

    async def unread(self, session_id: str, reader: Any, limit: int | None = None) -> list[Any]:
        self.reads += 1
        mine = [
            m
            for m in self.messages
            if m["to_id"] == session_id and (m["id"], reader) not in self.read
        ]
        return mine[:limit] if limit else mine

    async def unread_recipients(self, reader: Any) -> set[str]:
        self.reads += 1
        return {m["to_id"] for m in self.messages if (m["id"], reader) not in self.read}


def world(**limits: Any) -> tuple[Mailbox, FakeStore, LiveSession, list[str]]:
    registry = SessionRegistry()
    record = SessionRecord(
        id="s1",
        name="s1",
        prompt="p",
        state=SessionState.IDLE,
        kind=SessionKind.AGENT,
        root_id="s1",
        created=time.time(),
        usage=usage_mod.empty(),
    )
    live = registry.live["s1"] = LiveSession(registry.add(record, lambda sid, fields: None))
    store, woken = FakeStore(), []
    mailbox = Mailbox(
        shared(registry, store=store),
        slots=Slots(1),
        wake=lambda live: woken.append(live.id),
        **limits,
    )
    return mailbox, store, live, woken


def send(mailbox: Mailbox, text: str) -> list[dict[str, Any]]:
    return asyncio.run(mailbox.send(None, "s1", text))


def test_a_message_reaches_an_idle_agent_and_wakes_it() -> None:
    mailbox, store, _, woken = world()
    [receipt] = send(mailbox, "hello")
    assert receipt["to"] == "s1" and store.messages[0]["message"] == "hello"
    assert woken == ["s1"]


def test_each_limit_refuses_before_anything_is_stored_naming_its_setting() -> None:
    mailbox, store, _, _ = world(message_max_bytes=10, max_pending_messages=2)
    with pytest.raises(TooLarge, match=r"11 bytes; the limit is 10 \(c\.Mailbox\.message_max"):
        send(mailbox, "x" * 11)
    send(mailbox, "one")
    send(mailbox, "two")
    with pytest.raises(MailboxFull, match=r"2 unread messages.*c\.Mailbox\.max_pending"):
        send(mailbox, "three")
    assert [m["message"] for m in store.messages] == ["one", "two"]
    fast, _, _, _ = world(message_rate_limit=2, message_rate_window=60.0)
    send(fast, "a")
    send(fast, "b")
    with pytest.raises(RateLimited, match=r"2 messages in the last 60 s.*c\.Mailbox\.message_rate"):
        send(fast, "c")


def test_a_model_is_shown_its_mail_and_the_store_is_asked_only_when_there_may_be_some() -> None:
    mailbox, store, live, _ = world()
    live.record.state = SessionState.RUNNING  # a turn about to start: nothing to wake

    async def turns() -> list[list[str]]:
        shown = [await mailbox.for_model(live)]  # never sent anything: one question in all
        shown.append(await mailbox.for_model(live))
        await mailbox.send(None, "s1", "hello")
        shown.append(await mailbox.for_model(live))
        shown.append(await mailbox.for_model(live))  # shown already
        return shown

    assert asyncio.run(turns()) == [[], [], ["[message from user]: hello"], []]
    # The recipients of unshown mail, once; the mailbox at send (its room) and at the turn.
    assert store.reads == 3


def test_mail_a_session_had_when_the_daemon_started_is_shown_at_its_first_turn() -> None:
    mailbox, store, live, _ = world()
    # Sent while no daemon ran (a schedule's tick, a message to a stopped server's session).
    old = {"id": "m1", "to_id": "s1", "from_id": None, "sender": "schedule", "message": "tick"}
    store.put_message({**old, "ts": time.time()})
    assert asyncio.run(mailbox.for_model(live)) == ["[message from schedule]: tick"]
    assert asyncio.run(mailbox.for_model(live)) == []
