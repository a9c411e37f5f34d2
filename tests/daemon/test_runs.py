"""Runs over fakes (a fake loop, a fake keeper of kernels; no server, no kernel, no model): a run
settles its session DONE, IDLE, FAILED, CANCELLED or INACTIVE as its loop ends; a woken session
runs again; cancel takes the subtree, children first; wait and resume answer for the record."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest

from prime_kernel.daemon.answers import Answers
from prime_kernel.daemon.kernel_side import KernelSide
from prime_kernel.daemon.loop import AgentLoop, TurnLimitReached
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.runs import Runs
from prime_kernel.daemon.session import LiveSession
from prime_kernel.daemon.slots import Slots
from prime_kernel.protocol.errors import Conflict, KernelsUnavailable, PrimeError
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import agent_record, shared


class FakeLoop(AgentLoop):
    """Does what the session's prompt says: answer, nothing, run out of turns, hang, or find
    no kernel."""

    def __init__(self, host: Any, live: LiveSession) -> None:
        self.world = host
        self.live = live

    async def run(self, max_turns: int | None = None) -> None:
        live, what = self.live, self.live.record.prompt
        live.turns += 1
        if what == "answer":
            self.world.answers.record(live, None, f"turn {live.turns}", "reply")
        elif what == "turns":
            raise TurnLimitReached("no answer after 1 turn")
        elif what == "hang":
            self.world.hanging[live.id].set()
            await asyncio.Event().wait()
        elif what == "no kernel":
            raise KernelsUnavailable("the kernel gateway is down")
        elif what == "crash":
            raise ValueError("a bug")


class FakeRunner:
    def __init__(self) -> None:
        self.interrupted = 0

    async def interrupt(self) -> None:
        self.interrupted += 1


class FakeCustody:
    def __init__(self) -> None:
        self.attached: list[str] = []

    async def attach(self, live: LiveSession) -> None:
        self.attached.append(live.id)
        live.runner = FakeRunner()  # type: ignore[assignment]

    async def release(self, live: LiveSession) -> None:
        live.runner = None


class FakeSnapshots:
    def __init__(self) -> None:
        self.restored: list[str] = []

    async def restore(self, live: LiveSession, why: str) -> None:
        self.restored.append(why)


class FakePassivation:
    @contextlib.asynccontextmanager
    async def lock(self, session_id: str) -> AsyncIterator[None]:
        yield


class FakeRecovery:
    async def prepare(self, live: LiveSession) -> None:
        pass

    def kernel_lost(self, live: LiveSession, error: str) -> None:
        pass


class Nothing:
    """Replays with nothing recorded, a disk with room, autonomy never asked for."""

    def answered(self, record: SessionRecord) -> None:
        return None

    def check(self, what: str) -> None:
        pass


class FakeListing:
    def __init__(self, registry: SessionRegistry) -> None:
        self.registry = registry

    def session_json(self, session_id: str) -> dict[str, Any]:
        return {"id": session_id, "state": self.registry.get(session_id).state.value}


class World:
    def __init__(self, ticking: tuple[str, ...] = ()) -> None:
        self.registry = SessionRegistry()
        parts = shared(self.registry, spawn=self.spawn)  # no store: nothing is read back
        self.lifecycle = parts.lifecycle
        self.answers = Answers(parts, put_blob=None)  # type: ignore[arg-type]  # nothing uploaded
        self.lifecycle.on(SessionState.IDLE, self.answers.entered_idle)
        self.custody = FakeCustody()
        self.snapshots = FakeSnapshots()
        self.tasks: list[asyncio.Task[Any]] = []
        # Set when a "hang" session's loop hangs: it runs, with a kernel.
        self.hanging: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.runs = Runs(
            parts,
            host=self,  # type: ignore[arg-type]  # the fake loop's host
            slots=Slots(2),
            kernels=KernelSide(
                custody=self.custody,  # type: ignore[arg-type]
                snapshots=self.snapshots,  # type: ignore[arg-type]
                spills=Nothing(),  # type: ignore[arg-type]  # a run spills nothing itself
                passivation=FakePassivation(),  # type: ignore[arg-type]
                recovery=FakeRecovery(),  # type: ignore[arg-type]
            ),
            replays=Nothing(),  # type: ignore[arg-type]
            autonomy=Nothing(),  # type: ignore[arg-type]
            disk=Nothing(),  # type: ignore[arg-type]
            listing=FakeListing(self.registry),  # type: ignore[arg-type]
            waits=lambda sid: sid in ticking,
            has_unread=self.has_unread,
            answers=self.answers,
            loop_class=FakeLoop,
        )
        self.runs.started.set()

    async def has_unread(self, live: LiveSession) -> bool:
        return False

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "") -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.append(task)
        return task

    def session(
        self, sid: str, what: str, parent: str | None = None, **options: Any
    ) -> LiveSession:
        record = agent_record(
            sid,
            parent,
            prompt=what,
            state=SessionState.ADMITTED,
            options={"persistent": False, **options},
        )
        live = LiveSession(self.registry.add(record, lambda sid, fields: None))
        self.registry.live[sid] = live
        return live

    async def run(self, live: LiveSession) -> SessionState:
        self.runs.start(live)
        assert live.task is not None
        await live.task
        return live.state


def test_a_run_settles_its_session_as_its_loop_ends() -> None:
    async def main() -> None:
        w = World()
        assert await w.run(w.session("a", "answer")) == SessionState.DONE
        silent = w.session("b", "silent")
        assert await w.run(silent) == SessionState.FAILED
        assert silent.record.error == "ended without an answer"
        out_of_turns = w.session("c", "turns")
        assert await w.run(out_of_turns) == SessionState.FAILED
        assert out_of_turns.record.error == "no answer after 1 turn"
        crashed = w.session("d", "crash")
        assert await w.run(crashed) == SessionState.FAILED
        assert crashed.record.error == "ValueError: a bug"
        assert w.custody.attached == ["a", "b", "c", "d"]

    asyncio.run(main())


def test_a_persistent_session_waits_idle_and_a_wake_runs_it_again() -> None:
    async def main() -> None:
        w = World()
        live = w.session("p", "answer", persistent=True)
        assert await w.run(live) == SessionState.IDLE and live.settled.is_set()
        w.runs.wake(live)
        assert not live.settled.is_set() and live.record.answer_repr is None  # a new request
        assert live.task is not None
        await live.task
        assert live.state == SessionState.IDLE and live.record.answer_repr == "turn 2"
        assert w.custody.attached == ["p"]  # an IDLE session keeps its kernel
        w.runs.wake(w.session("q", "answer"))  # not IDLE: nothing to wake
        assert w.registry.live["q"].task is None

    asyncio.run(main())


def test_a_session_a_schedule_ticks_to_waits_until_it_is_released() -> None:
    async def main() -> None:
        w = World(ticking=("t", "u"))
        answered, silent = w.session("t", "answer"), w.session("u", "silent")
        assert await w.run(answered) == SessionState.IDLE
        assert await w.run(silent) == SessionState.IDLE
        w.runs.released("t")
        w.runs.released("u")
        assert answered.state == SessionState.DONE
        assert silent.state == SessionState.FAILED

    asyncio.run(main())


def test_no_kernel_leaves_a_root_at_work_resumable_and_fails_a_child() -> None:
    async def main() -> None:
        w = World()
        root = w.session("r", "no kernel")
        assert await w.run(root) == SessionState.INACTIVE
        why = "the kernel gateway is down; a new kernel was started."
        assert root.restore_reason == why
        child = w.session("c", "no kernel", parent="r")
        assert await w.run(child) == SessionState.FAILED
        await asyncio.gather(*w.tasks)  # their kernels released
        root.record.update(prompt="answer")
        assert w.runs.resume("r") == {"id": "r", "state": "INACTIVE"}
        assert root.task is not None
        await root.task
        assert root.state == SessionState.DONE
        assert w.snapshots.restored == [why]  # a new kernel, the REPL restored into it
        with pytest.raises(Conflict, match="DONE, not INACTIVE: nothing to resume"):
            w.runs.resume("r")

    asyncio.run(main())


def test_cancel_takes_the_subtree_children_first_and_says_what_had_ended() -> None:
    async def main() -> None:
        w = World()
        root, child = w.session("r", "hang"), w.session("c", "hang", parent="r")
        done = w.session("d", "answer", parent="r")
        await w.run(done)
        w.runs.start(root)
        w.runs.start(child)
        await asyncio.wait_for(asyncio.gather(w.hanging["r"].wait(), w.hanging["c"].wait()), 5)
        assert root.state == child.state == SessionState.RUNNING
        result = await w.runs.cancel("r")
        assert result == {"cancelled": ["c", "r"], "already_ended": False, "state": "CANCELLED"}
        assert child.state == SessionState.CANCELLED and done.state == SessionState.DONE
        again = await w.runs.cancel("r")
        assert again == {"cancelled": [], "already_ended": True, "state": "CANCELLED"}

    asyncio.run(main())


def test_wait_returns_when_the_session_settles_or_the_time_is_up() -> None:
    async def main() -> None:
        w = World()
        hanging = w.session("h", "hang")
        w.runs.start(hanging)
        assert (await w.runs.wait("h", 0.05))["state"] == "RUNNING"
        waiting = asyncio.create_task(w.runs.wait("h", None))
        await w.runs.cancel("h")
        assert (await waiting)["state"] == "CANCELLED"

    asyncio.run(main())


def test_interrupt_reaches_the_kernel_or_says_there_is_none() -> None:
    async def main() -> None:
        w = World()
        live = w.session("h", "hang")
        with pytest.raises(PrimeError, match="no running kernel"):
            await w.runs.interrupt("h")
        w.runs.start(live)
        await asyncio.wait_for(w.hanging["h"].wait(), 5)
        await w.runs.interrupt("h")
        assert live.runner.interrupted == 1  # type: ignore[union-attr]
        await w.runs.cancel("h")

    asyncio.run(main())
