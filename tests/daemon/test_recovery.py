"""Recovery over fakes (no server, no kernel, no store on disk): what a new daemon takes back
from the records an earlier one left, as a plan the daemon acts on, and what a clean stop
leaves behind."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from prime_kernel.daemon.recovery import NOTEBOOK_ENDED, RESTARTED, Recovery, unattended
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.protocol.states import TERMINAL, SessionKind, SessionState
from tests.daemon.conftest import agent_record, shared


class FakeEvents:
    def __init__(self) -> None:
        self.told: list[tuple[str, str, dict[str, Any]]] = []

    def emit(self, record: Any, kind: Any, data: dict[str, Any]) -> dict[str, Any]:
        self.told.append((record.id, kind.value, data))
        return data


class FakeStore:
    """A stopped session's conversation: its last turn ran a cell that never reported."""

    async def conversation(self, session_id: str) -> list[dict[str, Any]]:
        call = {"id": "c1", "function": {"name": "python", "arguments": '{"code": "x = 1"}'}}
        return [{"role": "user", "content": "task"}, {"role": "assistant", "tool_calls": [call]}]

    async def last_event(self, session_id: str, kind: str) -> dict[str, Any] | None:
        return {"data": {"names": ["x"]}}

    def append_conversation(self, session_id: str, messages: list[Any]) -> list[Any]:
        return messages

    def replace_conversation(self, session_id: str, messages: list[Any]) -> list[Any]:
        return messages


class FakeSnapshots:
    def __init__(self) -> None:
        self.saved: list[str] = []

    async def save(self, live: LiveSession, reason: str) -> None:
        self.saved.append(live.id)


class World:
    def __init__(self, **config: Any) -> None:
        self.store = FakeStore()
        self.registry = SessionRegistry(self.store)
        self.events = FakeEvents()
        self.snapshots = FakeSnapshots()
        self.released: list[str] = []
        self.revoked: list[str] = []
        parts = shared(self.registry, store=self.store, events=self.events)
        self.lifecycle = parts.lifecycle
        self.recovery = Recovery(
            parts,
            snapshots=self.snapshots,  # type: ignore[arg-type]
            release=self.release,
            revoke=self.revoked.append,
            **config,
        )

    async def release(self, live: LiveSession) -> None:
        self.released.append(live.id)
        live.runner = None

    def left(self, sid: str, state: SessionState, **fields: Any) -> None:
        """A record an earlier daemon left in `state`."""
        record = agent_record(sid, state=state, **fields)
        self.registry.add(record, lambda sid, fields: None)


def left_behind(**config: Any) -> World:
    w = World(**config)
    w.left("queued", SessionState.ADMITTED)
    w.left("running", SessionState.RUNNING, kernel_id="k-old")
    w.left("idle", SessionState.IDLE)
    w.left("inactive", SessionState.INACTIVE)
    w.left("done", SessionState.DONE)
    w.left("notebook", SessionState.IDLE, kind=SessionKind.NOTEBOOK)
    w.recovery.adopt()
    return w


def test_what_was_left_is_taken_back_as_a_plan_the_daemon_acts_on() -> None:
    w = left_behind()
    state = {r.id: r.state for r in w.registry}
    assert state["notebook"] == SessionState.DONE  # its kernel went with the old server
    assert state["idle"] == SessionState.INACTIVE  # no kernel any more
    assert "done" not in w.registry.live and "notebook" not in w.registry.live
    assert w.registry.get("running").kernel_id is None
    plan = w.recovery.resume()
    assert [lv.id for lv in plan.run] == ["queued", "running"]
    assert sorted(lv.id for lv in plan.resting) == ["idle", "inactive"]
    resumed = [(sid, d["reason"]) for sid, kind, d in w.events.told if kind == "resume"]
    assert resumed == [("queued", "queued again after a restart")]
    assert w.recovery.resume().run == []  # taken once


def test_without_auto_resume_what_was_at_work_waits_inactive() -> None:
    w = left_behind(auto_resume=False)
    plan = w.recovery.resume()
    assert plan.run == [] and plan.resting == []
    assert w.registry.get("queued").state == SessionState.INACTIVE
    assert w.registry.get("running").state == SessionState.INACTIVE


def test_a_session_cut_short_is_told_what_was_in_flight_before_its_next_run() -> None:
    w = left_behind()
    live = w.registry.live["running"]
    asyncio.run(w.recovery.prepare(live))
    assert live.repl_names == ["x"]
    last = live.conversation[-1]
    assert last["role"] == "tool" and "NOT re-run" in last["content"]
    [(sid, _, data)] = [e for e in w.events.told if e[1] == "resume"]
    assert sid == "running" and data["in_flight"] == "x = 1" and data["reason"] == RESTARTED
    told = len(w.events.told)
    asyncio.run(w.recovery.prepare(live))  # once only
    assert len(w.events.told) == told


@pytest.mark.parametrize("with_kernel", [True, False])
def test_a_clean_stop_saves_and_releases_and_ends_the_notebooks(with_kernel: bool) -> None:
    async def main() -> None:
        w = World()
        w.left("agent", SessionState.IDLE)
        w.left("notebook", SessionState.IDLE, kind=SessionKind.NOTEBOOK, kernel_id="kn")
        live = w.registry.attach(w.registry.get("agent"))
        if with_kernel:
            live.runner = object()  # type: ignore[assignment]
        await w.recovery.suspend_all()
        assert w.snapshots.saved == w.released == (["agent"] if with_kernel else [])
        assert w.registry.get("agent").state == SessionState.IDLE  # resumable as it was
        notebook = w.registry.get("notebook")
        assert notebook.state == SessionState.DONE and w.revoked == ["kn"]
        assert [d.get("reason") for s, k, d in w.events.told if s == "notebook"] == [NOTEBOOK_ENDED]

    asyncio.run(main())


# -- what a session is while no daemon runs (`unattended`: what the CLI shows of a stopped root)
UNFINISHED = [SessionState.ADMITTED, SessionState.RUNNING, SessionState.IDLE]


@pytest.mark.parametrize("state", UNFINISHED)
def test_an_unfinished_agent_waits_inactive_for_a_daemon(state: SessionState) -> None:
    found = unattended(agent_record("s1", state=state))
    assert found is not None
    now, why = found
    assert now == SessionState.INACTIVE
    assert "`prime-agent resume s1`" in why and "no server runs it" in why


@pytest.mark.parametrize("state", UNFINISHED)
def test_a_notebooks_session_ended_with_its_kernel(state: SessionState) -> None:
    record = agent_record("nb", state=state, kind=SessionKind.NOTEBOOK)
    assert unattended(record) == (SessionState.DONE, NOTEBOOK_ENDED)


@pytest.mark.parametrize("state", [*sorted(TERMINAL), SessionState.INACTIVE])
@pytest.mark.parametrize("kind", list(SessionKind))
def test_an_ended_or_resting_session_is_as_recorded(state: SessionState, kind: SessionKind) -> None:
    assert unattended(agent_record("s1", state=state, kind=kind)) is None
