"""Turn cell outputs into the text a model sees, capped with a note of what was cut."""

from __future__ import annotations

import re
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
NO_OUTPUT = "[no output]"
DISPLAY_DATA = "[display data: "


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def output_text(output: dict[str, Any], *, brief_errors: bool = False) -> str:
    """The text of one output. `brief_errors` keeps only an error's `Name: message`."""
    kind = output.get("output_type")
    if kind == "stream":
        return str(output.get("text", ""))
    if kind == "error":
        brief = f"{output.get('ename')}: {output.get('evalue')}"
        if brief_errors:
            return brief + "\n"
        tb = "\n".join(strip_ansi(line) for line in output.get("traceback") or [])
        return tb or brief
    data = output.get("data") or {}
    if "text/plain" in data:
        text = data["text/plain"]
        return ("".join(text) if isinstance(text, list) else str(text)) + "\n"
    kinds = ", ".join(sorted(data)) or "nothing"
    return f"{DISPLAY_DATA}{kinds}]\n"


def cap(text: str, limit: int) -> tuple[str, str | None]:
    """Keep the head and tail of `text` within `limit` characters; say what was cut."""
    if limit <= 0 or len(text) <= limit:
        return text, None
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    note = f"[... {cut} characters cut from the middle of this output; the full output is stored]"
    return f"{text[:head]}\n{note}\n{text[-tail:] if tail else ''}", note


def render(
    outputs: list[dict[str, Any]],
    *,
    status: str,
    limit: int,
    timeout: float,
    brief_errors: bool = False,
) -> str:
    text = "".join(output_text(o, brief_errors=brief_errors) for o in outputs)
    if status == "timeout":
        text += f"\n[the cell ran longer than {timeout:g} s and was interrupted]"
    text, _ = cap(text, limit)
    return text if text.strip() else NO_OUTPUT
