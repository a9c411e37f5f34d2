"""Shared fixtures: a real jupyter_server with the Prime extension, real kernels, and the
deterministic `scripted/*` litellm provider."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import shutil
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError
from traitlets.config import Config

import prime_kernel
from prime_kernel.daemon.daemon import SERVICES, Daemon
from prime_kernel.models import scripted
from tests.procs import descendants, disposition

pytest_plugins = ["pytest_jupyter.jupyter_server"]

KERNELSPEC = Path(prime_kernel.__file__).parent / "kernelspecs" / "prime-agent"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")


@pytest.fixture
def prime_config() -> dict[str, Any]:
    """Daemon settings for a test; override the fixture to change them."""
    return {
        # No warm kernel: most tests start one session or none, and a pool kernel is started
        # (and waited for at the daemon's stop) even by a test that never uses it, then once
        # more to refill the pool — 2-3 s of a test's teardown on a loaded machine. The
        # tests that set pool_size 1 keep a session taking a warm kernel end to end.
        "pool_size": 0,
        "max_concurrent": 4,
        "cell_timeout": 60.0,
        "keep_root_kernel": 30.0,
        "default_model": "scripted/echo",
    }


def by_class(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`settings` (`prime_config`'s flat names) each under the daemon's class that reads it,
    so that no test spells a setting by a deprecated name (an unknown name stays the Daemon's,
    where traitlets warns about it)."""
    sections: dict[str, dict[str, Any]] = {}
    for name, value in settings.items():
        owner = next((c for c in SERVICES if name in c.class_traits(config=True)), Daemon)
        sections.setdefault(owner.__name__, {})[name] = value
    return sections


def server_config(settings: dict[str, Any], **sections: dict[str, Any]) -> Config:
    """A test server's config: the Prime extension on, `settings` where they are read
    (`by_class`) and the other `sections` as given."""
    config = Config({"ServerApp": {"jpserver_extensions": {"prime_kernel": True}}})
    for cls, values in [*by_class(settings).items(), *sections.items()]:
        config[cls].update(values)
    return config


@pytest.fixture
def jp_server_config(prime_config: dict[str, Any]) -> Config:
    return server_config(prime_config)


@pytest.fixture
def prime_kernelspec(jp_data_dir: Path) -> Path:
    """The "Prime Agent" kernelspec, where the test server's kernelspec manager finds it."""
    target = jp_data_dir / "kernels" / "prime-agent"
    shutil.copytree(KERNELSPEC, target, dirs_exist_ok=True)
    return target


@pytest.fixture(autouse=True)
def _scripts() -> None:
    scripted.register_script("echo", [{"text": "echo"}])


@pytest.fixture
def daemon(
    prime_kernelspec: Path, jp_serverapp: Any, http_server_client: Any, jp_asyncio_loop: Any
) -> Iterator[Daemon]:
    """The running daemon of a real jupyter_server listening on a real port.

    Async tests run on `jp_asyncio_loop` (pytest-jupyter's runner), the loop the server uses.
    """
    app = jp_serverapp
    jp_asyncio_loop.run_until_complete(app.extension_manager.start_all_extensions())
    d: Daemon = app.web_app.settings["prime_daemon"]
    yield d
    jp_asyncio_loop.run_until_complete(app.extension_manager.stop_all_extensions())
    # The kernels left (notebooks') are killed, not asked to shut down as the server's cleanup
    # would: a kernel takes 1-2 s to exit on a loaded machine, and no test is about that here
    # (tests/security/test_lifecycle.py and the REST DELETE tests ask for it themselves).
    jp_asyncio_loop.run_until_complete(app.kernel_manager.shutdown_all(now=True))


@pytest.fixture
def script() -> Callable[..., str]:
    """Register a scripted model for this test: `script(turns, tools=True) -> model name`."""
    counter = iter(range(1_000_000))

    def make(turns: list[Any], *, tools: bool = True, name: str | None = None) -> str:
        return scripted.register_script(
            name or f"t{os.getpid()}_{next(counter)}_{id(turns)}", turns, tools=tools
        )

    return make


class UserKernel:
    """A kernel a person would use: started by the server, driven by a frontend-like client."""

    def __init__(self, daemon: Daemon, kernel_id: str) -> None:
        from prime_kernel.daemon.kernels import KernelRunner

        self.kernel_id = kernel_id
        assert daemon.kernel_manager is not None
        self.runner = KernelRunner(daemon.kernel_manager, kernel_id)

    async def run(self, code: str, timeout: float = 120) -> Any:
        return await self.runner.execute(code, timeout=timeout)

    async def value(self, code: str, timeout: float = 120) -> str:
        """Run `code` and return the text/plain of its result (raising on errors)."""
        result = await self.run(code, timeout)
        for out in result.outputs:
            if out["output_type"] == "error":
                raise AssertionError("\n".join(out["traceback"]))
        for out in result.outputs:
            if out["output_type"] == "execute_result":
                return str(out["data"]["text/plain"])
        return "".join(o.get("text", "") for o in result.outputs if o["output_type"] == "stream")


