"""Goals on a real server: set in a REPL, in the model's context on every turn, kept through a
compaction, shown in the REST record, changed by a person; bad goals refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import events, fetch_error, get_session, post_message, start_session, wait_for

GOAL = "Find the smallest prime above 1000"


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    # Compact all but the last turn, so that a short conversation has something to summarise.
    return {**prime_config, "compact_keep_recent": 1}


def _goal(messages: list[dict[str, Any]]) -> str:
    """The goal as a call shows it: a message after the stored conversation, never in the
    system prompt (which stays the same, so the provider can cache it)."""
    last = messages[-1]
    content = str(last["content"])
    return content if last["role"] == "user" and content.startswith("## Your goal") else ""


async def test_a_goal_is_in_every_turn_and_survives_compaction(daemon, jp_fetch, script):
    systems: list[str] = []
    goals: list[str] = []
    prompts: list[list[dict[str, Any]]] = []
    codes = [
        f"goal.set({GOAL!r})\nprint(goal.get()['status'])",
        "goal.progress('tried 1001: not prime')\ncompact()",
        "print('after compaction')",
        "goal.done('1009')\nanswer(1009)",
    ]

    def play(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[0]["role"] != "system":  # the compaction's summary call
            return {"text": "The goal is set; 1001 is not prime."}
        # By count, not by the conversation's turns: a compaction removes those.
        systems.append(str(messages[0]["content"]))
        goals.append(_goal(messages))
        prompts.append(messages)
        n = len(systems)
        return {"code": codes[n - 1]} if n <= len(codes) else {"text": "on it"}

    model = script([play] * 10)
    sid = await start_session(jp_fetch, "primes", model=model, persistent=True)
    record = daemon.registry.get(sid)
    await wait_for(lambda: record.state.value in ("IDLE", "DONE", "FAILED"), timeout=240)
    assert record.state.value == "IDLE", record.error
    assert not goals[0]  # set during the first turn
    assert f"## Your goal (set by you)\n{GOAL}" in goals[1]
    assert "- tried 1001: not prime" in goals[2] and GOAL in goals[3]
    assert len(set(systems)) == 1 and GOAL not in systems[0]
    # The compaction before the third turn summarised the conversation; the goal is not part
    # of it (it is added to every call), so it is there, verbatim, afterwards.
    (compaction,) = await events(daemon, sid, "compaction")
    assert compaction["data"]["reason"] == "requested"
    assert any("[Earlier turns, summarised]" in str(m["content"]) for m in prompts[2])
    assert GOAL in goals[2]

    record = await get_session(jp_fetch, sid)
    goal = record["goal"]
    assert (goal["text"], goal["status"], goal["summary"], goal["set_by"]) == (
        GOAL,
        "done",
        "1009",
        sid,
    )
    assert [p["note"] for p in goal["progress"]] == ["tried 1001: not prime"]
    kinds = [e["data"]["event"] for e in await events(daemon, sid, "goal")]
    assert kinds == ["set", "progress", "done"]

    # A person sets a new goal: the model is told at its next turn, and sees it.
    body = json.dumps({"text": "Now 2000"})
    new = await jp_fetch("api", "prime", "sessions", sid, "goal", method="PUT", body=body)
    assert json.loads(new.body)["goal"]["set_by"] == "user"
    await post_message(jp_fetch, sid, "and the next?")
    await wait_for(lambda: len(systems) == 5, timeout=120)
    assert "## Your goal (set by a person)\nNow 2000" in goals[4]
    told = [str(m["content"]) for m in prompts[4] if m["role"] == "user"]
    assert any(t.startswith("[A person set your goal.") for t in told)
    cleared = await jp_fetch("api", "prime", "sessions", sid, "goal", method="DELETE")
    assert json.loads(cleared.body) == {"cleared": True}
    assert "goal" not in await get_session(jp_fetch, sid)
    got = await jp_fetch("api", "prime", "sessions", sid, "goal")
    assert json.loads(got.body) == {"goal": None}


async def test_bad_goals_change_nothing(daemon, jp_fetch, user_kernel):
    nb = await user_kernel()
    await nb.value("goal.set('keep this')")
    for call, expected in (
        ("goal.set('x' * 1_000_000)", "TooLarge the goal has 1000000 characters; at most 4000"),
        ("goal.set('')", "InvalidRequest 'text' must not be empty"),
        ("goal.set('   ')", "InvalidRequest the goal must not be empty"),
        ("goal.set(42)", "TypeError goal.set() takes a string, not int"),
    ):
        out = await nb.value(
            f"try:\n    {call}\nexcept Exception as e:\n    print(type(e).__name__, e)"
        )
        assert out.startswith(expected), (call, out)
    assert await nb.value("print(goal.get()['text'])") == "keep this\n"
    whoami = (
        "from prime_kernel.kernel.primitives import client\n"
        "print(client().request('GET', 'whoami')['id'])"
    )
    sid = (await nb.value(whoami)).strip()
    body = json.dumps({"text": "y" * 1_000_000})
    code, error = await fetch_error(
        jp_fetch("api", "prime", "sessions", sid, "goal", method="PUT", body=body)
    )
    assert (code, error["error"]) == (413, "too_large")
    code, error = await fetch_error(
        jp_fetch(
            "api",
            "prime",
            "sessions",
            sid,
            "goal",
            method="PUT",
            body=json.dumps({"progress": "p", "text": "t"}),
        )
    )
    assert code == 400 and "exactly one" in error["message"]
    assert daemon.registry.get(sid).goal["text"] == "keep this"
    assert await nb.value("print(goal.clear(), goal.clear())") == "True False\n"
    out = await nb.value("try:\n    goal.done('x')\nexcept Exception as e:\n    print(e)")
    assert "has no goal" in out
