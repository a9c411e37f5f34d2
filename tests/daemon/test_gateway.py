"""The gateway launcher against a fake gateway (a tornado app in the test's loop; a real one is
end to end: tests/gateway/): what a kernel's start asks for, its record committed before the
gateway is asked (and dropped when the gateway surely did not start it), the kernel's token
following the gateway's id, a leftover kernel stopped after a crash, and errors that name the
gateway and what to check; and the placement that chooses the daemon's launcher."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from tornado.httpserver import HTTPServer
from tornado.web import Application, RequestHandler
from traitlets.config import Config

from prime_kernel.daemon.access import TokenRegistry
from prime_kernel.daemon.gateway import GatewayLauncher, KernelPlacement
from prime_kernel.daemon.launcher import KernelLauncher, KernelLink, LocalLauncher
from prime_kernel.daemon.store import SqliteStore
from prime_kernel.protocol.errors import KernelsUnavailable
from prime_kernel.protocol.wire import BOOT_ENV


class FakeGateway:
    """The REST calls a gateway answers, as Kernel Gateway answers them (a start takes the id
    in the body; `names_its_own`: it names the kernel "g1" itself, as a gateway on an older
    jupyter_server does); `refuse`: the status and message of every reply instead; `hang`: a
    start is never answered. `committed`: the kernels the daemon's store file held when each
    start was asked for."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self.kernels = {"g1"}
        self.refuse: tuple[int, str] | None = None
        self.names_its_own = False
        self.hang = False
        self.committed: list[set[str]] = []

    def app(self) -> Application:
        gateway = self

        class Kernels(RequestHandler):
            def _note(self) -> bool:
                body = json.loads(self.request.body) if self.request.body else None
                gateway.requests.append(
                    (self.request.method or "", self.request.path, dict(self.request.headers), body)
                )
                if gateway.refuse is not None:
                    status, message = gateway.refuse
                    self.set_status(status)
                    self.finish({"reason": "Forbidden", "message": message})
                    return True
                return False

            async def post(self, kernel_id: str = "") -> None:
                # Read with a connection of its own: what a daemon killed now would leave.
                with sqlite3.connect(gateway.store) as db:
                    rows = db.execute("SELECT kernel_id FROM kernels").fetchall()
                gateway.committed.append({r[0] for r in rows})
                if self._note():
                    return
                if gateway.hang:
                    await asyncio.Event().wait()
                body = json.loads(self.request.body)
                named = "g1" if gateway.names_its_own else body["kernel_id"]
                gateway.kernels.add(named)
                self.finish({"id": named, "name": "python3"})

            def delete(self, kernel_id: str) -> None:
                if not self._note():
                    self.set_status(204 if kernel_id in gateway.kernels else 404)
                    gateway.kernels.discard(kernel_id)

        return Application([(r"/api/kernels/?", Kernels), (r"/api/kernels/([^/]+)", Kernels)])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Test = Callable[[GatewayLauncher, FakeGateway], Awaitable[None]]


def on_gateway(test: Test, **config: Any) -> None:
    async def run(folder: str) -> None:
        # Not exclusive: the fake gateway reads what it committed.
        store = SqliteStore(folder, exclusive=False)
        store.open()
        gateway, port = FakeGateway(store.path), free_port()
        server = HTTPServer(gateway.app())
        server.listen(port, "127.0.0.1")
        launcher = GatewayLauncher(
            url=f"http://127.0.0.1:{port}",
            public_url="http://daemon.example:8888/",
            tokens=TokenRegistry(),
            store=store,
            **config,
        )
        try:
            await test(launcher, gateway)
        finally:
            server.stop()
            await server.close_all_connections()
            await store.close()

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(folder))


async def recorded(launcher: GatewayLauncher) -> set[str]:
    """The kernels the launcher's store holds, once its writes are committed."""
    assert launcher.store is not None
    await launcher.store.flush()
    return {r["kernel_id"] for r in await launcher.store.kernels()}


def test_a_start_sends_the_boot_document_and_the_token_follows_the_gateways_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KERNEL_USERNAME", "server-user")
    monkeypatch.setenv("KERNEL_NAMESPACE", "from-the-server")

    async def test(launcher: GatewayLauncher, gateway: FakeGateway) -> None:
        kernel_id = await launcher.start_kernel(cwd="/ignored")
        [(method, path, headers, body)] = gateway.requests
        assert (method, path, headers["Authorization"]) == ("POST", "/api/kernels", "token s3")
        assert body["name"] == "remote-py"
        # The daemon names the kernel (Kernel Gateway reads the body, Enterprise Gateway the
        # environment) and has committed its record before the gateway is asked for it.
        assert body["kernel_id"] == kernel_id and body["env"]["KERNEL_ID"] == kernel_id
        assert gateway.committed == [{kernel_id}]
        env = body["env"]
        # The server's KERNEL_* variables are sent; c.GatewayLauncher.env wins over them.
        assert env["KERNEL_USERNAME"] == "server-user" and env["KERNEL_NAMESPACE"] == "agents"
        boot = json.loads(env[BOOT_ENV])
        assert boot["url"] == "http://daemon.example:8888/" and boot["agent"] is True
        assert launcher.tokens.kernel_for(boot["token"]) == kernel_id
        assert boot["unpickle_max_bytes"] == 1234  # the daemon's blob limit, as a local kernel's
        assert launcher.record(kernel_id) == {
            "pid": None,
            "connection_file": None,
            "gateway": launcher.url,
        }
        assert await recorded(launcher) == {kernel_id}
        assert not launcher.restartable(kernel_id)

    on_gateway(
        test,
        link=KernelLink("http://daemon.example:8888/", TokenRegistry(), "/r", "/r/.prime", 1234),
        auth_token="s3",
        remote_kernel_name="remote-py",
        env={"KERNEL_NAMESPACE": "agents"},
    )


