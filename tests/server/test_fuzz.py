"""Bad input to every route gets a 4xx with a JSON message, never a 500: malformed and deeply
nested JSON, huge numbers, NaN, lone surrogates, NUL characters, wrong types, huge bodies, and
query strings out of range. The routes are read from the running extension, so a route added
later is covered without editing this test; afterwards the daemon still works."""

from __future__ import annotations

import json
import re
from typing import Any

from tornado.httpclient import HTTPClientError

from .routes import routes

DEEP = "[" * 100_000 + "]" * 100_000
BODIES: list[str | bytes] = [
    "{",  # malformed
    "[1, 2]",  # not an object
    DEEP,  # nested past any recursion limit
    '{"a": ' * 100 + "1" + "}" * 100,  # nested past our limit, still valid JSON
    '{"prompt": "x", "budget": {"tokens": 1' + "0" * 400 + "}}",  # 1e400 as an integer
    '{"prompt": "x", "max_turns": NaN, "budget": {"tokens": Infinity}}',
    '{"prompt": "x \\ud800", "message": "\\udfff", "to": "\\ud800", "path": "\\ud800"}',
    '{"prompt": "x\\u0000", "path": "a\\u0000b.ipynb", "message": "m\\u0000", "to": "\\u0000"}',
    '{"prompt": 5, "message": [], "to": {}, "path": 7, "prompts": "x", "kernel_id": 1}',
    '{"sessions": [{"prompt": "x", "budget": {"tokens": -1e308}}]}',
    b"\xff\xfe not utf-8",
]
QUERIES = [
    "?limit=1e19",
    "?limit=1e300",
    "?limit=-1",
    "?after=1e30",
    "?after=nan",
    "?timeout=inf",
    "?changed_after=99999999999999999999999",
    "?state=%00",
    "?with_context=maybe",
    "?a=x&b=%ff",
]


async def test_no_input_gets_a_500(
    daemon: Any, jp_serverapp: Any, jp_base_url: str, http_server_client: Any, script: Any
) -> None:
    real = await daemon.create_session("a real one", model=script([{"code": "answer(1)"}]))
    await daemon.wait(real["id"], 60)
    # A kernel's capability, for the kernel routes (standing for a notebook session).
    token = daemon.tokens.mint("fuzz-kernel", notebook=True)
    base = jp_base_url.rstrip("/")
    headers = {"Authorization": f"token {jp_serverapp.identity_provider.token}"}
    tried = 0
    for method, path, kernel in routes(jp_serverapp):
        path = re.sub(r"/s1(?=/|$)|/x1(?=/|$)", f"/{real['id']}", path)
        auth = {"X-Prime-Token": token} if kernel else headers
        # Long polls (wait, recv) would hold a request for minutes by default: keep them short.
        attempts: list[tuple[str, str | bytes | None]] = [
            (path + q + "&timeout=0.2", None) for q in QUERIES
        ]
        if method in ("POST", "PUT", "PATCH"):
            attempts += [(path, body) for body in BODIES]
        for url, body in attempts:
            tried += 1
            try:
                resp = await http_server_client.fetch(
                    base + url,
                    method=method,
                    body=body if body is not None else ("{}" if method != "GET" else None),
                    headers={**auth, "Content-Type": "application/json"},
                    allow_nonstandard_methods=True,
                    request_timeout=120,
                )
                assert resp.code < 500
            except HTTPClientError as e:
                assert e.response is not None, (method, url, (body or b"")[:80], e)
                assert e.code < 500, (method, url, (body or b"")[:80], e.code, e.response.body)
                reply = json.loads(e.response.body)
                assert reply.get("message"), (method, url, reply)
    assert tried > 300
    # The daemon still works.
    again = await daemon.create_session("after", model=script([{"code": "answer(2)"}]))
    assert (await daemon.wait(again["id"], 60))["state"] == "DONE"


async def test_a_huge_body_is_refused(daemon: Any, jp_fetch: Any) -> None:
    big = json.dumps({"prompt": "x" * 300_000})
    try:
        await jp_fetch("api", "prime", "sessions", method="POST", body=big)
    except HTTPClientError as e:
        assert e.code == 413 and "at most" in json.loads(e.response.body)["message"]
    else:
        raise AssertionError("a 300k-character prompt was accepted")
