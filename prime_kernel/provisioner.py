"""A kernel provisioner that connects each kernel it launches to the Prime daemon.

Registered under the `jupyter_client.kernel_provisioners` entry point as `prime-provisioner`.
It is a `LocalProvisioner` that, when a daemon runs in this process (the jupyter_server
extension or `prime-agent`), puts the daemon's URL and a capability token minted for this very
kernel into the kernel's environment. The token is how the daemon knows who calls; a kernel
started with no daemon around behaves exactly like a plain local kernel.
"""

from __future__ import annotations

from typing import Any

from jupyter_client.provisioning import LocalProvisioner

URL_ENV = "PRIME_URL"
TOKEN_ENV = "PRIME_TOKEN"


class PrimeProvisioner(LocalProvisioner):
    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        from .daemon.daemon import current_daemon

        kwargs = await super().pre_launch(**kwargs)
        daemon = current_daemon()
        env = dict(kwargs.get("env") or {})
        # Never let a token leak in from the server's own environment.
        env.pop(TOKEN_ENV, None)
        env.pop(URL_ENV, None)
        if daemon is not None and daemon.url:
            env[URL_ENV] = daemon.url
            env[TOKEN_ENV] = daemon.tokens.mint(self.kernel_id)
        kwargs["env"] = env
        return kwargs

    async def cleanup(self, restart: bool = False) -> None:
        from .daemon.daemon import current_daemon

        daemon = current_daemon()
        if daemon is not None and not restart:
            daemon.tokens.revoke(self.kernel_id)
        await super().cleanup(restart=restart)
