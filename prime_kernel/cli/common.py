"""Helpers shared by the CLI commands: errors, the store read without a daemon, formatting.

Stdlib and light modules of ours only: every command imports this.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..util.format import fmt_time, fmt_usage

if TYPE_CHECKING:
    from .offline import StoreEditor, StoreReader

S = TypeVar("S", bound="StoreReader")

__all__ = [
    "CLIError",
    "dump_json",
    "edit_store",
    "fmt_time",
    "fmt_usage",
    "print_table",
    "read_store",
    "resolved_root",
    "skip_slow_imports",
]


class CLIError(Exception):
    """A user error: printed as one line on stderr, exit code `exit_code`."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def resolved_root(root: str) -> Path:
    path = Path(root).resolve()
    if not path.is_dir():
        raise CLIError(f"--root {path} is not a folder")
    return path


def read_store(root: str) -> StoreReader:
    """The records under ROOT read straight from its store (when no server holds it)."""
    from .offline import StoreReader

    return _open_store(root, StoreReader)


def edit_store(root: str) -> StoreEditor:
    """The store under ROOT opened for the changes that need no daemon (when none holds it)."""
    from .offline import StoreEditor

    return _open_store(root, StoreEditor)


def _open_store(root: str, kind: type[S]) -> S:
    from ..protocol.errors import PrimeError

    path = resolved_root(root) / ".prime"
    if not (path / "prime.sqlite3").exists():
        raise CLIError(f"no Prime store in {path} (run `prime-agent run ...` there first)")
    try:
        return kind(path)
    except PrimeError as e:
        raise CLIError(e.message, exit_code=1) from None


def skip_slow_imports() -> None:
    """Keep jsonschema (imported by nbformat and jupyter_server) from importing
    `rfc3987_syntax`, which builds a parser for IRIs at import: about 3 s of CPU.

    jsonschema treats it as optional and only loses its "iri" format checks, which no schema
    this process validates uses (ours, nbformat's and jupyter_events' check "uri" at most).
    """
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """Rows in columns under a header, each column as wide as its widest cell (the last one
    is left ragged: it holds free text)."""
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    for row in table:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        print("  ".join([*cells, row[-1]]).rstrip())
