"""JupyterLab's path to a kernel still works on the IPC transport: a websocket to a person's
"Prime Agent" notebook kernel, and to a sandboxed agent kernel (a console attached to it)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.parametrize("prime_mode", ["bwrap"], indirect=True)


async def run_over_websocket(jp_ws_fetch: Any, kernel_id: str, code: str) -> str:
    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    msg_id = uuid.uuid4().hex
    ws.write_message(
        json.dumps(
            {
                "channel": "shell",
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "session": uuid.uuid4().hex,
                    "username": "user",
                    "version": "5.3",
                    "date": "",
                },
                "parent_header": {},
                "metadata": {},
                "content": {"code": code, "silent": False, "store_history": False},
            }
        )
    )
    result, replied, idle = "", False, False
    while not (replied and idle):  # the reply (shell) and the output (iopub) in any order
        msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "execute_result":
            result = msg["content"]["data"]["text/plain"]
        replied = replied or msg["msg_type"] == "execute_reply"
        idle = idle or (msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle")
    ws.close()
    return result


async def test_a_notebook_and_a_console_on_an_agent_kernel(daemon, jp_fetch, jp_ws_fetch):
    resp = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "prime-agent"}))
    kernel_id = json.loads(resp.body)["id"]
    assert await run_over_websocket(jp_ws_fetch, kernel_id, "6 * 7") == "42"
    agent = await daemon.custody.pool.start_kernel()
    try:
        out = await run_over_websocket(jp_ws_fetch, agent.kernel_id, "import os; os.getpid()")
        assert out == "3"  # in its sandbox's PID namespace: bwrap's init, the placeholder, it
    finally:
        await daemon.custody.pool.discard(agent)
