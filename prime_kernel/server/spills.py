"""Garbage collection from a REPL: spilling values to disk and reading them back
(/api/prime/kernel/spills), and recording what gc() did (/api/prime/kernel/gc)."""

from __future__ import annotations

from typing import Any

from ..protocol.errors import InvalidRequest
from ..protocol.wire import BLOB_ID, KERNEL_API
from .base import KernelHandler, UploadHandler

BLOB = rf"(?P<blob_id>{BLOB_ID})"


class SpillsHandler(UploadHandler):
    async def post(self) -> None:
        name = self.get_argument("name", "")
        if not name or len(name) > 300:
            raise InvalidRequest("?name= must name the variable (at most 300 characters)")
        data = self.uploaded(f"the value of {name!r}")
        blob_id = await self.admission.put_blob(data, f"the value of {name!r}")
        self.spills.record_spill(self.caller, blob_id, name, len(data))
        await self.reply({"blob_id": blob_id, "size": len(data)}, status=201)


class SpillHandler(KernelHandler):
    async def get(self, blob_id: str) -> None:
        data = await self.spills.spilled_bytes(self.caller, blob_id)
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(data)


class GcHandler(KernelHandler):
    async def post(self) -> None:
        await self.reply(self.spills.requested(self.caller, self.body("gc_report")))


HANDLERS: list[tuple[str, Any]] = [
    (rf"{KERNEL_API}/spills", SpillsHandler),
    (rf"{KERNEL_API}/spills/{BLOB}", SpillHandler),
    (rf"{KERNEL_API}/gc", GcHandler),
]
