"""The REST API: every route (`ROUTES`, under /api/prime) and the JSON Schema of every request
body it takes (`schemas/*.json`). A test checks the server mounts exactly these routes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).parent / "schemas"


def names() -> list[str]:
    return sorted(p.stem for p in SCHEMA_DIR.glob("*.json"))


@cache
def schema(name: str) -> dict[str, Any]:
    """The schema `name` (e.g. "create_session")."""
    return dict(json.loads((SCHEMA_DIR / f"{name}.json").read_text()))


@dataclass(frozen=True)
class Route:
    method: str
    # `{id}` stands for a session id, `{kind}`/`{entry}` for a harness entry, `{schedule}` for
    # a schedule id, `{blob}` for a spilled value's blob id
    path: str
    audience: str  # "user" (jupyter_server auth) or "kernel" (the session's token)
    summary: str
    body: str | None = None  # the schema of its JSON body (schemas/<body>.json)


_U, _K = "user", "kernel"

ROUTES: list[Route] = [
    # sessions
    Route(
        "GET", "/sessions", _U, "List sessions: ?state=, ?root=, ?parent=, ?limit=, ?changed_after="
    ),
    Route("POST", "/sessions", _U, "Start a root agent session", "create_session"),
    Route("GET", "/sessions/{id}", _U, "One session's record"),
    Route("DELETE", "/sessions/{id}", _U, "Cancel a session and its subtree"),
    Route("GET", "/sessions/{id}/events", _U, "Its trajectory: ?after=SEQ"),
    Route("POST", "/sessions/{id}/interrupt", _U, "Interrupt the cell its kernel runs"),
    Route("POST", "/sessions/{id}/resume", _U, "Run an INACTIVE session again"),
    Route("GET", "/sessions/{id}/replay", _U, "A replay against its recording: divergent cells"),
    Route("POST", "/sessions/{id}/verify", _U, "Mark its answer right or wrong", "verify"),
    Route("GET", "/sessions/{id}/context", _U, "The pickled context it was given"),
    Route("POST", "/sessions/{id}/messages", _U, "A person's message", "user_message"),
    Route("GET", "/sessions/{id}/export", _U, "Its notebook (a download); ?with_context=1"),
    Route("POST", "/sessions/{id}/export", _U, "Write its notebook under the root", "export"),
    Route("GET", "/sessions/{id}/goal", _U, 'Its goal ({"goal": Goal | null})'),
    Route("PUT", "/sessions/{id}/goal", _U, "Set its goal, note progress, mark it done", "goal"),
    Route("DELETE", "/sessions/{id}/goal", _U, "Clear its goal"),
    # schedules (heartbeats)
    Route("GET", "/schedules", _U, "Schedules: ?session=ID, ?state=active"),
    Route("POST", "/schedules", _U, "A person's schedule", "create_schedule"),
    Route("GET", "/schedules/{schedule}", _U, "One schedule"),
    Route("DELETE", "/schedules/{schedule}", _U, "Cancel a schedule"),
    Route("GET", "/models", _U, "The default model and the known ones"),
    Route("GET", "/status", _U, "The version and how agents run here (the sandbox mode)"),
    Route("POST", "/capability", _U, "Let a kernel of yours start agents", "capability"),
    # from kernels
    Route("POST", "/kernel/sessions", _K, "rlm(): start a child", "create_child"),
    Route("POST", "/kernel/sessions/batch", _K, "rlm.map(): start children", "create_children"),
    Route("GET", "/kernel/sessions/{id}", _K, "A descendant's record"),
    Route("DELETE", "/kernel/sessions/{id}", _K, "Cancel a descendant"),
    Route("GET", "/kernel/sessions/{id}/wait", _K, "Wait for a descendant: ?timeout="),
    Route("GET", "/kernel/sessions/{id}/answer", _K, "A descendant's pickled answer"),
    Route("GET", "/kernel/sessions/{id}/replay", _K, "h.replay_report(): a replay's divergence"),
    Route(
        "POST",
        "/kernel/sessions/{id}/verify",
        _K,
        "h.verify() in a notebook (a person's)",
        "verify",
    ),
    Route("POST", "/kernel/blobs", _K, "Upload a pickled value: ?what=context|snapshot"),
    Route("GET", "/kernel/context", _K, "The caller's pickled context"),
    Route("POST", "/kernel/answer", _K, "answer(value): its pickle as the body, ?repr="),
    Route("POST", "/kernel/llm", _K, "llm() / llm.batch()", "llm"),
    Route("GET", "/kernel/whoami", _K, "The caller's record"),
    Route("GET", "/kernel/usage", _K, "The caller's usage, own and subtree"),
    Route("GET", "/kernel/snapshot", _K, "The caller's latest REPL snapshot"),
    Route("POST", "/kernel/compact", _K, "compact(): summarise before the next turn"),
    Route("POST", "/kernel/messages", _K, "send()", "kernel_message"),
    Route("GET", "/kernel/messages", _K, "recv(): ?timeout="),
    Route("GET", "/kernel/agents", _K, "agents(): who the caller can message"),
    Route("POST", "/kernel/export", _K, "export() / h.export()", "kernel_export"),
    Route("GET", "/kernel/goal", _K, "goal.get()"),
    Route("PUT", "/kernel/goal", _K, "goal.set() / goal.done() / goal.progress()", "goal"),
    Route("DELETE", "/kernel/goal", _K, "goal.clear()"),
    Route("GET", "/kernel/schedules", _K, "schedule.list(): the caller's and those to it"),
    Route("POST", "/kernel/schedules", _K, "schedule.every() / at() / cron()", "kernel_schedule"),
    Route("DELETE", "/kernel/schedules/{schedule}", _K, "schedule.cancel()"),
    Route("POST", "/kernel/gc", _K, "gc(drop=, spill=): record what it did", "gc_report"),
    Route("POST", "/kernel/spills", _K, "Spill a pickled value to disk: ?name=&type="),
    Route("GET", "/kernel/spills/{blob}", _K, "Reload a value the caller spilled"),
    # the harness
    Route("GET", "/harness", _U, "Every entry (?kind=), broken files, the review policy"),
    Route("POST", "/harness", _U, "Create an entry"),
    Route("POST", "/harness/refine", _U, "Refine the harness from evidence", "refine"),
    Route("POST", "/harness/import", _U, "Import harness_state.json or SKILL.md folders"),
    Route("POST", "/harness/export", _U, "Write the harness as a folder under the root"),
    Route(
        "GET",
        "/harness/refinements",
        _U,
        "Refinements and proposals, newest first (?limit=), and the progress of those running",
    ),
    Route("GET", "/harness/refinements/{rid}", _U, "One refinement"),
    Route("POST", "/harness/refinements/{rid}/{action}", _U, "approve | reject | rollback"),
    Route("GET", "/harness/{kind}/{entry}", _U, "One entry"),
    Route("PUT", "/harness/{kind}/{entry}", _U, "Change an entry (?base_version=)"),
    Route("DELETE", "/harness/{kind}/{entry}", _U, "Delete an entry (its history stays)"),
    Route("GET", "/harness/{kind}/{entry}/history", _U, "Every version"),
    Route("GET", "/harness/{kind}/{entry}/versions/{version}", _U, "One version's files"),
    Route("GET", "/harness/{kind}/{entry}/diff", _U, "A diff: ?a=&b="),
    Route("POST", "/harness/{kind}/{entry}/rollback", _U, "Restore a version"),
    Route("GET", "/kernel/harness", _K, "harness.*.list()"),
    Route("POST", "/kernel/harness/refine", _K, "refine()", "refine"),
    Route("POST", "/kernel/harness/{kind}", _K, "harness.*.create()"),
    Route("GET", "/kernel/harness/{kind}/{entry}", _K, "harness.*.get()"),
    Route("PUT", "/kernel/harness/{kind}/{entry}", _K, "harness.*.update()"),
    Route("DELETE", "/kernel/harness/{kind}/{entry}", _K, "harness.*.delete()"),
    Route("GET", "/kernel/harness/{kind}/{entry}/history", _K, "harness.*.history()"),
]
