"""The keeper of kernels: a session gets one, keeps it, gives it back, has it replaced.

`KernelCustody` holds the warm pool (kernels.py) and every kernel a session holds:

- `attach`: a kernel from the pool for a session, bound to it (its token, its record), its
  context loaded;
- `session_ended` (a lifecycle effect): an ended session's kernel goes, or an ended root's is
  kept a while for co-working (`keep_root_kernel`, at most `max_kept_kernels` of them);
- `release`: a session's kernel shut down and forgotten;
- `replace`: a kernel that died or would not stop, restarted (or a new one attached) and the
  REPL restored from its latest snapshot;
- `kernel_ended`: a kernel shut down outside the daemon (a person, in the Running panel);
- `run_silent`: a cell of the daemon's own (a gate, a spill) in a session's kernel.

Configure as `c.KernelCustody.<trait>` (the old `c.Daemon.<trait>` works one more release).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from traitlets import Bool, Float, Int
from traitlets.config import LoggingConfigurable

from ..protocol.errors import PrimeError
from ..protocol.events import EventKind
from ..protocol.states import SessionState
from .access import TokenRegistry
from .kernels import CellResult, KernelPool, KernelRunner
from .launcher import KernelLauncher
from .observation import render
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared
from .snapshots import Snapshots

# The child's context, as `context` in its REPL (kernel/primitives.py reads the blob).
LOAD_CONTEXT = (
    "import prime_kernel.kernel.primitives as __pk\ncontext = __pk.load_context()\ndel __pk"
)


class KernelCustody(LoggingConfigurable):
    """Session kernels: attach, keep, release, replace. Configure as `c.KernelCustody.<trait>`."""

    pool_size = Int(2, config=True, help="Warm kernels kept ready for new sessions (0 = none).")
    kernels_ahead = Int(
        4,
        config=True,
        help="Kernels started ahead, beyond pool_size, for sessions waiting for a slot (a "
        "fan-out's queued children), so that each finds one ready when its turn comes.",
    )
    kernel_start_timeout = Float(
        120.0, config=True, help="Seconds a new kernel may take to answer before it is retried."
    )
    kernel_poll_interval = Float(
        0.5, config=True, help="Seconds between checks that a running cell's kernel is alive."
    )
    cell_timeout = Float(
        600.0, config=True, help="Seconds a cell may run before it is interrupted."
    )
    interrupt_grace = Float(
        5.0,
        config=True,
        help="Seconds an interrupted cell has to stop before its kernel is terminated "
        "(SIGTERM, then SIGKILL) and replaced by a fresh one restored from the latest snapshot.",
    )
    max_cell_output_bytes = Int(
        10_000_000, config=True, help="Bytes of output stored per cell; the rest is counted."
    )
    max_kernel_restarts = Int(
        3,
        config=True,
        help="Kernel deaths (or kills) one session survives; after that it fails. 0: fail on "
        "the first.",
    )
    keep_root_kernel = Float(
        3600.0,
        config=True,
        help="Seconds a root session's kernel stays up after it ends (for co-working).",
    )
    max_kept_kernels = Int(
        4,
        config=True,
        help="Ended root sessions whose kernels are kept for co-working at once; the least "
        "recently ended beyond this are shut down.",
    )
    prune_children_kernels = Bool(
        True, config=True, help="Shut a child's kernel down as soon as the child ends."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        tokens: TokenRegistry,
        snapshots: Snapshots,
        on_user_cell: Callable[[LiveSession, CellResult], None],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.registry = shared.registry
        self.store = shared.store
        self.events = shared.events
        self.lifecycle = shared.lifecycle
        self.tokens = tokens
        self.snapshots = snapshots
        self.spawn = shared.spawn
        self.on_user_cell = on_user_cell
        self.pool: KernelPool | None = None
        # Ended roots whose kernels are kept for co-working, least recently ended first.
        self._kept: OrderedDict[str, asyncio.Task[None]] = OrderedDict()
        # Kernel shutdowns under way: a cancelled caller does not stop them (they are
        # shielded), so the daemon's stop waits for them — one left halfway keeps its
        # client's sockets open, and their context then blocks forever when it is collected.
        self._releasing: set[asyncio.Task[None]] = set()

    # -- the pool -------------------------------------------------------------------------
    def start(
        self,
        launcher: KernelLauncher,
        start_kwargs: Callable[[], dict[str, Any]],
        demand: Callable[[], int],
    ) -> KernelPool:
        """Make the pool (its first kernels start at once); `demand`: sessions waiting."""
        pool = self.pool = KernelPool(
            launcher, self.pool_size, start_kwargs, demand=demand, max_ahead=self.kernels_ahead
        )
        pool.runner_kwargs = {
            "max_output_bytes": self.max_cell_output_bytes,
            "poll_interval": self.kernel_poll_interval,
        }
        pool.start_timeout = self.kernel_start_timeout
        pool.on_start = self._started
        pool.fill()
        return pool

    async def close(self) -> None:
        if self.pool is not None:
            await self.pool.close()
        await asyncio.gather(*self._releasing, return_exceptions=True)

    def alive(self, session_id: str) -> bool:
        """Whether the session holds a kernel now."""
        live = self.registry.live.get(session_id)
        return bool(live and live.runner is not None)

    def _started(self, runner: KernelRunner) -> None:
        self.store.record_kernel(runner.kernel_id, runner.launcher.record(runner.kernel_id))

    # -- attach ---------------------------------------------------------------------------
    async def attach(self, live: LiveSession) -> None:
        """A kernel from the pool for `live`: bound to it, its context loaded."""
        assert self.pool is not None, "KernelCustody.start() makes the pool first"
        runner = await self.pool.acquire()
        live.runner = runner
        runner.on_foreign_cell = lambda cell: self.on_user_cell(live, cell)
        self.tokens.bind(runner.kernel_id, live.id)
        live.record.update(kernel_id=runner.kernel_id)
        self.store.record_kernel(runner.kernel_id, {"session_id": live.id})
        if live.record.context_blob:
            result = await runner.execute(LOAD_CONTEXT, silent=True, timeout=self.cell_timeout)
            if result.status != "ok":
                detail = render(result.outputs, status=result.status, limit=2000, timeout=0)
                raise PrimeError(f"could not load the context in the child's REPL: {detail}")

    # -- keep, release --------------------------------------------------------------------
    def session_ended(
        self, record: SessionRecord, live: LiveSession | None, _: SessionState
    ) -> None:
        """A session reached a terminal state: its kernel goes, or is kept for co-working."""
        if live is None or live.runner is None:
            self.registry.live.pop(record.id, None)
            return
        runner = live.runner
        keep = (record.parent_id is None or not self.prune_children_kernels) and (
            self.keep_root_kernel > 0 and self.max_kept_kernels > 0 and not runner.busy
        )
        if not keep:
            self.spawn(self.release(live), f"release-{record.id}")
            return
        live.last_active = time.monotonic()
        self._kept[record.id] = self.spawn(self._keep(live), f"keep-{record.id}")
        while len(self._kept) > self.max_kept_kernels:
            evicted, keeping = self._kept.popitem(last=False)
            keeping.cancel()  # (it may not have started yet: the release is not left to it)
            gone = self.registry.live.get(evicted)
            if gone is not None:
                self.spawn(self.release(gone), f"release-{evicted}")

    async def _keep(self, live: LiveSession) -> None:
        """Keep an ended root's kernel for co-working until it has been unused for
        `keep_root_kernel` seconds (a person's cell in it counts as use). Cancelled when the
        kernel goes otherwise (evicted, released, the daemon stops)."""
        while (left := live.last_active + self.keep_root_kernel - time.monotonic()) > 0:
            await asyncio.sleep(left)
        await self.release(live)

    async def release(self, live: LiveSession) -> None:
        """Shut the session's kernel down and forget it (an ended session leaves memory)."""
        keeping = self._kept.pop(live.id, None)
        if keeping is not None and keeping is not asyncio.current_task():
            keeping.cancel()  # nothing left to keep: its wait ends now, not in an hour
        runner, live.runner = live.runner, None
        if live.state.terminal:
            self.registry.live.pop(live.id, None)
        if runner is None:
            return
        self.tokens.revoke(runner.kernel_id)
        self.store.forget_kernel(runner.kernel_id)
        # Shielded: a shutdown cancelled halfway leaves the kernel manager in a state it
        # cannot clean up.
        shutdown = asyncio.ensure_future(_shutdown(runner))
        self._releasing.add(shutdown)
        shutdown.add_done_callback(self._releasing.discard)
        await asyncio.shield(shutdown)

    def kernel_ended(self, kernel_id: str) -> None:
        """A kernel was shut down outside the daemon (a person, in the Running panel): the
        notebook session it stood for ends; an agent session's idle kernel is dropped (its
        next run gets a new one, its REPL restored). A running cell sees the death itself."""
        found = [lv for lv in self.registry.live.values() if lv.record.kernel_id == kernel_id]
        live = found[0] if found else None
        if live is None or live.state.terminal:
            return
        if not live.record.is_agent:
            self.tokens.revoke(kernel_id)
            self.lifecycle.change(live.record, SessionState.DONE, reason="its kernel was shut down")
            return
        runner = live.runner
        if runner is None or runner.kernel_id != kernel_id or runner.busy:
            return
        self.events.emit(
            live.record, EventKind.KERNEL, {"event": "gone", "detail": "shut down by a person"}
        )
        live.restore_reason = "Your kernel was shut down by a person and a new one was started."
        self.spawn(self.release(live), f"gone-{live.id}")
        live.record.update(kernel_id=None)

    # -- cells of the daemon's own, replacing a kernel -----------------------------------
    async def run_silent(
        self, live: LiveSession, code: str, timeout: float | None = None
    ) -> CellResult:
        """A cell of the daemon's own (a gate, a spill) in the session's kernel, stopped after
        `timeout` seconds (None: `cell_timeout`, as an agent's cell): not recorded as a cell; a
        kernel it kills is replaced as for an agent's cell."""
        runner = live.runner
        if runner is None:
            raise PrimeError("the session has no kernel")
        result = await runner.execute(
            code,
            silent=True,
            timeout=self.cell_timeout if timeout is None else timeout,
            interrupt_grace=self.interrupt_grace,
        )
        if result.status in ("died", "killed"):
            await self.replace(live, result)
        return result

    async def replace(self, live: LiveSession, result: CellResult) -> None:
        """The kernel died or would not stop: restart it and restore the REPL, or fail."""
        runner = live.runner
        assert runner is not None
        restarts = int(live.record.options.get("kernel_restarts", 0)) + 1
        live.record.update(options={**live.record.options, "kernel_restarts": restarts})
        event = "died" if result.status == "died" else "killed"
        detail = result.exit or "did not stop after an interrupt"
        self.events.emit(live.record, EventKind.KERNEL, {"event": event, "detail": detail})
        if restarts > self.max_kernel_restarts:
            raise PrimeError(
                f"the session's kernel {event} ({detail}) {restarts} times; the limit is "
                f"{self.max_kernel_restarts} (c.KernelCustody.max_kernel_restarts)"
            )
        if runner.launcher.restartable(runner.kernel_id):
            await runner.restart(timeout=self.kernel_start_timeout)
            self._started(runner)
        else:  # shut down by a person (the Running panel), or remote: a new kernel, a new id
            await self.release(live)
            await self.attach(live)
        self.events.emit(
            live.record, EventKind.KERNEL, {"event": "restarted", "detail": "a fresh kernel"}
        )
        why = (
            f"Your kernel {'died' if event == 'died' else 'was killed'} ({detail}) and a new "
            "one was started."
        )
        await self.snapshots.restore(live, why)


async def _shutdown(runner: KernelRunner) -> None:
    if runner.busy:
        await runner.terminate(grace=1.0)  # a cell that ignores interrupts: stop it hard
    await runner.stop()
    with contextlib.suppress(Exception):
        await runner.launcher.shutdown(runner.kernel_id)
