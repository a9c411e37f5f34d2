"""Bad input to every route gets a 4xx with a JSON message, never a 500: malformed and deeply
nested JSON, huge numbers, NaN, lone surrogates, NUL characters, wrong types, huge bodies,
query strings out of range, values no enum has, path components longer than a file name may
be — while a folder under the root is swapped for a link to outside it, again and again. The
routes are read from the running extension, so a route added later is covered without editing
this test; afterwards the daemon still works and nothing was written outside the root."""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tornado.httpclient import HTTPClientError

from prime_kernel.protocol.requests import SessionRequest

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
    # A path component longer than a file name may be, and a path longer than any may be.
    json.dumps({"prompt": "x", "path": "a" * 300 + "/x.ipynb", "force": True}),
    json.dumps({"path": "d/" * 3000 + "x.ipynb", "subtree": True}),
    # Through the folder the race below keeps swapping for a link to outside the root.
    json.dumps({"path": "race/x.ipynb", "force": True}),
    json.dumps({"path": "race/tree", "subtree": True, "force": True}),
    json.dumps({"path": "race", "state": {"schema": 1, "entries": {}}}),
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
    "?state=BOGUS",
    "?state=active",
    "?kind=BOGUS",
    "?what=BOGUS",
    "?path=" + "a" * 300,
]


@contextmanager
def swapping(root: Path, outside: Path) -> Iterator[None]:
    """`root/race`, a folder, and `root/racelink`, a link to `outside`, swapped in one step
    (renameat2 RENAME_EXCHANGE) as fast as a thread can, for as long as the block runs."""
    (root / "race").mkdir()
    (root / "racelink").symlink_to(outside)
    renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            renameat2(-100, bytes(root / "race"), -100, bytes(root / "racelink"), 2)

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


async def test_no_input_gets_a_500(
    daemon: Any,
    jp_serverapp: Any,
    jp_base_url: str,
    http_server_client: Any,
    script: Any,
    jp_root_dir: Path,
    tmp_path: Path,
) -> None:
    real = await daemon.admission.create_session(
        SessionRequest("a real one", model=script([{"code": "answer(1)"}]))
    )
    await daemon.runs.wait(real["id"], 60)
    # A kernel's capability, for the kernel routes (standing for a notebook session).
    token = daemon.tokens.mint("fuzz-kernel", notebook=True)
    base = jp_base_url.rstrip("/")
    headers = {"Authorization": f"token {jp_serverapp.identity_provider.token}"}
    outside = tmp_path / "outside"
    outside.mkdir()
    with swapping(jp_root_dir, outside):
        tried = await _fuzz(jp_serverapp, base, headers, token, real, http_server_client)
    assert tried > 300
    assert os.listdir(outside) == []  # nothing written through the swapped link
    # The daemon still works.
    again = await daemon.admission.create_session(
        SessionRequest("after", model=script([{"code": "answer(2)"}]))
    )
    assert (await daemon.runs.wait(again["id"], 60))["state"] == "DONE"


async def _fuzz(
    jp_serverapp: Any,
    base: str,
    headers: dict[str, str],
    token: str,
    real: dict[str, Any],
    http_server_client: Any,
) -> int:
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
    return tried


async def test_a_huge_body_is_refused(daemon: Any, jp_fetch: Any) -> None:
    big = json.dumps({"prompt": "x" * 300_000})
    try:
        await jp_fetch("api", "prime", "sessions", method="POST", body=big)
    except HTTPClientError as e:
        assert e.code == 413 and "at most" in json.loads(e.response.body)["message"]
    else:
        raise AssertionError("a 300k-character prompt was accepted")
