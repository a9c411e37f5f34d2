"""The launcher seam without kernels: a kernel the launcher starts is handed its link to the
daemon as an agent kernel (what the provisioner reads to sandbox it), and how a kernel's end
is told."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from prime_kernel.daemon.access import TokenRegistry
from prime_kernel.daemon.launcher import (
    LINK,
    KernelLauncher,
    KernelLink,
    LocalLauncher,
    describe_exit,
)
from prime_kernel.protocol.errors import Unavailable

LINKED = KernelLink("http://x/", TokenRegistry(), "/work", "/work/.prime", 1 << 20)


class SeenManager(AsyncMultiKernelManager):
    """A kernel manager that starts nothing and notes what the provisioner was handed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.launches: list[tuple[KernelLink | None, str, str]] = []

    async def start_kernel(self, *, kernel_name: str | None = None, **kwargs: Any) -> str:
        self.launches.append((kwargs.get(LINK), str(kernel_name), kwargs["cwd"]))
        return "k1"


def test_a_launched_kernel_is_linked_as_an_agent_kernel() -> None:
    manager = SeenManager()
    launcher = KernelLauncher(kernel_manager=manager, link=LINKED)
    assert asyncio.run(launcher.start_kernel(cwd="/work")) == "k1"
    [(link, name, cwd)] = manager.launches
    assert link == replace(LINKED, agent=True) and (name, cwd) == ("prime-agent", "/work")
    assert not LINKED.agent  # the daemon's own link (a notebook kernel's) is left as it was


def test_a_launcher_not_connected_to_a_daemon_passes_no_link() -> None:
    manager = SeenManager()
    asyncio.run(KernelLauncher(kernel_manager=manager).start_kernel(cwd="/w"))
    assert manager.launches == [(None, "prime-agent", "/w")]


def test_a_local_launcher_links_its_fork_server_only_while_it_runs() -> None:
    fork = LocalLauncher(kernel_manager=SeenManager(), link=LINKED, fork=False)
    asyncio.run(fork.start())
    assert fork.fork_server is None
    assert fork.agent_link() == replace(LINKED, agent=True, fork_server=None)


def test_how_a_kernel_ended_is_told() -> None:
    assert describe_exit(None) == "the kernel process is gone"
    assert describe_exit(0) == "exit code 0"
    assert describe_exit(1) == "exit code 1"
    assert describe_exit(-9) == "signal SIGKILL"
    # A shell or bwrap around the kernel reports its signal as 128 + N.
    assert describe_exit(137) == "exit code 137: signal SIGKILL"
    assert describe_exit(-99) == "signal 99"  # no such signal: its number


def test_a_kernelspec_the_prime_provisioner_does_not_launch_is_refused_with_the_fix() -> None:
    manager = SeenManager()
    launcher = KernelLauncher(kernel_manager=manager, link=LINKED, kernel_name="python3")
    with pytest.raises(Unavailable, match=r"'python3' .* the Prime provisioner does not launch"):
        asyncio.run(launcher.start_kernel(cwd="/w"))
    assert manager.launches == []  # never handed an argument its provisioner does not know
    # Not connected to a daemon: any kernelspec, as a plain kernel.
    asyncio.run(
        KernelLauncher(kernel_manager=manager, kernel_name="python3").start_kernel(cwd="/w")
    )
    assert manager.launches == [(None, "python3", "/w")]
