"""IDLE and INACTIVE sessions: waking them for a turn, passivating and reviving them.

An agent session that stays IDLE longer than `Daemon.idle_timeout` is passivated: a silent
cell pickles what it can of its REPL namespace to a blob (and names what it could not), its
kernel is shut down, and it becomes INACTIVE. A message revives it: a new kernel, the snapshot
restored into it, and a turn in which the model is told what came back and what did not.
The snapshot's blob id lives in the trajectory (a `snapshot` event), so nothing about it is
held only in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any

from .errors import NotFound
from .states import SessionState

if TYPE_CHECKING:
    from .daemon import Daemon, LiveSession

SAVE_CODE = "import prime_kernel.kernel.snapshot as __ps\n__ps.save()\ndel __ps"
RESTORE_CODE = "import prime_kernel.kernel.snapshot as __ps\n__ps.restore()\ndel __ps"
MARKER = "PRIME_SNAPSHOT "


class Passivation:
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self._locks: dict[str, asyncio.Lock] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self._locks.setdefault(session_id, asyncio.Lock())

    # -- state changes (a daemon listener) ---------------------------------------------------
    def on_event(self, note: dict[str, Any]) -> None:
        if note.get("kind") != "state":
            return
        live = self.daemon.live.get(note["session_id"])
        if live is None or live.record["kind"] != "agent":
            return
        timer = self._timers.pop(live.id, None)
        if timer is not None:
            timer.cancel()
        if live.state.terminal:
            self._locks.pop(live.id, None)
        if live.state != SessionState.IDLE:
            return
        loop = asyncio.get_running_loop()
        # Mail that came in after the last turn took its news: wake again, once the run that
        # is now settling has finished.
        loop.call_soon(self._wake_if_mail, live)
        task = loop.create_task(self._idle_timer(live), name=f"idle-{live.id}")
        self._timers[live.id] = task
        self.daemon._background.add(task)
        task.add_done_callback(self.daemon._background.discard)

    def _wake_if_mail(self, live: LiveSession) -> None:
        if live.state == SessionState.IDLE and self.daemon.mailbox.has_unread(live.id):
            self.wake(live)

    async def _idle_timer(self, live: LiveSession) -> None:
        await asyncio.sleep(self.daemon.idle_timeout)
        self._timers.pop(live.id, None)
        try:
            await self.passivate(live)
        except Exception:
            self.daemon.log.exception("could not passivate session %s", live.id)

    # -- waking ----------------------------------------------------------------------------
    def wake(self, live: LiveSession) -> None:
        """Start another run of an IDLE or INACTIVE agent's loop (a message arrived)."""
        if live.record["kind"] != "agent" or live.state not in (
            SessionState.IDLE,
            SessionState.INACTIVE,
        ):
            return
        if live.task is not None and not live.task.done():
            return  # already woken; the turn to come reads all unread mail
        # The answer a persistent session gave belongs to the request it answered; whoever
        # waits on it now waits for the answer to this turn.
        live.answered = False
        live.settled.clear()
        if live.record.get("answer_blob") or live.record.get("answer_repr") is not None:
            live.record.update(answer_repr=None, answer_blob=None)
            self.daemon.store.update_session(live.id, answer_repr=None, answer_blob=None)
        live.task = asyncio.create_task(self._turn(live), name=f"session-{live.id}")

    async def _turn(self, live: LiveSession) -> None:
        async with self._lock(live.id):
            pass  # a passivation in progress finishes first
        await self.daemon._run(live)

    # -- passivating -----------------------------------------------------------------------
    async def passivate(self, live: LiveSession) -> bool:
        """Snapshot an IDLE session's REPL, shut its kernel down, make it INACTIVE."""
        daemon = self.daemon
        async with self._lock(live.id):
            if not self._quiet(live) or live.runner is None:
                return False
            result = await live.runner.execute(SAVE_CODE, silent=True, timeout=daemon.cell_timeout)
            info = _report(result.outputs)
            if result.status != "ok" or info is None:
                daemon.record(
                    live, "error", {"message": f"could not snapshot the REPL: {_text(result)}"}
                )
                return False
            if not self._quiet(live):
                return False  # a message woke it meanwhile; keep the kernel
            daemon.record(live, "snapshot", info)
            await daemon._release_kernel(live)
            live.record["kernel_id"] = None
            daemon.store.update_session(live.id, kernel_id=None)
            skipped = ", ".join(info["skipped"]) or "nothing"
            daemon._set_state(
                live,
                SessionState.INACTIVE,
                reason=f"idle for {daemon.idle_timeout:g} s; REPL saved "
                f"({len(info['saved'])} names; not saved: {skipped})",
            )
            return True

    def _quiet(self, live: LiveSession) -> bool:
        return live.state == SessionState.IDLE and (live.task is None or live.task.done())

    # -- reviving --------------------------------------------------------------------------
    def snapshot_blob(self, session_id: str) -> str | None:
        events = self.daemon.store.events(session_id, kinds=["snapshot"])
        return str(events[-1]["data"]["blob_id"]) if events else None

    def snapshot_bytes(self, session_id: str) -> bytes:
        blob = self.snapshot_blob(session_id)
        if blob is None:
            raise NotFound(f"session {session_id} has no REPL snapshot")
        return self.daemon.store.get_blob(blob)

    async def restore(self, live: LiveSession) -> None:
        """Called once a revived session has its new kernel: put its REPL back."""
        if live.state != SessionState.INACTIVE or live.runner is None:
            return
        if self.snapshot_blob(live.id) is None:
            return
        daemon = self.daemon
        result = await live.runner.execute(RESTORE_CODE, silent=True, timeout=daemon.cell_timeout)
        info = _report(result.outputs)
        if result.status != "ok" or info is None:
            text = f"could not restore the REPL snapshot: {_text(result)}"
            daemon.record(live, "error", {"message": text})
            live.news.append(f"[Your session was inactive and its REPL was restarted; {text}]")
            return
        daemon.record(live, "restore", info)
        failed = "; ".join(f"{k} ({v})" for k, v in info["failed"].items())
        skipped = "; ".join(f"{k} ({v})" for k, v in info["skipped"].items())
        note = (
            "[Your session was inactive: its kernel was shut down and a new one started. "
            f"Restored REPL variables: {', '.join(info['restored']) or 'none'}."
        )
        if skipped:
            note += f" Not saved: {skipped}."
        if failed:
            note += f" Could not restore: {failed}."
        live.news.append(note + "]")


def _report(outputs: list[dict[str, Any]]) -> dict[str, Any] | None:
    for out in outputs:
        if out.get("output_type") != "stream":
            continue
        for line in str(out.get("text", "")).splitlines():
            if line.startswith(MARKER):
                with contextlib.suppress(ValueError):
                    return dict(json.loads(line[len(MARKER) :]))
    return None


def _text(result: Any) -> str:
    from .observation import render

    return render(result.outputs, status=result.status, limit=2000, timeout=0)
