"""Helpers shared by the CLI commands: the store, formatting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..daemon.daemon import Daemon
from ..protocol.errors import PrimeError
from ..util.format import fmt_time, fmt_usage

__all__ = ["CLIError", "dump_json", "fmt_time", "fmt_usage", "offline_daemon"]


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
    daemon = Daemon(root_dir=str(Path(root).resolve()))
    try:
        daemon.open()
    except PrimeError as e:
        raise CLIError(e.message) from None
    return daemon


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)
