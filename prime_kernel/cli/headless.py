"""The daemon headless: a jupyter_server with only the prime_kernel extension, in this process,
for `prime-agent run` and `resume` when no server serves the root.

Its noise — server and daemon logs, warnings, what kernels print to their inherited stdout and
stderr (`Kernel is running over TCP without encryption…`), the embedded model's C library — goes
to a log file under `<root>/.prime/logs/`, named on failure. `quiet_process` does that at the
file-descriptor level, so child processes inherit it; the command's own output goes to the
terminal through the `Terminal` it hands back.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from ..util.files import private_dir
from .common import CLIError

if TYPE_CHECKING:
    from ..daemon.registry import SessionRegistry

# Log files kept per root (the oldest are removed).
KEEP_LOGS = 20

T = TypeVar("T")


@dataclass
class Terminal:
    """Where the command's own output goes."""

    out: TextIO
    err: TextIO


def new_log(root: Path) -> Path:
    """A fresh log file for this run in ROOT/.prime/logs/ (private), pruning old ones."""
    folder = private_dir(private_dir(root / ".prime") / "logs")
    logs = sorted(folder.glob("run-*.log"))
    for old in logs[: max(0, len(logs) - KEEP_LOGS + 1)]:
        with contextlib.suppress(OSError):
            old.unlink()
    return folder / f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"


@contextlib.contextmanager
def quiet_process(log: Path) -> Iterator[Terminal]:
    """Send everything this process and its children write to stdout and stderr to `log`;
    yield the terminal (the original streams) for the command's own output."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    out, err = (
        os.fdopen(os.dup(fd), "w", encoding=stream.encoding, errors="replace", buffering=1)
        for fd, stream in zip(saved, (sys.stdout, sys.stderr), strict=True)
    )
    try:
        yield Terminal(out, err)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        for stream in (out, err):
            with contextlib.suppress(OSError, ValueError):
                stream.close()


def _startup_file() -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()) / "prime-agent-startup.json"


def last_startup() -> float | None:
    """Seconds the last server this user's `run` started took to start, if one did."""
    try:
        seconds = json.loads(_startup_file().read_text(encoding="utf-8"))["seconds"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(seconds) if isinstance(seconds, (int, float)) else None


def record_startup(seconds: float) -> None:
    """Remember how long starting the server took, for the next `run` to say."""
    with contextlib.suppress(OSError):
        path = _startup_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"seconds": round(seconds, 2)}), encoding="utf-8")


def make_server(root: Path, extra_argv: list[str]) -> Any:
    """A jupyter_server with only our extension (no other installed extension is loaded), on a
    free loopback port, token-protected."""
    from jupyter_server.serverapp import ServerApp
    from traitlets import TraitError
    from traitlets.config import Config

    config = Config()
    config.ServerApp.jpserver_extensions = {"prime_kernel": True}
    app = ServerApp(config=config)
    argv = [
        f"--ServerApp.root_dir={root}",
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=0",
        "--ServerApp.open_browser=False",
        f"--IdentityProvider.token={secrets.token_hex(24)}",
        *extra_argv,
    ]
    try:
        app.initialize(argv=argv, find_extensions=False)
    except (SystemExit, TraitError):  # a setting it refused: its usage says which (logged)
        raise CLIError("the server refused a --config setting", exit_code=2) from None
    # traitlets leaves the logger at DEBUG and filters in its handlers: jupyter_server then
    # builds a record for each of its debug lines (one per message of every kernel it
    # watches) only to drop it. At the handlers' level, none is built.
    app.log.setLevel(min((h.level for h in app.log.handlers), default=app.log_level))
    return app


def serve(
    root: Path,
    extra_argv: list[str],
    main: Callable[[Any], Awaitable[T]],
    *,
    start: bool = True,
) -> T:
    """`main(app)` against a headless server in ROOT (`make_server(root, extra_argv)`), then
    the server shut down whatever `main` did: the daemon stopped (its sessions left
    resumable, its records flushed), its kernels shut down. With `start` (the default) the
    daemon is started first; without, `main` starts it (`start_daemon`), as `prime-agent run`
    does to be interruptible meanwhile. From the main thread (Ctrl-C is ignored while the
    server shuts down: kernels would be left running)."""
    app = make_server(root, extra_argv)

    async def run() -> T:
        if start:
            await start_daemon(app)
        return await main(app)

    try:
        return app.io_loop.run_sync(run)
    finally:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            app.io_loop.run_sync(lambda: shut_down(app))
        finally:
            signal.signal(signal.SIGINT, previous)


async def shut_down(app: Any) -> None:
    """jupyter_server's own shutdown, by its public steps: its server-info file removed (`run`
    writes one for the CLI's client), the extensions stopped (the daemon: sessions left
    resumable, records flushed), the kernels shut down, kernel websockets closed, the kernel
    manager's ZMQ context destroyed, the session database and the listening socket closed.
    `ServerApp.stop()` runs the same steps as a loop callback and would leave the loop running
    if one failed; here a failure is raised."""
    app.remove_server_info_file()
    app.remove_browser_open_files()
    await app.cleanup_extensions()
    await app.cleanup_kernels()
    close_all = getattr(app.kernel_websocket_connection_class, "close_all", None)
    if close_all is not None:  # a connection class without one has nothing to close
        await close_all()
    app.kernel_manager.__del__()  # what garbage collection would do: its ZMQ context goes
    app.session_manager.close()
    app.http_server.stop()


async def start_daemon(app: Any) -> Any:
    """Start the server's extensions; the daemon once it is ready."""
    try:
        # What jupyter_server does once its loop runs: only our extension is loaded.
        await app.extension_manager.start_all_extensions()
    except Exception as e:  # as jupyter_server does: logged; prime_unavailable says why
        app.log.error(e)
    daemon = app.web_app.settings.get("prime_daemon")
    if daemon is None or not daemon.started:
        error = app.web_app.settings.get("prime_unavailable")
        raise CLIError(error.message if error else "the daemon did not start", exit_code=1)
    return daemon


def busy_roots(registry: SessionRegistry) -> list[str]:
    """Root sessions the daemon (its `registry`) is running or about to run (others may have
    been handed to this server by other `prime-agent run`s on the same root)."""
    from ..protocol.states import SessionState

    going = (SessionState.ADMITTED, SessionState.RUNNING)
    return [
        live.id
        for live in registry.live.values()
        if live.record.is_agent and live.record.parent_id is None and live.state in going
    ]
