"""A session's trajectory as a Jupyter notebook (nbformat v4, current minor).

Built from data alone — a session's record (as the REST API gives it), its events and its
children's states — so it knows nothing of the daemon. The notebook tells the story in order: the
task, the model's messages, each cell with its real outputs, a person's cells (labelled),
messages, sub-agents (linked as `<child-id>.ipynb` beside this one), the answer and a summary.
Every string is redacted and every cell's output capped before it reaches the notebook.
"""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING, Any

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from traitlets import Instance, Int
from traitlets.config import LoggingConfigurable

from .. import __version__
from ..protocol.events import EventKind
from ..protocol.states import SessionKind, SessionState
from ..util.format import cap, fmt_interval, fmt_usage
from ..util.redact import Redactor

if TYPE_CHECKING:
    from .contexts import ContextFile

KERNELSPEC = {"name": "prime-agent", "display_name": "Prime Agent", "language": "python"}
LANGUAGE_INFO = {
    "name": "python",
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "codemirror_mode": {"name": "ipython", "version": 3},
    "pygments_lexer": "ipython3",
    "nbconvert_exporter": "python",
}

_STATUS_NOTES = {
    "timeout": "the cell ran longer than the cell timeout and was interrupted",
    "cancelled": "the session was cancelled while this cell was running",
    "aborted": "the kernel aborted this cell",
    "died": "the kernel died during this cell; a new one was started",
    "killed": "the cell did not stop when interrupted: its kernel was killed and replaced",
}


def notebook_name(session_id: str) -> str:
    """The file a session's notebook has beside its parent's and children's."""
    return f"{session_id}.ipynb"


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return datetime.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in str(text).splitlines()) or ">"


