"""A trajectory as notebook cells, in order: one renderer per event kind (`RENDERERS`). A cell
event becomes a code cell with its real outputs, each cell's output capped; the task, state
changes and observations are left out (the header and summary have them)."""

from __future__ import annotations

import json
from typing import Any

from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from ..protocol.events import EventKind
from ..util.format import cap, fmt_interval
from .markdown import as_text, fence, link, note, quote

_STATUS_NOTES = {
    "timeout": "the cell ran longer than the cell timeout and was interrupted",
    "cancelled": "the session was cancelled while this cell was running",
    "aborted": "the kernel aborted this cell",
    "died": "the kernel died during this cell; a new one was started",
    "killed": "the cell did not stop when interrupted: its kernel was killed and replaced",
}


class _Budget:
    """What is left of one cell's output allowance, and what was cut."""

    def __init__(self, text_chars: int, data_chars: int) -> None:
        self.text = text_chars
        self.data = data_chars
        self.notes: list[str] = []

    def fit_text(self, text: str) -> str | None:
        """`text`, middle-cut to what is left (None when nothing is left)."""
        if self.text <= 0:
            self.notes.append(f"{len(text)} characters of output left out (limit per cell)")
            return None
        text, cut = cap(text, self.text)
        if cut:
            self.notes.append(
                f"output cut to {self.text} characters (NotebookExporter.max_cell_text_chars)"
            )
        self.text -= len(text)
        return text

    def fit_data(self, mime: str, value: Any) -> bool:
        size = len(value) if isinstance(value, str) else len(json.dumps(value, default=repr))
        if size > self.data:
            self.notes.append(f"a {mime} output of {size} characters left out (limit per cell)")
            return False
        self.data -= size
        return True


def _mail(cid: str, kind: str, data: dict[str, Any]) -> NotebookNode:
    if kind == "mail_in":
        peer = str(data.get("from"))
        name = data.get("sender")
        who = "the user" if peer == "user" else f"`{peer}`" + (f" ({name})" if name else "")
        head = f"**Message from** {who}"
    else:
        head = f"**Message sent to** `{data.get('to')}`"
    text = f"{head}\n\n{quote(as_text(data.get('message', '')))}"
    meta = {"prime": {"kind": kind, "message_id": data.get("message_id")}}
    return new_markdown_cell(text, id=cid, metadata=meta)


Cells = list[NotebookNode]


