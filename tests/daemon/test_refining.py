"""The Refiner over fakes (no server, no kernel, no model): it reads its own settings
(`c.Refiner.*`), asks the model it names with the reply budget it sets, shows a small model a
digest and asks it for a brief reply, puts what changes least first in the prompt, shows the
model only as much evidence as its prompt budget holds, stops a slow reply at its time limit,
and starts automatic refinements on its triggers, one at a time, after a cool-down."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.refining import Refiner
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.harness import Harness
from prime_kernel.harness import refine as rules
from prime_kernel.harness import reply as replies
from prime_kernel.models.router import Completion
from prime_kernel.protocol.events import EventKind
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import agent_record, shared

EMPTY = {"summary": "Nothing to change", "rationale": "", "expected_outcome": "", "edits": []}


class FakeRouter:
    """Replies `reply` (after `delay` seconds); a window of `window` tokens, four characters a
    token; records each call's model and keyword arguments."""

    def __init__(self, reply: dict[str, Any], window: int = 100_000, delay: float = 0.0) -> None:
        self.reply = json.dumps(reply)
        self.window = window
        self.delay = delay
        self.calls: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = []

    def validate(self, model: str) -> None:
        pass

    def context_window(self, model: str) -> int | None:
        return self.window

    def count_tokens(self, model: str, messages: list[dict[str, Any]]) -> int:
        return sum(len(m["content"]) for m in messages) // 4

    def supports_response_schema(self, model: str) -> bool:
        return model.startswith("local/")

    async def stream(self, model: str, messages: list[dict[str, Any]], on_text: Any, **kw: Any):
        self.calls.append((model, messages, kw))
        await asyncio.sleep(self.delay)
        on_text(self.reply)
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return Completion({"role": "assistant", "content": self.reply}, "stop", usage, cost=0.01)


class FakeStore:
    """Each session's events: one failed cell, its error long enough to weigh in a prompt."""

    async def events(self, session_id: str, *, kinds: list[str]) -> list[dict[str, Any]]:
        error = {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "x" * 250}
        cell = {"status": "error", "code": f"# {session_id}\n1/0", "outputs": [error]}
        return [{"kind": "assistant", "data": {}}, {"kind": "cell", "data": cell}]


@pytest.fixture
def harness(tmp_path: Path):
    h = Harness(project_dir=str(tmp_path / "project"), global_dir=str(tmp_path / "global"))
    yield h
    h.close()