def _fence(text: str, lang: str = "") -> str:
    """A fenced block that survives backticks inside `text`."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, default=repr)


def _link(session_id: str, label: str | None = None) -> str:
    return f"[`{session_id}`{' · ' + label if label else ''}]({notebook_name(session_id)})"


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


class NotebookExporter(LoggingConfigurable):
    """Builds notebooks from a daemon's record. Configure as `c.NotebookExporter.<trait>`."""

    max_cell_text_chars = Int(
        50_000,
        config=True,
        help="Characters of text output (streams, text/plain, tracebacks) kept per cell; "
        "the middle of longer output is cut, with a note.",
    )
    max_cell_data_chars = Int(
        5_000_000,
        config=True,
        help="Characters of rich output (images, HTML, JSON) kept per cell; larger outputs "
        "are left out, with a note.",
    )
    redactor = Instance(Redactor, kw={"secrets": []}, help="Blanks out secrets in every string.")

    # -- the whole notebook ---------------------------------------------------------------
    def notebook(
        self,
        record: dict[str, Any],
        events: list[dict[str, Any]],
        *,
        states: dict[str, str] | None = None,
        context: ContextFile | None = None,
    ) -> NotebookNode:
        """The notebook of one session from its record and events; `states` are its
        children's states (for their links); `context`, the context file written beside it
        (its cell loads it), if any."""
        redactor = self.redactor
        record = redactor.value(record)
        events = redactor.value(events)
        cells: list[NotebookNode] = [self._header(record)]
        if record.get("context_type"):
            cells.extend(self._context_cells(record, context))
        cells.extend(_Story(self, states or {}).cells(events))
        cells.append(self._summary(record))
        nb = new_notebook(cells=cells, metadata=self._metadata(record))
        nb = nbformat.from_dict(redactor.value(nb))
        nbformat.validate(nb)
        return nb

    def notebook_bytes(
        self,
        record: dict[str, Any],
        events: list[dict[str, Any]],
        *,
        states: dict[str, str] | None = None,
        context: ContextFile | None = None,
    ) -> bytes:
        nb = self.notebook(record, events, states=states, context=context)
        return nbformat.writes(nb).encode()

    def _metadata(self, record: dict[str, Any]) -> dict[str, Any]:
        prime = dict(record)
        prime["ended_when_exported"] = self._ended(record)
        prime["exported_at"] = _when(datetime.datetime.now().timestamp())
        prime["exporter"] = f"prime_kernel {__version__}"
        return {
            "kernelspec": dict(KERNELSPEC),
            "language_info": dict(LANGUAGE_INFO),
            "prime": prime,
        }

    @staticmethod
    def _ended(record: dict[str, Any]) -> bool:
        return record["kind"] == SessionKind.AGENT.value and SessionState(record["state"]).terminal

    # -- opening --------------------------------------------------------------------------
    def _header(self, record: dict[str, Any]) -> NotebookNode:
        sid = record["id"]
        if record["kind"] == SessionKind.NOTEBOOK.value:
            title = f"# Notebook session `{sid}`"
            lines = [title, "", f"Calls made from `{record.get('notebook_path') or 'a kernel'}`."]
        else:
            lines = [
                f"# Agent session `{sid}` · {record['state']}",
                "",
                "**Task**",
                "",
                _quote(record["prompt"]),
                "",
                f"- **Model:** `{record.get('model')}`",
                f"- **Budget:** {_budget(record.get('budget'))}",
                f"- **Started:** {_when(record.get('started') or record.get('created'))}",
            ]
            plan = (record.get("options") or {}).get("autonomous")
            if plan:
                gate = plan.get("gate") or {}
                what = f"`{next(iter(gate.values()))}`" if gate else "an answer"
                lines.append(
                    f"- **Autonomous:** until the gate {what} passes, in up to "
                    f"{plan.get('max_continuations')} continuations"
                )
        goal = record.get("goal")
        if goal:
            lines.append(f"- **Goal** ({goal.get('status')}): {_text(goal.get('text', ''))}")
        if record.get("parent_id"):
            lines.append(f"- **Started by:** {_link(record['parent_id'])}")
        if not self._ended(record):
            lines += [
                "",
                f"> **Not finished:** this session was {record['state']} when it was exported "
                f"({_when(datetime.datetime.now().timestamp())}); this notebook holds what had "
                "happened so far. Export it again later for the rest.",
            ]
        return new_markdown_cell(
            "\n".join(lines), id="prime-header", metadata={"prime": {"kind": "header"}}
        )

    def _context_cells(
        self, record: dict[str, Any], context: ContextFile | None
    ) -> list[NotebookNode]:
        sid, claimed = record["id"], record["context_type"]
        meta = {"prime": {"kind": "context"}}
        if context is None:
            text = (
                f"This session was given a `context` (its sender called it a `{claimed}`): in "
                "its REPL it is the variable `context`. To re-run the cells below, export "
                f"again with `prime-agent export {sid} --with-context`, which writes it beside "
                "this notebook and adds a cell that loads it."
            )
            return [new_markdown_cell(text, id="prime-context", metadata=meta)]
        name = context.name
        if context.format == "json":
            text = (
                f"This session was given a `context`, {context.holds} of plain data: in its "
                f"REPL it is the variable `context`. It was written beside this notebook as "
                f"`{name}` (JSON); the next cell loads it."
            )
            code = (
                "import json\n\n"
                f'with open("{name}", encoding="utf-8") as f:\n    context = json.load(f)'
            )
        else:
            text = (
                f"This session was given a `context` (its sender called it a `{claimed}`; it "
                f"is {context.holds}): in its REPL it is the variable `context`. It was written "
                f"beside this notebook as `{name}`. The next cell loads it with Prime's "
                "restricted unpickler, which builds plain data types only (numpy and pandas "
                "included) and refuses anything else by name: a pickle made by an agent is a "
                "program, and loading it with `pickle` would run whatever it names."
            )
            code = (
                "from prime_kernel.kernel.safe_pickle import load\n\n"
                f'with open("{name}", "rb") as f:\n    context = load(f, what="the context")'
            )
        return [
            new_markdown_cell(text, id="prime-context", metadata=meta),
            new_code_cell(code, id="prime-context-load", metadata=meta),
        ]

    # -- cells ----------------------------------------------------------------------------
    def _cell(self, cid: str, data: dict[str, Any]) -> list[NotebookNode]:
        source = data.get("source") or "agent"
        status = data.get("status") or "ok"
        budget = _Budget(self.max_cell_text_chars, self.max_cell_data_chars)
        outputs = [o for o in (self._output(raw, budget) for raw in data.get("outputs") or []) if o]
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
            _text(data.get("code") or ""),
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

    def _output(self, raw: dict[str, Any], budget: _Budget) -> NotebookNode | None:
        kind = raw.get("output_type")
        if kind == "stream":
            text = budget.fit_text(_text(raw.get("text", "")))
            if text is None:
                return None
            return new_output("stream", name=raw.get("name") or "stdout", text=text)
        if kind == "error":
            tb = budget.fit_text("\n".join(_text(t) for t in raw.get("traceback") or []))
            return new_output(
                "error",
                ename=_text(raw.get("ename", "")),
                evalue=_text(raw.get("evalue", "")),
                traceback=tb.split("\n") if tb else [],
            )
        if kind in ("execute_result", "display_data"):
            data: dict[str, Any] = {}
            for mime, value in (raw.get("data") or {}).items():
                if mime == "text/plain":
                    text = budget.fit_text(_text(value))
                    if text is not None:
                        data[mime] = text
                elif budget.fit_data(mime, value):
                    data[mime] = value if mime.endswith("json") else _text(value)
            if not data:
                return None
            fields: dict[str, Any] = {"data": data, "metadata": raw.get("metadata") or {}}
            if kind == "execute_result":
                count = raw.get("execution_count")
                fields["execution_count"] = count if isinstance(count, int) else None
            return new_output(kind, **fields)
        return None

    def _child(self, cid: str, data: dict[str, Any], states: dict[str, str]) -> NotebookNode:
        child_id = str(data.get("child_id"))
        # A record the store no longer has still gets its line.
        state = states.get(child_id, "unknown")
        text = (
            f"**Started a sub-agent** {_link(child_id, _text(data.get('name') or ''))} "
            f"· {state}\n\n{_quote(_text(data.get('prompt', '')))}"
        )
        meta = {"prime": {"kind": "child", "child_id": child_id, "state": state}}
        return new_markdown_cell(text, id=cid, metadata=meta)

    # -- closing --------------------------------------------------------------------------
    def _summary(self, record: dict[str, Any]) -> NotebookNode:
        usage = record.get("usage") or {}
        lines = ["## Summary", "", f"- **State:** {record['state']}"]
        if record.get("error"):
            lines.append(f"- **Error:** {record['error']}")
        if record.get("ended"):
            lines.append(f"- **Ended:** {_when(record['ended'])}")
        lines.append(f"- **Usage, this session:** {fmt_usage(usage.get('own') or {})}")
        if record.get("children"):
            lines.append(f"- **Usage, with sub-agents:** {fmt_usage(usage.get('subtree') or {})}")
            links = ", ".join(_link(c) for c in record["children"])
            lines.append(f"- **Sub-agents:** {links}")
        if not self._ended(record):
            lines.append(f"- **Not finished** when exported: it was {record['state']}.")
        lines.append("")
        lines.append(
            f"Exported by prime_kernel {__version__}; usage is also in the notebook "
            "metadata (`metadata.prime.usage`)."
        )
        return new_markdown_cell(
            "\n".join(lines), id="prime-summary", metadata={"prime": {"kind": "summary"}}
        )


