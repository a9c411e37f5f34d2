"""A harness store written before the kind `spec` was renamed `subagent`: its files and its
history are migrated when it is first opened, and nothing is lost or counted as a hand edit."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from prime_kernel.harness import Harness, proposals
from prime_kernel.harness.files import digest

# The two tables as the release before the rename created them.
OLD_SCHEMA = """
CREATE TABLE versions (
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
CREATE TABLE refinements (
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
"""

V1 = {"entry.md": "---\ntitle: Reviews code\nmax_turns: 3\n---\n\nReview it.\n"}
V2 = {"entry.md": "---\ntitle: Reviews code\nmax_turns: 3\n---\n\nReview it twice.\n"}


def write_old_store(root: Path) -> None:
    """`specs/reviewer.md` at version 2 with its history, and a proposal whose pending edit
    creates the spec `critic`, as the release before the rename wrote them."""
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "reviewer.md").write_text(V2["entry.md"])
    db = sqlite3.connect(root / "history.sqlite3")
    db.executescript(OLD_SCHEMA)
    for version, op, before, after in ((1, "create", None, V1), (2, "update", V1, V2)):
        db.execute(
            "INSERT INTO versions (kind, entry_id, version, op, author, ts, before, after, hash) "
            "VALUES ('spec', 'reviewer', ?, ?, 'user', ?, ?, ?, ?)",
            (
                version,
                op,
                float(version),
                json.dumps(before) if before else None,
                json.dumps(after),
                digest(after),
            ),
        )
    edit = {
        "op": "create",
        "kind": "spec",
        "id": "critic",
        "content": "Be critical.",
        "index": 0,
        "status": "pending",
        "flags": [],
        "note": "",
        "evidence": [],
        "scope": "project",
    }
    db.execute(
        "INSERT INTO refinements (id, created, updated, author, trigger, status, edits) "
        "VALUES ('r-old', 1, 1, 's-agent', 'agent', 'proposed', ?)",
        (json.dumps([edit]),),
    )
    db.commit()
    db.close()


def test_an_old_store_is_migrated_on_first_open(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    write_old_store(project)
    (home / "specs").mkdir(parents=True)
    (home / "specs" / "shared.md").write_text("---\ntitle: Shared\n---\n\nFrom home.\n")
    h = Harness(project_dir=str(project), global_dir=str(home))

    assert not (project / "specs").exists() and not (home / "specs").exists()
    assert (project / "subagents" / "reviewer.md").read_text() == V2["entry.md"]
    entries, errors = h.list("subagent")
    assert errors == []
    assert [(e.id, e.scope, e.version) for e in entries] == [
        ("reviewer", "project", 2),
        ("shared", "global", 1),
    ]
    # The history moved with the file: no hand edit noticed, every version still there.
    history = h.history("subagent", "reviewer")
    assert [(v["kind"], v["version"], v["author"]) for v in history] == [
        ("subagent", 1, "user"),
        ("subagent", 2, "user"),
    ]
    assert h.subagent("reviewer")[1] == {"max_turns": 3}
    assert "+Review it twice." in h.diff("subagent", "reviewer", 1)

    # The pending edit of the proposal names the new kind, and applies as one.
    record = proposals.get_refinement(h, "r-old")
    assert record["edits"][0]["kind"] == "subagent"
    record = proposals.apply_edits(h, "r-old")
    assert record["edits"][0]["status"] == "applied"
    assert (project / "subagents" / "critic.md").is_file()
    h.close()

    # Opening again changes nothing more.
    again = Harness(project_dir=str(project), global_dir=str(home))
    assert [v["version"] for v in again.history("subagent", "reviewer")] == [1, 2]
    again.close()


def test_an_entry_in_both_folders_keeps_the_new_one(tmp_path: Path) -> None:
    root = tmp_path / "project"
    for folder, text in (("specs", "old"), ("subagents", "new")):
        (root / folder).mkdir(parents=True)
        (root / folder / "x.md").write_text(f"---\ntitle: {text}\n---\n\n{text}\n")
    (root / "specs" / "only-old.md").write_text("---\ntitle: moved\n---\n\nmoved\n")
    h = Harness(project_dir=str(root), global_dir=str(tmp_path / "home"))
    assert h.get("subagent", "x").title == "new"
    assert h.get("subagent", "only-old").title == "moved"
    assert [p.name for p in (root / "specs").iterdir()] == ["x.md"]  # left, never overwritten
    h.close()


def test_the_old_kind_name_is_read_as_the_new_one_with_a_warning(tmp_path: Path) -> None:
    h = Harness(project_dir=str(tmp_path / "project"), global_dir=str(tmp_path / "home"))
    with pytest.warns(FutureWarning, match="'spec' is deprecated: use 'subagent'"):
        entry = h.create("spec", "critic", content="Be critical.")
    assert entry.kind == "subagent"
    with pytest.warns(FutureWarning, match="'specs' is deprecated: use 'subagents'"):
        assert [e.id for e in h.list("specs")[0]] == ["critic"]
    h.close()
