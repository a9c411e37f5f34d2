"""Uploads from kernels (answers, blobs, spilled values) are taken as they arrive, never joined
into one bytes on the event loop: a value of many chunks arrives whole, and a request refused
before its body is read still gets its error (not a connection reset mid-body)."""

from __future__ import annotations

import asyncio
import http.client
import json
import pickle
from typing import Any

import pytest

from prime_kernel.protocol.wire import TOKEN_HEADER

BIG = 8_000_000  # far more than one of tornado's 64 KiB chunks


def post(port: int, url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    """As the kernel's client posts (http.client: the whole body sent, then the reply read)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {TOKEN_HEADER: "forged", "Content-Type": "application/octet-stream"}
        conn.request("POST", url, body, headers)
        reply = conn.getresponse()
        return reply.status, json.loads(reply.read())
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["answer", "blobs?what=context", "spills?name=x"])
async def test_a_refused_upload_gets_its_error_after_its_body(
    daemon: Any, jp_http_port: int, jp_base_url: str, path: str
) -> None:
    url = f"{jp_base_url.rstrip('/')}/api/prime/kernel/{path}"
    status, error = await asyncio.to_thread(post, jp_http_port, url, b"x" * BIG)
    assert status == 401 and "token" in error["message"], error


async def test_a_large_answer_arrives_whole(daemon: Any, user_kernel: Any, script: Any) -> None:
    value = bytes(range(256)) * (BIG // 256)
    model = script([{"code": f"answer(bytes(range(256)) * {BIG // 256})"}])
    nb = await user_kernel()
    sid = (await nb.value(f"h = rlm('big', model={model!r}); h.result(); h.session_id")).strip("'")
    assert pickle.loads(await daemon.answers.answer_bytes(sid)) == value
