"""Spilling big REPL values: the automatic spill at a compaction or before passivation (over a
fake silent cell), what the model is told of it, and that a spilled value is read back only by
the session that spilled it (a real SQLite store)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.daemon.kernels import CellResult
from prime_kernel.daemon.session import LiveSession
from prime_kernel.daemon.spills import MARKER, MiB, Spills
from prime_kernel.daemon.store.sqlite import SqliteStore
from prime_kernel.protocol.errors import NotFound
from prime_kernel.protocol.states import SessionKind
from tests.daemon.conftest import FakeEvents, agent_record, shared

BIG = {"name": "frame", "size": 32 * MiB, "type": "DataFrame", "blob_id": "b1"}


class SilentCells:
    """The daemon's silent cells (`run_silent`): each prints `report` after the marker."""

    def __init__(self, report: dict[str, Any] | None, status: str = "ok") -> None:
        self.report, self.status = report, status
        self.codes: list[str] = []

    async def __call__(self, live: LiveSession, code: str) -> CellResult:
        self.codes.append(code)
        text = "" if self.report is None else f"{MARKER}{json.dumps(self.report)}\n"
        outputs = [{"output_type": "stream", "name": "stdout", "text": text}]
        return CellResult(code, outputs, self.status)


def make_spills(cells: SilentCells, events: FakeEvents, store: Any = None, **config: Any):
    return Spills(shared(store=store, events=events), run_silent=cells, **config)


def live_agent(kind: SessionKind = SessionKind.AGENT) -> LiveSession:
    # Any runner: the spills only ask whether the session has a kernel.
    return LiveSession(agent_record("s1", kind=kind), runner=object())  # type: ignore[arg-type]


def test_big_variables_are_spilled_and_the_model_is_told() -> None:
    cells, events = (
        SilentCells({"spilled": [BIG], "failed": {"sock": "not picklable"}}),
        FakeEvents(),
    )
    live = live_agent()
    spilled = asyncio.run(make_spills(cells, events).auto_spill(live, "compaction"))
    assert spilled == [BIG]
    assert f"auto_spill({16 * MiB})" in cells.codes[0]
    assert events.of("gc") == [
        {
            "reason": "compaction",
            "dropped": [],
            "spilled": [BIG],
            "failed": {"sock": "not picklable"},
        }
    ]
    [note] = live.notes
    assert "To save memory (compaction), variables of 16.0 MiB or more" in note
    assert "frame (32.0 MiB, DataFrame)" in note
    assert "could not be spilled: sock: not picklable" in note


def test_a_notebook_session_is_spilled_without_a_note_for_a_model() -> None:
    cells, events = SilentCells({"spilled": [BIG]}), FakeEvents()
    live = live_agent(SessionKind.NOTEBOOK)
    assert asyncio.run(make_spills(cells, events).auto_spill(live, "passivation")) == [BIG]
    assert [e["reason"] for e in events.of("gc")] == ["passivation"]
    assert live.notes == []


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"spill_threshold": 0}, "compaction"),
        ({"spill_at_compaction": False}, "compaction"),
        ({"spill_at_passivation": False}, "passivation"),
    ],
)
def test_a_spill_switched_off_runs_no_cell(config: dict[str, Any], reason: str) -> None:
    cells, events = SilentCells({"spilled": [BIG]}), FakeEvents()
    assert asyncio.run(make_spills(cells, events, **config).auto_spill(live_agent(), reason)) == []
    assert cells.codes == [] and events.emitted == []


def test_without_a_kernel_nothing_runs() -> None:
    cells, events = SilentCells({"spilled": [BIG]}), FakeEvents()
    live = LiveSession(agent_record("s1"))
    assert asyncio.run(make_spills(cells, events).auto_spill(live, "compaction")) == []
    assert cells.codes == []


@pytest.mark.parametrize(
    "cells",
    [SilentCells({"spilled": [], "failed": {}}), SilentCells(None), SilentCells({}, "error")],
)
def test_nothing_spilled_or_a_failed_cell_says_nothing(cells: SilentCells) -> None:
    events, live = FakeEvents(), live_agent()
    assert asyncio.run(make_spills(cells, events).auto_spill(live, "compaction")) == []
    assert events.emitted == [] and live.notes == []


def test_gc_in_a_repl_is_recorded_as_a_gc_event() -> None:
    events = FakeEvents()
    done = make_spills(SilentCells(None), events).requested(
        live_agent(), {"dropped": ["a"], "spilled": [BIG]}
    )
    assert done == {"recorded": True}
    assert events.of("gc") == [{"reason": "requested", "dropped": ["a"], "spilled": [BIG]}]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "store")
    store.open()
    yield store
    asyncio.run(store.close())


def test_a_spilled_value_is_read_back_only_by_the_session_that_spilled_it(
    store: SqliteStore,
) -> None:
    spills = make_spills(SilentCells(None), FakeEvents(), store)
    owner = live_agent()
    other = LiveSession(agent_record("s2"))

    async def run() -> None:
        blob_id = await store.put_blob(b"pickled frame")
        spills.record_spill(owner, blob_id, "frame", 13)
        await store.flush()
        assert await spills.spilled_bytes(owner, blob_id) == b"pickled frame"
        with pytest.raises(NotFound, match=f"no value {blob_id} spilled by session s2"):
            await spills.spilled_bytes(other, blob_id)
        unrecorded = await store.put_blob(b"someone else's")
        with pytest.raises(NotFound):
            await spills.spilled_bytes(owner, unrecorded)

    asyncio.run(run())
