"""Requests a kernel can forge (its code can do anything in its own process) get clear 4xx
errors, change nothing, and cannot reach past the limits the daemon enforces."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import RAW_REQUEST, agent_records, events


async def kernel_request(
    http_server_client: Any, base: str, token: str, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, Any]]:
    """A raw request to the kernel API, as agent code could send it."""
    try:
        resp = await http_server_client.fetch(
            f"{base.rstrip('/')}/api/prime/kernel/{path}",
            method=method,
            body=None if body is None else json.dumps(body),
            headers={"X-Prime-Token": token, "Content-Type": "application/json"},
        )
    except HTTPClientError as e:
        return e.code, json.loads(e.response.body)
    return resp.code, json.loads(resp.body or b"{}")


@pytest.fixture
def forged(daemon, user_kernel, jp_base_url, http_server_client, jp_asyncio_loop):
    """Send kernel-API requests with the token of a real kernel the server started."""

    async def token_of_a_kernel() -> str:
        nb = await user_kernel()
        code = "import prime_kernel.kernel.client as c; c.credentials()[1]"
        return (await nb.value(code)).strip("'")

    token = jp_asyncio_loop.run_until_complete(token_of_a_kernel())

    async def send(method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        return await kernel_request(http_server_client, jp_base_url, token, method, path, body)

    return send


async def test_forged_bodies_are_refused_and_change_nothing(daemon, forged, script):
    model = script([{"code": "answer(1)"}])

    def agents():
        # The notebook's own session appears on its first call; no agent session may.
        return agent_records(daemon)

    before = agents()
    cases = [
        ("POST", "sessions/batch", {"sessions": ["not an object"]}, 400, "must be an object"),
        (
            "POST",
            "sessions",
            {"prompt": "x", "model": model, "context_blob": "../x"},
            400,
            "not a valid value",
        ),
        (
            "POST",
            "sessions",
            {"prompt": "x", "model": model, "context_blob": "bmissing1"},
            400,
            "no uploaded context",
        ),
        ("POST", "sessions", {"prompt": "x" * 300_000, "model": model}, 413, "at most"),
        ("GET", "messages?timeout=nan", None, 400, "finite"),
    ]
    for method, path, body, status, text in cases:
        code, answer = await forged(method, path, body)
        assert code == status and text in answer["message"], (path, code, answer)
    assert agents() == before


@pytest.mark.parametrize("prime_config", [{"max_blob_bytes": 1_000_000}])
async def test_forged_answers_are_refused(daemon, user_kernel, script):
    # Inside an agent session: answer() requests it could forge: a JSON body (the value goes
    # pickled, as raw bytes), an empty one, and one over c.Admission.max_blob_bytes.
    forge = RAW_REQUEST + (
        "def post(body):\n    return raw_request('POST', 'answer', body)[0]\n"
        "codes = [post({'repr': 'x', 'blob_id': 'b1'}), post(b''), post(b'x' * 1_000_001)]\n"
    )
    model = script([{"code": forge}, {"code": "answer(codes)"}])
    nb = await user_kernel()
    sid = await nb.value(f"h = rlm('forge', model={model!r}); h.result(); h.session_id")
    assert await nb.value("h.result()") == "[400, 400, 413]"
    # Nothing of the refused ones was kept (the other blobs: the answer that went through, and
    # the REPL snapshot after the first turn).
    record = daemon.registry.get(sid.strip("'"))
    assert record.answer_repr == "[400, 400, 413]" and record.answer_blob
    sizes = [p.stat().st_size for p in daemon.store.blob_dir.iterdir()]
    assert len(sizes) == 2 and 0 not in sizes and 1_000_001 not in sizes


async def test_printed_tokens_never_reach_the_store_or_the_model(daemon, user_kernel, script):
    seen = []

    def look(messages):
        seen.append(json.dumps(messages))
        return {"code": "answer('ok')"}

    model = script(
        [{"code": "import prime_kernel.kernel.client as c\nprint(c.credentials()[1])"}, look]
    )
    nb = await user_kernel()
    sid = (await nb.value(f"h = rlm('leak', model={model!r}); h.result(); h.session_id")).strip("'")
    tokens = daemon.tokens.live_tokens()
    cell = (await events(daemon, sid, "cell"))[0]["data"]
    assert "[REDACTED]" in cell["outputs"][0]["text"]
    stored = json.dumps(await events(daemon, sid))
    assert not any(t in stored for t in tokens)
    assert "[REDACTED]" in seen[0] and not any(t in seen[0] for t in tokens)


@pytest.mark.parametrize(
    "prime_config",
    [{"pool_size": 1, "llm_batch_concurrency": 1, "default_model": "scripted/echo"}],
)
async def test_llm_batch_stops_at_the_budget(daemon, user_kernel, script):
    talk = script([{"text": "hi"}])
    model = script(
        [
            {
                "code": f"try:\n    llm.batch(['a'] * 10, model={talk!r})\n"
                "except Exception as e:\n    err = type(e).__name__"
            },
            {"code": "answer(err)"},
        ]
    )
    nb = await user_kernel()
    await nb.run(f"h = rlm('spend', model={model!r}, budget={{'turns': 4}})")
    result = await nb.run("h.wait(timeout=60)")
    assert not [o for o in result.outputs if o["output_type"] == "error"]
    sid = (await nb.value("h.session_id")).strip("'")
    # Its first turn, then llm() calls one at a time until the 4 turns are spent: never ten.
    record = daemon.listing.session_json(sid)
    assert record["usage"]["own"]["model_calls"] == 4
    assert record["state"] == "FAILED" and "budget" in record["error"]


async def test_refine_only_from_reachable_sessions(daemon, user_kernel, script):
    other = await daemon.admission.create_session(
        SessionRequest("someone else's", model=script([{"text": "secret"}]))
    )
    await daemon.runs.wait(other["id"], 60)
    model = script(
        [
            {
                "code": f"try:\n    refine(session_id={other['id']!r})\n"
                "except Exception as e:\n    err = f'{type(e).__name__}: {e}'"
            },
            {"code": "answer(err)"},
        ]
    )
    nb = await user_kernel()
    out = await nb.value(f"rlm('peek', model={model!r}).result()")
    assert "Forbidden" in out and "descendants" in out
