"""Markdown for exported notebooks: quoting, fences, times and links to other sessions'
notebooks."""

from __future__ import annotations

import datetime
import json
from typing import Any

from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell


def notebook_name(session_id: str) -> str:
    """The file a session's notebook has beside its parent's and children's."""
    return f"{session_id}.ipynb"


def when(ts: float | None) -> str:
    if not ts:
        return "-"
    return datetime.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def quote(text: str) -> str:
    return "\n".join("> " + line for line in str(text).splitlines()) or ">"


def fence(text: str, lang: str = "") -> str:
    """A fenced block that survives backticks inside `text`."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def as_text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value, default=repr)


def link(session_id: str, label: str | None = None) -> str:
    return f"[`{session_id}`{' · ' + label if label else ''}]({notebook_name(session_id)})"


def note(cid: str, kind: str, text: str) -> NotebookNode:
    """A markdown cell telling of an event of `kind`."""
    return new_markdown_cell(text, id=cid, metadata={"prime": {"kind": kind}})
