"""The launcher seam without kernels: a kernel the launcher starts is started as an agent
kernel (what the provisioner reads to sandbox it), and how a kernel's end is told."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from prime_kernel.daemon.launcher import (
    AgentLaunch,
    KernelLauncher,
    LocalLauncher,
    agent_kernels,
    agent_launch,
    describe_exit,
)


class SeenManager(AsyncMultiKernelManager):
    """A kernel manager that starts nothing and notes how the provisioner was to launch."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.launches: list[tuple[AgentLaunch | None, str, str]] = []

    async def start_kernel(self, *, kernel_name: str | None = None, **kwargs: Any) -> str:
        self.launches.append((agent_launch.get(), str(kernel_name), kwargs["cwd"]))
        return "k1"


def test_a_launched_kernel_is_an_agent_kernel_and_no_other_is() -> None:
    manager = SeenManager()
    launcher = KernelLauncher(kernel_manager=manager)
    assert asyncio.run(launcher.start_kernel(cwd="/work")) == "k1"
    assert manager.launches == [(AgentLaunch(), "prime-agent", "/work")]
    assert agent_launch.get() is None  # a notebook kernel started later is not one


def test_agent_kernels_is_undone_on_leaving_even_by_an_error() -> None:
    fork = LocalLauncher(kernel_manager=SeenManager(), fork=False)
    asyncio.run(fork.start())
    assert fork.fork_server is None and fork.launch() == AgentLaunch(fork_server=None)
    with pytest.raises(RuntimeError), agent_kernels():
        assert agent_launch.get() == AgentLaunch()
        raise RuntimeError("the start failed")
    assert agent_launch.get() is None


def test_how_a_kernel_ended_is_told() -> None:
    assert describe_exit(None) == "the kernel process is gone"
    assert describe_exit(0) == "exit code 0"
    assert describe_exit(1) == "exit code 1"
    assert describe_exit(-9) == "signal SIGKILL"
    # A shell or bwrap around the kernel reports its signal as 128 + N.
    assert describe_exit(137) == "exit code 137: signal SIGKILL"
    assert describe_exit(-99) == "signal 99"  # no such signal: its number
