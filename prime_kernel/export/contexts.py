"""A session's context as an export writes it beside the notebook: never as a pickle that
runs code when the notebook is opened.

A context arrives as a pickle made by whoever started the session — another agent, whose code
a model wrote — and the type it claims (`context_type`) is its own word. So an export decides
from the bytes themselves: a pickle of plain JSON data (only lists, dicts with string keys,
strings, numbers, booleans and None — no class or function named in it) is loaded with the
restricted unpickler and written as JSON, which any reader can open; anything else is written as
the pickle it is, and the notebook loads it with `prime_kernel.kernel.safe_pickle.load`, which
builds plain data types only (numpy and pandas included) and refuses the rest by name. Nothing
here imports what a pickle names: the daemon never loads numpy or pandas to export a session.
"""

from __future__ import annotations

import io
import json
import math
import pickletools
from dataclasses import dataclass, field
from typing import Any

from ..kernel import safe_pickle

# Opcodes that name a class or function, or call one: a pickle with none of them is data.
_CODE_OPS = frozenset(
    {
        "GLOBAL",
        "STACK_GLOBAL",
        "INST",
        "OBJ",
        "REDUCE",
        "NEWOBJ",
        "NEWOBJ_EX",
        "BUILD",
        "EXT1",
        "EXT2",
        "EXT4",
        "PERSID",
        "BINPERSID",
    }
)


@dataclass
class ContextFile:
    """A context as written beside its notebook."""

    name: str  # the file's name
    data: bytes
    format: str  # "json" or "pickle"
    # What it holds, in words, for the notebook: "a list" or "a pickle naming numpy.ndarray".
    holds: str
    names: list[str] = field(default_factory=list)  # what a pickle names (module.Name)


def context_file(session_id: str, data: bytes, *, max_bytes: int | None = None) -> ContextFile:
    """How to write the context `data` (a pickle, as the session was given it)."""
    names, calls = _scan(data)
    if not calls:
        try:
            value = safe_pickle.loads(data, what="the context", max_bytes=max_bytes)
        except Exception:
            value = _NOT_JSON
        text = _as_json(value)
        if text is not None:
            return ContextFile(
                f"{session_id}.context.json",
                text.encode("utf-8"),
                "json",
                f"a `{type(value).__name__}`",
            )
    shown = ", ".join(f"`{n}`" for n in names[:8]) + (", …" if len(names) > 8 else "")
    holds = f"a pickle naming {shown}" if names else "a pickle of plain data"
    return ContextFile(f"{session_id}.context.pkl", data, "pickle", holds, names)


_NOT_JSON = object()


def _scan(data: bytes) -> tuple[list[str], bool]:
    """The module.Name pairs a pickle names, and whether it names or calls anything at all
    (a pickle that cannot be read counts as one that does)."""
    names: list[str] = []
    calls = False
    strings: list[Any] = []  # the last strings pushed, for STACK_GLOBAL
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            if op.name in _CODE_OPS:
                calls = True
            if op.name in ("GLOBAL", "INST") and isinstance(arg, str):
                names.append(arg.replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.append(f"{strings[-2]}.{strings[-1]}")
            if isinstance(arg, str) and "UNICODE" in op.name:
                strings = [*strings[-1:], arg]
    except Exception:
        return names, True
    return sorted(set(names)), calls


def _as_json(value: Any) -> str | None:
    """`value` as JSON text if JSON holds it exactly (same types back: no tuple turned list,
    no int key turned string, no NaN), else None."""
    if value is _NOT_JSON or not _plain(value):
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return text


def _plain(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if node is None or isinstance(node, (bool, int, str)):
            continue
        if type(node) is float:
            if not math.isfinite(node):
                return False
            continue
        if type(node) is list:
            stack.extend(node)
        elif type(node) is dict:
            if not all(type(k) is str for k in node):
                return False
            stack.extend(node.values())
        else:
            return False
    return True
