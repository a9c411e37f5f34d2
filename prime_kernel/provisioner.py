"""A kernel provisioner that connects each kernel it launches to the Prime daemon.

Registered under the `jupyter_client.kernel_provisioners` entry point as `prime-provisioner`
and named by the "Prime Agent" kernelspec. It is a `LocalProvisioner` that, when the kernel is
started with a `KernelLink` to a running daemon (jupyter_client's `start_kernel(prime_link=...)`,
which reaches `pre_launch` at the start and at each restart: the daemon's launcher passes one
for agent kernels, the server's kernel manager for notebooks, see server/kernel_manager.py):

- puts the kernel on ZMQ's IPC transport, its sockets in a private folder of its own: no TCP
  port, nothing another kernel can reach;
- pipes the kernel a boot document (prime_kernel/kernel/boot.py) with the daemon's URL and a
  capability token minted for this very kernel; the token is in no environment and on no
  command line;
- for agent kernels (those the daemon starts: `KernelLink.agent`): leaves provider keys out
  of the environment, asks for resource limits, gives the kernel /dev/null for stdin and a log
  of its own for stdout and stderr (daemon/kernel_logs.py) and nothing else, and, where it
  works, wraps the kernel in the bubblewrap sandbox (prime_kernel/daemon/sandbox/) — as a
  host uid of its own when the server is root (daemon/agent_users.py);
- and, when the daemon's launcher has a fork server, forks the agent kernel from a template
  instead of exec'ing its command (prime_kernel/daemon/forkserver.py): the same boot pipe, the
  same sandbox (bwrap's command line with a placeholder that the kernel replaces), the same
  kernel for jupyter_client. Without a template (it cannot start, or keeps dying) the kernel
  is started from its command; a sandbox a forked kernel cannot join fails that kernel's start,
  and the kernels after it are started from their command.

A kernel started without a link behaves exactly like a plain local kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
from typing import TYPE_CHECKING, Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner
from traitlets import List, Unicode

from .daemon import kernel_logs, private
from .daemon import sandbox as sandbox_mod
from .daemon.forkserver import ForkedProcess, ForkError, ForkServer
from .daemon.launcher import LINK, KernelLink
from .kernel.boot import BOOT_FD_ENV
from .kernel.template import INFO_FD, PLACEHOLDER
from .protocol.wire import BOOT_ENV, TOKEN_ENV, URL_ENV

if TYPE_CHECKING:
    from .daemon.agent_users import AgentUsers

log = logging.getLogger(__name__)


class PrimeProvisioner(LocalProvisioner):
    unpickle_allow = List(
        Unicode(),
        config=True,
        help="More 'module.Name' classes or functions every Prime kernel may unpickle from "
        "another session (answers, contexts), beyond plain data, numpy and pandas types.",
    )

    # Set at the first launch and kept across restarts: a restarted agent kernel stays one.
    _agent: bool | None = None
    _fork_server: ForkServer | None = None
    _sandboxed = False
    _boot_fd: int | None = None
    # The agent kernel's log (its stdout and stderr), open until it is launched.
    _log_fd: int | None = None
    # The host uid and gid an agent kernel runs as, when the server is root (kept across
    # restarts).
    _user: tuple[int, int] | None = None
    # What fork_server.fork() needs for this launch (set by pre_launch when it may fork).
    _fork: dict[str, Any] | None = None
    # The daemon this kernel is connected to, if any (its token is revoked when it ends).
    _link: KernelLink | None = None

    @property
    def agent(self) -> bool:
        return bool(self._agent)

    @property
    def sandboxed(self) -> bool:
        return self._sandboxed

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        link: KernelLink | None = kwargs.pop(LINK, None)
        if self._agent is None:
            self._agent = link is not None and link.agent
            self._fork_server = link.fork_server if link is not None and link.agent else None
        self._fork = None
        self._link = link
        connected = link is not None and bool(link.url)
        km = self.parent
        if connected and km is not None:
            # Before the connection file is written: IPC sockets in a private folder.
            km.transport = "ipc"
            km.ip = str(private.kernel_dir(self.kernel_id) / "s")
            km.cache_ports = False
        kwargs = await super().pre_launch(**kwargs)
        env = kwargs["env"]
        # Never let a capability leak in from the server's own environment.
        for name in (TOKEN_ENV, URL_ENV, BOOT_FD_ENV):
            env.pop(name, None)
        if not connected:
            # On a gateway's host: the daemon that asked for this kernel sent its boot
            # document in the start request's environment (KERNEL_PRIME_BOOT).
            return kwargs
        env.pop(BOOT_ENV, None)
        assert link is not None
        doc: dict[str, Any] = {
            "url": link.url,
            "agent": self.agent,
            "unpickle_allow": list(self.unpickle_allow),
            # What one value from another session may build (the daemon's blob limit).
            "unpickle_max_bytes": link.max_blob_bytes,
        }
        if self.agent:
            from .util.redact import is_secret_name

            # Agents call models through the daemon; they never need a provider key.
            for name in [n for n in env if is_secret_name(n)]:
                del env[name]
            # Nothing of the server's: stdin /dev/null, stdout and stderr a log of its own.
            self._close_log_fd()
            # In a thread: it prunes the logs folder (a stat of each of up to 200 logs).
            self._log_fd = await asyncio.to_thread(
                kernel_logs.open_log, link.store_dir, self.kernel_id
            )
            kwargs["stdin"] = subprocess.DEVNULL
            kwargs["stdout"] = kwargs["stderr"] = self._log_fd
            sandbox = sandbox_mod.active()
            users = sandbox.users() if sandbox is not None else None
            if users is not None:  # once per folder: writable for the agents' group
                assert sandbox is not None
                for folder in [link.root_dir, *sandbox.mounts.writable_paths]:
                    await asyncio.to_thread(
                        users.share, os.path.expanduser(folder), [link.store_dir]
                    )
            cmd = kwargs["cmd"]
            # What the kernel's interpreter puts on its path: asked of it (a process started
            # and waited for) once per server, never on the event loop.
            paths = []
            if sandbox is not None and sandbox.probe().mode == sandbox_mod.BWRAP:
                paths = await asyncio.to_thread(sandbox_mod.python_paths, cmd, env)
                if users is not None and self._user is None and sandbox.probe().bwrap:
                    # Its uid (see _sandbox), off the loop too: a look-up in the passwd
                    # database and a lock to try for each uid until a free one, past every
                    # uid other servers' kernels hold (0.2 s under load).
                    self._user = (await asyncio.to_thread(users.take, self.kernel_id), users.gid)
            kwargs["cmd"], placeholder = self._sandbox(cmd, kwargs, doc, link, paths)
            if self._fork_server is not None and _forkable(cmd):
                self._fork = {
                    "python": cmd[0],
                    "argv": cmd,
                    "cwd": os.path.realpath(str(kwargs.get("cwd") or os.getcwd())),
                    "env": dict(env),
                    "sandbox": placeholder,
                    "user": self._user if placeholder is not None else None,
                }
        doc["token"] = link.tokens.mint(self.kernel_id, notebook=not self.agent)
        read_end, write_end = os.pipe()
        os.write(write_end, json.dumps(doc).encode())  # far below a pipe's buffer
        os.close(write_end)
        self._close_boot_fd()
        self._boot_fd = read_end
        env[BOOT_FD_ENV] = str(read_end)
        kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), read_end)
        return kwargs

    def _sandbox(
        self,
        cmd: list[str],
        kwargs: dict[str, Any],
        doc: dict[str, Any],
        link: KernelLink,
        python_paths: list[str],
    ) -> tuple[list[str], list[str] | None]:
        """The kernel command wrapped in the sandbox, and the same sandbox around the fork
        placeholder; `cmd` and None without a sandbox."""
        sandbox = sandbox_mod.active()
        if sandbox is None:
            self._sandboxed = False
            return cmd, None
        probe = sandbox.probe()
        self._sandboxed = probe.mode == sandbox_mod.BWRAP
        doc["limits"] = sandbox.limits.rlimits(self._sandboxed)
        if not self._sandboxed:
            return cmd, None
        if probe.bwrap is None:
            raise RuntimeError(f"the agent kernel sandbox is required but {probe.reason}")
        from jupyter_core.paths import jupyter_runtime_dir

        km = self.parent
        connection_file = getattr(km, "connection_file", "")
        # The runtime folder holds every kernel's connection file and the server's
        # jpserver-<pid>.json (its token): sealed, with only this kernel's file bound back.
        runtime = {jupyter_runtime_dir(), os.path.dirname(connection_file)}
        root = link.root_dir
        cwd = str(kwargs.get("cwd") or root)
        own_dir = str(private.kernel_dir(self.kernel_id))
        layout = sandbox.mounts.layout(
            root_dir=root,
            store_dir=link.store_dir,
            runtime_dirs=sorted(runtime),
            python_paths=python_paths,
            private_dirs=[own_dir],
            private_files=[connection_file, str(private.socket_path())],
        )
        users = sandbox.users()
        if users is not None:
            # A uid of its own, and what it must write made its: its folder of sockets, its
            # connection file, the daemon's socket (for its group), the root (by an ACL).
            assert self._user is not None  # taken in pre_launch
            users.hand_over(self._user[0], own_dir, connection_file)
            users.open_to_group(str(private.socket_path()))
        cwd = os.path.realpath(cwd)
        return (
            sandbox.command_for(cmd, layout, cwd=cwd, bwrap=probe.bwrap, user=self._user),
            sandbox.command_for(
                PLACEHOLDER, layout, cwd=cwd, bwrap=probe.bwrap, info_fd=INFO_FD, user=self._user
            ),
        )

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        try:
            if self._fork is not None and self._fork_server is not None:
                with contextlib.suppress(ForkError):
                    return await self._launch_forked(self._fork_server, self._fork)
            return await super().launch_kernel(cmd, **kwargs)
        except BaseException:
            if self._link is not None:  # nothing holds the token it was given
                self._link.tokens.revoke(self.kernel_id)
            raise
        finally:
            # The kernel holds its own copies of the pipe and its log now (or failed to start).
            self._close_boot_fd()
            self._close_log_fd()

    async def _launch_forked(
        self, server: ForkServer, fork: dict[str, Any]
    ) -> KernelConnectionInfo:
        assert self._boot_fd is not None
        env = {k: v for k, v in fork["env"].items() if k != BOOT_FD_ENV}
        try:
            process = await server.fork(
                python=fork["python"],
                cwd=fork["cwd"],
                env=env,
                sandbox=fork["sandbox"],
                argv=fork["argv"],
                boot_fd=self._boot_fd,
                log_fd=self._log_fd,
                user=fork["user"],
            )
        except ForkError as e:
            log.warning("kernel %s: %s; starting it from its command", self.kernel_id, e)
            raise
        self.process = process  # type: ignore[assignment]  # Popen's interface, as LocalProvisioner uses it
        # The kernel (or its handle in the sandbox) leads a process group of its own.
        self.pid = self.pgid = process.pid
        self.cwd = fork["cwd"]
        return self.connection_info

    async def wait(self) -> int | None:
        if isinstance(self.process, ForkedProcess):
            code = await self.process.ended()
            self.process = None
            return code
        return await super().wait()

    def _close_boot_fd(self) -> None:
        if self._boot_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._boot_fd)
            self._boot_fd = None

    def _close_log_fd(self) -> None:
        if self._log_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._log_fd)
            self._log_fd = None

    async def cleanup(self, restart: bool = False) -> None:
        if self._link is not None and not restart:
            self._link.tokens.revoke(self.kernel_id)
        self._close_boot_fd()
        self._close_log_fd()
        await super().cleanup(restart=restart)
        if not restart:
            sandbox = sandbox_mod.active()
            users = sandbox.users() if sandbox is not None and self._user is not None else None
            # Off the loop, both: the folder of sockets removed (a file system walk), and the
            # kernel's uid given back once its last processes have ended (a scan of /proc).
            await asyncio.to_thread(_remove_kernel, self.kernel_id, users)
            self._user = None


def _remove_kernel(kernel_id: str, users: AgentUsers | None) -> None:
    private.remove_kernel_dir(kernel_id)
    if users is not None:
        users.give_back(kernel_id)


def _forkable(cmd: list[str]) -> bool:
    """Whether `cmd` is the Prime kernel's own command, which a template can stand in for."""
    return cmd[1:3] == ["-m", "prime_kernel.kernel"] and "-f" in cmd
