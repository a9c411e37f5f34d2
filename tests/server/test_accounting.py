"""Accounting: own and subtree usage, and the concurrency limit under a wide fan-out."""

from __future__ import annotations

import asyncio
import json
import pickle
from typing import Any

import pytest

from prime_kernel.cli.main import main as cli_main
from prime_kernel.daemon import usage as usage_mod
from tests.conftest import events, get_session, start_session, wait_for

PARENT = """
hs = rlm.map(['a', 'b'], model={child!r})
rs = rlm.gather(hs, timeout=120)
answer({{'rs': rs, 'usage': usage(), 'child_usage': [h.usage for h in hs]}})
"""


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    return {**prime_config, "max_concurrent": 3}


async def test_subtree_usage_is_the_sum_of_its_parts(
    daemon, jp_fetch, script, capsys, jp_serverapp
):
    child = script(
        [
            {"code": "x = 1", "usage": {"prompt_tokens": 30, "completion_tokens": 7}},
            {"code": "answer(x + 1)", "usage": {"prompt_tokens": 40, "completion_tokens": 3}},
        ]
    )
    parent = script(
        [
            {
                "code": PARENT.format(child=child),
                "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            }
        ]
    )
    sid = await start_session(jp_fetch, "count", model=parent)
    await wait_for(lambda: daemon.registry.get(sid).terminal, timeout=120)
    record = await get_session(jp_fetch, sid)
    assert record["state"] == "DONE", record["error"]
    parts = [record["usage"]["own"]]
    for cid in record["children"]:
        child_record = await get_session(jp_fetch, cid)
        parts.append(child_record["usage"]["own"])
        assert child_record["usage"]["own"]["total_tokens"] == 80
        assert child_record["usage"]["own"]["cells"] == 2
    subtree = record["usage"]["subtree"]
    for key in usage_mod.FIELDS:
        assert subtree[key] == pytest.approx(sum(p[key] for p in parts)), key
    assert subtree["total_tokens"] == 120 + 2 * 80
    assert subtree["model_calls"] == 5 and subtree["cells"] == 5
    assert subtree["cost"] == pytest.approx((100 + 140) * 1e-6 + (20 + 20) * 2e-6)
    # What the parent's REPL saw: usage() own and subtree, and each handle's usage.
    seen = pickle.loads(await daemon.answers.answer_bytes(sid))
    assert seen["rs"] == [2, 2]
    assert seen["usage"]["own"]["total_tokens"] == 120
    assert seen["usage"]["subtree"]["total_tokens"] == 280
    assert [u["own"]["total_tokens"] for u in seen["child_usage"]] == [80, 80]
    # `prime-agent show` prints both (asking the running server, which holds the store).
    jp_serverapp.write_server_info_file()
    assert await asyncio.to_thread(cli_main, ["--root", daemon.root_dir, "show", sid]) == 0
    shown = capsys.readouterr().out
    assert "own 120 tok" in shown and "subtree 280 tok" in shown


async def test_concurrency_limit_holds_with_50_children(daemon, user_kernel, script):
    quick = script([{"text": "done"}])  # answers on its first turn: kernel start is the cost
    nb = await user_kernel()
    fan_out = asyncio.ensure_future(
        nb.value(
            f"hs = rlm.map(['c'] * 50, model={quick!r})\n"
            "rs = rlm.gather(hs, timeout=900)\n"
            "print(len(rs), set(rs), [h.session_id for h in hs])",
            timeout=900,
        )
    )
    holders = queued = 0
    while not fan_out.done():  # the slots' own view, sampled while the fan-out runs
        holders = max(holders, daemon.slots.running)
        queued = max(queued, len(daemon.slots.queued))
        await asyncio.sleep(0.01)  # the sampling period, not a wait for a state
    out = fan_out.result()
    count, answers, ids = out.split(" ", 2)
    ids = json.loads(ids.replace("'", '"'))
    assert (count, answers) == ("50", "{'done'}")
    states = sorted(
        [e for sid in ids for e in await events(daemon, sid, "state")],
        key=lambda e: e["seq"],
    )
    running = peak = 0
    for e in states:
        state = e["data"]["state"]
        if state == "RUNNING":
            running += 1
        elif state in ("DONE", "FAILED", "CANCELLED"):
            running -= 1
        peak = max(peak, running)
    assert 1 <= peak <= 3  # never more RUNNING than max_concurrent
    assert holders == 3 and queued >= 40  # the limit was reached; the rest waited ADMITTED
    assert all(daemon.listing.session_json(s)["state"] == "DONE" for s in ids)
