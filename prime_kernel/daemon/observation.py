"""Turn cell outputs into the text a model sees, capped with a note of what was cut."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..util.format import NO_OUTPUT, cap, output_text


def render(
    outputs: list[dict[str, Any]],
    *,
    status: str,
    limit: int,
    timeout: float,
    exit: str | None = None,
    brief_errors: bool = False,
) -> str:
    text = "".join(output_text(o, brief_errors=brief_errors) for o in outputs)
    if status == "timeout":
        text += f"\n[the cell ran longer than {timeout:g} s and was interrupted]"
    elif status == "killed":
        text += (
            f"\n[the cell ran longer than {timeout:g} s and did not stop when interrupted: its "
            "kernel was killed]"
        )
    elif status == "died":
        text += f"\n[the kernel died during this cell ({exit or 'no exit status'})]"
    text, _ = cap(text, limit)
    return text if text.strip() else NO_OUTPUT


def report(outputs: list[dict[str, Any]], status: str, marker: str) -> dict[str, Any] | None:
    """The JSON a silent cell of the daemon's printed after `marker` (snapshots, gates, spills),
    or None if the cell failed or printed none."""
    if status != "ok":
        return None
    for out in outputs:
        if out.get("output_type") != "stream":
            continue
        for line in str(out.get("text", "")).splitlines():
            if line.startswith(marker):
                with contextlib.suppress(ValueError):
                    return dict(json.loads(line[len(marker) :]))
    return None
