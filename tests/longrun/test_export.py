"""The long-horizon events in an exported notebook, rendered from data alone."""

from __future__ import annotations

import time

import nbformat

from prime_kernel.daemon import usage
from prime_kernel.export import RENDERERS, NotebookExporter
from prime_kernel.protocol.events import EventKind


def _kind(nb: nbformat.NotebookNode, kind: str) -> list[str]:
    return [c.source for c in nb.cells if c.metadata.get("prime", {}).get("kind") == kind]


def test_goals_continuations_gates_schedules_and_memory_are_shown() -> None:
    assert set(RENDERERS) == set(EventKind)
    sid = "sauto1"
    now = time.time()
    goal = {"text": "pass the tests", "status": "done", "set_by": sid, "set_at": now}
    record = {
        "id": sid,
        "name": "n",
        "prompt": "fix it",
        "model": "scripted/x",
        "state": "DONE",
        "kind": "agent",
        "parent_id": None,
        "root_id": sid,
        "depth": 0,
        "created": now,
        "started": now,
        "ended": now,
        "options": {"autonomous": {"gate": {"shell": "pytest -q"}, "max_continuations": 3}},
        "usage": {"own": usage.empty(), "subtree": usage.empty()},
        "goal": {**goal, "updated": now, "summary": "all green"},
        "children": [],
    }
    limits = {"turns": 12, "tokens": 80000, "seconds": 1800}
    events = [
        ("goal", {"event": "set", "text": "pass the tests", "by": sid}),
        ("continuation", {"continuation": 1, "of": 3, "limits": limits, "gate": "`pytest -q`"}),
        ("goal", {"event": "progress", "note": "2 of 5 pass", "by": "user"}),
        (
            "gate",
            {
                "continuation": 1,
                "passed": False,
                "kind": "shell",
                "command": "pytest -q",
                "exit_code": 1,
                "output": "3 failed, 2 passed",
                "duration": 1.5,
            },
        ),
        (
            "continuation",
            {"continuation": 2, "of": 3, "limits": limits, "reason": "it answered"},
        ),
        (
            "schedule",
            {
                "event": "created",
                "schedule_id": "h1",
                "kind": "every",
                "spec": "600.0",
                "message": "check",
                "owner": "user",
                "target_id": sid,
            },
        ),
        (
            "gc",
            {
                "reason": "compaction",
                "dropped": [],
                "spilled": [{"name": "df", "size": 20_000_000, "type": "DataFrame"}],
            },
        ),
        ("goal", {"event": "done", "text": "pass the tests", "summary": "all green", "by": sid}),
    ]
    trajectory = [
        {"seq": seq, "session_id": sid, "ts": now, "kind": kind, "data": data}
        for seq, (kind, data) in enumerate(events, 1)
    ]
    nb = NotebookExporter().notebook(record, trajectory)
    header = nb.cells[0].source
    assert "- **Autonomous:** until the gate `pytest -q` passes, in up to 3 continuations" in header
    assert "- **Goal** (done): pass the tests" in header
    goals = _kind(nb, "goal")
    assert goals[0] == f"**Goal set** by `{sid}`\n\n> pass the tests"
    assert goals[1] == "*Progress on the goal* (a person): 2 of 5 pass"
    assert goals[2].startswith("**Goal achieved** (") and "> all green" in goals[2]
    first, second = _kind(nb, "continuation")
    assert first.startswith("### Continuation 1 of 3") and "gate: `pytest -q`" in first
    assert "The previous one ended: it answered." in second
    (gate,) = _kind(nb, "gate")
    assert gate.startswith("**Gate failed**: `pytest -q` (exit status 1, 1.5 s)")
    assert "3 failed, 2 passed" in gate
    (schedule,) = _kind(nb, "schedule")
    assert "`h1` created (every 10m, owned by a person" in schedule
    (memory,) = _kind(nb, "gc")
    assert memory == "*Memory at a compaction:* spilled to disk: `df` (20000000 bytes)."
    assert nbformat.reads(nbformat.writes(nb), as_version=4) == nb
