"""The kernel side (daemon/kernel_side.py) built over fakes: each part reads its own settings,
a snapshot runs with custody's cell timeout and the spills' cap as they are when it runs, and
passivation spills, saves and gives the kernel back through custody. The parts themselves are
tested in test_custody.py, test_snapshots.py, test_spills.py, test_passivation.py and
test_recovery.py; a real kernel's REPL going and coming back in tests/server/test_passivation.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from traitlets.config import Config, Configurable, LoggingConfigurable

from prime_kernel.daemon.access import TokenRegistry
from prime_kernel.daemon.kernel_side import KERNEL_SIDE, KernelSide
from prime_kernel.daemon.kernels import CellResult
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.daemon.snapshots import MARKER as SNAPSHOT
from prime_kernel.daemon.spills import MARKER as SPILL
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import FakeEvents, SnapshotStore, agent_record, shared

SAVED = {"blob_id": "b1", "saved": ["x"], "skipped": {}}
SPILLED = {"spilled": [{"name": "big", "size": 3 << 20, "type": "bytes"}], "failed": {}}
SETTINGS = {
    "KernelCustody": {"cell_timeout": 7.0},
    "Spills": {"snapshot_cap": 5, "spill_threshold": 1 << 20},
    "Passivation": {"idle_timeout": 60.0},
    "Recovery": {"stop_snapshot_timeout": 3.0},
}


class Runner:
    """A kernel runner that answers the daemon's own cells as the kernel side would (a spill
    report, a snapshot report) and remembers how each was run."""

    kernel_id = "k1"
    busy = False

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.stopped = False

    async def execute(self, code: str, **kwargs: Any) -> CellResult:
        self.ran.append((code, kwargs))
        text = (
            (SPILL + json.dumps(SPILLED)) if "auto_spill" in code else SNAPSHOT + json.dumps(SAVED)
        )
        return CellResult(code, [{"output_type": "stream", "name": "stdout", "text": text + "\n"}])

    async def stop(self) -> None:
        self.stopped = True


class Store(SnapshotStore):
    def __init__(self, events: FakeEvents) -> None:
        super().__init__(events)
        self.forgotten: list[str] = []

    def forget_kernel(self, kernel_id: str) -> None:
        self.forgotten.append(kernel_id)


def build() -> tuple[KernelSide, LiveSession, Store, FakeEvents]:
    events = FakeEvents()
    store = Store(events)
    registry = SessionRegistry()
    parent = LoggingConfigurable(config=Config(SETTINGS))
    common = dataclasses.replace(shared(registry, store=store, events=events), parent=parent)
    side = KernelSide.build(common, tokens=TokenRegistry(), on_user_cell=lambda live, cell: None)
    record = registry.add(
        agent_record("s1", state=SessionState.IDLE, kernel_id="k1"), lambda s, f: None
    )
    live = LiveSession(record, runner=Runner())  # type: ignore[arg-type]
    registry.live[record.id] = live
    return side, live, store, events


def test_each_part_reads_its_own_settings_and_the_bundle_lists_the_configurable_ones() -> None:
    side, _, _, _ = build()
    assert side.custody.cell_timeout == 7.0 and side.spills.snapshot_cap == 5
    assert side.passivation.idle_timeout == 60.0 and side.recovery.stop_snapshot_timeout == 3.0
    parts = {type(v) for v in vars(side).values() if isinstance(v, Configurable)}
    assert parts == set(KERNEL_SIDE)


def test_a_snapshot_runs_with_the_cell_timeout_and_cap_as_they_are_when_it_runs() -> None:
    async def main() -> None:
        side, live, _, events = build()
        runner: Runner = live.runner  # type: ignore[assignment]
        assert await side.snapshots.save(live, "turn") == SAVED
        code, kwargs = runner.ran[-1]
        assert "save(5)" in code and kwargs["timeout"] == 7.0
        # Settings changed after the build are what the next snapshot reads.
        side.custody.cell_timeout, side.spills.snapshot_cap = 9.0, 0
        await side.snapshots.save(live, "turn")
        code, kwargs = runner.ran[-1]
        assert "save(0)" in code and kwargs["timeout"] == 9.0
        assert len(events.of("snapshot")) == 2

    asyncio.run(main())


def test_passivation_spills_then_saves_then_custody_gives_the_kernel_back() -> None:
    async def main() -> None:
        side, live, store, events = build()
        runner: Runner = live.runner  # type: ignore[assignment]
        assert await side.passivation.passivate(live, "idle for 60 s")
        spill, save = runner.ran
        assert "auto_spill(1048576)" in spill[0] and spill[1]["timeout"] == 7.0
        assert "save(5)" in save[0]
        assert events.of("gc")[0]["reason"] == "passivation"
        # Custody released it: the kernel stopped, its record forgotten, the session INACTIVE.
        assert runner.stopped and store.forgotten == ["k1"] and live.runner is None
        assert live.state == SessionState.INACTIVE and live.record.kernel_id is None

    asyncio.run(main())
