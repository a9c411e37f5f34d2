"""Checking the store's database file, and repairing a damaged one into a new file.

`check(path)` is what the store runs when it opens (SQLite's `PRAGMA quick_check`, a few
milliseconds per megabyte): None if the file is sound, else what is wrong. A damaged store is
refused (`StoreDamaged`), with `prime-agent doctor --repair` named, rather than opened and found
out later by a write that cannot commit.

`repair(path)` salvages what can still be read into a new file and puts it in place, keeping the
damaged file (and its -wal and -shm) beside it under a `.damaged-<time>` name. SQLite's own
`.recover` needs the `sqlite_dbpage` table, which Debian's sqlite3 shell lacks, and Python has no
binding for it; so the salvage is done here, row by row: each table of the damaged file is read
in rowid order, and a read that fails on a broken page skips ahead past it (exponentially, then
back by bisection) instead of giving up. A file whose 100-byte header is garbage is read from a
copy with a header rebuilt from its first page. Sessions whose parent was lost become roots.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .schema import migrate

_MAGIC = b"SQLite format 3\x00"
_BATCH = 500
# Largest rowid SQLite allows.
_MAX_ROWID = 2**63 - 1


def command(store_dir: str | os.PathLike[str]) -> str:
    """The command that repairs the store in the folder `store_dir`."""
    folder = Path(store_dir).resolve()
    if folder.name == ".prime":
        return f"prime-agent doctor --repair --root {folder.parent}"
    return f"prime-agent doctor --repair --store {folder}"


def damaged(path: str | os.PathLike[str], problem: str) -> str:
    """What to tell a person whose store is damaged: what, and the command that repairs it."""
    problem = " ".join(problem.split())
    problem = problem if len(problem) <= 300 else problem[:299] + "…"
    return (
        f"the store at {path} is damaged ({problem}); nothing was changed. Stop every Prime "
        f"server on this root and run `{command(Path(path).parent)}`: it salvages what can be "
        "read into a new file and keeps the damaged one beside it"
    )


def in_use(path: str | os.PathLike[str]) -> bool:
    """Whether a process holds the database at `path` (a running daemon keeps SQLite's lock on
    it, a byte-range lock: see SQLite's os_unix.c, PENDING_BYTE and the shared range after
    it)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 510, 0x40000002)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing it drops the lock taken to look
    return False


def check(path: str | os.PathLike[str]) -> str | None:
    """None if the database file at `path` passes SQLite's quick check, else what is wrong
    (the file is opened read-only; a missing file is sound: it will be made)."""
    if not Path(path).exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error as e:
        return str(e)
    try:
        rows = db.execute("PRAGMA quick_check(5)").fetchall()
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):
            return None  # another process holds it: that one checked it
        return str(e)
    except sqlite3.DatabaseError as e:
        return str(e)
    finally:
        db.close()
    problems = [str(r[0]) for r in rows if r and r[0] != "ok"]
    return "; ".join(problems) or None


@dataclass
class Repaired:
    """What a repair did."""

    path: Path  # the repaired database, in place
    kept: Path  # the damaged file, kept
    rows: dict[str, int] = field(default_factory=dict)  # rows recovered per table
    skipped: dict[str, int] = field(default_factory=dict)  # rowid ranges skipped per table
    lost_tables: list[str] = field(default_factory=list)  # tables not readable at all
    orphans: int = 0  # sessions whose parent was lost, made roots
    header_rebuilt: bool = False


