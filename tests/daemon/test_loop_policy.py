"""The loop's between-turn policy in a real server and kernel, driven by scripted models."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from prime_kernel.daemon import policy
from prime_kernel.daemon.daemon import Daemon
from prime_kernel.models import cookbook, profiles
from prime_kernel.protocol.requests import SessionRequest


async def finish(daemon: Daemon, model: str, **options: Any) -> dict[str, Any]:
    record = await daemon.create_session(SessionRequest("task", model=model, **options))
    return await daemon.runs.wait(record["id"], 120)


async def test_unlabelled_fences_are_prose(daemon: Daemon, script: Callable[..., str]) -> None:
    reply = "The sum is 5. This will print:\n```\n5\n```"
    result = await finish(daemon, script([{"text": reply}], tools=False))
    assert result["state"] == "DONE" and result["answer_repr"] == reply
    assert not await daemon.store.events(result["id"], kinds=["cell"])


async def test_a_printed_value_gets_a_nudge_to_answer(
    daemon: Daemon, script: Callable[..., str]
) -> None:
    seen: list[str] = []

    def second(messages: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append(messages[-1]["content"])
        return {"fenced": "answer(12 + 30)"}

    result = await finish(daemon, script([{"fenced": "print(12 + 30)"}, second], tools=False))
    assert result["state"] == "DONE" and result["answer_repr"] == "42"
    assert seen[0].startswith("Output of your code:\n42")
    assert "call answer(42)" in seen[0]


async def test_repeated_turns_end_the_session(daemon: Daemon, script: Callable[..., str]) -> None:
    stuck = script([{"code": "print('same')"}] * 10)
    result = await finish(daemon, stuck)
    assert result["state"] == "FAILED"
    repeats = profiles.DEFAULT.max_repeats
    assert f"the same output {repeats + 1} times" in result["error"]
    assert result["usage"]["own"]["model_calls"] == repeats + 1
    # A turn whose output changes is not a repeat: the turn limit ends this one.
    counting = script([{"code": "n = globals().get('n', 0) + 1\nprint(n)"}] * 10)
    result = await finish(daemon, counting, max_turns=8)
    assert result["state"] == "FAILED" and "turn limit (8)" in result["error"]


async def test_a_profile_sets_limits_prefill_and_setup(
    daemon: Daemon, script: Callable[..., str], monkeypatch: Any
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
    result = await finish(daemon, model)
    assert result["state"] == "DONE" and result["answer_repr"] == "True"
    cells = await daemon.store.events(result["id"], kinds=["cell"])
    assert [c["data"]["code"] for c in cells] == [
        "import math",
        "print(math.pi > 3)",
        "answer(True)",
    ]
    assert sent[0][-1] == {"role": "assistant", "content": "```python\n"}
    # After a printed value, the next reply can only be a call to answer().
    assert sent[1][-1] == {"role": "assistant", "content": "```python\nanswer("}
    assert sent[1][-3]["content"] == "```python\nprint(math.pi > 3)\n```"
    assert "call answer(True)" in sent[1][-2]["content"]

    # The profile's default turn limit, and what the user is told when it is reached.
    failing = script([{"text": "1 / 0\n"}] * 5, tools=False)
    profile(failing, max_turns=2)
    result = await finish(daemon, failing)
    assert result["state"] == "FAILED"
    assert result["error"] == (
        f"the turn limit (2) was reached without an answer; try a bigger {failing}"
    )
    # An explicit max_turns wins over the profile's default.
    assert (await finish(daemon, failing, max_turns=3))["usage"]["own"]["model_calls"] == 3


async def test_the_profile_time_limit_stops_a_slow_model_call(
    daemon: Daemon, script: Callable[..., str], monkeypatch: Any
) -> None:
    slow = script([{"sleep": 4, "fenced": "answer(1)"}], tools=False)
    monkeypatch.setitem(
        profiles.PROFILES,
        slow,
        profiles.Profile(
            name="test",
            system=profiles.DEFAULT.system,
            examples=profiles.DEFAULT.examples,
            max_seconds=1.0,
            give_up_hint="use --model",
        ),
    )
    result = await finish(daemon, slow)
    assert result["state"] == "FAILED"
    assert result["error"] == (
        "the time limit (1 s) was reached without an answer (a model call was still running); "
        "use --model"
    )
    # A seconds budget of the session's own replaces the profile's limit.
    budget = await finish(daemon, slow, budget={"seconds": 60})
    assert budget["state"] == "DONE"


async def test_the_coder_profile_looks_at_context_and_retries_from_a_clean_slate(
    daemon: Daemon, script: Callable[..., str], monkeypatch: Any
) -> None:
    sent: list[list[dict[str, Any]]] = []

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        retrying = "Your previous code failed" in messages[-2]["content"]
        return {"text": "answer(sum(context))\n" if retrying else "answer(total)\n"}

    # (The scripted provider picks a turn by the replies shown; a clean retry shows fewer.)
    model = script([turn] * 5, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    blob = await daemon.store.put_blob(pickle.dumps(list(range(10_000))))
    record = await daemon.create_session(
        SessionRequest("Sum context", model=model, context_blob=blob, context_type="list")
    )
    result = await daemon.runs.wait(record["id"], 120)
    assert result["state"] == "DONE" and result["answer_repr"] == str(sum(range(10_000))), result[
        "error"
    ]
    # The look ran in the REPL (a cell like any other), and the task says what it saw.
    cells = await daemon.store.events(result["id"], kinds=["cell"])
    assert "__shape.overview(context" in cells[1]["data"]["code"]
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
    daemon: Daemon, script: Callable[..., str], monkeypatch: Any
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
    record = await daemon.create_session(SessionRequest(task, model=model))
    result = await daemon.runs.wait(record["id"], 120)
    assert result["state"] == "DONE" and result["answer_repr"] == "'koobeton'", result["error"]
    # The copy never ran (its answer would have been the example's); the retry was told why.
    cells = await daemon.store.events(result["id"], kinds=["cell"])
    assert [c["data"]["code"] for c in cells[1:]] == ["answer('notebook'[::-1])"]
    assert policy.copied_example_text() in sent[1][-2]["content"]
    # ... and no longer shown the example it copied, the others still.
    shown = [m["content"] for m in sent[1] if m.get("name") == "example"]
    assert len(shown) == 2 * (profiles.CODER_EXAMPLES - 1)
    assert not any(copied in text for text in shown)


async def test_a_learned_example_copied_whole_is_refused_and_stays_shown(
    daemon: Daemon, script: Callable[..., str], monkeypatch: Any
) -> None:
    learned = "answer(sorted([61, 152, 140, 34])[-2])"
    daemon.harness.create(
        "example",
        "second-largest",
        title="What is the second largest number in the list [61, 152, 140, 34]?",
        content=f"```python\n{learned}\n```\n",
        metadata={
            "task": "What is the second largest number in the list [61, 152, 140, 34]?",
            "outcome": "right",
            "answer": "140",
        },
    )
    task = "What is the second largest number in the list [39, 7, 120, 88]?"
    own = "answer(sorted([39, 7, 120, 88])[-2])"
    sent: list[list[dict[str, Any]]] = []

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        sent.append(messages)
        retrying = "example's code" in messages[-2]["content"]
        return {"text": f"{own}\n" if retrying else f"{learned}\n"}

    model = script([turn] * 5, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    record = await daemon.create_session(SessionRequest(task, model=model))
    result = await daemon.runs.wait(record["id"], 120)
    assert result["state"] == "DONE" and result["answer_repr"] == "88", result["error"]
    # The copy never ran (its answer would have been the example's: 140) ...
    cells = await daemon.store.events(result["id"], kinds=["cell"])
    assert [c["data"]["code"] for c in cells[1:]] == [own]
    assert policy.copied_example_text() in sent[1][-2]["content"]
    # ... and the learned example is still shown, the last before the task.
    shown = [m["content"] for m in sent[1] if m.get("name") == "example"]
    assert len(shown) == 2 * profiles.CODER_EXAMPLES and learned in shown[-1]


async def test_a_learned_example_of_the_very_task_may_be_copied(
    daemon: Daemon, script: Callable[..., str], monkeypatch: Any
) -> None:
    task = "What is the second largest number in the list [61, 152, 140, 34]?"
    learned = "answer(sorted([61, 152, 140, 34])[-2])"
    daemon.harness.create(
        "example",
        "second-largest",
        title=task,
        content=f"```python\n{learned}\n```\n",
        metadata={"task": task, "outcome": "right", "answer": "140"},
    )
    model = script([{"text": f"{learned}\n"}] * 2, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    record = await daemon.create_session(SessionRequest(task, model=model))
    result = await daemon.runs.wait(record["id"], 120)
    assert result["state"] == "DONE" and result["answer_repr"] == "140", result["error"]
