"""Agent kernels forked from a template (prime_kernel/daemon/forkserver.py) are still ordinary
kernels of the server, in each sandbox mode: they run, are interrupted and restarted, their
deaths are seen, recovery can stop them, and the template can die without taking them along."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.forkserver import LOST, ForkedProcess
from prime_kernel.daemon.sandbox import Sandbox
from tests.conftest import server_config, wait_for
from tests.procs import disposition, kernel_pid, processes


@pytest.fixture(params=["bwrap", "none"])
def sandbox_mode(request: pytest.FixtureRequest) -> str:
    if request.param == "bwrap" and Sandbox(mode="auto").probe().mode != "bwrap":
        pytest.skip("bubblewrap does not work on this machine")
    return str(request.param)


@pytest.fixture
def fork() -> bool:
    return True


@pytest.fixture
def jp_server_config(prime_config: dict[str, Any], sandbox_mode: str, fork: bool) -> Config:
    return server_config(prime_config, Sandbox={"mode": sandbox_mode}, LocalLauncher={"fork": fork})


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def forked_kernel(daemon: Any) -> tuple[Any, Any]:
    runner = await daemon.custody.pool.start_kernel()
    km = daemon.kernel_manager.get_kernel(runner.kernel_id)
    assert isinstance(km.provisioner.process, ForkedProcess)
    return runner, km


async def test_a_forked_kernel_is_a_kernel_of_the_server(daemon, sandbox_mode, jp_fetch):
    runner, km = await forked_kernel(daemon)
    try:
        assert km.provisioner.sandboxed == (sandbox_mode == "bwrap")
        # Its command line is a kernel's: what `ps` shows and what recovery checks.
        cmdline = Path(f"/proc/{km.provisioner.pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:5] == [b"-m", b"prime_kernel.kernel", b"-f", km.connection_file.encode()]
        result = await runner.execute("import os\nos.getpid(), 6 * 7")
        pid, answer = eval(result.outputs[0]["data"]["text/plain"])
        assert answer == 42
        # Sandboxed: pid 3 in the sandbox's PID namespace, after bwrap's init and the placeholder.
        assert pid == (3 if sandbox_mode == "bwrap" else km.provisioner.pid)
        kernels = json.loads((await jp_fetch("api", "kernels")).body)
        assert runner.kernel_id in {k["id"] for k in kernels}
    finally:
        await daemon.custody.pool.discard(runner)


async def test_a_forked_kernel_holds_no_descriptor_of_the_template(daemon, sandbox_mode):
    runner, _ = await forked_kernel(daemon)
    try:
        result = await runner.execute(
            "import os, stat\n"
            "fds = {}\n"
            "for fd in map(int, os.listdir('/proc/self/fd')):\n"
            "    try:\n"
            "        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)\n"
            "        fds[fd] = (is_dir, os.readlink(f'/proc/self/fd/{fd}'))\n"
            "    except OSError:\n"
            "        pass\n"
            "fds"
        )
        fds = eval(result.outputs[0]["data"]["text/plain"])
        # No folder (an openat() way out of the sandbox), no socket to the template.
        assert not [fd for fd, (is_dir, _) in fds.items() if is_dir], fds
        pidfds = [fd for fd, (_, target) in fds.items() if "pidfd" in target]
        # Without a sandbox, the one pidfd is the server's, which the kernel watches.
        assert len(pidfds) == (0 if sandbox_mode == "bwrap" else 1), fds
    finally:
        await daemon.custody.pool.discard(runner)


async def test_a_killed_kernel_is_seen_dead(daemon):
    runner, km = await forked_kernel(daemon)
    try:
        task = asyncio.ensure_future(runner.execute("import time\ntime.sleep(60)", timeout=60))
        await wait_for(lambda: disposition(kernel_pid(km)) == "caught", 20)  # the cell runs
        os.kill(kernel_pid(km), signal.SIGKILL)
        result = await asyncio.wait_for(task, 20)
        assert result.status == "died" and result.exit == "signal SIGKILL"
        assert not await km.is_alive()
        await wait_for(lambda: not alive(km.provisioner.pid), 10)
    finally:
        await daemon.custody.pool.discard(runner)


async def test_interrupt_and_restart(daemon):
    runner, km = await forked_kernel(daemon)
    try:
        # The cell says when it runs: SIGINT is caught from the moment the kernel takes the
        # request, and one that lands in ipykernel's own code before the cell loses the reply.
        started = Path(daemon.root_dir, "cell-started")
        code = f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(60)"
        task = asyncio.ensure_future(runner.execute(code, timeout=60))
        await wait_for(started.exists, 20, "the cell running")
        await runner.interrupt()
        result = await asyncio.wait_for(task, 20)
        assert any(o.get("ename") == "KeyboardInterrupt" for o in result.outputs)
        await runner.execute("x = 1")
        before = km.provisioner.pid
        await runner.restart()
        assert isinstance(km.provisioner.process, ForkedProcess)
        assert km.provisioner.pid != before and not alive(before)
        result = await runner.execute("'x' in dir()")
        assert result.outputs[0]["data"]["text/plain"] == "False"  # a fresh REPL
    finally:
        await daemon.custody.pool.discard(runner)


async def test_a_killed_template_is_replaced_and_its_kernels_run_on(daemon):
    runner, km = await forked_kernel(daemon)
    fork_server = daemon.launcher.fork_server
    try:
        (template,) = fork_server.templates()
        os.kill(template.pid, signal.SIGKILL)
        await wait_for(lambda: [t.pid for t in fork_server.templates()] not in ([], [template.pid]))
        (replacement,) = fork_server.templates()
        # The kernel forked by the dead template works as before...
        result = await runner.execute("6 * 7")
        assert result.outputs[0]["data"]["text/plain"] == "42"
        # ...new kernels come from the new one...
        other, other_km = await forked_kernel(daemon)
        assert processes()[other_km.provisioner.pid][0] == replacement.pid
        await daemon.custody.pool.discard(other)
        # ...and the old kernel's death is still seen, though nobody can tell its status now.
        task = asyncio.ensure_future(runner.execute("import time\ntime.sleep(60)", timeout=60))
        await wait_for(lambda: disposition(kernel_pid(km)) == "caught", 20)  # the cell runs
        os.kill(kernel_pid(km), signal.SIGKILL)
        result = await asyncio.wait_for(task, 20)
        assert result.status == "died" and result.exit == f"exit code {LOST}"
    finally:
        await daemon.custody.pool.discard(runner)


async def test_recovery_stops_forked_kernels_a_dead_daemon_left(daemon):
    runner, km = await forked_kernel(daemon)
    try:
        rows = {row["kernel_id"]: row for row in await daemon.store.kernels()}
        assert rows[runner.kernel_id]["pid"] == km.provisioner.pid
        pids = [km.provisioner.pid, kernel_pid(km)]
        await daemon.recovery.reap_kernels(daemon.launcher)  # as a new daemon does on start
        await wait_for(lambda: not any(alive(p) for p in pids), 10)

        async def seen_ended() -> bool:  # once the template reaped the handle and said so
            return await runner.exit_code() is not None

        await wait_for(seen_ended, 10)
    finally:
        await daemon.custody.pool.discard(runner)


@pytest.fixture
def provider_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A provider key in the server's environment (set before the server starts)."""
    key = "sk-provider-key-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


async def test_the_template_holds_no_secret(provider_key, daemon):
    runner, km = await forked_kernel(daemon)
    try:
        # What every kernel forked from it shows as /proc/self/environ: its initial one.
        for pid in [t.pid for t in daemon.launcher.fork_server.templates()] + [kernel_pid(km)]:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            assert provider_key.encode() not in environ
    finally:
        await daemon.custody.pool.discard(runner)


@pytest.mark.parametrize("fork", [False])
async def test_without_a_template_kernels_start_from_their_command(daemon):
    runner = await daemon.custody.pool.start_kernel()
    km = daemon.kernel_manager.get_kernel(runner.kernel_id)
    try:
        assert not isinstance(km.provisioner.process, ForkedProcess)
        assert daemon.launcher.fork_server is None
        result = await runner.execute("6 * 7")
        assert result.outputs[0]["data"]["text/plain"] == "42"
    finally:
        await daemon.custody.pool.discard(runner)