def repair(path: str | os.PathLike[str]) -> Repaired:
    """Salvage the database at `path` into a new file and put it in place (the damaged one
    kept). The caller makes sure no daemon holds the store."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    work = path.with_name(f"{path.name}.repairing")
    fresh = path.with_name(f"{path.name}.repaired")
    for leftover in (work, fresh):
        _remove_db(leftover)
    # Read from a copy (its header rebuilt if need be): the damaged file itself is kept as it is.
    shutil.copyfile(path, work)
    for suffix in ("-wal",):
        if path.with_name(path.name + suffix).exists():
            shutil.copyfile(path.with_name(path.name + suffix), Path(str(work) + suffix))
    report = Repaired(path=path, kept=path.with_name(f"{path.name}.damaged-{stamp}"))
    report.header_rebuilt = _fix_header(work)

    new = sqlite3.connect(fresh, isolation_level=None)
    new.execute("PRAGMA journal_mode=WAL")
    new.execute("BEGIN")
    migrate(new, fresh)
    new.execute("COMMIT")
    try:
        old = sqlite3.connect(f"file:{work}?mode=ro", uri=True)
    except sqlite3.Error:
        old = None
    try:
        tables = _tables(old) if old is not None else {}
        for name, columns in _tables(new).items():
            if name.startswith("sqlite_"):
                continue
            have = tables.get(name)
            if have is None:
                report.lost_tables.append(name)
                continue
            shared = [c for c in columns if c in have]
            assert old is not None
            _copy(old, new, name, shared, report)
        report.orphans = _adopt_orphans(new)
    finally:
        if old is not None:
            old.close()
        new.close()
    problem = check(fresh)
    if problem is not None:
        raise RuntimeError(f"the repaired copy is not sound either ({problem}); nothing moved")
    # The damaged file (and its journal) keeps its data under a new name; the copy takes its.
    for suffix in ("", "-wal", "-shm"):
        old_file = path.with_name(path.name + suffix)
        if old_file.exists():
            os.replace(old_file, report.kept.with_name(report.kept.name + suffix))
    os.replace(fresh, path)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(Path(str(fresh) + suffix), path.with_name(path.name + suffix))
    os.chmod(path, 0o600)
    _remove_db(work)
    return report


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(path) + suffix)


def _tables(db: sqlite3.Connection) -> dict[str, list[str]]:
    """Each table of `db` (whose schema can be read) and its columns."""
    out: dict[str, list[str]] = {}
    try:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    except sqlite3.DatabaseError:
        return out
    for name in names:
        try:
            out[name] = [r[1] for r in db.execute(f'PRAGMA table_info("{name}")')]
        except sqlite3.DatabaseError:
            continue
    return out


def _copy(
    old: sqlite3.Connection, new: sqlite3.Connection, table: str, columns: list[str], report: Any
) -> None:
    cols = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    insert = f'INSERT OR IGNORE INTO "{table}" (rowid, {cols}) VALUES (?, {marks})'
    select = f'SELECT rowid, {cols} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT ?'
    count = skipped = 0
    new.execute("BEGIN")
    for batch, gap in _salvage(old, select):
        new.executemany(insert, batch)
        count += len(batch)
        skipped += gap
    new.execute("COMMIT")
    report.rows[table] = count
    if skipped:
        report.skipped[table] = skipped


def _salvage(old: sqlite3.Connection, select: str) -> Iterator[tuple[list[Any], int]]:
    """Batches of readable rows in rowid order, each with how many unreadable stretches were
    skipped before it."""
    last = -_MAX_ROWID - 1
    gaps = 0
    while True:
        try:
            batch = old.execute(select, (last, _BATCH)).fetchall()
        except sqlite3.DatabaseError:
            try:
                batch = old.execute(select, (last, 1)).fetchall()
            except sqlite3.DatabaseError:
                after = _skip(old, select, last)
                if after is None:
                    return
                last, gaps = after, gaps + 1
                continue
        if not batch:
            return
        yield batch, gaps
        gaps = 0
        last = batch[-1][0]


def _skip(old: sqlite3.Connection, select: str, last: int) -> int | None:
    """The smallest rowid past `last` from which rows can be read again (found by doubling
    the step, then bisecting back); None if none can."""

    def readable(x: int) -> bool:
        try:
            old.execute(select, (x, 1)).fetchall()
            return True
        except sqlite3.DatabaseError:
            return False

    step = 1
    while last + step < _MAX_ROWID and not readable(last + step):
        step *= 2
    if last + step >= _MAX_ROWID:
        return None
    low, high = last + step // 2, last + step  # unreadable at low (or last), readable at high
    while high - low > 1:
        middle = (low + high) // 2
        if readable(middle):
            high = middle
        else:
            low = middle
    return high


def _adopt_orphans(db: sqlite3.Connection) -> int:
    """Sessions whose parent did not survive become roots of their own subtrees."""
    db.execute("BEGIN")
    lost = [
        r[0]
        for r in db.execute(
            "SELECT id FROM sessions WHERE parent_id IS NOT NULL "
            "AND parent_id NOT IN (SELECT id FROM sessions)"
        )
    ]
    for session_id in lost:
        db.execute(
            "UPDATE sessions SET parent_id = NULL, root_id = ?, depth = 0 WHERE id = ?",
            (session_id, session_id),
        )
        # Its descendants now belong to its tree, at their depth below it.
        db.execute(
            "WITH RECURSIVE below(id, d) AS (SELECT id, 1 FROM sessions WHERE parent_id = ? "
            "UNION SELECT s.id, b.d + 1 FROM sessions s JOIN below b ON s.parent_id = b.id) "
            "UPDATE sessions SET root_id = ?, "
            "depth = (SELECT d FROM below WHERE below.id = sessions.id) "
            "WHERE id IN (SELECT id FROM below)",
            (session_id, session_id),
        )
    db.execute("COMMIT")
    return len(lost)


def _fix_header(path: Path) -> bool:
    """Rebuild the 100-byte header of the database file at `path` if it is not SQLite's (from
    the page size its first page shows); whether it did."""
    with open(path, "r+b") as f:
        head = f.read(100 + 8)
        if head.startswith(_MAGIC):
            return False
        size = os.fstat(f.fileno()).st_size
        page_size = _page_size(f, size)
        if page_size is None:
            return False
        pages = max(size // page_size, 1)
        wal = Path(str(path) + "-wal").exists()
        header = bytearray(100)
        header[0:16] = _MAGIC
        header[16:18] = (1 if page_size == 65536 else page_size).to_bytes(2, "big")
        header[18] = header[19] = 2 if wal else 1
        header[21:24] = bytes([64, 32, 32])
        header[24:28] = (1).to_bytes(4, "big")  # change counter
        header[28:32] = pages.to_bytes(4, "big")
        header[40:44] = (1).to_bytes(4, "big")  # schema cookie
        header[44:48] = (4).to_bytes(4, "big")  # schema format
        header[56:60] = (1).to_bytes(4, "big")  # UTF-8
        header[92:96] = (1).to_bytes(4, "big")  # valid for change counter 1
        major, minor, patch = sqlite3.sqlite_version_info
        header[96:100] = (major * 1_000_000 + minor * 1000 + patch).to_bytes(4, "big")
        f.seek(0)
        f.write(header)
    return True


def _page_size(f: Any, size: int) -> int | None:
    """The page size a database file's first page shows: the b-tree page header at offset 100
    of page 1 (a table leaf or interior page) with cells inside the page."""
    f.seek(100)
    page = f.read(8)
    if len(page) < 8 or page[0] not in (0x0D, 0x05):
        return None
    cells = int.from_bytes(page[3:5], "big")
    content = int.from_bytes(page[5:7], "big") or 65536
    for candidate in (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512):
        if size % candidate == 0 and content <= candidate and 100 + 8 + 2 * cells <= candidate:
            return candidate
    return None
