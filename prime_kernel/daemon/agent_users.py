"""Host users for agent kernels when the server runs as root.

An agent kernel of a server running as root ran as root on the host, in the sandbox: Linux
exempts uid 0 from RLIMIT_NPROC (600 processes started with a limit of 512), and a user
namespace's uid 65534 is still root outside it. So, when the server is root, each agent kernel
runs as a host uid of its own, taken from a range no account uses (`c.Sandbox.first_uid`,
`c.Sandbox.uids`) and held, for the kernel's life, by a lock file only root can reach (two
servers never hand out the same uid). Every agent kernel also has one group (`agent_gid`).

What a kernel must write is made writable for it, and nothing else: its own folder of sockets
(chowned to it), its connection file (chowned to it, read-only in the sandbox), the daemon's
Unix socket (group-writable for the agents' group), and the server root — where agents work —
through a POSIX ACL granting the agents' group read and write on every folder and file under
it (and, by default ACLs, on whatever is made there later), the store excepted. The ACL is
written as the `system.posix_acl_*` extended attributes directly (no `setfacl` needed).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import select
import signal
import stat
import struct
import tempfile
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

# POSIX ACL extended attributes (linux/posix_acl_xattr.h).
_ACCESS = "system.posix_acl_access"
_DEFAULT = "system.posix_acl_default"
_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_UNDEFINED = 0xFFFFFFFF


class AgentUsers:
    """The uids handed to agent kernels, one per kernel, and what is shared with them."""

    def __init__(self, first_uid: int, count: int, gid: int, lock_dir: Path | None = None) -> None:
        self.first_uid = first_uid
        self.count = count
        self.gid = gid
        self.lock_dir = lock_dir or _lock_dir()
        self._held: dict[str, tuple[int, int]] = {}  # kernel id -> (uid, lock fd)
        self._lock = threading.Lock()
        self._shared: set[str] = set()
        self._share_lock = threading.Lock()

    # -- uids ---------------------------------------------------------------------------------
    def take(self, kernel_id: str) -> int:
        """A uid for the kernel (the same one again for a kernel restarted under its id)."""
        with self._lock:
            if kernel_id in self._held:
                return self._held[kernel_id][0]
            mine = {uid for uid, _ in self._held.values()}
            for uid in range(self.first_uid, self.first_uid + self.count):
                if uid in mine:
                    continue
                fd = os.open(
                    self.lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
                )
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)  # another server's kernel has it
                    continue
                # Asked once the lock is ours, not of every uid on the way: the account
                # database is read whole per question, and the uids before a free one are
                # mostly other servers' (their locks refuse us first).
                if _is_account(uid):
                    os.close(fd)
                    continue
                self._held[kernel_id] = (uid, fd)
                return uid
        raise RuntimeError(
            f"no free uid for an agent kernel in {self.first_uid}..."
            f"{self.first_uid + self.count - 1} (c.Sandbox.first_uid, c.Sandbox.uids)"
        )

    def give_back(self, kernel_id: str) -> None:
        """Free the kernel's uid for the next kernel (of any server), once no process of it is
        left. The kernel's end is seen when its outermost process ends; the sandbox's other
        processes (a fork bomb's) are still being killed then, and one left running would
        share the uid, and its process limit, with the next kernel given it."""
        with self._lock:
            held = self._held.pop(kernel_id, None)
        if held is None:
            return
        uid, fd = held
        left = end_processes(uid)
        if left:
            # Kept out of circulation (the lock stays held) rather than shared.
            log.error("uid %d kept: its processes %s did not end when killed", uid, left)
            return
        os.close(fd)  # the lock goes with it

    # -- what a kernel must write ---------------------------------------------------------------
    def hand_over(self, uid: int, *paths: str) -> None:
        """Make `paths` (a kernel's own folder and files) the kernel's."""
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                os.chown(path, uid, self.gid, follow_symlinks=False)

    def open_to_group(self, path: str) -> None:
        """Let the agents' group use `path` (the daemon's socket: connecting needs write)."""
        with contextlib.suppress(FileNotFoundError):
            os.chown(path, -1, self.gid, follow_symlinks=False)
            os.chmod(path, 0o660)

    def share(self, root: str, skip: list[str]) -> None:
        """Once per folder (the server root, c.SandboxMounts.writable_paths): an ACL giving the
        agents' group read and write on every folder and file under `root` and on what is
        made there later (`skip`: folders left alone, the store)."""
        root = os.path.realpath(root)
        with self._share_lock:
            if root in self._shared:
                return
            self._shared.add(root)
            self._share(root, skip)

    def _share(self, root: str, skip: list[str]) -> None:
        started = time.monotonic()
        skipped = {os.path.realpath(s) for s in skip}
        done = failed = 0
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skipped]
            for path, is_dir in [
                (folder, True),
                *((os.path.join(folder, f), False) for f in files),
            ]:
                try:
                    grant(path, self.gid, folder=is_dir)
                    done += 1
                except OSError as e:
                    failed += 1
                    if e.errno in (errno.EOPNOTSUPP, errno.ENOTSUP) and path == root:
                        log.warning(
                            "the filesystem under %s has no POSIX ACLs: agent kernels (running "
                            "as their own uids) cannot write there",
                            root,
                        )
                        return
        log.info(
            "agent kernels' group %d may write under %s: %d entries in %.2f s (%d refused)",
            self.gid,
            root,
            done,
            time.monotonic() - started,
            failed,
        )


def end_processes(uid: int, timeout: float = 10.0) -> list[int]:
    """Kill every running process of `uid` until none is left (a killed process may have forked
    once more); the pids still running after `timeout` seconds. Zombies have ended already."""
    deadline = time.monotonic() + timeout
    while (pids := processes_of(uid)) and time.monotonic() < deadline:
        poll = select.poll()
        opened = []
        for pid in pids:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:  # ended since the listing
                continue
            opened.append(pidfd)
            # Checked again by its pidfd: the pid may have been reused since the listing.
            if pid in processes_of(uid, [pid]):
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            poll.register(pidfd, select.POLLIN)
        try:
            # A pidfd is readable once its process has ended.
            waiting = set(opened)
            while waiting and time.monotonic() < deadline:
                for ready, _ in poll.poll(max(0.0, deadline - time.monotonic()) * 1000):
                    waiting.discard(ready)
                    poll.unregister(ready)
        finally:
            for pidfd in opened:
                os.close(pidfd)
    return pids


def processes_of(uid: int, pids: list[int] | None = None) -> list[int]:
    """The processes (of `pids`, or all) running as `uid` (real, effective or saved)."""
    # Every kernel's end scans every process of the machine: each status is read raw and
    # two fields looked up, not the whole of it decoded and parsed (three times the CPU).
    found = []
    want = str(uid).encode()
    for pid in pids if pids is not None else [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            fd = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # ended meanwhile
            continue
        try:
            status = os.read(fd, 1 << 16)  # a few kB: read whole at once
        except OSError:
            continue
        finally:
            os.close(fd)
        ids = _field(status, b"Uid").split()[:3]
        if want in ids and _field(status, b"State")[:1] not in (b"Z", b"X"):
            found.append(pid)
    return found


def _field(status: bytes, name: bytes) -> bytes:
    """The value of the field `name` of a /proc/<pid>/status (the process's name, the first
    line, comes escaped: no line of it can pass for another field)."""
    start = status.find(b"\n" + name + b":")
    if start < 0:
        return b""
    start += len(name) + 2
    end = status.find(b"\n", start)
    return status[start : end if end >= 0 else len(status)].strip()


def grant(path: str, gid: int, *, folder: bool) -> None:
    """Add (or update) a named-group entry for `gid` to the ACL of `path` — rwx on a folder,
    rw (x where the owner has it) on a file — and, on a folder, to its default ACL too. A
    symbolic link is left alone (its target is not ours to change)."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return
    perms = 7 if folder or st.st_mode & 0o100 else 6
    os.setxattr(path, _ACCESS, _with_group(_read(path, _ACCESS, st.st_mode), gid, perms))
    if folder:
        default = _read(path, _DEFAULT, st.st_mode | 0o700)
        os.setxattr(path, _DEFAULT, _with_group(default, gid, 7))


def _read(path: str, name: str, mode: int) -> dict[tuple[int, int], int]:
    """The ACL `name` of `path` as {(tag, id): perms}; the one its mode bits mean if none."""
    try:
        data = os.getxattr(path, name, follow_symlinks=False)
    except OSError as e:
        if e.errno not in (errno.ENODATA, getattr(errno, "ENOATTR", errno.ENODATA)):
            raise
        data = b""
    entries: dict[tuple[int, int], int] = {}
    if len(data) >= 4 and struct.unpack_from("<I", data)[0] == _VERSION:
        for offset in range(4, len(data) - 7, 8):
            tag, perm, ident = struct.unpack_from("<HHI", data, offset)
            entries[(tag, ident)] = perm
    if not entries:
        entries = {
            (_USER_OBJ, _UNDEFINED): (mode >> 6) & 7,
            (_GROUP_OBJ, _UNDEFINED): (mode >> 3) & 7,
            (_OTHER, _UNDEFINED): mode & 7,
        }
    return entries


def _with_group(entries: dict[tuple[int, int], int], gid: int, perms: int) -> bytes:
    entries = dict(entries)
    entries[(_GROUP, gid)] = perms
    # The mask bounds every named and group entry: it must let the new one through.
    mask = entries.get((_MASK, _UNDEFINED), entries.get((_GROUP_OBJ, _UNDEFINED), 0))
    entries[(_MASK, _UNDEFINED)] = mask | perms
    ordered = sorted(entries.items(), key=lambda item: (item[0][0], item[0][1]))
    return struct.pack("<I", _VERSION) + b"".join(
        struct.pack("<HHI", tag, perm, ident) for (tag, ident), perm in ordered
    )


def _is_account(uid: int) -> bool:
    import pwd

    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def _lock_dir() -> Path:
    """Where the uid locks live: a folder only root can enter, shared by every server of the
    machine (so that two never hand out one uid)."""
    for base in ("/run/prime-agent", os.path.join(tempfile.gettempdir(), "prime-agent-0")):
        folder = Path(base) / "uids"
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            mine = [os.lstat(p) for p in (base, folder)]
        except OSError:
            continue
        if all(
            st.st_uid == 0 and not st.st_mode & 0o022 and stat.S_ISDIR(st.st_mode) for st in mine
        ):
            return folder
    raise RuntimeError("no private folder for the agent uids' locks (/run/prime-agent)")
