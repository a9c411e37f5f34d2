"""Records and trajectories read straight from a store that no daemon holds.

A running daemon holds its store in SQLite's EXCLUSIVE mode; with none running, the read-only
commands (`sessions`, `show`, `export`, and the state checks of `send` and `cancel`) open it
here instead of building a `Daemon`, whose imports (jupyter_client, the harness) take seconds.
The JSON is the daemon's REST JSON (`Daemon.session_json`, `Daemon.list_sessions`), built from
the same registry and accounting; no kernel runs, so `kernel_alive` is always false, and no
session is RUNNING, ADMITTED or IDLE whatever a stopped daemon left in its record
(`recovery.unattended`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..daemon.accounting import Accounting
from ..daemon.events import EventLog
from ..daemon.goals import Goals
from ..daemon.listing import BRIEF_CHARS, Listing
from ..daemon.records import SessionRecord
from ..daemon.recovery import unattended
from ..daemon.registry import SessionRegistry
from ..daemon.schedules import Schedule, listing
from ..daemon.store import SqliteStore
from ..protocol.requests import SessionFilter
from ..util.redact import Scrubber


def _read_only(session_id: str, fields: dict[str, Any]) -> None:
    raise RuntimeError(f"a store read without a daemon cannot change session {session_id}")


class StoreReader:
    """A read-only view of the store in `directory` (ROOT/.prime)."""

    # Not exclusive: a server starting meanwhile waits for these few reads, not for us.
    exclusive = False

    def __init__(self, directory: Path) -> None:
        self.store = SqliteStore(directory, exclusive=self.exclusive)
        self.store.open()
        # What each session is now, not what a daemon that stopped left in its record: see
        # `unattended` (the reason for each session shown otherwise, by id).
        self.unattended: dict[str, str] = {}
        rows = self.store.load_sessions()
        for row in rows:
            now = unattended(SessionRecord.from_row(row))
            if now is not None:
                row["state"] = now[0].value
                self.unattended[row["id"]] = now[1]
        self.registry = SessionRegistry()
        self.registry.load(rows, self._sink())
        self.accounting = Accounting(self.registry)
        # No kernel runs without a daemon; names were cut to the daemon's limit when stored.
        self.listing = Listing(
            self.registry, self.accounting, lambda _: False, lambda: BRIEF_CHARS, self.store
        )

    def _sink(self) -> Any:
        return _read_only

    def close(self) -> None:
        asyncio.run(self.store.close())

    def session_json(self, session_id: str) -> dict[str, Any]:
        return self.listing.session_json(session_id)

    def list_sessions(self, filters: SessionFilter) -> dict[str, Any]:
        return self.listing.list_sessions(filters)

    def goal(self, session_id: str) -> dict[str, Any] | None:
        return self.registry.get(session_id).goal

    def schedules(
        self, *, session_id: str | None = None, state: str | None = None
    ) -> list[dict[str, Any]]:
        rows = self.store.load_schedules()
        for row in rows:
            row.pop("delivered", None)
        return listing([Schedule(**row) for row in rows], session_id=session_id, state=state)

    def descendant_ids(self, session_id: str) -> list[str]:
        return self.listing.descendant_ids(session_id)

    async def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        return await self.listing.events(session_id, after=after)

    async def context_bytes(self, session_id: str) -> bytes:
        return await self.listing.context_bytes(session_id)


class StoreEditor(StoreReader):
    """The store opened to make, without a daemon, the changes that need none: a session's goal
    (its model reads the goal from the record, in every prompt, whenever it next runs). The
    daemon's own `Goals` makes them, recording its events; the store scrubs what it writes of the
    secrets this process knows (no session token is live with no daemon)."""

    # While it writes, a server starting on the root waits (and it waits for a server's).
    exclusive = True

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        scrubber = Scrubber()
        # The store is the door secrets do not pass (see daemon/store), here as in a daemon.
        self.store.redactor = lambda: scrubber.redactor(())
        self.goals = Goals(self.registry, EventLog(self.store))

    def _sink(self) -> Any:
        return self.store.update_session
