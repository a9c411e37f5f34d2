"""ReplyStream: pieces of a streamed reply merged into few notifications (the first at once),
closed with `done`, and never carrying a secret, even one split across pieces."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prime_kernel.daemon.events import EventLog
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.streaming import ReplyStream
from prime_kernel.protocol.states import SessionKind, SessionState
from prime_kernel.util.redact import REDACTED, Redactor

SECRET = "sk-live-0123456789abcdef"


class Told(list[dict[str, Any]]):
    """The deltas a listener was told, and a wait for the n-th of them."""

    def __init__(self) -> None:
        super().__init__()
        self.grew = asyncio.Event()

    def append(self, delta: dict[str, Any]) -> None:
        super().append(delta)
        self.grew.set()

    async def until(self, n: int, timeout: float = 5) -> None:
        while len(self) < n:
            self.grew.clear()
            await asyncio.wait_for(self.grew.wait(), timeout)


def _stream(interval: float = 0.05, secrets: tuple[str, ...] = ()) -> tuple[ReplyStream, Told]:
    record = SessionRecord("s1", "p", SessionState.RUNNING, SessionKind.AGENT, "r1", time.time())
    log = EventLog(store=None)  # type: ignore[arg-type]  # deltas are never stored
    told = Told()
    log.add_delta_listener(told.append)
    return ReplyStream(log, record, 3, Redactor(secrets), interval=interval), told


def test_pieces_are_merged_and_the_first_goes_at_once() -> None:
    async def run() -> list[dict[str, Any]]:
        stream, told = _stream(interval=0.05)
        stream.push("Hel")
        assert [d["text"] for d in told] == ["Hel"]  # at once, not after the interval
        for piece in ("lo", ", ", "wor", "ld"):
            stream.push(piece)
        assert len(told) == 1  # merged: they wait for the interval
        await told.until(2)  # the interval's flush
        stream.push("!")
        stream.close()
        stream.close()  # once
        stream.push("late")  # after the end: nothing
        return told

    told = asyncio.run(run())
    assert [d["text"] for d in told] == ["Hel", "lo, world", "!"]
    assert [d["seq"] for d in told] == [1, 2, 3]
    assert [d["done"] for d in told] == [False, False, True]
    assert {(d["session_id"], d["root_id"], d["call"]) for d in told} == {("s1", "r1", 3)}


def test_a_call_that_sent_nothing_is_closed_too() -> None:
    async def run() -> list[dict[str, Any]]:
        stream, told = _stream()
        with stream:
            pass  # a failure, a cancel, a reply of tool calls only
        return told

    assert asyncio.run(run()) == [
        {"session_id": "s1", "root_id": "r1", "call": 3, "seq": 1, "text": "", "done": True}
    ]


def test_a_secret_split_across_pieces_is_never_sent() -> None:
    async def run() -> list[dict[str, Any]]:
        stream, told = _stream(interval=0, secrets=(SECRET,))
        stream.push("the key is " + SECRET[:6])
        stream.push(SECRET[6:15])
        stream.push(SECRET[15:] + " and more")
        stream.push(" text ending in sk-")  # a secret's beginning, not followed by it
        stream.close()
        return told

    told = asyncio.run(run())
    sent = "".join(d["text"] for d in told)
    assert sent == f"the key is {REDACTED} and more text ending in sk-"
    assert not any(SECRET[:8] in d["text"] for d in told)
    assert told[0]["text"] == "the key is "  # held back where the secret began
