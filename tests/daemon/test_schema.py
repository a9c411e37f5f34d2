"""The store's schema: a new store is made at the current version, an older one migrated a
version at a time with its rows kept, a newer one refused; rows written and read back as their
columns hold them. Plain sqlite3 on a file, no store thread."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from prime_kernel.daemon.store.schema import (
    SCHEMA,
    SCHEMA_VERSION,
    decode_row,
    encode_row,
    migrate,
    statements,
)
from prime_kernel.protocol.errors import Unavailable


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.row_factory = sqlite3.Row
    return db


def migrated(db: sqlite3.Connection, path: Path) -> None:
    db.execute("BEGIN")
    migrate(db, path)
    db.execute("COMMIT")


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r["name"] for r in db.execute(f"PRAGMA table_info({table})")}


def test_a_store_of_the_first_version_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = connect(path)
    for statement in statements(SCHEMA):  # a store made before versions were recorded
        db.execute(statement)
    db.execute(
        "INSERT INTO sessions (id, prompt, state, root_id, created) VALUES ('s1', 'p', 'DONE', "
        "'s1', 1.0)"
    )
    db.execute(
        "INSERT INTO mailbox (id, to_id, sender, message, ts, read_ts) "
        "VALUES ('m1', 's1', 'user', 'hi', 1.0, 2.0)"
    )
    migrated(db, path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert {"goal", "verified"} <= columns(db, "sessions")
    assert "gateway" in columns(db, "kernels")
    assert {"schedules", "spills", "conversation"} <= {
        r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
    }
    assert db.execute("SELECT prompt FROM sessions").fetchone()[0] == "p"
    # A message read before shown_ts existed counts as shown.
    assert db.execute("SELECT shown_ts FROM mailbox").fetchone()[0] == 2.0
    migrated(db, path)  # at the current version: nothing to do
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_new_store_is_made_at_the_current_version(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    fresh, old = connect(path), connect(tmp_path / "old.sqlite3")
    migrated(fresh, path)
    for statement in statements(SCHEMA):
        old.execute(statement)
    migrated(old, tmp_path / "old.sqlite3")
    assert fresh.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    for table in ("sessions", "events", "mailbox", "kernels", "schedules", "spills"):
        assert columns(fresh, table) == columns(old, table), table


def test_a_store_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "newer.sqlite3"
    db = connect(path)
    migrated(db, path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.execute("BEGIN")
    with pytest.raises(Unavailable, match="newer than this prime_kernel understands"):
        migrate(db, path)


def test_rows_are_written_as_their_columns_hold_them(tmp_path: Path) -> None:
    db = connect(tmp_path / "rows.sqlite3")
    migrated(db, tmp_path / "rows.sqlite3")
    row = {
        "id": "s1",
        "prompt": "half a pair \ud83d",  # a lone surrogate, as a model may write
        "state": "DONE",
        "root_id": "s1",
        "created": 1.0,
        "options": {"spec": "reviewer"},
        "usage": {"cost": 0.5},
        "budget": None,
    }
    encoded = encode_row(row)
    assert encoded["options"] == '{"spec": "reviewer"}' and encoded["budget"] is None
    db.execute(
        f"INSERT INTO sessions ({', '.join(encoded)}) VALUES ({', '.join('?' * len(encoded))})",
        list(encoded.values()),
    )
    back = decode_row(db.execute("SELECT * FROM sessions").fetchone())
    assert back["prompt"] == "half a pair \ufffd"
    assert back["options"] == {"spec": "reviewer"} and back["usage"] == {"cost": 0.5}
    assert back["budget"] is None