class Story:
    """Turns a trajectory into cells, one renderer per event kind (`RENDERERS`); `states` are
    the children's states (for their links), `text_chars` and `data_chars` what each cell's
    output may keep (c.NotebookExporter.max_cell_text_chars, max_cell_data_chars)."""

    def __init__(self, states: dict[str, str], *, text_chars: int, data_chars: int) -> None:
        self.states = states
        self.text_chars = text_chars
        self.data_chars = data_chars
        self.turn = 0
        self.call: dict[str, Any] | None = None

    def cells(self, events: list[dict[str, Any]]) -> Cells:
        out: Cells = []
        for event in events:
            kind = event_kind(event["kind"])
            render = RENDERERS.get(kind) if kind is not None else None
            cid = f"prime-{event['seq']}"
            out.extend(render(self, cid, event["data"]) if render else self.unknown(cid, event))
        return out

    def unknown(self, cid: str, event: dict[str, Any]) -> Cells:
        """A kind this version does not know (a newer store): its data, shown as JSON."""
        body, _ = cap(as_text(event["data"]), self.text_chars)
        text = f"**{event['kind']}**\n\n{fence(body, 'json')}"
        return [note(cid, event["kind"], text)]

    def nothing(self, cid: str, data: dict[str, Any]) -> Cells:
        return []

    def model_call(self, cid: str, data: dict[str, Any]) -> Cells:
        self.call = data  # shown with the turn it produced
        return []

    def assistant(self, cid: str, data: dict[str, Any]) -> Cells:
        self.turn += 1
        meta: dict[str, Any] = {"kind": "model", "turn": self.turn}
        if self.call is not None:
            meta["model_call"], self.call = self.call, None
        if data.get("tool_calls"):
            meta["tool_calls"] = len(data["tool_calls"])
        content = as_text(data.get("content") or "").strip()
        if not content:
            return []
        text = f"**Model** · turn {self.turn}\n\n{content}"
        return [new_markdown_cell(text, id=cid, metadata={"prime": meta})]

    def cell(self, cid: str, data: dict[str, Any]) -> Cells:
        source = data.get("source") or "agent"
        status = data.get("status") or "ok"
        budget = _Budget(self.text_chars, self.data_chars)
        outputs = [o for o in (_output(raw, budget) for raw in data.get("outputs") or []) if o]
        notes = list(budget.notes)
        if data.get("truncated_note"):
            notes.append(str(data["truncated_note"]))
        if status in _STATUS_NOTES:
            notes.append(_STATUS_NOTES[status])
        if notes:
            text = "".join(f"[prime export] {n}\n" for n in notes)
            outputs.append(new_output("stream", name="stderr", text=text))
        meta: dict[str, Any] = {"source": source, "status": status}
        if data.get("duration") is not None:
            meta["duration"] = data["duration"]
        if notes:
            meta["notes"] = notes
        count = data.get("execution_count")
        cell = new_code_cell(
            as_text(data.get("code") or ""),
            id=cid,
            execution_count=count if isinstance(count, int) else None,
            outputs=outputs,
            metadata={"prime": meta},
        )
        if source != "user":
            return [cell]
        where = f" (execution {count})" if isinstance(count, int) else ""
        label = new_markdown_cell(
            f"**A person ran the next cell** in the agent's REPL{where}.",
            id=f"{cid}-person",
            metadata={"prime": {"kind": "person-label"}},
        )
        return [label, cell]

    def child(self, cid: str, data: dict[str, Any]) -> Cells:
        child_id = str(data.get("child_id"))
        # A record the store no longer has still gets its line.
        state = self.states.get(child_id, "unknown")
        text = (
            f"**Started a sub-agent** {link(child_id, as_text(data.get('name') or ''))} "
            f"· {state}\n\n{quote(as_text(data.get('prompt', '')))}"
        )
        meta = {"prime": {"kind": "child", "child_id": child_id, "state": state}}
        return [new_markdown_cell(text, id=cid, metadata=meta)]

    def mail(self, cid: str, data: dict[str, Any]) -> Cells:
        return [_mail(cid, "mail_in" if "from" in data else "mail_out", data)]

    def answer(self, cid: str, data: dict[str, Any]) -> Cells:
        label = "Answer" if data.get("kind") != "reply" else "Answer (the model's reply)"
        text = f"## {label}\n\n{fence(as_text(data.get('repr', '')))}"
        meta = {"prime": {"kind": "answer", "answer_kind": data.get("kind")}}
        return [new_markdown_cell(text, id=cid, metadata=meta)]

    def compaction(self, cid: str, data: dict[str, Any]) -> Cells:
        # The model's context was summarised here; the REPL (L2) kept everything.
        text = (
            f"**Context compacted** ({data.get('reason', 'window')}): "
            f"{data.get('summarised_messages')} earlier messages summarised, "
            f"{data.get('before_tokens')} → {data.get('after_tokens')} tokens.\n\n"
            f"{quote(as_text(data.get('summary', '')))}"
        )
        return [note(cid, "compaction", text)]

    def snapshot(self, cid: str, data: dict[str, Any]) -> Cells:
        skipped = ", ".join(data.get("skipped") or {}) or "nothing"
        text = (
            f"*REPL saved ({data.get('reason', 'snapshot')}): {len(data.get('saved') or [])} "
            f"names; not saved: {skipped}.*"
        )
        return [note(cid, "snapshot", text)]

    def restore(self, cid: str, data: dict[str, Any]) -> Cells:
        names = ", ".join(data.get("restored") or []) or "nothing"
        text = f"**REPL restored** in a new kernel: {names}."
        if data.get("lost"):
            text += f" Lost: {', '.join(data['lost'])}."
        if data.get("failed"):
            text += f" Could not restore: {', '.join(data['failed'])}."
        return [note(cid, "restore", text)]

    def resume(self, cid: str, data: dict[str, Any]) -> Cells:
        text = f"**Resumed:** {as_text(data.get('reason', ''))}"
        if data.get("in_flight"):
            code = fence(data["in_flight"], "python")
            text += f"\n\nThis cell was running and was not re-run:\n\n{code}"
        return [note(cid, "resume", text)]

    def kernel(self, cid: str, data: dict[str, Any]) -> Cells:
        what = {
            "died": "died",
            "killed": "was killed",
            "restarted": "was restarted",
            "gone": "is gone",
        }
        event = str(data.get("event"))
        text = f"**Kernel {what.get(event, event)}**: {as_text(data.get('detail', ''))}"
        return [note(cid, "kernel", text)]

    def refinement(self, cid: str, data: dict[str, Any]) -> Cells:
        text = (
            f"**Harness refined** from this session: refinement `{data.get('refinement_id')}` "
            f"({data.get('status')})."
        )
        return [note(cid, "refinement", text)]

    def verified(self, cid: str, data: dict[str, Any]) -> Cells:
        by = str(data.get("by") or "")
        who = "a person" if by == "user" else f"`{by}`"
        verdict = "right" if data.get("correct") else "wrong"
        text = f"**Answer verified {verdict}** by {who}."
        if data.get("note"):
            text += f" {as_text(data['note'])}"
        learned = data.get("learned")
        if learned:
            text += (
                f"\n\nThe harness learned `{learned.get('entry')}` "
                f"({learned.get('status')}, proposal `{learned.get('refinement_id')}`)."
            )
        elif data.get("refused"):
            text += f"\n\nNothing was learned: {as_text(data['refused'])}"
        return [note(cid, "verified", text)]

    def error(self, cid: str, data: dict[str, Any]) -> Cells:
        return [note(cid, "error", f"**Error:** {as_text(data.get('message', ''))}")]

    def goal(self, cid: str, data: dict[str, Any]) -> Cells:
        by = str(data.get("by") or "")
        who = "a person" if by == "user" else f"`{by}`"
        event = data.get("event")
        if event == "set":
            text = f"**Goal set** by {who}\n\n{quote(as_text(data.get('text', '')))}"
        elif event == "progress":
            text = f"*Progress on the goal* ({who}): {as_text(data.get('note', ''))}"
        elif event == "done":
            text = f"**Goal achieved** ({who}): {as_text(data.get('text', ''))}"
            if data.get("summary"):
                text += f"\n\n{quote(as_text(data['summary']))}"
        else:
            text = f"*Goal cleared* by {who}: {as_text(data.get('text', ''))}"
        return [note(cid, "goal", text)]

    def continuation(self, cid: str, data: dict[str, Any]) -> Cells:
        limits = data.get("limits") or {}
        text = f"### Continuation {data.get('continuation')} of {data.get('of')}\n\n"
        if data.get("reason"):
            text += f"The previous one ended: {as_text(data['reason'])}. "
        text += (
            f"Limits: {limits.get('turns')} turns, {limits.get('tokens')} tokens, "
            f"{limits.get('seconds')} s; gate: {as_text(data.get('gate') or 'an answer')}."
        )
        return [note(cid, "continuation", text)]

    def gate(self, cid: str, data: dict[str, Any]) -> Cells:
        verdict = "passed" if data.get("passed") else "failed"
        what = f"`{as_text(data['command'])}`" if data.get("command") else "an answer"
        detail = [f"{data.get('duration', 0):g} s"]
        if data.get("exit_code") is not None:
            detail.insert(0, f"exit status {data['exit_code']}")
        text = f"**Gate {verdict}**: {what} ({', '.join(detail)})"
        if data.get("error"):
            text += f"\n\n{as_text(data['error'])}"
        output = as_text(data.get("output") or "").strip()
        if output:
            body, _ = cap(output, self.text_chars)
            text += f"\n\n{fence(body)}"
        return [note(cid, "gate", text)]

    def schedule(self, cid: str, data: dict[str, Any]) -> Cells:
        owner = "a person" if data.get("owner") == "user" else f"`{data.get('owner')}`"
        spec = data.get("spec")
        if data.get("kind") == "every":
            when = f"every {fmt_interval(float(spec or 0))}"  # kept as its seconds
        else:
            when = f"at {spec}" if data.get("kind") == "at" else f"cron `{spec}`"
        text = (
            f"**Schedule** `{data.get('schedule_id')}` {data.get('event')} ({when}, owned by "
            f"{owner}, to `{data.get('target_id')}`): {as_text(data.get('message', ''))}"
        )
        if data.get("reason"):
            text += f"\n\n{as_text(data['reason'])}"
        return [note(cid, "schedule", text)]

    def gc(self, cid: str, data: dict[str, Any]) -> Cells:
        why = {"compaction": " at a compaction", "passivation": " before passivation"}
        parts = []
        if data.get("spilled"):
            names = ", ".join(f"`{s.get('name')}` ({s.get('size')} bytes)" for s in data["spilled"])
            parts.append(f"spilled to disk: {names}")
        if data.get("dropped"):
            parts.append("dropped: " + ", ".join(f"`{n}`" for n in data["dropped"]))
        if data.get("failed"):
            parts.append("could not spill: " + ", ".join(f"`{n}`" for n in data["failed"]))
        text = f"*Memory{why.get(str(data.get('reason')), '')}:* {'; '.join(parts) or 'nothing'}."
        return [note(cid, "gc", text)]


