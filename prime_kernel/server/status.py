"""How agents run here, and kernels that ask for agents.

GET /api/prime/status: the version, whether the daemon runs sessions yet (it takes requests
while it is still starting), and the sandbox mode (and what it protects).

POST /api/prime/capability: a person gives one of their kernels the right to start agents.
Called by JupyterLab's Agents extension, with the user's own authenticated server session, when
a kernel runs `%load_ext prime_kernel` (prime_kernel/kernel/capability.py). The token it mints
is bound to that kernel id and may stand for a notebook session; it is revoked when the kernel
is shut down or restarted (a restarted kernel asks again). Agent kernels never get one this
way: they act only as the session they serve.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import version
from typing import Any

from ..daemon.access import TokenRegistry
from ..daemon.sandbox import status as sandbox_status
from ..protocol.errors import Conflict, NotFound
from ..protocol.wire import API
from .base import UserHandler

KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"


class Grants:
    """Kernels given a capability through this endpoint (not through the provisioner)."""

    def __init__(self, tokens: TokenRegistry) -> None:
        self.tokens = tokens
        self._tokens: dict[str, str] = {}

    def __contains__(self, kernel_id: str) -> bool:
        return kernel_id in self._tokens

    def grant(self, kernel_id: str) -> str:
        token = self._tokens.get(kernel_id)
        if token is not None and self.tokens.kernel_for(token) == kernel_id:
            # Two frontends on one kernel (a notebook and a console) both answer its request:
            # they must send the same token, or the one that arrives first is revoked.
            return token
        token = self._tokens[kernel_id] = self.tokens.mint(kernel_id, notebook=True)
        return token

    async def on_kernel_action(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        kernel_id = data.get("kernel_id")
        if data.get("action") in ("shutdown", "restart") and kernel_id in self._tokens:
            del self._tokens[kernel_id]
            self.tokens.revoke(kernel_id)


@cache
def installed_version() -> str:
    """The installed distribution's version, read once: reading it scans every folder of
    sys.path on the event loop (tens of milliseconds, more on a busy machine), and clients poll
    this endpoint while a server starts."""
    return version("prime_kernel")


class StatusHandler(UserHandler):
    async def get(self) -> None:
        sandbox = sandbox_status(self.settings.get("prime_sandbox"))
        self.write_json(
            {"version": installed_version(), "started": self.daemon.started, "sandbox": sandbox}
        )


class CapabilityHandler(UserHandler):
    async def post(self) -> None:
        kernel_id = self.body("capability")["kernel_id"]
        if kernel_id not in self.kernel_manager:
            raise NotFound(f"no kernel {kernel_id} on this server")
        grants = self.settings["prime_grants"]
        if kernel_id not in grants and self.tokens.holds(kernel_id):
            # Agent kernels and "Prime Agent" notebooks got theirs at launch; a second token
            # would revoke that one.
            raise Conflict(f"kernel {kernel_id} was started with a capability of its own")
        daemon = self.daemon
        if not daemon.url:
            raise Conflict("the Prime daemon has not started yet; ask again in a moment")
        token = grants.grant(kernel_id)
        self.log.info("Prime: kernel %s may start agents (asked by the user)", kernel_id)
        self.write_json({"kernel_id": kernel_id, "url": daemon.url, "token": token}, status=201)


HANDLERS: list[tuple[str, Any]] = [
    (rf"{API}/status", StatusHandler),
    (rf"{API}/capability", CapabilityHandler),
]
