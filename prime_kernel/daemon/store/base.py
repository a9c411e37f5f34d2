"""What the daemon needs of a database (see the package docstring for the contract)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from ...util.redact import Redactor

# Who has read a message: the model (shown at its next turn) and `recv()` in the REPL read
# independently, so each reader gets every message once.
Reader = Literal["model", "recv"]


_NOTHING = Redactor([])


class Store(abc.ABC):
    """A daemon's durable record. Implementations: `SqliteStore`.

    The store is the door secrets do not pass: every text it is given to write — a record's
    fields, an event, a conversation, a message, a schedule, a spilled name, the strings in a
    blob — is scrubbed with `redactor()` (the daemon's secrets, current) before it is written,
    and the write methods return what they wrote, so that what the daemon keeps in memory is
    what the store holds. Scrubbed once, here: no reader (REST, export, prompt) sees a secret.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.blob_dir = self.directory / "blobs"
        # Temporaries of atomic writes under the root (blobs, exports): see `renamed_into`.
        self.tmp_dir = self.directory / "tmp"
        # The secrets to scrub, as a Redactor (the daemon sets it: its secrets change).
        self.redactor: Callable[[], Redactor] = lambda: _NOTHING

    # -- lifecycle ----------------------------------------------------------------------------
    @abc.abstractmethod
    def open(self) -> None:
        """Open (creating or migrating) the store and claim it for this daemon alone."""

    @abc.abstractmethod
    async def flush(self, timeout: float | None = None) -> None:
        """Return once every write enqueued so far is durable (Unavailable if it cannot
        be made so within `timeout`)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Flush and release the store."""

    # -- sessions -----------------------------------------------------------------------------
    @abc.abstractmethod
    def load_sessions(self) -> list[dict[str, Any]]:
        """Every session row (at start, before the daemon serves; the registry caches them)."""

    @abc.abstractmethod
    def insert_session(self, row: dict[str, Any]) -> dict[str, Any]:
        """Enqueue a new session's row; the row as written (scrubbed)."""

    @abc.abstractmethod
    def update_session(self, session_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Enqueue a change of a session's fields; the fields as written (scrubbed)."""

    # -- events (trajectories) ----------------------------------------------------------------
    @abc.abstractmethod
    def append_event(self, session_id: str, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Enqueue an event; returns it with its `seq` and `ts`."""

    @abc.abstractmethod
    async def events(
        self,
        session_id: str,
        *,
        after: int = 0,
        kinds: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    async def last_event(self, session_id: str, kind: str) -> dict[str, Any] | None: ...

    # -- conversations (what the model is shown, kept so a session can resume) ----------------
    @abc.abstractmethod
    def append_conversation(
        self, session_id: str, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Enqueue messages; the messages as written (scrubbed)."""

    @abc.abstractmethod
    def replace_conversation(
        self, session_id: str, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    async def conversation(self, session_id: str) -> list[dict[str, Any]]: ...

    # -- mailboxes ----------------------------------------------------------------------------
    @abc.abstractmethod
    def put_message(self, message: dict[str, Any]) -> dict[str, Any]: ...

    @abc.abstractmethod
    def mark_read(self, message_ids: Iterable[str], reader: Reader) -> None: ...

    @abc.abstractmethod
    async def unread(
        self, to_id: str, reader: Reader, limit: int | None = None
    ) -> list[dict[str, Any]]: ...

    @abc.abstractmethod
    async def unread_recipients(self, reader: Reader) -> set[str]:
        """The sessions with mail `reader` has not read."""

    # -- schedules (heartbeats: a tick is claimed here before it is delivered) -----------------
    @abc.abstractmethod
    def load_schedules(self) -> list[dict[str, Any]]:
        """Every schedule row (at start), each with `delivered`: whether the message of the
        tick it claimed last (`pending`) is in the mailbox."""

    @abc.abstractmethod
    def insert_schedule(self, row: dict[str, Any]) -> dict[str, Any]: ...

    @abc.abstractmethod
    def update_schedule(self, schedule_id: str, fields: dict[str, Any]) -> dict[str, Any]: ...

    # -- spilled REPL values (blobs only the session that spilled them may read back) ---------
    @abc.abstractmethod
    def record_spill(self, blob_id: str, session_id: str, name: str, size: int) -> None: ...

    @abc.abstractmethod
    async def spill_owner(self, blob_id: str) -> str | None: ...

    # -- kernels (so a restarted daemon can find and stop what a dead one left running) --------
    @abc.abstractmethod
    def record_kernel(self, kernel_id: str, fields: dict[str, Any]) -> None:
        """Set `fields` of the kernel's record (made on the first call); others stay."""

    @abc.abstractmethod
    def forget_kernel(self, kernel_id: str) -> None: ...

    @abc.abstractmethod
    async def kernels(self) -> list[dict[str, Any]]: ...

    # -- blobs (pickled contexts, answers and REPL snapshots travel by file) -------------------
    @abc.abstractmethod
    async def put_blob(self, data: bytes | bytearray) -> str:
        """Store `data` (a pickle, its strings scrubbed first); its id. The event loop never
        waits for it: large values are scrubbed and written elsewhere."""

    @abc.abstractmethod
    async def get_blob(self, blob_id: str) -> bytes: ...

    def blob_path(self, blob_id: str) -> Path:
        if not isinstance(blob_id, str) or not blob_id.isalnum():
            raise ValueError(f"invalid blob id {blob_id!r}")
        return self.blob_dir / f"{blob_id}.pkl"

    def has_blob(self, blob_id: object) -> bool:
        return isinstance(blob_id, str) and blob_id.isalnum() and self.blob_path(blob_id).exists()