def _output(raw: dict[str, Any], budget: _Budget) -> NotebookNode | None:
    kind = raw.get("output_type")
    if kind == "stream":
        text = budget.fit_text(as_text(raw.get("text", "")))
        if text is None:
            return None
        return new_output("stream", name=raw.get("name") or "stdout", text=text)
    if kind == "error":
        tb = budget.fit_text("\n".join(as_text(t) for t in raw.get("traceback") or []))
        return new_output(
            "error",
            ename=as_text(raw.get("ename", "")),
            evalue=as_text(raw.get("evalue", "")),
            traceback=tb.split("\n") if tb else [],
        )
    if kind in ("execute_result", "display_data"):
        data: dict[str, Any] = {}
        for mime, value in (raw.get("data") or {}).items():
            if mime == "text/plain":
                text = budget.fit_text(as_text(value))
                if text is not None:
                    data[mime] = text
            elif budget.fit_data(mime, value):
                data[mime] = value if mime.endswith("json") else as_text(value)
        if not data:
            return None
        fields: dict[str, Any] = {"data": data, "metadata": raw.get("metadata") or {}}
        if kind == "execute_result":
            count = raw.get("execution_count")
            fields["execution_count"] = count if isinstance(count, int) else None
        return new_output(kind, **fields)
    return None


