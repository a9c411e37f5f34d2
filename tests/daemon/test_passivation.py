"""Passivation (daemon/passivation.py) over fakes: a kernel runner that answers the snapshot
cells as the kernel's snapshot module would, a store of events (tests/daemon/conftest.py). What a
snapshot holds, and a real kernel's REPL coming back, is tested end to end
(tests/server/test_passivation.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from prime_kernel.daemon.kernels import CellResult
from prime_kernel.daemon.passivation import Passivation
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.daemon.snapshots import Snapshots
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import (
    FakeEvents,
    SnapshotKernel,
    SnapshotStore,
    agent_record,
    shared,
)

SAVED = {"blob_id": "b1", "saved": ["x", "df"], "skipped": {"sock": "a socket"}}


class World:
    def __init__(self, idle_timeout: float = 1800.0) -> None:
        self.registry = SessionRegistry()
        self.events = FakeEvents()
        self.snapshots = Snapshots(SnapshotStore(self.events), self.events, lambda: 30.0)  # type: ignore[arg-type]
        self.released: list[str] = []
        self.gone = asyncio.Event()
        self.tasks: list[asyncio.Task[Any]] = []
        parts = shared(self.registry, events=self.events, spawn=self.spawn)
        self.lifecycle = parts.lifecycle
        self.passivation = Passivation(
            parts,
            self.snapshots,
            self.release,
            idle_timeout=idle_timeout,
        )
        self.lifecycle.on(SessionState.IDLE, self.passivation.entered_idle)

    async def release(self, live: LiveSession) -> None:
        self.released.append(live.id)
        live.runner = None
        self.gone.set()

    def spawn(self, work: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        self.tasks.append(asyncio.ensure_future(work))
        return self.tasks[-1]

    def live(self, runner: SnapshotKernel) -> LiveSession:
        record = self.registry.add(
            agent_record("s1", state=SessionState.IDLE, kernel_id="k1"), lambda s, f: None
        )
        live = LiveSession(record, runner=runner)  # type: ignore[arg-type]
        self.registry.live[record.id] = live
        return live


def test_an_idle_session_is_saved_then_its_kernel_goes() -> None:
    async def main() -> None:
        w = World()
        live = w.live(SnapshotKernel(SAVED))
        assert await w.passivation.passivate(live, "idle for 5 s")
        assert w.released == ["s1"] and live.record.kernel_id is None
        assert live.state == SessionState.INACTIVE
        (change,) = [e for e in w.events.of("state") if e["state"] == "INACTIVE"]
        assert change["reason"] == "idle for 5 s; REPL saved (2 names; not saved: sock)"
        assert w.events.of("snapshot") == [{**SAVED, "reason": "passivation"}]

    asyncio.run(main())


def test_the_kernel_stays_when_no_snapshot_was_taken_or_the_session_woke() -> None:
    async def main() -> None:
        w = World()
        live = w.live(SnapshotKernel(None))
        assert not await w.passivation.passivate(live, "idle")
        assert w.released == [] and live.state == SessionState.IDLE
        (error,) = w.events.of("error")
        assert error["message"].startswith("could not snapshot the REPL: OSError: disk full")
        # A message woke it while the snapshot was taken: the kernel it runs on stays.
        runner = SnapshotKernel(SAVED)
        live.runner = runner  # type: ignore[assignment]
        woke = runner.execute

        async def execute(code: str, **kwargs: Any) -> CellResult:
            w.lifecycle.change(live.record, SessionState.RUNNING)
            return await woke(code, **kwargs)

        runner.execute = execute  # type: ignore[method-assign]
        assert not await w.passivation.passivate(live, "idle")
        assert w.released == [] and live.state == SessionState.RUNNING

    asyncio.run(main())


def test_the_idle_timer_passivates_and_a_use_starts_it_again() -> None:
    async def main() -> None:
        w = World(idle_timeout=0.05)
        live = w.live(SnapshotKernel(SAVED))
        w.passivation.entered_idle(live.record, live, None)
        first = w.tasks[-1]
        w.passivation.touch(live.record, live)  # a person's cell: the idle time starts again
        assert len(w.tasks) == 2
        await asyncio.wait_for(w.gone.wait(), 10)
        assert first.cancelled() and live.state == SessionState.INACTIVE
        (change,) = [e for e in w.events.of("state") if e["state"] == "INACTIVE"]
        assert change["reason"].startswith("idle for 0.05 s; REPL saved")

    asyncio.run(main())
