"""Text shown to people and models: cell outputs as text, middle-cut text, usage figures."""

from __future__ import annotations

import re
import time
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
NO_OUTPUT = "[no output]"
DISPLAY_DATA = "[display data: "


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def output_text(output: dict[str, Any], *, brief_errors: bool = False) -> str:
    """One Jupyter output (stream, error, result, display data) as plain text;
    `brief_errors` keeps only an error's `Name: message`."""
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


def clip(text: str, n: int) -> str:
    """`text`'s first `n` characters, with an ellipsis where it was cut."""
    return text if len(text) <= n else text[:n] + "…"


def cap(text: str, limit: int) -> tuple[str, str | None]:
    """Keep the head and tail of `text` within `limit` characters; say what was cut."""
    if limit <= 0 or len(text) <= limit:
        return text, None
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    note = f"[... {cut} characters cut from the middle of this output; the full output is stored]"
    return f"{text[:head]}\n{note}\n{text[-tail:] if tail else ''}", note


def fmt_tokens(n: float) -> str:
    n = int(n)
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)


def fmt_cost(c: float) -> str:
    return f"${c:.4f}" if c else "$0"


def fmt_usage(u: dict[str, Any]) -> str:
    return (
        f"{fmt_tokens(u.get('total_tokens', 0))} tok "
        f"({fmt_tokens(u.get('prompt_tokens', 0))} in / "
        f"{fmt_tokens(u.get('completion_tokens', 0))} out{fmt_cached(u)}), "
        f"{fmt_cost(u.get('cost', 0))}"
        f"{fmt_saved(u)}, "
        f"{plural(int(u.get('model_calls', 0)), 'model call')}, "
        f"{plural(int(u.get('cells', 0)), 'cell')}"
    )


def fmt_cached(u: dict[str, Any]) -> str:
    """ "; 93% cached": the share of prompt tokens the provider served from its cache."""
    prompt, cached = u.get("prompt_tokens") or 0, u.get("cached_tokens") or 0
    return f"; {cached / prompt:.0%} cached" if prompt and cached else ""


def fmt_saved(u: dict[str, Any]) -> str:
    """ " (saved $0.1234)" by the prompt cache. Nothing when it saved nothing: a first call to
    Claude costs more (its prompt is written to the cache), and usage recorded before
    `uncached_cost` existed has none."""
    saved = (u.get("uncached_cost") or 0) - (u.get("cost") or 0)
    return f" (saved {fmt_cost(saved)})" if saved >= 5e-5 else ""


def plural(n: int, noun: str) -> str:
    """`1 cell`, `2 cells`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def fmt_interval(seconds: float) -> str:
    """ "90s", "10m", "1h 30m" (the panel's formatInterval, labextension/src/longrun.ts)."""
    if seconds < 60 and seconds != int(seconds):
        return f"{seconds:.1f}".rstrip("0").rstrip(".") + "s"
    rest = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        n, rest = divmod(rest, size)
        if n:
            parts.append(f"{n}{unit}")
    # Two units say enough (a day-long interval's seconds are noise).
    return " ".join(parts[:2]) or "0s"


def fmt_time(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"
