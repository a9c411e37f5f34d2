"""The benchmarks' mock model: a streamed reply is the same reply the product rebuilds."""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from mock_model import MockServer

from prime_kernel.models.openai_direct import StreamedReply

TOOLS = [{"type": "function", "function": {"name": "python", "parameters": {}}}]


@pytest.fixture
def server() -> Any:
    mock = MockServer(turns=2, delay=0.0)
    thread = threading.Thread(target=mock.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{mock.server_address[1]}/v1/chat/completions"
    mock.shutdown()
    mock.server_close()


def post(url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request) as r:
        return bytes(r.read())


@pytest.mark.parametrize("tools", [TOOLS, None])
def test_a_streamed_reply_rebuilds_to_the_whole_one(server: str, tools: Any) -> None:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "t"}]}
    if tools:
        body["tools"] = tools
    whole = json.loads(post(server, body))
    streamed = StreamedReply()
    pieces: list[str] = []
    for line in post(server, body | {"stream": True}).splitlines(keepends=True):
        if streamed.take(line, pieces.append):
            break
    rebuilt = streamed.whole()
    expected = whole["choices"][0]
    got = rebuilt["choices"][0]
    assert got["finish_reason"] == expected["finish_reason"]
    assert (got["message"].get("content") or "") == expected["message"]["content"]
    assert "".join(pieces) == expected["message"]["content"]
    calls = [c["function"] for c in got["message"].get("tool_calls") or []]
    assert calls == [c["function"] for c in expected["message"].get("tool_calls", [])]
    assert rebuilt["usage"]["prompt_tokens"] == whole["usage"]["prompt_tokens"] == 100
    # The first of two turns is a trivial cell, whichever way it is asked for.
    code = json.loads(calls[0]["arguments"])["code"] if calls else got["message"]["content"]
    assert "x = 1" in code
