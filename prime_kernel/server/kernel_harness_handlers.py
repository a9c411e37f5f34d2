"""Kernel-facing REST API of the Continual Harness under /api/prime/kernel/harness.

Authenticated by the kernel's token like every kernel call; the calling session (resolved from
the token, never from the body) is the author of every change it makes.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated

from ..daemon.errors import PrimeError
from ..harness import refine
from . import harness_handlers as H
from .base import prime_errors
from .kernel_handlers import KernelHandler


class IndexHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self) -> None:
        await self.caller()
        self.write_json(H.listing(self.daemon.harness, self.get_argument("kind", None)))


class KindHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self, kind: str) -> None:
        caller = await self.caller()
        body = self.json_body()
        self.write_json(H.create(self.daemon.harness, body, caller.id, kind), status=201)


class EntryHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self, kind: str, entry_id: str) -> None:
        await self.caller()
        self.write_json(H.entry_json(self.daemon.harness, kind, entry_id))

    @allow_unauthenticated
    @prime_errors
    async def put(self, kind: str, entry_id: str) -> None:
        caller = await self.caller()
        self.write_json(H.update(self.daemon.harness, kind, entry_id, self.json_body(), caller.id))

    @allow_unauthenticated
    @prime_errors
    async def delete(self, kind: str, entry_id: str) -> None:
        caller = await self.caller()
        base = H.base_version(self.get_argument("base_version", None))
        self.write_json(
            self.daemon.harness.delete(
                kind,
                entry_id,
                base_version=base,
                author=caller.id,
                reason=self.get_argument("reason", ""),
            )
        )


class HistoryHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self, kind: str, entry_id: str) -> None:
        await self.caller()
        self.write_json({"versions": self.daemon.harness.history(kind, entry_id)})


class RefineHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        caller = await self.caller()
        body = self.json_body()
        instructions = body.get("instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise PrimeError("instructions must be a string")
        # A session refines from its own evidence (itself or its descendants), never from
        # sessions it cannot reach, and only while its budget allows another model call.
        session_id = self.own_tree(caller, body.get("session_id"))
        self.daemon.check_limits(caller)
        record = await refine.refine(
            self.daemon,
            instructions=instructions or None,
            author=caller.id,
            trigger=f"refine() in session {caller.id}",
            session_id=session_id,
            caller=caller,
        )
        self.write_json(record, status=201)


_K = "/api/prime/kernel/harness"

HANDLERS: list[tuple[str, Any]] = [
    (_K, IndexHandler),
    (rf"{_K}/refine", RefineHandler),
    (rf"{_K}/{H.KIND}", KindHandler),
    (rf"{_K}/{H.KIND}/{H.EID}", EntryHandler),
    (rf"{_K}/{H.KIND}/{H.EID}/history", HistoryHandler),
]