def test_a_gateway_that_names_its_kernels_gets_the_record_and_the_token_under_its_id() -> None:
    async def test(launcher: GatewayLauncher, gateway: FakeGateway) -> None:
        gateway.names_its_own = True
        assert await launcher.start_kernel(cwd="/") == "g1"
        [proposed] = gateway.committed[0]
        [(_, _, _, body)] = gateway.requests
        assert launcher.tokens.kernel_for(json.loads(body["env"][BOOT_ENV])["token"]) == "g1"
        # The id it did not take is forgotten (the daemon's custody records "g1" as started).
        assert proposed not in await recorded(launcher)

    on_gateway(test)


def test_a_start_left_unanswered_stays_recorded_for_the_next_start() -> None:
    """A start the gateway took and did not answer in time may have started the kernel: its
    record stays (the next daemon's start asks the gateway to shut it down); its token goes."""

    async def test(launcher: GatewayLauncher, gateway: FakeGateway) -> None:
        gateway.hang = True
        with pytest.raises(KernelsUnavailable, match=r"did not answer within 0\.5 s"):
            await launcher.start_kernel(cwd="/")
        [(_, _, _, body)] = gateway.requests
        assert await recorded(launcher) == {body["kernel_id"]}
        assert launcher.tokens.live_tokens() == []

    on_gateway(test, start_timeout=0.5)


def test_a_leftover_kernel_is_stopped_on_its_own_gateway_only() -> None:
    async def test(launcher: GatewayLauncher, gateway: FakeGateway) -> None:
        mine = {"kernel_id": "g1", "gateway": launcher.url}
        assert await launcher.stop_leftover({**mine, "gateway": "http://other:1"}) is None
        assert await launcher.stop_leftover(mine) is True
        assert await launcher.stop_leftover(mine) is True  # 404: gone already
        gateway.refuse = (403, "Forbidden")
        assert await launcher.stop_leftover(mine) is False  # kept, for the next start
        assert [r[:2] for r in gateway.requests] == [("DELETE", "/api/kernels/g1")] * 3

    on_gateway(test)


def test_a_refusal_says_what_the_gateway_said_or_what_to_check() -> None:
    async def test(launcher: GatewayLauncher, gateway: FakeGateway) -> None:
        gateway.refuse = (403, "User 'root' is not authorized to start kernel 'python3'")
        with pytest.raises(KernelsUnavailable, match="refused the request \\(HTTP 403\\): User"):
            await launcher.start_kernel(cwd="/")
        gateway.refuse = (401, "Unauthorized")
        with pytest.raises(KernelsUnavailable) as raised:
            await launcher.start_kernel(cwd="/")
        assert "refused our credentials (HTTP 401): check c.GatewayLauncher.auth_token" in str(
            raised.value
        )
        assert "s3" not in str(raised.value)  # never what we sent
        # The tokens minted for the kernels that did not start work no more, and their
        # records (committed before each request) are gone.
        assert launcher.tokens.live_tokens() == []
        assert len(gateway.committed) == 2 and all(gateway.committed)
        assert await recorded(launcher) == set()

    on_gateway(test, auth_token="s3")


def test_an_unreachable_gateway_is_named() -> None:
    async def run() -> None:
        url = f"http://127.0.0.1:{free_port()}"
        launcher = GatewayLauncher(url=url, public_url="http://d/", tokens=TokenRegistry())
        with pytest.raises(KernelsUnavailable, match=f"the kernel gateway at {url} is unreachable"):
            await launcher.start_kernel(cwd="/")
        bad = GatewayLauncher(url=url, public_url="unix:/sock", tokens=TokenRegistry())
        with pytest.raises(ValueError, match="public_url must be the http"):
            await bad.start()

    asyncio.run(run())


def test_the_placement_builds_the_gateways_launcher_or_the_configured_one() -> None:
    """A gateway URL: agent kernels on the gateway, reached back at the server's URL unless
    `public_url` says otherwise, its credentials handed over as secrets; none: the launcher
    class, LocalLauncher by default."""

    async def run() -> None:
        hidden: list[str | None] = []
        build = {
            "link": None,
            "kernel_manager": AsyncMultiKernelManager(),
            "tokens": TokenRegistry(),
            "start_timeout": 5.0,
            "server_url": "http://server:8888/",
            "secret": lambda *values: hidden.extend(values),
            "store": SqliteStore("/nonexistent"),  # never opened: no kernel starts here
        }
        config = Config(
            {
                "KernelPlacement": {"gateway_url": "http://gw:8888"},
                "GatewayLauncher": {"auth_token": "s3", "headers": {"X-Proxy": "p4"}},
                "KernelLauncher": {"kernel_name": "agents"},
            }
        )
        gateway = KernelPlacement(config=config).launcher(**build)
        assert isinstance(gateway, GatewayLauncher) and gateway.url == "http://gw:8888"
        assert gateway.store is build["store"]
        assert gateway.kernel_name == "agents" and gateway.start_timeout == 5.0
        assert hidden == ["s3", "p4"]
        await gateway.start()
        assert gateway.public_url == "http://server:8888/"  # the default: the server's URL
        config.GatewayLauncher.public_url = "http://public:80/"
        gateway = KernelPlacement(config=config).launcher(**build)
        await gateway.start()
        assert gateway.public_url == "http://public:80/"

        local = KernelPlacement().launcher(**build)
        assert type(local) is LocalLauncher and local.kernel_name == "prime-agent"
        plain = Config({"KernelPlacement": {"kernel_launcher_class": KernelLauncher}})
        assert type(KernelPlacement(config=plain).launcher(**build)) is KernelLauncher

    asyncio.run(run())
