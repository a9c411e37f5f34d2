"""Local agent kernels forked from a template process, for fast fan-out.

A kernel started the usual way pays ~0.7 s of CPU importing ipykernel, IPython and the Prime
modules and building its shell. A template (prime_kernel/kernel/template.py) does that once;
each kernel is then forked from it and finishes its start in tens of milliseconds, sharing the
template's memory until it writes to it. The template runs the same Python in the same
environment as the kernels, and holds nothing secret.

The kernel stays an ordinary kernel of the server's kernel manager: the provisioner
(prime_kernel/provisioner.py) asks `ForkServer.fork()` instead of exec'ing the kernel command,
and gets back a `ForkedProcess`, which looks to jupyter_client like the `Popen` it would have
had: its death is seen through a pidfd (the process is the template's child, not ours), its exit
status comes from the template that reaps it, signals go through the pidfd or the process group.

Kernels outlive their template: a template that dies (or is killed) is started again and its
kernels run on; only the exit status of a kernel that ends after its template is unknown
(`LOST`). Templates end with the daemon (they hold their socket's other end) or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from . import private

log = logging.getLogger(__name__)

# The exit code given to a kernel whose template ended before it did: nothing reaps it for us.
LOST = 1
# Room in a template's command line for a kernel's (see template.set_title).
ROOM = 4096
# A template that ends this many times in WINDOW seconds is not started again for WINDOW.
RETRIES = 3
WINDOW = 60.0


class ForkError(RuntimeError):
    """The kernel could not be forked; it may still be started the usual way."""


class ForkedProcess:
    """A kernel process forked by a template, as `subprocess.Popen` looks to
    `LocalProvisioner`."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int, template: Template) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._template = template
        self._ended = asyncio.Event()
        self._started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # Retrieved here: no one may wait for a kernel whose start is abandoned.
        self._started.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._watch: asyncio.Task[None] | None = None

    async def started(self) -> None:
        """Until the kernel has bound its sockets (a client connecting earlier would wait for
        ZMQ's reconnect interval); RuntimeError if it failed to start."""
        await asyncio.shield(self._started)

    def poll(self) -> int | None:
        if self.returncode is None and not self._template.alive and self._gone():
            self._end(LOST)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        # LocalProvisioner calls it once poll() has a code; waiting is `ended()`.
        return self.poll()

    async def ended(self) -> int:
        while self.poll() is None:
            with contextlib.suppress(asyncio.TimeoutError):
                # Woken by the template's report; the timeout covers a template that died.
                await asyncio.wait_for(self._ended.wait(), 0.5)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        # As Popen: a process known to have ended is not signalled (nor an error).
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def follow_start(self, watcher: Coroutine[Any, Any, None]) -> None:
        """`watcher` reports the kernel's start (`start_ended`); held here while it runs."""
        self._watch = asyncio.ensure_future(watcher)

    def start_ended(self, error: BaseException | None) -> None:
        """The kernel bound its sockets (None), or failed to start."""
        if error is None:
            self._started.set_result(None)
        else:
            self._started.set_exception(error)

    def template_ended(self) -> None:
        """No exit status will come from the template: `ended()` polls the pidfd now."""
        self._ended.set()

    def _gone(self) -> bool:
        import select

        readable, _, _ = select.select([self._pidfd], [], [], 0)
        return bool(readable)

    def exited(self, status: int) -> None:
        """Its template reported its exit status."""
        self._end(os.waitstatus_to_exitcode(status))

    def _end(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._ended.set()


class Template:
    """One template process: the requests to it and the kernels it forked."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.python = python
        self.env = env
        self.pid = 0
        self.alive = False
        self.started = 0.0
        self._sock: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._replies: dict[int, asyncio.Future[tuple[dict[str, Any], list[int]]]] = {}
        self._children: dict[int, ForkedProcess] = {}
        self._next = 0
        # Called with the template when it ends.
        self.on_end: list[Callable[[Template], None]] = []

    async def start(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [
            self.python,
            "-m",
            "prime_kernel.kernel.template",
            str(theirs.fileno()),
            str(os.getpid()),
            " " * ROOM,
        ]

        def spawn() -> subprocess.Popen[bytes]:
            try:
                return subprocess.Popen(
                    argv,
                    env=self.env,
                    # Not the kernels' folder: `python -m` puts its working folder first on the
                    # import path, and agents write in theirs (a module they left there would
                    # be imported here, outside any sandbox). Each kernel moves to its own.
                    cwd=private.base(),
                    pass_fds=[theirs.fileno()],
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            finally:
                theirs.close()

        try:
            # In a thread: the loop serves meanwhile (Python lets go of the GIL while the child
            # execs; on the loop, this held requests up to a quarter second under load).
            self._process = await asyncio.to_thread(spawn)
        except BaseException:
            ours.close()  # a template started all the same ends when it sees this end closed
            raise
        self.pid = self._process.pid
        self.started = time.monotonic()
        self._sock = ours
        ours.setblocking(False)
        self._ready = loop.create_future()
        self.alive = True
        loop.add_reader(ours.fileno(), self._read)
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except BaseException:
            await self.close()
            raise

    async def fork(self, request: dict[str, Any], fds: list[int], timeout: float) -> ForkedProcess:
        if not self.alive or self._sock is None:
            raise ForkError("the kernel template has ended")
        self._next += 1
        number = self._next
        reply: asyncio.Future[tuple[dict[str, Any], list[int]]]
        reply = self._replies[number] = asyncio.get_running_loop().create_future()
        try:
            message = json.dumps({**request, "id": number}).encode()
            socket.send_fds(self._sock, [message], fds)
            answer, received = await asyncio.wait_for(reply, timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise ForkError(f"the kernel template did not answer ({e!r})") from e
        finally:
            self._replies.pop(number, None)
        if "error" in answer:
            raise ForkError(f"the kernel template refused: {answer['error']}")
        process = ForkedProcess(int(answer["pid"]), received[0], self)
        self._children[process.pid] = process
        return process

    def _read(self) -> None:
        assert self._sock is not None
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self._sock, 65536, 1)
            except BlockingIOError:
                return
            except OSError:
                data, fds = b"", []
            if not data:
                self._ended()
                return
            for fd in fds:  # received descriptors are inheritable: no process we start gets them
                os.set_inheritable(fd, False)
            message = json.loads(data)
            if "ready" in message:
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(None)
            elif "exit" in message:
                child = self._children.pop(int(message["exit"]), None)
                if child is not None:
                    child.exited(int(message["status"]))
            else:
                reply = self._replies.get(int(message.get("id", -1)))
                if reply is not None and not reply.done():
                    reply.set_result((message, fds))
                else:
                    for fd in fds:
                        os.close(fd)

    def _ended(self) -> None:
        """The template is gone: its kernels are watched through their pidfds alone."""
        if not self.alive:
            return
        self.alive = False
        assert self._sock is not None
        asyncio.get_running_loop().remove_reader(self._sock.fileno())
        self._sock.close()
        error = ForkError("the kernel template ended")
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(error)
        for reply in self._replies.values():
            if not reply.done():
                reply.set_exception(error)
        for child in self._children.values():
            child.template_ended()  # it finds out by its pidfd now
        self._children.clear()
        if self._process is not None:
            _reap(self._process)
        for callback in self.on_end:
            callback(self)

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process else None

    async def close(self) -> None:
        """End the template (its kernels run on)."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(OSError):
                self._process.terminate()
        if self.alive:
            self._ended()


@dataclass(frozen=True)
class Key:
    """Kernels of one key fork from the same template: same Python and home."""

    python: str
    sandboxed: bool


class ForkServer:
    """The templates of one daemon, started on first use and again when one ends."""

    def __init__(self, start_timeout: float = 120.0) -> None:
        self.start_timeout = start_timeout
        self._templates: dict[Key, Template] = {}
        self._starting: dict[Key, asyncio.Task[Template]] = {}
        self._env: dict[Key, dict[str, str]] = {}
        self._ends: dict[Key, list[float]] = {}
        # Kinds of kernel that cannot be forked here (why), e.g. a sandbox that cannot be joined.
        self._broken: dict[Key, str] = {}
        self._closed = False

    async def fork(
        self,
        *,
        python: str,
        cwd: str,
        env: dict[str, str],
        sandbox: list[str] | None,
        argv: list[str],
        boot_fd: int,
        log_fd: int | None = None,
        user: tuple[int, int] | None = None,
    ) -> ForkedProcess:
        """A kernel forked from the template for its kind; it finishes its start meanwhile
        (`ForkedProcess.started()`). `log_fd`: its stdout and stderr; `user`: the host
        (uid, gid) it drops to. ForkError: no kernel was started (start it the usual way)."""
        key = Key(python, sandbox is not None)
        template = await self._template(key, env)
        ready_r, ready_w = os.pipe()
        try:
            request = {"argv": argv, "cwd": cwd, "env": env, "sandbox": sandbox, "user": user}
            fds = [boot_fd, ready_w] + ([log_fd] if log_fd is not None else [])
            process = await template.fork(request, fds, self.start_timeout)
        except BaseException:
            os.close(ready_r)
            raise
        finally:
            os.close(ready_w)
        process.follow_start(self._watch_start(key, process, ready_r))
        return process

    async def _watch_start(self, key: Key, process: ForkedProcess, fd: int) -> None:
        try:
            message = await self._wait_ready(fd)
        finally:
            os.close(fd)
        if message == "ok":
            process.start_ended(None)
            return
        process.kill()
        where, _, detail = message.removeprefix("error:").partition(":")
        if where == "sandbox":
            self._broken[key] = f"a forked kernel could not enter its sandbox: {detail}"
            log.warning("%s; sandboxed kernels are started without a template", self._broken[key])
            error = RuntimeError(self._broken[key])
        else:
            code = await process.ended()
            error = RuntimeError(f"the forked kernel failed to start (exit {code}): {detail}")
        process.start_ended(error)

    async def _wait_ready(self, fd: int) -> str:
        """What the kernel wrote on its ready pipe (one write, smaller than PIPE_BUF)."""
        os.set_blocking(fd, False)
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                if not await _readable(fd, deadline - time.monotonic()):
                    return "error:kernel:no answer in time"
                continue
            return chunk.decode(errors="replace") or "error:kernel:it ended while starting"

    async def _template(self, key: Key, env: dict[str, str]) -> Template:
        if key in self._broken:
            raise ForkError(self._broken[key])
        template = self._templates.get(key)
        if template is not None and template.alive:
            return template
        recent = [t for t in self._ends.get(key, []) if time.monotonic() - t < WINDOW]
        if len(recent) >= RETRIES:
            raise ForkError(f"the kernel template ended {len(recent)} times in {WINDOW:.0f} s")
        self._env.setdefault(key, template_env(env, key.sandboxed))
        task = self._starting.get(key)
        if task is None:
            task = self._starting[key] = asyncio.ensure_future(self._start(key))
        try:
            return await asyncio.shield(task)
        except ForkError:
            raise
        except Exception as e:
            raise ForkError(f"the kernel template did not start: {e}") from e

    async def _start(self, key: Key) -> Template:
        try:
            template = Template(key.python, self._env[key])
            template.on_end.append(lambda t: self._template_ended(key, t))
            await template.start(self.start_timeout)
            self._templates[key] = template
            log.info("kernel template for %s started (pid %s)", key, template.pid)
            return template
        except BaseException:
            self._ends.setdefault(key, []).append(time.monotonic())
            raise
        finally:
            self._starting.pop(key, None)

    def _template_ended(self, key: Key, template: Template) -> None:
        if self._closed or self._templates.get(key) is not template:
            return
        self._ends.setdefault(key, []).append(time.monotonic())
        code = template.returncode
        log.warning("kernel template %s ended (%s); starting another", template.pid, code)
        # Warm again before the next kernel asks (kernels it forked run on).
        if key not in self._starting:
            self._starting[key] = asyncio.ensure_future(self._start(key))
            self._starting[key].add_done_callback(_quiet)

    def templates(self) -> list[Template]:
        return [t for t in self._templates.values() if t.alive]

    async def close(self) -> None:
        self._closed = True
        for task in list(self._starting.values()):
            task.cancel()
        await asyncio.gather(*self._starting.values(), return_exceptions=True)
        for template in list(self._templates.values()):
            await template.close()
        self._templates.clear()


def _reap(process: subprocess.Popen[bytes]) -> None:
    """Reap an ending process without blocking (its socket closes a moment before it exits)."""
    if process.poll() is None:
        asyncio.get_running_loop().call_later(0.1, _reap, process)


async def _readable(fd: int, timeout: float) -> bool:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, _settle, done)
    try:
        await asyncio.wait_for(done, max(timeout, 0))
        return True
    except asyncio.TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _quiet(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("the kernel template did not start again: %s", task.exception())


def template_env(kernel_env: dict[str, str], sandboxed: bool) -> dict[str, str]:
    """The template's environment: the kernels', less what is per kernel. A sandboxed kernel
    sees no home folder, so its template reads no IPython configuration either: it gets an
    empty IPython folder of its own (each kernel then moves to its own home's)."""
    env = {k: v for k, v in kernel_env.items() if not k.startswith("JPY_")}
    if sandboxed:
        folder = private.base() / "template-ipython"
        folder.mkdir(mode=0o700, exist_ok=True)
        env["IPYTHONDIR"] = str(folder)
    return env
