"""The loop's between-turn policy (loop.py, policy.py, the model profiles), with a fake host:
models are scripted turns, cells run in a namespace of this process with an `answer()`, and
nothing else of the daemon is there (no server, no kernel, no store). What only a real kernel
and daemon show — answers recorded, a session's state — is tested end to end elsewhere
(tests/server/test_spine.py)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import traceback
from collections.abc import Callable
from typing import Any

import pytest

from prime_kernel.daemon import policy
from prime_kernel.daemon.kernels import CellResult
from prime_kernel.daemon.loop import AgentLoop, TurnLimitReached
from prime_kernel.daemon.session import LiveSession
from prime_kernel.harness.examples import Example
from prime_kernel.models import cookbook, profiles, scripted
from prime_kernel.models.router import Completion
from prime_kernel.protocol.events import EventKind
from tests.daemon.conftest import agent_record


class FakeHost:
    """The daemon as the loop sees it (`LoopHost`). A model call plays the next turn of the
    session's `scripted/*` model; a cell runs in this host's namespace, as a REPL would, where
    `answer(value)` ends the session; what the daemon would record is kept in lists."""

    observation_chars = 4000
    max_turns = 20
    cell_timeout = 60.0

    def __init__(self, **names: Any) -> None:
        self.namespace: dict[str, Any] = dict(names)
        self.sent: list[list[dict[str, Any]]] = []  # every model call's messages
        self.cells: list[str] = []
        self.replies: list[str] = []
        self.answers: list[str] = []

    def supports_tools(self, model: str) -> bool:
        return scripted.get_script(model.removeprefix("scripted/")).tools

    def context_notes(self, live: LiveSession) -> str:
        return ""

    def recall(self, live: LiveSession, *, shown: int | None, max_chars: int | None) -> list[Any]:
        return []

    async def before_turn(self, live: LiveSession) -> None:
        pass

    async def model_call(
        self, live: LiveSession, messages: list[dict[str, Any]], tools: bool, **kwargs: Any
    ) -> Completion:
        self.sent.append(messages)
        turn = scripted.play(str(live.record.model).removeprefix("scripted/"), messages)
        if turn.get("sleep"):
            await asyncio.sleep(float(turn["sleep"]))  # a slow model: the test's subject
        message = scripted.reply_message(turn)
        return Completion(message, "tool_calls" if message.get("tool_calls") else "stop")

    async def run_cell(self, live: LiveSession, code: str, source: str = "agent") -> CellResult:
        self.cells.append(code)

        def answer(value: Any) -> None:
            self.answers.append(repr(value))

        self.namespace["answer"] = answer
        printed = io.StringIO()
        outputs: list[dict[str, Any]] = []
        status = "ok"
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(code, "<cell>", "exec"), self.namespace)
        except Exception as e:
            status = "error"
            outputs.append(
                {
                    "output_type": "error",
                    "ename": type(e).__name__,
                    "evalue": str(e),
                    "traceback": traceback.format_exception_only(e),
                }
            )
        if printed.getvalue():
            outputs.insert(
                0, {"output_type": "stream", "name": "stdout", "text": printed.getvalue()}
            )
        return CellResult(code, outputs, status)

    def emit(self, live: LiveSession, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]:
        return data

    def reply(self, live: LiveSession, text: str) -> None:
        self.replies.append(text)

    def answered(self, live: LiveSession) -> bool:
        return bool(self.answers)


def session(model: str, prompt: str = "task", **fields: Any) -> LiveSession:
    return LiveSession(agent_record("s1", model=model, prompt=prompt, **fields))


async def run(host: FakeHost, live: LiveSession, max_turns: int | None = None) -> None:
    await AgentLoop(host, live).run(max_turns)


async def test_unlabelled_fences_are_prose(script: Callable[..., str]) -> None:
    reply = "The sum is 5. This will print:\n```\n5\n```"
    host = FakeHost()
    await run(host, session(script([{"text": reply}], tools=False)))
    assert host.replies == [reply] and not host.cells


async def test_a_printed_value_gets_a_nudge_to_answer(script: Callable[..., str]) -> None:
    seen: list[str] = []

    def second(messages: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append(messages[-1]["content"])
        return {"fenced": "answer(12 + 30)"}

    host = FakeHost()
    await run(host, session(script([{"fenced": "print(12 + 30)"}, second], tools=False)))
    assert host.answers == ["42"]
    assert seen[0].startswith("Output of your code:\n42")
    assert "call answer(42)" in seen[0]


async def test_repeated_turns_end_the_session(script: Callable[..., str]) -> None:
    host = FakeHost()
    with pytest.raises(TurnLimitReached) as stopped:
        await run(host, session(script([{"code": "print('same')"}] * 10)))
    repeats = profiles.DEFAULT.max_repeats
    assert f"the same output {repeats + 1} times" in str(stopped.value)
    assert len(host.sent) == repeats + 1
    # A turn whose output changes is not a repeat: the turn limit ends this one.
    counting = script([{"code": "n = globals().get('n', 0) + 1\nprint(n)"}] * 10)
    with pytest.raises(TurnLimitReached, match=r"turn limit \(8\)") as stopped:
        await run(FakeHost(), session(counting), max_turns=8)
    assert stopped.value.turns


async def test_a_profile_sets_limits_prefill_and_setup(
    script: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[dict[str, Any]]] = []

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        # Replies continue the prefill, as llama.cpp returns them; the loop closes the fence.
        if messages[-1]["content"].endswith("answer("):
            return {"text": "True)\n"}
        return {"text": "print(math.pi > 3)\n"}

    def profile(model: str, **limits: Any) -> None:
        monkeypatch.setitem(
            profiles.PROFILES,
            model,
            profiles.Profile(
                name="test",
                system=profiles.SMALL.system,
                examples=profiles.SMALL.examples,
                task=profiles.SMALL.task,
                prefill="```python\n",
                prefill_answer=True,
                setup="import math",
                give_up_hint="try a bigger {model}",
                **limits,
            ),
        )

    model = script([turn] * 5, tools=False)
    profile(model)
    host = FakeHost()
    await run(host, session(model))
    assert host.answers == ["True"]
    assert host.cells == ["import math", "print(math.pi > 3)", "answer(True)"]
    assert sent[0][-1] == {"role": "assistant", "content": "```python\n"}
    # After a printed value, the next reply can only be a call to answer().
    assert sent[1][-1] == {"role": "assistant", "content": "```python\nanswer("}
    assert sent[1][-3]["content"] == "```python\nprint(math.pi > 3)\n```"
    assert "call answer(True)" in sent[1][-2]["content"]

    # The profile's default turn limit, and what the user is told when it is reached.
    failing = script([{"text": "1 / 0\n"}] * 5, tools=False)
    profile(failing, max_turns=2)
    with pytest.raises(TurnLimitReached) as stopped:
        await run(FakeHost(), session(failing))
    assert str(stopped.value) == (
        f"the turn limit (2) was reached without an answer; try a bigger {failing}"
    )
    # An explicit max_turns wins over the profile's default.
    host = FakeHost()
    with pytest.raises(TurnLimitReached):
        await run(host, session(failing), max_turns=3)
    assert len(host.sent) == 3


async def test_the_profile_time_limit_stops_a_slow_model_call(
    script: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    slow = script([{"sleep": 0.6, "fenced": "answer(1)"}], tools=False)
    monkeypatch.setitem(
        profiles.PROFILES,
        slow,
        profiles.Profile(
            name="test",
            system=profiles.DEFAULT.system,
            examples=profiles.DEFAULT.examples,
            max_seconds=0.2,
            give_up_hint="use --model",
        ),
    )
    with pytest.raises(TurnLimitReached) as stopped:
        await run(FakeHost(), session(slow))
    assert str(stopped.value) == (
        "the time limit (0.2 s) was reached without an answer (a model call was still "
        "running); use --model"
    )
    # A seconds budget of the session's own replaces the profile's limit.
    host = FakeHost()
    await run(host, session(slow, budget={"seconds": 60}))
    assert host.answers == ["1"]


async def test_the_coder_profile_looks_at_context_and_retries_from_a_clean_slate(
    script: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[dict[str, Any]]] = []

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        retrying = "Your previous code failed" in messages[-2]["content"]
        return {"text": "answer(sum(context))\n" if retrying else "answer(total)\n"}

    # (The scripted provider picks a turn by the replies shown; a clean retry shows fewer.)
    model = script([turn] * 5, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    host = FakeHost(context=list(range(10_000)))
    await run(host, session(model, "Sum context", context_type="list"))
    assert host.answers == [str(sum(range(10_000)))]
    # The look ran in the REPL (a cell like any other), and the task says what it saw.
    assert "__shape.overview(context" in host.cells[1]
    task = sent[0][-2]["content"]
    assert task.startswith("Task: Sum context\ncontext is a list of 10,000 ints, like 0, 1, 2")
    # The retry is shown the task and the error, not the failed code.
    retry = [m["content"] for m in sent[1] if m.get("name") != "example"]
    assert not any("answer(total)" in text for text in retry)
    assert retry[-2] == (
        f"{task}\n\nYour previous code failed:\nNameError: name 'total' is not defined\n\n"
        "total does not exist in the REPL: define it first, or write 'total' in quotes if you "
        "meant that text."
    )
    assert retry[-1] == "```python\n"


async def test_the_coder_profile_refuses_an_example_copied_whole(
    script: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[dict[str, Any]]] = []
    task = "Reverse the string 'notebook'."
    copied = cookbook.closest(task, profiles.CODER_EXAMPLES, context=False)[-1][1]
    assert copied == "answer('jupyter'[::-1])"

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        retrying = "example's code" in messages[-2]["content"]
        return {"text": "answer('notebook'[::-1])\n" if retrying else f"{copied}\n"}

    model = script([turn] * 5, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    host = FakeHost()
    await run(host, session(model, task))
    assert host.answers == ["'koobeton'"]
    # The copy never ran (its answer would have been the example's); the retry was told why.
    assert host.cells[1:] == ["answer('notebook'[::-1])"]
    assert policy.copied_example_text() in sent[1][-2]["content"]
    # ... and no longer shown the example it copied, the others still.
    shown = [m["content"] for m in sent[1] if m.get("name") == "example"]
    assert len(shown) == 2 * (profiles.CODER_EXAMPLES - 1)
    assert not any(copied in text for text in shown)


async def test_the_coder_profile_does_not_let_context_be_overwritten_by_its_preview(
    script: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[dict[str, Any]]] = []
    data = "name,city\n" + "".join(f"p{i},{'Lyon' if i % 3 else 'Nice'}\n" for i in range(60))
    stub = "context = 'name,city\\np0,Nice\\np1,Lyon'\n"
    count = "answer(sum(1 for line in context.splitlines() if line.endswith(',Lyon')))\n"

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        retrying = "Do not assign context" in messages[-2]["content"]
        return {"text": count if retrying else stub + count}

    model = script([turn] * 5, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    host = FakeHost(context=data)
    await run(host, session(model, "How many live in Lyon?", context_type="str"))
    # The stub never replaced the data: the count is over all 60 rows, not the preview's two.
    assert host.answers == ["40"]
    assert host.cells[2:] == [count.strip()]
    assert policy.overwritten_context_text() in sent[1][-2]["content"]


async def test_the_small_profile_is_shown_two_learned_examples_it_can_write_back(
    script: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Learned examples (from a stronger model's sessions, say) are asked for as many as the
    profile shows and within its `example_chars`, and shown in the place of the farthest
    cookbook examples, the most relevant last."""
    task = "Reverse the order of the words in the sentence 'keep calm and carry on'."

    def learned(sentence: str) -> Example:
        return Example(
            id=f"reverse-{len(sentence)}",
            scope="project",
            task=f"Reverse the order of the words in the sentence '{sentence}'.",
            code=f"words = '{sentence}'.split()\nanswer(' '.join(reversed(words)))",
            outcome="right",
            answer=repr(" ".join(reversed(sentence.split()))),
            note="",
            source="session s1",
        )

    best, next_best = learned("one small step"), learned("the quick brown fox")
    asked: list[tuple[int | None, int | None]] = []

    class Recalling(FakeHost):
        def recall(
            self, live: LiveSession, *, shown: int | None, max_chars: int | None
        ) -> list[Any]:
            asked.append((shown, max_chars))
            return [best, next_best]

    reply = "answer(' '.join(reversed('keep calm and carry on'.split())))\n"
    # The reply's prefill is an assistant message too: the script's turns count it.
    model = script([{"text": reply}] * 2, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.SMALL)
    host = Recalling()
    await run(host, session(model, task))
    assert asked == [(2, 500)] == [(profiles.SMALL.learned_examples, profiles.SMALL.example_chars)]
    assert host.answers == ["'on carry and calm keep'"]
    shown = [m["content"] for m in host.sent[0] if m.get("name") == "example"]
    nearest = cookbook.closest(task, profiles.SMALL_EXAMPLES, context=False)[-1]
    assert shown == [
        f"Task: {nearest[0]}",
        f"```python\n{nearest[1]}\n```",
        f"Task: {next_best.task}",
        f"```python\n{next_best.code}\n```",
        f"Task: {best.task}",
        f"```python\n{best.code}\n```",
    ]
