"""REST endpoints for messages, reach and usage (people and kernels), and REPL snapshots.

User (jupyter_server auth):  POST /api/prime/sessions/{id}/messages  {"message"} -> receipt
Kernel (per-kernel token):   POST /api/prime/kernel/messages {"to", "message"} -> receipts
                             GET  /api/prime/kernel/messages?timeout=S -> {"message": ...|null}
                             GET  /api/prime/kernel/agents -> {"agents": [...]}
                             GET  /api/prime/kernel/usage -> {"own", "subtree"}
                             GET  /api/prime/kernel/snapshot -> the caller's REPL snapshot

The sender of a message is the caller — the token's session, or "user" — and a body that
names anyone else is refused, not corrected.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from tornado import web

from ..daemon.errors import PrimeError
from ..harness import refine
from .base import number_arg, prime_errors
from .handlers import UserHandler
from .kernel_handlers import MAX_WAIT, KernelHandler


def _fields(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise PrimeError(
            f"unknown fields: {', '.join(unknown)} (the daemon decides who the sender is)"
        )


class UserMessagesHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self, session_id: str) -> None:
        body = self.json_body()
        _fields(body, {"message"})
        # `/refine [instructions]` to an agent refines the harness from its session instead.
        receipt = await refine.handle_command(self.daemon, session_id, body.get("message"))
        if receipt is not None:
            self.write_json(receipt, status=201)
            return
        receipts = self.daemon.mailbox.send(None, session_id, body.get("message"))
        self.write_json(receipts[0], status=201)


class KernelMessagesHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def post(self) -> None:
        caller = await self.caller()
        body = self.json_body()
        _fields(body, {"to", "message"})
        receipts = self.daemon.mailbox.send(caller, body.get("to"), body.get("message"))
        self.write_json({"receipts": receipts}, status=201)

    @allow_unauthenticated
    @prime_errors
    async def get(self) -> None:
        caller = await self.caller()
        timeout = number_arg(self.get_argument("timeout", None), "timeout", default=MAX_WAIT)
        message = await self.daemon.mailbox.recv(caller, min(timeout or 0.0, MAX_WAIT))
        self.write_json({"message": message})


class AgentsHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self) -> None:
        caller = await self.caller()
        self.write_json({"agents": self.daemon.mailbox.agents(caller)})


class UsageHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self) -> None:
        caller = await self.caller()
        self.write_json(self.daemon.session_json(caller.id)["usage"])


class SnapshotHandler(KernelHandler):
    @allow_unauthenticated
    @prime_errors
    async def get(self) -> None:
        caller = await self.caller()
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(self.daemon.passivation.snapshot_bytes(caller.id))


_ID = r"(?P<session_id>[A-Za-z0-9_-]+)"
_K = "/api/prime/kernel"

HANDLERS: list[tuple[str, Any]] = [
    (rf"/api/prime/sessions/{_ID}/messages", UserMessagesHandler),
    (rf"{_K}/messages", KernelMessagesHandler),
    (rf"{_K}/agents", AgentsHandler),
    (rf"{_K}/usage", UsageHandler),
    (rf"{_K}/snapshot", SnapshotHandler),
]
