"""Replay (daemon/replay.py) end to end: a recorded tree re-run from its model's recorded replies
in fresh kernels, compared with its recording; a changed input shows where it is first read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prime_kernel.models import profiles
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import events, fetch_error, get_session, start_session, wait_for


def counted(turns: list[dict[str, Any]], calls: list[int]) -> list[Any]:
    """The turns of a script, each counting in `calls` that the model was asked."""

    def turn(spec: dict[str, Any]) -> Any:
        def play(_messages: list[dict[str, Any]]) -> dict[str, Any]:
            calls.append(1)
            return dict(spec)

        return play

    return [turn(t) for t in turns]


async def settled(jp_fetch: Any, sid: str) -> dict[str, Any]:
    async def ended() -> bool:
        return (await get_session(jp_fetch, sid))["state"] in ("DONE", "FAILED", "CANCELLED")

    await wait_for(ended, timeout=120)
    return await get_session(jp_fetch, sid)


async def start_replay(jp_fetch: Any, original: str, **options: Any) -> str:
    """POST /api/prime/sessions with `replay` and no prompt (the recorded one stands)."""
    body = json.dumps({"replay": original, **options})
    resp = await jp_fetch("api", "prime", "sessions", method="POST", body=body)
    return str(json.loads(resp.body)["id"])


async def report(jp_fetch: Any, sid: str) -> dict[str, Any]:
    return dict(json.loads((await jp_fetch("api", "prime", "sessions", sid, "replay")).body))


async def record_tree(jp_fetch: Any, script: Any, data: Path, calls: list[int]) -> str:
    """A root that reads `data`, starts three children (a map of two, then one) and answers."""
    child = script(
        counted([{"code": "print(context * 2)"}, {"code": "answer(context * 2)"}], calls)
    )
    root = script(
        counted(
            [
                {"code": f"text = open({str(data)!r}).read().strip()\nprint(text)"},
                {
                    "code": f"hs = rlm.map('double it', contexts=[1, 2], model={child!r})\n"
                    "vals = rlm.gather(*hs)\nprint(vals, hs[0].session_id)"
                },
                {"code": f"h = rlm('double it', context=5, model={child!r})\nprint(h.result())"},
                {"code": "answer(f'{text}: {sum(vals) + h.result()}')"},
            ],
            calls,
        )
    )
    sid = await start_session(jp_fetch, "read the file, double numbers", model=root)
    record = await settled(jp_fetch, sid)
    assert record["state"] == "DONE", record.get("error")
    assert record["answer_repr"] == "'hello: 16'"
    return sid


async def test_a_tree_replays_without_model_calls_and_a_changed_file_diverges(
    daemon, jp_fetch, script, jp_root_dir
):
    data = jp_root_dir / "data.txt"  # where agent kernels may read
    data.write_text("hello\n")
    calls: list[int] = []
    original = await record_tree(jp_fetch, script, data, calls)
    assert len(calls) == 4 + 3 * 2

    calls.clear()
    replay = await start_replay(jp_fetch, original, subtree=True)
    record = await settled(jp_fetch, replay)
    assert record["state"] == "DONE", record.get("error")
    assert record["answer_repr"] == "'hello: 16'"
    assert record["prompt"] == "read the file, double numbers"
    assert calls == []  # no model was asked: every turn came from the recording
    assert record["usage"]["subtree"]["cost"] == 0
    result = await report(jp_fetch, replay)
    assert (result["turns"], result["sessions"], result["divergent"]) == (10, 4, 0)
    assert [r["of"] for r in result["replays"][1:]] == [
        c.id for c in daemon.registry.children(original)
    ]
    model_calls = await events(daemon, replay, "model_call")
    assert [e["data"]["model"] for e in model_calls] == [f"replay/{original}"] * 4
    # The children ran their own code again, in kernels of their own.
    for child in daemon.registry.children(replay):
        assert (await get_session(jp_fetch, child.id))["usage"]["own"]["cells"] == 2

    data.write_text("goodbye\n")
    replay = await start_replay(jp_fetch, original, subtree=True)
    record = await settled(jp_fetch, replay)
    assert record["answer_repr"] == "'goodbye: 16'"
    result = await report(jp_fetch, replay)
    assert result["divergent"] == 1
    first = result["replays"][0]["first_divergence"]
    assert (first["turn"], first["cell"]) == (1, 1)
    assert "open(" in first["code"]
    assert "-hello" in first["diff"] and "+goodbye" in first["diff"]
    assert calls == []


async def test_without_subtree_children_end_as_recorded(daemon, jp_fetch, script, jp_root_dir):
    data = jp_root_dir / "data.txt"
    data.write_text("hello\n")
    calls: list[int] = []
    original = await record_tree(jp_fetch, script, data, calls)
    replay = await start_replay(jp_fetch, original)
    record = await settled(jp_fetch, replay)
    assert record["state"] == "DONE", record.get("error")
    assert record["answer_repr"] == "'hello: 16'"
    children = daemon.registry.children(replay)
    assert len(children) == 3
    for child in children:
        got = await get_session(jp_fetch, child.id)
        assert got["usage"]["own"]["cells"] == 0 and got["state"] == "DONE"
    result = await report(jp_fetch, replay)
    assert (result["turns"], result["sessions"], result["divergent"]) == (4, 1, 0)


async def test_until_hands_the_session_to_the_live_model(daemon, jp_fetch, script):
    recorded = script(
        [{"code": "x = 20\nprint(x)"}, {"code": "x += 1\nprint(x)"}, {"code": "answer(x)"}]
    )
    original = await start_session(jp_fetch, "count", model=recorded)
    assert (await settled(jp_fetch, original))["answer_repr"] == "21"
    # The live model is asked from the third turn on (its script is indexed by turn).
    live = script([{"text": "never"}, {"text": "never"}, {"code": "answer(x * 2)"}])
    replay = await start_replay(jp_fetch, original, until=2, model=live)
    record = await settled(jp_fetch, replay)
    assert record["state"] == "DONE", record.get("error")
    assert record["answer_repr"] == "42"
    models = [e["data"]["model"] for e in await events(daemon, replay, "model_call")]
    assert models == [f"replay/{original}", f"replay/{original}", live]
    result = await report(jp_fetch, replay)
    assert (result["turns"], result["sessions"], result["divergent"]) == (2, 1, 0)


async def test_rlm_replays_from_a_notebook(daemon, jp_fetch, script, user_kernel):
    recorded = script([{"code": "print(6 * 7)"}, {"code": "answer(42)"}])
    original = await start_session(jp_fetch, "six times seven", model=recorded)
    await settled(jp_fetch, original)
    nb = await user_kernel()
    assert await nb.value(f"h = rlm(replay={original!r}); h.result(timeout=60)") == "42"
    out = await nb.value("r = h.replay_report(); r['turns'], r['sessions'], r['divergent']")
    assert out == "(2, 1, 0)"


async def test_what_cannot_replay_is_refused(daemon, jp_fetch, script):
    status, body = await fetch_error(
        jp_fetch("api", "prime", "sessions", method="POST", body=json.dumps({"replay": "s_nope"}))
    )
    assert status == 404 and "s_nope" in body["message"]
    status, body = await fetch_error(
        jp_fetch(
            "api", "prime", "sessions", method="POST", body=json.dumps({"until": 2, "prompt": "x"})
        )
    )
    assert status == 400 and "until and subtree go with replay" in body["message"]
    sid = await start_session(jp_fetch, "echo")
    await settled(jp_fetch, sid)
    status, body = await fetch_error(jp_fetch("api", "prime", "sessions", sid, "replay"))
    assert status == 404 and "not a replay" in body["message"]


async def test_a_failed_recording_fails_the_same_way(daemon, jp_fetch, script):
    recorded = script([{"code": "print(1)"}, {"code": "print(2)"}, {"code": "answer(3)"}])
    original = await start_session(jp_fetch, "count", model=recorded, max_turns=2)
    assert (await settled(jp_fetch, original))["state"] == "FAILED"
    replay = await start_replay(jp_fetch, original)
    record = await settled(jp_fetch, replay)
    assert record["state"] == "FAILED" and "turn limit (2)" in record["error"]
    (session,) = (await report(jp_fetch, replay))["replays"]
    assert (session["state"], session["recorded_state"], session["divergent"]) == (
        "FAILED",
        "FAILED",
        0,
    )


async def test_replies_that_continued_a_prefill_replay_whole(daemon, script, monkeypatch):
    # The embedded models' way: fenced code, each reply continuing a prefill the loop sent
    # (after a printed value, one that opens answer( ). The recorded reply already holds it.
    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "text": "42)\n" if messages[-1]["content"].endswith("answer(") else "print(6 * 7)\n"
        }

    model = script([turn] * 4, tools=False)
    monkeypatch.setitem(profiles.PROFILES, model, profiles.CODER)
    original = (
        await daemon.admission.create_session(SessionRequest("six times seven", model=model))
    )["id"]
    assert (await daemon.runs.wait(original, 120))["answer_repr"] == "42"
    replay = (await daemon.admission.create_session(SessionRequest(None, replay=original)))["id"]
    result = await daemon.runs.wait(replay, 120)
    assert result["state"] == "DONE" and result["answer_repr"] == "42"
    report = await daemon.replays.report(replay)
    assert (report["turns"], report["divergent"]) == (2, 0)
