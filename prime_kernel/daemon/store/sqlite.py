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
import contextlib
import errno
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

from ...protocol.errors import InsufficientStorage, StoreDamaged, Unavailable
from ...util.files import atomic_write, new_id, private_dir
from ...util.redact import Redactor
from . import repair
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
        # Why the last commit failed, while commits are failing (None when healthy), and
        # whether for want of disk space.
        self.failure: str | None = None
        self.full = False
        # Set for good once the file is found damaged: what to tell people, and how many
        # writes could not be stored since.
        self.damage: str | None = None
        self.unwritten = 0
        self._logged = 0.0

    # -- lifecycle ----------------------------------------------------------------------------
    def open(self) -> None:
        private_dir(self.directory)
        private_dir(self.blob_dir)
        # A damaged file is refused now, with the command that repairs it, rather than found
        # out later by a write that cannot commit.
        problem = repair.check(self.path)
        if problem is not None:
            raise StoreDamaged(repair.damaged(self.path, problem))
        ready: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="prime-store", daemon=True
        )
        self._thread.start()
        self._seq = ready.result()

    async def flush(self, timeout: float | None = None) -> None:
        if self.damage is not None:
            raise StoreDamaged(self.damage, unwritten=self.unwritten)
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
        try:
            await self.flush(timeout=10)
        except (InsufficientStorage, StoreDamaged, Unavailable) as e:
            log.error("closing the store: %s", e)  # the writer gives up on what is left
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
            if _kind(e) == _FULL:
                raise InsufficientStorage(_full(self.path, e)) from None
            raise
        except sqlite3.DatabaseError as e:  # SQLITE_CORRUPT, SQLITE_NOTADB
            db.close()
            raise StoreDamaged(repair.damaged(self.path, str(e))) from None
        except BaseException:
            db.close()
            raise
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and "sessions" not in tables:
            for statement in statements(SCHEMA):
                db.execute(statement)
            version = 1
        if version > SCHEMA_VERSION:
            raise Unavailable(
                f"the store at {self.path} has schema version {version}, newer than this "
                f"prime_kernel understands ({SCHEMA_VERSION}): upgrade prime_kernel"
            )
        while version < SCHEMA_VERSION:
            for statement in statements(MIGRATIONS[version]):
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
        pending: list[_Op] = []  # writes not committed yet, in order
        waiting: list[_Op] = []  # reads and flushes enqueued after them
        delay = 0.0
        stop = False
        give_up = 0.0  # once closing: when to stop trying to commit what is left
        while not stop or pending:
            try:
                ops = self._take(delay if pending else None)
            except BaseException:  # never end the only writer: say why, and go on
                log.exception("the store's writer failed to read its queue")
                ops = []
            for op in ops:
                if op is None:
                    stop, give_up = True, time.monotonic() + 10
                elif op.future is None:  # a write
                    if self.damage is None:
                        pending.append(op)
                    else:
                        self.unwritten += 1
                else:
                    waiting.append(op)
            if pending and not self._commit(db, pending):
                if self.damage is not None:
                    self.unwritten += len(pending)
                    pending = []
                else:
                    # Full or busy: the writes stay, in order, and are tried again (a full
                    # disk refuses what waits now, so no request hangs on it).
                    delay = min(max(delay * 2, 0.05), 2.0)
                    if self.full:
                        self._answer_while_full(db, pending, waiting)
                        waiting = []
                    if stop and (self.full or time.monotonic() > give_up):
                        break  # closing, and what is pending cannot be committed
                    continue
            pending, delay = [], 0.0
            for op in waiting:
                self._answer(db, op)
            waiting = []
        if pending:
            self.unwritten += len(pending)
            log.error("the store closed with %d writes it could not commit", len(pending))
        db.close()

    def _take(self, timeout: float | None) -> list[_Op | None]:
        """The next operations in the queue: at least one (waiting up to `timeout`; None:
        as long as it takes), at most _GROUP."""
        try:
            ops: list[_Op | None] = [self._queue.get(timeout=timeout)]
        except queue.Empty:
            return []
        while len(ops) < _GROUP:
            try:
                ops.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return ops

    def _answer(self, db: sqlite3.Connection, op: _Op) -> None:
        assert op.future is not None
        # Its reader may have gone (a cancelled task, a flush past its timeout): answering a
        # cancelled future raises, and would end this thread and with it the store.
        if not op.future.set_running_or_notify_cancel():
            return
        if op.fn is None:  # a flush barrier: everything before it is committed
            if self.damage is not None:
                op.future.set_exception(StoreDamaged(self.damage, unwritten=self.unwritten))
            else:
                op.future.set_result(None)
            return
        try:
            result = op.fn(db)
        except sqlite3.DatabaseError as e:
            if _kind(e) == _DAMAGED:
                self._damaged(e)
                op.future.set_exception(StoreDamaged(self.damage or str(e)))
            else:
                op.future.set_exception(e)
        except BaseException as e:
            op.future.set_exception(e)
        else:
            op.future.set_result(result)

    def _answer_while_full(
        self, db: sqlite3.Connection, pending: list[_Op], waiting: list[_Op]
    ) -> None:
        """While commits fail for want of space: a flush is refused at once (507), and a read
        is answered in a transaction that applies the pending writes and is rolled back (it
        sees them all; they fit in memory — if not, it is refused too)."""
        full = InsufficientStorage(self.failure or "the disk is full")
        reads = [op for op in waiting if op.fn is not None]
        for op in waiting:
            if op.fn is None and op.future is not None and op.future.set_running_or_notify_cancel():
                op.future.set_exception(full)
        if not reads:
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            for op in pending:
                self._apply(db, op)
        except sqlite3.Error:
            for op in reads:
                assert op.future is not None
                if op.future.set_running_or_notify_cancel():
                    op.future.set_exception(full)
            reads = []
        try:
            for op in reads:
                self._answer(db, op)
        finally:
            with contextlib.suppress(sqlite3.Error):
                if db.in_transaction:
                    db.execute("ROLLBACK")

    def _commit(self, db: sqlite3.Connection, writes: list[_Op]) -> bool:
        """Apply `writes` in one transaction; whether it committed. A write is never dropped
        for a failure that may pass (busy, disk full, I/O): the caller tries again. A damaged
        file stops all writing (`damage`), and every flush then says so."""
        try:
            db.execute("BEGIN IMMEDIATE")
            for op in writes:
                self._apply(db, op)
            db.execute("COMMIT")
        except sqlite3.Error as e:
            with contextlib.suppress(sqlite3.Error):
                if db.in_transaction:
                    db.execute("ROLLBACK")
            kind = _kind(e)
            if kind == _DAMAGED:
                self._damaged(e)
                return False
            failure = _full(self.path, e) if kind == _FULL else f"{e}"
            if failure != self.failure or time.monotonic() - self._logged > 60:
                log.error("the store could not commit %d writes: %s; retrying", len(writes), e)
                self._logged = time.monotonic()
            self.failure, self.full = failure, kind == _FULL
            return False
        if self.failure is not None:
            log.warning("the store commits again (after: %s)", self.failure)
        self.failure, self.full = None, False
        return True

    def _damaged(self, e: sqlite3.Error) -> None:
        if self.damage is None:
            self.damage = repair.damaged(self.path, str(e))
            log.error("%s; nothing more is written to it", self.damage)
        self.failure = self.damage

    def _apply(self, db: sqlite3.Connection, op: _Op) -> None:
        assert op.fn is not None
        db.execute("SAVEPOINT op")
        try:
            op.fn(db)
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
            db.execute("ROLLBACK TO op")  # a bad write (a bug) is dropped alone, loudly
            log.exception("a store write failed and was skipped")
        except sqlite3.Error:
            raise  # the database's trouble, not the write's: the whole commit fails
        except Exception:
            db.execute("ROLLBACK TO op")
            log.exception("a store write failed and was skipped")
        db.execute("RELEASE op")

    # -- sessions -------------------------------------------------------------------------------
    def load_sessions(self) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute("SELECT * FROM sessions ORDER BY created, rowid").fetchall()
            return [decode_row(r) for r in rows]

        return list(self._submit(read).result())

    def insert_session(self, row: dict[str, Any]) -> dict[str, Any]:
        row = self.redactor().value(row)
        values = encode_row(row)
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        sql = f"INSERT INTO sessions ({cols}) VALUES ({marks})"
        self._write(lambda db: db.execute(sql, list(values.values())))
        return row

    def update_session(self, session_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        if not fields:
            return fields
        fields = self.redactor().value(fields)
        values = encode_row(fields)
        sets = ", ".join(f"{k} = ?" for k in values)
        sql = f"UPDATE sessions SET {sets} WHERE id = ?"
        self._write(lambda db: db.execute(sql, [*values.values(), session_id]))
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

        self._write(write)
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

        self._write(write)
        return items

    async def conversation(self, session_id: str) -> list[dict[str, Any]]:
        def read(db: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = db.execute(
                "SELECT message FROM conversation WHERE session_id = ? ORDER BY pos",
                (session_id,),
            ).fetchall()
            return [json.loads(r[0]) for r in rows]

        return list(await self._read(read))

    # -- mailboxes ------------------------------------------------------------------------------
    def put_message(self, message: dict[str, Any]) -> dict[str, Any]:
        message = self.redactor().value(message)
        row = {k: clean_text(v) if isinstance(v, str) else v for k, v in message.items()}
        self._write(
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

    def insert_schedule(self, row: dict[str, Any]) -> dict[str, Any]:
        row = self.redactor().value(row)
        values = encode_row(row)
        sql = (
            f"INSERT INTO schedules ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})"
        )
        self._write(lambda db: db.execute(sql, list(values.values())))
        return row

    def update_schedule(self, schedule_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        if not fields:
            return fields
        fields = self.redactor().value(fields)
        values = encode_row(fields)
        sql = f"UPDATE schedules SET {', '.join(f'{k} = ?' for k in values)} WHERE id = ?"
        self._write(lambda db: db.execute(sql, [*values.values(), schedule_id]))
        return fields

    # -- spilled values -------------------------------------------------------------------------
    def record_spill(self, blob_id: str, session_id: str, name: str, size: int) -> None:
        row = (blob_id, session_id, clean_text(self.redactor().text(name)), size, time.time())
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
    async def put_blob(self, data: bytes | bytearray) -> str:
        blob_id = new_id("b")
        path = self.blob_path(blob_id)
        redactor = self.redactor()
        try:
            await asyncio.to_thread(_write_private, path, data, self.tmp_dir, redactor)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise InsufficientStorage(_full(self.path, e)) from None
            raise
        return blob_id

    async def get_blob(self, blob_id: str) -> bytes:
        return await asyncio.to_thread(self.blob_path(blob_id).read_bytes)


# How a failed commit is treated, by SQLite's result code.
_FULL = "full"  # SQLITE_FULL: tried again until there is space; requests meanwhile get 507
_DAMAGED = "damaged"  # SQLITE_CORRUPT, SQLITE_NOTADB: nothing more is written; 503, repair
_PASSING = "passing"  # busy, locked, I/O: tried again


def _kind(e: sqlite3.Error) -> str:
    code = getattr(e, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(e)
    if primary == 13 or "database or disk is full" in text:
        return _FULL
    if primary in (11, 26) or "malformed" in text or "not a database" in text:
        return _DAMAGED
    return _PASSING


def _full(path: Path, e: BaseException) -> str:
    return f"the disk under {path.parent} is full ({e}); free some space and try again"


def _write_private(path: Path, data: bytes | bytearray, tmp_dir: Path, redactor: Redactor) -> None:
    atomic_write(path, redactor.pickle(data), tmp_dir=tmp_dir)
    os.chmod(path, 0o600)


def statements(script: str) -> list[str]:
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
