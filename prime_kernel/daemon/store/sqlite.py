"""The default store: SQLite in WAL mode under `<root>/.prime/`, blobs in files beside it.

One thread owns the only connection. Writes are queued to it and committed in groups (everything
queued when the thread gets to it goes in one transaction), each write in a savepoint so that a
bad one is rolled back alone; reads queue behind the writes before them, so they see them.

While a daemon runs, it holds the database in SQLite's EXCLUSIVE locking mode: no other process
— an agent's code that opens `.prime/prime.sqlite3` included — can read or lock it, so nothing
outside the daemon can stall its writes. A second daemon on the same root is refused at `open()`.
The folder and every file in it are private to the user (0700 / 0600).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ...protocol.errors import Unavailable
from ...util.files import atomic_write, new_id, private_dir
from .base import Reader, Store

log = logging.getLogger(__name__)

SCHEMA_VERSION = 5

# The schema of a new store. Older stores are brought here by MIGRATIONS.
SCHEMA = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    name TEXT,
    prompt TEXT NOT NULL,
    model TEXT,
    state TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'agent',
    parent_id TEXT REFERENCES sessions(id),
    root_id TEXT NOT NULL,
    depth INTEGER NOT NULL DEFAULT 0,
    notebook_path TEXT,
    kernel_id TEXT,
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    error TEXT,
    answer_repr TEXT,
    answer_blob TEXT,
    context_blob TEXT,
    context_type TEXT,
    budget TEXT,
    options TEXT NOT NULL DEFAULT '{}',
    usage TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX sessions_parent ON sessions(parent_id);
CREATE INDEX sessions_root ON sessions(root_id);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX events_session ON events(session_id, seq);
CREATE TABLE mailbox (
    id TEXT PRIMARY KEY,
    to_id TEXT NOT NULL,
    from_id TEXT,
    sender TEXT NOT NULL,
    message TEXT NOT NULL,
    ts REAL NOT NULL,
    read_ts REAL
);
CREATE INDEX mailbox_to ON mailbox(to_id, read_ts, ts);
"""

# Version N -> N+1. A store made before versions were recorded has user_version 0 and the
# tables above: version 1.
MIGRATIONS: dict[int, str] = {
    1: """
    ALTER TABLE mailbox ADD COLUMN shown_ts REAL;
    UPDATE mailbox SET shown_ts = read_ts;
    CREATE INDEX mailbox_shown ON mailbox(to_id, shown_ts, ts);
    CREATE INDEX sessions_state ON sessions(state);
    CREATE TABLE conversation (
        session_id TEXT NOT NULL,
        pos INTEGER NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (session_id, pos)
    );
    CREATE TABLE kernels (
        kernel_id TEXT PRIMARY KEY,
        session_id TEXT,
        pid INTEGER,
        connection_file TEXT,
        started REAL NOT NULL
    );
    """,
    2: """
    ALTER TABLE sessions ADD COLUMN goal TEXT;
    CREATE TABLE schedules (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        target_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        spec TEXT NOT NULL,
        message TEXT NOT NULL,
        created REAL NOT NULL,
        next_ts REAL,
        last_ts REAL,
        ticks INTEGER NOT NULL DEFAULT 0,
        missed INTEGER NOT NULL DEFAULT 0,
        skipped INTEGER NOT NULL DEFAULT 0,
        pending TEXT,
        state TEXT NOT NULL DEFAULT 'active',
        reason TEXT
    );
    CREATE INDEX schedules_state ON schedules(state);
    CREATE TABLE spills (
        blob_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        name TEXT,
        size INTEGER NOT NULL,
        created REAL NOT NULL
    );
    """,
    3: """
    ALTER TABLE kernels ADD COLUMN gateway TEXT;
    """,
    4: """
    ALTER TABLE sessions ADD COLUMN verified TEXT;
    """,
}

JSON_COLUMNS = frozenset({"budget", "options", "usage", "goal", "pending", "verified"})
_READ_COLUMN = {"model": "shown_ts", "recv": "read_ts"}
# Most operations folded into one transaction.
_GROUP = 1000


