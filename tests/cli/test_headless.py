"""`serve`: a headless server in a folder, a coroutine run against it, and the server shut down
after it whatever the coroutine did (in this process, as `prime-agent run` and the benches use
it)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.cli.headless import serve, start_daemon
from prime_kernel.daemon.store import SqliteStore

ARGV = ["--KernelCustody.pool_size=0", "--KernelCustody.keep_root_kernel=0"]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie is gone too (it only waits for its parent to read its status).
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


@pytest.fixture
def root(tmp_path: Path, jp_environ: Any, prime_kernelspec: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


def test_serve_runs_against_a_started_daemon_then_shuts_it_down(root: Path) -> None:
    seen: dict[str, Any] = {}

    async def main(app: Any) -> str:
        daemon = app.web_app.settings["prime_daemon"]
        seen["started"] = daemon.started
        km = daemon.kernel_manager
        kernel_id = await km.start_kernel(kernel_name="prime-agent")
        seen["pid"] = km.get_kernel(kernel_id).provisioner.pid
        seen["km"] = km
        return "answered"

    assert serve(root, ARGV, main) == "answered"
    assert seen["started"]
    # Its kernels were shut down, and the daemon let go of its store: another one can open it.
    assert seen["km"].list_kernel_ids() == []
    assert gone(seen["pid"])
    store = SqliteStore(root / ".prime")
    store.open()
    asyncio.run(store.close())


def test_serve_shuts_down_when_the_coroutine_fails_and_says_why(root: Path) -> None:
    async def main(app: Any) -> None:
        # Without `start`, the coroutine starts the daemon itself (as `prime-agent run` does).
        daemon = await start_daemon(app)
        assert daemon.started
        raise LookupError("what the bench could not find")

    with pytest.raises(LookupError, match="could not find"):
        serve(root, ARGV, main, start=False)
    store = SqliteStore(root / ".prime")
    store.open()
    asyncio.run(store.close())
