"""Verifying answers over REST: a person marks a session's answer right or wrong.

From the panel or `prime-agent verify` (jupyter_server auth), or from a notebook with
`h.verify()` (the notebook's token, for sessions it started). An agent cannot verify: its
verdict on its own work, or its children's, is not evidence (only people, checkers and gates
are; see daemon/learning.py).
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import Forbidden
from ..protocol.states import SessionKind
from ..protocol.wire import API, KERNEL_API, SESSION_ID
from .base import KernelHandler, UserHandler

ID = rf"(?P<session_id>{SESSION_ID})"


class VerifyHandler(UserHandler):
    async def post(self, session_id: str) -> None:
        body = self.body("verify")
        verification = await self.learner.verify(
            session_id, correct=body.get("correct", True), by="user", note=body.get("note", "")
        )
        await self.reply(verification)


class KernelVerifyHandler(KernelHandler):
    async def post(self, session_id: str) -> None:
        caller = self.caller
        if caller.record.kind != SessionKind.NOTEBOOK:
            raise Forbidden(
                "only a person verifies answers (from a notebook, the Agents panel or "
                "`prime-agent verify`): an agent's verdict is not evidence"
            )
        self.access.descendant_of(caller, session_id)
        body = self.body("verify")
        where = caller.record.notebook_path or caller.id
        verification = await self.learner.verify(
            session_id,
            correct=body.get("correct", True),
            by=f"user (notebook {where})",
            note=body.get("note", ""),
        )
        await self.reply(verification)


HANDLERS: list[tuple[str, Any]] = [
    (rf"{API}/sessions/{ID}/verify", VerifyHandler),
    (rf"{KERNEL_API}/sessions/{ID}/verify", KernelVerifyHandler),
]
