"""Trajectory events as text: one renderer per event kind (`RENDERERS`), for `prime-agent show`
and the live progress of `prime-agent run`.

A renderer takes an event's `data` and a character limit for long text (model messages, cell
outputs) and returns the event's lines, the first a headline, the rest indented by the caller;
an empty list when the event adds nothing a person reads (an observation repeats the outputs its
cell shows). A kind this version does not know (a newer store) is shown as its data.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..protocol.events import EventKind
from ..util.format import output_text

Renderer = Callable[[dict[str, Any], int], list[str]]


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def _task(d: dict[str, Any], limit: int) -> list[str]:
    context = f" (context: a {d['context_type']})" if d.get("context_type") else ""
    return [f"task: {clip(str(d.get('prompt', '')), limit)}{context}"]


def _state(d: dict[str, Any], limit: int) -> list[str]:
    reason = f": {d['reason']}" if d.get("reason") else ""
    return [f"{d.get('state')}{reason}"]


def _model_call(d: dict[str, Any], limit: int) -> list[str]:
    u = d.get("usage") or {}
    purpose = f" for {d['purpose']}" if d.get("purpose") else ""
    return [
        f"model {d.get('model')}{purpose}: {int(u.get('prompt_tokens', 0))} tokens in / "
        f"{int(u.get('completion_tokens', 0))} out, {float(d.get('duration') or 0):.1f}s"
    ]


def _assistant(d: dict[str, Any], limit: int) -> list[str]:
    content = str(d.get("content") or "").strip()
    return [f"says: {clip(content, limit)}"] if content else []


# Who ran a cell, by its `source`; the agent's are plain "cell".
_CELL_SOURCES = {"user": "person's cell", "setup": "harness setup cell"}


def _cell(d: dict[str, Any], limit: int) -> list[str]:
    who = _CELL_SOURCES.get(str(d.get("source")), "cell")
    count = f" [{d['execution_count']}]" if d.get("execution_count") else ""
    lines = [f"{who}{count} {d.get('status')}:"]
    lines += ["> " + line for line in str(d.get("code", "")).splitlines()]
    text = "".join(output_text(o) for o in d.get("outputs") or [])
    if text.strip():
        lines += ["  " + line for line in clip(text, limit).splitlines()]
    return lines


def _nothing(d: dict[str, Any], limit: int) -> list[str]:
    return []


def _answer(d: dict[str, Any], limit: int) -> list[str]:
    label = "reply (no code ran)" if d.get("kind") == "reply" else "answer"
    return [f"{label}: {clip(str(d.get('repr', '')), limit)}"]


def _child(d: dict[str, Any], limit: int) -> list[str]:
    return [f"started child {d.get('child_id')}: {clip(str(d.get('prompt', '')), 80)}"]


def _mail_in(d: dict[str, Any], limit: int) -> list[str]:
    return [f"message from {d.get('sender')}: {clip(str(d.get('message', '')), limit)}"]


def _mail_out(d: dict[str, Any], limit: int) -> list[str]:
    return [f"message to {d.get('to')}: {clip(str(d.get('message', '')), limit)}"]


def _compaction(d: dict[str, Any], limit: int) -> list[str]:
    failed = f" (the summary failed: {d['error']})" if d.get("error") else ""
    return [
        f"context compacted: {d.get('summarised_messages')} messages summarised "
        f"({d.get('before_tokens')} → {d.get('after_tokens')} tokens){failed}"
    ]


def _snapshot(d: dict[str, Any], limit: int) -> list[str]:
    # What a snapshot leaves out stays in the live REPL: only a new kernel would lack it.
    kept = len(d.get("saved") or [])
    line = (
        f"REPL snapshot ({d.get('reason', 'snapshot')}): {kept} "
        f"{'name' if kept == 1 else 'names'} kept for a restart"
    )
    skipped = d.get("skipped") or {}
    if skipped:
        why = "; ".join(f"{name} ({reason})" for name, reason in skipped.items())
        line += f"; a new kernel would lack {why}"
    return [line]


def _restore(d: dict[str, Any], limit: int) -> list[str]:
    line = f"REPL restored: {', '.join(d.get('restored') or []) or 'nothing'}"
    if d.get("lost"):
        line += f"; lost: {', '.join(d['lost'])}"
    if d.get("failed"):
        line += f"; could not restore: {', '.join(d['failed'])}"
    return [line]


def _resume(d: dict[str, Any], limit: int) -> list[str]:
    lines = [f"resumed: {d.get('reason')}"]
    if d.get("in_flight"):
        lines.append("this cell was running and was not re-run:")
        lines += ["> " + line for line in str(d["in_flight"]).splitlines()]
    return lines


def _kernel(d: dict[str, Any], limit: int) -> list[str]:
    detail = f": {d['detail']}" if d.get("detail") else ""
    return [f"kernel {d.get('event')}{detail}"]


def _refinement(d: dict[str, Any], limit: int) -> list[str]:
    return [f"harness refined: refinement {d.get('refinement_id')} ({d.get('status')})"]


def _verified(d: dict[str, Any], limit: int) -> list[str]:
    verdict = "right" if d.get("correct") else "wrong"
    note = f" ({clip(str(d['note']), limit)})" if d.get("note") else ""
    line = f"answer verified {verdict} by {d.get('by')}{note}"
    learned = d.get("learned")
    if learned:
        return [
            line,
            f"learned {learned.get('entry')} ({learned.get('status')}, proposal "
            f"{learned.get('refinement_id')})",
        ]
    if d.get("refused"):
        return [line, f"nothing learned: {clip(str(d['refused']), limit)}"]
    return [line]


def _goal(d: dict[str, Any], limit: int) -> list[str]:
    what = {"set": "goal set", "progress": "goal progress", "done": "goal done"}.get(
        d.get("event", ""), "goal cleared"
    )
    text = d.get("note") or d.get("text") or ""
    if d.get("summary"):
        text += f" — {d['summary']}"
    return [f"{what} ({d.get('by')}): {clip(text, limit)}"]


def _continuation(d: dict[str, Any], limit: int) -> list[str]:
    why = f" (the previous one ended: {d['reason']})" if d.get("reason") else ""
    return [f"continuation {d.get('continuation')} of {d.get('of')}{why}"]


def _gate(d: dict[str, Any], limit: int) -> list[str]:
    verdict = "passed" if d.get("passed") else "failed"
    what = d.get("command") or "an answer"
    code = d.get("exit_code")
    detail = f"exit status {code}" if code is not None else d.get("error") or ""
    tail = (d.get("output") or "").strip().splitlines()[-1:] or [""]
    return [f"gate {verdict}: {what} ({detail}) {tail[0][:200]}".rstrip()]


def _schedule(d: dict[str, Any], limit: int) -> list[str]:
    reason = f": {d['reason']}" if d.get("reason") else ""
    return [f"schedule {d.get('schedule_id')} {d.get('event')}{reason}"]


def _gc(d: dict[str, Any], limit: int) -> list[str]:
    names = [str(s.get("name")) for s in d.get("spilled") or []]
    parts = [f"spilled {', '.join(names)}"] if names else []
    if d.get("dropped"):
        parts.append(f"dropped {', '.join(d['dropped'])}")
    return [f"memory ({d.get('reason')}): {'; '.join(parts) or 'nothing'}"]


def _error(d: dict[str, Any], limit: int) -> list[str]:
    return [f"error: {clip(str(d.get('message', '')), limit)}"]


RENDERERS: dict[EventKind, Renderer] = {
    EventKind.TASK: _task,
    EventKind.STATE: _state,
    EventKind.MODEL_CALL: _model_call,
    EventKind.ASSISTANT: _assistant,
    EventKind.CELL: _cell,
    EventKind.OBSERVATION: _nothing,
    EventKind.ANSWER: _answer,
    EventKind.CHILD: _child,
    EventKind.MAIL_IN: _mail_in,
    EventKind.MAIL_OUT: _mail_out,
    EventKind.COMPACTION: _compaction,
    EventKind.SNAPSHOT: _snapshot,
    EventKind.RESTORE: _restore,
    EventKind.RESUME: _resume,
    EventKind.KERNEL: _kernel,
    EventKind.REFINEMENT: _refinement,
    EventKind.VERIFIED: _verified,
    EventKind.GOAL: _goal,
    EventKind.CONTINUATION: _continuation,
    EventKind.GATE: _gate,
    EventKind.SCHEDULE: _schedule,
    EventKind.GC: _gc,
    EventKind.ERROR: _error,
}


def render(event: dict[str, Any], limit: int = 800) -> list[str]:
    """An event's lines (see the module docstring)."""
    try:
        renderer = RENDERERS[EventKind(event["kind"])]
    except ValueError:
        return [f"{event['kind']}: {clip(json.dumps(event.get('data'), default=str), limit)}"]
    return renderer(event.get("data") or {}, limit)
