"""What the loop's host decides, with fakes for every collaborator (no server, no kernel, no
store): the accounting of a model call, the limits checked before a turn, when the
conversation is compacted, when a snapshot is due, a person's cell shown to the model, and how
`llm.batch()` is bounded."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.answers import Answers
from prime_kernel.daemon.host import Host
from prime_kernel.daemon.kernel_side import KernelSide
from prime_kernel.daemon.kernels import CellResult
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import Conversation, LiveSession
from prime_kernel.models.router import Completion
from prime_kernel.protocol.errors import BudgetExceeded, PrimeError
from tests.daemon.conftest import FakeEvents, agent_record, shared

USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


class FakeRouter:
    """A window of 1000 tokens (four characters a token); every call replies "ok"."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most_in_flight = 0
        self.summaries = 0

    def context_window(self, model: str) -> int | None:
        return 1000

    def count_tokens(self, model: str, messages: list[dict[str, Any]]) -> int:
        return sum(len(json.dumps(m)) for m in messages) // 4

    async def ready(self) -> None:
        pass

    def validate(self, model: str) -> None:
        pass

    async def text(self, model: str, prompt: str, **kwargs: Any) -> Completion:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0)  # let the other calls of a batch start, if the gate allows
        self.in_flight -= 1
        if "summar" in prompt.lower():
            self.summaries += 1
        return Completion({"role": "assistant", "content": "ok"}, "stop", USAGE, 0.25)


class FakeMailbox:
    def __init__(self, mail: list[str]) -> None:
        self.mail = mail

    async def for_model(self, live: LiveSession) -> list[str]:
        mail, self.mail = self.mail, []
        return mail


class FakeDisk:
    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, doing: str = "") -> None:
        self.checked.append(doing)


class Fake:
    """Whatever is called on it does nothing and returns None (autonomy, spills, …)."""

    def __init__(self, **returns: Any) -> None:
        self.returns = returns
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return self.returns.get(name)

        return call


class AsyncFalse(Fake):
    async def auto_spill(self, live: LiveSession, why: str) -> bool:
        return False


def make(
    *, mail: list[str] | None = None, waits: bool = False, config: dict[str, Any] | None = None
) -> tuple[Host, LiveSession, dict[str, Any]]:
    registry = SessionRegistry()
    record = agent_record(
        "s1",
        prompt="count things",
        model="fake/model",
        started=time.time() - 100,
        budget={"tokens": 250},
    )
    registry.add(record, lambda sid, fields: None)
    live = LiveSession(record, Conversation())
    parts: dict[str, Any] = {
        "router": FakeRouter(),
        "events": FakeEvents(),
        "disk": FakeDisk(),
        "passivation": Fake(),
    }
    common = shared(registry, store=Fake(), events=parts["events"])
    parts["answers"] = Answers(common, put_blob=Fake())  # type: ignore[arg-type]
    host = Host(
        common,
        router=parts["router"],
        kernels=KernelSide(
            custody=Fake(),  # type: ignore[arg-type]
            snapshots=Fake(),  # type: ignore[arg-type]
            spills=AsyncFalse(),  # type: ignore[arg-type]
            passivation=parts["passivation"],
            recovery=Fake(),  # type: ignore[arg-type]
        ),
        mailbox=FakeMailbox(mail or []),
        goals=Fake(),
        autonomy=Fake(),
        admission=Fake(resolve_model="fake/model"),
        harness=Fake(),
        learner=Fake(),
        replays=Fake(),
        disk=parts["disk"],
        redactor=lambda: None,  # type: ignore[arg-type,return-value]
        turn_taken=lambda: None,
        waits_after_answer=lambda live: waits,
        answers=parts["answers"],
        unreachable=lambda: "",
        config=Config({"Host": config or {}}),
    )
    return host, live, parts


def test_a_completion_is_counted_and_recorded_as_a_model_call() -> None:
    host, live, parts = make()
    completion = Completion({"role": "assistant", "content": "hi"}, "stop", USAGE, 0.5, 1.23)
    host.account(live, completion, purpose="llm", cache_break={"at": 2})
    assert live.record.usage["model_calls"] == 1 and live.record.usage["total_tokens"] == 110
    assert live.record.usage["cost"] == 0.5
    [event] = parts["events"].of("model_call")
    assert event["model"] == "fake/model" and event["purpose"] == "llm"
    assert event["duration"] == 1.23 and event["cache_break"] == {"at": 2}
    host.account(live, completion, model="replay/other")
    assert parts["events"].of("model_call")[1]["model"] == "replay/other"
    assert "purpose" not in parts["events"].of("model_call")[1]


