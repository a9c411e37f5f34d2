"""REPL snapshots, and passivating IDLE sessions.

`Snapshots` saves a session's REPL namespace to a blob (a silent cell pickles what it can and
names what it cannot) and restores the latest one into a new kernel. The daemon takes one when
an IDLE session is passivated, at turn boundaries while that is cheap, and before a clean stop;
it restores one when an INACTIVE session is revived, when a kernel died or was killed, and when
a session resumes after a restart. The snapshot's blob id lives in the trajectory (a `snapshot`
event), so nothing about it is held only in memory.

`Passivation` shuts an agent's kernel down after it stayed IDLE for `idle_timeout` seconds
(it becomes INACTIVE); a message revives it. The time counts from the session's last use:
a person's cell in its REPL starts it again (`touch`), so co-working keeps the kernel up.
Before the snapshot, big variables are spilled to disk (`before_save`, see spills.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from traitlets import Float
from traitlets.config import LoggingConfigurable

from ..protocol.errors import NotFound
from ..protocol.events import EventKind
from ..protocol.states import SessionState
from .events import EventLog
from .kernels import CellResult
from .lifecycle import Lifecycle
from .observation import render, report
from .records import SessionRecord
from .session import LiveSession
from .store import Store

log = logging.getLogger(__name__)

SAVE_CODE = "import prime_kernel.kernel.snapshot as __ps\n__ps.save({cap})\ndel __ps"
RESTORE_CODE = "import prime_kernel.kernel.snapshot as __ps\n__ps.restore()\ndel __ps"
MARKER = "PRIME_SNAPSHOT "


class Snapshots:
    def __init__(
        self,
        store: Store,
        events: EventLog,
        timeout: Callable[[], float],
        cap: Callable[[], int] = lambda: 0,
    ) -> None:
        self.store = store
        self.events = events
        self.timeout = timeout
        self.cap = cap

    async def save(self, live: LiveSession, reason: str) -> dict[str, Any] | None:
        """Snapshot the session's REPL; the report (or None, with an `error` event)."""
        if live.runner is None:
            return None
        start = time.monotonic()
        code = SAVE_CODE.format(cap=int(self.cap()))
        result = await live.runner.execute(code, silent=True, timeout=self.timeout())
        info = _report(result)
        if info is None:
            self.events.emit(
                live.record,
                EventKind.ERROR,
                {"message": f"could not snapshot the REPL: {_text(result)}"},
            )
            return None
        live.last_snapshot = time.time()
        live.snapshot_cost = time.monotonic() - start
        self.events.emit(live.record, EventKind.SNAPSHOT, {**info, "reason": reason})
        return info

    async def latest_blob(self, session_id: str) -> str | None:
        event = await self.store.last_event(session_id, EventKind.SNAPSHOT.value)
        return str(event["data"]["blob_id"]) if event else None

    async def latest_bytes(self, session_id: str) -> bytes:
        blob = await self.latest_blob(session_id)
        if blob is None:
            raise NotFound(f"session {session_id} has no REPL snapshot")
        return await self.store.get_blob(blob)

    async def restore(self, live: LiveSession, why: str) -> dict[str, Any] | None:
        """Put the latest snapshot back into the session's (new) kernel and tell the model what
        came back — and, given the names the REPL had (`live.repl_names`), what was lost."""
        if live.runner is None:
            return None
        if await self.latest_blob(live.id) is None:
            lost = [n for n in live.repl_names if not n.startswith("_")]
            note = f"[{why} Your REPL starts empty: there was no snapshot to restore"
            note += f" (lost: {', '.join(lost)}).]" if lost else ".]"
            live.notes.append(note)
            return None
        result = await live.runner.execute(RESTORE_CODE, silent=True, timeout=self.timeout())
        info = _report(result)
        if info is None:
            text = f"could not restore the REPL snapshot: {_text(result)}"
            self.events.emit(live.record, EventKind.ERROR, {"message": text})
            live.notes.append(f"[{why} {text}]")
            return None
        restored = set(info["restored"])
        lost = sorted(n for n in live.repl_names if n not in restored and not n.startswith("_"))
        self.events.emit(live.record, EventKind.RESTORE, {**info, "reason": why, "lost": lost})
        note = f"[{why} Restored REPL variables: {', '.join(info['restored']) or 'none'}."
        if lost:
            note += f" Lost (defined after the last snapshot): {', '.join(lost)}."
        if info["skipped"]:
            note += " Not saved: " + "; ".join(f"{k} ({v})" for k, v in info["skipped"].items())
            note += "."
        if info["failed"]:
            note += " Could not restore: "
            note += "; ".join(f"{k} ({v})" for k, v in info["failed"].items()) + "."
        live.notes.append(note + "]")
        return info


