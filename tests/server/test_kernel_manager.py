"""The server's per-kernel manager (no kernel started: jupyter_server's start is replaced by a
recorder): the Prime kernels people start get the link the extension connected the server's
kernel manager with, in start_kernel's keyword arguments, and no other kernel gets it (its
provisioner would pass the unknown argument on to the process it starts)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from jupyter_client.provisioning import KernelProvisionerFactory
from jupyter_server.services.kernels.kernelmanager import ServerKernelManager

from prime_kernel.daemon.access import TokenRegistry
from prime_kernel.daemon.launcher import LINK, PROVISIONER, KernelLink
from prime_kernel.server import kernel_manager
from prime_kernel.server.kernel_manager import PrimeServerKernelManager


def test_prime_kernels_people_start_get_the_daemons_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[str, dict[str, Any]]] = []

    async def recorded(self: ServerKernelManager, *args: Any, **kwargs: Any) -> None:
        started.append((self.kernel_name, kwargs))

    monkeypatch.setattr(ServerKernelManager, "start_kernel", recorded)
    server = AsyncMultiKernelManager()
    link = KernelLink("http+unix://daemon/", TokenRegistry(), str(tmp_path), str(tmp_path), 10)

    def start(name: str, **kwargs: Any) -> dict[str, Any]:
        manager = PrimeServerKernelManager(parent=server, kernel_name=name)
        asyncio.run(manager.start_kernel(**kwargs))
        return started.pop()[1]

    assert start("prime-agent") == {}  # the daemon has not started: nothing to connect to
    kernel_manager.connect(server, link)
    assert start("prime-agent", cwd="x") == {"cwd": "x", LINK: link}
    assert start("python3") == {}
    agent = KernelLink("u", TokenRegistry(), "r", "s", 1, agent=True)
    assert start("prime-agent", **{LINK: agent}) == {LINK: agent}  # the launcher's own
    # c.PrimeApp.connect_all_kernels: every kernel's provisioner is the Prime one.
    factory = KernelProvisionerFactory.instance()
    monkeypatch.setattr(factory, "default_provisioner_name", PROVISIONER)
    assert start("python3") == {LINK: link}
    kernel_manager.connect(server, None)
    assert start("prime-agent") == {}


def test_only_agent_kernels_start_without_the_managers_auto_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    restarting: list[bool] = []

    async def recorded(self: ServerKernelManager, *args: Any, **kwargs: Any) -> None:
        restarting.append(self.autorestart)

    monkeypatch.setattr(ServerKernelManager, "start_kernel", recorded)
    server = AsyncMultiKernelManager()
    person = KernelLink("u", TokenRegistry(), str(tmp_path), str(tmp_path), 1)
    kernel_manager.connect(server, person)
    try:
        for link in ({}, {LINK: KernelLink("u", TokenRegistry(), "r", "s", 1, agent=True)}):
            manager = PrimeServerKernelManager(parent=server, kernel_name="prime-agent")
            asyncio.run(manager.start_kernel(**link))
    finally:
        kernel_manager.connect(server, None)
    # A person's notebook kernel keeps jupyter_server's restarts; the daemon's kernel has none.
    assert restarting == [True, False]


class Derived(PrimeServerKernelManager):
    pass


def test_a_kernel_manager_class_of_ones_own_is_kept_and_said_to_leave_notebooks_unconnected() -> (
    None
):
    server = AsyncMultiKernelManager()
    server.kernel_manager_class = kernel_manager.DEFAULT_CLASS
    assert kernel_manager.use_for(server) == ""
    assert server.kernel_manager_class.endswith(".PrimeServerKernelManager")
    own = "jupyter_client.ioloop.AsyncIOLoopKernelManager"
    server.kernel_manager_class = own
    warning = kernel_manager.use_for(server)
    assert server.kernel_manager_class == own  # kept
    assert f"kernel_manager_class is {own}" in warning
    assert "notebooks on the 'Prime Agent' kernel start unconnected" in warning
    for fine in (f"{__name__}.Derived", "jupyter_server.gateway.managers.GatewayKernelManager"):
        server.kernel_manager_class = fine
        assert kernel_manager.use_for(server) == ""
