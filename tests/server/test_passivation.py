"""INACTIVE: an idle session's REPL is snapshotted and its kernel shut; a message revives it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import events, post_message, start_session, wait_for

SETUP = """
import math
xs = [1, 2, 3]
def f():
    return 1
class K:
    pass
k = K()
answer('ready')
"""


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    return {**prime_config, "idle_timeout": 1.0}


async def test_idle_session_is_passivated_and_revived(daemon, jp_fetch, script):
    seen: list[str] = []

    def after_revival(messages: list[dict[str, Any]]) -> dict[str, Any]:
        seen.extend(m["content"] for m in messages if m["role"] == "user")
        return {"code": "answer([xs, math.floor(2.5), 'f' in globals()])"}

    model = script([{"code": SETUP}, after_revival])
    sid = await start_session(jp_fetch, "keep state", model=model, persistent=True)
    live = daemon.registry.live[sid]
    await wait_for(lambda: live.state.value == "INACTIVE", timeout=120)
    snapshots = await events(daemon, sid, "snapshot")
    assert live.runner is None and live.record.kernel_id is None
    snap = snapshots[-1]["data"]
    assert {"math", "xs"} <= set(snap["saved"])
    assert set(snap["skipped"]) == {"f", "K", "k"}  # defined in the REPL: named, not lost silently

    receipt = await post_message(jp_fetch, sid, "are you there?")
    assert (receipt["status"], receipt["state"]) == ("queued", "INACTIVE")
    await wait_for(lambda: live.record.answer_repr == "[[1, 2, 3], 2, False]", timeout=120)

    async def states() -> list[str]:
        return [e["data"]["state"] for e in await events(daemon, sid, "state")]

    async def six() -> bool:
        return len(await states()) >= 6  # the answer comes just before IDLE

    await wait_for(six)
    assert (await states())[:6] == ["ADMITTED", "RUNNING", "IDLE", "INACTIVE", "RUNNING", "IDLE"]
    restored = (await events(daemon, sid, "restore"))[-1]["data"]
    assert {"math", "xs"} <= set(restored["restored"]) and restored["failed"] == {}
    assert any(s.startswith("[Your session was inactive") for s in seen)
    assert seen[-1] == "[message from user]: are you there?"
