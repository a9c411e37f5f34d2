"""Autonomous mode on a real server with scripted models: a gate that fails twice then passes,
one that never passes, one that hangs, and gates refused before anything starts."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import events, fetch_error, get_session, start_session, wait_for

# One line per attempt; the gate passes from the third on and says how far it got.
ATTEMPT = "open('attempts.txt', 'a').write('x\\n')\nanswer('attempt made')"
GATE = (
    'n=$(wc -l < attempts.txt); echo "attempts so far: $n"; '
    'test "$n" -ge 3 || { echo "not there yet" >&2; exit 1; }'
)


def _users(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages if m["role"] == "user")


async def _ended(daemon: Any, sid: str) -> None:
    await wait_for(lambda: daemon.registry.get(sid).terminal, timeout=240)


async def test_a_gate_that_fails_twice_then_passes(daemon, jp_fetch, jp_root_dir, script):
    prompts: list[str] = []

    def attempt(messages: list[dict[str, Any]]) -> dict[str, Any]:
        prompts.append(_users(messages))
        return {"code": ATTEMPT}

    model = script([attempt, attempt, attempt, {"text": "(never played)"}])
    sid = await start_session(
        jp_fetch, "make three attempts", model=model, autonomous={"gate": GATE, "turns": 2}
    )
    await _ended(daemon, sid)
    record = await get_session(jp_fetch, sid)
    assert (record["state"], record["answer_repr"]) == ("DONE", "'attempt made'"), record
    assert (jp_root_dir / "attempts.txt").read_text() == "x\n" * 3

    continuations = [e["data"] for e in await events(daemon, sid, "continuation")]
    assert [c["continuation"] for c in continuations] == [1, 2, 3]
    assert {c["of"] for c in continuations} == {3}
    assert continuations[1]["reason"] == "it answered"
    gates = [e["data"] for e in await events(daemon, sid, "gate")]
    assert [(g["passed"], g["exit_code"]) for g in gates] == [(False, 1), (False, 1), (True, 0)]
    assert "attempts so far: 1" in gates[0]["output"] and "not there yet" in gates[0]["output"]

    # The model was told of autonomous mode first, then shown the gate's output.
    assert "Autonomous mode: you work in up to 3 continuations" in prompts[0]
    assert "continuation 2 of 3" in prompts[1] and "attempts so far: 1" in prompts[1]
    assert "exit status 1" in prompts[1] and "attempts so far: 2" in prompts[2]
    autonomy = record["options"]["autonomy"]
    assert (autonomy["continuation"], autonomy["phase"]) == (3, "done")


async def test_a_gate_that_never_passes_ends_with_the_reason(daemon, jp_fetch, script):
    gate = {"python": "result == 42"}
    setup = {"code": "result = 41\nanswer(result)"}
    model = script([setup, {"text": "I cannot do better than 41."}])
    sid = await start_session(
        jp_fetch, "make it 42", model=model, autonomous={"gate": gate, "max_continuations": 2}
    )
    await _ended(daemon, sid)
    record = await get_session(jp_fetch, sid)
    assert record["state"] == "FAILED"
    assert record["error"] == (
        "autonomous: the gate (`result == 42`) did not pass in 2 continuations "
        "(max_continuations=2); last: it was False"
    )
    gates = [e["data"] for e in await events(daemon, sid, "gate")]
    assert [(g["kind"], g["passed"], g["output"]) for g in gates] == [
        ("python", False, "False")
    ] * 2
    # The failed session's last answer is kept: a parent's result() sees it as `partial`.
    assert record["answer_repr"] == "I cannot do better than 41."


async def test_a_hanging_gate_is_stopped_and_reported(daemon, jp_fetch, script):
    model = script([{"code": "answer('done')"}])
    plan = {"gate": "sleep 60", "gate_timeout": 1, "max_continuations": 1}
    sid = await start_session(jp_fetch, "wait", model=model, autonomous=plan)
    await _ended(daemon, sid)
    record = await get_session(jp_fetch, sid)
    assert record["state"] == "FAILED"
    assert record["error"].endswith("last: the gate did not finish in 1 s: it was killed")
    (gate,) = [e["data"] for e in await events(daemon, sid, "gate")]
    assert (gate["passed"], gate["timed_out"], gate["exit_code"]) == (False, True, None)
    assert gate["duration"] < 30  # killed, not waited for


async def test_a_session_without_a_gate_continues_until_it_answers(daemon, jp_fetch, script):
    model = script([{"code": "x = 1"}, {"code": "x += 1"}, {"code": "answer(x)"}])
    sid = await start_session(jp_fetch, "count", model=model, autonomous={"turns": 2})
    await _ended(daemon, sid)
    record = await get_session(jp_fetch, sid)
    assert (record["state"], record["answer_repr"]) == ("DONE", "2")
    gates = [e["data"] for e in await events(daemon, sid, "gate")]
    assert [(g["kind"], g["passed"], g["ended"]) for g in gates] == [
        ("answer", False, "it used its 2 turns"),
        ("answer", True, "it answered"),
    ]


async def test_bad_autonomous_options_start_nothing(daemon, jp_fetch, user_kernel):
    before = len(daemon.registry)
    for plan, expected in (
        ({"gate": "no-such-program-xyz --check"}, "does not exist"),
        ({"gate": {"python": "x ==="}}, "not a Python expression"),
        ({"gate": {"shell": "true", "python": "1"}}, "'autonomous.gate'"),
        ({"gate": "ok", "turns": 0}, "at least 1"),
        ({"max_continuations": 2.5}, "must be an integer"),
        ({"budget": 3}, "unknown field"),
        ("yes", "must be true or false or an object"),
    ):
        body = json.dumps({"prompt": "x", "autonomous": plan})
        code, error = await fetch_error(
            jp_fetch("api", "prime", "sessions", method="POST", body=body)
        )
        assert code == 400 and expected in error["message"], (plan, error)
    # From a REPL: the same refusal, in the cell that asked.
    nb = await user_kernel()
    out = await nb.value(
        "try:\n    rlm('x', autonomous={'gate': 'no-such-program-xyz'})\n"
        "except Exception as e:\n    print(type(e).__name__, e)"
    )
    assert out.startswith("InvalidRequest the gate's command 'no-such-program-xyz' does not exist")
    assert len([r for r in daemon.registry if r.is_agent]) == 0
    assert len(daemon.registry) - before <= 1  # at most the notebook's own session


async def test_a_continuation_ended_by_repeats_says_so(daemon, jp_fetch, script):
    # The same code with the same output six times: the loop gives up on the continuation
    # (a model's limit of repeats), well before its 12 turns.
    model = script([{"code": "print('same')"}] * 6 + [{"code": "answer('moved on')"}])
    sid = await start_session(jp_fetch, "repeat", model=model, autonomous={"turns": 12})
    await _ended(daemon, sid)
    record = await get_session(jp_fetch, sid)
    assert (record["state"], record["answer_repr"]) == ("DONE", "'moved on'")
    continuations = [e["data"] for e in await events(daemon, sid, "continuation")]
    assert continuations[1]["reason"] == (
        "the model repeated the same code with the same output 6 times without answering"
    )
