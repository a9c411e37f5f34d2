"""The default store: SQLite in WAL mode under `<root>/.prime/`, blobs in files beside it.

One thread owns the only connection (writer.py): every write is queued to it and committed in
order, and reads queue behind the writes before them. This module is what the daemon asks of
the store, as SQL on that thread; the tables are in schema.py.

While a daemon runs, it holds the database in SQLite's EXCLUSIVE locking mode: no other process
— an agent's code that opens `.prime/prime.sqlite3` included — can read or lock it, so nothing
outside the daemon can stall its writes. A second daemon on the same root is refused at `open()`.
The folder and every file in it are private to the user (0700 / 0600).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...protocol.errors import InsufficientStorage, StoreDamaged
from ...util.files import atomic_write, new_id, private_dir
from ...util.redact import Redactor
from . import repair
from .base import Reader, Store
from .schema import clean_text, decode_row, dumps, encode_row, event_row, migrate
from .writer import Writer, disk_full

_READ_COLUMN = {"model": "shown_ts", "recv": "read_ts"}


class SqliteStore(Store):
    def __init__(self, directory: str | Path, *, exclusive: bool = True) -> None:
        super().__init__(directory)
        self.path = self.directory / "prime.sqlite3"
        self.writer = Writer(self.path, exclusive=exclusive, setup=self._setup)
        self._seq = 0
        self._seq_lock = threading.Lock()

    @property
    def full(self) -> bool:
        """Whether commits fail for want of disk space (DiskSpace asks)."""
        return self.writer.full

    # -- lifecycle ----------------------------------------------------------------------------
    def open(self) -> None:
        private_dir(self.directory)
        private_dir(self.blob_dir)
        # A damaged file is refused now, with the command that repairs it, rather than found
        # out later by a write that cannot commit.
        problem = repair.check(self.path)
        if problem is not None:
            raise StoreDamaged(repair.damaged(self.path, problem))
        self._seq = self.writer.start()

    def _setup(self, db: sqlite3.Connection) -> int:
        """On the store thread, opening: the schema brought up to date; the last event's seq."""
        migrate(db, self.path)
        return int(db.execute("SELECT MAX(seq) FROM events").fetchone()[0] or 0)

    async def flush(self, timeout: float | None = None) -> None:
        await self.writer.flush(timeout)

    async def close(self) -> None:
        await self.writer.close()

    # -- sessions -------------------------------------------------------------------------------
    def load_sessions(self) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute("SELECT * FROM sessions ORDER BY created, rowid").fetchall()
            return [decode_row(r) for r in rows]

        return list(self.writer.submit(read).result())

    def insert_session(self, row: dict[str, Any]) -> dict[str, Any]:
        row = self.redactor().value(row)
        values = encode_row(row)
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        sql = f"INSERT INTO sessions ({cols}) VALUES ({marks})"
        self.writer.write(lambda db: db.execute(sql, list(values.values())))
        return row

    def update_session(self, session_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        if not fields:
            return fields
        fields = self.redactor().value(fields)
        values = encode_row(fields)
        sets = ", ".join(f"{k} = ?" for k in values)
        sql = f"UPDATE sessions SET {sets} WHERE id = ?"
        self.writer.write(lambda db: db.execute(sql, [*values.values(), session_id]))
        return fields

    # -- events ---------------------------------------------------------------------------------
    def append_event(self, session_id: str, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        data = self.redactor().value(data)
        with self._seq_lock:
            self._seq += 1
            seq = self._seq
        ts = time.time()

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO events (seq, session_id, ts, kind, data) VALUES (?, ?, ?, ?, ?)",
                (seq, session_id, ts, kind, dumps(data)),
            )

        self.writer.write(write)
        return {"seq": seq, "session_id": session_id, "ts": ts, "kind": kind, "data": data}

    async def events(
        self,
        session_id: str,
        *,
        after: int = 0,
        kinds: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        sql = "SELECT * FROM events WHERE session_id = ? AND seq > ?"
        args: list[Any] = [session_id, after]
        if kinds is not None:
            wanted = list(kinds)
            sql += f" AND kind IN ({', '.join('?' for _ in wanted)})"
            args.extend(wanted)
        sql += " ORDER BY seq"
        if limit:
            sql += " LIMIT ?"
            args.append(limit)

        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            return [event_row(r) for r in db.execute(sql, args).fetchall()]

        return list(await self.writer.read(read))

    async def last_event(self, session_id: str, kind: str) -> dict[str, Any] | None:
        def read(db: sqlite3.Connection) -> dict[str, Any] | None:
            row = db.execute(
                "SELECT * FROM events WHERE session_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1",
                (session_id, kind),
            ).fetchone()
            return event_row(row) if row else None

        found: dict[str, Any] | None = await self.writer.read(read)
        return found

    # -- conversations --------------------------------------------------------------------------
    def append_conversation(
        self, session_id: str, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        if not messages:
            return []
        items = self.redactor().value(list(messages))

        def write(db: sqlite3.Connection) -> None:
            top = db.execute(
                "SELECT COALESCE(MAX(pos), -1) FROM conversation WHERE session_id = ?",
                (session_id,),
            ).fetchone()[0]
            db.executemany(
                "INSERT INTO conversation (session_id, pos, message) VALUES (?, ?, ?)",
                [(session_id, top + 1 + i, dumps(m)) for i, m in enumerate(items)],
            )

        self.writer.write(write)
        return items

    def replace_conversation(
        self, session_id: str, messages: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        items = self.redactor().value(list(messages))

        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM conversation WHERE session_id = ?", (session_id,))
            db.executemany(
                "INSERT INTO conversation (session_id, pos, message) VALUES (?, ?, ?)",
                [(session_id, i, dumps(m)) for i, m in enumerate(items)],
            )

        self.writer.write(write)
        return items

    async def conversation(self, session_id: str) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(
                "SELECT message FROM conversation WHERE session_id = ? ORDER BY pos",
                (session_id,),
            ).fetchall()
            return [json.loads(r[0]) for r in rows]

        return list(await self.writer.read(read))

    # -- mailboxes ------------------------------------------------------------------------------
    def put_message(self, message: dict[str, Any]) -> dict[str, Any]:
        message = self.redactor().value(message)
        row = {k: clean_text(v) if isinstance(v, str) else v for k, v in message.items()}
        self.writer.write(
            lambda db: db.execute(
                "INSERT INTO mailbox (id, to_id, from_id, sender, message, ts) "
                "VALUES (:id, :to_id, :from_id, :sender, :message, :ts)",
                row,
            )
        )
        return message

    def mark_read(self, message_ids: Iterable[str], reader: Reader) -> None:
        ids = list(message_ids)
        if not ids:
            return
        column = _READ_COLUMN[reader]
        sql = f"UPDATE mailbox SET {column} = ? WHERE id IN ({', '.join('?' for _ in ids)})"
        now = time.time()
        self.writer.write(lambda db: db.execute(sql, [now, *ids]))

    async def unread(
        self, to_id: str, reader: Reader, limit: int | None = None
    ) -> list[dict[str, Any]]:
        column = _READ_COLUMN[reader]
        sql = f"SELECT * FROM mailbox WHERE to_id = ? AND {column} IS NULL ORDER BY ts, rowid"
        args: list[Any] = [to_id]
        if limit:
            sql += " LIMIT ?"
            args.append(limit)

        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            return [dict(r) for r in db.execute(sql, args).fetchall()]

        return list(await self.writer.read(read))

    async def unread_recipients(self, reader: Reader) -> set[str]:
        sql = f"SELECT DISTINCT to_id FROM mailbox WHERE {_READ_COLUMN[reader]} IS NULL"

        def read(db: sqlite3.Connection) -> set[str]:
            return {r[0] for r in db.execute(sql).fetchall()}

        return set(await self.writer.read(read))

    # -- schedules ------------------------------------------------------------------------------
    def load_schedules(self) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            # `delivered`: whether the tick claimed last (`pending`) reached the mailbox.
            rows = db.execute(
                "SELECT s.*, EXISTS(SELECT 1 FROM mailbox m WHERE m.id = "
                "json_extract(s.pending, '$.message_id')) AS delivered "
                "FROM schedules s ORDER BY created, rowid"
            ).fetchall()
            return [decode_row(r) for r in rows]

        return list(self.writer.submit(read).result())

    def insert_schedule(self, row: dict[str, Any]) -> dict[str, Any]:
        row = self.redactor().value(row)
        values = encode_row(row)
        sql = (
            f"INSERT INTO schedules ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})"
        )
        self.writer.write(lambda db: db.execute(sql, list(values.values())))
        return row

    def update_schedule(self, schedule_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        if not fields:
            return fields
        fields = self.redactor().value(fields)
        values = encode_row(fields)
        sql = f"UPDATE schedules SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?"
        self.writer.write(lambda db: db.execute(sql, [*values.values(), schedule_id]))
        return fields

    # -- spilled values -------------------------------------------------------------------------
    def record_spill(self, blob_id: str, session_id: str, name: str, size: int) -> None:
        row = (blob_id, session_id, clean_text(self.redactor().text(name)), size, time.time())
        self.writer.write(
            lambda db: db.execute(
                "INSERT INTO spills (blob_id, session_id, name, size, created) "
                "VALUES (?, ?, ?, ?, ?)",
                row,
            )
        )

    async def spill_owner(self, blob_id: str) -> str | None:
        def read(db: sqlite3.Connection) -> str | None:
            row = db.execute(
                "SELECT session_id FROM spills WHERE blob_id = ?", (blob_id,)
            ).fetchone()
            return str(row[0]) if row else None

        owner: str | None = await self.writer.read(read)
        return owner

    # -- kernels --------------------------------------------------------------------------------
    def record_kernel(self, kernel_id: str, fields: dict[str, Any]) -> None:
        row = {"kernel_id": kernel_id, "started": time.time(), **fields}
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        # An upsert: a later call (the session the kernel went to) keeps what an earlier one
        # recorded (its pid, connection file or gateway, which recovery needs).
        update = ", ".join(f"{c} = excluded.{c}" for c in fields) or "kernel_id = kernel_id"
        sql = (
            f"INSERT INTO kernels ({cols}) VALUES ({marks}) "
            f"ON CONFLICT(kernel_id) DO UPDATE SET {update}"
        )
        self.writer.write(lambda db: db.execute(sql, list(row.values())))

    def forget_kernel(self, kernel_id: str) -> None:
        self.writer.write(
            lambda db: db.execute("DELETE FROM kernels WHERE kernel_id = ?", (kernel_id,))
        )

    async def kernels(self) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            return [dict(r) for r in db.execute("SELECT * FROM kernels").fetchall()]

        return list(await self.writer.read(read))

    # -- blobs ----------------------------------------------------------------------------------
    async def put_blob(self, data: bytes | bytearray) -> str:
        blob_id = new_id("b")
        path = self.blob_path(blob_id)
        redactor = self.redactor()
        try:
            await asyncio.to_thread(_write_private, path, data, self.tmp_dir, redactor)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise InsufficientStorage(disk_full(self.path, e)) from None
            raise
        return blob_id

    async def get_blob(self, blob_id: str) -> bytes:
        return await asyncio.to_thread(self.blob_path(blob_id).read_bytes)


def _write_private(path: Path, data: bytes | bytearray, tmp_dir: Path, redactor: Redactor) -> None:
    atomic_write(path, redactor.pickle(data), tmp_dir=tmp_dir)
    os.chmod(path, 0o600)
