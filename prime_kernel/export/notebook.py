"""A session's trajectory as a Jupyter notebook (nbformat v4, current minor).

Built from data alone — a session's record (as the REST API gives it), its events and its
children's states — so it knows nothing of the daemon. The notebook tells the story in order: the
task, the model's messages, each cell with its real outputs, a person's cells (labelled),
messages, sub-agents (linked as `<child-id>.ipynb` beside this one), the answer and a summary.
Every string is redacted and every cell's output capped before it reaches the notebook. This
module makes the opening (header, context) and the summary; the events' cells are story.py's.
"""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING, Any

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from traitlets import Instance, Int
from traitlets.config import LoggingConfigurable

from .. import __version__
from ..protocol.states import SessionKind, SessionState
from ..util.format import fmt_usage
from ..util.redact import Redactor
from .markdown import as_text, link, quote, when
from .story import Story

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
        story = Story(
            states or {}, text_chars=self.max_cell_text_chars, data_chars=self.max_cell_data_chars
        )
        cells.extend(story.cells(events))
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
        prime["exported_at"] = when(datetime.datetime.now().timestamp())
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
                quote(record["prompt"]),
                "",
                f"- **Model:** `{record.get('model')}`",
                f"- **Budget:** {_budget(record.get('budget'))}",
                f"- **Started:** {when(record.get('started') or record.get('created'))}",
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
            lines.append(f"- **Goal** ({goal.get('status')}): {as_text(goal.get('text', ''))}")
        if record.get("parent_id"):
            lines.append(f"- **Started by:** {link(record['parent_id'])}")
        if not self._ended(record):
            lines += [
                "",
                f"> **Not finished:** this session was {record['state']} when it was exported "
                f"({when(datetime.datetime.now().timestamp())}); this notebook holds what had "
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

    # -- closing --------------------------------------------------------------------------
    def _summary(self, record: dict[str, Any]) -> NotebookNode:
        usage = record.get("usage") or {}
        lines = ["## Summary", "", f"- **State:** {record['state']}"]
        if record.get("error"):
            lines.append(f"- **Error:** {record['error']}")
        if record.get("ended"):
            lines.append(f"- **Ended:** {when(record['ended'])}")
        lines.append(f"- **Usage, this session:** {fmt_usage(usage.get('own') or {})}")
        if record.get("children"):
            lines.append(f"- **Usage, with sub-agents:** {fmt_usage(usage.get('subtree') or {})}")
            links = ", ".join(link(c) for c in record["children"])
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
