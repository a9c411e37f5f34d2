"""Cancellation: a whole subtree stops, running cells are interrupted, records are kept."""

from __future__ import annotations

import asyncio
import json

from prime_kernel.cli.main import main as cli_main
from tests.conftest import cell_runs, events, wait_for


async def test_cancel_cascades_to_grandchildren(daemon, user_kernel, script, jp_fetch, capsys):
    grand = script([{"code": "import time\ntime.sleep(300)"}])
    child = script([{"code": f"g = rlm('grandchild', model={grand!r})\ng.result()"}])
    nb = await user_kernel()
    cid = (await nb.value(f"h = rlm('child', model={child!r}); h.session_id")).strip("'")

    async def grandchild_in_cell() -> bool:
        below = daemon.registry.descendants(cid)
        return bool(below) and bool(await events(daemon, below[0].id, "assistant"))

    await wait_for(grandchild_in_cell)
    gid = daemon.registry.descendants(cid)[0].id
    await cell_runs(daemon, gid)  # the sleep is running in the grandchild's kernel now
    out = await nb.value("print(sorted(h.cancel()['cancelled']))")
    assert out.strip() == str(sorted([cid, gid]))
    raised = await nb.value(
        "try:\n    h.result()\nexcept Cancelled as e:\n    print('Cancelled:', e)"
    )
    assert raised.strip() == f"Cancelled: session {cid} was cancelled"
    for sid in (cid, gid):
        record = daemon.listing.session_json(sid)
        assert record["state"] == "CANCELLED"
        cells = await events(daemon, sid, "cell")
        assert [c["data"]["status"] for c in cells] == ["cancelled"]  # interrupted mid-cell
        kinds = {e["kind"] for e in await daemon.listing.events(sid)}
        assert {"task", "assistant", "model_call", "cell"} <= kinds  # the record is kept
    # Cancelling again: a no-op that says so (REST and CLI).
    resp = await jp_fetch("api", "prime", "sessions", cid, method="DELETE")
    assert json.loads(resp.body) == {"cancelled": [], "already_ended": True, "state": "CANCELLED"}
    assert await asyncio.to_thread(cli_main, ["--root", daemon.root_dir, "cancel", gid]) == 0
    assert "already ended (CANCELLED); nothing to cancel" in capsys.readouterr().out
