"""POST /api/prime/kernel/compact: `compact()` from a REPL.

Token-authenticated like every kernel-facing call: the token's session is the one compacted,
before its next model call (see prime_kernel/daemon/compaction.py).
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated

from ..daemon.compaction import request_compaction
from .base import prime_errors
from .kernel_handlers import KernelHandler


class CompactHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        self.write_json(request_compaction(await self.caller()))


HANDLERS: list[tuple[str, Any]] = [(r"/api/prime/kernel/compact", CompactHandler)]