class Passivation(LoggingConfigurable):
    """Idle timers: an agent IDLE for `idle_timeout` seconds is snapshotted and its kernel shut
    down (INACTIVE). Configure as `c.Passivation.<trait>`."""

    idle_timeout = Float(
        1800.0,
        config=True,
        help="Seconds an IDLE agent session waits before it is passivated (INACTIVE): its "
        "REPL is snapshotted and its kernel shut down until a message revives it.",
    )

    def __init__(
        self,
        lifecycle: Lifecycle,
        snapshots: Snapshots,
        release_kernel: Callable[[LiveSession], Awaitable[None]],
        spawn: Callable[[Coroutine[Any, Any, Any], str], asyncio.Task[Any]],
        before_save: Callable[[LiveSession], Awaitable[Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.lifecycle = lifecycle
        self.before_save = before_save
        self.snapshots = snapshots
        self.release_kernel = release_kernel
        self.spawn = spawn
        self._locks: dict[str, asyncio.Lock] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}

    def lock(self, session_id: str) -> asyncio.Lock:
        """Held while a session is being passivated; a run waits for it."""
        return self._locks.setdefault(session_id, asyncio.Lock())

    # -- effects of state changes --------------------------------------------------------------
    def entered_idle(self, record: SessionRecord, live: LiveSession | None, _: Any) -> None:
        if live is None or not record.is_agent:
            return
        self.cancel_timer(record, live, _)
        self._timers[record.id] = self.spawn(self._idle_timer(live), f"idle-{record.id}")

    def touch(self, record: SessionRecord, live: LiveSession) -> None:
        """The session's REPL was used: its idle time starts again."""
        if record.id in self._timers:
            self.entered_idle(record, live, None)

    def cancel_timer(self, record: SessionRecord, live: LiveSession | None, _: Any) -> None:
        timer = self._timers.pop(record.id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        if record.terminal:
            self._locks.pop(record.id, None)

    async def _idle_timer(self, live: LiveSession) -> None:
        await asyncio.sleep(self.idle_timeout)
        self._timers.pop(live.id, None)
        try:
            await self.passivate(live, f"idle for {self.idle_timeout:g} s")
        except Exception:
            log.exception("could not passivate session %s", live.id)

    # -- passivating ---------------------------------------------------------------------------
    async def passivate(self, live: LiveSession, why: str) -> bool:
        """Snapshot an IDLE session's REPL, shut its kernel down, make it INACTIVE."""
        async with self.lock(live.id):
            if not self._quiet(live) or live.runner is None:
                return False
            if self.before_save is not None:
                await self.before_save(live)
            info = await self.snapshots.save(live, "passivation")
            if info is None or not self._quiet(live):
                return False  # no snapshot, or a message woke it meanwhile: keep the kernel
            await self.release_kernel(live)
            live.record.update(kernel_id=None)
            skipped = ", ".join(info["skipped"]) or "nothing"
            self.lifecycle.change(
                live.record,
                SessionState.INACTIVE,
                reason=f"{why}; REPL saved ({len(info['saved'])} names; not saved: {skipped})",
            )
            return True

    def _quiet(self, live: LiveSession) -> bool:
        return live.state == SessionState.IDLE and (live.task is None or live.task.done())


def _report(result: CellResult) -> dict[str, Any] | None:
    return report(result.outputs, result.status, MARKER)


def _text(result: CellResult) -> str:
    return render(result.outputs, status=result.status, limit=2000, timeout=0, exit=result.exit)
