"""What the API returns: a session's record, usage, a trajectory event, a push notification —
as JSON Schemas built from the enums here, so they cannot drift from them.

The other half of requests.py (what starting a session takes). The record these schemas
describe lives in the daemon as `SessionRecord` (daemon/records.py).
"""

from __future__ import annotations

from typing import Any

from .events import EVENTS, EventKind
from .states import SessionKind, SessionState

USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "total_tokens",
    "cost",
    "uncached_cost",
    "model_calls",
    "cells",
    "wall_time",
    "kernel_time",
)

_S: dict[str, Any] = {"type": "string"}
_NS: dict[str, Any] = {"type": ["string", "null"]}
_NN: dict[str, Any] = {"type": ["number", "null"]}

USAGE: dict[str, Any] = {
    "title": "Usage",
    "description": "What a session (or a subtree) spent. `cached_tokens` and "
    "`cache_write_tokens` are the prompt tokens the provider read from / wrote to its prompt "
    "cache (part of `prompt_tokens`); `uncached_cost` is what the calls would have cost without "
    "the cache.",
    "type": "object",
    "required": list(USAGE_FIELDS),
    "properties": {k: {"type": "number"} for k in USAGE_FIELDS},
}

GOAL: dict[str, Any] = {
    "title": "Goal",
    "description": "What a session works towards: in its model's context on every turn, kept "
    "through compactions and restarts (`goal.set/get/done/clear` in a REPL, "
    "/api/prime/sessions/{id}/goal).",
    "type": "object",
    "required": ["text", "status", "set_by", "set_at", "updated"],
    "properties": {
        "text": _S,
        "status": {"enum": ["active", "done"]},
        "set_by": {"type": "string", "description": 'The session that set it, or "user".'},
        "set_at": {"type": "number"},
        "updated": {"type": "number"},
        "summary": {"type": "string", "description": "What `goal.done(summary)` said."},
        "progress": {
            "type": "array",
            "description": "The latest progress notes, oldest first.",
            "items": {
                "type": "object",
                "required": ["note", "ts", "by"],
                "properties": {"note": _S, "ts": {"type": "number"}, "by": _S},
            },
        },
    },
}

SCHEDULE: dict[str, Any] = {
    "title": "Schedule",
    "description": "A timer or cron that delivers `message` to a session (as a message from "
    '"schedule"); each tick is claimed in the store before it is delivered.',
    "type": "object",
    "required": [
        "id",
        "owner",
        "target_id",
        "kind",
        "spec",
        "message",
        "created",
        "next",
        "ticks",
        "missed",
        "skipped",
        "state",
    ],
    "properties": {
        "id": _S,
        "owner": {
            "type": "string",
            "description": 'The session that made it (it ends with that session), or "user".',
        },
        "target_id": {"type": "string", "description": "The session its ticks go to."},
        "kind": {"enum": ["every", "at", "cron"]},
        "spec": {
            "type": "string",
            "description": "every: seconds; at: an ISO time; cron: the 5-field expression.",
        },
        "message": _S,
        "created": {"type": "number"},
        "next": {"type": ["number", "null"], "description": "When it ticks next (null: never)."},
        "last": _NN,
        "ticks": {"type": "integer", "description": "Ticks delivered."},
        "missed": {
            "type": "integer",
            "description": "Ticks that fell due while the server was down (or busy) and were "
            "coalesced into the next one delivered.",
        },
        "skipped": {
            "type": "integer",
            "description": "Ticks not delivered (target ended, budget spent, mailbox full).",
        },
        "state": {"enum": ["active", "done", "cancelled", "ended"]},
        "reason": {
            "type": ["string", "null"],
            "description": "Why it ended, or why its last tick was skipped.",
        },
    },
}

VERIFICATION: dict[str, Any] = {
    "title": "Verification",
    "description": "Whether a session's answer was verified right or wrong, by whom (`user`, "
    "`checker <name>`, `gate <test>`), and what the harness learned from it.",
    "type": "object",
    "required": ["correct", "by", "ts"],
    "properties": {
        "correct": {"type": "boolean"},
        "by": _S,
        "ts": {"type": "number"},
        "note": _S,
        "learned": {
            "type": "object",
            "description": "The proposal (a refinement record) holding what was learned.",
            "required": ["refinement_id", "status"],
            "properties": {"refinement_id": _S, "status": _S, "entry": _S},
        },
        "refused": {"type": "string", "description": "Why nothing was learned."},
    },
}

