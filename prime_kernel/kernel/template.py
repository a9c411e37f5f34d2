"""The template local agent kernels are forked from.

    python -m prime_kernel.kernel.template FD SERVER_PID [ROOM]

Started by the daemon (prime_kernel/daemon/forkserver.py), it imports ipykernel, IPython and
the Prime kernel modules and builds the IPython shell once (`PrimeKernelApp.prepare`), then
forks a kernel per request: the child finishes a kernel's start (its sockets, threads and
history) in a few tens of milliseconds instead of importing everything again, and shares the
template's memory until it writes to it. The template stays single-threaded — a fork copies
only the forking thread, so every thread is started in the child — and holds no secret: each
kernel's boot document (its capability token) travels as a pipe it never reads.

Protocol on FD, a SOCK_SEQPACKET socket, one JSON document per message:

- template -> daemon, once it is ready: `{"ready": pid}`;
- daemon -> template: `{"id", "argv", "cwd", "env", "sandbox", "user"}` with two or three
  descriptors: the read end of the kernel's boot pipe, the write end of its ready pipe, and
  its log (its stdout and stderr; without one, the template's). `argv` is the kernel's
  command line (`python -m prime_kernel.kernel -f <connection file>`); `sandbox` the bwrap
  command of the kernel's sandbox with `PLACEHOLDER` inside, or null; `user` the host
  `[uid, gid]` the kernel drops to before anything else, or null;
- template -> daemon: `{"id", "pid"}` with a pidfd of the new process, or `{"id", "error"}`;
- template -> daemon: `{"exit": pid, "status": wait status}` for every child it reaps.

The kernel writes `ok` on its ready pipe once its sockets are bound, or `error: ...`.

Without a sandbox the child is the kernel. With one, the child is the kernel's handle on the
host (the process the daemon signals and watches): it starts bwrap with exactly the sandbox an
exec'd kernel gets, with `PLACEHOLDER` where the kernel would be, joins the sandbox's
namespaces (`setns`; it may: bwrap made them as this user), its PID namespace included, and
forks the kernel into them: the kernel sees the sandbox's /proc, where bwrap's init (pid 1,
which reaps what the kernel orphans) and the placeholder are the only other processes. The
handle, bwrap and the kernel share a process group: an interrupt reaches the kernel and its
children; the handle, bwrap and the placeholder ignore it, and an init gets only the signals
it handles.

Every process forked here shows the command line of the kernel it is (see `set_title`): what
`ps` shows, and what the daemon's recovery checks before it stops a leftover kernel.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
import threading
import traceback
from typing import Any

# Inside the sandbox until the kernel joins: says the sandbox is set up (a line on fd 4), then
# waits on fd 0, which the handle holds open, so that it ends with the handle. bwrap writes the
# sandbox's pid on fd 3 (--info-fd).
PLACEHOLDER = ["/bin/sh", "-c", "trap '' INT; echo >&4; exec cat 3>&- 4>&-"]
INFO_FD = 3
UP_FD = 4

# What a kernel imports while it starts, beyond what `prepare()` imports (measured with
# ipykernel 7 and IPython 8); one missing here only costs its import in every kernel.
PRELOAD = [
    "ipykernel.debugger",  # debugpy: a third of a kernel's start
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython.core.completerlib",
    "faulthandler",
    "tornado.locks",
    "tornado.platform.asyncio",
    "tornado.queues",
    "prime_kernel",
    "prime_kernel.kernel.capability",
    "prime_kernel.kernel.messaging",
    "prime_kernel.kernel.primitives",
    "prime_kernel.kernel.safe_pickle",
    "prime_kernel.kernel.snapshot",
]

_PR_SET_NAME = 15
_PR_SET_PDEATHSIG = 1
# setns order: the user namespace first (it gives the capabilities to join the others). The
# PID namespace applies to the children forked afterwards: the kernel.
_NAMESPACES = [
    ("user", 0x10000000),
    ("mnt", 0x00020000),
    ("ipc", 0x08000000),
    ("uts", 0x04000000),
    ("net", 0x40000000),
    ("cgroup", 0x02000000),
    ("pid", 0x20000000),
]

_libc: Any = None


def libc() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def set_title(argv: list[str]) -> None:
    """Make /proc/self/cmdline read `argv`: written over this process's own command line,
    which the template started with room for it (ROOM)."""
    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])  # fields 48 and 49: arg_start, arg_end
    data = b"\0".join(a.encode() for a in argv) + b"\0"
    if len(data) > end - start:
        raise OSError(f"no room for a command line of {len(data)} bytes")
    ctypes.memmove(start, data + b"\0" * (end - start - len(data)), end - start)
    libc().prctl(_PR_SET_NAME, os.path.basename(argv[0]).encode()[:15], 0, 0, 0)


class Ready:
    """The write end of a kernel's ready pipe: `ok` once its sockets are bound, or what went
    wrong, and which process failed (`sandbox`: before the kernel ran; `kernel`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def ok(self) -> None:
        os.write(self.fd, b"ok")
        self.close()

    def fail(self, where: str, e: BaseException) -> None:
        if self.fd < 0:
            return
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        with contextlib.suppress(OSError):
            os.write(self.fd, f"error:{where}:{detail}".encode()[:4000])
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def die_with_parent(parent: int) -> None:
    """SIGKILL when the parent ends. `parent` is a pidfd of it, through which we see whether
    it ended already (its pid says nothing from inside a new PID namespace)."""
    libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    readable, _, _ = select.select([parent], [], [], 0)
    os.close(parent)
    if readable:
        os._exit(1)


# -- the template -------------------------------------------------------------------------------
def main(argv: list[str]) -> None:
    fd, server = int(argv[0]), int(argv[1])
    from .boot import set_nondumpable

    # It holds nothing secret, but other processes of the user have no business in it; and it
    # goes with the server (its kernels watch the server themselves).
    set_nondumpable()
    die_with_parent(os.pidfd_open(server))
    sock = socket.socket(fileno=fd)
    # Kernels reach the server's death through this: readable once the server has exited.
    server_fd = os.pidfd_open(server)
    app = preload()
    set_title([sys.executable, "-m", "prime_kernel.kernel.template"])
    sock.send(json.dumps({"ready": os.getpid()}).encode())
    serve(sock, server_fd, app)


def preload() -> Any:
    import gc
    import importlib

    from traitlets.config import Config

    from .app import PrimeKernelApp

    for name in PRELOAD:
        importlib.import_module(name)
    config = Config()
    config.InteractiveShellApp.extensions = ["prime_kernel"]
    app = PrimeKernelApp.instance(config=config)
    app.prepare()
    # Objects made so far stay where they are: the collector no longer walks (and so writes
    # to) the pages every kernel shares with the template.
    gc.collect()
    gc.freeze()
    return app


def serve(sock: socket.socket, server_fd: int, app: Any) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    template_fds = [wake_r, wake_w]
    while True:
        readable, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
        _reap(sock)
        if sock.fileno() in readable:
            try:
                data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
            except ConnectionError:
                return
            if not data:  # the daemon is gone
                return
            for n in fds:  # received descriptors are inheritable: bwrap must not get them
                os.set_inheritable(n, False)
            request = json.loads(data)
            if len(fds) not in (2, 3):
                _send(sock, {"id": request.get("id"), "error": "expected 2 or 3 descriptors"})
                for n in fds:
                    os.close(n)
                continue
            try:
                _fork(sock, request, fds, server_fd, template_fds, app)
            finally:
                for n in fds:
                    os.close(n)


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exit": pid, "status": status})


def _send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    with contextlib.suppress(OSError):  # the daemon is gone: the loop ends at its next read
        if fds:
            socket.send_fds(sock, [data], fds)
        else:
            sock.send(data)


def _fork(
    sock: socket.socket,
    request: dict[str, Any],
    fds: list[int],
    server_fd: int,
    template_fds: list[int],
    app: Any,
) -> None:
    if len(os.listdir("/proc/self/task")) != 1:
        # A library started a thread: forking now could copy a lock some thread holds.
        _send(sock, {"id": request["id"], "error": "the template is no longer single-threaded"})
        raise SystemExit(1)
    boot_fd, ready_fd = fds[:2]
    pid = os.fork()
    if pid == 0:
        os.close(sock.detach())
        if len(fds) > 2:  # its own log: stdout and stderr, for it and what it starts
            os.dup2(fds[2], 1)
            os.dup2(fds[2], 2)
            os.close(fds[2])
        _child(request, boot_fd, Ready(ready_fd), server_fd, template_fds, app)
    pidfd = os.pidfd_open(pid)
    try:
        _send(sock, {"id": request["id"], "pid": pid}, [pidfd])
    finally:
        os.close(pidfd)


# -- the forked child -----------------------------------------------------------------------
def _child(
    request: dict[str, Any],
    boot_fd: int,
    ready: Ready,
    server_fd: int,
    template_fds: list[int],
    app: Any,
) -> None:
    """Never returns."""
    code = 1
    sandboxed = bool(request.get("sandbox"))
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for n in template_fds:
            os.close(n)
        os.setsid()
        set_title(request["argv"])
        if sandboxed:
            code = _handle(request, boot_fd, ready, server_fd, app)
        else:
            code = _kernel(request, boot_fd, ready, server_fd, app)
    except BaseException as e:
        ready.fail("sandbox" if sandboxed else "kernel", e)
    finally:
        os._exit(code)


def _kernel(
    request: dict[str, Any], boot_fd: int, ready: Ready, server_fd: int | None, app: Any
) -> int:
    """Become the kernel: its environment, hardening and capability, then its start."""
    from . import boot

    started_in = os.getcwd() if os.path.isdir(os.getcwd()) else ""
    # Only what it needs open: the pipes to the daemon (and, outside a sandbox, the server's
    # pidfd); nothing of the template's, the handle's or the server's reaches agent code.
    keep = {boot_fd, ready.fd} | ({server_fd} if server_fd is not None else set())
    close_inherited(keep)
    if request.get("user"):
        uid, gid = request["user"]
        boot.become(int(uid), int(gid))
    os.environ.clear()
    os.environ.update(request["env"])
    cwd = request["cwd"]
    os.chdir(cwd)
    # `python -m` put the folder it started in first on sys.path: this kernel's, as an exec'd
    # kernel would have it.
    if sys.path and started_in and sys.path[0] == started_in:
        sys.path[0] = os.getcwd()
    argv = request["argv"]
    sys.argv = [os.path.join(os.path.dirname(__file__), "__main__.py"), *argv[3:]]
    doc = boot.read(boot_fd)
    if doc is not None:
        boot.apply(doc)
    if server_fd is not None:
        _watch(server_fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    app.finish(argv[argv.index("-f") + 1])
    ready.ok()
    try:
        app.start()
    finally:
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def close_inherited(keep: set[int]) -> None:
    """Close every descriptor above 2 but those in `keep`."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):  # the listing's own, closed already
                os.close(fd)


def _watch(server_fd: int) -> None:
    """End with the server, as a kernel it started would (ipykernel's parent poller watches
    the parent, which is the template here)."""

    def run() -> None:
        select.select([server_fd], [], [])
        os._exit(1)

    threading.Thread(target=run, name="prime-server-watch", daemon=True).start()


def _handle(request: dict[str, Any], boot_fd: int, ready: Ready, server_fd: int, app: Any) -> int:
    """The sandboxed kernel's handle on the host: start its sandbox, join it, fork the kernel
    into it, then wait, and end as the kernel ended."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are for the kernel
    info_r, info_w = os.pipe()
    up_r, up_w = os.pipe()
    hold_r, hold_w = os.pipe()  # the placeholder's stdin: open as long as this process is
    argv = request["sandbox"]
    bwrap = os.posix_spawn(
        argv[0],
        argv,
        request["env"],
        file_actions=[
            (os.POSIX_SPAWN_DUP2, hold_r, 0),
            (os.POSIX_SPAWN_DUP2, info_w, INFO_FD),
            (os.POSIX_SPAWN_DUP2, up_w, UP_FD),
        ],
    )
    for n in (info_w, up_w, hold_r):
        os.close(n)
    info = _read_all(info_r)
    if not _read_all(up_r):
        _, status = os.waitpid(bwrap, 0)
        raise RuntimeError(f"the sandbox did not start (bwrap: exit status {status >> 8})")
    _join(int(json.loads(info)["child-pid"]))
    me = os.pidfd_open(os.getpid())
    kernel = os.fork()  # born in the sandbox's PID namespace, a child of this process
    if kernel == 0:
        code = 1
        try:
            for n in (server_fd, hold_w):
                os.close(n)
            die_with_parent(me)
            code = _kernel(request, boot_fd, ready, None, app)
        except BaseException as e:
            ready.fail("kernel", e)
        finally:
            os._exit(code)
    ready.close()
    for n in (boot_fd, me):
        os.close(n)
    kernel_fd = os.pidfd_open(kernel)
    bwrap_fd = os.pidfd_open(bwrap)
    readable, _, _ = select.select([kernel_fd, bwrap_fd, server_fd], [], [])
    if kernel_fd not in readable:
        # The server (or the sandbox) ended first: end the kernel.
        with contextlib.suppress(OSError):
            os.kill(kernel, signal.SIGKILL)
    _, status = os.waitpid(kernel, 0)
    with contextlib.suppress(OSError):
        os.kill(bwrap, signal.SIGKILL)  # --die-with-parent ends the sandbox's processes
    os.waitpid(bwrap, 0)
    return _end_as(status)


def _end_as(status: int) -> int:
    """This process's exit, told as the kernel's: the same exit code, or the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _join(pid: int) -> None:
    """Enter the namespaces of process `pid` (its PID namespace: for the next child)."""
    opened = []
    for name, kind in _NAMESPACES:
        if os.stat(f"/proc/{pid}/ns/{name}").st_ino != os.stat(f"/proc/self/ns/{name}").st_ino:
            opened.append((os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY), kind, name))
    try:
        for fd, kind, name in opened:
            _check(libc().setns(fd, kind), f"joining the sandbox's {name} namespace")
    finally:
        for fd, _, _ in opened:
            os.close(fd)


if __name__ == "__main__":
    main(sys.argv[1:])
