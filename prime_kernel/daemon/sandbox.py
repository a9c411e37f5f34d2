"""The sandbox agent kernels run in: detection, and the bubblewrap command line.

Agent code is written by a model, so an agent kernel must reach only its own session. Where
bubblewrap (`bwrap`) works, each agent kernel runs in its own namespaces:

- a private PID namespace: /proc shows the kernel's own processes only;
- the filesystem read-only, except the server root (writable), with the home folder, the
  Jupyter runtime folder, `<root>/.prime/`, /tmp, /var/tmp and /run replaced by empty folders
  of a bounded size (`tmp_size`; /dev/shm: `shm_size`) — nothing of other kernels, the server
  or the store is there to read or lock;
- of the Python installation, only what the kernel's interpreter puts on its path (its
  prefix, standard library, site-packages, PYTHONPATH and .pth entries), never the folder the
  server was started from;
- no capabilities; the network shared or not (`network`);
- the kernel's own private folder (its ZMQ sockets) and the daemon's Unix socket bound in;
- when the server runs as root, a host uid of the kernel's own (agent_users.py): bwrap then
  runs privileged, without a user namespace (a uid mapped in one is still root outside, and
  Linux exempts root from RLIMIT_NPROC), and the kernel drops to its uid before any of its
  code runs (`setpriv`, or the forked kernel itself).

This module only detects whether the sandbox works here and builds the command that wraps a
kernel command in it; the provisioner (prime_kernel/provisioner.py) does the launching.
Resource limits are applied by the kernel's own boot code (prime_kernel/kernel/boot.py) from
`limits()`, soft = hard, before any agent code runs.
"""

from __future__ import annotations

