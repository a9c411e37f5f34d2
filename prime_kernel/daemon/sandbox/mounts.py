"""The filesystem an agent kernel sees in the sandbox, and the bubblewrap command line that
makes it.

The host's filesystem, read-only, with the home folder, the Jupyter runtime folder, the store,
/tmp, /var/tmp and /run replaced by empty folders of a bounded size (`tmp_size`; /dev/shm:
`shm_size`); the server root (and `writable_paths`) bound read-write; of the Python
installation only what the kernel's interpreter puts on its path, never the folder the server
was started from; the kernel's own private folder and the daemon's socket bound in.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from traitlets import Int, List, Unicode
from traitlets.config import LoggingConfigurable

log = logging.getLogger(__name__)


@dataclass
class Layout:
    """The filesystem an agent kernel sees, before it becomes bwrap arguments."""

    hidden: list[str] = field(default_factory=list)  # empty writable folders
    sealed: list[str] = field(default_factory=list)  # empty read-only folders
    read_only: list[str] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)


class SandboxMounts(LoggingConfigurable):
    """What an agent kernel's sandbox shows of the filesystem, and the sizes of its in-memory
    folders. Configure as `c.SandboxMounts.<trait>` (formerly `c.Sandbox.<trait>`)."""

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

    def argv(
        self,
        kernel_cmd: list[str],
        layout: Layout,
        *,
        cwd: str,
        bwrap: str,
        namespaces: list[str],
        info_fd: int | None = None,
    ) -> list[str]:
        """`kernel_cmd` wrapped in bwrap with `layout`, in the `namespaces` (bwrap's arguments
        for namespaces and capabilities: `Sandbox.command_for` gives them); with `info_fd`,
        bwrap writes the sandbox's pid there (a forked kernel joins the sandbox by it).

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
        argv = [bwrap, *namespaces, "--ro-bind", "/", "/", "--dev", "/dev"]
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
    """How many parts `path` (absolute and clean, as `_clean` makes it) has: len(Path(path).parts)
    without a Path parsed (two argv per kernel sort a few dozen of them each)."""
    return path.rstrip("/").count("/") + 1


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
