"""Goals: a session's goal for people (/api/prime/sessions/{id}/goal) and for the session's own
kernel (/api/prime/kernel/goal). The author of a change is "user" or the calling session."""

from __future__ import annotations

from typing import Any

from ..protocol.wire import API, KERNEL_API, SESSION_ID
from .base import KernelHandler, UserHandler

ID = rf"(?P<session_id>{SESSION_ID})"


class UserGoalHandler(UserHandler):
    async def get(self, session_id: str) -> None:
        self.write_json({"goal": self.registry.get(session_id).goal})

    async def put(self, session_id: str) -> None:
        body = self.body("goal")
        goal = self.goals.change(self.registry.get(session_id), body, "user")
        await self.reply({"goal": goal})

    async def delete(self, session_id: str) -> None:
        cleared = self.goals.clear(self.registry.get(session_id), "user")
        await self.reply({"cleared": cleared})


class KernelGoalHandler(KernelHandler):
    async def get(self) -> None:
        self.write_json({"goal": self.caller.record.goal})

    async def put(self) -> None:
        goal = self.goals.change(self.caller.record, self.body("goal"), self.caller.id)
        await self.reply({"goal": goal})

    async def delete(self) -> None:
        await self.reply({"cleared": self.goals.clear(self.caller.record, self.caller.id)})


HANDLERS: list[tuple[str, Any]] = [
    (rf"{API}/sessions/{ID}/goal", UserGoalHandler),
    (rf"{KERNEL_API}/goal", KernelGoalHandler),
]
