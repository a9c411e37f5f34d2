"""Trajectories as notebooks, for people and for kernels.

GET /api/prime/sessions/{id}/export returns the .ipynb itself (a download; `?with_context=1` adds
the cell that loads the context). POST `{"path", "subtree", "force", "with_context"}` writes it
under the server root instead; a path outside the root (or inside the daemon's store) is
refused, and the files are written through folder descriptors that no symbolic link, swapped in
meanwhile, can redirect (export/files.py). Writing is a POST, never a GET, so that it is covered
by the XSRF check.

POST /api/prime/kernel/export: `export()` and `Handle.export()` from a kernel, for its own session
and its descendants only; relative paths are taken from the kernel's working folder (it sends
`cwd`), and the result must still lie under the server root.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..export import NotebookExporter, context_file, default_target, export_to, target_parts
from ..protocol.errors import InvalidRequest
from ..protocol.wire import API, KERNEL_API, SESSION_ID
from ..util.redact import Redactor, config_secrets
from .base import KernelHandler, PrimeHandler, UserHandler

ID = rf"(?P<session_id>{SESSION_ID})"
_FLAGS = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False, "": False}


class _Exporting(PrimeHandler):
    def exporter(self) -> NotebookExporter:
        """An exporter configured from the server's config that redacts everything it knows."""
        secrets = self.secrets.known() | config_secrets(self.serverapp.config)
        return NotebookExporter(parent=self.extensionapp, redactor=Redactor(secrets))

    async def write_export(
        self, session_id: str, parts: list[str], *, subtree: bool, force: bool, with_context: bool
    ) -> list[Path]:
        return await export_to(
            self.listing,
            self.exporter(),
            session_id,
            "/".join(parts),
            root=self.daemon.root_dir,
            subtree=subtree,
            force=force,
            with_context=with_context,
            tmp_dir=self.store.tmp_dir,
        )


class ExportHandler(_Exporting, UserHandler):
    async def get(self, session_id: str) -> None:
        if self.get_argument("path", None) is not None:
            raise InvalidRequest('to write an export under the root, POST {"path": ...} instead')
        value = self.get_argument("with_context", "0").strip().lower()
        if value not in _FLAGS:
            raise InvalidRequest(f"with_context must be 1 or 0, not {value[:20]!r}")
        record = self.listing.session_json(session_id)
        events = await self.listing.events(session_id)
        states = {c: self.listing.session_json(c)["state"] for c in record["children"]}
        context = None
        if _FLAGS[value] and record.get("context_type"):
            data = await self.listing.context_bytes(session_id)
            context = await asyncio.to_thread(context_file, session_id, data)
        nb = self.exporter().notebook_bytes(record, events, states=states, context=context)
        self.set_header("Content-Disposition", f'attachment; filename="{session_id}.ipynb"')
        self.finish(nb, set_content_type="application/x-ipynb+json")

    async def post(self, session_id: str) -> None:
        body = self.body("export")
        self.listing.session_json(session_id)  # an unknown id is a 404 before any path check
        parts = target_parts(self.daemon.root_dir, body["path"], store=self.daemon.store_dir)
        files = await self.write_export(
            session_id,
            parts,
            subtree=body.get("subtree", False),
            force=body.get("force", False),
            with_context=body.get("with_context", False),
        )
        root = Path(self.daemon.root_dir).resolve()
        self.write_json(
            {
                "session_id": session_id,
                "path": "/".join(parts),
                "files": [str(f.relative_to(root)) for f in files],
            },
            status=201,
        )


class KernelExportHandler(_Exporting, KernelHandler):
    async def post(self) -> None:
        body = self.body("kernel_export")
        session_id = self.access.own_tree(self.caller, body.get("session_id"))
        subtree = body.get("subtree", False)
        path = body.get("path") or default_target(session_id, subtree)
        parts = target_parts(
            self.daemon.root_dir, path, cwd=body.get("cwd") or None, store=self.daemon.store_dir
        )
        target = Path(self.daemon.root_dir).resolve().joinpath(*parts)
        files = await self.write_export(
            session_id,
            parts,
            subtree=subtree,
            force=body.get("force", False),
            with_context=body.get("with_context", False),
        )
        self.write_json(
            {"session_id": session_id, "path": str(target), "files": [str(f) for f in files]},
            status=201,
        )


HANDLERS: list[tuple[str, Any]] = [
    (rf"{API}/sessions/{ID}/export", ExportHandler),
    (rf"{KERNEL_API}/export", KernelExportHandler),
]
