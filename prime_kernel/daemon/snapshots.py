"""REPL snapshots: a session's REPL namespace saved to a blob, and put back in a new kernel.

`Snapshots` saves a session's REPL namespace to a blob (a silent cell runs the kernel side,
kernel/snapshot.py, which pickles what it can and names what it cannot) and restores the latest
one into a new kernel. The daemon takes one when an IDLE session is passivated (passivation.py),
at turn boundaries while that is cheap, and before a clean stop; it restores one when an
INACTIVE session is revived, when a kernel died or was killed, and when a session resumes after
a restart. The snapshot's blob id lives in the trajectory (a `snapshot` event), so nothing about
it is held only in memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..protocol.errors import NotFound
from ..protocol.events import EventKind
from .events import EventLog
from .kernels import CellResult
from .observation import render, report
from .session import LiveSession
from .store import Store

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


def _report(result: CellResult) -> dict[str, Any] | None:
    return report(result.outputs, result.status, MARKER)


def _text(result: CellResult) -> str:
    return render(result.outputs, status=result.status, limit=2000, timeout=0, exit=result.exit)
