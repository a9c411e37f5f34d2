"""POST /api/prime/capability: a person gives one of their kernels the right to start agents.

Called by JupyterLab's Agents extension, with the user's own authenticated server session,
when a kernel runs `%load_ext prime_kernel` (prime_kernel/kernel/capability.py). The token it
mints is bound to that kernel id and may stand for a notebook session; it is revoked when the
kernel is shut down or restarted (a restarted kernel asks again). Agent kernels never get one
this way: they act only as the session they serve.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..daemon.errors import Conflict, NotFound, PrimeError
from ..provisioner import PrimeProvisioner
from .base import prime_errors
from .handlers import UserHandler

KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"


class Grants:
    """Kernels given a capability through this endpoint (not through the provisioner)."""

    def __init__(self, daemon: Any) -> None:
        self.daemon = daemon
        self._tokens: dict[str, str] = {}

    def grant(self, kernel_id: str) -> str:
        token = self._tokens.get(kernel_id)
        if token is not None and self.daemon.tokens.kernel_for(token) == kernel_id:
            # Two frontends on one kernel (a notebook and a console) both answer its request:
            # they must send the same token, or the one that arrives first is revoked.
            return token
        token = self._tokens[kernel_id] = self.daemon.tokens.mint(kernel_id, notebook=True)
        return token

    async def on_kernel_action(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        kernel_id = data.get("kernel_id")
        if data.get("action") in ("shutdown", "restart") and kernel_id in self._tokens:
            del self._tokens[kernel_id]
            self.daemon.tokens.revoke(kernel_id)


class CapabilityHandler(UserHandler):
    @web.authenticated
    @authorized
    @prime_errors
    async def post(self) -> None:
        body = self.json_body()
        kernel_id = body.get("kernel_id")
        if not isinstance(kernel_id, str) or not kernel_id:
            raise PrimeError("'kernel_id' (a kernel of this server) is required")
        if kernel_id not in self.kernel_manager:
            raise NotFound(f"no kernel {kernel_id} on this server")
        provisioner = getattr(self.kernel_manager.get_kernel(kernel_id), "provisioner", None)
        if isinstance(provisioner, PrimeProvisioner):
            # Agent kernels and "Prime Agent" notebooks got theirs at launch; a second token
            # would revoke that one.
            raise Conflict(f"kernel {kernel_id} was started with a capability of its own")
        daemon = self.daemon
        if not daemon.url:
            raise Conflict("the Prime daemon has not started yet; ask again in a moment")
        token = self.settings["prime_grants"].grant(kernel_id)
        self.log.info("Prime: kernel %s may start agents (asked by the user)", kernel_id)
        self.write_json({"kernel_id": kernel_id, "url": daemon.url, "token": token}, status=201)


HANDLERS = [(r"/api/prime/capability", CapabilityHandler)]
