"""/api/prime/sessions/{id}/export: a session's trajectory as a notebook.

GET returns the .ipynb itself (a download; `?with_context=1` adds the cell that loads the
context). POST `{"path": "rel/out.ipynb", "subtree", "force", "with_context"}` writes it under the
server root instead (`subtree` writes a folder of linked notebooks, `force` replaces an earlier
export, `with_context` writes the context beside it); a path outside the root is refused.
Writing is a POST, never a GET, so that it is covered by the XSRF check.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..daemon.errors import PrimeError
from ..export import NotebookExporter, Redactor, daemon_secrets, export_to, under_root
from .base import PrimeHandler, prime_errors
from .handlers import UserHandler

_TRUE = ("1", "true", "yes")


def flag(handler: web.RequestHandler, name: str) -> bool:
    value = handler.get_argument(name, "0").strip().lower()
    if value not in (*_TRUE, "0", "false", "no", ""):
        raise PrimeError(f"{name} must be 1 or 0, not {value!r}")
    return value in _TRUE


def exporter(handler: PrimeHandler) -> NotebookExporter:
    """An exporter configured from the server's config that redacts everything it knows."""
    return NotebookExporter(
        parent=handler.extensionapp,
        daemon=handler.daemon,
        redactor=Redactor(daemon_secrets(handler.daemon)),
    )


async def write_export(
    handler: PrimeHandler,
    session_id: str,
    target: Path,
    *,
    subtree: bool,
    force: bool,
    with_context: bool,
) -> list[Path]:
    """Export to `target` off the event loop; the files written."""
    return await asyncio.to_thread(
        export_to,
        exporter(handler),
        session_id,
        target,
        subtree=subtree,
        force=force,
        with_context=with_context,
    )


class ExportHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self, session_id: str) -> None:
        if self.get_argument("path", None) is not None:
            raise PrimeError('to write an export under the root, POST {"path": ...} instead')
        with_context = flag(self, "with_context")
        nb = await asyncio.to_thread(
            exporter(self).notebook_bytes, session_id, with_context=with_context
        )
        self.set_header("Content-Disposition", f'attachment; filename="{session_id}.ipynb"')
        self.finish(nb, set_content_type="application/x-ipynb+json")

    @web.authenticated
    @authorized
    @prime_errors
    async def post(self, session_id: str) -> None:
        body = self.json_body()
        unknown = set(body) - {"path", "subtree", "force", "with_context"}
        if unknown:
            raise PrimeError(f"unknown fields: {', '.join(sorted(unknown))}")
        path = body.get("path")
        if not isinstance(path, str) or not path.strip():
            raise PrimeError("'path' (a notebook path under the server root) is required")
        options = {k: body.get(k, False) for k in ("subtree", "force", "with_context")}
        for key, value in options.items():
            if not isinstance(value, bool):
                raise PrimeError(f"{key} must be true or false")
        self.daemon.session_json(session_id)  # an unknown id is a 404 before any path check
        target = under_root(self.daemon.root_dir, path, store=self.daemon.store_dir)
        files = await write_export(self, session_id, target, **options)
        root = Path(self.daemon.root_dir).resolve()
        self.write_json(
            {
                "session_id": session_id,
                "path": str(target.relative_to(root)),
                "files": [str(f.relative_to(root)) for f in files],
            },
            status=201,
        )


_ID = r"(?P<session_id>[A-Za-z0-9_-]+)"

HANDLERS: list[tuple[str, Any]] = [
    (rf"/api/prime/sessions/{_ID}/export", ExportHandler),
]