class _Op:
    """A unit of work for the store thread: `fn(db)`. A write has no `future` (writes are
    committed in groups, unanswered); a read (or, with no `fn`, a flush barrier) answers its
    `future`."""

    __slots__ = ("fn", "future")

    def __init__(
        self,
        fn: Callable[[sqlite3.Connection], Any] | None,
        future: concurrent.futures.Future[Any] | None = None,
    ) -> None:
        self.fn = fn
        self.future = future


class SqliteStore(Store):
    def __init__(self, directory: str | Path, *, exclusive: bool = True) -> None:
        super().__init__(directory)
        self.path = self.directory / "prime.sqlite3"
        self.exclusive = exclusive
        self._queue: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._seq = 0
        self._seq_lock = threading.Lock()
        # Why the last commit failed, while commits are failing (None when healthy).
        self.failure: str | None = None

    # -- lifecycle ----------------------------------------------------------------------------
    def open(self) -> None:
        private_dir(self.directory)
        private_dir(self.blob_dir)
        ready: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="prime-store", daemon=True
        )
        self._thread.start()
        self._seq = ready.result()

    async def flush(self, timeout: float | None = None) -> None:
        future = self._submit(None)
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except asyncio.TimeoutError:
            raise Unavailable(
                f"the store at {self.path} cannot be written ({self.failure or 'busy'}); "
                "nothing was acknowledged"
            ) from None

    async def close(self) -> None:
        if self._thread is None:
            return
        await self.flush()
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)
        self._thread = None

    def _connect(self) -> sqlite3.Connection:
        new = not self.path.exists()
        db = sqlite3.connect(self.path, isolation_level=None, timeout=0.2)
        db.row_factory = sqlite3.Row
        if new:
            self.path.chmod(0o600)
        try:
            if self.exclusive:
                # Before the first access, so the WAL index lives in our memory, not a shared
                # file, and the lock taken by the first write below is never released.
                db.execute("PRAGMA locking_mode=EXCLUSIVE")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            self._migrate(db)
            db.execute("COMMIT")
        except sqlite3.OperationalError as e:
            db.close()
            if "locked" in str(e) or "busy" in str(e):
                raise Unavailable(
                    f"another Prime daemon is using the store at {self.path} (a server or "
                    "`prime-agent run` on the same root); stop it or use another root"
                ) from None
            raise
        except BaseException:
            db.close()
            raise
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and "sessions" not in tables:
            for statement in _statements(SCHEMA):
                db.execute(statement)
            version = 1
        if version > SCHEMA_VERSION:
            raise Unavailable(
                f"the store at {self.path} has schema version {version}, newer than this "
                f"prime_kernel understands ({SCHEMA_VERSION}): upgrade prime_kernel"
            )
        while version < SCHEMA_VERSION:
            for statement in _statements(MIGRATIONS[version]):
                db.execute(statement)
            version += 1
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- the store thread -----------------------------------------------------------------------
    def _submit(
        self, fn: Callable[[sqlite3.Connection], Any] | None
    ) -> concurrent.futures.Future[Any]:
        """A read (a flush barrier without `fn`), answered in the order of the writes."""
        if self._thread is None:
            raise Unavailable("the store is not open")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put(_Op(fn, future))
        return future

    def _write(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        if self._thread is None:
            raise Unavailable("the store is not open")
        self._queue.put(_Op(fn))

    async def _read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        return await asyncio.wrap_future(self._submit(fn))

    def _serve(self, ready: concurrent.futures.Future[int]) -> None:
        try:
            db = self._connect()
            top = db.execute("SELECT MAX(seq) FROM events").fetchone()[0] or 0
        except BaseException as e:
            ready.set_exception(e)
            return
        ready.set_result(int(top))
        stop = False
        while not stop:
            batch: list[_Op | None] = [self._queue.get()]
            while len(batch) < _GROUP:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            writes: list[_Op] = []
            for op in batch:
                if op is None:
                    stop = True
                    break
                if op.future is None:  # a write
                    writes.append(op)
                    continue
                self._commit(db, writes)
                writes = []
                self._answer(db, op)
            self._commit(db, writes)
        db.close()

    def _answer(self, db: sqlite3.Connection, op: _Op) -> None:
        assert op.future is not None
        # Its reader may have gone (a cancelled task, a flush past its timeout): answering a
        # cancelled future raises, and would end this thread and with it the store.
        if not op.future.set_running_or_notify_cancel():
            return
        if op.fn is None:  # a flush barrier: everything before it is committed
            op.future.set_result(None)
            return
        try:
            result = op.fn(db)
        except BaseException as e:
            op.future.set_exception(e)
        else:
            op.future.set_result(result)

    def _commit(self, db: sqlite3.Connection, writes: list[_Op]) -> None:
        """Apply `writes` in one transaction; retry until it commits (never drop a write)."""
        if not writes:
            return
        delay = 0.01
        while True:
            try:
                db.execute("BEGIN IMMEDIATE")
                for op in writes:
                    self._apply(db, op)
                db.execute("COMMIT")
            except sqlite3.OperationalError as e:  # busy, disk full, I/O: try again
                if db.in_transaction:
                    db.execute("ROLLBACK")
                self.failure = str(e)
                log.error("the store could not commit (%s); retrying in %.2f s", e, delay)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            break
        self.failure = None

    def _apply(self, db: sqlite3.Connection, op: _Op) -> None:
        assert op.fn is not None
        db.execute("SAVEPOINT op")
        try:
            op.fn(db)
        except sqlite3.OperationalError:
            raise
        except Exception:  # a bad write (a bug) is dropped alone, loudly
            db.execute("ROLLBACK TO op")
            log.exception("a store write failed and was skipped")
        db.execute("RELEASE op")

    # -- sessions -------------------------------------------------------------------------------
    def load_sessions(self) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute("SELECT * FROM sessions ORDER BY created, rowid").fetchall()
            return [decode_row(r) for r in rows]

        return list(self._submit(read).result())

    def insert_session(self, row: dict[str, Any]) -> None:
        values = encode_row(row)
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        sql = f"INSERT INTO sessions ({cols}) VALUES ({marks})"
        self._write(lambda db: db.execute(sql, list(values.values())))

    def update_session(self, session_id: str, fields: dict[str, Any]) -> None:
        if not fields:
            return
        values = encode_row(fields)
        sets = ", ".join(f"{k} = ?" for k in values)
        sql = f"UPDATE sessions SET {sets} WHERE id = ?"
        self._write(lambda db: db.execute(sql, [*values.values(), session_id]))

    # -- events ---------------------------------------------------------------------------------
    def append_event(self, session_id: str, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        with self._seq_lock:
            self._seq += 1
            seq = self._seq
        ts = time.time()

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO events (seq, session_id, ts, kind, data) VALUES (?, ?, ?, ?, ?)",
                (seq, session_id, ts, kind, dumps(data)),
            )

        self._write(write)
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
            return [_event(r) for r in db.execute(sql, args).fetchall()]

        return list(await self._read(read))

    async def last_event(self, session_id: str, kind: str) -> dict[str, Any] | None:
        def read(db: sqlite3.Connection) -> dict[str, Any] | None:
            row = db.execute(
                "SELECT * FROM events WHERE session_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1",
                (session_id, kind),
            ).fetchone()
            return _event(row) if row else None

        found: dict[str, Any] | None = await self._read(read)
        return found

    # -- conversations --------------------------------------------------------------------------
    def append_conversation(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        items = list(messages)

        def write(db: sqlite3.Connection) -> None:
            top = db.execute(
                "SELECT COALESCE(MAX(pos), -1) FROM conversation WHERE session_id = ?",
                (session_id,),
            ).fetchone()[0]
            db.executemany(
                "INSERT INTO conversation (session_id, pos, message) VALUES (?, ?, ?)",
                [(session_id, top + 1 + i, dumps(m)) for i, m in enumerate(items)],
            )

        self._write(write)

    def replace_conversation(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        items = list(messages)

        def write(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM conversation WHERE session_id = ?", (session_id,))
            db.executemany(
                "INSERT INTO conversation (session_id, pos, message) VALUES (?, ?, ?)",
                [(session_id, i, dumps(m)) for i, m in enumerate(items)],
            )

        self._write(write)

    async def conversation(self, session_id: str) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(
                "SELECT message FROM conversation WHERE session_id = ? ORDER BY pos",
                (session_id,),
            ).fetchall()
            return [json.loads(r[0]) for r in rows]

        return list(await self._read(read))

    # -- mailboxes ------------------------------------------------------------------------------
    def put_message(self, message: dict[str, Any]) -> None:
        row = {k: clean_text(v) if isinstance(v, str) else v for k, v in message.items()}
        self._write(
            lambda db: db.execute(
                "INSERT INTO mailbox (id, to_id, from_id, sender, message, ts) "
                "VALUES (:id, :to_id, :from_id, :sender, :message, :ts)",
                row,
            )
        )

    def mark_read(self, message_ids: Iterable[str], reader: Reader) -> None:
        ids = list(message_ids)
        if not ids:
            return
        column = _READ_COLUMN[reader]
        sql = f"UPDATE mailbox SET {column} = ? WHERE id IN ({', '.join('?' for _ in ids)})"
        now = time.time()
        self._write(lambda db: db.execute(sql, [now, *ids]))

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

        return list(await self._read(read))

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

        return list(self._submit(read).result())

    def insert_schedule(self, row: dict[str, Any]) -> None:
        values = encode_row(row)
        sql = (
            f"INSERT INTO schedules ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})"
        )
        self._write(lambda db: db.execute(sql, list(values.values())))

    def update_schedule(self, schedule_id: str, fields: dict[str, Any]) -> None:
        if not fields:
            return
        values = encode_row(fields)
        sql = f"UPDATE schedules SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?"
        self._write(lambda db: db.execute(sql, [*values.values(), schedule_id]))

    # -- spilled values -------------------------------------------------------------------------
    def record_spill(self, blob_id: str, session_id: str, name: str, size: int) -> None:
        row = (blob_id, session_id, clean_text(name), size, time.time())
        self._write(
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

        owner: str | None = await self._read(read)
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
        self._write(lambda db: db.execute(sql, list(row.values())))

    def forget_kernel(self, kernel_id: str) -> None:
        self._write(lambda db: db.execute("DELETE FROM kernels WHERE kernel_id = ?", (kernel_id,)))

    async def kernels(self) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            return [dict(r) for r in db.execute("SELECT * FROM kernels").fetchall()]

        return list(await self._read(read))

    # -- blobs ----------------------------------------------------------------------------------
    async def put_blob(self, data: bytes) -> str:
        blob_id = new_id("b")
        path = self.blob_path(blob_id)
        await asyncio.to_thread(_write_private, path, data, self.tmp_dir)
        return blob_id

    async def get_blob(self, blob_id: str) -> bytes:
        return await asyncio.to_thread(self.blob_path(blob_id).read_bytes)


def _write_private(path: Path, data: bytes, tmp_dir: Path) -> None:
    atomic_write(path, data, tmp_dir=tmp_dir)
    os.chmod(path, 0o600)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def clean_text(text: str) -> str:
    """`text` with lone surrogates (not valid Unicode, which SQLite cannot store) replaced."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def dumps(value: Any) -> str:
    # ensure_ascii escapes lone surrogates instead of failing on them.
    return json.dumps(value, default=repr)


def encode_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        if k in JSON_COLUMNS and v is not None:
            v = dumps(v)
        elif isinstance(v, str):
            v = clean_text(v)
        out[k] = v
    return out


def decode_row(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    for k in JSON_COLUMNS:
        if out.get(k) is not None:
            out[k] = json.loads(out[k])
    return out


def _event(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "seq": row["seq"],
        "session_id": row["session_id"],
        "ts": row["ts"],
        "kind": row["kind"],
        "data": json.loads(row["data"]),
    }