# One renderer per event kind; the task, state changes and observations are left out (the
# task and final state are in the header and summary; an observation is the capped copy of
# outputs the cell already shows).
RENDERERS: dict[EventKind, Any] = {
    EventKind.TASK: Story.nothing,
    EventKind.STATE: Story.nothing,
    EventKind.OBSERVATION: Story.nothing,
    EventKind.MODEL_CALL: Story.model_call,
    EventKind.ASSISTANT: Story.assistant,
    EventKind.CELL: Story.cell,
    EventKind.ANSWER: Story.answer,
    EventKind.CHILD: Story.child,
    EventKind.MAIL_IN: Story.mail,
    EventKind.MAIL_OUT: Story.mail,
    EventKind.COMPACTION: Story.compaction,
    EventKind.SNAPSHOT: Story.snapshot,
    EventKind.RESTORE: Story.restore,
    EventKind.RESUME: Story.resume,
    EventKind.KERNEL: Story.kernel,
    EventKind.REFINEMENT: Story.refinement,
    EventKind.VERIFIED: Story.verified,
    EventKind.GOAL: Story.goal,
    EventKind.CONTINUATION: Story.continuation,
    EventKind.GATE: Story.gate,
    EventKind.SCHEDULE: Story.schedule,
    EventKind.GC: Story.gc,
    EventKind.ERROR: Story.error,
}


def event_kind(name: str) -> EventKind | None:
    try:
        return EventKind(name)
    except ValueError:
        return None
