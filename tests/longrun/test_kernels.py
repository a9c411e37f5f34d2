"""Sessions as garbage: ended roots keep their kernels for co-working only up to
`max_kept_kernels`, and an idle agent's kernel stays up while a person works in it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from jupyter_client.session import Session

from tests.conftest import events, start_session, wait_for


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    return {**prime_config, "max_kept_kernels": 4, "keep_root_kernel": 600.0, "idle_timeout": 3.0}


def _kept_roots(daemon: Any) -> list[str]:
    return [
        lv.id
        for lv in daemon.registry.live.values()
        if lv.runner is not None and lv.record.parent_id is None and lv.record.terminal
    ]


async def test_at_most_max_kept_kernels_of_finished_roots_stay(daemon, jp_fetch):
    ids = [await start_session(jp_fetch, f"say hi {i}") for i in range(20)]
    await wait_for(lambda: all(daemon.registry.get(s).terminal for s in ids), timeout=600)
    assert {daemon.registry.get(s).state.value for s in ids} == {"DONE"}
    await wait_for(lambda: len(_kept_roots(daemon)) <= 4, timeout=60)
    kept = _kept_roots(daemon)
    assert len(kept) == 4 and set(kept) <= set(ids[-8:])  # the most recently ended
    # Every other kernel is gone from the server: the kept four and the warm pool remain.
    assert daemon.kernel_manager is not None and daemon.custody.pool is not None
    await wait_for(lambda: len(daemon.kernel_manager.list_kernel_ids()) <= 4 + 1, timeout=60)


async def test_a_person_working_in_an_idle_agents_repl_keeps_it_up(daemon, jp_fetch, script):
    sid = await start_session(
        jp_fetch, "wait", model=script([{"code": "x = 1\nanswer(x)"}]), persistent=True
    )
    live = daemon.registry.live[sid]
    await wait_for(lambda: live.state.value == "IDLE", timeout=120)
    assert live.runner is not None
    # A console of a person: a client of their own (its own session id).
    km = daemon.kernel_manager.get_kernel(live.runner.kernel_id)
    console = km.client(session=Session(key=km.session.key))
    console.start_channels()
    try:
        await console.wait_for_ready(timeout=30)
        # Twice the idle timeout of a person's cells, one a second: it stays up.
        for _ in range(6):
            await console.execute_interactive("x += 1", timeout=30)
            assert live.state.value == "IDLE"
            await asyncio.sleep(1)  # a person's pace: cells over twice the idle timeout
    finally:
        console.stop_channels()
    await wait_for(lambda: live.state.value == "INACTIVE", timeout=60)
    cells = [e["data"] for e in await events(daemon, sid, "cell")]
    assert [c["source"] for c in cells] == ["agent"] + ["user"] * 6
