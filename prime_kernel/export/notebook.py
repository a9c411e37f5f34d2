"""A session's trajectory as a Jupyter notebook (nbformat v4, current minor).

Reads the durable record only (`Daemon.session_json`, `Daemon.events`), so it works on a live
daemon and on an offline one over the store alike. The notebook tells the story in order: the
task, the model's messages, each cell with its real outputs, a person's cells (labelled),
messages, sub-agents (linked as `<child-id>.ipynb` beside this one), the answer and a summary.
Every string is redacted and every cell's output capped before it reaches the notebook.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from traitlets import Any as AnyTrait
from traitlets import Instance, Int
from traitlets.config import LoggingConfigurable

from .. import __version__
from ..cli.common import fmt_usage
from ..daemon.errors import NotFound
from ..daemon.observation import cap
from ..daemon.states import SessionState
from .redact import Redactor, daemon_secrets

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
}


def notebook_name(session_id: str) -> str:
    """The file a session's notebook has beside its parent's and children's."""
    return f"{session_id}.ipynb"


def context_name(session_id: str) -> str:
    """The file `--with-context` writes a session's pickled context to."""
    return f"{session_id}.context.pkl"


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
    daemon = AnyTrait(help="The Daemon whose record is exported (live or offline).")
    redactor = Instance(Redactor, allow_none=True)

    def _redactor(self) -> Redactor:
        if self.redactor is None:
            self.redactor = Redactor(daemon_secrets(self.daemon))
        return self.redactor

    # -- the whole notebook ---------------------------------------------------------------
    def notebook(self, session_id: str, *, with_context: bool = False) -> NotebookNode:
        """The notebook of one session; raises NotFound for an unknown id."""
        redactor = self._redactor()
        record = redactor.value(self.daemon.session_json(session_id))
        events = redactor.value(self.daemon.events(session_id))
        cells: list[NotebookNode] = [self._header(record)]
        if record.get("context_type"):
            cells.extend(self._context_cells(record, with_context))
        cells.extend(self._body(record, events))
        cells.append(self._summary(record))
        nb = new_notebook(cells=cells, metadata=self._metadata(record))
        nb = nbformat.from_dict(redactor.value(nb))
        nbformat.validate(nb)
        return nb

    def notebook_bytes(self, session_id: str, *, with_context: bool = False) -> bytes:
        return nbformat.writes(self.notebook(session_id, with_context=with_context)).encode()

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
        return record["kind"] == "agent" and SessionState(record["state"]).terminal

    # -- opening --------------------------------------------------------------------------
    def _header(self, record: dict[str, Any]) -> NotebookNode:
        sid = record["id"]
        if record["kind"] == "notebook":
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

    def _context_cells(self, record: dict[str, Any], with_context: bool) -> list[NotebookNode]:
        sid, ctype = record["id"], record["context_type"]
        name = context_name(sid)
        meta = {"prime": {"kind": "context"}}
        if not with_context:
            text = (
                f"This session was given a `context` (a `{ctype}`): in its REPL it is the "
                "variable `context`. To re-run the cells below, export again with "
                f"`prime-agent export {sid} --with-context`, which writes `{name}` beside this "
                "notebook and adds a cell that loads it."
            )
            return [new_markdown_cell(text, id="prime-context", metadata=meta)]
        text = (
            f"This session was given a `context` (a `{ctype}`): in its REPL it is the variable "
            f"`context`. It was written beside this notebook as `{name}`; the next cell loads it."
        )
        code = f'import pickle\n\nwith open("{name}", "rb") as f:\n    context = pickle.load(f)'
        return [
            new_markdown_cell(text, id="prime-context", metadata=meta),
            new_code_cell(code, id="prime-context-load", metadata=meta),
        ]

    # -- the trajectory -------------------------------------------------------------------
    def _body(self, record: dict[str, Any], events: list[dict[str, Any]]) -> list[NotebookNode]:
        cells: list[NotebookNode] = []
        call: dict[str, Any] | None = None
        turn = 0
        for event in events:
            kind, data, cid = event["kind"], event["data"], f"prime-{event['seq']}"
            if kind in ("task", "state", "observation"):
                # The task and the final state are in the header and summary; an observation
                # is the capped copy of outputs the cell already shows.
                continue
            if kind == "model_call":
                call = data
                continue
            if kind == "assistant":
                turn += 1
                meta: dict[str, Any] = {"kind": "model", "turn": turn}
                if call is not None:
                    meta["model_call"], call = call, None
                if data.get("tool_calls"):
                    meta["tool_calls"] = len(data["tool_calls"])
                content = _text(data.get("content") or "").strip()
                if content:
                    text = f"**Model** · turn {turn}\n\n{content}"
                    cells.append(new_markdown_cell(text, id=cid, metadata={"prime": meta}))
            elif kind == "cell":
                cells.extend(self._cell(cid, data))
            elif kind == "child":
                cells.append(self._child(cid, data))
            elif kind in ("mail_in", "mail_out"):
                cells.append(_mail(cid, kind, data))
            elif kind == "answer":
                label = "Answer" if data.get("kind") != "reply" else "Answer (the model's reply)"
                text = f"## {label}\n\n{_fence(_text(data.get('repr', '')))}"
                meta = {"prime": {"kind": "answer", "answer_kind": data.get("kind")}}
                cells.append(new_markdown_cell(text, id=cid, metadata=meta))
            elif kind == "compaction":
                # The model's context was summarised here; the REPL (L2) kept everything.
                text = (
                    f"**Context compacted** ({data.get('reason', 'window')}): "
                    f"{data.get('summarised_messages')} earlier messages summarised, "
                    f"{data.get('before_tokens')} → {data.get('after_tokens')} tokens.\n\n"
                    f"{_quote(_text(data.get('summary', '')))}"
                )
                cells.append(new_markdown_cell(text, id=cid, metadata={"prime": {"kind": kind}}))
            elif kind == "error":
                text = f"**Error:** {_text(data.get('message', ''))}"
                cells.append(new_markdown_cell(text, id=cid, metadata={"prime": {"kind": kind}}))
            else:
                body = _text(data)
                body, _ = cap(body, self.max_cell_text_chars)
                text = f"**{kind}**\n\n{_fence(body, 'json')}"
                cells.append(new_markdown_cell(text, id=cid, metadata={"prime": {"kind": kind}}))
        return cells

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

    def _child(self, cid: str, data: dict[str, Any]) -> NotebookNode:
        child_id = str(data.get("child_id"))
        try:
            state = self.daemon.session_json(child_id)["state"]
        except NotFound:  # a record the store no longer has still gets its line
            state = "unknown"
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
