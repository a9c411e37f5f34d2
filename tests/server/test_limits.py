"""Count and size limits of the daemon, on a real server: children per session
(`c.Admission.max_children`), sessions per rlm.map() call (`max_batch`) and name length
(`max_name_chars`). Each is a clear error where the call was made, and a refused batch admits
nothing — no record, no event, no kernel."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.conftest import RAW_REQUEST, agent_records


@pytest.fixture
def prime_config() -> dict[str, Any]:
    return {
        "pool_size": 0,
        "max_concurrent": 4,
        "cell_timeout": 60.0,
        "keep_root_kernel": 0.0,
        "default_model": "scripted/echo",
        "max_children": 4,
        "max_batch": 3,
        "max_name_chars": 20,
    }


async def error_of(nb: Any, code: str) -> str:
    result = await nb.run(code)
    errors = [o for o in result.outputs if o["output_type"] == "error"]
    assert errors, f"no error from {code!r}: {result.outputs}"
    return f"{errors[0]['ename']}: {errors[0]['evalue']}"


def children_of(daemon: Any, nb_session: str) -> list[Any]:
    return [r for r in agent_records(daemon) if r.parent_id == nb_session]


async def test_batch_and_children_limits(daemon, user_kernel, script):
    model = script([{"code": "answer(1)"}])
    nb = await user_kernel()
    err = await error_of(nb, f"rlm.map('x', contexts=[1, 2, 3, 4], model={model!r})")
    assert "LimitExceeded" in err
    assert "asked for 4 children; one call may start at most 3 (c.Admission.max_batch)" in err
    assert agent_records(daemon) == []  # nothing admitted

    await nb.run(f"hs = rlm.map('x', contexts=[1, 2, 3], model={model!r})\nrlm.gather(*hs)")
    assert len(agent_records(daemon)) == 3
    nb_session = agent_records(daemon)[0].parent_id
    # Two more would make five: the whole batch is refused, not the first of it admitted.
    err = await error_of(nb, f"rlm.map('x', contexts=[1, 2], model={model!r})")
    assert "LimitExceeded" in err
    assert f"session {nb_session} has 3 children and asked for 2 more" in err
    assert "at most 4 (c.Admission.max_children)" in err
    assert len(children_of(daemon, nb_session)) == 3
    assert await nb.value(f"rlm('x', model={model!r}).result(timeout=60)") == "1"
    err = await error_of(nb, f"rlm('x', model={model!r})")
    assert "has 4 children and asked for 1 more" in err
    assert len(children_of(daemon, nb_session)) == 4


async def test_name_limit_everywhere(daemon, user_kernel, script, jp_fetch):
    model = script([{"code": "answer(1)"}])
    nb = await user_kernel()
    long = "n" * 21
    message = "the name has 21 characters; a session name may have at most 20"
    err = await error_of(nb, f"rlm('x', name={long!r}, model={model!r})")
    assert err.startswith("TooLarge") and message in err and "c.Admission.max_name_chars" in err
    # A batch whose last request has a long name admits none of the others.
    forged = RAW_REQUEST + (
        "status, body = raw_request('POST', 'sessions/batch', {'sessions': ["
        f"{{'prompt': 'a', 'model': {model!r}}}, {{'prompt': 'b', 'model': {model!r}}}, "
        f"{{'prompt': 'c', 'model': {model!r}, 'name': {long!r}}}]}})\n"
        "print(status, body['error'], body['message'])"
    )
    out = await nb.value(forged)
    assert out.startswith("413 too_large") and message in out
    assert agent_records(daemon) == []
    # People are held to the same limit.
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch(
            "api",
            "prime",
            "sessions",
            method="POST",
            body=json.dumps({"prompt": "x", "name": long, "model": model}),
        )
    assert refused.value.code == 413
    assert message in json.loads(refused.value.response.body)["message"]
    assert agent_records(daemon) == []
    # A name made from the prompt (one 300-character word here) is cut to the limit.
    await nb.run(f"h = rlm({'w' * 300!r}, model={model!r})\nh.result(timeout=60)")
    (record,) = agent_records(daemon)
    assert len(record.name) <= 20 and record.name.startswith("wwww")
    listed = json.loads((await jp_fetch("api", "prime", "sessions")).body)["sessions"]
    assert all(len(s["name"]) <= 21 for s in listed)
