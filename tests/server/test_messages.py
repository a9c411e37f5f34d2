"""Messages end to end: kernels and people talking through daemon mailboxes."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from prime_kernel.cli.main import main as cli_main
from prime_kernel.kernel.client import TOKEN_HEADER
from tests.conftest import events, fetch_error, post_message, start_session, wait_for

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
    a_events = await events(daemon, ids[0], "mail_in", "mail_out")
    assert [e["kind"] for e in a_events].count("mail_out") == 2
    ins = [e["data"] for e in a_events if e["kind"] == "mail_in"]
    assert {d["from"] for d in ins} == {ids[1], daemon.listing.session_json(ids[0])["parent_id"]}
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
    sid = await start_session(jp_fetch, "wait for mail", model=model, persistent=True)
    await wait_for(lambda: daemon.registry.live[sid].state.value == "RUNNING")
    receipt = await post_message(jp_fetch, sid, "first")
    assert receipt["status"] == "delivered"  # RUNNING: seen at its next turn
    await wait_for(lambda: (daemon.registry.get(sid).answer_repr or "").startswith("seen"))
    await wait_for(lambda: daemon.registry.live[sid].state.value == "IDLE")
    assert daemon.registry.get(sid).answer_repr == "seen: [message from user]: first"

    # IDLE: `prime-agent send` wakes it for a new turn in which the model sees the message.
    jp_serverapp.write_server_info_file()  # how `prime-agent` finds a running daemon
    argv = ["--root", daemon.root_dir, "send", sid, "second"]
    assert await asyncio.to_thread(cli_main, argv) == 0
    await wait_for(
        lambda: daemon.registry.get(sid).answer_repr == "seen: [message from user]: second"
    )
    states = [e["data"]["state"] for e in await events(daemon, sid, "state")]
    assert states == ["ADMITTED", "RUNNING", "IDLE", "RUNNING", "IDLE", "RUNNING", "IDLE"]
    kinds = [e["kind"] for e in await events(daemon, sid, "mail_in")]
    assert kinds == ["mail_in", "mail_in"]
    assert await daemon.store.unread(sid, "model") == []


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    return {
        **prime_config,
        "message_max_bytes": 200,
        "max_pending_messages": 3,
        "message_rate_limit": 5,
        "message_rate_window": 60.0,
    }


async def _refusal(kernel: Any, call: str) -> str:
    """What a call prints when it fails in a cell: the exception's class and message."""
    return await kernel.value(
        f"try:\n    {call}\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
        "else:\n    print('no error')"
    )


async def test_send_refusals(daemon, user_kernel, jp_fetch):
    nb, other = await user_kernel(), await user_kernel()
    whoami = "from prime_kernel.kernel.primitives import client\nclient().request('GET', 'whoami')"
    other_id = json.loads((await other.value(whoami + "['id']")).replace("'", '"'))
    nb_id = json.loads((await nb.value(whoami + "['id']")).replace("'", '"'))

    # In the sending cell: each bad send is a clear error and stores nothing.
    out = await _refusal(nb, f"send({other_id!r}, 'hi')")
    assert out.startswith("Forbidden") and "out of reach" in out
    out = await _refusal(nb, "send('s000000000000', 'hi')")
    assert out.startswith("NotFound") and "no session 's000000000000'" in out
    assert "has no parent" in await _refusal(nb, "send('parent', 'hi')")
    assert "has no children" in await _refusal(nb, "send('children', 'hi')")
    assert "the limit is 200" in await _refusal(nb, "send('parent', 'x' * 300)")
    assert "'to' must be" in await _refusal(nb, "send(42, 'hi')")
    forged_body = {"to": "parent", "message": "x", "from": other_id}
    forged = f"client().request('POST', 'messages', {forged_body!r})"
    assert "unknown field: from" in await _refusal(nb, forged)
    assert await nb.value("recv(0)") == ""  # nothing waiting: None, at once
    assert "non-negative" in await _refusal(nb, "recv(-1)")
    assert await daemon.store.unread(other_id, "model") == []

    # People: any session, shown as "user"; mailbox and rate limits, bad targets and fields.
    for i in range(3):
        receipt = await post_message(jp_fetch, other_id, f"m{i}")
        assert receipt["status"] == "queued"  # a notebook reads with recv()
    code, body = await fetch_error(post_message(jp_fetch, other_id, "m3"))
    assert (code, body["error"]) == (429, "mailbox_full")
    got = await other.value(
        "print([(m['from'], m['from_id'], m['message']) for m in [recv(5) for _ in range(3)]])"
    )
    assert got.strip() == "[('user', None, 'm0'), ('user', None, 'm1'), ('user', None, 'm2')]"
    for i in range(2):
        await post_message(jp_fetch, other_id, f"n{i}")
    code, body = await fetch_error(post_message(jp_fetch, other_id, "one too many"))
    assert (code, body["error"]) == (429, "rate_limited") and "retry in" in body["message"]
    code, body = await fetch_error(post_message(jp_fetch, "s000000000000", "hi"))
    assert code == 404
    code, body = await fetch_error(post_message(jp_fetch, nb_id, "hi", sender=other_id))
    assert code == 400 and "unknown field: sender" in body["message"]

    # Tokens: missing, wrong, and one whose session has ended (its kernel is kept for a while).
    ended = await start_session(jp_fetch, "say hi")
    await wait_for(lambda: daemon.registry.get(ended).state.value == "DONE")
    token = daemon.tokens._by_kernel[daemon.registry.get(ended).kernel_id]
    send = {"to": "parent", "message": "hi"}
    for headers, expect in (
        ({}, "missing"),
        ({TOKEN_HEADER: "forged-token"}, "unknown or revoked"),
        ({TOKEN_HEADER: token}, "has ended"),
    ):
        code, body = await fetch_error(
            jp_fetch(
                "api",
                "prime",
                "kernel",
                "messages",
                method="POST",
                body=json.dumps(send),
                headers=headers,
            )
        )
        assert code == 401 and expect in body["message"], body
    code, body = await fetch_error(post_message(jp_fetch, ended, "too late"))
    assert code == 409 and "has ended (DONE)" in body["message"]
    assert await daemon.store.unread(ended, "model") == []
