"""The spine end to end: a notebook kernel calls rlm(), a child kernel runs, answers come back."""

from __future__ import annotations

import json

async def test_rlm_from_prime_kernel(daemon, user_kernel, script, jp_fetch):
    model = script(
        [
            {"code": "m = sum(context) / len(context)\nprint(m)"},
            {"code": "answer(m)"},
        ]
    )
    nb = await user_kernel()
    out = await nb.value(f"h = rlm('What is the mean of context?', context=[3, 5, 10], model={model!r}); h.status")
    assert out.strip("'") in {"ADMITTED", "RUNNING"}
    assert await nb.value("h.result(timeout=60)") == "6.0"
    assert await nb.value("h.status") == "'DONE'"
    sid = (await nb.value("h.session_id")).strip("'")
    resp = await jp_fetch("api", "prime", "sessions", sid)
    record = json.loads(resp.body)
    assert record["state"] == "DONE"
    assert record["usage"]["own"]["model_calls"] == 2
    assert record["usage"]["own"]["cells"] == 2
    assert record["context_type"] == "list"
