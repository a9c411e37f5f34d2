"""The host's process table, read from /proc (for tests and benchmarks that find a kernel's
processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any


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


def kernel_pid(km: Any) -> int:
    """The kernel's own process: the provisioner's, or in the sandbox the handle's child
    that is a kernel (its other child is bwrap)."""
    handle = km.provisioner.pid
    if not km.provisioner.sandboxed:
        return int(handle)
    return next(
        p
        for p, (ppid, cmd) in processes().items()
        if ppid == handle and b"\0prime_kernel.kernel\0" in cmd
    )


def disposition(pid: int, sig: int = signal.SIGINT) -> str:
    """What `pid` does with `sig`: "caught", "ignored" or "default" ("gone" if it ended).

    An ipykernel ignores SIGINT while idle and catches it while it handles a request, so
    "caught" is the event "the kernel is running the cell" (an interrupt sent before would
    be lost), and "ignored" in a cell is the event "the cell made itself SIGINT-proof"."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "gone"
    masks = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    bit = 1 << (sig - 1)
    if int(masks["SigCgt"], 16) & bit:
        return "caught"
    return "ignored" if int(masks["SigIgn"], 16) & bit else "default"


def server_info(runtime: Path, process: subprocess.Popen[Any], timeout: float = 180) -> Any:
    """The `jpserver-<pid>.json` a server process writes once it listens, read when it is
    written whole (jupyter_server creates the file, then writes it)."""
    path = runtime / f"jpserver-{process.pid}.json"
    deadline = time.monotonic() + timeout
    while True:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):  # not there yet, or not written whole
            pass
        if process.poll() is not None:
            raise AssertionError(f"the process exited ({process.returncode}) before {path.name}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {path.name} within {timeout} s")
        time.sleep(0.1)  # the poll's period: a file's appearing has no event to await here
