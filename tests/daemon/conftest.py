"""Records over an in-memory registry: budget and change-tracking rules need no store, kernels
or server."""

from __future__ import annotations

import json
import time
from collections.abc import Coroutine
from typing import Any

import pytest

from prime_kernel.daemon import usage as usage_mod
from prime_kernel.daemon.accounting import Accounting
from prime_kernel.daemon.kernels import CellResult
from prime_kernel.daemon.lifecycle import Lifecycle
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.shared import Shared, Spawn
from prime_kernel.daemon.snapshots import MARKER
from prime_kernel.protocol.events import EventKind
from prime_kernel.protocol.states import SessionKind, SessionState


def agent_record(sid: str, parent: str | None = None, **fields: Any) -> SessionRecord:
    """An agent's record, a root or a child of `parent`, RUNNING unless `fields` say otherwise."""
    return SessionRecord(
        **{
            "id": sid,
            "name": sid,
            "prompt": "p",
            "state": SessionState.RUNNING,
            "kind": SessionKind.AGENT,
            "parent_id": parent,
            "root_id": parent or sid,
            "depth": 0 if parent is None else 1,
            "created": time.time(),
            "usage": usage_mod.empty(),
            **fields,
        }
    )


class FakeEvents:
    """The daemon's event log (`EventLog.emit`) as a list: (session id, kind, data), in order."""

    def __init__(self) -> None:
        self.emitted: list[tuple[str, str, dict[str, Any]]] = []

    def emit(self, record: SessionRecord, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]:
        self.emitted.append((record.id, kind.value, data))
        return data

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The data of every event of `kind` ("cell", "state", ...)."""
        return [data for _, k, data in self.emitted if k == kind]


def _no_spawn(coro: Coroutine[Any, Any, Any], name: str) -> Any:
    coro.close()
    raise AssertionError(f"a task {name!r} was spawned, and this test gave no spawn")


def shared(
    registry: SessionRegistry | None = None,
    *,
    store: Any = None,
    events: Any = None,
    accounting: Accounting | None = None,
    spawn: Spawn = _no_spawn,
) -> Shared:
    """What the daemon's services share (`Shared`), over fakes: an in-memory registry,
    `FakeEvents`, accounting and a real lifecycle over them; the store as given (a test's own
    fake, or None for a service that reads none), and `spawn` as given (by default none: a
    service that spawns a task fails the test, saying so)."""
    registry = registry if registry is not None else SessionRegistry()
    events = events if events is not None else FakeEvents()
    accounting = accounting if accounting is not None else Accounting(registry)
    lifecycle = Lifecycle(registry, events, accounting)
    return Shared(registry, store, events, accounting, lifecycle, spawn)


def session(accounts: Accounting, sid: str, parent: str | None, **fields: Any) -> SessionRecord:
    record = agent_record(
        sid,
        parent,
        model="scripted/echo",
        started=fields.pop("started", time.time()),
        **fields,
    )
    return accounts.registry.add(record, lambda sid, fields: None)


def spend(record: SessionRecord, tokens: int, cost: float = 0.0, calls: int = 1) -> None:
    record.update(
        usage={**record.usage, "total_tokens": tokens, "cost": cost, "model_calls": calls}
    )


@pytest.fixture
def accounts() -> Accounting:
    """Budgets over an in-memory registry: the rules need no store, kernels or server."""
    return Accounting(SessionRegistry())


class SnapshotKernel:
    """A kernel runner that prints what kernel/snapshot.py would report, one report per cell
    (None: the cell fails)."""

    kernel_id = "k1"

    def __init__(self, *reports: dict[str, Any] | None) -> None:
        self.reports = list(reports)
        self.ran: list[str] = []

    async def execute(self, code: str, **kwargs: Any) -> CellResult:
        self.ran.append(code)
        report = self.reports.pop(0)
        if report is None:
            error = {"output_type": "error", "ename": "OSError", "evalue": "disk full"}
            return CellResult(code, [error], "error")
        text = MARKER + json.dumps(report) + "\n"
        return CellResult(code, [{"output_type": "stream", "name": "stdout", "text": text}])


class SnapshotStore:
    """A store whose events are the `FakeEvents` emitted: the latest snapshot event is the last
    one emitted."""

    def __init__(self, events: FakeEvents) -> None:
        self.events = events

    async def last_event(self, session_id: str, kind: str) -> dict[str, Any] | None:
        found = [
            {"data": data}
            for sid, k, data in self.events.emitted
            if sid == session_id and k == kind
        ]
        return found[-1] if found else None
