"""Messages end to end: kernels and people talking through daemon mailboxes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from prime_kernel.cli.main import main as cli_main
from tests.conftest import wait_for

CHILD_TALKS = """
send('parent', f'hello from {context}')
got = [recv(60)['message']]
send('siblings', f'hi sibling from {context}')
got.append(recv(60)['message'])
answer(sorted(got))
"""


async def test_parent_and_two_children_talk_both_ways(daemon, user_kernel, script):
    child = script([{"code": CHILD_TALKS}])
    nb = await user_kernel()
    await nb.value(
        f"hs = rlm.map('talk', contexts=['A', 'B'], model={child!r})\n"
        "ids = {h.session_id: h for h in hs}"
    )
    # The parent (a notebook) hears from both children, stamped with their real ids.
    hellos = json.loads(
        await nb.value(
            "import json\nms = [recv(60), recv(60)]\n"
            "print(json.dumps([[m['from_id'], m['message']] for m in ms]))"
        )
    )
    ids = json.loads(await nb.value("print(json.dumps([h.session_id for h in hs]))"))
    assert dict(hellos) == {ids[0]: "hello from A", ids[1]: "hello from B"}
    receipts = json.loads(await nb.value("print(json.dumps([h.send('go') for h in hs]))"))
    assert all(r["status"] == "delivered" for r in receipts)
    answers = await nb.value("rlm.gather(hs, timeout=120)")
    assert answers == "[['go', 'hi sibling from B'], ['go', 'hi sibling from A']]"
    a_events = daemon.store.events(ids[0], kinds=["mail_in", "mail_out"])
    assert [e["kind"] for e in a_events].count("mail_out") == 2
    ins = [e["data"] for e in a_events if e["kind"] == "mail_in"]
    assert {d["from"] for d in ins} == {ids[1], daemon.session_json(ids[0])["parent_id"]}
    # agents() in the notebook: its two children, with depth and state.
    seen = json.loads(await nb.value("print(json.dumps(agents()))"))
    assert {(a["relation"], a["id"]) for a in seen} == {("child", ids[0]), ("child", ids[1])}


def _last_user(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


async def test_messages_reach_running_and_idle_sessions(daemon, jp_fetch, jp_serverapp, script):
    """A message during a turn is shown at the next one; one to an IDLE session wakes it."""
    model = script(
        [
            {"text": "ready", "sleep": 2},
            lambda messages: {"text": "seen: " + _last_user(messages)},
            lambda messages: {"text": "seen: " + _last_user(messages)},
        ]
    )
    resp = await jp_fetch(
        "api",
        "prime",
        "sessions",
        method="POST",
        body=json.dumps({"prompt": "wait for mail", "model": model, "persistent": True}),
    )
    sid = json.loads(resp.body)["id"]
    await wait_for(lambda: daemon.live[sid].state.value == "RUNNING")
    resp = await jp_fetch(
        "api",
        "prime",
        "sessions",
        sid,
        "messages",
        method="POST",
        body=json.dumps({"message": "first"}),
    )
    assert json.loads(resp.body)["status"] == "delivered"  # RUNNING: seen at its next turn
    await wait_for(lambda: (daemon.live[sid].record.get("answer_repr") or "").startswith("seen"))
    await wait_for(lambda: daemon.live[sid].state.value == "IDLE")
    assert daemon.live[sid].record["answer_repr"] == "seen: [message from user]: first"

    # IDLE: `prime-agent send` wakes it for a new turn in which the model sees the message.
    jp_serverapp.write_server_info_file()  # how `prime-agent` finds a running daemon
    argv = ["--root", daemon.root_dir, "send", sid, "second"]
    assert await asyncio.to_thread(cli_main, argv) == 0
    await wait_for(
        lambda: daemon.live[sid].record.get("answer_repr") == "seen: [message from user]: second"
    )
    states = [e["data"]["state"] for e in daemon.store.events(sid, kinds=["state"])]
    assert states == ["ADMITTED", "RUNNING", "IDLE", "RUNNING", "IDLE", "RUNNING", "IDLE"]
    kinds = [e["kind"] for e in daemon.store.events(sid, kinds=["mail_in"])]
    assert kinds == ["mail_in", "mail_in"]
    assert daemon.store.pending_messages(sid) == []
