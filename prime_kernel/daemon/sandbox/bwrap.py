"""Whether the sandbox works here, and the command that runs an agent kernel in it.

`Sandbox` detects the mode agent kernels run in (bubblewrap or none), gives each kernel its
namespaces (a private PID namespace, no capabilities, the network shared or not) and, when the
server runs as root, a host uid of its own (agent_users.py): bwrap then runs privileged,
without a user namespace (a uid mapped in one is still root outside, and Linux exempts root
from RLIMIT_NPROC), and the kernel drops to its uid before any of its code runs (`setpriv`, or
the forked kernel itself). What the kernel sees of the filesystem is `SandboxMounts`'s
(mounts.py); its resource limits are `KernelLimits`' (limits.py). Both are built by the
Sandbox, and read the settings they took from it (`MOVED`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from traitlets import Bool, Enum, Int, Unicode, observe
from traitlets.config import LoggingConfigurable

from ..moved import relocate
from .limits import KernelLimits
from .mounts import Layout, SandboxMounts

BWRAP = "bwrap"
NONE = "none"

# What each mode protects, as `prime-agent doctor` and GET /api/prime/status say it.
PROTECTS = {
    BWRAP: [
        "private PID namespace: no other process (kernel or server) is visible in /proc",
        "home folder, Jupyter runtime folder, <root>/.prime, /tmp, /run: empty in the sandbox",
        "of the Python install only what the interpreter needs; not the server's folder",
        "other kernels' connection files and sockets unreachable; no TCP ports (IPC transport)",
        "daemon reached over a Unix socket; token passed by pipe, never in the environment",
        "no inherited descriptors: stdin is /dev/null, stdout and stderr the kernel's own log",
        "no capabilities, no new privileges; provider keys not in the kernel's environment",
        "a host uid of its own when the server runs as root (the process limit binds)",
        "limits per kernel: address space, heap, CPU time, processes, file size, /tmp and "
        "/dev/shm size",
    ],
    NONE: [
        "token passed by pipe, never in an environment or on a command line",
        "Prime kernels non-dumpable (their /proc/<pid>/environ, mem and fds closed to others); "
        "agent kernels started as root drop every capability",
        "no TCP ports for Prime kernels (IPC transport in private 0700 folders)",
        "provider keys not in agent kernels' environment; memory and CPU time limits",
    ],
}
EXPOSES = {
    BWRAP: [
        "the server root (read-write) and the rest of the filesystem outside the hidden "
        "folders (read-only)",
        "the network, unless c.Sandbox.network = False",
    ],
    NONE: [
        "everything your OS user can read and write: the runtime folder (the server token, "
        "every kernel's connection file), the store, your home folder",
    ],
}


@dataclass
class Probe:
    """Whether the sandbox can run here, and why not."""

    mode: str  # BWRAP or NONE
    bwrap: str | None = None
    version: str = ""
    reason: str = ""
    # When the server is root: the setpriv that drops each kernel to a uid of its own (None:
    # kernels stay root, `users` says why).
    setpriv: str | None = None
    users: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "bwrap": self.bwrap,
            "version": self.version,
            "reason": self.reason,
            "users": self.users,
            "protects": PROTECTS[self.mode],
            "exposes": EXPOSES[self.mode],
        }


# Settings that moved off the Sandbox to the class that reads them: `c.Sandbox.<name>` still
# works this release, with a warning (moved.py).
MOVED = {
    name: new_cls
    for new_cls, names in {
        "KernelLimits": (
            "memory_limit",
            "cpu_time_limit",
            "process_limit",
            "address_space_limit",
            "file_size_limit",
        ),
        "SandboxMounts": (
            "read_only_paths",
            "writable_paths",
            "hidden_paths",
            "tmp_size",
            "shm_size",
        ),
    }.items()
    for name in names
}


class Sandbox(LoggingConfigurable):
    """Which sandbox agent kernels run in, their namespaces and their uids. Configure as
    `c.Sandbox.<trait>`; the filesystem they see is `c.SandboxMounts`, their limits
    `c.KernelLimits`."""

    mode = Enum(
        ["auto", BWRAP, NONE],
        "auto",
        config=True,
        help="'auto': bubblewrap where it works, else no sandbox (said once in the log); "
        "'bwrap': require it (agent kernels fail to start without it); 'none': never.",
    )
    bwrap_path = Unicode(
        "", config=True, help="The bwrap executable (default: `bwrap` found on PATH)."
    )
    network = Bool(
        True,
        config=True,
        help="Let agent kernels use the network (agents pip-install and fetch data). "
        "False gives each kernel its own network namespace with only a loopback device.",
    )
    first_uid = Int(
        70000,
        config=True,
        help="When the server runs as root: the first of the host uids agent kernels run as, "
        "one per kernel (uids with an account are skipped). With a sandbox only.",
    )
    uids = Int(
        1000,
        min=0,
        config=True,
        help="How many uids from first_uid agent kernels may have (kernels at once); 0 runs "
        "them as root, as the server (not advised: no process limit binds root).",
    )
    agent_gid = Int(
        -1,
        config=True,
        help="The group of every agent kernel, given read and write on the server root by a "
        "POSIX ACL when kernels run as their own uids; -1: first_uid.",
    )

    _probe: Probe | None = None

    def __init__(self, **kwargs: Any) -> None:
        moved = relocate("Sandbox", MOVED, kwargs)
        super().__init__(**kwargs)
        for note in moved:
            self.log.warning(note)
        self.limits = KernelLimits(parent=self)
        self.mounts = SandboxMounts(parent=self)

    # -- detection ------------------------------------------------------------------------
    @observe("mode", "bwrap_path", "network", "first_uid", "uids", "agent_gid")
    def _forget_probe(self, change: Any) -> None:
        self._probe = None

    def probe(self) -> Probe:
        """Detect (once) which mode agent kernels run in."""
        if self._probe is None:
            self._probe = self._detect()
        return self._probe

    def _detect(self) -> Probe:
        if self.mode == NONE:
            return Probe(NONE, reason="disabled by configuration (c.Sandbox.mode = 'none')")
        if not sys.platform.startswith("linux"):
            return self._unavailable(f"bubblewrap needs Linux, not {sys.platform}")
        path = self.bwrap_path or shutil.which("bwrap")
        if not path or not os.access(path, os.X_OK):
            return self._unavailable(
                "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
            )
        try:
            version = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return self._unavailable(f"{path} could not run: {e}")
        if os.geteuid() == 0 and self.uids > 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                users = "agent kernels run as root: setpriv (util-linux) is not installed"
            else:
                test = [setpriv, "--reuid", str(self.first_uid), "--regid", str(self.gid())]
                test += ["--clear-groups", "--", "/bin/true"]
                error = self._try(path, self._base_args(privileged=True, exec_=True), test)
                if error is None:
                    return Probe(
                        BWRAP,
                        bwrap=path,
                        version=version,
                        setpriv=setpriv,
                        users=f"each agent kernel runs as a uid of its own from {self.first_uid}",
                    )
                users = f"agent kernels run as root: dropping to a uid failed here ({error})"
        elif os.geteuid() == 0:
            users = "agent kernels run as root (c.Sandbox.uids = 0)"
        else:
            users = f"agent kernels run as the server's user (uid {os.geteuid()})"
        # User namespaces may be disabled (sysctl, AppArmor) even where bwrap is installed.
        error = self._try(path, self._base_args(), ["/bin/true"])
        if error is not None:
            return self._unavailable(f"{path} does not work here: {error}")
        return Probe(BWRAP, bwrap=path, version=version, users=users)

    def _try(self, bwrap: str, base: list[str], command: list[str]) -> str | None:
        """Run the very namespaces and kinds of mounts a kernel gets, with `command` as the
        kernel; None if it worked, else why not."""
        argv = [bwrap, *base, "--ro-bind", "/", "/", "--dev", "/dev"]
        argv += ["--perms", "01777", "--size", str(1 << 20), "--tmpfs", "/tmp", "--", *command]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as e:
            return str(e)
        if done.returncode != 0:
            return done.stderr.strip() or f"exit status {done.returncode}"
        return None

    def gid(self) -> int:
        """The agents' group."""
        return self.agent_gid if self.agent_gid >= 0 else self.first_uid

    def _unavailable(self, reason: str) -> Probe:
        if self.mode == BWRAP:
            # Required: every agent kernel start fails with this reason.
            return Probe(BWRAP, reason=reason)
        return Probe(NONE, reason=reason)

    def describe(self) -> str:
        """One line for the log."""
        p = self.probe()
        if p.mode == BWRAP and p.bwrap:
            net = "with" if self.network else "without"
            return (
                f"agent kernels run sandboxed by {p.version or p.bwrap} ({net} network); {p.users}"
            )
        if p.mode == BWRAP:
            return f"agent kernels cannot start: the sandbox is required but {p.reason}"
        return f"agent kernels run WITHOUT a sandbox: {p.reason}"

    # -- users --------------------------------------------------------------------------------
    _users: Any = None

    def users(self) -> Any:
        """The AgentUsers handing out uids (None unless the server is root and dropping to a
        uid works here)."""
        if self.probe().setpriv is None:
            return None
        if self._users is None:
            from ..agent_users import AgentUsers

            self._users = AgentUsers(self.first_uid, self.uids, self.gid())
        return self._users

    # -- the command ----------------------------------------------------------------------
    def _base_args(self, *, privileged: bool = False, exec_: bool = False) -> list[str]:
        """Namespaces and capabilities. `privileged` (the server is root and kernels get uids
        of their own): no user namespace, in which the kernel's uid would be root's outside;
        `exec_`: the kernel is exec'd through setpriv, which needs these three capabilities
        to drop to its uid, and drops them all."""
        if privileged:
            args = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
            if not self.network:
                args.append("--unshare-net")
        else:
            args = ["--unshare-all"]
            if self.network:
                args.append("--share-net")
        # --die-with-parent: the sandbox dies with the server, as kernels do.
        args += ["--die-with-parent", "--cap-drop", "ALL"]
        if privileged and exec_:
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                args += ["--cap-add", cap]
        return args

    def command_for(
        self,
        kernel_cmd: list[str],
        layout: Layout,
        *,
        cwd: str,
        bwrap: str,
        info_fd: int | None = None,
        user: tuple[int, int] | None = None,
    ) -> list[str]:
        """`kernel_cmd` in the sandbox (`SandboxMounts.argv`), dropped to the host `user` (uid,
        gid) when given: by setpriv before the kernel's command (`info_fd` None), or by the
        forked kernel itself."""
        if user is None:
            base = self._base_args()
            return self.mounts.argv(
                kernel_cmd, layout, cwd=cwd, bwrap=bwrap, namespaces=base, info_fd=info_fd
            )
        setpriv = self.probe().setpriv
        assert setpriv is not None
        if info_fd is None:
            uid, gid = user
            kernel_cmd = [
                setpriv,
                "--reuid",
                str(uid),
                "--regid",
                str(gid),
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
                *kernel_cmd,
            ]
        base = self._base_args(privileged=True, exec_=info_fd is None)
        return self.mounts.argv(
            kernel_cmd, layout, cwd=cwd, bwrap=bwrap, namespaces=base, info_fd=info_fd
        )


_active: Sandbox | None = None


def activate(sandbox: Sandbox | None) -> None:
    """Make `sandbox` the one this process's provisioner uses (set by the server extension)."""
    global _active
    _active = sandbox


def active() -> Sandbox | None:
    return _active


def status(sandbox: Sandbox | None) -> dict[str, Any]:
    """The mode in force, what it protects, and its limits (for REST and `prime-agent doctor`)."""
    if sandbox is None:
        return {"mode": "none", "reason": "the Prime server extension has no sandbox"}
    out = sandbox.probe().to_json()
    out["network"] = sandbox.network if out["mode"] == "bwrap" else True
    out["limits"] = sandbox.limits.rlimits(out["mode"] == "bwrap")
    out["tmp_size"] = sandbox.mounts.tmp_size
    out["shm_size"] = sandbox.mounts.shm_size
    return out
