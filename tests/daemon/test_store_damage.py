"""A damaged store: refused at open with the repair command named, repaired by `prime-agent
doctor --repair` (the damaged file kept), and a store damaged while it runs never loses its
writer (review red-team-a982054, finding 5: 3 pages overwritten started fine, dropped writes,
then its writer thread died; a garbage header made /api/prime/* answer HTML 404s). The repair
itself, in process: sessions whose parent was lost become roots."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prime_kernel.daemon.store import SqliteStore, repair
from prime_kernel.protocol.errors import StoreDamaged

REPO = Path(__file__).resolve().parents[2]


async def filled(folder: Path, sessions: int = 2000) -> SqliteStore:
    store = SqliteStore(folder)
    store.open()
    for i in range(sessions):
        row = {
            "id": f"s{i}",
            "prompt": f"task {i} " + "x" * 300,
            "state": "DONE",
            "kind": "agent",
            "root_id": f"s{i}",
            "created": float(i),
            "options": {},
            "usage": {},
        }
        store.insert_session(row)
        store.append_event(f"s{i}", "task", {"prompt": row["prompt"]})
    await store.flush()
    return store


def overwrite(path: Path, offset: int, pages: int) -> None:
    """What the red team did: garbage over `pages` 4 KiB pages of the file at `offset`."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(os.urandom(4096 * pages))


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "prime_kernel.cli.main", "doctor", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


@pytest.mark.parametrize("damage", ["pages", "header"])
async def test_a_damaged_store_is_refused_then_repaired(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "root"
    folder = root / ".prime"
    await (await filled(folder)).close()
    path = folder / "prime.sqlite3"
    if damage == "pages":
        overwrite(path, 8192, 3)  # pages 3-5
        overwrite(path, 4096 * 40, 20)  # and a stretch of table pages
    else:
        overwrite(path, 0, 0)
        with open(path, "r+b") as f:
            f.write(os.urandom(100))  # the header

    with pytest.raises(StoreDamaged) as info:
        SqliteStore(folder).open()
    message = info.value.message
    assert f"prime-agent doctor --repair --root {root.resolve()}" in message
    assert "damaged" in message and "nothing was changed" in message

    done = doctor("--root", str(root), "--repair")
    assert done.returncode == 0, done.stderr
    assert "Repaired:" in done.stdout and "The damaged file is kept as" in done.stdout
    kept = [p for p in folder.iterdir() if re.search(r"\.damaged-[0-9-]+$", p.name)]
    assert len(kept) == 1

    store = SqliteStore(folder)
    store.open()  # sound now
    try:
        rows = store.load_sessions()
        assert 1000 < len(rows) <= 2000
        store.insert_session({**rows[0], "id": "after"})
        await store.flush()
    finally:
        await store.close()
    assert "nothing to repair" in doctor("--root", str(root), "--repair").stdout


async def test_the_writer_survives_a_file_damaged_under_it(tmp_path: Path) -> None:
    store = await filled(tmp_path / "store", 3000)
    # Everything in the file itself, and little of it cached: the next writes read it back.
    await store.writer.read(lambda db: db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    await store.writer.read(lambda db: db.execute("PRAGMA cache_size = 4").fetchall())
    await store.writer.read(lambda db: db.execute("PRAGMA cache_size = 2000").fetchall())
    overwrite(store.path, 4096 * 30, 60)
    for i in range(3000):
        store.update_session(f"s{i}", {"state": "FAILED", "error": "x"})
    started = time.monotonic()
    with pytest.raises(StoreDamaged) as info:
        await store.flush(timeout=30)
    assert time.monotonic() - started < 10  # said at once, not after a 30 s timeout
    assert "prime-agent doctor --repair" in info.value.message
    assert store.writer._thread is not None and store.writer._thread.is_alive()
    assert store.writer.unwritten > 0  # counted, said (and the writes before the damage committed)
    # Later writes are counted, flushes keep saying why, and it still closes.
    store.update_session("s1", {"state": "DONE"})
    with pytest.raises(StoreDamaged):
        await store.flush(timeout=30)
    await asyncio.wait_for(store.close(), 30)
    assert sqlite3.connect(tmp_path / "store" / "prime.sqlite3")  # nothing else touched it


async def test_check_says_what_is_wrong_and_the_command_fits_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "root" / ".prime"
    await (await filled(folder, 500)).close()
    path = folder / "prime.sqlite3"
    assert repair.check(path) is None and repair.check(folder / "missing.sqlite3") is None
    overwrite(path, 4096 * 5, 10)
    assert repair.check(path) is not None
    assert repair.command(folder) == f"prime-agent doctor --repair --root {folder.parent.resolve()}"
    elsewhere = tmp_path / "store"
    assert repair.command(elsewhere) == f"prime-agent doctor --repair --store {elsewhere.resolve()}"


async def test_a_repair_keeps_the_old_file_and_makes_orphans_roots(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    store = SqliteStore(folder)
    store.open()
    for sid, parent, root, depth in [
        ("a", None, "a", 0),
        ("b", "a", "a", 1),
        ("c", "b", "a", 2),
        ("d", None, "d", 0),
    ]:
        store.insert_session(
            {
                "id": sid,
                "prompt": sid,
                "state": "DONE",
                "kind": "agent",
                "parent_id": parent,
                "root_id": root,
                "depth": depth,
                "created": 1.0,
                "options": {},
                "usage": {},
            }
        )
    await store.close()
    path = folder / "prime.sqlite3"
    db = sqlite3.connect(path)  # the root's row lost, as on a broken page
    db.execute("DELETE FROM sessions WHERE id = 'a'")
    db.commit()
    db.close()

    done = repair.repair(path)
    assert done.kept.exists() and done.orphans == 1 and done.rows["sessions"] == 3
    assert repair.check(path) is None and path.stat().st_mode & 0o777 == 0o600
    db = sqlite3.connect(path)
    rows = db.execute("SELECT id, parent_id, root_id, depth FROM sessions ORDER BY id").fetchall()
    assert rows == [("b", None, "b", 0), ("c", "b", "b", 1), ("d", None, "d", 0)]
