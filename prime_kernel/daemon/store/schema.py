"""The store's tables: the schema of a new store, the migrations that bring an older one to it,
and how a row's values are written to and read from their columns."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ...protocol.errors import Unavailable

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


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the database (in a transaction the caller holds) to SCHEMA_VERSION: made from
    SCHEMA if it is new, then migrated a version at a time."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if version == 0:
        # New (made here), or made before versions were recorded (its tables are SCHEMA's).
        if "sessions" not in tables:
            for statement in statements(SCHEMA):
                db.execute(statement)
        version = 1
    if version > SCHEMA_VERSION:
        raise Unavailable(
            f"the store at {path} has schema version {version}, newer than this "
            f"prime_kernel understands ({SCHEMA_VERSION}): upgrade prime_kernel"
        )
    while version < SCHEMA_VERSION:
        for statement in statements(MIGRATIONS[version]):
            db.execute(statement)
        version += 1
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


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


def event_row(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "seq": row["seq"],
        "session_id": row["session_id"],
        "ts": row["ts"],
        "kind": row["kind"],
        "data": json.loads(row["data"]),
    }
