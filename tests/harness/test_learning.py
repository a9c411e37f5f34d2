"""Learning from verified sessions: verify, distil, review, recall into a later prompt, roll back;
and no learning to cheat."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prime_kernel.daemon.daemon import Daemon
from prime_kernel.harness import proposals
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import events, fetch_error, get_session, grant_capability, wait_for

SQUARES = "What is the sum of the squares of 1..100?"
SIMILAR = "What is the sum of the squares of 1..50?"
# The agent looks first, tries a dead end, then computes and answers.
SOLVE = [
    {"fenced": "print(type(context))"},
    {"fenced": "total = sum(i ** 2 for i in rnge(101))"},
    {"fenced": "total = 0\nfor i in range(1, 101):\n    total += i * i\nprint(total)"},
    {"fenced": "answer(total)"},
]
LEARNED = "total = 0\nfor i in range(1, 101):\n    total += i * i\nanswer(total)"


async def verify(jp_fetch: Any, sid: str, **body: Any) -> dict[str, Any]:
    resp = await jp_fetch(
        "api", "prime", "sessions", sid, "verify", method="POST", body=json.dumps(body)
    )
    return dict(json.loads(resp.body))


async def done(daemon: Daemon, prompt: str, model: str, **options: Any) -> str:
    rec = await daemon.admission.create_session(SessionRequest(prompt, model=model, **options))
    assert (await daemon.runs.wait(rec["id"], 60))["state"] == "DONE"
    return str(rec["id"])


async def test_a_verified_session_teaches_a_similar_one_until_rolled_back(
    daemon: Daemon, script, capture, jp_fetch
):
    sid = await done(daemon, SQUARES, script(SOLVE, tools=False))

    async def first_prompt() -> list[dict[str, Any]]:
        seen: list[list[dict[str, Any]]] = []
        model = script([capture(seen, {"fenced": "answer(0)"})], tools=False)
        await done(daemon, SIMILAR, model)
        return seen[0]

    before = await first_prompt()
    # Under `review` (the default) what was learned waits for a person.
    verification = await verify(jp_fetch, sid)
    assert verification["correct"] is True and verification["by"] == "user"
    learned = verification["learned"]
    assert learned["status"] == "pending" and learned["entry"].startswith("example/sum-square")
    assert await first_prompt() == before

    rid = learned["refinement_id"]
    proposal = proposals.get_refinement(daemon.harness, rid)
    assert proposal["author"] == "learning" and proposal["evidence"] == [sid]
    assert proposal["trigger"] == f"session {sid} verified right by user"
    await jp_fetch(
        "api", "prime", "harness", "refinements", rid, "approve", method="POST", body="{}"
    )
    example = daemon.harness.get("example", learned["entry"].split("/")[1])
    assert example.metadata["learned_from"] == f"session {sid}"
    assert example.metadata["verified_by"] == "user"
    assert daemon.harness.history("example", example.id)[-1]["reason"] == (
        f"learned from session {sid}, verified right by user"
    )

    after = await first_prompt()
    shown = [m for m in after if m.get("name") == "example"]
    assert shown[-2:] == [
        {"role": "user", "name": "example", "content": f"Task: {SQUARES}"},
        {"role": "assistant", "name": "example", "content": f"```python\n{LEARNED}\n```"},
    ]
    assert after[-1] == before[-1]  # the task itself, last, as before

    await jp_fetch(
        "api", "prime", "harness", "refinements", rid, "rollback", method="POST", body="{}"
    )
    assert await first_prompt() == before  # exactly as before it was learned

    record = await get_session(jp_fetch, sid)
    assert (
        record["verified"]["correct"] is True
        and record["verified"]["learned"]["refinement_id"] == rid
    )
    [event] = await events(daemon, sid, "verified")
    assert event["data"]["by"] == "user" and event["data"]["learned"]["entry"] == learned["entry"]


async def test_a_planted_cheating_trajectory_is_not_learned(daemon: Daemon, script, jp_fetch):
    daemon.harness.review_policy = "auto"
    cheater = script([{"code": "answer(338350)"}])
    sid = await done(daemon, SQUARES, cheater)
    verification = await verify(jp_fetch, sid, note="right, but how?")
    assert "learned" not in verification
    assert "literal (338350)" in verification["refused"]
    assert daemon.harness.list("example") == ([], [])
    # The verdict is still recorded, with why nothing was learned.
    [event] = await events(daemon, sid, "verified")
    assert event["data"]["note"] == "right, but how?" and "literal" in event["data"]["refused"]

    peek = (
        "import json, pathlib\nanswer(json.loads(pathlib.Path('expected.json').read_text())['q'])"
    )
    peeker = script([{"code": peek}])
    Path(daemon.root_dir, "expected.json").write_text('{"q": 338350}')
    sid = await done(daemon, SQUARES, peeker)
    assert "reads the verifier" in (await verify(jp_fetch, sid))["refused"]
    assert daemon.harness.list("example") == ([], [])


async def test_a_second_verdict_withdraws_what_the_first_taught(daemon: Daemon, script, jp_fetch):
    daemon.harness.review_policy = "auto"
    sid = await done(daemon, SQUARES, script(SOLVE, tools=False))
    right = await verify(jp_fetch, sid)
    assert right["learned"]["status"] == "applied"
    entry = right["learned"]["entry"].split("/")[1]
    assert daemon.harness.get("example", entry)
    wrong = await verify(jp_fetch, sid, correct=False, note="the squares of 0..100")
    assert wrong["learned"]["entry"] == f"example/{entry}-wrong"
    ids = [e.id for e in daemon.harness.list("example")[0]]
    assert ids == [f"{entry}-wrong"]  # the worked example was rolled back
    assert (
        proposals.get_refinement(daemon.harness, right["learned"]["refinement_id"])["status"]
        == "rolled_back"
    )
    caution = daemon.harness.get("example", f"{entry}-wrong")
    assert (
        caution.metadata["outcome"] == "wrong"
        and caution.metadata["note"] == "the squares of 0..100"
    )


async def test_what_cannot_be_verified(daemon: Daemon, script, jp_fetch):
    failing = script([{"code": "1/0"}])
    rec = await daemon.admission.create_session(
        SessionRequest("divide", model=failing, max_turns=1)
    )
    assert (await daemon.runs.wait(rec["id"], 60))["state"] == "FAILED"
    code, body = await fetch_error(verify(jp_fetch, rec["id"]))
    assert code == 409 and "no answer to verify" in body["message"]
    code, body = await fetch_error(verify(jp_fetch, "s-nope"))
    assert code == 404
    sid = await done(daemon, SQUARES, script(SOLVE, tools=False))
    code, body = await fetch_error(verify(jp_fetch, sid, correct="yes"))
    assert code == 400


async def test_a_passed_gate_verifies_and_teaches(daemon: Daemon, script):
    daemon.harness.review_policy = "auto"
    model = script(SOLVE, tools=False)
    sid = await done(daemon, SQUARES, model, autonomous={"gate": {"python": "total == 338350"}})

    await wait_for(lambda: daemon.registry.get(sid).verified is not None)
    verification = daemon.registry.get(sid).verified
    assert verification is not None
    assert verification["by"] == "gate `total == 338350`"
    assert verification["learned"]["status"] == "applied"
    [example] = daemon.harness.list("example")[0]
    assert example.metadata["verified_by"] == "gate `total == 338350`"


async def test_verify_from_a_notebook_but_not_from_an_agent(
    daemon: Daemon, script, jp_fetch, user_kernel
):
    daemon.harness.review_policy = "auto"
    solver = script(SOLVE, tools=False)
    kernel = await user_kernel("python3")
    await kernel.value("%load_ext prime_kernel")
    await grant_capability(jp_fetch, kernel)
    await kernel.value(f"h = rlm({SQUARES!r}, model={solver!r}); h.result()")
    verdict = await kernel.value("v = h.verify(); v['by'], v['learned']['status']")
    assert "user (notebook" in verdict and "applied" in verdict

    agent = script(
        [
            {"code": f"h = rlm({SQUARES!r}, model={solver!r})\nh.result()\nh.verify()"},
            {"code": "answer('done')"},
        ]
    )
    rec = await daemon.admission.create_session(SessionRequest("check a child", model=agent))
    await daemon.runs.wait(rec["id"], 60)
    [cell] = [
        e for e in await events(daemon, rec["id"], "cell") if "h.verify()" in e["data"]["code"]
    ]
    error = next(o for o in cell["data"]["outputs"] if o["output_type"] == "error")
    assert error["ename"] == "Forbidden" and "only a person verifies" in error["evalue"]
