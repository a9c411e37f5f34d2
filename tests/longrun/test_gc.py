"""Garbage collection on a real server: gc() lists by size, spills a 50 MB array to disk and
reloads it on first use; automatic spills at a compaction and before passivation (and the
value comes back after the REPL is revived); bad names change nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import events, post_message, start_session, wait_for

MB = 1_000_000


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    jp_server_config.Spills.spill_threshold = 5 * MB
    jp_server_config.Host.compact_keep_recent = 1
    jp_server_config.Passivation.idle_timeout = 1.0
    return jp_server_config


async def _rows(nb: Any) -> list[dict[str, Any]]:
    return list(json.loads(await nb.value("import json\nprint(json.dumps(gc()))")))


async def test_gc_lists_and_spills_a_50_mb_array_that_reloads(daemon, user_kernel):
    nb = await user_kernel()
    await nb.value(
        "import numpy as np\narr = np.arange(6_250_000, dtype=np.float64)\n"
        "small = [1, 2, 3]\nalias_free = 'x' * 1000\n"
        "def total():\n    return float(arr.sum())\nexpected = total()"
    )
    rows = await _rows(nb)
    assert [r["name"] for r in rows][:2] == ["arr", "alias_free"]
    assert 50 * MB <= rows[0]["size"] < 51 * MB and rows[0]["type"] == "numpy.ndarray"
    assert "arr" in await nb.value("gc()")  # the table a person (or model) reads

    out = await nb.value("gc(spill=['arr']);")
    assert out.startswith("gc: spilled arr (50.0 MB) to disk: each reloads on first use")
    # The name is bound to a stand-in now; a cell that does not name it sees that.
    assert await nb.value("print(type(globals()['arr']).__name__)") == "Spilled\n"
    (row,) = [r for r in await _rows(nb) if r["name"] == "arr"]
    assert row["spilled"] and 50 * MB <= row["size"] < 51 * MB
    # A function reading the global: the stand-in loads the value and delegates to it.
    assert await nb.value("print(total() == expected)") == "True\n"
    assert await nb.value("print(type(globals()['arr']).__name__)") == "ndarray\n"

    # Spilled again, then named by a cell: reloaded before the cell runs, the real value.
    await nb.value("gc(spill=['arr']);")
    assert await nb.value("print(type(arr).__name__, arr.shape, arr[-1])") == (
        "ndarray (6250000,) 6249999.0\n"
    )
    gc_events = [e["data"] for e in await events(daemon, _session(daemon, nb), "gc")]
    assert [len(e["spilled"]) for e in gc_events] == [1, 1]
    assert all(e["reason"] == "requested" for e in gc_events)

    # Bad names: a clear error in the cell, and nothing changed.
    before = await _rows(nb)
    for call, expected in (
        ("gc(drop=['no_such_name'])", "NameError gc(drop=...): no variable 'no_such_name'"),
        ("gc(spill=['small', 'nope'])", "NameError gc(spill=...): no variable 'nope'"),
        ("gc(spill=['total'])", "TypeError gc(spill=...): 'total' is a function"),
        ("gc(drop=[1])", "TypeError gc(drop=...) takes variable names"),
    ):
        out = await nb.value(
            f"try:\n    {call}\nexcept Exception as e:\n    print(type(e).__name__, e)"
        )
        assert out.startswith(expected), (call, out)
    assert await _rows(nb) == before
    await nb.value("gc(drop=['arr', 'expected']);")
    assert "arr" not in [r["name"] for r in await _rows(nb)]
    assert await nb.value("import gc as std\nprint(gc.collect() >= 0, gc.isenabled())") == (
        "True True\n"
    )


def _session(daemon: Any, nb: Any) -> str:
    return str(daemon.tokens.session_for_kernel(nb.kernel_id))


async def test_big_values_are_spilled_at_compaction_and_passivation(daemon, jp_fetch, script):
    prompts: list[list[dict[str, Any]]] = []
    codes = [
        "big = b'x' * 8_000_000\nkeep = list(range(10))",
        "compact()",
        "answer(len(big))",
        "answer([len(big), keep[-1], type(big).__name__])",
    ]

    def play(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[0]["role"] != "system":  # the compaction's summary call
            return {"text": "big holds 8 MB of x."}
        prompts.append(messages)
        return {"code": codes[len(prompts) - 1]}

    sid = await start_session(jp_fetch, "hold data", model=script([play] * 5), persistent=True)
    live = daemon.registry.live[sid]
    await wait_for(lambda: live.state.value == "INACTIVE", timeout=240)
    # At the compaction: spilled, and the model told in the same turn.
    told = "\n".join(str(m["content"]) for m in prompts[2] if m["role"] == "user")
    assert "were spilled to disk: big (7.6 MiB, bytes)" in told
    spills = [e["data"] for e in await events(daemon, sid, "gc")]
    # Reloaded by the next turn's cell (it names `big`), then spilled again before
    # passivation: the snapshot keeps a reference, not 8 MB.
    assert [(s["reason"], [x["name"] for x in s["spilled"]]) for s in spills] == [
        ("compaction", ["big"]),
        ("passivation", ["big"]),
    ]
    snapshot = (await events(daemon, sid, "snapshot"))[-1]["data"]
    assert "big" in snapshot["saved"] and snapshot["size"] < MB
    await post_message(jp_fetch, sid, "again")
    await wait_for(lambda: live.record.answer_repr == "[8000000, 9, 'bytes']", timeout=240)