def _budget(budget: Any) -> str:
    if not budget:
        return "none"
    return f"`{json.dumps(budget, default=repr)}`"


def _mail(cid: str, kind: str, data: dict[str, Any]) -> NotebookNode:
    if kind == "mail_in":
        peer = str(data.get("from"))
        name = data.get("sender")
        who = "the user" if peer == "user" else f"`{peer}`" + (f" ({name})" if name else "")
        head = f"**Message from** {who}"
    else:
        head = f"**Message sent to** `{data.get('to')}`"
    text = f"{head}\n\n{_quote(_text(data.get('message', '')))}"
    meta = {"prime": {"kind": kind, "message_id": data.get("message_id")}}
    return new_markdown_cell(text, id=cid, metadata=meta)


Cells = list[NotebookNode]


class _Story:
    """Turns a trajectory into cells, one renderer per event kind (`RENDERERS`)."""

    def __init__(self, exporter: NotebookExporter, states: dict[str, str]) -> None:
        self.exporter = exporter
        self.states = states
        self.turn = 0
        self.call: dict[str, Any] | None = None

    def cells(self, events: list[dict[str, Any]]) -> Cells:
        out: Cells = []
        for event in events:
            kind = _kind(event["kind"])
            render = RENDERERS.get(kind) if kind is not None else None
            cid = f"prime-{event['seq']}"
            out.extend(render(self, cid, event["data"]) if render else self.unknown(cid, event))
        return out

    def unknown(self, cid: str, event: dict[str, Any]) -> Cells:
        """A kind this version does not know (a newer store): its data, shown as JSON."""
        body, _ = cap(_text(event["data"]), self.exporter.max_cell_text_chars)
        text = f"**{event['kind']}**\n\n{_fence(body, 'json')}"
        return [_note(cid, event["kind"], text)]

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
        content = _text(data.get("content") or "").strip()
        if not content:
            return []
        text = f"**Model** · turn {self.turn}\n\n{content}"
        return [new_markdown_cell(text, id=cid, metadata={"prime": meta})]

    def cell(self, cid: str, data: dict[str, Any]) -> Cells:
        return self.exporter._cell(cid, data)

    def child(self, cid: str, data: dict[str, Any]) -> Cells:
        return [self.exporter._child(cid, data, self.states)]

    def mail(self, cid: str, data: dict[str, Any]) -> Cells:
        return [_mail(cid, "mail_in" if "from" in data else "mail_out", data)]

    def answer(self, cid: str, data: dict[str, Any]) -> Cells:
        label = "Answer" if data.get("kind") != "reply" else "Answer (the model's reply)"
        text = f"## {label}\n\n{_fence(_text(data.get('repr', '')))}"
        meta = {"prime": {"kind": "answer", "answer_kind": data.get("kind")}}
        return [new_markdown_cell(text, id=cid, metadata=meta)]

    def compaction(self, cid: str, data: dict[str, Any]) -> Cells:
        # The model's context was summarised here; the REPL (L2) kept everything.
        text = (
            f"**Context compacted** ({data.get('reason', 'window')}): "
            f"{data.get('summarised_messages')} earlier messages summarised, "
            f"{data.get('before_tokens')} → {data.get('after_tokens')} tokens.\n\n"
            f"{_quote(_text(data.get('summary', '')))}"
        )
        return [_note(cid, "compaction", text)]

    def snapshot(self, cid: str, data: dict[str, Any]) -> Cells:
        skipped = ", ".join(data.get("skipped") or {}) or "nothing"
        text = (
            f"*REPL saved ({data.get('reason', 'snapshot')}): {len(data.get('saved') or [])} "
            f"names; not saved: {skipped}.*"
        )
        return [_note(cid, "snapshot", text)]

    def restore(self, cid: str, data: dict[str, Any]) -> Cells:
        names = ", ".join(data.get("restored") or []) or "nothing"
        text = f"**REPL restored** in a new kernel: {names}."
        if data.get("lost"):
            text += f" Lost: {', '.join(data['lost'])}."
        if data.get("failed"):
            text += f" Could not restore: {', '.join(data['failed'])}."
        return [_note(cid, "restore", text)]

    def resume(self, cid: str, data: dict[str, Any]) -> Cells:
        text = f"**Resumed:** {_text(data.get('reason', ''))}"
        if data.get("in_flight"):
            code = _fence(data["in_flight"], "python")
            text += f"\n\nThis cell was running and was not re-run:\n\n{code}"
        return [_note(cid, "resume", text)]

    def kernel(self, cid: str, data: dict[str, Any]) -> Cells:
        what = {
            "died": "died",
            "killed": "was killed",
            "restarted": "was restarted",
            "gone": "is gone",
        }
        event = str(data.get("event"))
        text = f"**Kernel {what.get(event, event)}**: {_text(data.get('detail', ''))}"
        return [_note(cid, "kernel", text)]

    def refinement(self, cid: str, data: dict[str, Any]) -> Cells:
        text = (
            f"**Harness refined** from this session: refinement `{data.get('refinement_id')}` "
            f"({data.get('status')})."
        )
        return [_note(cid, "refinement", text)]

    def verified(self, cid: str, data: dict[str, Any]) -> Cells:
        by = str(data.get("by") or "")
        who = "a person" if by == "user" else f"`{by}`"
        verdict = "right" if data.get("correct") else "wrong"
        text = f"**Answer verified {verdict}** by {who}."
        if data.get("note"):
            text += f" {_text(data['note'])}"
        learned = data.get("learned")
        if learned:
            text += (
                f"\n\nThe harness learned `{learned.get('entry')}` "
                f"({learned.get('status')}, proposal `{learned.get('refinement_id')}`)."
            )
        elif data.get("refused"):
            text += f"\n\nNothing was learned: {_text(data['refused'])}"
        return [_note(cid, "verified", text)]

    def error(self, cid: str, data: dict[str, Any]) -> Cells:
        return [_note(cid, "error", f"**Error:** {_text(data.get('message', ''))}")]

    def goal(self, cid: str, data: dict[str, Any]) -> Cells:
        by = str(data.get("by") or "")
        who = "a person" if by == "user" else f"`{by}`"
        event = data.get("event")
        if event == "set":
            text = f"**Goal set** by {who}\n\n{_quote(_text(data.get('text', '')))}"
        elif event == "progress":
            text = f"*Progress on the goal* ({who}): {_text(data.get('note', ''))}"
        elif event == "done":
            text = f"**Goal achieved** ({who}): {_text(data.get('text', ''))}"
            if data.get("summary"):
                text += f"\n\n{_quote(_text(data['summary']))}"
        else:
            text = f"*Goal cleared* by {who}: {_text(data.get('text', ''))}"
        return [_note(cid, "goal", text)]

    def continuation(self, cid: str, data: dict[str, Any]) -> Cells:
        limits = data.get("limits") or {}
        text = f"### Continuation {data.get('continuation')} of {data.get('of')}\n\n"
        if data.get("reason"):
            text += f"The previous one ended: {_text(data['reason'])}. "
        text += (
            f"Limits: {limits.get('turns')} turns, {limits.get('tokens')} tokens, "
            f"{limits.get('seconds')} s; gate: {_text(data.get('gate') or 'an answer')}."
        )
        return [_note(cid, "continuation", text)]

    def gate(self, cid: str, data: dict[str, Any]) -> Cells:
        verdict = "passed" if data.get("passed") else "failed"
        what = f"`{_text(data['command'])}`" if data.get("command") else "an answer"
        detail = [f"{data.get('duration', 0):g} s"]
        if data.get("exit_code") is not None:
            detail.insert(0, f"exit status {data['exit_code']}")
        text = f"**Gate {verdict}**: {what} ({', '.join(detail)})"
        if data.get("error"):
            text += f"\n\n{_text(data['error'])}"
        output = _text(data.get("output") or "").strip()
        if output:
            body, _ = cap(output, self.exporter.max_cell_text_chars)
            text += f"\n\n{_fence(body)}"
        return [_note(cid, "gate", text)]

    def schedule(self, cid: str, data: dict[str, Any]) -> Cells:
        owner = "a person" if data.get("owner") == "user" else f"`{data.get('owner')}`"
        spec = data.get("spec")
        if data.get("kind") == "every":
            when = f"every {fmt_interval(float(spec or 0))}"  # kept as its seconds
        else:
            when = f"at {spec}" if data.get("kind") == "at" else f"cron `{spec}`"
        text = (
            f"**Schedule** `{data.get('schedule_id')}` {data.get('event')} ({when}, owned by "
            f"{owner}, to `{data.get('target_id')}`): {_text(data.get('message', ''))}"
        )
        if data.get("reason"):
            text += f"\n\n{_text(data['reason'])}"
        return [_note(cid, "schedule", text)]

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
        return [_note(cid, "gc", text)]


