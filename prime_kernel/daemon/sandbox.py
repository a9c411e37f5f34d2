"""The sandbox agent kernels run in: detection, and the bubblewrap command line.

Agent code is written by a model, so an agent kernel must reach only its own session. Where
bubblewrap (`bwrap`) works, each agent kernel runs in its own namespaces:

- a private PID namespace: /proc shows the kernel's own processes only;
- the filesystem read-only, except the server root (writable), with the home folder, the
  Jupyter runtime folder, `<root>/.prime/`, /tmp, /var/tmp and /run replaced by empty folders
  (nothing of other kernels, the server or the store is there to read or lock);
- no capabilities; the network shared or not (`network`);
- the kernel's own private folder (its ZMQ sockets) and the daemon's Unix socket bound in.

This module only detects whether the sandbox works here and builds the command that wraps a
kernel command in it; the provisioner (prime_kernel/provisioner.py) does the launching.
Resource limits are applied by the kernel's own boot code (prime_kernel/kernel/boot.py),
inside the sandbox's user namespace, from `limits()`.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traitlets import Bool, Enum, Int, List, Unicode, observe
from traitlets.config import LoggingConfigurable

log = logging.getLogger(__name__)

BWRAP = "bwrap"
NONE = "none"

# What each mode protects, as `prime-agent doctor` and GET /api/prime/status say it.
PROTECTS = {
    BWRAP: [
        "private PID namespace: no other process (kernel or server) is visible in /proc",
        "home folder, Jupyter runtime folder, <root>/.prime, /tmp, /run: empty in the sandbox",
        "other kernels' connection files and sockets unreachable; no TCP ports (IPC transport)",
        "daemon reached over a Unix socket; token passed by pipe, never in the environment",
        "no capabilities, no new privileges; provider keys not in the kernel's environment",
        "resource limits per kernel (memory, CPU time, processes)",
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

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "bwrap": self.bwrap,
            "version": self.version,
            "reason": self.reason,
            "protects": PROTECTS[self.mode],
            "exposes": EXPOSES[self.mode],
        }


@dataclass
class Layout:
    """The filesystem an agent kernel sees, before it becomes bwrap arguments."""

    hidden: list[str] = field(default_factory=list)  # empty writable folders
    sealed: list[str] = field(default_factory=list)  # empty read-only folders
    read_only: list[str] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)


class Sandbox(LoggingConfigurable):
    """Configure as `c.Sandbox.<trait>`."""

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
    read_only_paths = List(
        Unicode(),
        config=True,
        help="Folders (or files) an agent may read though they are hidden by default, "
        "e.g. ['~/datasets']. '~' is the server's home folder.",
    )
    writable_paths = List(
        Unicode(), config=True, help="Folders outside the server root an agent may write."
    )
    hidden_paths = List(
        Unicode(),
        config=True,
        help="Further folders to empty in the sandbox (the home folder, the Jupyter runtime "
        "folder, the store, /tmp, /var/tmp and /run always are).",
    )
    memory_limit = Int(
        -1,
        config=True,
        help="Bytes of heap (RLIMIT_DATA: brk and private writable mappings) each process "
        "of an agent kernel may use; -1: half the machine's memory; 0: no limit.",
    )
    cpu_time_limit = Int(
        3600,
        config=True,
        help="CPU seconds each process of an agent kernel may use in all (RLIMIT_CPU; the "
        "kernel gets SIGXCPU and ends); 0: no limit.",
    )
    process_limit = Int(
        512,
        config=True,
        help="Processes and threads an agent kernel may have at once (RLIMIT_NPROC, counted "
        "in the sandbox's user namespace; Linux does not apply it to root); 0: no limit. "
        "Applies only in the sandbox.",
    )

    _probe: Probe | None = None

    # -- detection ------------------------------------------------------------------------
    @observe("mode", "bwrap_path", "network")
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
        # Run the very namespaces and mounts a kernel gets, with /bin/true as the kernel:
        # user namespaces may be disabled (sysctl, AppArmor) even where bwrap is installed.
        argv = [path, *self._base_args(), "--ro-bind", "/", "/", "--", "/bin/true"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            version = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return self._unavailable(f"{path} could not run: {e}")
        if done.returncode != 0:
            detail = done.stderr.strip() or f"exit status {done.returncode}"
            return self._unavailable(f"{path} does not work here: {detail}")
        return Probe(BWRAP, bwrap=path, version=version)

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
            return f"agent kernels run sandboxed by {p.version or p.bwrap} ({net} network)"
        if p.mode == BWRAP:
            return f"agent kernels cannot start: the sandbox is required but {p.reason}"
        return f"agent kernels run WITHOUT a sandbox: {p.reason}"

    # -- resource limits ------------------------------------------------------------------
    def limits(self, sandboxed: bool) -> dict[str, int]:
        """The rlimits the kernel's boot code sets on itself (soft = hard: it cannot raise
        them again). The process limit only inside the sandbox: outside a user namespace of
        its own it would count every process of the user."""
        memory = self.memory_limit
        if memory < 0:
            memory = _physical_memory() // 2
        out = {"data": memory, "cpu": self.cpu_time_limit, "core": 0}
        if sandboxed:
            out["nproc"] = self.process_limit
        return {k: v for k, v in out.items() if v > 0 or k == "core"}

    # -- the command ----------------------------------------------------------------------
    def _base_args(self) -> list[str]:
        args = ["--unshare-all"]
        if self.network:
            args.append("--share-net")
        # --die-with-parent: the sandbox dies with the server, as kernels do.
        return [*args, "--die-with-parent", "--cap-drop", "ALL"]

    def layout(
        self,
        *,
        root_dir: str,
        store_dir: str,
        runtime_dirs: list[str],
        python_paths: list[str],
        private_dirs: list[str],
        private_files: list[str],
    ) -> Layout:
        """Which folders an agent kernel sees, and how."""
        home = {os.path.expanduser("~"), os.environ.get("HOME", ""), _account_home()}
        hidden = ["/tmp", "/var/tmp", "/run", "/home", *home, *self.hidden_paths]
        if os.environ.get("XDG_RUNTIME_DIR"):
            hidden.append(os.environ["XDG_RUNTIME_DIR"])
        hidden = _clean(hidden)
        # A Python path that is (or holds) a hidden folder is not the kernel's to see: the
        # server's sys.path starts with its working folder under `python -m jupyter`.
        pythons = [p for p in _clean(python_paths) if not any(_inside(h, p) for h in hidden)]
        read_only = [*pythons, *self.read_only_paths, *private_files]
        resolv = Path("/etc/resolv.conf")
        if resolv.is_symlink():  # often into /run (systemd-resolved), which is hidden
            read_only.append(str(resolv.resolve()))
        return Layout(
            hidden=hidden,
            sealed=_clean([store_dir, *runtime_dirs]),
            read_only=_clean(read_only),
            writable=_clean([root_dir, *self.writable_paths, *private_dirs], root_ok=True),
        )

    def command(
        self,
        kernel_cmd: list[str],
        layout: Layout,
        *,
        cwd: str,
        bwrap: str,
        info_fd: int | None = None,
    ) -> list[str]:
        """`kernel_cmd` wrapped in bwrap with `layout`; with `info_fd`, bwrap writes the
        sandbox's pid there (a forked kernel joins the sandbox by it).

        The outer bwrap process ignores SIGINT (`trap '' INT` before exec; ignored signals
        stay ignored across exec; with `info_fd` the caller ignores it already, and the
        command is bwrap itself): Jupyter interrupts a kernel by signalling its process
        group, which holds bwrap, the sandbox's init and the kernel. The init is not
        signalled from outside its namespace unless it handles the signal; the kernel is, as
        without a sandbox. SIGTERM and SIGKILL end bwrap, and with it (--die-with-parent)
        everything inside.
        """
        ops: list[tuple[str, int, list[str]]] = []  # (path, priority, args)
        hidden = layout.hidden + layout.sealed

        def under_hidden(p: str) -> bool:
            return any(_inside(p, h) for h in hidden)

        for p in layout.hidden:
            ops.append((p, 0, ["--tmpfs", p]))
        for p in layout.sealed:
            ops.append((p, 0, ["--tmpfs", p]))
        for p in layout.read_only:
            if under_hidden(p):  # elsewhere it is visible (read-only) already
                ops.append((p, 1, ["--ro-bind", p, p]))
        for p in layout.writable:
            ops.append((p, 1, ["--bind", p, p]))
        # Parents before children: a folder emptied, then a path inside it bound back (the
        # Python install under the home folder), then a path inside that emptied again (the
        # store inside the root).
        ops.sort(key=lambda op: (_depth(op[0]), op[1]))
        if not any(_inside(cwd, w) for w in layout.writable) and under_hidden(cwd):
            cwd = layout.writable[0] if layout.writable else "/"
        argv = [bwrap, *self._base_args(), "--ro-bind", "/", "/", "--dev", "/dev"]
        argv += ["--proc", "/proc"]
        for _, _, args in ops:
            argv += args
        # Read-only last: files bound inside a sealed folder (the connection file in the
        # runtime folder) need their mount points made first.
        for p in layout.sealed:
            argv += ["--remount-ro", p]
        # The kernel's parent inside is the namespace's init, pid 1, which ipykernel takes
        # as "no parent to poll" (it would take any other pid for a dead parent and exit);
        # --die-with-parent does that job.
        if info_fd is not None:
            argv += ["--info-fd", str(info_fd)]
        argv += ["--setenv", "JPY_PARENT_PID", "1", "--chdir", cwd, "--", *kernel_cmd]
        if info_fd is not None:
            return argv  # for a forked kernel's handle, which ignores SIGINT itself
        return ["/bin/sh", "-c", "trap '' INT; exec \"$@\"", "sh", *argv]


def root_warning(root_dir: str) -> str | None:
    """What to tell the user when the server root holds their home folder: agents then
    read and write all of it, sandbox or not."""
    root = os.path.realpath(root_dir)
    homes = {os.path.realpath(h) for h in (os.path.expanduser("~"), _account_home()) if h}
    for home in sorted(homes):
        if _inside(home, root):
            return (
                f"the server root {root} holds the home folder {home}: agents can read and "
                "write all of it (~/.ssh included); start the server in a project folder"
            )
    return None


def python_paths(kernel_cmd: list[str]) -> list[str]:
    """Folders the kernel's Python needs to start: this interpreter's prefixes and import
    path (PYTHONPATH and editable installs included), and the kernel executable's prefix."""
    paths = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    paths.update(p for p in sys.path if p and os.path.isabs(p))
    paths.update(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    if kernel_cmd:
        exe = shutil.which(kernel_cmd[0]) or kernel_cmd[0]
        real = Path(exe).resolve()
        paths.add(str(real.parent.parent))  # <prefix>/bin/python -> <prefix>
    return sorted(paths)


def _clean(paths: list[str], *, root_ok: bool = False) -> list[str]:
    """Absolute, symlink-free, existing and distinct paths (bwrap mounts real paths); "/"
    only where `root_ok` (a server root of "/" is bound, but never emptied)."""
    out: list[str] = []
    for p in paths:
        if not p:
            continue
        real = os.path.realpath(os.path.expanduser(p))
        if (root_ok or real != "/") and os.path.exists(real) and real not in out:
            out.append(real)
    return out


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _depth(path: str) -> int:
    return len(Path(path).parts)


def _account_home() -> str:
    """The home folder of this OS user by the account database (HOME may say otherwise)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return ""


def _physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError):
        return 8 << 30


def shell_line(argv: list[str]) -> str:
    """A command line for the log."""
    return " ".join(shlex.quote(a) for a in argv)


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
    out["limits"] = sandbox.limits(out["mode"] == "bwrap")
    return out