SESSION: dict[str, Any] = {
    "title": "Session",
    "description": "A session's record, as every GET of the API returns it.",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "id",
        "name",
        "prompt",
        "model",
        "state",
        "kind",
        "parent_id",
        "root_id",
        "depth",
        "created",
        "has_answer",
        "kernel_alive",
        "usage",
        "children",
        "options",
    ],
    "properties": {
        "id": _S,
        "name": _S,
        "prompt": {"type": "string", "description": "The task (cut to 500 characters in lists)."},
        "model": _NS,
        "state": {"enum": [s.value for s in SessionState]},
        "kind": {"enum": [k.value for k in SessionKind]},
        "parent_id": _NS,
        "root_id": _S,
        "depth": {"type": "integer"},
        "notebook_path": _NS,
        "kernel_id": _NS,
        "created": {"type": "number"},
        "started": _NN,
        "ended": _NN,
        "error": _NS,
        "answer_repr": _NS,
        "context_type": _NS,
        "budget": {"type": ["object", "null"]},
        "options": {
            "type": "object",
            "description": "max_turns, persistent, subagent (a record from before the rename: "
            "spec), instructions, kernel_restarts; "
            "autonomous (gate and limits) and autonomy (continuation, phase, turns) for an "
            "autonomous session",
        },
        # Present only while the session has a goal.
        "goal": GOAL,
        # Present once its answer was verified.
        "verified": VERIFICATION,
        "has_answer": {"type": "boolean"},
        "kernel_alive": {
            "type": "boolean",
            "description": "Whether its kernel is up (a person can attach a console).",
        },
        "usage": {
            "type": "object",
            "required": ["own", "subtree"],
            "properties": {"own": USAGE, "subtree": USAGE},
        },
        "children": {"type": "array", "items": _S},
    },
}

EVENT: dict[str, Any] = {
    "title": "TrajectoryEvent",
    "description": "One event of a session's trajectory; `data` depends on `kind`.",
    "type": "object",
    "required": ["seq", "session_id", "ts", "kind", "data"],
    "properties": {
        "seq": {"type": "integer"},
        "session_id": _S,
        "ts": {"type": "number"},
        "kind": {"enum": [k.value for k in EventKind]},
        "data": {"type": "object"},
    },
}

SESSION_EVENT_SCHEMA_ID = "https://events.prime-kernel.dev/prime_kernel/session/v1"

NOTIFICATION: dict[str, Any] = {
    "title": "SessionNotification",
    "description": "Pushed on jupyter_server's event bus for every trajectory event.",
    "type": "object",
    "required": ["session_id", "kind", "state", "seq"],
    "properties": {
        "session_id": _S,
        "kind": {"enum": [k.value for k in EventKind]},
        "state": {"enum": [s.value for s in SessionState]},
        "seq": {"type": "integer"},
        "root_id": _S,
        "parent_id": _NS,
    },
}

MODEL_DELTA_SCHEMA_ID = "https://events.prime-kernel.dev/prime_kernel/model_delta/v1"

MODEL_DELTA: dict[str, Any] = {
    "title": "ModelDelta",
    "description": "Pushed on jupyter_server's event bus while a model call streams its reply: "
    "the text added since the previous delta of the same call (coalesced, never stored; the "
    "stored `model_call` event has the whole reply). `call` numbers the session's model calls "
    "from 1; `seq` numbers the deltas of one call from 1; the last delta of a call has "
    "`done: true` (its text may be empty), also when the call was cancelled or failed.",
    "type": "object",
    "required": ["session_id", "root_id", "call", "seq", "text", "done"],
    "properties": {
        "session_id": _S,
        "root_id": _S,
        "call": {"type": "integer", "minimum": 1},
        "seq": {"type": "integer", "minimum": 1},
        "text": {"type": "string"},
        "done": {"type": "boolean"},
    },
}

LIST: dict[str, Any] = {
    "title": "SessionList",
    "description": "GET /api/prime/sessions: records newest first (in the order they were "
    "admitted), brief: prompt, answer_repr and error cut to 500 characters, name to the name "
    "limit, options without a sub-agent's instructions (GET /sessions/{id} has them whole); "
    "`cursor` and `epoch` let a client ask for what changed since (`?changed_after=cursor`, "
    "valid while `epoch` is the same daemon run).",
    "type": "object",
    "required": ["sessions", "cursor", "epoch"],
    "properties": {
        "sessions": {"type": "array", "items": SESSION},
        "cursor": {"type": "integer"},
        "epoch": _S,
    },
}


MODELS: dict[str, Any] = {
    "title": "ModelList",
    "description": "GET /api/prime/models: the model a session gets when none is named, and the "
    "known ones (any other litellm name is accepted too).",
    "type": "object",
    "required": ["default", "models"],
    "properties": {"default": _S, "models": {"type": "array", "items": _S}},
}

CANCELLED: dict[str, Any] = {
    "title": "CancelResult",
    "description": "DELETE /api/prime/sessions/{id}: the sessions cancelled (it and its subtree).",
    "type": "object",
    "required": ["cancelled", "already_ended", "state"],
    "properties": {
        "cancelled": {"type": "array", "items": _S},
        "already_ended": {"type": "boolean"},
        "state": {"enum": [s.value for s in SessionState]},
    },
}

EXPORTED: dict[str, Any] = {
    "title": "ExportResult",
    "description": "POST /api/prime/sessions/{id}/export: what was written (paths relative to "
    "the server root; a subtree is a folder of notebooks).",
    "type": "object",
    "required": ["session_id", "path", "files"],
    "properties": {"session_id": _S, "path": _S, "files": {"type": "array", "items": _S}},
}

SCHEDULE_LIST: dict[str, Any] = {
    "title": "ScheduleList",
    "description": "GET /api/prime/schedules: schedules, newest first (?session=ID: those "
    "owned by or ticking to that session; ?state=active).",
    "type": "object",
    "required": ["schedules"],
    "properties": {"schedules": {"type": "array", "items": SCHEDULE}},
}


def event_data(kind: EventKind) -> dict[str, Any]:
    return EVENTS[kind].schema
