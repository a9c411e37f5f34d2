"""The warm pool under a fan-out: kernels started ahead for sessions waiting for a slot, none
left behind once they ran, and no REPL snapshot for a turn that ends its session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jupyter_events import EventLogger

from prime_kernel.server.kernel_manager import PrimeServerKernelManager
from prime_kernel.server.status import KERNEL_ACTIONS
from tests.conftest import events, start_session, until_opened, wait_for


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    # Every turn may be snapshotted (the default keeps snapshots to 5% of a session's time).
    return {
        **prime_config,
        "max_concurrent": 1,
        "pool_size": 0,
        "kernels_ahead": 2,
        "snapshot_overhead": 1e9,
    }


async def test_kernels_start_ahead_for_sessions_waiting_for_a_slot(daemon, script, jp_fetch):
    gate = Path(daemon.root_dir) / "first-may-answer"
    busy = script([{"code": until_opened(gate, "answer('first')")}])
    quick = script([{"code": "answer('next')"}])
    first = await start_session(jp_fetch, "hold the only slot", model=busy)
    await wait_for(lambda: daemon.registry.get(first).state.value == "RUNNING", timeout=120)
    assert daemon.custody.pool.ready == 0  # pool_size 0: nothing kept warm while nobody waits
    queued = [await start_session(jp_fetch, f"wait {i}", model=quick) for i in range(3)]
    # Three wait for the slot: two kernels (kernels_ahead) start for them meanwhile.
    await wait_for(lambda: daemon.custody.pool.ready == 2, timeout=120)
    assert daemon.registry.get(first).state.value == "RUNNING"
    gate.touch()
    for sid in [first, *queued]:
        await wait_for(lambda sid=sid: daemon.registry.get(sid).terminal, timeout=120)
        assert daemon.listing.session_json(sid)["state"] == "DONE"
    # Nobody waits any more: no kernel is left in the pool (its size is 0).
    await wait_for(
        lambda: daemon.custody.pool.ready == 0 and daemon.custody.pool.target == 0, timeout=60
    )


async def test_a_turn_that_ends_its_session_takes_no_snapshot(daemon, script, jp_fetch):
    steps = [{"code": "x = 41\nprint('set')"}, {"code": "answer(x + 1)"}]
    task = await start_session(jp_fetch, "task", model=script(steps))
    kept = await start_session(jp_fetch, "kept", model=script(steps), persistent=True)
    await wait_for(lambda: daemon.registry.get(task).terminal, timeout=120)
    await wait_for(lambda: daemon.registry.get(kept).state.value == "IDLE", timeout=120)
    # The first turn is snapshotted (a restart resumes from it); the answering turn of a task
    # session is not: its REPL is never resumed. A persistent session's is (it waits IDLE).
    task_snaps = [e["data"]["reason"] for e in await events(daemon, task, "snapshot")]
    kept_snaps = [e["data"]["reason"] for e in await events(daemon, kept, "snapshot")]
    assert task_snaps == ["turn"]
    assert kept_snaps == ["turn", "turn"]


async def test_the_server_registers_its_event_schemas_once(daemon, monkeypatch):
    km = daemon.kernel_manager
    actions: list[str] = []

    async def listen(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        actions.append(f"{data.get('action')} {data.get('kernel_id')}")

    km.parent.event_logger.add_listener(schema_id=KERNEL_ACTIONS, listener=listen)
    first = await km.start_kernel(kernel_name="prime-agent")
    calls: list[Any] = []
    register = EventLogger.register_event_schema

    def counted(self: EventLogger, schema: Any) -> None:
        calls.append(schema)
        register(self, schema)

    monkeypatch.setattr(EventLogger, "register_event_schema", counted)
    second = await km.start_kernel(kernel_name="prime-agent")
    try:
        manager = km.get_kernel(second)
        assert isinstance(manager, PrimeServerKernelManager)
        assert manager.event_logger is km.parent.event_logger
        assert calls == []  # jupyter_server's own manager parses and registers them each time
    finally:
        for kernel_id in (first, second):
            await km.shutdown_kernel(kernel_id, now=True)
    # Kernel actions still reach the server's listeners (the daemon hears of shutdowns so).
    await wait_for(lambda: f"shutdown {second}" in actions, timeout=30)
    assert f"start {second}" in actions
