"""Each agent kernel's own log: where its stdout and stderr go.

A kernel started the usual way inherits the server's stdout and stderr, and ipykernel keeps a
copy of each (to echo output to the terminal): agent code could read the server's run log
through /proc/self/fd, forge lines in it, or write to the person's terminal. An agent kernel's
stdout and stderr are a file of its own instead, `<store>/logs/kernels/<kernel id>.log`, opened
by the daemon and handed over as the descriptor (the store is hidden in the sandbox). The
newest `KEEP` logs are kept.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

KEEP = 200


def open_log(store_dir: str | os.PathLike[str], kernel_id: str) -> int:
    """A descriptor of the kernel's log, for appending (the caller closes it once handed)."""
    folder = Path(store_dir) / "logs" / "kernels"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    prune(folder)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
    return os.open(folder / f"{kernel_id}.log", flags, 0o600)


def prune(folder: Path, keep: int = KEEP) -> None:
    """Remove all but the `keep` newest logs."""
    with os.scandir(folder) as entries:
        logs = [e for e in entries if e.name.endswith(".log") and e.is_file(follow_symlinks=False)]
    if len(logs) <= keep:
        return
    logs.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime)
    for entry in logs[: len(logs) - keep]:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
