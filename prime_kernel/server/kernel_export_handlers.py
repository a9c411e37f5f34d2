"""POST /api/prime/kernel/export: `export()` and `Handle.export()` from a kernel.

Token-authenticated like every kernel-facing call; a kernel may export its own session and its
descendants, nothing else. Relative paths are taken from the kernel's working folder (it sends
`cwd`), and the result must still lie under the server root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated

from ..daemon.errors import PrimeError
from ..export import default_target, under_root
from .base import prime_errors
from .export_handlers import write_export
from .kernel_handlers import KernelHandler


class KernelExportHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        caller = await self.caller()
        body = self.json_body()
        session_id = self.own_tree(caller, body.get("session_id"))
        options = {k: body.get(k, False) for k in ("subtree", "force", "with_context")}
        if not all(isinstance(v, bool) for v in options.values()):
            raise PrimeError("subtree, force and with_context must be true or false")
        path = body.get("path") or default_target(session_id, options["subtree"])
        cwd = body.get("cwd") or self.daemon.root_dir
        if not isinstance(path, str) or not isinstance(cwd, str):
            raise PrimeError("'path' and 'cwd' must be strings")
        target = under_root(
            self.daemon.root_dir, str(Path(cwd) / path), store=self.daemon.store_dir
        )
        files = await write_export(self, session_id, target, **options)
        self.write_json(
            {"session_id": session_id, "path": str(target), "files": [str(f) for f in files]},
            status=201,
        )


HANDLERS: list[tuple[str, Any]] = [(r"/api/prime/kernel/export", KernelExportHandler)]