import json
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
        help="Processes and threads an agent kernel may have at once (RLIMIT_NPROC); 0: no "
        "limit. Applies only in the sandbox, where a kernel has a user (a uid of its own when "
        "the server is root, or a user namespace) whose processes are its alone.",
    )
    address_space_limit = Int(
        -1,
        config=True,
        help="Bytes of address space each process of an agent kernel may map (RLIMIT_AS: "
        "private and shared mappings alike, which RLIMIT_DATA does not bound); -1: half the "
        "machine's memory; 0: no limit. Libraries that reserve large address ranges up front "
        "(some GPU and JIT runtimes) need it raised.",
    )
    file_size_limit = Int(
        16 << 30,
        config=True,
        help="Largest file an agent kernel's processes may write, in bytes (RLIMIT_FSIZE: a "
        "write past it fails with 'File too large'); 0: no limit.",
    )
    tmp_size = Int(
        1 << 30,
        config=True,
        help="Size in bytes of each in-memory folder of the sandbox (/tmp, /var/tmp, the home "
        "folder, /run): writes past it fail with 'No space left on device'.",
    )
    shm_size = Int(
        256 << 20,
        config=True,
        help="Size in bytes of the sandbox's /dev/shm (shared memory files).",
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

    # -- resource limits ------------------------------------------------------------------
    def limits(self, sandboxed: bool) -> dict[str, int]:
        """The rlimits the kernel's boot code sets on itself (soft = hard: it cannot raise
        them again). The process limit only inside the sandbox: outside a user namespace of
        its own it would count every process of the user."""
        half = _physical_memory() // 2
        out = {
            "data": self.memory_limit if self.memory_limit >= 0 else half,
            "as": self.address_space_limit if self.address_space_limit >= 0 else half,
            "cpu": self.cpu_time_limit,
            "fsize": self.file_size_limit,
            "core": 0,
        }
        if sandboxed:
            out["nproc"] = self.process_limit
        return {k: v for k, v in out.items() if v > 0 or k == "core"}

    # -- users --------------------------------------------------------------------------------
    _users: Any = None

    def users(self) -> Any:
        """The AgentUsers handing out uids (None unless the server is root and dropping to a
        uid works here)."""
        if self.probe().setpriv is None:
            return None
        if self._users is None:
            from .agent_users import AgentUsers

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
        """`command`, with the kernel dropped to the host `user` (uid, gid) when given: by
        setpriv before the kernel's command (`info_fd` None), or by the forked kernel itself."""
        if user is None:
            return self.command(kernel_cmd, layout, cwd=cwd, bwrap=bwrap, info_fd=info_fd)
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
        return self.command(
            kernel_cmd, layout, cwd=cwd, bwrap=bwrap, info_fd=info_fd, privileged=True
        )

    def command(
        self,
        kernel_cmd: list[str],
        layout: Layout,
        *,
        cwd: str,
        bwrap: str,
        info_fd: int | None = None,
        privileged: bool = False,
    ) -> list[str]:
        """`kernel_cmd` wrapped in bwrap with `layout`; with `info_fd`, bwrap writes the
        sandbox's pid there (a forked kernel joins the sandbox by it); `privileged`: see
        `_base_args` (`command_for` sets it).

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

        size = str(max(self.tmp_size, 4096))
        for p in layout.hidden:
            # Sticky and open to all, as /tmp is: the kernel's uid may not be the owner's.
            ops.append((p, 0, ["--perms", "01777", "--size", size, "--tmpfs", p]))
        for p in layout.sealed:
            ops.append((p, 0, ["--size", str(1 << 20), "--tmpfs", p]))
        binds: list[str] = []
        for p in layout.read_only:
            if under_hidden(p):  # elsewhere it is visible (read-only) already
                ops.append((p, 1, ["--ro-bind", p, p]))
                binds.append(p)
        for p in layout.writable:
            ops.append((p, 1, ["--bind", p, p]))
            binds.append(p)
        # The folders between an emptied one and a path mounted inside it, made open to all
        # (bwrap would make them 0700, closed to a kernel that is not root).
        made = {p for p, _, _ in ops}
        for p in [*binds, *hidden]:
            for parent in _parents_below(p, hidden):
                if parent not in made:
                    made.add(parent)
                    ops.append((parent, 1, ["--perms", "0755", "--dir", parent]))
        # Parents before children: a folder emptied, then a path inside it bound back (the
        # Python install under the home folder), then a path inside that emptied again (the
        # store inside the root).
        ops.sort(key=lambda op: (_depth(op[0]), op[1]))
        if not any(_inside(cwd, w) for w in layout.writable) and under_hidden(cwd):
            cwd = layout.writable[0] if layout.writable else "/"
        base = self._base_args(privileged=privileged, exec_=privileged and info_fd is None)
        argv = [bwrap, *base, "--ro-bind", "/", "/", "--dev", "/dev"]
        shm = str(max(self.shm_size, 4096))
        argv += ["--perms", "01777", "--size", shm, "--tmpfs", "/dev/shm", "--proc", "/proc"]
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


_PATHS = (
    "import json, sys; print(json.dumps([sys.prefix, sys.exec_prefix, sys.base_prefix, "
    "sys.base_exec_prefix, *[p for p in sys.path[1:] if p]]))"
)
_paths_seen: dict[tuple[str, str], list[str]] = {}


def python_paths(kernel_cmd: list[str], env: dict[str, str] | None = None) -> list[str]:
    """Folders the kernel's Python needs: what that interpreter, started in / with the kernel's
    environment, puts on its path (prefixes, standard library, site-packages, PYTHONPATH, .pth
    and editable installs) — never the folder the server was started from, which this
    process's own sys.path begins with under `python -m jupyter ...`."""
    exe = shutil.which(kernel_cmd[0]) if kernel_cmd else None
    exe = exe or sys.executable
    env = dict(os.environ if env is None else env)
    key = (exe, env.get("PYTHONPATH", ""))
    if key not in _paths_seen:
        paths: list[str] = []
        try:
            done = subprocess.run(
                [exe, "-c", _PATHS], env=env, cwd="/", capture_output=True, text=True, timeout=60
            )
            paths = [p for p in json.loads(done.stdout) if os.path.isabs(p)]
        except (OSError, ValueError, subprocess.SubprocessError):
            log.warning("could not ask %s for its path; binding this interpreter's", exe)
            paths = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
            paths += [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        real = Path(exe).resolve()
        paths.append(str(real.parent.parent))  # <prefix>/bin/python -> <prefix>
        _paths_seen[key] = sorted(set(paths))
    return list(_paths_seen[key])


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


def _parents_below(path: str, hidden: list[str]) -> list[str]:
    """The folders strictly between the deepest emptied folder holding `path` and `path`."""
    holders = [h for h in hidden if h != path and _inside(path, h)]
    if not holders:
        return []
    top = max(holders, key=len)
    out = []
    parent = os.path.dirname(path)
    while parent != top and _inside(parent, top):
        out.append(parent)
        parent = os.path.dirname(parent)
    return out[::-1]


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
    out["tmp_size"] = sandbox.tmp_size
    out["shm_size"] = sandbox.shm_size
    return out
