"""Streamed replies on a real server: the pieces of each model call reach jupyter_server's event
bus in order, join to the reply that is stored, and store nothing themselves; a cancel in the
middle of a stream closes it and ends the session."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from prime_kernel.models import scripted
from prime_kernel.protocol.responses import MODEL_DELTA_SCHEMA_ID

from ..conftest import events, start_session, wait_for

FIRST = "Let me count them with a loop, one number at a time, and print the total."
LAST = "There are 25 primes below 100, as the loop printed."


class Deltas:
    """The ModelDelta notifications of one websocket subscription to the event bus."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.got: list[dict[str, Any]] = []
        self.task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        while True:
            raw = await self.ws.read_message()
            if raw is None:
                return
            message = json.loads(raw)
            if message.get("schema_id") == MODEL_DELTA_SCHEMA_ID:
                self.got.append(message)

    def of(self, session_id: str) -> list[dict[str, Any]]:
        return [d for d in self.got if d["session_id"] == session_id]

    def close(self) -> None:
        self.task.cancel()
        self.ws.close()


@pytest.fixture
def deltas(jp_ws_fetch, jp_asyncio_loop):
    ws = jp_asyncio_loop.run_until_complete(jp_ws_fetch("api", "events", "subscribe"))
    subscription = jp_asyncio_loop.run_until_complete(_subscribe(ws))
    yield subscription
    subscription.close()


async def _subscribe(ws: Any) -> Deltas:
    return Deltas(ws)  # its reader runs on the test's loop


def _turns(pieces: int) -> list[dict[str, Any]]:
    return [
        {"text": FIRST, "code": "print(25)", "pieces": pieces, "piece_delay": 0.01},
        {"text": LAST, "pieces": pieces, "piece_delay": 0.01},
    ]


async def test_deltas_arrive_in_order_and_join_to_the_stored_reply(daemon, jp_fetch, deltas):
    model = scripted.register_script("streamed", _turns(12))
    sid = await start_session(jp_fetch, "how many primes below 100?", model=model)
    record = daemon.registry.get(sid)
    await wait_for(lambda: record.terminal)
    await wait_for(lambda: sum(d["done"] for d in deltas.of(sid)) == 2)

    got = deltas.of(sid)
    assert {d["root_id"] for d in got} == {sid}
    replies = [e["data"]["content"] for e in await events(daemon, sid, "assistant")]
    assert replies == [FIRST, LAST]
    for call, reply in enumerate(replies, start=1):
        mine = [d for d in got if d["call"] == call]
        # Numbered from 1 in the order sent, the first one alone (it came at once), the last
        # one closing the call.
        assert [d["seq"] for d in mine] == list(range(1, len(mine) + 1))
        assert [d["done"] for d in mine] == [False] * (len(mine) - 1) + [True]
        assert "".join(d["text"] for d in mine) == reply
        assert 1 < len(mine) <= 13
    assert record.state.value == "DONE"


async def test_nothing_is_stored_per_piece(daemon, jp_fetch, deltas):
    stored = []
    for pieces in (1, 40):
        model = scripted.register_script(f"pieces_{pieces}", _turns(pieces))
        sid = await start_session(jp_fetch, "how many primes below 100?", model=model)
        record = daemon.registry.get(sid)
        await wait_for(lambda record=record: record.terminal)
        kinds = [e["kind"] for e in await daemon.listing.events(sid)]
        stored.append([k for k in kinds if k != "snapshot"])
        calls = await events(daemon, sid, "model_call")
        assert [c["data"]["finish_reason"] for c in calls] == ["tool_calls", "stop"]
    # Forty pieces a reply store exactly what one piece does.
    assert stored[0] == stored[1]


async def test_cancel_in_the_middle_of_a_stream_ends_it(daemon, jp_fetch, deltas):
    sent: list[str] = []
    model = scripted.register_script(
        "long_stream", [{"text": "word " * 600, "pieces": 600, "piece_delay": 0.05}]
    )
    scripted.on_piece = lambda name, piece, at: sent.append(piece) if name == model else None
    try:
        sid = await start_session(jp_fetch, "talk for a while", model=model)
        await wait_for(lambda: len(deltas.of(sid)) >= 2)
        reply = await jp_fetch("api", "prime", "sessions", sid, method="DELETE")
        assert json.loads(reply.body)["cancelled"] == [sid]
        # The cancel returns once the session ended: its stream was closed with it.
        assert daemon.registry.get(sid).state.value == "CANCELLED"
        closed_at = len(sent)
        await wait_for(lambda: any(d["done"] for d in deltas.of(sid)))
        streamed = "".join(d["text"] for d in deltas.of(sid))
        assert 0 < len(streamed) < len("word " * 600)
        assert [d["done"] for d in deltas.of(sid)][-1] is True
        # The provider sends nothing more once its stream was closed.
        await asyncio.sleep(0.3)  # six pieces' time: none may come
        assert len(sent) == closed_at
    finally:
        scripted.on_piece = None


async def test_an_interrupt_stops_the_reply_and_the_agent_goes_on(daemon, jp_fetch, deltas):
    seen: list[list[dict[str, Any]]] = []

    def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append(messages)
        return {"code": "answer(7)"}

    long = "word " * 600
    model = scripted.register_script(
        "interrupted",
        [{"text": long, "pieces": 600, "piece_delay": 0.05, "code": "answer(1)"}, answer],
    )
    sid = await start_session(jp_fetch, "talk, then answer", model=model)
    await wait_for(lambda: len(deltas.of(sid)) >= 2)
    await jp_fetch("api", "prime", "sessions", sid, "interrupt", method="POST", body="{}")
    record = daemon.registry.get(sid)
    await wait_for(lambda: record.terminal)

    assert record.state.value == "DONE" and record.answer_repr == "7"
    first = [d for d in deltas.of(sid) if d["call"] == 1]
    assert first[-1]["done"] is True
    said = (await events(daemon, sid, "assistant"))[0]["data"]
    # What was said is kept (what the deltas showed), its unfinished code dropped and not run.
    assert said["content"] == "".join(d["text"] for d in first)
    assert 0 < len(said["content"]) < len(long) and not said["tool_calls"]
    calls = await events(daemon, sid, "model_call")
    assert [c["data"]["finish_reason"] for c in calls] == ["interrupted", "tool_calls"]
    assert calls[0]["data"]["usage"]["completion_tokens"] > 0  # what it said is billed
    cells = await events(daemon, sid, "cell")
    assert [c["data"]["code"] for c in cells] == ["answer(7)"]
    # The model is told, at its next turn, after what it said.
    assert seen[0][-2]["content"] == said["content"]
    assert "A person interrupted your reply" in seen[0][-1]["content"]
