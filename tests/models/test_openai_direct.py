"""The router's direct path for `openai/...` models: the same Completion (message, usage, price)
as litellm's path, litellm kept for what the direct path does not handle, HTTP errors and
retries as clear ModelErrors. Against a real HTTP server on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from prime_kernel.models import openai_direct
from prime_kernel.models.prompts import PYTHON_TOOL
from prime_kernel.models.router import ModelRouter, import_litellm
from prime_kernel.protocol.errors import ModelError

REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "python", "arguments": '{"code": "x = 1"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "total_tokens": 1230,
        "prompt_tokens_details": {"cached_tokens": 1024},
    },
}


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        # (status, body, headers) per request, the last one repeated.
        self.replies: list[tuple[int, Any, dict[str, str]]] = [(200, REPLY, {})]
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(
            {
                "path": self.path,
                "body": body,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
        )
        replies = self.server.replies
        status, payload, headers = replies.pop(0) if len(replies) > 1 else replies[0]
        if body.get("stream") and status == 200:
            self.send_events(body)
            return
        data = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, body: dict[str, Any]) -> None:
        """STREAMED as server-sent events, until the connection closes; the usage last only
        if the request asked for it (as OpenAI does)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunks = list(STREAMED)
        if not (body.get("stream_options") or {}).get("include_usage"):
            chunks = chunks[:-1]
        for chunk in chunks:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _call_piece(index: int, arguments: str, call_id: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": arguments}
    piece: dict[str, Any] = {"index": index, "function": fn}
    if call_id:
        piece.update(id=call_id, type="function")
        fn["name"] = "python"
    return piece


# A reply as OpenAI streams it: text, two tool calls in pieces, the finish, then the usage.
PIECES = ["Two ", "cells", ":"]
STREAMED = [
    _chunk({"role": "assistant", "content": ""}),
    *(_chunk({"content": p}) for p in PIECES),
    _chunk({"tool_calls": [_call_piece(0, "", "call_1")]}),
    _chunk({"tool_calls": [_call_piece(0, '{"code": ')]}),
    _chunk({"tool_calls": [_call_piece(0, '"x = 1"}')]}),
    _chunk({"tool_calls": [_call_piece(1, '{"code": "y = 2"}', "call_2")]}),
    _chunk({}, "tool_calls"),
    {
        "id": "chatcmpl-2",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [],
        "usage": REPLY["usage"],
    },
]


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


def complete(router: ModelRouter, model: str, **kwargs: Any) -> Any:
    async def run() -> Any:
        try:
            return await router.complete(model, MESSAGES, tools=[PYTHON_TOOL], **kwargs)
        finally:
            # The direct path's connections; litellm's logging worker (started by a call
            # through litellm) is stopped only by a router that used it, on its own loop.
            await (router.close() if not router.direct_openai else router._direct.close())

    return asyncio.run(run())


def test_direct_and_litellm_give_the_same_completion(server: Server) -> None:
    direct, through = ModelRouter(), ModelRouter(direct_openai=False)
    a = complete(direct, "openai/gpt-4o-mini", api_base=server.url, api_key="sk-test-direct")
    b = complete(through, "openai/gpt-4o-mini", api_base=server.url, api_key="sk-test-direct")
    assert a.message == b.message
    assert a.message["tool_calls"][0]["function"]["arguments"] == '{"code": "x = 1"}'
    assert (a.finish_reason, a.usage) == (b.finish_reason, b.usage)
    assert a.usage["cached_tokens"] == 1024
    assert a.cost == pytest.approx(b.cost, rel=1e-9) and a.cost > 0
    # Without the cache the 1,024 cached tokens cost the full input price on both paths.
    assert a.uncached_cost == pytest.approx(b.uncached_cost, rel=1e-9)
    assert a.uncached_cost > a.cost
    sent, seen = server.requests
    # The direct request: what litellm sends, to the same endpoint with the same key.
    assert sent["path"] == seen["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == seen["headers"]["authorization"]
    assert sent["body"]["model"] == seen["body"]["model"] == "gpt-4o-mini"
    assert sent["body"]["messages"] == MESSAGES
    assert sent["body"]["tools"] == [PYTHON_TOOL]
    # Which path served which: litellm goes through the OpenAI SDK.
    assert "OpenAI" in seen["headers"]["user-agent"]
    assert "OpenAI" not in sent["headers"]["user-agent"]


def test_direct_and_litellm_stream_the_same_completion(server: Server) -> None:
    async def stream(router: ModelRouter) -> tuple[Any, list[str]]:
        pieces: list[str] = []
        try:
            completion = await router.stream(
                "openai/gpt-4o-mini",
                MESSAGES,
                pieces.append,
                tools=[PYTHON_TOOL],
                api_base=server.url,
                api_key="sk-test-direct",
            )
        finally:
            await (router.close() if not router.direct_openai else router._direct.close())
        return completion, pieces

    direct, through = ModelRouter(), ModelRouter(direct_openai=False)
    a, a_pieces = asyncio.run(stream(direct))
    b, b_pieces = asyncio.run(stream(through))
    assert a_pieces == b_pieces == PIECES
    assert a.message == b.message
    assert a.message["content"] == "Two cells:"
    calls = [(c["id"], c["function"]["arguments"]) for c in a.message["tool_calls"]]
    assert calls == [("call_1", '{"code": "x = 1"}'), ("call_2", '{"code": "y = 2"}')]
    assert (a.finish_reason, a.usage) == (b.finish_reason, b.usage) == ("tool_calls", a.usage)
    assert a.usage["cached_tokens"] == 1024 and a.usage["prompt_tokens"] == 1200
    assert a.cost == pytest.approx(b.cost, rel=1e-9) and a.cost > 0
    sent, seen = server.requests
    for request in (sent, seen):  # both asked for the usage in the stream's last event
        assert request["body"]["stream"] is True
        assert request["body"]["stream_options"] == {"include_usage": True}
    assert "OpenAI" not in sent["headers"]["user-agent"]


def test_litellm_serves_what_the_direct_path_does_not() -> None:
    litellm = import_litellm()
    assert openai_direct.endpoint(litellm, "openai/gpt-4o-mini", {"api_base": "http://x"})
    # Other providers, sampling parameters (litellm translates them per model), callbacks.
    assert openai_direct.endpoint(litellm, "anthropic/claude-3-5-haiku", {}) is None
    assert openai_direct.endpoint(litellm, "scripted/echo", {}) is None
    assert openai_direct.endpoint(litellm, "openai/o3-mini", {"temperature": 0.2}) is None
    litellm.success_callback.append(lambda *a, **k: None)
    try:
        assert openai_direct.endpoint(litellm, "openai/gpt-4o-mini", {}) is None
    finally:
        litellm.success_callback.pop()


def test_endpoint_follows_litellm_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = import_litellm()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.example/v1/")
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-123")
    where = openai_direct.endpoint(litellm, "openai/gpt-4o-mini", {})
    assert where is not None
    assert where.url == "http://proxy.example/v1/chat/completions"
    headers = dict(where.headers)
    assert headers["Authorization"] == "Bearer sk-from-the-environment"
    assert headers["OpenAI-Organization"] == "org-123"
    where = openai_direct.endpoint(
        litellm, "openai/gpt-4o-mini", {"api_base": "http://other/v1", "api_key": "sk-given-key"}
    )
    assert where is not None and where.url == "http://other/v1/chat/completions"
    assert dict(where.headers)["Authorization"] == "Bearer sk-given-key"


def test_http_errors_are_model_errors_without_retrying_client_errors(server: Server) -> None:
    server.replies = [(401, {"error": {"message": "Incorrect API key provided"}}, {})]
    with pytest.raises(ModelError, match="HTTP 401: Incorrect API key provided"):
        complete(ModelRouter(), "openai/gpt-4o-mini", api_base=server.url)
    assert len(server.requests) == 1


def test_transient_errors_are_retried(server: Server) -> None:
    busy = (503, {"error": {"message": "overloaded"}}, {"Retry-After": "0"})
    server.replies = [busy, (429, {"error": "slow down"}, {"Retry-After": "0"}), (200, REPLY, {})]
    result = complete(ModelRouter(), "openai/gpt-4o-mini", api_base=server.url)
    assert result.usage["total_tokens"] == 1230
    assert len(server.requests) == 3
    server.requests.clear()
    server.replies = [busy]
    with pytest.raises(ModelError, match="HTTP 503: overloaded"):
        complete(ModelRouter(), "openai/gpt-4o-mini", api_base=server.url)
    assert len(server.requests) == 1 + openai_direct.MAX_RETRIES


def test_unreachable_endpoint_is_a_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openai_direct, "_backoff", lambda attempt, retry_after: 0)
    with pytest.raises(ModelError, match="model call to 'openai/gpt-4o-mini' failed"):
        complete(ModelRouter(), "openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1")


def test_direct_prices_are_litellms() -> None:
    """Every OpenAI chat model in litellm's table is priced as litellm prices it, with and
    without cached tokens; the ones with tiers or separately priced tokens by litellm itself."""
    litellm = import_litellm()
    rates: dict[str, Any] = {}
    models = [
        name
        for name, info in litellm.model_cost.items()
        if info.get("litellm_provider") == "openai" and info.get("mode") == "chat"
    ]
    assert len(models) > 20
    linear = 0
    for model in models:
        for usage in (
            {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230},
            {
                "prompt_tokens": 250_000,
                "completion_tokens": 4000,
                "total_tokens": 254_000,
                "prompt_tokens_details": {"cached_tokens": 100_000},
            },
        ):
            expected = sum(
                litellm.cost_per_token(
                    model=model, custom_llm_provider="openai", usage_object=litellm.Usage(**usage)
                )
            )
            assert openai_direct.price(litellm, model, usage, rates) == pytest.approx(
                expected, rel=1e-9, abs=1e-15
            ), model
        linear += rates[model] is not None
    assert linear > len(models) // 2  # most are priced without litellm's machinery
