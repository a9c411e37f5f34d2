"""Errors of the primitives in a cell: the user's frame and the daemon's message, not the
client's frames; and a "Prime Agent" kernel started outside a Prime server (nbclient, as
nbconvert runs a notebook) says that is why nothing connects."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from prime_kernel.kernel.capability import STANDALONE
from tests.conftest import KERNELSPEC

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def traceback_text(output: dict[str, Any]) -> str:
    return _ANSI.sub("", "\n".join(output["traceback"]))


def frames(text: str) -> list[str]:
    """The headers of a traceback's frames ("Cell In[1], line 1", "File .../x.py:3, in f")."""
    return [line for line in text.splitlines() if line.startswith(("Cell In[", "File "))]


def test_a_prime_agent_kernel_outside_a_server_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    shutil.copytree(KERNELSPEC, data / "kernels" / "prime-agent")
    monkeypatch.setenv("JUPYTER_PATH", str(data))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "prime-agent", "display_name": "Prime Agent"}
    nb.cells = [
        nbformat.v4.new_code_cell("h = rlm('What is 2 + 2?')"),
        nbformat.v4.new_code_cell("def ask():\n    return llm('hi')\n\nask()"),
        nbformat.v4.new_code_cell("6 * 7"),
    ]
    client = NotebookClient(
        nb,
        kernel_name="prime-agent",
        allow_errors=True,
        timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()

    first, second, third = (cell.outputs for cell in nb.cells)
    for outputs, code_frames in ((first, 1), (second, 2)):
        (error,) = outputs
        assert (error.ename, error.evalue) == ("NotConnected", STANDALONE)
        text = traceback_text(error)
        # The cell's frames only (in the second, the function's too): none of prime_kernel's.
        assert len(frames(text)) == code_frames, text
        assert "prime_kernel/" not in text, text
    assert "----> 1 h = rlm('What is 2 + 2?')" in traceback_text(first[0])
    assert third[0].data["text/plain"] == "42"  # otherwise a Python kernel like any other


async def run_cell(jp_ws_fetch: Any, kernel_id: str, code: str) -> list[dict[str, Any]]:
    """A cell run as JupyterLab runs it (the kernel's websocket); its outputs' contents."""
    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": "execute_request", "session": uuid.uuid4().hex}
    ws.write_message(
        json.dumps(
            {
                "channel": "shell",
                "header": {**header, "username": "user", "version": "5.3", "date": ""},
                "parent_header": {},
                "metadata": {},
                "content": {"code": code, "silent": False, "store_history": True},
            }
        )
    )
    outputs, replied, idle = [], False, False
    while not (replied and idle):
        msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] in ("error", "stream", "execute_result"):
            outputs.append(msg["content"])
        replied = replied or msg["msg_type"] == "execute_reply"
        idle = idle or (msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle")
    ws.close()
    return outputs


async def test_a_daemon_refusal_shows_the_cell_and_the_daemons_message(
    daemon, jp_fetch, jp_ws_fetch
):
    resp = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "prime-agent"}))
    kernel_id = json.loads(resp.body)["id"]
    (error,) = await run_cell(jp_ws_fetch, kernel_id, 'send("parent", "half done")')
    assert error["ename"] == "NotFound"
    assert error["evalue"].endswith(
        "has no parent (it is a root session); a notebook messages the agents it started: "
        "send(h, ...)"
    )
    text = traceback_text(error)
    assert frames(text) == ["Cell In[1], line 1"], text
    assert '----> 1 send("parent", "half done")' in text
