"""The durable record: SQLite in WAL mode under `<root>/.prime/`, plus blob files beside it.

Every write commits before the daemon acknowledges it, so a dying process loses nothing it
answered for (WAL with synchronous=NORMAL survives a process crash; only power loss could roll
back the last commits).
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .private import private_store

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
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
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent_id);
CREATE INDEX IF NOT EXISTS sessions_root ON sessions(root_id);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_session ON events(session_id, seq);
CREATE TABLE IF NOT EXISTS mailbox (
    id TEXT PRIMARY KEY,
    to_id TEXT NOT NULL,
    from_id TEXT,
    sender TEXT NOT NULL,
    message TEXT NOT NULL,
    ts REAL NOT NULL,
    read_ts REAL
);
CREATE INDEX IF NOT EXISTS mailbox_to ON mailbox(to_id, read_ts, ts);
"""

_JSON_COLUMNS = ("budget", "options", "usage")


def new_id(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:12]


def atomic_write(path: Path, data: bytes) -> None:
    """Write a file so that it is either absent or complete, never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Store:
    """Thread-safe access to the session database and blob directory."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.blob_dir = self.directory / "blobs"
        self.path = self.directory / "prime.sqlite3"
        private_store(self.directory, self.path)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- sessions ---------------------------------------------------------------------------
    def insert_session(self, record: dict[str, Any]) -> None:
        row = _encode(record)
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self.transaction() as db:
            db.execute(f"INSERT INTO sessions ({cols}) VALUES ({marks})", list(row.values()))

    def update_session(self, session_id: str, **fields: Any) -> None:
        row = _encode(fields)
        sets = ", ".join(f"{k} = ?" for k in row)
        with self.transaction() as db:
            db.execute(f"UPDATE sessions SET {sets} WHERE id = ?", [*row.values(), session_id])

    def get_session(self, session_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return _decode(row) if row else None

    def list_sessions(
        self,
        *,
        states: Iterable[str] | None = None,
        root_id: str | None = None,
        parent_id: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        where, args = [], []
        if states:
            states = list(states)
            where.append(f"state IN ({', '.join('?' for _ in states)})")
            args.extend(states)
        if root_id:
            where.append("root_id = ?")
            args.append(root_id)
        if parent_id:
            where.append("parent_id = ?")
            args.append(parent_id)
        sql = "SELECT * FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, rowid DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [_decode(r) for r in rows]

    def descendants(self, session_id: str) -> list[dict[str, Any]]:
        """Every session below `session_id` (not itself), parents before children."""
        sql = """
        WITH RECURSIVE sub(id, lvl) AS (
            SELECT id, 1 FROM sessions WHERE parent_id = ?
            UNION ALL
            SELECT s.id, sub.lvl + 1 FROM sessions s JOIN sub ON s.parent_id = sub.id
        )
        SELECT s.* FROM sessions s JOIN sub ON s.id = sub.id ORDER BY sub.lvl, s.created
        """
        with self._lock:
            rows = self._db.execute(sql, (session_id,)).fetchall()
        return [_decode(r) for r in rows]

    # -- events (the trajectory) ------------------------------------------------------------
    def append_event(self, session_id: str, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        ts = time.time()
        payload = json.dumps(data, default=repr)
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO events (session_id, ts, kind, data) VALUES (?, ?, ?, ?)",
                (session_id, ts, kind, payload),
            )
            seq = cur.lastrowid
        return {"seq": seq, "session_id": session_id, "ts": ts, "kind": kind, "data": data}

    def events(
        self, session_id: str, *, after: int = 0, kinds: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        sql = "SELECT * FROM events WHERE session_id = ? AND seq > ?"
        args: list[Any] = [session_id, after]
        if kinds:
            kinds = list(kinds)
            sql += f" AND kind IN ({', '.join('?' for _ in kinds)})"
            args.extend(kinds)
        sql += " ORDER BY seq"
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [
            {
                "seq": r["seq"],
                "session_id": r["session_id"],
                "ts": r["ts"],
                "kind": r["kind"],
                "data": json.loads(r["data"]),
            }
            for r in rows
        ]

    # -- mailbox ----------------------------------------------------------------------------
    def put_message(self, record: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO mailbox (id, to_id, from_id, sender, message, ts) "
                "VALUES (:id, :to_id, :from_id, :sender, :message, :ts)",
                record,
            )

    def pending_messages(self, to_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM mailbox WHERE to_id = ? AND read_ts IS NULL ORDER BY ts, rowid"
        if limit:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._db.execute(sql, (to_id,)).fetchall()
        return [dict(r) for r in rows]

    def mark_read(self, message_ids: Iterable[str]) -> None:
        ids = list(message_ids)
        if not ids:
            return
        with self.transaction() as db:
            db.execute(
                f"UPDATE mailbox SET read_ts = ? WHERE id IN ({', '.join('?' for _ in ids)})",
                [time.time(), *ids],
            )

    # -- blobs (pickled contexts and answers travel by file) --------------------------------
    def put_blob(self, data: bytes) -> str:
        blob_id = new_id("b")
        atomic_write(self.blob_dir / f"{blob_id}.pkl", data)
        return blob_id

    def blob_path(self, blob_id: str) -> Path:
        if not blob_id.isalnum():
            raise ValueError(f"invalid blob id {blob_id!r}")
        return self.blob_dir / f"{blob_id}.pkl"

    def has_blob(self, blob_id: object) -> bool:
        return isinstance(blob_id, str) and blob_id.isalnum() and self.blob_path(blob_id).exists()

    def get_blob(self, blob_id: str) -> bytes:
        return self.blob_path(blob_id).read_bytes()


def _encode(record: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (json.dumps(v) if k in _JSON_COLUMNS and v is not None else v) for k, v in record.items()
    }


def _decode(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    for k in _JSON_COLUMNS:
        if out.get(k) is not None:
            out[k] = json.loads(out[k])
    return out
