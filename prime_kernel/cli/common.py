"""Helpers shared by the CLI commands: the store, formatting."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..daemon.daemon import Daemon


class CLIError(Exception):
    """A user error: printed as one line on stderr, exit code `exit_code`."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def offline_daemon(root: str) -> Daemon:
    """A daemon over the store in ROOT, not started: for reading records with no server."""
    path = Path(root).resolve() / ".prime"
    if not (path / "prime.sqlite3").exists():
        raise CLIError(f"no Prime store in {path} (run `prime-agent run ...` there first)")
    return Daemon(root_dir=str(Path(root).resolve()))


def fmt_tokens(n: float) -> str:
    n = int(n)
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)


def fmt_cost(c: float) -> str:
    return f"${c:.4f}" if c else "$0"


def fmt_usage(u: dict[str, Any]) -> str:
    return (
        f"{fmt_tokens(u.get('total_tokens', 0))} tok "
        f"({fmt_tokens(u.get('prompt_tokens', 0))} in / "
        f"{fmt_tokens(u.get('completion_tokens', 0))} out), {fmt_cost(u.get('cost', 0))}, "
        f"{int(u.get('model_calls', 0))} calls, {int(u.get('cells', 0))} cells"
    )


def fmt_time(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)
