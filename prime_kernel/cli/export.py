"""`prime-agent export ID`: a session's trajectory as a notebook, from the store.

Works with no server. When a daemon serves the same root, the notebooks are fetched from it
instead, because only that process knows the live kernel tokens (and its own token) that must
be redacted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import offline_daemon


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


def cmd_export(args: argparse.Namespace) -> int:
    from ..daemon.errors import PrimeError
    from ..export import NotebookExporter, collect, default_target, write
    from .main import CLIError
    from .remote import find_server

    daemon = offline_daemon(args.root)
    target = Path(args.output or default_target(args.id, args.subtree))
    info = find_server(args.root)
    if info is not None:
        notebook = _fetcher(info, args.with_context)
    else:
        exporter = NotebookExporter(daemon=daemon)

        def notebook(sid: str) -> bytes:
            return exporter.notebook_bytes(sid, with_context=args.with_context)

    try:
        export = collect(
            daemon, args.id, notebook, subtree=args.subtree, with_context=args.with_context
        )
        files = write(
            export,
            target,
            subtree=args.subtree,
            force=args.force,
            tmp_dir=daemon.store.tmp_dir,
        )
    except PrimeError as e:
        raise CLIError(e.message, exit_code=1) from None
    for path in files:
        print(path)
    return 0


def _fetcher(info: dict[str, Any], with_context: bool) -> Any:
    import nbformat

    from .remote import call

    def notebook(sid: str) -> bytes:
        query = "?with_context=1" if with_context else ""
        data = call(info, "GET", f"sessions/{sid}/export{query}")
        return nbformat.writes(nbformat.from_dict(data)).encode()

    return notebook