def test_before_a_turn_notes_and_mail_are_shown_and_the_budget_is_checked() -> None:
    host, live, parts = make(mail=["[message from a]"])
    live.notes.append("[a note]")
    asyncio.run(host.before_turn(live))
    contents = [m["content"] for m in live.conversation.messages]
    assert contents == ["[a note]", "[message from a]"] and live.notes == []
    assert parts["disk"].checked == ["another turn"]

    # Past its budget (250 tokens: three calls of 110), the next turn is refused.
    for _ in range(3):
        host.account(live, Completion({}, "stop", USAGE))
    with pytest.raises(BudgetExceeded):
        asyncio.run(host.before_turn(live))
    live.cancelling = True
    with pytest.raises(asyncio.CancelledError):
        host.check_limits(live)


def _turns(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "system prompt"},
        {"role": "user", "content": "Task: count things"},
    ]
    for t in range(n):
        messages.append({"role": "assistant", "content": f"```python\nx{t} = {t}\n```"})
        messages.append({"role": "user", "content": "o" * 400})
    return messages


def test_compaction_starts_once_the_prompt_fills_compact_at_of_the_window() -> None:
    host, live, parts = make(config={"compact_at": 0.5, "compact_keep_recent": 2})
    live.conversation.load(_turns(2))  # about 250 tokens of 1000
    asyncio.run(host.before_turn(live))
    assert parts["events"].of("compaction") == [] and len(live.conversation) == 6

    live.conversation.load(_turns(6))  # about 700 tokens
    asyncio.run(host.before_turn(live))
    [event] = parts["events"].of("compaction")
    assert event["reason"] == "window" and len(live.conversation) < 14
    # The summary call is billed to the session, marked as a compaction's.
    [call] = parts["events"].of("model_call")
    assert call["purpose"] == "compaction" and live.record.usage["model_calls"] == 1
    assert live.prefix.planned  # the cached prefix's one meant break


def test_zero_compact_at_compacts_only_when_asked() -> None:
    host, live, parts = make(config={"compact_at": 0, "compact_keep_recent": 2})
    live.conversation.load(_turns(6))
    asyncio.run(host.before_turn(live))
    assert parts["events"].of("compaction") == []
    host.request_compaction(live)
    asyncio.run(host.before_turn(live))
    assert parts["events"].of("compaction")[0]["reason"] == "requested"


@pytest.mark.parametrize(
    ("overhead", "cost", "answered", "waits", "due"),
    [
        (0.05, 1.0, False, False, True),  # 1 s of snapshots in 100 s: under 5 %
        (0.05, 9.0, False, False, False),  # 9 s: over it
        (0.0, 0.0, False, False, False),  # off
        (0.05, 0.0, True, False, False),  # answered and ending: never resumed
        (0.05, 0.0, True, True, True),  # answered, but waits for more
    ],
)
def test_a_snapshot_is_due_while_snapshots_stay_a_small_share_of_the_time(
    overhead: float, cost: float, answered: bool, waits: bool, due: bool
) -> None:
    host, live, parts = make(waits=waits, config={"snapshot_overhead": overhead})
    live.snapshot_cost = cost
    if answered:
        parts["answers"].record(live, None, "42", "reply")
    assert host.snapshot_due(live) is due


def test_a_persons_cell_is_recorded_and_shown_to_the_model_cut_to_observation_chars() -> None:
    host, live, parts = make(config={"observation_chars": 50})
    cell = CellResult(
        code="print('x' * 500)",
        status="ok",
        outputs=[{"output_type": "stream", "name": "stdout", "text": "x" * 500}],
    )
    host.on_user_cell(live, cell)
    [event] = parts["events"].of("cell")
    assert event["source"] == "user"
    [note] = live.notes
    assert note.startswith("[A person ran this in your REPL]") and "print('x' * 500)" in note
    assert note.count("x") < 200  # the output cut to about 50 characters
    assert parts["passivation"].calls == ["touch"]  # its idle timer starts again


def test_llm_batch_is_bounded_in_size_and_in_calls_at_once() -> None:
    host, live, parts = make(config={"max_llm_batch": 4, "llm_batch_concurrency": 2})
    live.record.update(budget=None)
    with pytest.raises(PrimeError, match="at most 4 at once"):
        asyncio.run(host.llm(live, ["p"] * 5))
    assert asyncio.run(host.llm(live, ["a", "b", "c", "d"])) == ["ok"] * 4
    assert parts["router"].most_in_flight == 2
    calls = parts["events"].of("model_call")
    assert len(calls) == 4 and {c["purpose"] for c in calls} == {"llm"}
    with pytest.raises(PrimeError, match="takes a string prompt"):
        asyncio.run(host.llm(live, "not a list"))  # type: ignore[arg-type]
