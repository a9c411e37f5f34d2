"""What an input looks like, in a line: its type, its size, a sample.

A small model told only that `context` is "a list" guesses the rest: it sums a list of dicts,
compares CSV fields (text) with numbers, splits a file on the wrong separator, or prints a
megabyte it cannot read. Told the size and shown a sample, it writes code that fits (the
Recursive Language Models paper gives its model the context's type and length for the same
reason). Runs in the agent's REPL, on the value and files themselves, so the daemon never
unpickles what an agent made.

The sample is worded as an example ("like ..."), never as an expression such as `context[0]`:
a small model shown `context[:8] = [...]` answered `sum(context[:8])`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

SAMPLE_CHARS = 160
# Past this many characters (of repr) a value is said to be for code, not for reading.
READABLE_CHARS = 8000


def overview(context: Any = None, files: Iterable[str] = (), *, has_context: bool) -> str:
    """One line on `context` (if the session has one) and one per file that exists here."""
    lines = [describe(context)] if has_context else []
    lines += [describe_file(name) for name in files if os.path.isfile(name)]
    return "\n".join(lines)


def describe(value: Any, name: str = "context") -> str:
    text = repr(value)
    if len(text) <= SAMPLE_CHARS:
        return f"{name} = {text} ({_kind(value)})"
    line = f"{name} is {_kind(value)}{_sample(value, name)}"
    if len(text) > READABLE_CHARS:
        line += " (too long to print: compute over it with code)"
    return line


def describe_file(name: str) -> str:
    size = os.path.getsize(name)
    with open(name, encoding="utf-8", errors="replace") as f:
        head = f.read(SAMPLE_CHARS)
        lines = head.count("\n")
        while chunk := f.read(1 << 20):
            lines += chunk.count("\n")
    note = " (read with csv.DictReader: every value is a str)" if name.endswith(".csv") else ""
    where = f"{_count(size, 'byte')} in {_count(max(lines, 1), 'line')}"
    return f"{name} is a file of {where}, starting {_clip(repr(head))}{note}"


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _clip(text: str, chars: int = SAMPLE_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _kind(value: Any) -> str:
    if isinstance(value, str):
        lines = value.count("\n") + (not value.endswith("\n"))
        return f"a str of {_count(len(value), 'character')} in {_count(lines, 'line')}"
    if isinstance(value, (bytes, bytearray)):
        return f"{_a(type(value).__name__)} of {_count(len(value), 'byte')}"
    if isinstance(value, dict):
        return f"a dict with {_count(len(value), 'key')}"
    if isinstance(value, (list, tuple, set, frozenset)):
        types = {type(item).__name__ for item in list(value)[:1000]}
        what = types.pop() if len(types) == 1 else "item"
        return f"{_a(type(value).__name__)} of {_count(len(value), what)}"
    return _a(type(value).__name__)


def _sample(value: Any, name: str) -> str:
    if isinstance(value, str):
        return f", starting {_clip(repr(value[:SAMPLE_CHARS]))}"
    if isinstance(value, (list, tuple)) and value:
        first = value[0]
        if not isinstance(first, (dict, list, tuple, str)):  # numbers: a few of them
            return ", like " + _clip(", ".join(map(repr, value[:8]))) + ", …"
        sample = f" like {_clip(repr(first))}"
        if isinstance(first, dict) and first and all(isinstance(v, str) for v in first.values()):
            sample += " (every value is a str, as read from CSV: convert numbers with float())"
        return sample
    if isinstance(value, dict) and value:
        key = next(iter(value))
        if len(value) <= 3 and isinstance(value[key], (list, tuple, dict)):
            inner = describe(value[key], f"{name}[{key!r}]")
            return f"; {inner}"
        return f" like {_clip(repr(dict(list(value.items())[:8])))}"
    return f": {_clip(repr(value))}"
