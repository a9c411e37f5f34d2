"""The host's process table, read from /proc (for tests and benchmarks that find a kernel's
processes)."""

from __future__ import annotations

import os
from pathlib import Path


def processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, command line) of every process (those that end meanwhile left out)."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            # The command name in parentheses may hold spaces or ')': split after the last.
            out[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline)
    return out


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, as the host sees them."""
    children: dict[int, list[int]] = {}
    for child, (parent, _) in processes().items():
        children.setdefault(parent, []).append(child)
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out
