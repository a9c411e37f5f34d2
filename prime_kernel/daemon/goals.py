"""Goals: what a session works towards, kept in front of its model on every turn.

A goal lives on the session's record (`goal`, written through to the store), so it survives a
restart with the record. It is never part of the conversation: the daemon adds it as a trailing
message to every model call (`decorate`), so a compaction, which summarises the conversation,
cannot drop or blur it. It goes at the end, never into the system message: a provider caches a
prompt's unchanged beginning, and a goal rewritten in the system message on every progress note
would make it read the whole conversation again at full price (docs/prompt-cache.md).

Every change is a `goal` event — set, progress, done, cleared — made by the session itself
(`goal.*` in its REPL) or by a person (REST, `prime-agent goal`); a person's change is also told
to the model at its next turn.
"""

from __future__ import annotations

import time
from typing import Any

from traitlets import Int
from traitlets.config import LoggingConfigurable

from ..protocol.errors import Conflict, InvalidRequest, TooLarge
from ..protocol.events import EventKind
from .events import EventLog
from .records import SessionRecord
from .registry import SessionRegistry

USER = "user"


class Goals(LoggingConfigurable):
    """Configure as `c.Goals.<trait>`."""

    max_chars = Int(
        4000,
        min=1,
        config=True,
        help="Longest goal, progress note or summary, in characters (a goal is in every "
        "prompt: keep details in a file or a variable and name it in the goal).",
    )
    max_progress = Int(
        10,
        min=0,
        config=True,
        help="Progress notes kept on the record (the latest; every note stays in the "
        "trajectory) and shown to the model with the goal.",
    )

    def __init__(self, registry: SessionRegistry, events: EventLog, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.registry = registry
        self.events = events

    # -- changing -------------------------------------------------------------------------------
    def change(self, record: SessionRecord, body: dict[str, Any], by: str) -> dict[str, Any] | None:
        """Apply a PUT body (`goal.json`): set `text`, note `progress`, or `status: done`."""
        actions = [k for k in ("text", "progress", "status") if k in body]
        if len(actions) != 1:
            raise InvalidRequest(
                "give exactly one of 'text' (a new goal), 'progress' (a note) or "
                "'status': 'done' (with a 'summary')"
            )
        if "summary" in body and actions != ["status"]:
            raise InvalidRequest("'summary' goes with 'status': 'done'")
        if "text" in body:
            return self.set(record, body["text"], by)
        if "progress" in body:
            return self.progress(record, body["progress"], by)
        return self.done(record, body.get("summary") or "", by)

    def set(self, record: SessionRecord, text: Any, by: str) -> dict[str, Any]:
        self._open(record)
        text = self._text(text, "the goal", empty=False)
        now = time.time()
        goal = {"text": text, "status": "active", "set_by": by, "set_at": now, "updated": now}
        return self._record(record, goal, {"event": "set", "text": text, "by": by})

    def progress(self, record: SessionRecord, note: Any, by: str) -> dict[str, Any]:
        goal = self._current(record)
        note = self._text(note, "the progress note", empty=False)
        now = time.time()
        notes = [*goal.get("progress", []), {"note": note, "ts": now, "by": by}]
        kept = notes[-self.max_progress :] if self.max_progress else []
        changed = {**goal, "progress": kept, "updated": now}
        return self._record(record, changed, {"event": "progress", "note": note, "by": by})

    def done(self, record: SessionRecord, summary: Any, by: str) -> dict[str, Any]:
        goal = self._current(record)
        summary = self._text(summary, "the summary", empty=True)
        changed = {**goal, "status": "done", "summary": summary, "updated": time.time()}
        data = {"event": "done", "text": goal["text"], "summary": summary, "by": by}
        return self._record(record, changed, data)

    def clear(self, record: SessionRecord, by: str) -> bool:
        """Remove the goal; False if there was none."""
        self._open(record)
        if record.goal is None:
            return False
        text = record.goal.get("text", "")
        record.update(goal=None)
        self.events.emit(record, EventKind.GOAL, {"event": "cleared", "text": text, "by": by})
        self._tell(record, by, f"[{_who(by)} cleared your goal ({text!r}).]")
        return True

    def _record(
        self, record: SessionRecord, goal: dict[str, Any], data: dict[str, Any]
    ) -> dict[str, Any]:
        record.update(goal=goal)
        self.events.emit(record, EventKind.GOAL, data)
        what = {"set": "set your goal", "progress": "noted progress", "done": "marked it done"}
        self._tell(record, data["by"], f"[{_who(data['by'])} {what[data['event']]}.]")
        return goal

    def _tell(self, record: SessionRecord, by: str, note: str) -> None:
        """A person's change is news to the model (its own changes it made itself)."""
        live = self.registry.live.get(record.id)
        if by == USER and live is not None and record.is_agent:
            live.notes.append(note + " Your goal is shown after the latest message on every turn.")

    # -- checks ---------------------------------------------------------------------------------
    def _open(self, record: SessionRecord) -> None:
        if record.terminal:
            raise Conflict(f"session {record.id} has ended ({record.state.value}); its goal stays")

    def _current(self, record: SessionRecord) -> dict[str, Any]:
        self._open(record)
        if record.goal is None:
            raise Conflict(f"session {record.id} has no goal: set one first (goal.set(text))")
        return record.goal

    def _text(self, value: Any, what: str, *, empty: bool) -> str:
        if not isinstance(value, str):
            raise InvalidRequest(f"{what} must be a string, not {type(value).__name__}")
        value = value.strip()
        if not value and not empty:
            raise InvalidRequest(f"{what} must not be empty")
        if len(value) > self.max_chars:
            raise TooLarge(
                f"{what} has {len(value)} characters; at most {self.max_chars} "
                "(c.Goals.max_chars): it is shown on every turn, so keep the details in a file "
                "or a variable and name it",
                size=len(value),
                limit=self.max_chars,
            )
        return value

    # -- the model's context --------------------------------------------------------------------
    def section(self, record: SessionRecord) -> str | None:
        """The goal as the model is shown it (None without an active goal)."""
        goal = record.goal
        if not goal or goal.get("status") != "active":
            return None
        by = goal.get("set_by", USER)
        who = "you" if by == record.id else _who(by).lower()
        lines = [f"## Your goal (set by {who})", goal["text"]]
        if goal.get("progress"):
            lines.append("Progress so far:")
            lines += [f"- {p['note']}" for p in goal["progress"]]
        lines.append(
            "Work towards this goal; `goal.progress(note)` records progress and "
            "`goal.done(summary)` marks it achieved."
        )
        return "\n".join(lines)

    def decorate(
        self, record: SessionRecord, messages: list[dict[str, Any]], stable: int
    ) -> list[dict[str, Any]]:
        """`messages` for a model call with the goal as a message after the first `stable` ones
        (the stored conversation; what follows is a prefill the reply continues), never kept."""
        section = self.section(record)
        if section is None:
            return messages
        return [*messages[:stable], {"role": "user", "content": section}, *messages[stable:]]


def _who(by: str) -> str:
    return "A person" if by == USER else f"Session {by}"
