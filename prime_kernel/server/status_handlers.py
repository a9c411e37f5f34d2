"""GET /api/prime/status: how agents run here (the sandbox mode and what it protects)."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .. import __version__
from ..daemon.sandbox import Sandbox
from .base import prime_errors
from .handlers import UserHandler


def sandbox_json(sandbox: Sandbox | None) -> dict[str, Any]:
    if sandbox is None:
        return {"mode": "none", "reason": "the Prime server extension has no sandbox"}
    out = sandbox.probe().to_json()
    out["network"] = sandbox.network if out["mode"] == "bwrap" else True
    out["limits"] = sandbox.limits(out["mode"] == "bwrap")
    return out


class StatusHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def get(self) -> None:
        self.write_json(
            {"version": __version__, "sandbox": sandbox_json(self.settings.get("prime_sandbox"))}
        )


HANDLERS = [(r"/api/prime/status", StatusHandler)]
