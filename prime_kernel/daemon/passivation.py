"""Passivating IDLE sessions: their REPL snapshotted, their kernel shut down.

`Passivation` shuts an agent's kernel down after it stayed IDLE for `idle_timeout` seconds
(it becomes INACTIVE) once `Snapshots` (snapshots.py) saved its REPL; a message revives it.
The time counts from the session's last use: a person's cell in its REPL starts it again
(`touch`), so co-working keeps the kernel up. Before the snapshot, big variables are spilled
to disk (`before_save`, see spills.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from traitlets import Float
from traitlets.config import LoggingConfigurable

from ..protocol.states import SessionState
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared
from .snapshots import Snapshots

log = logging.getLogger(__name__)


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
        shared: Shared,
        snapshots: Snapshots,
        release_kernel: Callable[[LiveSession], Awaitable[None]],
        before_save: Callable[[LiveSession], Awaitable[Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.lifecycle = shared.lifecycle
        self.before_save = before_save
        self.snapshots = snapshots
        self.release_kernel = release_kernel
        self.spawn = shared.spawn
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
