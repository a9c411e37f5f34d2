"""Every change to a harness entry, and every refinement, in an append-only SQLite log.

One database per scope (`<scope root>/history.sqlite3`) so a scope's files and its history
travel together. A version stores the entry's raw files before and after the change, who made
it (a session id, `refinement <id>`, `user`, or `user (hand edit)`), why, the evidence it cites,
and when. Rows are only ever inserted; rollback is a new version whose files equal an old one.
Writers hold `BEGIN IMMEDIATE` while they compare versions and write files, so two processes
(the server and the CLI) cannot interleave a change.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .entries import OLD_KINDS, Files

SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    op TEXT NOT NULL,
    author TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    evidence TEXT NOT NULL DEFAULT '[]',
    refinement_id TEXT,
    ts REAL NOT NULL,
    before TEXT,
    after TEXT,
    hash TEXT,
    UNIQUE (kind, entry_id, version)
);
CREATE INDEX IF NOT EXISTS versions_refinement ON versions(refinement_id);
CREATE TABLE IF NOT EXISTS refinements (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    author TEXT NOT NULL,
    trigger TEXT NOT NULL,
    instructions TEXT,
    status TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    rationale TEXT NOT NULL DEFAULT '',
    expected_outcome TEXT NOT NULL DEFAULT '',
    evidence TEXT NOT NULL DEFAULT '[]',
    edits TEXT NOT NULL DEFAULT '[]',
    error TEXT,
    model TEXT,
    reply TEXT,
    usage TEXT NOT NULL DEFAULT '{}',
    rolled_back TEXT
);
CREATE TABLE IF NOT EXISTS example_terms (
    entry_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    terms TEXT NOT NULL
);
"""

_REFINEMENT_JSON = ("evidence", "edits", "usage", "rolled_back")


