"""Budgets enforced by the daemon on a real fan-out: children's spend stops the tree."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from tests.conftest import fetch_error, get_session, start_session, wait_for

PARENT = """
out = []
try:
    rlm('too much', budget={{'tokens': 10**6}}, model={child!r})
except Exception as e:
    out.append(str(e))
hs = rlm.map([f'child {{i}}' for i in range(5)], model={child!r})
for h in hs:
    try:
        out.append(h.result(timeout=120))
    except BudgetExceeded as e:
        out.append('stopped: ' + e.error)
try:
    rlm('one more', model={child!r})
except BudgetExceeded as e:
    out.append('refused: ' + str(e))
answer(out)
"""


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    # One session at a time: children spend in order, so the stop point is exact.
    return {**prime_config, "max_concurrent": 1}


async def test_budget_stops_a_fan_out_midway(daemon, jp_fetch, script):
    child = script([{"code": "answer(1)", "usage": {"prompt_tokens": 100, "completion_tokens": 0}}])
    parent = script(
        [
            {
                "code": PARENT.format(child=child),
                "usage": {"prompt_tokens": 50, "completion_tokens": 0},
            }
        ]
    )
    sid = await start_session(jp_fetch, "fan out", model=parent, budget={"tokens": 300})
    await wait_for(lambda: daemon.registry.get(sid).terminal, timeout=240)
    record = await get_session(jp_fetch, sid)
    assert record["state"] == "DONE", record["error"]
    out = pickle.loads(await daemon.answers.answer_bytes(sid))
    assert "more than what remains of the parent's budget (250 tokens)" in out[0]
    # 50 (parent) + 3 x 100 (children) crosses 300: the 4th and 5th children are stopped.
    assert out[1:4] == [1, 1, 1]
    for line in out[4:6]:
        assert line.startswith("stopped: budget exceeded: 350 of 300 tokens spent")
    assert out[6].startswith("refused: cannot start a child: budget exceeded")
    assert record["usage"]["subtree"]["total_tokens"] == 350
    children = [daemon.listing.session_json(c) for c in record["children"]]
    assert [c["state"] for c in children] == ["DONE"] * 3 + ["FAILED"] * 2
    for c in children[3:]:
        assert c["budget"]["exceeded"]["session_id"] == sid
        assert c["usage"]["own"]["model_calls"] == 0  # stopped before its first model call


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({"tokens": -1}, "'budget.tokens' must be more than 0"),
        ({"dollars": "lots"}, "'budget.dollars' must be a number"),
        ({"minutes": 3}, "unknown field in 'budget'"),
    ],
)
async def test_bad_budgets_get_a_clear_error(daemon, jp_fetch, budget, message):
    code, body = await fetch_error(start_session(jp_fetch, "x", budget=budget))
    assert code == 400 and message in body["message"]
    assert daemon.listing.list_sessions()["sessions"] == []  # nothing was admitted
