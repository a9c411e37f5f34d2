"""Trajectory event kinds: what each means and the shape of its data.

A session's trajectory is an ordered list of events `{seq, session_id, ts, kind, data}` kept in
the store; each is also pushed to listeners (the server's event bus, the CLI's progress view).
Adding a kind is adding an entry to `EVENTS` and a renderer in each view's registry (text in
`prime_kernel.cli.render`, notebook cells in `prime_kernel.export.story`, DOM in the lab
extension's `renderers.ts`); tests fail while a view lacks one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .states import SessionState


class EventKind(str, Enum):
    TASK = "task"
    STATE = "state"
    MODEL_CALL = "model_call"
    ASSISTANT = "assistant"
    CELL = "cell"
    OBSERVATION = "observation"
    ANSWER = "answer"
    CHILD = "child"
    MAIL_IN = "mail_in"
    MAIL_OUT = "mail_out"
    COMPACTION = "compaction"
    SNAPSHOT = "snapshot"
    RESTORE = "restore"
    RESUME = "resume"
    KERNEL = "kernel"
    REFINEMENT = "refinement"
    VERIFIED = "verified"
    GOAL = "goal"
    CONTINUATION = "continuation"
    GATE = "gate"
    SCHEDULE = "schedule"
    GC = "gc"
    ERROR = "error"


@dataclass(frozen=True)
class EventSpec:
    kind: EventKind
    title: str
    description: str
    # JSON Schema of `data` (only the fields every producer sets are required).
    schema: dict[str, Any] = field(default_factory=dict)


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": props}


_S = {"type": "string"}
_N = {"type": "number"}
_I = {"type": "integer"}
_B = {"type": "boolean"}
_NS = {"type": ["string", "null"]}
_USAGE = {
    "type": "object",
    "properties": {
        k: _N
        for k in (
            "prompt_tokens",
            "completion_tokens",
            "cached_tokens",
            "cache_write_tokens",
            "total_tokens",
        )
    },
}
_STRINGS = {"type": "array", "items": _S}
_REASONS = {"type": "object", "additionalProperties": _S}
_OUTPUT = {"type": "object", "required": ["output_type"], "properties": {"output_type": _S}}

EVENTS: dict[EventKind, EventSpec] = {
    e.kind: e
    for e in [
        EventSpec(
            EventKind.TASK,
            "Task",
            "The session was created with this prompt.",
            _obj(
                ["prompt"],
                prompt=_S,
                model=_NS,
                budget={"type": ["object", "null"]},
                context_type=_S,
            ),
        ),
        EventSpec(
            EventKind.STATE,
            "State",
            "The session changed state; `reason` says why when it is not obvious.",
            _obj(["state"], state={"enum": [s.value for s in SessionState]}, reason=_S),
        ),
        EventSpec(
            EventKind.MODEL_CALL,
            "Model call",
            "One model call: tokens, cost and duration. `uncached_cost`: its price without "
            "the provider's prompt cache; `cache_break`: where its prompt stopped beginning "
            "with the previous call's stored conversation (`planned`: by a compaction).",
            _obj(
                ["model", "usage", "cost", "duration"],
                model=_S,
                usage=_USAGE,
                cost=_N,
                uncached_cost=_N,
                duration=_N,
                finish_reason=_NS,
                purpose=_S,
                cache_break=_obj(["at", "planned"], at=_I, planned=_B),
            ),
        ),
        EventSpec(
            EventKind.ASSISTANT,
            "Model",
            "What the model said in a turn, with its tool calls.",
            _obj(["content"], content=_S, tool_calls={"type": ["array", "null"]}),
        ),
        EventSpec(
            EventKind.CELL,
            "Cell",
            "Code run in the session's REPL — by the agent, by a person (`source: user`), or by "
            "the harness before the first turn (`source: setup`: the imports its model profile "
            "promises the model).",
            _obj(
                ["code", "source", "outputs", "status"],
                code=_S,
                source={"enum": ["agent", "user", "setup"]},
                outputs={"type": "array", "items": _OUTPUT},
                status={
                    "enum": ["ok", "error", "timeout", "aborted", "cancelled", "died", "killed"]
                },
                execution_count={"type": ["integer", "null"]},
                duration=_N,
                truncated_note=_S,
                exit=_S,
                names=_STRINGS,
            ),
        ),
        EventSpec(
            EventKind.OBSERVATION,
            "Observation",
            "The text of a cell's outputs as the model was shown it (capped).",
            _obj(["text"], text=_S),
        ),
        EventSpec(
            EventKind.ANSWER,
            "Answer",
            "The session's answer: `answer(value)` in its REPL, or a reply without code.",
            _obj(["repr", "kind"], repr=_S, kind={"enum": ["answer", "reply"]}),
        ),
        EventSpec(
            EventKind.CHILD,
            "Sub-agent",
            "The session started a child session.",
            _obj(["child_id", "prompt"], child_id=_S, name=_S, prompt=_S),
        ),
        EventSpec(
            EventKind.MAIL_IN,
            "Message in",
            "A message arrived (from a person, the parent, a sibling, a child or a schedule).",
            _obj(
                ["from", "sender", "message", "message_id"],
                **{"from": _S},
                sender=_S,
                message=_S,
                message_id=_S,
                schedule_id=_S,
                missed=_I,
            ),
        ),
        EventSpec(
            EventKind.MAIL_OUT,
            "Message out",
            "The session sent a message.",
            _obj(["to", "message", "message_id"], to=_S, message=_S, message_id=_S),
        ),
        EventSpec(
            EventKind.COMPACTION,
            "Context compacted",
            "Earlier turns were summarised to fit the model's window; the REPL kept everything.",
            _obj(
                ["summarised_messages", "reason"],
                before_tokens=_I,
                after_tokens=_I,
                summarised_messages=_I,
                summary=_S,
                reason={"enum": ["window", "requested"]},
                error=_S,
            ),
        ),
        EventSpec(
            EventKind.SNAPSHOT,
            "REPL saved",
            "The REPL's variables were pickled to a blob (before passivation, or at a turn).",
            _obj(
                ["blob_id", "saved"],
                blob_id=_S,
                size=_I,
                saved=_STRINGS,
                skipped=_REASONS,
                reason=_S,
            ),
        ),
        EventSpec(
            EventKind.RESTORE,
            "REPL restored",
            "A new kernel got the REPL back from the latest snapshot.",
            _obj(
                ["restored"],
                restored=_STRINGS,
                failed=_REASONS,
                skipped=_REASONS,
                reason=_S,
                lost=_STRINGS,
            ),
        ),
        EventSpec(
            EventKind.RESUME,
            "Resumed",
            "The daemon restarted and the session continues: what was in flight and what was lost.",
            _obj(
                ["reason"],
                reason=_S,
                in_flight=_NS,
                lost={"type": "array", "items": _S},
                snapshot=_NS,
            ),
        ),
        EventSpec(
            EventKind.KERNEL,
            "Kernel",
            "The session's kernel died, was killed after an interrupt failed, or was replaced.",
            _obj(
                ["event"],
                event={"enum": ["died", "killed", "restarted", "gone"]},
                detail=_S,
                exit_code={"type": ["integer", "null"]},
                signal={"type": ["string", "null"]},
            ),
        ),
        EventSpec(
            EventKind.REFINEMENT,
            "Refinement",
            "The harness was refined from this session's evidence.",
            _obj(["refinement_id", "status"], refinement_id=_S, status=_S),
        ),
        EventSpec(
            EventKind.VERIFIED,
            "Verified",
            "The session's answer was verified right or wrong — by a person, a checker or an "
            "autonomous gate — and what the harness learned from it (`learned`: the proposal "
            "holding the worked example or caution, or `refused`: why nothing was learned).",
            _obj(
                ["correct", "by"],
                correct=_B,
                by=_S,
                note=_S,
                learned={
                    "type": "object",
                    "required": ["refinement_id", "status"],
                    "properties": {"refinement_id": _S, "status": _S, "entry": _S},
                },
                refused=_S,
            ),
        ),
        EventSpec(
            EventKind.GOAL,
            "Goal",
            "The session's goal was set, marked done or cleared, or progress on it was noted; "
            '`by` is the session that did it or "user".',
            _obj(
                ["event", "by"],
                event={"enum": ["set", "progress", "done", "cleared"]},
                text=_S,
                summary=_S,
                note=_S,
                by=_S,
            ),
        ),
        EventSpec(
            EventKind.CONTINUATION,
            "Continuation",
            "An autonomous session started a continuation (1 is the first): its limits, and why "
            "the one before ended.",
            _obj(
                ["continuation", "of"],
                continuation=_I,
                of=_I,
                reason=_S,
                limits={
                    "type": "object",
                    "properties": {"turns": _I, "tokens": _I, "seconds": _N},
                },
                gate=_NS,
            ),
        ),
        EventSpec(
            EventKind.GATE,
            "Gate",
            "The termination test of an autonomous session ran after a continuation: a shell "
            "command (exit 0 passes), a Python expression (true passes), or none (an answer "
            "passes).",
            _obj(
                ["continuation", "passed", "kind"],
                continuation=_I,
                passed=_B,
                kind={"enum": ["shell", "python", "answer"]},
                command=_S,
                ended=_S,
                exit_code={"type": ["integer", "null"]},
                output=_S,
                duration=_N,
                timed_out=_B,
                error={"type": ["string", "null"]},
            ),
        ),
        EventSpec(
            EventKind.SCHEDULE,
            "Schedule",
            "A schedule delivering messages to this session (or owned by it) was created, "
            "cancelled or ended, or a tick of it was skipped (`reason`).",
            _obj(
                ["event", "schedule_id"],
                event={"enum": ["created", "cancelled", "ended", "skipped"]},
                schedule_id=_S,
                kind={"enum": ["every", "at", "cron"]},
                spec=_S,
                message=_S,
                owner=_S,
                target_id=_S,
                reason=_S,
                next={"type": ["number", "null"]},
            ),
        ),
        EventSpec(
            EventKind.GC,
            "Memory",
            "REPL variables were dropped, or spilled to disk (they reload on first use): by "
            "gc() in the REPL, or automatically at a compaction or before passivation.",
            _obj(
                ["reason"],
                reason={"enum": ["requested", "compaction", "passivation"]},
                dropped=_STRINGS,
                spilled={
                    "type": "array",
                    "items": _obj(["name", "size"], name=_S, size=_I, type=_S, blob_id=_S),
                },
                failed=_REASONS,
            ),
        ),
        EventSpec(
            EventKind.ERROR,
            "Error",
            "Something went wrong that is not a cell's own error.",
            _obj(["message"], message=_S),
        ),
    ]
}

assert set(EVENTS) == set(EventKind), "every event kind needs a spec"
