"""What the API returns: a session's record, usage, a trajectory event, a push notification —
as JSON Schemas built from the enums here, so they cannot drift from them."""

from __future__ import annotations

from typing import Any

from .events import EVENTS, EventKind
from .states import SessionKind, SessionState

USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "total_tokens",
    "cost",
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
    "description": "What a session (or a subtree) spent.",
    "type": "object",
    "required": list(USAGE_FIELDS),
    "properties": {k: {"type": "number"} for k in USAGE_FIELDS},
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
            "description": "max_turns, persistent, spec, instructions, kernel_restarts",
        },
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

LIST: dict[str, Any] = {
    "title": "SessionList",
    "description": "GET /api/prime/sessions: records newest first (in the order they were "
    "admitted), brief: prompt, answer_repr and error cut to 500 characters, name to the name "
    "limit, options without a spec's instructions (GET /sessions/{id} has them whole); "
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


def event_data(kind: EventKind) -> dict[str, Any]:
    return EVENTS[kind].schema