def refiner(
    harness: Harness, router: FakeRouter, sessions: int = 0, **settings: Any
) -> tuple[Refiner, list[asyncio.Task[Any]]]:
    """A Refiner over `sessions` failed agents, configured with `c.Refiner.<settings>`; the
    tasks it spawns. The newest session is s0: the evidence reads newest first."""
    registry = SessionRegistry()
    for i in reversed(range(sessions)):
        registry.add(agent_record(f"s{i}", state=SessionState.FAILED), lambda sid, fields: None)
    spawned: list[asyncio.Task[Any]] = []

    def spawn(coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        spawned.append(asyncio.get_running_loop().create_task(coro, name=name))
        return spawned[-1]

    made = Refiner(
        shared(registry, store=FakeStore(), spawn=spawn),
        harness=harness,
        router=router,  # type: ignore[arg-type]
        resolve_model=lambda explicit: explicit or "scripted/default",
        model_kwargs=lambda: {"temperature": 0.0},
        max_turns=lambda: 20,
        config=Config({"Refiner": settings}),
    )
    return made, spawned


def test_a_refinement_asks_the_model_it_names_with_the_reply_budget_it_sets(
    harness: Harness,
) -> None:
    router = FakeRouter(EMPTY)
    default, _ = refiner(harness, router)
    assert default.model() == "scripted/default"
    made, _ = refiner(harness, router, 2, refine_model="local/small", refine_reply_tokens=300)
    record = asyncio.run(made.refine(instructions="be brief"))
    assert record["status"] == "empty" and record["model"] == "local/small"
    assert record["evidence"] == ["s0", "s1"] and record["usage"]["cost"] == 0.01
    [(model, messages, kwargs)] = router.calls
    assert model == "local/small" and kwargs["temperature"] == 0.0
    # A backend that decodes to a schema gets the grammar, sized to the reply's budget, and
    # as many tokens as its longest reply needs.
    schema = kwargs["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["summary"]["maxLength"] < 300
    assert kwargs["max_tokens"] == replies.tokens_needed(schema) <= 300
    assert "ZeroDivisionError" in messages[1]["content"] and made.running == []
    # A backend without one: the budget as the limit, the schema pasted into the prompt.
    hosted, _ = refiner(harness, router, 2, refine_model="hosted/big", refine_reply_tokens=300)
    asyncio.run(hosted.refine())
    _, messages, kwargs = router.calls[-1]
    assert kwargs["max_tokens"] == 300 and "response_format" not in kwargs
    assert '"maxLength"' in messages[0]["content"]


def test_a_small_model_reads_a_digest_and_writes_a_brief_reply(harness: Harness) -> None:
    """The embedded models' profiles ask for a brief refinement: each session as its digest
    (task, outcome, last error and the code that raised it), no usage or ids of parents, and
    a reply with fewer, shorter fields, its max_tokens what that reply needs."""
    router = FakeRouter(EMPTY)
    small, _ = refiner(harness, router, 2, refine_model="local/qwen2.5-coder-0.5b")
    asyncio.run(small.refine(instructions="be brief"))
    _, [system, user], kwargs = router.calls[-1]
    assert system["content"] == rules.SYSTEM_BRIEF
    text = user["content"]
    assert "session s0: failed\ntask: p\nlast error (turn 1): ZeroDivisionError: xxx" in text
    assert "in: # s0\n1/0" in text and "session s1: failed" in text
    assert "usage" not in text and "parent_id" not in text
    assert text.endswith("Instructions: be brief")
    schema = kwargs["response_format"]["json_schema"]["schema"]
    assert schema == replies.constrained_schema(small.refine_reply_tokens, brief=True)
    assert kwargs["max_tokens"] == replies.tokens_needed(schema) < small.refine_reply_tokens
    # A model with the default profile reads each session's whole record.
    full, _ = refiner(harness, router, 2)
    asyncio.run(full.refine(instructions="be brief"))
    _, [system, user], kwargs = router.calls[-1]
    assert system["content"] != rules.SYSTEM_BRIEF
    shown = json.loads(user["content"])
    assert list(shown) == ["harness", "past_refinements", "evidence", "instructions"]
    assert shown["evidence"][0]["usage"] and kwargs["max_tokens"] == full.refine_reply_tokens


def test_what_changes_least_comes_first_so_the_read_prompt_is_reused(harness: Harness) -> None:
    """Two brief refinements over different sessions share their prompt up to the evidence:
    llama.cpp reuses the prefix it read for the first. Past refinements are not in it (the
    small model took their ids for its edits')."""
    harness.create("note", "guard", title="Guard divisions", content="Check the divisor first.")
    router = FakeRouter(EMPTY)
    small, _ = refiner(harness, router, 4, refine_model="local/qwen2.5-coder-0.5b")
    first_id = asyncio.run(small.refine(instructions="first", session_ids=["s0", "s1"]))["id"]
    asyncio.run(small.refine(instructions="second", session_ids=["s2", "s3"]))
    [(_, first, _), (_, second, _)] = router.calls
    assert first[0] == second[0]
    shared_head = (
        "Harness entries:\n- note guard (v1): Guard divisions — Check the divisor first.\n\n"
        "Evidence:\nsession s"
    )
    assert first[1]["content"].startswith(shared_head)
    assert second[1]["content"].startswith(shared_head)
    assert first_id not in second[1]["content"]


def test_evidence_is_cut_to_the_sessions_and_the_prompt_the_settings_allow(
    harness: Harness,
) -> None:
    router = FakeRouter(EMPTY)
    few, _ = refiner(harness, router, 6, evidence_sessions=3)
    assert asyncio.run(few.refine())["evidence"] == ["s0", "s1", "s2"]
    # Each session's evidence is about 150 tokens: a budget of 1,200 leaves some out.
    tight, _ = refiner(harness, router, 6, refine_prompt_tokens=1200)
    shown = asyncio.run(tight.refine())["evidence"]
    assert 0 < len(shown) < 6 and shown == [f"s{i}" for i in range(len(shown))]
    assert all(f"# {sid}" in router.calls[-1][1][1]["content"] for sid in shown)
    assert "# s5" not in router.calls[-1][1][1]["content"]


def test_a_slow_reply_is_stopped_at_the_refiners_time_limit(harness: Harness) -> None:
    made, _ = refiner(harness, FakeRouter(EMPTY, delay=30), 1, refine_timeout=0.2)
    record = asyncio.run(made.refine())
    assert record["status"] == "failed" and "within 0.2 s" in record["error"]
    assert "c.Refiner.refine_timeout" in record["error"]
    assert harness.versions().refinements()[0]["id"] == record["id"]


def test_automatic_refinements_start_on_their_triggers_one_at_a_time(harness: Harness) -> None:
    async def run() -> None:
        every, spawned = refiner(harness, FakeRouter(EMPTY), 1, auto_refine_every=2)
        every.turn_taken()
        assert spawned == []
        every.turn_taken()
        [task] = spawned
        assert (await task)["trigger"] == "every 2 turns"
        every.turn_taken()
        every.turn_taken()
        assert len(spawned) == 1  # within the cool-down (600 s by default)

        off, spawned = refiner(harness, FakeRouter(EMPTY), 1)
        failed = off.registry.get("s0")
        off.session_failed(failed, None, SessionState.FAILED)
        off.turn_taken()
        assert spawned == []  # both triggers are off by default
        on, spawned = refiner(
            harness, FakeRouter(EMPTY), 1, auto_refine_after_failure=True, refine_cooldown=0
        )
        failed = on.registry.get("s0")
        on.session_failed(failed, None, SessionState.FAILED)
        on.session_failed(failed, None, SessionState.FAILED)  # the first still runs
        [task] = spawned
        record = await task
        assert record["author"] == "auto" and record["trigger"] == "session s0 failed"
        on.session_failed(failed, None, SessionState.FAILED)  # no cool-down: another
        assert len(spawned) == 2
        await spawned[1]

    asyncio.run(run())


def test_refine_sent_as_a_message_is_recorded_on_the_session(harness: Harness) -> None:
    made, _ = refiner(harness, FakeRouter(EMPTY), 2)
    assert asyncio.run(made.command("s1", "hello")) is None
    receipt = asyncio.run(made.command("s1", "/refine focus on division"))
    assert receipt is not None and receipt["status"] == "refinement empty"
    assert receipt["refinement"]["instructions"] == "focus on division"
    assert receipt["refinement"]["evidence"] == ["s1"]
    [(sid, kind, data)] = made.events.emitted  # type: ignore[attr-defined]
    assert (sid, kind, data["status"]) == ("s1", EventKind.REFINEMENT, "empty")
