"""A sandboxed agent kernel is still an ordinary Jupyter kernel: it starts, is interrupted,
shut down and killed through the kernel manager, and its death is seen."""

from __future__ import annotations

import ast
import asyncio
import os
import signal
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.procs import descendants, disposition, kernel_pid, processes

pytestmark = pytest.mark.parametrize("prime_mode", ["bwrap"], indirect=True)


async def agent_kernel(daemon: Any) -> Any:
    assert daemon.custody.pool is not None
    runner = await daemon.custody.pool.start_kernel()
    km = daemon.kernel_manager.get_kernel(runner.kernel_id)
    assert km.provisioner.agent and km.provisioner.sandboxed
    return runner, km


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


async def test_interrupt_reaches_the_kernel_and_only_it(daemon):
    runner, km = await agent_kernel(daemon)
    try:
        task = asyncio.ensure_future(runner.execute("import time\ntime.sleep(60)"))
        await wait_for(lambda: disposition(kernel_pid(km)) == "caught", 20)  # the cell runs
        await km.interrupt_kernel()
        result = await asyncio.wait_for(task, 20)
        assert result.status == "error"
        assert any(o.get("ename") == "KeyboardInterrupt" for o in result.outputs)
        # An interrupt while idle is harmless too; the kernel (and bwrap) lives on.
        await km.interrupt_kernel()
        assert (await runner.execute("1 + 1")).outputs[0]["data"]["text/plain"] == "2"
        assert await km.is_alive()
    finally:
        await daemon.custody.pool.discard(runner)


async def test_interrupt_reaches_a_subprocess_of_the_kernel(daemon):
    runner, km = await agent_kernel(daemon)
    try:
        task = asyncio.ensure_future(
            runner.execute("import subprocess\nsubprocess.run(['sleep', '60'])")
        )
        pid = kernel_pid(km)

        def sleeping() -> bool:  # the cell's subprocess runs
            table = processes()
            return any(table[p][1].startswith(b"sleep\0") for p in descendants(pid) if p in table)

        await wait_for(sleeping, 20)
        await km.interrupt_kernel()
        result = await asyncio.wait_for(task, 20)
        assert result.status == "error"
        assert await km.is_alive()
    finally:
        await daemon.custody.pool.discard(runner)


async def test_shutdown_ends_every_process_of_the_sandbox(daemon):
    runner, km = await agent_kernel(daemon)
    out = await runner.execute(
        "import subprocess\np = subprocess.Popen(['sleep', '600'], start_new_session=True)"
    )
    assert out.status == "ok"
    bwrap = km.provisioner.pid
    inside = descendants(bwrap)
    assert len(inside) >= 3  # init, kernel, sleep
    await daemon.custody.pool.discard(runner)  # shutdown_kernel(now=True)
    await wait_for(lambda: not any(alive(p) for p in [bwrap, *inside]), 10)


async def test_a_graceful_shutdown_works(daemon):
    runner, km = await agent_kernel(daemon)
    bwrap = km.provisioner.pid
    await runner.stop()
    await daemon.kernel_manager.shutdown_kernel(runner.kernel_id)  # shutdown_request first
    assert not alive(bwrap)


async def test_the_kernels_death_is_seen(daemon):
    runner, km = await agent_kernel(daemon)
    try:
        bwrap = km.provisioner.pid
        runner.client.execute("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        await wait_for(lambda: not alive(bwrap), 10)
        assert not await km.is_alive()
    finally:
        await daemon.custody.pool.discard(runner)


async def test_killing_bwrap_from_outside_ends_the_sandbox(daemon):
    runner, km = await agent_kernel(daemon)
    try:
        bwrap = km.provisioner.pid
        inside = descendants(bwrap)
        os.kill(bwrap, signal.SIGKILL)
        await wait_for(lambda: not any(alive(p) for p in [bwrap, *inside]), 10)
        assert not await km.is_alive()
    finally:
        await daemon.custody.pool.discard(runner)


async def test_output_of_forked_subprocesses_still_arrives(daemon):
    # ipykernel's pipe for it is IPC here, not TCP.
    runner, _ = await agent_kernel(daemon)
    try:
        result = await runner.execute(
            "import multiprocessing as mp\n"
            "p = mp.get_context('fork').Process(target=print, args=('from the child',))\n"
            "p.start(); p.join()"
        )
        assert "from the child" in "".join(o.get("text", "") for o in result.outputs)
    finally:
        await daemon.custody.pool.discard(runner)


async def test_a_restarted_agent_kernel_is_sandboxed_again(daemon):
    runner, km = await agent_kernel(daemon)
    try:
        before = km.provisioner.pid
        await runner.stop()
        await km.restart_kernel(now=True)
        assert km.provisioner.sandboxed and km.provisioner.pid != before
        runner = type(runner)(daemon.kernel_manager, runner.kernel_id)
        await runner.start()
        result = await runner.execute(
            "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit()), os.getpid()"
        )
        # Its own PID namespace: bwrap's init, the kernel, and (forked kernels) the
        # placeholder a forked kernel joined the sandbox by.
        pids, own = ast.literal_eval(result.outputs[0]["data"]["text/plain"])
        assert own in pids and set(pids) <= {1, 2, 3}, pids
    finally:
        await daemon.custody.pool.discard(runner)


@pytest.mark.parametrize(
    "prime_config",
    [{"pool_size": 0, "default_model": "scripted/echo"}],
)
async def test_memory_and_cpu_limits(daemon, jp_serverapp):
    sandbox = jp_serverapp.web_app.settings["prime_sandbox"]
    sandbox.limits.memory_limit = 512 << 20
    sandbox.limits.cpu_time_limit = 3
    runner, km = await agent_kernel(daemon)
    try:
        result = await runner.execute("import resource\nresource.getrlimit(resource.RLIMIT_DATA)")
        assert result.outputs[0]["data"]["text/plain"] == f"({512 << 20}, {512 << 20})"
        # A gigabyte of heap: refused, and the kernel lives on.
        result = await runner.execute("x = bytearray(1 << 30)")
        assert result.status == "error" and result.outputs[0]["ename"] == "MemoryError"
        assert (await runner.execute("1")).status == "ok"
        # Three CPU seconds in all: a busy loop ends the kernel (SIGXCPU), which is seen.
        runner.client.execute("while True: pass")
        await wait_for(lambda: not alive(km.provisioner.pid), 30)
        # The sandbox's own process (bwrap, the kernel's parent) ends a moment after the kernel.
        await wait_for(lambda: ended(km), 10, "the kernel manager seeing the kernel end")
    finally:
        await daemon.custody.pool.discard(runner)


async def ended(km: Any) -> bool:
    return not await km.is_alive()


@pytest.mark.parametrize(
    "prime_config",
    [{"pool_size": 0, "default_model": "scripted/echo"}],  # every kernel started on demand
)
async def test_without_network_the_daemon_is_still_reached(
    daemon, jp_serverapp, jp_http_port, user_kernel, script
):
    jp_serverapp.web_app.settings["prime_sandbox"].network = False
    code = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {jp_http_port}), timeout=5)\n"
        "    net = 'connected'\n"
        "except OSError as e:\n"
        "    net = type(e).__name__\n"
        "answer(net)"
    )
    nb = await user_kernel()
    out = await nb.value(f"rlm('net', model={script([{'code': code}])!r}).result(timeout=60)")
    assert out == "'ConnectionRefusedError'"
