"""The store's one writer thread over a real SQLite file: writes committed in order, a bad write
dropped alone, reads seeing the writes before them, one daemon per file."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from prime_kernel.daemon.store.writer import Writer
from prime_kernel.protocol.errors import StoreDamaged, Unavailable


def setup(db: sqlite3.Connection) -> str:
    db.execute("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER)")
    return "ready"


def insert(k: str, v: int):
    return lambda db: db.execute("INSERT INTO t VALUES (?, ?)", (k, v))


def rows(db: sqlite3.Connection) -> list[tuple[str, int]]:
    return [tuple(r) for r in db.execute("SELECT k, v FROM t ORDER BY rowid")]


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Writer]:
    w = Writer(tmp_path / "db.sqlite3", exclusive=True, setup=setup)
    assert w.start() == "ready"  # what setup returned, once the database is open
    yield w
    asyncio.run(w.close())


async def test_reads_see_the_writes_before_them_in_order(writer: Writer) -> None:
    for i in range(5):
        writer.write(insert(f"k{i}", i))
    assert await writer.read(rows) == [(f"k{i}", i) for i in range(5)]
    await writer.flush()
    assert (writer.path.stat().st_mode & 0o777) == 0o600


async def test_a_bad_write_is_dropped_alone(
    writer: Writer, caplog: pytest.LogCaptureFixture
) -> None:
    writer.write(insert("a", 1))
    writer.write(insert("a", 2))  # a duplicate key: a bug's write
    writer.write(insert("b", 3))
    with caplog.at_level(logging.ERROR):
        await writer.flush()
    assert await writer.read(rows) == [("a", 1), ("b", 3)]
    assert "a store write failed and was skipped" in caplog.text
    assert writer.failure is None


async def test_a_failing_read_answers_its_reader_and_the_writer_goes_on(writer: Writer) -> None:
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await writer.read(lambda db: db.execute("SELECT * FROM missing").fetchall())
    writer.write(insert("after", 1))
    assert await writer.read(rows) == [("after", 1)]


async def test_a_second_daemon_on_the_same_file_is_refused(writer: Writer) -> None:
    writer.write(insert("a", 1))
    await writer.flush()
    other = Writer(writer.path, exclusive=True, setup=setup)
    with pytest.raises(Unavailable, match="another Prime daemon is using the store"):
        other.start()


async def test_a_closed_writer_takes_no_more(tmp_path: Path) -> None:
    writer = Writer(tmp_path / "db.sqlite3", exclusive=True, setup=setup)
    with pytest.raises(Unavailable, match="not open"):
        writer.write(insert("a", 1))
    writer.start()
    writer.write(insert("a", 1))
    await writer.close()  # commits what was queued
    with pytest.raises(Unavailable, match="not open"):
        writer.write(insert("b", 2))
    assert rows(sqlite3.connect(tmp_path / "db.sqlite3")) == [("a", 1)]


def test_a_file_that_is_not_a_database_is_refused_as_damaged(tmp_path: Path) -> None:
    path = tmp_path / "prime.sqlite3"
    path.write_bytes(b"not a database at all " * 200)
    with pytest.raises(StoreDamaged, match="prime-agent doctor --repair"):
        Writer(path, exclusive=True, setup=setup).start()
