"""The compaction policy over a real Daemon and store, with a fake model gateway (no kernels)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traitlets import TraitError
from traitlets.config import Config

from prime_kernel.daemon import compaction
from prime_kernel.daemon.compaction import SUMMARY_HEADER, SUMMARY_INSTRUCTION, compact_messages
from prime_kernel.daemon.daemon import Daemon
from prime_kernel.daemon.session import LiveSession
from prime_kernel.models.prompts import FENCED_EXAMPLE
from prime_kernel.models.router import Completion, ModelRouter
from prime_kernel.protocol.errors import Forbidden, ModelError
from prime_kernel.protocol.states import SessionKind
from tests.daemon.conftest import agent_record


class FakeRouter(ModelRouter):
    """A window of `window` tokens, four characters a token, and a canned summary."""

    def __init__(self, window: int | None = 1000, fail: bool = False) -> None:
        super().__init__()
        self.window = window
        self.fail = fail
        self.prompts: list[str] = []

    def context_window(self, model: str) -> int | None:
        return self.window

    def count_tokens(self, model: str, messages: list[dict[str, Any]]) -> int:
        return sum(len(json.dumps(m)) for m in messages) // 4

    async def text(self, model: str, prompt: str, **kwargs: Any) -> Completion:
        self.prompts.append(prompt)
        if self.fail:
            raise ModelError("model call to 'x' failed: rate limited")
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        return Completion({"role": "assistant", "content": "x holds 42"}, "stop", usage, 0.5)


def _call(i: int, code: str) -> dict[str, Any]:
    arguments = json.dumps({"code": code})
    return {
        "id": f"c{i}",
        "type": "function",
        "function": {"name": "python", "arguments": arguments},
    }


def _conversation(turns: int, *, calls_per_turn: int = 1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "system prompt"},
        {"role": "user", "content": "Task: count things"},
    ]
    for t in range(turns):
        calls = [_call(t * 10 + k, f"x{t}_{k} = {t}") for k in range(calls_per_turn)]
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "o" * 400})
    return messages


def test_tail_never_separates_tool_replies_from_their_call() -> None:
    messages = _conversation(4, calls_per_turn=3)  # each turn: assistant + 3 tool replies
    head = compaction.head_length(messages)
    assert head == 2
    start = compaction.tail_start(messages, head, keep_recent=6)
    assert messages[start]["role"] == "assistant"
    assert len(messages) - start == 8  # two whole turns: 6 asked for, moved back to a call
    assert compaction.tail_start(messages, head, keep_recent=0) == len(messages)


def test_head_keeps_the_fenced_examples_and_the_task() -> None:
    messages = [
        {"role": "system", "content": "s"},
        *[dict(m) for m in FENCED_EXAMPLE],
        {"role": "user", "content": "Task: t"},
        {"role": "assistant", "content": "```python\nx = 1\n```"},
    ]
    assert compaction.head_length(messages) == 4


def test_middle_is_replaced_by_one_summary_message() -> None:
    gateway = FakeRouter()
    messages = _conversation(5)
    result = asyncio.run(
        compact_messages(gateway, "m", messages, keep_recent=4, window=1000, temperature=0)
    )
    assert result is not None and result.error is None
    assert result.summarised == 6  # three turns of assistant + tool
    head, summary, *tail = result.messages[1:]
    assert result.messages[0] == messages[0] and head == messages[1]
    assert tail == messages[-4:]
    assert summary["role"] == "user"
    assert summary["content"].startswith(SUMMARY_HEADER)
    assert "still exist in your REPL" in summary["content"]
    assert summary["content"].endswith("x holds 42")
    # The summariser saw the task and the summarised code, not the kept turns.
    (prompt,) = gateway.prompts
    assert SUMMARY_INSTRUCTION in prompt and "Task: count things" in prompt
    assert "x0_0 = 0" in prompt and "x2_0 = 2" in prompt and "x3_0" not in prompt


def test_failed_summary_drops_the_middle_with_a_note() -> None:
    messages = _conversation(5)
    result = asyncio.run(
        compact_messages(FakeRouter(fail=True), "m", messages, keep_recent=4, window=1000)
    )
    assert result is not None and result.completion is None
    assert result.error is not None and "rate limited" in result.error
    note = result.messages[2]["content"]
    assert note.startswith(SUMMARY_HEADER) and "no summary could be made" in note
    assert "still exist in your REPL" in note
    assert result.messages[3:] == messages[-4:]


def test_nothing_between_task_and_recent_turns_is_left_alone() -> None:
    messages = _conversation(2)
    assert (
        asyncio.run(compact_messages(FakeRouter(), "m", messages, keep_recent=6, window=None))
        is None
    )


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    config = Config({"Host": {"compact_at": 0.5, "compact_keep_recent": 2}})
    d = Daemon(root_dir=str(tmp_path), config=config)
    d.host.router = FakeRouter(window=1000)
    d.open()
    yield d
    asyncio.run(d.store.close())


def _session(daemon: Daemon, messages: list[dict[str, Any]], kind: str = "agent") -> LiveSession:
    record = agent_record(
        "s1", prompt="count things", model="fake/model", kind=SessionKind(kind), started=time.time()
    )
    daemon.store.insert_session(record.to_row())
    daemon.registry.add(record, daemon.store.update_session)
    live = daemon.registry.attach(record)
    live.conversation.load(messages)
    return live


def _compactions(daemon: Daemon) -> list[dict[str, Any]]:
    found = asyncio.run(daemon.store.events("s1", kinds=["compaction"]))
    return [e["data"] for e in found]


def test_compacts_past_the_threshold_and_counts_the_summary_call(daemon: Daemon) -> None:
    live = _session(daemon, _conversation(2))  # about 300 tokens: under half the window
    asyncio.run(daemon.host.before_turn(live))
    assert _compactions(daemon) == [] and len(live.conversation) == 6

    live.conversation.load(_conversation(5))  # about 700 tokens
    asyncio.run(daemon.host.before_turn(live))
    (event,) = _compactions(daemon)
    assert event["reason"] == "window" and event["summarised_messages"] == 8
    assert event["summary"] == "x holds 42"
    assert event["before_tokens"] > 500 > event["after_tokens"]
    assert len(live.conversation) == 5  # system, task, summary, the last turn
    assert live.record.usage["model_calls"] == 1
    assert live.record.usage["total_tokens"] == 110
    # The compacted conversation is what the store keeps (a restarted daemon resumes it).
    assert asyncio.run(daemon.store.conversation("s1")) == live.conversation.messages


def test_zero_turns_automatic_compaction_off_but_compact_still_works(daemon: Daemon) -> None:
    daemon.host.compact_at = 0
    live = _session(daemon, _conversation(5))
    asyncio.run(daemon.host.before_turn(live))
    assert _compactions(daemon) == []

    assert daemon.host.request_compaction(live) == {"session_id": "s1", "requested": True}
    asyncio.run(daemon.host.before_turn(live))
    (event,) = _compactions(daemon)
    assert event["reason"] == "requested" and not live.compact_requested


def test_a_failed_summary_is_recorded_and_the_session_goes_on(daemon: Daemon) -> None:
    daemon.host.router = FakeRouter(window=1000, fail=True)
    live = _session(daemon, _conversation(5))
    asyncio.run(daemon.host.before_turn(live))
    (event,) = _compactions(daemon)
    assert event["summary"] == "" and "rate limited" in event["error"]
    assert live.record.usage["model_calls"] == 0
    assert live.conversation[2]["content"].startswith(SUMMARY_HEADER)


def test_compact_is_refused_for_a_notebook_session(daemon: Daemon) -> None:
    with pytest.raises(Forbidden, match="compact\\(\\) is for agent sessions"):
        daemon.host.request_compaction(_session(daemon, [], kind="notebook"))


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_compact_at_must_be_a_fraction(tmp_path: Path, value: float) -> None:
    with pytest.raises(TraitError):
        Daemon(root_dir=str(tmp_path), config=Config({"Host": {"compact_at": value}}))