class VersionStore:
    def __init__(self, path: Path, scrub: Callable[[Any], Any] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Applied to every text written here (a version's files, reasons, evidence; a
        # refinement): the daemon's secrets never reach the history.
        self.scrub: Callable[[Any], Any] = scrub or (lambda value: value)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        self._depth = 0
        self._rename_kinds()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the write lock (re-entrant within a thread) across a read-check-write."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._db.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if outer:
                    self._db.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outer:
                self._db.execute("COMMIT")

    def _rename_kinds(self) -> None:
        """Rewrite what was recorded under a kind's old name (`entries.OLD_KINDS`) to its name
        now: the versions, and the kinds in refinements' edits and rollbacks (a pending edit is
        applied by its kind). A store with nothing old is left as it is."""
        with self.transaction():
            for old, new in OLD_KINDS.items():
                # OR IGNORE: no row is lost. One whose new name is taken (only a release from
                # before the rename writing to a migrated store makes one) keeps the old name.
                self._db.execute(
                    "UPDATE OR IGNORE versions SET kind = ? WHERE kind = ?", (new, old)
                )
                mark = f'%"kind": "{old}"%'  # as json.dumps writes it
                rows = self._db.execute(
                    "SELECT id, edits, rolled_back FROM refinements "
                    "WHERE edits LIKE ? OR rolled_back LIKE ?",
                    (mark, mark),
                ).fetchall()
                for row in rows:
                    edits = json.loads(row["edits"] or "[]")
                    rolled = json.loads(row["rolled_back"]) if row["rolled_back"] else None
                    for item in [*edits, *((rolled or {}).get("entries") or [])]:
                        if isinstance(item, dict) and item.get("kind") == old:
                            item["kind"] = new
                    self._db.execute(
                        "UPDATE refinements SET edits = ?, rolled_back = ? WHERE id = ?",
                        (
                            json.dumps(edits, default=str),
                            json.dumps(rolled, default=str) if rolled is not None else None,
                            row["id"],
                        ),
                    )

    # -- versions ---------------------------------------------------------------------------
    def latest(self, kind: str, entry_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM versions WHERE kind = ? AND entry_id = ? "
                "ORDER BY version DESC LIMIT 1",
                (kind, entry_id),
            ).fetchone()
        return _version(row) if row else None

    def get(self, kind: str, entry_id: str, version: int) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM versions WHERE kind = ? AND entry_id = ? AND version = ?",
                (kind, entry_id, version),
            ).fetchone()
        return _version(row) if row else None

    def history(self, kind: str, entry_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM versions WHERE kind = ? AND entry_id = ? ORDER BY version",
                (kind, entry_id),
            ).fetchall()
        return [_version(r) for r in rows]

    def by_refinement(self, refinement_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM versions WHERE refinement_id = ? ORDER BY seq", (refinement_id,)
            ).fetchall()
        return [_version(r) for r in rows]

    def entry_keys(self) -> list[tuple[str, str]]:
        """Every (kind, id) with a history, deleted entries included."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT kind, entry_id FROM versions").fetchall()
        return [(r["kind"], r["entry_id"]) for r in rows]

    def append(
        self,
        kind: str,
        entry_id: str,
        *,
        op: str,
        author: str,
        before: Files | None,
        after: Files | None,
        digest: str | None,
        reason: str = "",
        evidence: list[Any] | None = None,
        refinement_id: str | None = None,
    ) -> dict[str, Any]:
        before, after, reason, evidence = self.scrub([before, after, reason, evidence])
        with self.transaction():
            last = self.latest(kind, entry_id)
            version = (last["version"] if last else 0) + 1
            self._db.execute(
                "INSERT INTO versions (kind, entry_id, version, op, author, reason, evidence, "
                "refinement_id, ts, before, after, hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    kind,
                    entry_id,
                    version,
                    op,
                    author,
                    reason or "",
                    json.dumps(evidence or [], default=str),
                    refinement_id,
                    time.time(),
                    json.dumps(before) if before is not None else None,
                    json.dumps(after) if after is not None else None,
                    digest,
                ),
            )
        out = self.get(kind, entry_id, version)
        assert out is not None
        return out

    # -- the index of worked examples (see harness.examples) ---------------------------------
    def index_example(
        self, entry_id: str, version: int, outcome: str | None, terms: list[str]
    ) -> None:
        """Index an example's task terms (`outcome` None: it is gone or broken: unindexed)."""
        with self.transaction():
            if outcome is None:
                self._db.execute("DELETE FROM example_terms WHERE entry_id = ?", (entry_id,))
                return
            self._db.execute(
                "INSERT OR REPLACE INTO example_terms (entry_id, version, outcome, terms) "
                "VALUES (?, ?, ?, ?)",
                (entry_id, version, outcome, json.dumps(terms)),
            )

    def indexed_examples(self) -> list[tuple[str, int, str, list[str]]]:
        """(id, version, outcome, terms) of every indexed example."""
        with self._lock:
            rows = self._db.execute(
                "SELECT entry_id, version, outcome, terms FROM example_terms ORDER BY entry_id"
            ).fetchall()
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in rows]

    # -- refinements ------------------------------------------------------------------------
    def put_refinement(self, record: dict[str, Any]) -> None:
        record = self.scrub(record)
        row = {
            k: (json.dumps(v, default=str) if k in _REFINEMENT_JSON else v)
            for k, v in record.items()
        }
        row["updated"] = time.time()
        cols = ", ".join(row)
        marks = ", ".join(f":{k}" for k in row)
        with self.transaction():
            self._db.execute(f"INSERT OR REPLACE INTO refinements ({cols}) VALUES ({marks})", row)

    def refinement(self, refinement_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM refinements WHERE id = ?", (refinement_id,)
            ).fetchone()
        return _refinement(row) if row else None

    def refinements(self, limit: int = 50) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT * FROM refinements ORDER BY created DESC, rowid DESC LIMIT ?", (int(limit),)
            ).fetchall()
        return [_refinement(r) for r in rows]


def diff(before: Files | None, after: Files | None, label_a: str, label_b: str) -> str:
    """A unified diff of two snapshots, file by file."""
    before, after = before or {}, after or {}
    out: list[str] = []
    for name in sorted(set(before) | set(after)):
        a = before.get(name, "").splitlines(keepends=True)
        b = after.get(name, "").splitlines(keepends=True)
        out.extend(
            difflib.unified_diff(a, b, fromfile=f"{label_a}/{name}", tofile=f"{label_b}/{name}")
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def _version(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out["evidence"] = json.loads(out["evidence"] or "[]")
    for key in ("before", "after"):
        out[key] = json.loads(out[key]) if out[key] is not None else None
    return out


def _refinement(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    empty: dict[str, Any] = {"evidence": [], "edits": [], "usage": {}, "rolled_back": None}
    for key in _REFINEMENT_JSON:
        out[key] = json.loads(out[key]) if out[key] else empty[key]
    return out
