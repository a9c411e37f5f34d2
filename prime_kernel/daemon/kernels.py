"""Driving session kernels as an ordinary Jupyter client, and keeping a warm pool of them.

Both go through the daemon's kernel launcher (prime_kernel/daemon/launcher.py), which knows
where kernels run. `KernelRunner` owns one async kernel client. A single pump task reads IOPub
and routes each message by its parent: replies to our own execute requests go to the waiting
`execute()`; cells someone else ran in the same kernel (a person in an attached console) are
collected and handed to `on_foreign_cell`, which is how co-working shows up in the agent's
trajectory.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import logging
import queue
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from ..protocol.errors import PrimeError
from .launcher import KernelLauncher

log = logging.getLogger(__name__)


# Most REPL names a cell event keeps (to say what a restore lost).
MAX_NAMES = 200


@dataclass
class CellResult:
    code: str
    outputs: list[dict[str, Any]] = field(default_factory=list)
    # ok | error | timeout (interrupted) | aborted | cancelled | died (the kernel exited)
    # | killed (an interrupt did not stop it: the kernel was killed)
    status: str = "ok"
    execution_count: int | None = None
    duration: float = 0.0
    stored_bytes: int = 0
    dropped_bytes: int = 0
    # How the kernel ended, when status is died or killed ("exit code 1", "signal SIGKILL").
    exit: str | None = None
    # The REPL's names after the cell (when asked for), to say later what a restore lost.
    names: list[str] | None = None

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
        if self.exit:
            data["exit"] = self.exit
        if self.names is not None:
            data["names"] = self.names[:MAX_NAMES]
        return data


class _OutputCapture:
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


# Asked of the kernel after every agent cell (in the same execute request, so no extra round
# trip): the names in its namespace, to say later what a restore from a snapshot lost.
NAMES_EXPRESSION = "__import__('prime_kernel.kernel.snapshot', fromlist=['names']).names()"


class KernelRunner:
    """One kernel, driven as a Jupyter client: execute with a timeout, death noticed within
    `poll_interval` seconds (the kernel's process is watched, not the cell's clock), and an
    escalation for cells an interrupt cannot stop."""

    def __init__(
        self,
        kernels: KernelLauncher | AsyncMultiKernelManager,
        kernel_id: str,
        *,
        max_output_bytes: int = 10_000_000,
        on_foreign_cell: Callable[[CellResult], None] | None = None,
        poll_interval: float = 0.5,
    ) -> None:
        # A multi-kernel manager stands for its own kernels (a person's kernel of the server).
        if not isinstance(kernels, KernelLauncher):
            kernels = KernelLauncher(kernel_manager=kernels)
        self.launcher = kernels
        self.kernel_id = kernel_id
        self.max_output_bytes = max_output_bytes
        self.on_foreign_cell = on_foreign_cell
        self.poll_interval = poll_interval
        self.client = kernels.client(kernel_id)
        self._pending: dict[str, _OutputCapture] = {}
        self._foreign: dict[str, _OutputCapture] = {}
        self._pump: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.wedged = False
        self._inflight: str | None = None

    @property
    def busy(self) -> bool:
        """Whether one of our cells is running (or was given up on and never finished)."""
        return self._lock.locked() or self.wedged

    async def start(self, timeout: float = 60) -> None:
        self.launcher.adopt(self.kernel_id)
        await asyncio.wait_for(self.launcher.started(self.kernel_id), timeout)
        # Shell and IOPub only. No heartbeat: the kernel's process is watched instead, and
        # the heartbeat poller blocks the event loop for seconds at a time. No stdin (cells
        # run with allow_stdin=False) and no control (interrupts and shutdowns go through
        # the launcher): two sockets fewer to open and close for every kernel of a fan-out.
        self.client.start_channels(hb=False, stdin=False, control=False)
        await self._wait_ready(timeout)
        self._pump = asyncio.create_task(self._pump_iopub(), name=f"iopub-{self.kernel_id}")

    async def _wait_ready(self, timeout: float) -> None:
        """Until the kernel answers a kernel_info request on its shell channel and IOPub
        delivers (its welcome, or the status of that request). jupyter_client's
        `wait_for_ready()` does the same but then waits for 0.2 s of IOPub silence: a fifth of
        a second on every start, more than a forked kernel takes to start."""
        deadline = time.monotonic() + timeout
        while True:
            msg_id = self.client.kernel_info()
            reply = await self._wait_reply(msg_id, min(1.0, deadline - time.monotonic()), None)
            if reply is not None:
                with contextlib.suppress(queue.Empty, asyncio.TimeoutError):
                    await self.client.get_iopub_msg(timeout=0.5)
                    version = str(reply["content"].get("protocol_version", "5"))
                    adapt = int(version.split(".")[0])
                    if adapt != 5:  # as wait_for_ready adapts the session to older kernels
                        self.client.session.adapt_version = adapt
                    return
            code = await self.exit_code()
            if code is not None:
                how = self.launcher.describe_exit(self.kernel_id, code)
                raise RuntimeError(f"the kernel ended before it answered ({how})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the kernel did not answer in {timeout:.0f} seconds")

    async def stop(self) -> None:
        if self._pump:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump
            self._pump = None
        self.client.stop_channels()

    async def exit_code(self) -> int | None:
        """None while the kernel's process runs; its exit code (negative: signal) once it died."""
        return await self.launcher.exit_code(self.kernel_id)

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
            capture = self._pending.get(parent_id)
            if capture is not None:
                capture.add(msg)
                continue
            if not parent_id or parent.get("session") == session_id:
                continue
            self._foreign_message(parent_id, msg)

    def _foreign_message(self, parent_id: str, msg: dict[str, Any]) -> None:
        kind = msg["header"]["msg_type"]
        capture = self._foreign.get(parent_id)
        if capture is None:
            if kind != "execute_input":
                return
            result = CellResult(code=msg["content"].get("code", ""))
            capture = self._foreign[parent_id] = _OutputCapture(result, self.max_output_bytes)
            capture.result.duration = time.monotonic()
        capture.add(msg)
        if capture.idle.is_set():
            del self._foreign[parent_id]
            result = capture.result
            result.duration = time.monotonic() - result.duration
            if self.on_foreign_cell and result.code.strip():
                self.on_foreign_cell(result)

    async def execute(
        self,
        code: str,
        *,
        timeout: float | None = None,
        silent: bool = False,
        interrupt_grace: float = 5.0,
        names: bool = False,
    ) -> CellResult:
        """Run `code` and wait for it.

        Past `timeout` the kernel is interrupted; if the cell has not stopped `interrupt_grace`
        seconds later its status is `killed` and the caller must replace the kernel
        (`restart`). A kernel whose process exits meanwhile gives status `died`.
        """
        async with self._lock:
            result = CellResult(code=code)
            capture = _OutputCapture(result, self.max_output_bytes)
            start = time.monotonic()
            expressions = {"names": NAMES_EXPRESSION} if names else {}
            msg_id = self.client.execute(
                code,
                silent=silent,
                store_history=not silent,
                allow_stdin=False,
                user_expressions=expressions,
            )
            self._pending[msg_id] = capture
            self._inflight = msg_id
            # Until its reply comes, the kernel may still be running this cell (a cancelled
            # wait, an interrupt it ignored): it is not free for co-working or the pool.
            self.wedged = True
            try:
                reply = await self._wait_reply(msg_id, timeout, result)
                if reply is None and result.status == "ok":
                    result.status = "timeout"
                    await self.interrupt()
                    reply = await self._wait_reply(msg_id, interrupt_grace, result)
                    if reply is None and result.status == "timeout":
                        result.status = "killed"
                if reply is not None:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(capture.idle.wait(), 5)
            finally:
                self._pending.pop(msg_id, None)
            if reply is not None:
                self.wedged = False
                content = reply["content"]
                if result.execution_count is None:
                    result.execution_count = content.get("execution_count")
                if content.get("status") == "error" and result.status == "ok":
                    result.status = "error"
                if content.get("status") == "aborted":
                    result.status = "aborted"
                result.names = _names(content.get("user_expressions") or {})
            result.duration = time.monotonic() - start
            return result

    async def _wait_reply(
        self, msg_id: str, timeout: float | None, result: CellResult | None
    ) -> dict[str, Any] | None:
        """The shell reply to `msg_id`; None on timeout or if the kernel died (`result`'s status
        then `died`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            wait = self.poll_interval if remaining is None else min(remaining, self.poll_interval)
            try:
                reply = await self.client.get_shell_msg(timeout=wait)
            except asyncio.CancelledError:
                raise
            except Exception:  # queue.Empty: nothing yet; is the kernel still there?
                code = await self.exit_code()
                if code is not None:
                    if result is not None:
                        result.status = "died"
                        result.exit = self.launcher.describe_exit(self.kernel_id, code)
                    return None
                continue
            if (reply.get("parent_header") or {}).get("msg_id") == msg_id:
                return reply

    async def settle(self, grace: float) -> bool:
        """After an execute whose wait was cancelled: give the kernel `grace` seconds to finish
        that cell (it was interrupted); whether it did (then it is free again)."""
        async with self._lock:
            msg_id = self._inflight
            if self.wedged and msg_id is not None:
                reply = await self._wait_reply(msg_id, grace, CellResult(code=""))
                self.wedged = reply is None
        return not self.wedged

    async def interrupt(self) -> None:
        await self.launcher.interrupt(self.kernel_id)

    async def terminate(self, grace: float = 2.0) -> None:
        """Stop whatever the kernel is doing the hard way: SIGTERM, then SIGKILL after `grace`
        (a kernel that cannot be signalled is stopped by the restart or shutdown that follows)."""
        if not self.launcher.signals:
            return
        if await self.exit_code() is None:
            with contextlib.suppress(Exception):
                await self.launcher.signal(self.kernel_id, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and await self.exit_code() is None:
                await asyncio.sleep(0.05)
        if await self.exit_code() is None:
            with contextlib.suppress(Exception):
                await self.launcher.signal(self.kernel_id, signal.SIGKILL)

    async def restart(self, timeout: float = 60, grace: float = 2.0) -> None:
        """Replace a dead or wedged kernel by a fresh one under the same kernel id (a console a
        person attached stays attached); its REPL is empty."""
        await self.terminate(grace)
        await self.stop()
        await self.launcher.restart(self.kernel_id)
        self.client = self.launcher.client(self.kernel_id)
        self._pending.clear()
        self._foreign.clear()
        self.wedged = False
        await self.start(timeout)


def _names(expressions: dict[str, Any]) -> list[str] | None:
    found = expressions.get("names") or {}
    if found.get("status") != "ok":
        return None
    with contextlib.suppress(ValueError, SyntaxError, KeyError, TypeError):
        value = ast.literal_eval(found["data"]["text/plain"])
        if isinstance(value, list):
            return [str(v) for v in value]
    return None


class KernelPool:
    """Kernels started ahead of demand so that `rlm()` does not wait for a cold start."""

    def __init__(
        self,
        launcher: KernelLauncher,
        size: int,
        start_kwargs: Callable[[], dict[str, Any]] | None = None,
        *,
        demand: Callable[[], int] | None = None,
        max_ahead: int = 0,
    ) -> None:
        self.launcher = launcher
        self.size = size
        self.start_kwargs = start_kwargs or dict
        # Sessions that will want a kernel soon (waiting for a slot): up to `max_ahead` more
        # kernels are started for them, beyond `size`, so that a fan-out's children find a
        # kernel ready when their turn comes instead of starting one then.
        self.demand = demand or (lambda: 0)
        self.max_ahead = max_ahead
        self._ready: asyncio.Queue[KernelRunner] = asyncio.Queue()
        self._starting = 0
        # Sessions waiting for one of the starts in progress, first come first served.
        self._waiters: deque[asyncio.Future[KernelRunner | None]] = deque()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self.runner_kwargs: dict[str, Any] = {}
        self.start_timeout = 120.0
        # Told of every kernel started (the daemon records its pid and connection file).
        self.on_start: Callable[[KernelRunner], None] | None = None

    async def start_kernel(self) -> KernelRunner:
        kernel_id = await self.launcher.start_kernel(**self.start_kwargs())
        runner = KernelRunner(self.launcher, kernel_id, **self.runner_kwargs)
        if self.on_start is not None:
            self.on_start(runner)
        try:
            await runner.start(timeout=self.start_timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                await self.launcher.shutdown(kernel_id)
            raise
        return runner

    @property
    def ready(self) -> int:
        """Kernels started and waiting for a session."""
        return self._ready.qsize()

    @property
    def target(self) -> int:
        """How many kernels the pool holds or starts now."""
        return self.size + min(max(self.demand(), 0), self.max_ahead)

    def fill(self) -> None:
        if self._closed:
            return
        missing = self.target - self._ready.qsize() - self._starting
        for _ in range(max(missing, 0)):
            self._starting += 1
            task = asyncio.create_task(self._add_one())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _add_one(self) -> None:
        runner: KernelRunner | None = None
        try:
            runner = await self.start_kernel()
        except PrimeError as e:  # a gateway down: said once per attempt, no traceback
            log.warning("could not start a pooled kernel: %s", e.message)
        except Exception:
            log.exception("could not start a pooled kernel")
        finally:
            self._starting -= 1
        if runner is not None and self._closed:
            await self.discard(runner)
        elif runner is not None and not self._hand_over(runner):
            self._ready.put_nowait(runner)
        # A session waits only for a start in progress: with fewer of those than sessions
        # waiting, the last to come start their own.
        while len(self._waiters) > self._starting:
            waiter = self._waiters.pop()
            if not waiter.done():
                waiter.set_result(None)

    def _hand_over(self, runner: KernelRunner) -> bool:
        """Give a kernel that just started to the session that has waited longest."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():  # not cancelled
                waiter.set_result(runner)
                return True
        return False

    async def acquire(self) -> KernelRunner:
        """A ready kernel: from the pool if one is waiting; else the next of the pool's starts
        in progress to end (a fan-out's kernels started ahead), in the order sessions asked, so
        that a session neither starts one more kernel than needed nor is overtaken by later
        ones; else (no start in progress for it, or it failed) a fresh start."""
        while not self._ready.empty():
            runner = self._ready.get_nowait()
            try:
                alive = await self.launcher.is_alive(runner.kernel_id)
            except asyncio.CancelledError:
                self._ready.put_nowait(runner)  # still a good kernel for the next session
                raise
            if alive:
                self._trim()
                self.fill()
                return runner
            await self.discard(runner)
        self.fill()
        if self._starting > len(self._waiters):
            waiter: asyncio.Future[KernelRunner | None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                handed = await waiter
            except asyncio.CancelledError:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                elif not waiter.cancelled() and (kept := waiter.result()) is not None:
                    self._ready.put_nowait(kept)  # handed over just as the session was cancelled
                raise
            if handed is not None:
                self.fill()
                return handed
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

    def _trim(self) -> None:
        """Shut down ready kernels beyond the target (started for sessions that then did not
        need one: cancelled while they waited)."""
        while self._ready.qsize() > self.target:
            reap = asyncio.ensure_future(self.discard(self._ready.get_nowait()))
            self._tasks.add(reap)
            reap.add_done_callback(self._tasks.discard)

    def _discard_unclaimed(self, task: asyncio.Future[KernelRunner]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        reap = asyncio.ensure_future(self.discard(task.result()))
        self._tasks.add(reap)
        reap.add_done_callback(self._tasks.discard)

    async def discard(self, runner: KernelRunner) -> None:
        await runner.stop()
        with contextlib.suppress(Exception):
            await self.launcher.shutdown(runner.kernel_id)

    async def close(self) -> None:
        self._closed = True
        # Let kernels that are mid-start finish starting (they are then discarded): a start
        # cancelled halfway leaves the kernel manager holding a kernel it cannot shut down.
        await asyncio.gather(*self._tasks, return_exceptions=True)
        while not self._ready.empty():
            await self.discard(self._ready.get_nowait())
