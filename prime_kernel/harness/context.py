"""The harness text added to every session's system prompt, within `Harness.context_chars`.

Order of priority when the budget is tight: the sub-agent the session runs as, prompt notes (in
full), the index of skills and sub-agents (one line each), then memories ranked by how many words
they share with the session's task (ties: in id order). Worked examples are not listed: the
loop shows the few recalled for the task (`Harness.recall`). What does not fit is
counted, so the agent knows to look with `harness.*.list()`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .entries import KINDS

if TYPE_CHECKING:
    from .entries import Entry
    from .manager import Harness

_WORD = re.compile(r"[a-z0-9]{3,}")
_OVERFLOW_ROOM = 40


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _Budget:
    def __init__(self, chars: int) -> None:
        self.left = chars
        self.lines: list[str] = []

    def add(self, text: str) -> bool:
        if len(text) + 1 > self.left:
            return False
        self.lines.append(text)
        self.left -= len(text) + 1
        return True


def build_context(harness: Harness, record: dict[str, Any]) -> str:
    options = record.get("options") or {}
    entries, _ = harness.list()
    # Worked examples are recalled for similar tasks only (harness.recall), never listed here.
    entries = [e for e in entries if e.kind != "example"]
    by_kind: dict[str, list[Entry]] = {k: [] for k in KINDS}
    for e in entries:
        by_kind[e.kind].append(e)
    budget = _Budget(max(0, harness.context_chars))
    # A session admitted before the rename recorded its sub-agent as "spec".
    subagent = options.get("subagent") or options.get("spec")
    if subagent:
        budget.add(
            f"## Your role (sub-agent `{subagent}`)\n{options.get('instructions') or ''}".strip()
        )
    if not entries:
        return "\n".join(budget.lines)
    budget.add(
        "## Harness (persistent across sessions)\n"
        "Standing notes, memories, skills and sub-agents of this project. Read a skill with "
        '`skill("name")`; start a child as a sub-agent with `rlm(prompt, subagent="name")`; '
        "record a durable fact with `harness.memory.create(id, content, title=...)`."
    )
    if by_kind["note"]:
        budget.add("### Prompt notes")
        for note in by_kind["note"]:
            text = f"- **{note.title or note.id}**: {note.content.strip()}"
            if not budget.add(text):
                budget.add(f"- **{note.title or note.id}**: {_one_line(note.content)}")
    for kind, heading, call in (
        ("skill", "### Skills", 'skill("{id}")'),
        ("subagent", "### Sub-agents", 'rlm(prompt, subagent="{id}")'),
    ):
        if not by_kind[kind]:
            continue
        budget.add(heading)
        for e in by_kind[kind]:
            extra = (
                f" (model {e.metadata['model']})"
                if kind == "subagent" and e.metadata.get("model")
                else ""
            )
            budget.add(f"- `{call.format(id=e.id)}`: {_one_line(e.summary())}{extra}")
    memories = by_kind["memory"]
    if memories:
        task = _words(str(record.get("prompt") or ""))
        ranked = sorted(memories, key=lambda m: -len(task & _words(m.title + " " + m.content)))
        budget.add("### Memories (most relevant first)")
        shown = 0
        budget.left -= _OVERFLOW_ROOM  # keep room to say how many did not fit
        for m in ranked:
            label = m.title or m.id
            if budget.add(f"- [{m.id}] {label}: {_one_line(m.content, 400)}"):
                shown += 1
        budget.left += _OVERFLOW_ROOM
        if shown < len(ranked):
            budget.add(f"({len(ranked) - shown} more: harness.memory.list())")
    return "\n".join(budget.lines)
