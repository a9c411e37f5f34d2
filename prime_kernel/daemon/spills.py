"""Garbage collection of REPL values (L2): spilling big variables to disk, and recording it.

In a REPL, `gc()` lists the variables by size and `gc(drop=...)`, `gc(spill=...)` free them
(prime_kernel/kernel/memory.py says exactly how a spilled variable behaves). A spilled value is
a blob of the store that only the session that spilled it may read back (the `spills` table).

The daemon spills on its own, at the two moments memory matters: when a session's conversation
is compacted (a long session has usually piled up intermediate values by then) and before an
idle session is passivated (so that its snapshot stays small; Prime Agent prunes values over
16 MiB and caps snapshots at 256 MiB). Variables of at least `spill_threshold` bytes go to
disk, and the model is told which, at its next turn.

`Spills` was called `Collector` (a word that also named the capture of a cell's outputs); its
settings keep working as `c.Collector.<trait>` for one release (daemon/moved.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from traitlets import Bool, Int
from traitlets.config import LoggingConfigurable

from ..protocol.errors import NotFound
from ..protocol.events import EventKind
from . import observation
from .kernels import CellResult
from .moved import relocate
from .session import LiveSession
from .shared import Shared

MARKER = "PRIME_GC "
MiB = 1024 * 1024


# The settings of `Collector`, this class's old name.
MOVED = {
    name: "Spills"
    for name in ("spill_threshold", "snapshot_cap", "spill_at_compaction", "spill_at_passivation")
}


class Spills(LoggingConfigurable):
    """Spills big REPL values to disk and serves them back. Configure as `c.Spills.<trait>`."""

    spill_threshold = Int(
        16 * MiB,
        min=0,
        config=True,
        help="Variables of at least this many bytes are spilled to disk (they reload on first "
        "use) at a compaction and before passivation; 0: never automatically.",
    )
    snapshot_cap = Int(
        256 * MiB,
        min=0,
        config=True,
        help="Most bytes of values one REPL snapshot holds; variables beyond it are named as "
        "skipped (spill them). 0: no cap.",
    )
    spill_at_compaction = Bool(True, config=True, help="Spill big variables at a compaction.")
    spill_at_passivation = Bool(
        True, config=True, help="Spill big variables before a session is passivated."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        run_silent: Callable[[LiveSession, str], Awaitable[CellResult]],
        **kwargs: Any,
    ) -> None:
        # Its own keyword arguments have the same names under both class names: only the
        # config moves (the parent's, unless one is given).
        kwargs["parent"] = shared.parent
        moved = relocate("Collector", MOVED, kwargs, arguments=False)
        super().__init__(**kwargs)
        for note in moved:
            self.log.warning(note)
        self.store = shared.store
        self.events = shared.events
        # A cell of the daemon's own in the session's kernel, with the cell timeout.
        self.run_silent = run_silent

    # -- automatic spills -------------------------------------------------------------------------
    async def auto_spill(self, live: LiveSession, reason: str) -> list[dict[str, Any]]:
        """Spill the session's variables over the threshold (`reason`: "compaction" or
        "passivation"); tell the model. What was spilled."""
        enabled = self.spill_at_compaction if reason == "compaction" else self.spill_at_passivation
        if not enabled or not self.spill_threshold or live.runner is None:
            return []
        code = (
            "import prime_kernel.kernel.memory as __pm\n"
            f"__pm.auto_spill({self.spill_threshold})\ndel __pm"
        )
        cell = await self.run_silent(live, code)
        report = observation.report(cell.outputs, cell.status, MARKER)
        if report is None or not (report.get("spilled") or report.get("failed")):
            return []
        spilled = list(report.get("spilled") or [])
        failed = dict(report.get("failed") or {})
        self.events.emit(
            live.record,
            EventKind.GC,
            {"reason": reason, "dropped": [], "spilled": spilled, "failed": failed},
        )
        if live.record.is_agent:
            live.notes.append(self._note(reason, spilled, failed))
        return spilled

    def _note(self, reason: str, spilled: list[dict[str, Any]], failed: dict[str, str]) -> str:
        """What the model is told of an automatic spill."""
        parts = []
        if spilled:
            names = ", ".join(f"{s['name']} ({_mb(s['size'])}, {s.get('type')})" for s in spilled)
            parts.append(
                f"To save memory ({reason}), variables of {_mb(self.spill_threshold)} or more "
                f"were spilled to disk: {names}. Each reloads by itself on first use; gc() "
                "lists your variables by size, gc(drop=[...]) deletes them."
            )
        if failed:
            why = "; ".join(f"{k}: {v}" for k, v in failed.items())
            parts.append(f"Big variables that could not be spilled: {why}.")
        return "[" + " ".join(parts) + "]"

    # -- gc() in a REPL ---------------------------------------------------------------------------
    def record_spill(self, caller: LiveSession, blob_id: str, name: str, size: int) -> None:
        self.store.record_spill(blob_id, caller.id, name, size)

    def requested(self, caller: LiveSession, body: dict[str, Any]) -> dict[str, Any]:
        """What gc(drop=..., spill=...) did, as the REPL reports it (a `gc` event)."""
        data = {"reason": "requested", "dropped": body["dropped"], "spilled": body["spilled"]}
        self.events.emit(caller.record, EventKind.GC, data)
        return {"recorded": True}

    async def spilled_bytes(self, caller: LiveSession, blob_id: str) -> bytes:
        """A value the calling session spilled (NotFound for any other blob)."""
        if await self.store.spill_owner(blob_id) != caller.id or not self.store.has_blob(blob_id):
            raise NotFound(f"no value {blob_id} spilled by session {caller.id}")
        return await self.store.get_blob(blob_id)


def _mb(size: float) -> str:
    return f"{size / MiB:.1f} MiB"
