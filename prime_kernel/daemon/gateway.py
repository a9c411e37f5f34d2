"""Agent kernels on a Jupyter Kernel Gateway or Enterprise Gateway
(`c.KernelPlacement.gateway_url`), and `KernelPlacement`, which chooses the daemon's launcher.

Only the daemon's agent kernels move: notebooks stay kernels of the server, whose own
`GatewayClient` is never switched on. `GatewayLauncher` drives each remote kernel through the
gateway's REST API (start, interrupt, restart, shutdown: /api/kernels) and its websocket
(`/api/kernels/{id}/channels`: execute requests out, shell replies and IOPub in), and gives the
`KernelRunner` a client with the same few methods a jupyter_client one has.

A remote kernel cannot be handed a pipe: it gets its boot document (the daemon's URL as seen
from the gateway's kernels, `c.GatewayLauncher.public_url`, and the capability token minted for
it) in the `KERNEL_PRIME_BOOT` variable of the start request's `env`, which both gateways pass on
to the kernel (they forward `KERNEL_*` variables). The kernel takes it out of its environment at
boot (prime_kernel/kernel/boot.py); the token is never logged nor recorded here.

A kernel the daemon asks for is recorded in the store (committed) before the request goes out,
under an id the daemon chooses and sends (`kernel_id` in the body for Kernel Gateway, whose
jupyter_server takes it; `KERNEL_ID` in `env` for Enterprise Gateway): the gateway lists a
kernel before its reply reaches the daemon, so a daemon killed in between would otherwise
leave a kernel no record names, which no later start could shut down (recovery.reap_kernels).

How a remote kernel ends is what the websocket and the gateway say: the socket closing (the
gateway went away: the kernel is asked for over REST, and gone if the gateway does not answer
or no longer has it), or a `restarting`/`dead` status (the gateway restarted a kernel that
died, so its REPL is gone). The reason is kept and becomes the cell's `exit`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.simple_httpclient import HTTPTimeoutError
from traitlets import Bool, Dict, Float, Instance, Type, Unicode, default
from traitlets.config import LoggingConfigurable

from ..protocol.errors import KernelsUnavailable
from ..protocol.wire import BOOT_ENV
from .access import TokenRegistry
from .gateway_client import GatewayKernelClient, gateway_said, reason
from .launcher import KernelLauncher, KernelLink, LocalLauncher, describe_exit
from .store import Store

log = logging.getLogger(__name__)

AUTH_TOKEN_ENV = "PRIME_GATEWAY_AUTH_TOKEN"


@dataclass
class _Remote:
    """A kernel of the gateway, as the daemon knows it."""

    client: GatewayKernelClient | None = None
    # Why it ended (the gateway lost it, or went away); None while it runs.
    ended: str | None = None


class GatewayLauncher(KernelLauncher):
    """Agent kernels on a Kernel Gateway or Enterprise Gateway. Set
    `c.KernelPlacement.gateway_url` to use it; configure as `c.GatewayLauncher.<trait>`."""

    url = Unicode(help="The gateway's base URL (set from c.KernelPlacement.gateway_url).")
    public_url = Unicode(
        "",
        config=True,
        help="This server's URL as the gateway's kernels reach it (http(s)://host:port/base/): "
        "they call the daemon there, with their session's token. Default: the URL the server "
        "listens on (right when the gateway runs on this host).",
    )
    server_url = Unicode(help="The URL the server listens on (set by the daemon).")
    tokens = Instance(TokenRegistry)
    remote_kernel_name = Unicode(
        "",
        config=True,
        help="The kernelspec agent kernels start from on the gateway (it must run "
        "`python -m prime_kernel.kernel`). Default: c.KernelLauncher.kernel_name.",
    )
    auth_token = Unicode(
        config=True,
        help=f"Sent as `Authorization: <auth_scheme> <token>` to the gateway (KG_AUTH_TOKEN on "
        f"Kernel Gateway, EG_AUTH_TOKEN on Enterprise Gateway). Default: {AUTH_TOKEN_ENV}.",
    )
    auth_scheme = Unicode("token", config=True, help="The scheme of the Authorization header.")
    headers = Dict(
        value_trait=Unicode(),
        config=True,
        help="More HTTP headers for every request to the gateway (a proxy's, say).",
    )
    env = Dict(
        value_trait=Unicode(),
        config=True,
        help="Variables for the kernels' environment, e.g. KERNEL_NAMESPACE or KERNEL_USERNAME "
        "for Enterprise Gateway. The server's own KERNEL_* variables are sent too, as "
        "jupyter_server's gateway client sends them; these win over them. Gateways forward "
        "KERNEL_* variables to the kernel; others only if allowed (KG_ENV_WHITELIST, "
        "EG_CLIENT_ENVS).",
    )
    connect_timeout = Float(20.0, config=True, help="Seconds to connect to the gateway.")
    request_timeout = Float(
        60.0,
        config=True,
        help="Seconds a gateway request may take (a kernel start: start_timeout).",
    )
    validate_cert = Bool(True, config=True, help="Check the gateway's TLS certificate.")

    # A remote kernel cannot be signalled: a kernel that ignores its interrupt is stopped by
    # the gateway's restart or shutdown, which follow.
    signals = False

    @default("auth_token")
    def _default_auth_token(self) -> str:
        return os.environ.get(AUTH_TOKEN_ENV, "")

    def __init__(self, *, store: Store | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Where each kernel is recorded before the gateway is asked for it (None: a launcher
        # no daemon runs, whose kernels no later start would look for).
        self.store = store
        self._kernels: dict[str, _Remote] = {}
        self._http = AsyncHTTPClient()

    async def start(self) -> None:
        self.public_url = self.public_url or self.server_url
        if not self.public_url.startswith(("http://", "https://")):
            raise ValueError(
                "c.GatewayLauncher.public_url must be the http(s) URL of this server as the "
                f"gateway's kernels reach it, not {self.public_url!r}"
            )

    def unreachable(self) -> str:
        """The URL its kernels were given to reach the daemon, which must be one they reach."""
        return (
            f" (c.GatewayLauncher.public_url, {self.public_url}, must be an address the gateway's "
            "kernels can reach)"
        )

    async def stop(self) -> None:
        for remote in self._kernels.values():
            if remote.client is not None:
                remote.client.stop_channels()

    # -- requests -------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self.headers}
        if self.auth_token:
            headers["Authorization"] = f"{self.auth_scheme} {self.auth_token}"
        return headers

    async def _request(
        self, method: str, path: str, body: Any = None, *, timeout: float | None = None
    ) -> Any:
        """One REST call; KernelsUnavailable when the gateway cannot be reached or refuses us
        (its message names the gateway, never what we sent)."""
        request = HTTPRequest(
            self.url.rstrip("/") + path,
            method=method,
            headers=self._headers(),
            body=None if body is None else json.dumps(body),
            allow_nonstandard_methods=True,
            connect_timeout=self.connect_timeout,
            request_timeout=timeout or self.request_timeout,
            validate_cert=self.validate_cert,
        )
        try:
            response = await self._http.fetch(request)
        except HTTPClientError as e:
            if e.code in (401, 403):
                raise self._refused(e) from None
            if isinstance(e, HTTPTimeoutError):
                # Slow is not down: say which limit ran out, and where it is set.
                if "connecting" in (e.message or ""):  # nothing was asked of it
                    limit, trait = self.connect_timeout, "GatewayLauncher.connect_timeout"
                    unanswered = False
                else:
                    unanswered = True
                    if timeout:  # a kernel start or restart
                        limit, trait = timeout, "KernelCustody.kernel_start_timeout"
                    else:
                        limit, trait = self.request_timeout, "GatewayLauncher.request_timeout"
                slow = KernelsUnavailable(
                    f"the kernel gateway at {self.url} did not answer within {limit:g} s "
                    f"({e.message}); c.{trait} sets that limit",
                    gateway=self.url,
                )
                slow.unanswered = unanswered
                raise slow from None
            if e.code == 599:
                raise self._unreachable(e) from None
            raise
        except OSError as e:
            raise self._unreachable(e) from None
        return json.loads(response.body) if response.body else None

    def _refused(self, e: HTTPClientError) -> KernelsUnavailable:
        """A 401 or 403: the gateway's own reason when it gives one (Enterprise Gateway: "User
        'root' is not authorized to start kernel …"), else what to check here."""
        said = gateway_said(e)
        if said.lower() in ("unauthorized", "forbidden"):  # the status's name: nothing more
            said = ""
        if said and e.code == 403:
            what = f"refused the request (HTTP 403): {said}"
            if "KERNEL_" in said:
                what += (
                    " (this server sends its own KERNEL_* variables; c.GatewayLauncher.env "
                    "sets more)"
                )
        else:
            what = (
                f"refused our credentials (HTTP {e.code}): check c.GatewayLauncher.auth_token "
                "(or PRIME_GATEWAY_AUTH_TOKEN) and c.GatewayLauncher.headers"
                + (f"; it said: {said}" if said else "")
            )
        return KernelsUnavailable(
            f"the kernel gateway at {self.url} {what}", gateway=self.url, status=e.code
        )

    def _unreachable(self, e: BaseException) -> KernelsUnavailable:
        return KernelsUnavailable(
            f"the kernel gateway at {self.url} is unreachable ({reason(e)})", gateway=self.url
        )

    def _kernel_path(self, kernel_id: str, action: str = "") -> str:
        path = "/api/kernels/" + urllib.parse.quote(kernel_id, safe="")
        return f"{path}/{action}" if action else path

    # -- the launcher -----------------------------------------------------------------------
    async def start_kernel(self, *, cwd: str) -> str:
        """A new kernel on the gateway, given its boot document (remote kernels work in the
        gateway's folder, not `cwd`)."""
        kernel_id = str(uuid.uuid4())  # version 4: Enterprise Gateway refuses other ids
        token = self.tokens.mint(kernel_id)
        boot = {
            "url": self.public_url,
            "token": token,
            "agent": True,
            "unpickle_allow": list(
                self.config.get("PrimeProvisioner", {}).get("unpickle_allow", [])
            ),
            # The largest value the daemon admits as a blob: the kernel unpickles no more.
            "unpickle_max_bytes": self.link.max_blob_bytes if self.link is not None else None,
        }
        body = {
            "name": self.remote_kernel_name or self.kernel_name,
            "kernel_id": kernel_id,
            "env": {**self.kernel_env(), BOOT_ENV: json.dumps(boot), "KERNEL_ID": kernel_id},
        }
        try:
            await self._remember(kernel_id)
            model = await self._request("POST", "/api/kernels", body, timeout=self.start_timeout)
        except (KernelsUnavailable, asyncio.CancelledError) as e:
            if isinstance(e, KernelsUnavailable) and not e.unanswered:
                self._forget(kernel_id)
                raise
            # The gateway may have started it: the record stays, and the next start asks the
            # gateway to shut it down (a 404 then forgets it).
            self.tokens.revoke(kernel_id)
            raise
        except HTTPClientError as e:
            self._forget(kernel_id)
            raise KernelsUnavailable(
                f"the kernel gateway at {self.url} could not start a {body['name']!r} kernel "
                f"({reason(e)})",
                gateway=self.url,
            ) from None
        except BaseException:
            self._forget(kernel_id)
            raise
        named = str(model["id"])
        if named != kernel_id:
            # A gateway that names its kernels itself: the record and the token follow its id
            # (recorded once this returns: KernelCustody records every started kernel).
            self._forget(kernel_id, revoke=False)
            self.tokens.rename(kernel_id, named)
        self._kernels[named] = _Remote()
        return named

    async def _remember(self, kernel_id: str) -> None:
        """Record the kernel before the gateway is asked for it, and wait until the record is
        committed: from the moment the gateway has it, a daemon killed leaves its record."""
        if self.store is not None:
            self.store.record_kernel(kernel_id, self.record(kernel_id))
            await self.store.flush()

    def _forget(self, kernel_id: str, *, revoke: bool = True) -> None:
        """A kernel the gateway did not start under `kernel_id`: its record and token go."""
        if revoke:
            self.tokens.revoke(kernel_id)
        if self.store is not None:
            self.store.forget_kernel(kernel_id)

    def kernel_env(self) -> dict[str, str]:
        """What a start request asks for the kernel's environment: the server's KERNEL_*
        variables (Enterprise Gateway reads KERNEL_USERNAME, KERNEL_NAMESPACE, ... from them;
        its docs tell a server to set KERNEL_USERNAME), then `env`, which wins."""
        inherited = {k: v for k, v in os.environ.items() if k.startswith("KERNEL_")}
        inherited.pop(BOOT_ENV, None)  # each kernel gets its own
        return {**inherited, **self.env}

    def restartable(self, kernel_id: str) -> bool:
        """Never: a remote kernel that died or would not stop is replaced by a new one (the
        gateway that lost it may not know its id any more)."""
        return False

    def client(self, kernel_id: str) -> GatewayKernelClient:
        parts = urllib.parse.urlsplit(self.url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        url = urllib.parse.urlunsplit(
            (
                scheme,
                parts.netloc,
                parts.path.rstrip("/") + self._kernel_path(kernel_id, "channels"),
                "",
                "",
            )
        )
        headers = {k: v for k, v in self._headers().items() if k != "Content-Type"}
        client = GatewayKernelClient(
            HTTPRequest(
                url,
                headers=headers,
                connect_timeout=self.connect_timeout,
                validate_cert=self.validate_cert,
            )
        )
        self._kernels.setdefault(kernel_id, _Remote()).client = client
        return client

    def adopt(self, kernel_id: str) -> None:
        """The gateway's restarter cannot be turned off from here: a kernel it restarted is
        seen as ended (its `restarting` status), as a local kernel's death is."""

    async def exit_code(self, kernel_id: str) -> int | None:
        remote = self._kernels.get(kernel_id)
        if remote is None:
            return 0  # shut down
        client = remote.client
        if remote.ended is None and client is not None and client.connected:
            return None
        if remote.ended is None:
            # Not connected yet, or the socket ended: does the gateway still have the kernel?
            try:
                await self._request("GET", self._kernel_path(kernel_id))
            except KernelsUnavailable as e:
                remote.ended = e.message
            except HTTPClientError as e:
                remote.ended = f"the gateway no longer has the kernel ({reason(e)})"
            else:  # it has: the socket closed, or the kernel died and was restarted there
                remote.ended = client.ended if client is not None else None
        return None if remote.ended is None else 1

    def describe_exit(self, kernel_id: str, code: int | None) -> str:
        remote = self._kernels.get(kernel_id)
        if remote is not None and remote.ended:
            return remote.ended
        return describe_exit(code)

    async def is_alive(self, kernel_id: str) -> bool:
        return await self.exit_code(kernel_id) is None

    async def interrupt(self, kernel_id: str) -> None:
        await self._request("POST", self._kernel_path(kernel_id, "interrupt"), {})

    async def signal(self, kernel_id: str, signum: int) -> None:
        if signum == signal.SIGINT:
            await self.interrupt(kernel_id)

    async def restart(self, kernel_id: str) -> None:
        remote = self._kernels.setdefault(kernel_id, _Remote())
        if remote.client is not None:
            remote.client.stop_channels()
        await self._request(
            "POST", self._kernel_path(kernel_id, "restart"), {}, timeout=self.start_timeout
        )
        self._kernels[kernel_id] = _Remote()

    async def shutdown(self, kernel_id: str, *, now: bool = True) -> None:
        self.tokens.revoke(kernel_id)
        remote = self._kernels.pop(kernel_id, None)
        if remote is not None and remote.client is not None:
            remote.client.stop_channels()
        with contextlib.suppress(HTTPClientError):  # 404: the gateway has let it go already
            await self._request("DELETE", self._kernel_path(kernel_id))

    def record(self, kernel_id: str) -> dict[str, Any]:
        # No local process: after a crash, the next daemon asks the gateway to shut it down.
        return {"pid": None, "connection_file": None, "gateway": self.url}

    async def stop_leftover(self, record: dict[str, Any]) -> bool | None:
        if record.get("gateway") != self.url:
            return None  # another gateway's (the configuration changed since)
        try:
            await self._request("DELETE", self._kernel_path(str(record["kernel_id"])))
        except HTTPClientError as e:
            return e.code == 404  # gone already (culled, or the gateway restarted)
        except KernelsUnavailable:  # down, or refusing us: try again at the next start
            return False
        return True


class KernelPlacement(LoggingConfigurable):
    """Where agent kernels run: on a gateway when `gateway_url` is set, else with
    `kernel_launcher_class`. Configure as `c.KernelPlacement.<trait>`."""

    gateway_url = Unicode(
        "",
        config=True,
        help="Start agent kernels on this Jupyter Kernel Gateway or Enterprise Gateway "
        "(http(s)://host:port) instead of locally; notebooks stay local. Auth, the server's "
        "URL as its kernels reach it, and more: c.GatewayLauncher (see docs/gateway.md).",
    )
    kernel_launcher_class = Type(
        LocalLauncher,
        klass=KernelLauncher,
        config=True,
        help="Where agent kernels run without a gateway: LocalLauncher (kernels of this "
        "server, forked from a template; see c.LocalLauncher) or another KernelLauncher.",
    )

    def launcher(
        self,
        *,
        link: KernelLink | None,
        kernel_manager: AsyncMultiKernelManager | None,
        tokens: TokenRegistry,
        start_timeout: float,
        server_url: str,
        secret: Callable[..., None],
        store: Store,
    ) -> KernelLauncher:
        """The daemon's launcher (not started yet), reading its own settings
        (`c.GatewayLauncher`, `c.LocalLauncher`, ...); `secret` is told the gateway's
        credentials, which nothing may record; `store` records a gateway's kernels before
        they start (what recovery stops after a crash)."""
        common: dict[str, Any] = {
            "parent": self,
            "link": link,
            "kernel_manager": kernel_manager,
            "start_timeout": start_timeout,
        }
        if self.gateway_url:
            gateway = GatewayLauncher(
                url=self.gateway_url, server_url=server_url, tokens=tokens, store=store, **common
            )
            # Never recorded: what the gateway authenticates us with.
            secret(gateway.auth_token, *gateway.headers.values())
            return gateway
        launcher: KernelLauncher = self.kernel_launcher_class(**common)
        return launcher