async def grant_capability(jp_fetch: Any, kernel: UserKernel) -> dict[str, Any]:
    """Do what JupyterLab's Agents extension does when a kernel runs `%load_ext
    prime_kernel`: ask the server for a capability as the user and send it over the comm."""
    from prime_kernel.kernel.capability import TARGET

    comm_id = (
        await kernel.value(
            "from comm import get_comm_manager as __g\n"
            f"[c.comm_id for c in __g().comms.values() if c.target_name == {TARGET!r}][-1]"
        )
    ).strip("'")
    resp = await jp_fetch(
        "api",
        "prime",
        "capability",
        method="POST",
        body=json.dumps({"kernel_id": kernel.kernel_id}),
    )
    grant = json.loads(resp.body)
    client = kernel.runner.client
    msg = client.session.msg(
        "comm_msg", {"comm_id": comm_id, "data": {"url": grant["url"], "token": grant["token"]}}
    )
    client.shell_channel.send(msg)
    return dict(grant)


@pytest.fixture
def user_kernel(daemon: Daemon, jp_asyncio_loop: Any) -> Iterator[Callable[..., Any]]:
    """Start kernels as the Jupyter frontend would (`kernel_name` defaults to Prime Agent)."""
    started: list[UserKernel] = []

    async def start(kernel_name: str = "prime-agent") -> UserKernel:
        assert daemon.kernel_manager is not None
        kernel_id = await daemon.kernel_manager.start_kernel(kernel_name=kernel_name)
        kernel = UserKernel(daemon, kernel_id)
        await kernel.runner.start()
        started.append(kernel)
        return kernel

    yield start
    for kernel in started:
        jp_asyncio_loop.run_until_complete(kernel.runner.stop())


# Agent (or notebook) code that sends a raw request to the daemon's kernel API with this
# kernel's own capability (or `token=`), as forging code would: `raw_request(method, path,
# body=None, token=None) -> (status, json body)`. Prepend it to a cell's code.
RAW_REQUEST = """
def raw_request(method, path, body=None, token=None):
    import http.client, json as _json, socket, urllib.parse
    from prime_kernel.kernel.client import credentials
    url, own = credentials()
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection("localhost", timeout=60)
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(urllib.parse.unquote(parts.netloc))
    conn.sock = sock
    headers = {"X-Prime-Token": own if token is None else token}
    if isinstance(body, bytes):
        data, headers["Content-Type"] = body, "application/octet-stream"
    else:
        data = None if body is None else _json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, parts.path.rstrip("/") + "/api/prime/kernel/" + path, data, headers)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, (_json.loads(payload) if payload else None)
"""


async def wait_for(
    predicate: Callable[[], Any], timeout: float = 60, what: str = "the condition"
) -> None:
    """Wait until `predicate()` (a value, or an awaitable of one) is true: for states that
    only a poll can read (a process table, a listing); an event, where there is one, is
    better awaited itself."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{what} was not met within {timeout} s")
        await asyncio.sleep(0.05)  # the poll's period


def until_opened(gate: Path, then: str = "") -> str:
    """Agent code that waits until the test opens `gate` (creates the file), then runs
    `then`: the test ends the cell when it has seen what it waited for, where a sleep would
    guess how long that takes (too short under load, too long otherwise)."""
    wait = f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.05)"  # the poll's period
    return f"import os, time\n{wait}\n{then}"


async def cell_runs(daemon: Daemon, session_id: str, timeout: float = 60) -> None:
    """Wait until the session's kernel runs its cell: our cell is in flight and the kernel
    process catches SIGINT, as an ipykernel does only while it handles a request (an
    interrupt or a cancel sent earlier would find the cell not started yet)."""

    launcher = daemon.launcher
    assert launcher is not None

    def running() -> bool:
        live = daemon.registry.live.get(session_id)
        runner = live.runner if live else None
        if runner is None or not runner.busy:
            return False
        pid = launcher.record(runner.kernel_id)["pid"]
        return pid is not None and any(disposition(p) == "caught" for p in [pid, *descendants(pid)])

    await wait_for(running, timeout, f"a cell running in session {session_id}'s kernel")


async def events(daemon: Daemon, session_id: str, *kinds: str) -> list[dict[str, Any]]:
    """A session's trajectory (only `kinds`, if given), read from the store."""
    return await daemon.store.events(session_id, kinds=kinds or None)


def agent_records(daemon: Daemon) -> list[Any]:
    return [r for r in daemon.registry if r.is_agent]


# -- the user REST API, as the tests call it -----------------------------------------------
async def start_session(jp_fetch: Any, prompt: str, **options: Any) -> str:
    """POST /api/prime/sessions as the user; the new session's id."""
    resp = await jp_fetch(
        "api", "prime", "sessions", method="POST", body=json.dumps({"prompt": prompt, **options})
    )
    return str(json.loads(resp.body)["id"])


async def get_session(jp_fetch: Any, session_id: str) -> dict[str, Any]:
    """GET /api/prime/sessions/{id}: the session's record as the user sees it."""
    return dict(json.loads((await jp_fetch("api", "prime", "sessions", session_id)).body))


async def post_message(
    jp_fetch: Any, session_id: str, message: str, **fields: Any
) -> dict[str, Any]:
    """POST /api/prime/sessions/{id}/messages as the user; the receipt."""
    resp = await jp_fetch(
        "api",
        "prime",
        "sessions",
        session_id,
        "messages",
        method="POST",
        body=json.dumps({"message": message, **fields}),
    )
    return dict(json.loads(resp.body))


async def fetch_error(request: Awaitable[Any]) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of a REST call that must fail."""
    with pytest.raises(HTTPClientError) as info:
        await request
    return info.value.code, json.loads(info.value.response.body)
