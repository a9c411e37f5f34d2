"""Schedules (heartbeats): a person's under /api/prime/schedules (owner "user", any session),
a session's own under /api/prime/kernel/schedules (owner: the calling session, targets within
its reach)."""

from __future__ import annotations

from typing import Any

from ..protocol.errors import InvalidRequest
from ..protocol.wire import API, KERNEL_API, SCHEDULE_ID
from .base import KernelHandler, UserHandler

SID = rf"(?P<schedule_id>{SCHEDULE_ID})"
STATES = ("active", "done", "cancelled", "ended")


class SchedulesHandler(UserHandler):
    async def get(self) -> None:
        state = self.get_argument("state", None) or None
        if state is not None and state not in STATES:
            raise InvalidRequest(f"state must be one of {', '.join(STATES)}, not {state[:40]!r}")
        session = self.get_argument("session", None) or None
        if session is not None:
            self.registry.get(session)  # a clear 404 for an unknown session
        schedules = self.schedules.listing(session_id=session, state=state)
        self.write_json({"schedules": schedules})

    async def post(self) -> None:
        schedule = await self.schedules.create(None, self.body("create_schedule"))
        await self.reply(schedule, status=201)


class ScheduleHandler(UserHandler):
    async def get(self, schedule_id: str) -> None:
        self.write_json(self.schedules.get(schedule_id).to_json())

    async def delete(self, schedule_id: str) -> None:
        await self.reply(self.schedules.cancel(None, schedule_id))


class KernelSchedulesHandler(KernelHandler):
    async def get(self) -> None:
        listing = self.schedules.listing(session_id=self.caller.id)
        self.write_json({"schedules": listing})

    async def post(self) -> None:
        body = self.body("kernel_schedule")
        schedule = await self.schedules.create(self.caller, body)
        await self.reply(schedule, status=201)


class KernelScheduleHandler(KernelHandler):
    async def delete(self, schedule_id: str) -> None:
        await self.reply(self.schedules.cancel(self.caller, schedule_id))


HANDLERS: list[tuple[str, Any]] = [
    (rf"{API}/schedules", SchedulesHandler),
    (rf"{API}/schedules/{SID}", ScheduleHandler),
    (rf"{KERNEL_API}/schedules", KernelSchedulesHandler),
    (rf"{KERNEL_API}/schedules/{SID}", KernelScheduleHandler),
]
