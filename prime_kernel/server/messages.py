"""Messages: a person's message to a session, and send / recv / agents from a kernel.

The sender of a message is the caller — the token's session, or "user" — and a body that
names anyone else is refused by its schema, not corrected.
"""

from __future__ import annotations

from typing import Any

from ..protocol.wire import API, KERNEL_API, MAX_WAIT, SESSION_ID
from .base import KernelHandler, UserHandler

ID = rf"(?P<session_id>{SESSION_ID})"


class UserMessagesHandler(UserHandler):
    async def post(self, session_id: str) -> None:
        message = self.body("user_message")["message"]
        # `/refine [instructions]` to a session refines the harness from it instead.
        receipt = await self.refiner.command(session_id, message)
        if receipt is None:
            receipt = (await self.mailbox.send(None, session_id, message))[0]
        await self.reply(receipt, status=201)


class KernelMessagesHandler(KernelHandler):
    async def post(self) -> None:
        body = self.body("kernel_message")
        receipts = await self.mailbox.send(self.caller, body["to"], body["message"])
        await self.reply({"receipts": receipts}, status=201)

    async def get(self) -> None:
        timeout = self.query_seconds("timeout", MAX_WAIT, MAX_WAIT)
        message = await self.mailbox.recv(self.caller, timeout)
        await self.reply({"message": message})


class AgentsHandler(KernelHandler):
    async def get(self) -> None:
        self.write_json({"agents": self.mailbox.agents(self.caller)})


HANDLERS: list[tuple[str, Any]] = [
    (rf"{API}/sessions/{ID}/messages", UserMessagesHandler),
    (rf"{KERNEL_API}/messages", KernelMessagesHandler),
    (rf"{KERNEL_API}/agents", AgentsHandler),
]
