"""Driving session kernels as an ordinary Jupyter client, and keeping a warm pool of them.

`KernelRunner` owns one async kernel client. A single pump task reads IOPub and routes each
message by its parent: replies to our own execute requests go to the waiting `execute()`; cells
someone else ran in the same kernel (a person in an attached console) are collected and handed
to `on_foreign_cell`, which is how co-working shows up in the agent's trajectory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from jupyter_client import AsyncKernelManager
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

log = logging.getLogger(__name__)


@dataclass
class CellResult:
    code: str
    outputs: list[dict[str, Any]] = field(default_factory=list)
    status: str = "ok"  # ok | error | timeout | aborted
    execution_count: int | None = None
    duration: float = 0.0
    stored_bytes: int = 0
    dropped_bytes: int = 0

    def to_json(self, source: str = "agent") -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "source": source,
            "outputs": self.outputs,
            "status": self.status,
            "execution_count": self.execution_count,
            "duration": round(self.duration, 6),
        }
        if self.dropped_bytes:
            data["truncated_note"] = (
                f"{self.dropped_bytes} bytes of output were not stored (cap per cell reached)"
            )
        return data


class _Collector:
    """Accumulates IOPub output for one execution, within a byte cap."""

    def __init__(self, result: CellResult, max_bytes: int) -> None:
        self.result = result
        self.max_bytes = max_bytes
        self.idle = asyncio.Event()

    def add(self, msg: dict[str, Any]) -> None:
        kind = msg["header"]["msg_type"]
        content = msg["content"]
        outputs = self.result.outputs
        if kind == "status":
            if content.get("execution_state") == "idle":
                self.idle.set()
            return
        if kind == "execute_input":
            self.result.execution_count = content.get("execution_count")
            return
        if kind == "clear_output":
            outputs.clear()
            return
        out: dict[str, Any] | None = None
        if kind == "stream":
            text = content.get("text", "")
            if (
                outputs
                and outputs[-1].get("output_type") == "stream"
                and outputs[-1]["name"] == content.get("name")
            ):
                text = self._fit(text)
                outputs[-1]["text"] += text
                return
            out = {"output_type": "stream", "name": content.get("name", "stdout"), "text": ""}
            out["text"] = self._fit(text)
        elif kind in ("execute_result", "display_data"):
            out = {"output_type": kind, "data": content.get("data", {}), "metadata": {}}
            out["metadata"] = content.get("metadata", {})
            if kind == "execute_result":
                out["execution_count"] = content.get("execution_count")
            size = sum(len(str(v)) for v in out["data"].values())
            if not self._room(size):
                return
        elif kind == "error":
            out = {
                "output_type": "error",
                "ename": content.get("ename", ""),
                "evalue": content.get("evalue", ""),
                "traceback": content.get("traceback", []),
            }
            if self.result.status == "ok":  # a timeout stays a timeout
                self.result.status = "error"
        if out is not None:
            outputs.append(out)

    def _room(self, size: int) -> bool:
        if self.result.stored_bytes + size > self.max_bytes:
            self.result.dropped_bytes += size
            return False
        self.result.stored_bytes += size
        return True

    def _fit(self, text: str) -> str:
        room = self.max_bytes - self.result.stored_bytes
        if len(text) <= room:
            self.result.stored_bytes += len(text)
            return text
        keep = max(room, 0)
        self.result.stored_bytes += keep
        self.result.dropped_bytes += len(text) - keep
        return text[:keep]


class KernelRunner:
    def __init__(
        self,
        kernel_manager: AsyncMultiKernelManager,
        kernel_id: str,
        *,
        max_output_bytes: int = 10_000_000,
        on_foreign_cell: Callable[[CellResult], None] | None = None,
    ) -> None:
        self.kernel_manager = kernel_manager
        self.kernel_id = kernel_id
        self.max_output_bytes = max_output_bytes
        self.on_foreign_cell = on_foreign_cell
        # get_kernel() is annotated with the blocking KernelManager; an async multi-kernel
        # manager's kernels are AsyncKernelManagers, whose client() is an AsyncKernelClient.
        km = cast(AsyncKernelManager, kernel_manager.get_kernel(kernel_id))
        self.client = km.client()
        self._pending: dict[str, _Collector] = {}
        self._foreign: dict[str, _Collector] = {}
        self._pump: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def start(self, timeout: float = 60) -> None:
        # No heartbeat channel: the kernel manager already watches the process, and the
        # heartbeat poller blocks the event loop for seconds at a time.
        self.client.start_channels(hb=False)
        await self.client.wait_for_ready(timeout=timeout)
        self._pump = asyncio.create_task(self._pump_iopub(), name=f"iopub-{self.kernel_id}")

    async def stop(self) -> None:
        if self._pump:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump
        self.client.stop_channels()

    async def _pump_iopub(self) -> None:
        session_id = self.client.session.session
        while True:
            try:
                msg = await self.client.get_iopub_msg()
            except asyncio.CancelledError:
                raise
            except Exception:  # a closed channel during shutdown
                await asyncio.sleep(0.05)
                continue
            parent = msg.get("parent_header") or {}
            parent_id: str = parent.get("msg_id") or ""
            collector = self._pending.get(parent_id)
            if collector is not None:
                collector.add(msg)
                continue
            if not parent_id or parent.get("session") == session_id:
                continue
            self._foreign_message(parent_id, msg)

    def _foreign_message(self, parent_id: str, msg: dict[str, Any]) -> None:
        kind = msg["header"]["msg_type"]
        collector = self._foreign.get(parent_id)
        if collector is None:
            if kind != "execute_input":
                return
            result = CellResult(code=msg["content"].get("code", ""))
            collector = self._foreign[parent_id] = _Collector(result, self.max_output_bytes)
            collector.result.duration = time.monotonic()
        collector.add(msg)
        if collector.idle.is_set():
            del self._foreign[parent_id]
            result = collector.result
            result.duration = time.monotonic() - result.duration
            if self.on_foreign_cell and result.code.strip():
                self.on_foreign_cell(result)

    async def execute(
        self, code: str, *, timeout: float | None = None, silent: bool = False
    ) -> CellResult:
        """Run `code` and wait for it; past `timeout` the kernel is interrupted."""
        async with self._lock:
            result = CellResult(code=code)
            collector = _Collector(result, self.max_output_bytes)
            start = time.monotonic()
            msg_id = self.client.execute(
                code, silent=silent, store_history=not silent, allow_stdin=False
            )
            self._pending[msg_id] = collector
            try:
                reply = await self._wait_reply(msg_id, timeout)
                if reply is None:
                    result.status = "timeout"
                    await self.interrupt()
                    reply = await self._wait_reply(msg_id, 10)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(collector.idle.wait(), 5)
            finally:
                self._pending.pop(msg_id, None)
            if reply is not None:
                content = reply["content"]
                if result.execution_count is None:
                    result.execution_count = content.get("execution_count")
                if content.get("status") == "error" and result.status == "ok":
                    result.status = "error"
                if content.get("status") == "aborted":
                    result.status = "aborted"
            result.duration = time.monotonic() - start
            return result

    async def _wait_reply(self, msg_id: str, timeout: float | None) -> dict[str, Any] | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            try:
                reply = await self.client.get_shell_msg(timeout=remaining)
            except Exception:  # queue.Empty on timeout
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            if (reply.get("parent_header") or {}).get("msg_id") == msg_id:
                return reply

    async def interrupt(self) -> None:
        # Annotated `-> None`, but it returns the kernel's own interrupt_kernel() result, a
        # coroutine for an AsyncKernelManager.
        await _maybe_await(
            self.kernel_manager.interrupt_kernel(self.kernel_id)  # type: ignore[func-returns-value]
        )


class KernelPool:
    """Kernels started ahead of demand so that `rlm()` does not wait for a cold start."""

    def __init__(
        self,
        kernel_manager: AsyncMultiKernelManager,
        kernel_name: str,
        size: int,
        start_kwargs: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.kernel_manager = kernel_manager
        self.kernel_name = kernel_name
        self.size = size
        self.start_kwargs = start_kwargs or dict
        self._ready: asyncio.Queue[KernelRunner] = asyncio.Queue()
        self._starting = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.runner_kwargs: dict[str, Any] = {}
        self.start_timeout = 120.0

    async def start_kernel(self) -> KernelRunner:
        from ..provisioner import agent_kernels

        with agent_kernels():
            kernel_id = await _maybe_await(
                self.kernel_manager.start_kernel(
                    kernel_name=self.kernel_name, **self.start_kwargs()
                )
            )
        runner = KernelRunner(self.kernel_manager, kernel_id, **self.runner_kwargs)
        try:
            await runner.start(timeout=self.start_timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                await _maybe_await(self.kernel_manager.shutdown_kernel(kernel_id, now=True))
            raise
        return runner

    def fill(self) -> None:
        missing = self.size - self._ready.qsize() - self._starting
        for _ in range(max(missing, 0)):
            self._starting += 1
            task = asyncio.create_task(self._add_one())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _add_one(self) -> None:
        try:
            runner = await self.start_kernel()
        except Exception:
            log.exception("could not start a pooled kernel")
            return
        finally:
            self._starting -= 1
        if self._closed:
            await self.discard(runner)
        else:
            self._ready.put_nowait(runner)

    async def acquire(self) -> KernelRunner:
        """A ready kernel: from the pool if one is waiting, else a fresh start."""
        while not self._ready.empty():
            runner = self._ready.get_nowait()
            try:
                alive = await _maybe_await(self.kernel_manager.is_alive(runner.kernel_id))
            except asyncio.CancelledError:
                self._ready.put_nowait(runner)  # still a good kernel for the next session
                raise
            if alive:
                self.fill()
                return runner
            await self.discard(runner)
        self.fill()
        try:
            return await self._start_for_caller()
        except RuntimeError as e:
            # On a loaded machine a kernel occasionally dies or stalls while starting; one
            # fresh attempt is cheaper than failing the session.
            log.warning("a kernel failed to start (%s); starting another", e)
            return await self._start_for_caller()

    async def _start_for_caller(self) -> KernelRunner:
        """Start a kernel for a waiting session; if the session is cancelled meanwhile, the
        start still finishes (a start cancelled halfway leaves a kernel the manager cannot shut
        down) and the kernel is then discarded."""
        task = asyncio.ensure_future(self.start_kernel())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(self._discard_unclaimed)
            raise

    def _discard_unclaimed(self, task: asyncio.Future[KernelRunner]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        reap = asyncio.ensure_future(self.discard(task.result()))
        self._tasks.add(reap)
        reap.add_done_callback(self._tasks.discard)

    async def discard(self, runner: KernelRunner) -> None:
        await runner.stop()
        with contextlib.suppress(Exception):
            await _maybe_await(self.kernel_manager.shutdown_kernel(runner.kernel_id, now=True))

    async def close(self) -> None:
        self._closed = True
        # Let kernels that are mid-start finish starting (they are then discarded): a start
        # cancelled halfway leaves the kernel manager holding a kernel it cannot shut down.
        await asyncio.gather(*self._tasks, return_exceptions=True)
        while not self._ready.empty():
            await self.discard(self._ready.get_nowait())


async def _maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value
