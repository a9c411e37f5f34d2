"""The keeper of kernels over fakes (no server, no kernel): a kernel attached and bound to its
session, kept for co-working or released when the session ends, replaced when it dies, dropped
when a person shuts it down."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from prime_kernel.daemon import usage as usage_mod
from prime_kernel.daemon.access import TokenRegistry
from prime_kernel.daemon.custody import KernelCustody
from prime_kernel.daemon.kernels import CellResult
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.session import LiveSession
from prime_kernel.protocol.errors import PrimeError
from prime_kernel.protocol.states import SessionKind, SessionState
from tests.daemon.conftest import FakeEvents, shared


class FakeLauncher:
    def __init__(self, restartable: bool = True) -> None:
        self.can_restart = restartable
        self.shut: list[str] = []

    def restartable(self, kernel_id: str) -> bool:
        return self.can_restart

    def record(self, kernel_id: str) -> dict[str, Any]:
        return {"pid": 1234}

    async def shutdown(self, kernel_id: str) -> None:
        self.shut.append(kernel_id)


class FakeRunner:
    def __init__(self, kernel_id: str, launcher: FakeLauncher, *results: CellResult) -> None:
        self.kernel_id = kernel_id
        self.launcher = launcher
        self.results = list(results)
        self.ran: list[str] = []
        self.busy = False
        self.restarts = 0
        self.stopped = False
        self.on_foreign_cell: Callable[[CellResult], None] | None = None

    async def execute(self, code: str, **kwargs: Any) -> CellResult:
        self.ran.append(code)
        return self.results.pop(0) if self.results else CellResult(code=code)

    async def restart(self, timeout: float) -> None:
        self.restarts += 1

    async def stop(self) -> None:
        self.stopped = True

    async def terminate(self, grace: float) -> None:
        self.busy = False


class FakePool:
    def __init__(self, *runners: FakeRunner) -> None:
        self.runners = list(runners)

    async def acquire(self) -> FakeRunner:
        return self.runners.pop(0)

    async def close(self) -> None:
        self.runners.clear()


class FakeStore:
    def __init__(self) -> None:
        self.kernels: dict[str, dict[str, Any]] = {}

    def record_kernel(self, kernel_id: str, info: dict[str, Any]) -> None:
        self.kernels.setdefault(kernel_id, {}).update(info)

    def forget_kernel(self, kernel_id: str) -> None:
        self.kernels.pop(kernel_id, None)


class FakeSnapshots:
    def __init__(self) -> None:
        self.restored: list[tuple[str, str]] = []

    async def restore(self, live: LiveSession, why: str) -> None:
        self.restored.append((live.id, why))


class Harness:
    """A custody over fakes, and what it did."""

    def __init__(self, **settings: Any) -> None:
        self.registry = SessionRegistry()
        self.store = FakeStore()
        self.events = FakeEvents()
        self.tokens = TokenRegistry()
        self.snapshots = FakeSnapshots()
        self.tasks: list[asyncio.Task[Any]] = []
        self.user_cells: list[tuple[str, str]] = []
        self.custody = KernelCustody(
            shared(self.registry, store=self.store, events=self.events, spawn=self.spawn),
            tokens=self.tokens,
            snapshots=self.snapshots,  # type: ignore[arg-type]
            on_user_cell=lambda live, cell: self.user_cells.append((live.id, cell.code)),
            **settings,
        )

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "") -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.append(task)
        return task

    def live(self, sid: str, parent: str | None = None, **fields: Any) -> LiveSession:
        record = SessionRecord(
            id=sid,
            name=sid,
            prompt="p",
            state=fields.pop("state", SessionState.RUNNING),
            kind=fields.pop("kind", SessionKind.AGENT),
            parent_id=parent,
            root_id=parent or sid,
            depth=0 if parent is None else 1,
            created=time.time(),
            usage=usage_mod.empty(),
            **fields,
        )
        live = LiveSession(self.registry.add(record, lambda sid, fields: None))
        self.registry.live[sid] = live
        return live

    def pool(self, *runners: FakeRunner) -> None:
        self.custody.pool = FakePool(*runners)  # type: ignore[assignment]

    async def settle(self) -> None:
        await asyncio.gather(*self.tasks, return_exceptions=True)
        assert not any(t.cancelled() for t in self.tasks[-1:]), "the last release ran"


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coro)


def test_attach_binds_the_kernel_to_its_session_and_loads_the_context() -> None:
    async def main() -> None:
        h = Harness()
        launcher = FakeLauncher()
        runner = FakeRunner("k1", launcher)
        h.pool(runner)
        live = h.live("s1", None, context_blob="b1")
        await h.custody.attach(live)
        assert live.runner is runner and live.record.kernel_id == "k1"
        assert h.tokens.session_for_kernel("k1") == "s1"
        assert h.store.kernels["k1"] == {"session_id": "s1"}
        assert "load_context()" in runner.ran[0]
        # A person's cell in the kernel reaches the session.
        assert runner.on_foreign_cell is not None
        runner.on_foreign_cell(CellResult(code="x = 1"))
        assert h.user_cells == [("s1", "x = 1")]

    run(main())


def test_a_context_that_does_not_load_fails_the_attach_saying_why() -> None:
    async def main() -> None:
        h = Harness()
        failed = CellResult(
            code="",
            status="error",
            outputs=[{"output_type": "error", "ename": "ModuleNotFoundError", "evalue": "pandas"}],
        )
        h.pool(FakeRunner("k1", FakeLauncher(), failed))
        with pytest.raises(PrimeError, match=r"could not load the context.*pandas"):
            await h.custody.attach(h.live("s1", None, context_blob="b1"))

    run(main())


def test_an_ended_child_releases_its_kernel_and_an_ended_root_keeps_it() -> None:
    async def main() -> None:
        h = Harness(keep_root_kernel=600.0)
        launcher = FakeLauncher()
        h.pool(FakeRunner("k-root", launcher), FakeRunner("k-child", launcher))
        root, child = h.live("r"), h.live("c", "r")
        await h.custody.attach(root)
        await h.custody.attach(child)
        for live in (root, child):
            live.record.update(state=SessionState.DONE)
            h.custody.session_ended(live.record, live, SessionState.DONE)
        await asyncio.gather(*h.tasks[1:])  # the child's release (the root's keep waits)
        assert launcher.shut == ["k-child"] and child.runner is None
        assert "c" not in h.registry.live and h.tokens.session_for_kernel("k-child") is None
        assert root.runner is not None and h.tokens.session_for_kernel("k-root") == "r"
        await h.custody.release(root)  # the daemon stops: kept kernels go too
        assert launcher.shut == ["k-child", "k-root"] and "r" not in h.registry.live
        await h.settle()

    run(main())


def test_beyond_max_kept_kernels_the_least_recently_ended_goes() -> None:
    async def main() -> None:
        h = Harness(keep_root_kernel=600.0, max_kept_kernels=2)
        launcher = FakeLauncher()
        h.pool(*(FakeRunner(f"k{i}", launcher) for i in range(3)))
        roots = [h.live(f"r{i}") for i in range(3)]
        for live in roots:
            await h.custody.attach(live)
            live.record.update(state=SessionState.DONE)
            h.custody.session_ended(live.record, live, SessionState.DONE)
        await h.tasks[-1]  # the first one's release: evicted, it goes at once
        assert launcher.shut == ["k0"]
        assert [lv.runner is not None for lv in roots] == [False, True, True]
        for live in roots[1:]:
            await h.custody.release(live)
        await h.settle()

    run(main())


def test_no_keeping_releases_at_once() -> None:
    async def main() -> None:
        h = Harness(keep_root_kernel=0.0)
        launcher = FakeLauncher()
        h.pool(FakeRunner("k1", launcher))
        live = h.live("r")
        await h.custody.attach(live)
        live.record.update(state=SessionState.FAILED)
        h.custody.session_ended(live.record, live, SessionState.FAILED)
        await h.settle()
        assert launcher.shut == ["k1"] and not h.store.kernels

    run(main())


def test_close_waits_for_a_release_whose_caller_was_cancelled() -> None:
    """A cancelled session's kernel is still being stopped (a hard stop takes a grace period)
    when the server stops: the stop waits for it, so no client is left with open sockets."""

    class SlowRunner(FakeRunner):
        async def terminate(self, grace: float) -> None:
            await asyncio.sleep(0.05)
            self.busy = False

    async def main() -> None:
        h = Harness()
        launcher = FakeLauncher()
        runner = SlowRunner("k1", launcher)
        h.pool(runner)
        live = h.live("r")
        await h.custody.attach(live)
        runner.busy = True  # its cell ignores interrupts
        releasing = asyncio.ensure_future(h.custody.release(live))
        await asyncio.sleep(0)
        releasing.cancel()
        await h.custody.close()
        assert runner.stopped and launcher.shut == ["k1"]

    run(main())


def test_a_dead_kernel_is_restarted_and_the_repl_restored_up_to_the_limit() -> None:
    async def main() -> None:
        h = Harness(max_kernel_restarts=1)
        runner = FakeRunner("k1", FakeLauncher(restartable=True))
        h.pool(runner)
        live = h.live("s1")
        await h.custody.attach(live)
        died = CellResult(code="", status="died", exit="signal SIGKILL")
        await h.custody.replace(live, died)
        assert runner.restarts == 1 and live.record.options["kernel_restarts"] == 1
        assert h.snapshots.restored == [
            ("s1", "Your kernel died (signal SIGKILL) and a new one was started.")
        ]
        kinds = [(k, d["event"]) for _, k, d in h.events.emitted]
        assert kinds == [("kernel", "died"), ("kernel", "restarted")]
        with pytest.raises(PrimeError, match=r"2 times; the limit is 1 \(c.KernelCustody"):
            await h.custody.replace(live, died)

    run(main())


def test_a_kernel_that_cannot_restart_is_replaced_by_a_new_one() -> None:
    async def main() -> None:
        h = Harness()
        launcher = FakeLauncher(restartable=False)
        h.pool(FakeRunner("k1", launcher), FakeRunner("k2", launcher))
        live = h.live("s1")
        await h.custody.attach(live)
        await h.custody.replace(live, CellResult(code="", status="killed"))
        assert launcher.shut == ["k1"] and live.record.kernel_id == "k2"
        assert h.tokens.session_for_kernel("k2") == "s1"
        assert h.tokens.session_for_kernel("k1") is None

    run(main())


def test_a_silent_cell_that_kills_its_kernel_replaces_it() -> None:
    async def main() -> None:
        h = Harness()
        runner = FakeRunner("k1", FakeLauncher(), CellResult(code="", status="died"))
        h.pool(runner)
        live = h.live("s1")
        await h.custody.attach(live)
        result = await h.custody.run_silent(live, "gate()", 5.0)
        assert result.status == "died" and runner.restarts == 1
        await h.custody.release(live)
        with pytest.raises(PrimeError, match="no kernel"):
            await h.custody.run_silent(live, "gate()", 5.0)

    run(main())


def test_a_kernel_shut_down_by_a_person() -> None:
    async def main() -> None:
        h = Harness()
        launcher = FakeLauncher()
        h.pool(FakeRunner("k1", launcher))
        agent = h.live("s1", state=SessionState.IDLE)
        await h.custody.attach(agent)
        notebook = h.live("n1", kind=SessionKind.NOTEBOOK, kernel_id="kn")
        h.tokens.mint("kn", notebook=True)
        h.custody.kernel_ended("k1")  # an idle agent's: dropped, restored on its next run
        await h.settle()
        assert agent.runner is None and agent.record.kernel_id is None
        assert agent.restore_reason is not None and agent.state == SessionState.IDLE
        h.custody.kernel_ended("kn")  # a notebook's: its session ends
        assert notebook.state == SessionState.DONE and not h.tokens.holds("kn")
        h.custody.kernel_ended("unknown")  # nothing to do

    run(main())