# One renderer per event kind; the task, state changes and observations are left out (the
# task and final state are in the header and summary; an observation is the capped copy of
# outputs the cell already shows).
RENDERERS: dict[EventKind, Any] = {
    EventKind.TASK: _Story.nothing,
    EventKind.STATE: _Story.nothing,
    EventKind.OBSERVATION: _Story.nothing,
    EventKind.MODEL_CALL: _Story.model_call,
    EventKind.ASSISTANT: _Story.assistant,
    EventKind.CELL: _Story.cell,
    EventKind.ANSWER: _Story.answer,
    EventKind.CHILD: _Story.child,
    EventKind.MAIL_IN: _Story.mail,
    EventKind.MAIL_OUT: _Story.mail,
    EventKind.COMPACTION: _Story.compaction,
    EventKind.SNAPSHOT: _Story.snapshot,
    EventKind.RESTORE: _Story.restore,
    EventKind.RESUME: _Story.resume,
    EventKind.KERNEL: _Story.kernel,
    EventKind.REFINEMENT: _Story.refinement,
    EventKind.VERIFIED: _Story.verified,
    EventKind.GOAL: _Story.goal,
    EventKind.CONTINUATION: _Story.continuation,
    EventKind.GATE: _Story.gate,
    EventKind.SCHEDULE: _Story.schedule,
    EventKind.GC: _Story.gc,
    EventKind.ERROR: _Story.error,
}


def _kind(name: str) -> EventKind | None:
    try:
        return EventKind(name)
    except ValueError:
        return None


def _note(cid: str, kind: str, text: str) -> NotebookNode:
    return new_markdown_cell(text, id=cid, metadata={"prime": {"kind": kind}})
