"""What a Prime kernel does before anything else: take its capability, and harden itself.

The provisioner hands each kernel a small JSON document through a pipe whose descriptor is
named by `PRIME_BOOT_FD`: the daemon's URL, the kernel's capability token, the unpickling
allow-list and limit, and for agent kernels the resource limits. The token never enters an
environment (`/proc/<pid>/environ` shows a process's initial environment to anyone who may
read it) nor a command line. A kernel a gateway started for the daemon cannot be handed a pipe:
it gets the same document in `KERNEL_PRIME_BOOT` (what gateways forward), which is taken out of
the environment here, before any code of the agent runs, so that its subprocesses do not inherit
it (and the kernel is made non-dumpable, which hides its initial environment in /proc from other
processes of its user). Stdlib only: it runs before IPython is imported.

Hardening, every Prime kernel: non-dumpable (other processes of the same user cannot read its
memory, environment or descriptors through /proc, nor ptrace it). Agent kernels also: no new
privileges, no capabilities at all (root included, so non-dumpable holds against other root
agents), and rlimits set with soft = hard so that agent code cannot raise them again.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

from ..protocol.wire import BOOT_ENV

BOOT_FD_ENV = "PRIME_BOOT_FD"

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_V3 = 0x20080522

_RLIMITS = {
    "data": "RLIMIT_DATA",
    "as": "RLIMIT_AS",
    "cpu": "RLIMIT_CPU",
    "fsize": "RLIMIT_FSIZE",
    "nproc": "RLIMIT_NPROC",
    "core": "RLIMIT_CORE",
}


def read(fd: int | None = None) -> dict[str, Any] | None:
    """The boot document, read once from `fd` or the descriptor `PRIME_BOOT_FD` names (the
    pipe is closed after), else from `KERNEL_PRIME_BOOT`; None without one."""
    named = os.environ.pop(BOOT_FD_ENV, None)
    inline = os.environ.pop(BOOT_ENV, None)
    if fd is None and named is None:
        return _parse(inline.encode()) if inline else None
    chunks = []
    try:
        n = fd if fd is not None else int(named or "")
        while chunk := os.read(n, 65536):
            chunks.append(chunk)
        os.close(n)
    except (ValueError, OSError):
        return None
    return _parse(b"".join(chunks))


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def apply(doc: dict[str, Any]) -> None:
    """Harden this process as `doc` says and connect the client to the daemon."""
    from . import client, safe_pickle

    set_nondumpable()
    if doc.get("agent"):
        drop_privileges()
        set_limits(doc.get("limits") or {})
    safe_pickle.allow(*doc.get("unpickle_allow") or ())
    if isinstance(doc.get("unpickle_max_bytes"), int):
        safe_pickle.set_limits(max_bytes=doc["unpickle_max_bytes"])
    client.connect(str(doc.get("url") or ""), str(doc.get("token") or ""))


def boot() -> None:
    """Run first by `python -m prime_kernel.kernel`."""
    doc = read()
    if doc is not None:
        apply(doc)


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def set_nondumpable() -> None:
    if sys.platform.startswith("linux"):
        _libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def become(uid: int, gid: int) -> None:
    """Drop from root to the host user `uid` (group `gid`, no others) for good, as setpriv
    does for a kernel started from its command: no new privileges, an empty bounding set
    (dropped while root may still do it), then the ids, which clear every capability."""
    libc = _libc()
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _drop_bounding_set(libc)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise OSError(f"could not become uid {uid}, gid {gid}")


def _drop_bounding_set(libc: Any) -> None:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 40
    # Fails (EPERM) without CAP_SETPCAP, i.e. when the sandbox dropped everything already.
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)


def drop_privileges() -> None:
    """No new privileges (setuid binaries stay unprivileged) and no capabilities: the
    bounding set emptied first, so that exec cannot give uid 0 its capabilities back."""
    if not sys.platform.startswith("linux"):
        return
    libc = _libc()
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _drop_bounding_set(libc)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(_CAP_V3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2 words: all zero
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed: could not drop capabilities")


def set_limits(limits: dict[str, int]) -> None:
    import resource

    for key, value in limits.items():
        name = _RLIMITS.get(key)
        if name is None or not hasattr(resource, name):
            continue
        which = getattr(resource, name)
        _, hard = resource.getrlimit(which)
        # Never above what this process already has (raising a hard limit needs privilege).
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
