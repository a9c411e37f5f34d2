"""Snapshots (daemon/snapshots.py) over fakes: a kernel runner that answers the snapshot cells
as the kernel's snapshot module would, a store of events (tests/daemon/conftest.py). What a
snapshot holds, and a real kernel's REPL coming back, is tested end to end
(tests/server/test_passivation.py)."""

from __future__ import annotations

import asyncio

from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.daemon.snapshots import Snapshots
from prime_kernel.protocol.events import EventKind
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import FakeEvents, SnapshotKernel, SnapshotStore, agent_record

SAVED = {"blob_id": "b1", "saved": ["x", "df"], "skipped": {"sock": "a socket"}}


def _live(kernel: SnapshotKernel) -> LiveSession:
    record = SessionRegistry().add(
        agent_record("s1", state=SessionState.IDLE, kernel_id="k1"), lambda s, f: None
    )
    return LiveSession(record, runner=kernel)  # type: ignore[arg-type]


def test_a_save_is_a_snapshot_event_and_a_failure_an_error() -> None:
    async def main() -> None:
        events = FakeEvents()
        snapshots = Snapshots(SnapshotStore(events), events, lambda: 30.0, cap=lambda: 7)  # type: ignore[arg-type]
        kernel = SnapshotKernel(SAVED, None)
        live = _live(kernel)
        assert await snapshots.save(live, "turn") == SAVED
        assert "save(7)" in kernel.ran[0]  # the cap, as the kernel side reads it
        assert events.of("snapshot") == [{**SAVED, "reason": "turn"}]
        assert await snapshots.latest_blob("s1") == "b1"
        assert await snapshots.save(live, "turn") is None
        (error,) = events.of("error")
        assert error["message"].startswith("could not snapshot the REPL: OSError: disk full")

    asyncio.run(main())


def test_a_restore_says_what_came_back_and_what_was_lost() -> None:
    async def main() -> None:
        events = FakeEvents()
        snapshots = Snapshots(SnapshotStore(events), events, lambda: 30.0)  # type: ignore[arg-type]
        live = _live(SnapshotKernel())
        live.repl_names = ["x", "df", "late", "_hidden"]
        # No snapshot yet: the REPL starts empty, and the model is told what it lost.
        assert await snapshots.restore(live, "Your kernel died.") is None
        assert live.notes == [
            "[Your kernel died. Your REPL starts empty: there was no snapshot "
            "to restore (lost: x, df, late).]"
        ]
        live.notes.clear()
        events.emit(live.record, EventKind.SNAPSHOT, SAVED)
        restored = {"restored": ["x", "df"], "skipped": {"sock": "a socket"}, "failed": {}}
        live.runner = SnapshotKernel(restored)  # type: ignore[assignment]
        assert await snapshots.restore(live, "Your kernel died.") == restored
        assert live.notes == [
            "[Your kernel died. Restored REPL variables: x, df. Lost (defined after the last "
            "snapshot): late. Not saved: sock (a socket).]"
        ]
        assert events.of("restore")[-1]["lost"] == ["late"]

    asyncio.run(main())
