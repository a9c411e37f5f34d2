"""`prime-agent export ID`: a session's trajectory as a notebook.

When a daemon serves the root, the data comes from its REST API (it holds the store); with none,
from the store itself. The notebooks are written here either way.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from .common import CLIError, read_store
from .remote import call, find_server


def add_commands(sub: Any) -> None:
    p = sub.add_parser("export", help="write a session's trajectory as a notebook (.ipynb)")
    p.add_argument("id", help="the session to export")
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="the notebook to write (default ID.ipynb), or with --subtree the folder (default ID)",
    )
    p.add_argument(
        "--subtree",
        action="store_true",
        help="also export every session below it: a folder of notebooks linked to each other",
    )
    p.add_argument("--force", action="store_true", help="replace an earlier export at PATH")
    p.add_argument(
        "--with-context",
        action="store_true",
        help="write each session's pickled context beside its notebook, with a cell loading it",
    )
    p.set_defaults(func=cmd_export)


class RestSource:
    """An export's data read from a running daemon's REST API (which holds the store)."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info

    def session_json(self, session_id: str) -> dict[str, Any]:
        return dict(call(self.info, "GET", f"sessions/{session_id}"))

    def descendant_ids(self, session_id: str) -> list[str]:
        out: list[str] = []
        level = self.session_json(session_id)["children"]
        while level:
            out += level
            level = [c for sid in level for c in self.session_json(sid)["children"]]
        return out

    async def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        path = f"sessions/{session_id}/events?after={after}"
        return list((await asyncio.to_thread(call, self.info, "GET", path))["events"])

    async def context_bytes(self, session_id: str) -> bytes:
        path = f"sessions/{session_id}/context"
        return bytes(await asyncio.to_thread(call, self.info, "GET", path, raw=True))


def cmd_export(args: argparse.Namespace) -> int:
    from ..export import NotebookExporter, default_target, export_to
    from ..protocol.errors import PrimeError
    from ..util.redact import Redactor, environment_secrets

    target = Path(args.output or default_target(args.id, args.subtree))
    info = find_server(args.root)
    source: Any = RestSource(info) if info is not None else read_store(args.root)
    # The daemon scrubbed every secret it knew before it stored anything; keys in this
    # process's environment are blanked out again here.
    exporter = NotebookExporter(redactor=Redactor(environment_secrets()))
    try:
        files = asyncio.run(
            export_to(
                source,
                exporter,
                args.id,
                target,
                subtree=args.subtree,
                force=args.force,
                with_context=args.with_context,
                tmp_dir=Path(args.root).resolve() / ".prime" / "tmp",
            )
        )
    except PrimeError as e:
        if e.data.get("exists"):
            raise CLIError(
                f"{', '.join(e.data['exists'])} already exists (add --force to replace it)",
                exit_code=1,
            ) from None
        raise CLIError(e.message, exit_code=1) from None
    finally:
        if info is None:
            source.close()
    for path in files:
        print(path)
    return 0
