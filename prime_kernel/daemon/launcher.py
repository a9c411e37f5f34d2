"""Where the daemon's agent kernels run: the launcher seam
(`c.KernelPlacement.kernel_launcher_class`, daemon/gateway.py).

A launcher starts agent kernels and gives the daemon what it needs to drive them: a kernel id,
a client, whether (and how) the kernel ended, interrupt / signal / restart / shutdown, and
what recovery records to stop a leftover kernel after a crash. The pool (`KernelPool`) and
each session's `KernelRunner` use nothing else.

`KernelLauncher` drives the kernels of a Jupyter multi-kernel manager; `LocalLauncher`, the
default, is the server's own kernel manager, so that agent kernels stay real kernels of the
server (in /api/kernels, a console can attach), and forks them from a template process
(prime_kernel/daemon/forkserver.py) instead of starting each from scratch. A launcher for
remote kernels, `GatewayLauncher` (prime_kernel/daemon/gateway.py), implements the same methods
over a Kernel or Enterprise Gateway's REST API and websocket.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

from jupyter_client import AsyncKernelManager
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from jupyter_client.provisioning import KernelProvisionerFactory
from traitlets import Bool, Float, Instance, Unicode, default
from traitlets.config import LoggingConfigurable

from ..protocol.errors import Unavailable
from .forkserver import ForkedProcess, ForkServer


class KernelClient(Protocol):
    """What `KernelRunner` uses of a kernel client (a jupyter_client `AsyncKernelClient`, or
    the gateway's websocket client)."""

    @property
    def session(self) -> Any: ...

    def start_channels(
        self,
        shell: bool = ...,
        iopub: bool = ...,
        stdin: bool = ...,
        hb: bool = ...,
        control: bool = ...,
    ) -> None: ...

    def stop_channels(self) -> None: ...

    def kernel_info(self) -> str: ...

    def execute(
        self,
        code: str,
        silent: bool = ...,
        store_history: bool = ...,
        user_expressions: dict[str, Any] | None = ...,
        allow_stdin: bool | None = ...,
        stop_on_error: bool = ...,
    ) -> str: ...

    async def get_shell_msg(self, timeout: float | None = ...) -> dict[str, Any]: ...

    async def get_iopub_msg(self, timeout: float | None = ...) -> dict[str, Any]: ...


# The keyword argument of jupyter_client's `start_kernel` that carries a `KernelLink` to the
# Prime provisioner (it receives start_kernel's keyword arguments in `pre_launch`, and again at
# each restart of the kernel).
LINK = "prime_link"
# The Prime provisioner's name (its entry point, and the kernelspecs that name it).
PROVISIONER = "prime-provisioner"


def prime_provisioned(spec: Any) -> bool:
    """Whether the Prime provisioner launches the kernels of kernelspec `spec` (None: the
    default one), as jupyter_client picks it: the spec's own, else the factory's default."""
    wanted = (spec.metadata if spec is not None else {}).get("kernel_provisioner") or {}
    name = (
        wanted.get("provisioner_name")
        or KernelProvisionerFactory.instance().default_provisioner_name
    )
    return bool(name == PROVISIONER)


class Tokens(Protocol):
    """Who mints and revokes kernels' capability tokens (access.TokenRegistry)."""

    def mint(self, kernel_id: str, *, notebook: bool = False) -> str: ...

    def revoke(self, kernel_id: str) -> None: ...


@dataclass(frozen=True)
class KernelLink:
    """What the Prime provisioner needs to connect a kernel it launches to the daemon: where
    the kernel calls it, who mints its capability token, the folders a sandbox keeps it out
    of, the largest value it may unpickle; and, for an agent kernel (one the daemon starts for
    a session: sandboxed, its token never a notebook's), the template to fork it from."""

    url: str
    tokens: Tokens
    root_dir: str
    store_dir: str
    max_blob_bytes: int
    agent: bool = False
    fork_server: ForkServer | None = None


class KernelLauncher(LoggingConfigurable):
    """Agent kernels of a Jupyter multi-kernel manager; also drives any other kernel of it (a
    person's notebook kernel the daemon runs cells in)."""

    kernel_manager = Instance(AsyncMultiKernelManager)
    link = Instance(KernelLink, allow_none=True, help="What connects its kernels to the daemon.")
    kernel_name = Unicode(
        "prime-agent", config=True, help="The kernelspec agent kernels start from."
    )
    start_timeout = Float(120.0, help="Seconds a kernel may take to start.")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # The kernelspecs found to be launched by the Prime provisioner (`_check_provisioner`).
        self._provisioned: set[str] = set()

    # Whether `signal` reaches the kernel's process (SIGTERM, SIGKILL for a wedged kernel).
    signals = True

    async def start(self) -> None:
        """Get ready to start kernels (before the first)."""

    async def stop(self) -> None:
        """Release what `start` took (after the daemon's last kernel is shut down)."""

    def agent_link(self) -> KernelLink | None:
        """The link its agent kernels are started with (None: not connected to a daemon)."""
        return replace(self.link, agent=True) if self.link is not None else None

    async def start_kernel(self, *, cwd: str) -> str:
        """Start an agent kernel working in `cwd`; its id, once its process runs (a
        `KernelRunner` then waits for it to answer)."""
        link = self.agent_link()
        if link is not None:
            self._check_provisioner()
        connect = {LINK: link} if link is not None else {}
        start = self.kernel_manager.start_kernel
        kernel_id = await maybe_await(start(kernel_name=self.kernel_name, cwd=cwd, **connect))
        return str(kernel_id)

    def _check_provisioner(self) -> None:
        """Refuse, saying why, a kernelspec whose kernels another provisioner launches: it
        would hand the link on to the process it starts (a TypeError from Popen), and an agent
        kernel that is not connected cannot work. Read once per kernelspec."""
        name = self.kernel_name
        if name in self._provisioned:
            return
        # None where no server set one: each kernel manager then makes its own, as here.
        specs = self.kernel_manager.kernel_spec_manager or KernelSpecManager(
            parent=self.kernel_manager
        )
        spec = specs.get_kernel_spec(name)
        if not prime_provisioned(spec):
            raise Unavailable(
                f"agent kernels start from the kernelspec {name!r} (c.KernelLauncher.kernel_name),"
                f" which the Prime provisioner does not launch: name {PROVISIONER!r} in its "
                "kernel.json (metadata.kernel_provisioner.provisioner_name), or use 'prime-agent'"
            )
        self._provisioned.add(name)

    def manager(self, kernel_id: str) -> AsyncKernelManager:
        # get_kernel() is annotated with the blocking KernelManager; an async multi-kernel
        # manager's kernels are AsyncKernelManagers, whose client() is an AsyncKernelClient.
        return cast(AsyncKernelManager, self.kernel_manager.get_kernel(kernel_id))

    def client(self, kernel_id: str) -> KernelClient:
        client: AsyncKernelClient = self.manager(kernel_id).client()
        return cast(KernelClient, client)

    async def started(self, kernel_id: str) -> None:
        """Until the kernel's process can be connected to (before it answers)."""

    def adopt(self, kernel_id: str) -> None:
        """The daemon watches the kernel itself and decides what a death means for its session
        (told to the model, REPL restored): the manager's silent auto-restart must not run."""
        km = self.manager(kernel_id)
        km.stop_restarter()  # a no-op once autorestart is off: stop it first
        km.autorestart = False

    async def exit_code(self, kernel_id: str) -> int | None:
        """None while the kernel's process runs; its exit code (negative: signal) once it
        ended."""
        km = self.manager(kernel_id)
        if km.provisioner is None:
            return None if await maybe_await(km.is_alive()) else 0
        return await km.provisioner.poll()

    def describe_exit(self, kernel_id: str, code: int | None) -> str:
        """How the kernel ended, for a cell's `exit` and the model (`code` from exit_code)."""
        return describe_exit(code)

    async def is_alive(self, kernel_id: str) -> bool:
        return bool(await maybe_await(self.kernel_manager.is_alive(kernel_id)))

    async def interrupt(self, kernel_id: str) -> None:
        # Annotated `-> None`, but it returns the kernel's own interrupt_kernel() result, a
        # coroutine for an AsyncKernelManager.
        await maybe_await(
            self.kernel_manager.interrupt_kernel(kernel_id)  # type: ignore[func-returns-value]
        )

    async def signal(self, kernel_id: str, signum: int) -> None:
        await self.manager(kernel_id).signal_kernel(signum)

    def restartable(self, kernel_id: str) -> bool:
        """Whether `restart` can replace the kernel under its id (not one a person shut down)."""
        return kernel_id in self.kernel_manager

    async def restart(self, kernel_id: str) -> None:
        """A fresh kernel under the same id (a console a person attached stays attached)."""
        await maybe_await(self.kernel_manager.restart_kernel(kernel_id, now=True))

    async def shutdown(self, kernel_id: str, *, now: bool = True) -> None:
        await maybe_await(self.kernel_manager.shutdown_kernel(kernel_id, now=now))

    def record(self, kernel_id: str) -> dict[str, Any]:
        """What recovery needs to stop the kernel if the daemon dies first: the pid of its
        process (whose command line names its connection file) and that file."""
        km = self.manager(kernel_id)
        return {
            "pid": getattr(km.provisioner, "pid", None),
            "connection_file": km.connection_file,
        }

    def unreachable(self) -> str:
        """What to add when one of its kernels says it cannot reach the daemon (nothing: a
        kernel of this server reaches it on its own socket)."""
        return ""

    async def stop_leftover(self, record: dict[str, Any]) -> bool | None:
        """Stop a kernel a previous daemon left elsewhere than on this host (its `record`,
        with the `gateway` it ran on): True once it is gone, False if it could not be
        reached now (its record is kept for the next start), None if this launcher does not
        know where it runs. Kernels of this host are stopped by their pid (daemon/recovery.py)."""
        return None


class LocalLauncher(KernelLauncher):
    """Kernels of the server's kernel manager, forked from a template where that works (see
    prime_kernel/daemon/forkserver.py). Configure as `c.LocalLauncher.<trait>`."""

    fork = Bool(
        help="Fork agent kernels from a template process that has imported ipykernel, IPython "
        "and the Prime modules already (a start in tens of milliseconds instead of ~1 s, and "
        "about half the memory per kernel). Default: on Linux with pidfds (5.3+); False starts "
        "each kernel from its command.",
    ).tag(config=True)

    @default("fork")
    def _default_fork(self) -> bool:
        return forking_works()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fork_server: ForkServer | None = None

    async def start(self) -> None:
        if self.fork:
            self.fork_server = ForkServer(self.start_timeout)

    async def stop(self) -> None:
        if self.fork_server is not None:
            await self.fork_server.close()
            self.fork_server = None

    def agent_link(self) -> KernelLink | None:
        link = super().agent_link()
        return replace(link, fork_server=self.fork_server) if link is not None else None

    async def started(self, kernel_id: str) -> None:
        process = getattr(self.manager(kernel_id).provisioner, "process", None)
        if isinstance(process, ForkedProcess):
            await process.started()


def describe_exit(code: int | None) -> str:
    if code is None:
        return "the kernel process is gone"
    if code < 0:
        return f"signal {_signal_name(-code)}"
    if 128 < code < 128 + 65:
        # What a wrapper (a shell, bubblewrap) reports for a child killed by a signal.
        return f"exit code {code}: signal {_signal_name(code - 128)}"
    return f"exit code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def forking_works() -> bool:
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # a kernel older than 5.3
        return False
    return hasattr(signal, "pidfd_send_signal")


async def maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value
