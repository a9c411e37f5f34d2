"""Context compaction end to end: a real kernel, the real litellm path, a small window."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from prime_kernel.daemon.compaction import SUMMARY_HEADER, SUMMARY_INSTRUCTION
from prime_kernel.daemon.daemon import Daemon
from prime_kernel.models import scripted
from tests.conftest import start_session

BIG_OUTPUT = "print(' '.join(f'row{i}' for i in range(300)))"
WINDOW = 2500


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    return {**prime_config, "compact_keep_recent": 2}


class Model:
    """A scripted model whose turns are chosen by what it has seen, not by how many turns it
    took (compaction removes earlier assistant messages). Requests are kept for inspection."""

    def __init__(self, play: Any, window: int = 32768) -> None:
        self.play = play
        self.requests: list[list[dict[str, Any]]] = []
        self.summary_calls = 0
        self.name = scripted.register_script(
            f"compact_{uuid.uuid4().hex[:8]}", [self.turn] * 30, context_window=window
        )

    def turn(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if SUMMARY_INSTRUCTION in str(messages[0]["content"]):
            self.summary_calls += 1
            return {"text": "The agent set x = 42 and printed big tables of rows."}
        self.requests.append([dict(m) for m in messages])
        summarised = any(SUMMARY_HEADER in str(m.get("content")) for m in messages)
        return dict(self.play(len(self.requests), summarised))


def _after_summary(model: Model) -> list[dict[str, Any]]:
    """The first request the model got with a summary in it."""
    return next(r for r in model.requests if any(SUMMARY_HEADER in str(m["content"]) for m in r))


async def _run(daemon: Daemon, jp_fetch: Any, model: Model) -> tuple[dict[str, Any], list[Any]]:
    sid = await start_session(jp_fetch, "Count the rows.", model=model.name)
    record = await daemon.runs.wait(sid, 90)
    return record, await daemon.listing.events(sid)


async def test_a_long_session_is_compacted_near_the_window(daemon, jp_fetch):
    def play(n: int, summarised: bool) -> dict[str, Any]:
        if summarised:
            return {"code": "answer(x + 1)"}
        return {"code": "x = 42"} if n == 1 else {"code": BIG_OUTPUT}

    model = Model(play, window=WINDOW)
    record, events = await _run(daemon, jp_fetch, model)
    assert record["state"] == "DONE", record
    assert record["answer_repr"] == "43"  # x, defined in a summarised turn, still exists

    (event,) = [e["data"] for e in events if e["kind"] == "compaction"]
    assert event["reason"] == "window"
    assert event["before_tokens"] > 0.8 * WINDOW > event["after_tokens"]
    assert event["summary"] == "The agent set x = 42 and printed big tables of rows."
    assert event["summarised_messages"] >= 2

    request = _after_summary(model)
    first = model.requests[0]
    assert request[:2] == first[:2]  # the system prompt and the task, verbatim
    assert request[0]["role"] == "system" and request[1]["content"].startswith("Task: Count")
    summary = request[2]["content"]
    assert summary.startswith(SUMMARY_HEADER) and event["summary"] in summary
    assert "still exist in your REPL" in summary
    # The old middle (the turn that defined x) is gone from the prompt.
    assert not any("x = 42" in str(m.get("tool_calls")) for m in request)
    assert len(request) == 3 + 2  # head, summary, the kept last turn

    # The summary call is counted like any model call of the session.
    assert model.summary_calls == 1
    calls = [e for e in events if e["kind"] == "model_call"]
    assert len(calls) == len(model.requests) + 1
    assert record["usage"]["own"]["model_calls"] == len(model.requests) + 1


async def test_compact_from_a_cell_compacts_before_the_next_turn(daemon, jp_fetch):
    def play(n: int, summarised: bool) -> dict[str, Any]:
        if summarised:
            return {"code": "answer(x)"}
        return {"code": "x = 7"} if n == 1 else {"code": "print(compact())"}

    model = Model(play)  # a big window: only compact() triggers it
    record, events = await _run(daemon, jp_fetch, model)
    assert record["state"] == "DONE", record
    assert record["answer_repr"] == "7"
    (event,) = [e["data"] for e in events if e["kind"] == "compaction"]
    assert event["reason"] == "requested" and event["summarised_messages"] == 2
    request = _after_summary(model)
    assert len(model.requests) == 3 and request is model.requests[2]
    assert not any("x = 7" in str(m.get("tool_calls")) for m in request)
    assert "summarised before your next turn" in str(request[-1]["content"])


async def test_compact_in_a_notebook_kernel_is_refused(daemon, user_kernel):
    nb = await user_kernel()
    result = await nb.run("compact()")
    (error,) = [o for o in result.outputs if o["output_type"] == "error"]
    assert error["ename"] == "Forbidden"
    assert "compact() is for agent sessions" in error["evalue"]
