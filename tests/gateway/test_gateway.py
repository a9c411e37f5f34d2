"""Agent kernels on a real Jupyter Kernel Gateway (c.KernelPlacement.gateway_url): they run
there, call the daemon back over HTTP with their session's token, are interrupted, cancelled
and lost."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.daemon import Daemon
from prime_kernel.daemon.gateway import GatewayLauncher
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import events, wait_for
from tests.gateway.server import GATEWAY_TOKEN, Gateway
from tests.procs import disposition, processes
from tests.recovery.server import ServerProcess, free_port

pytestmark = pytest.mark.timeout(120)


async def state_of(daemon: Daemon, sid: str, *states: str, timeout: float = 90) -> dict[str, Any]:
    await wait_for(lambda: daemon.listing.session_json(sid)["state"] in states, timeout)
    return daemon.listing.session_json(sid)


async def cell_started(daemon: Daemon, sid: str, n: int = 1) -> None:
    """Until the session's n-th cell was sent and the gateway's kernel runs it: the kernel
    process (this host's, named by its connection file) catches SIGINT, as an ipykernel
    does only while it handles a request."""

    async def sent() -> bool:
        return len(await events(daemon, sid, "assistant")) >= n

    await wait_for(sent)
    kernel_id = daemon.listing.session_json(sid)["kernel_id"].encode()

    def running() -> bool:
        kernels = [p for p, (_, cmd) in processes().items() if kernel_id in cmd]
        return any(disposition(p) == "caught" for p in kernels)

    await wait_for(running, 60, f"cell {n} running in the gateway's kernel")


async def test_agent_and_child_kernels_run_on_the_gateway(daemon, gateway, script, monkeypatch):
    assert isinstance(daemon.launcher, GatewayLauncher)
    minted: list[str] = []
    mint = daemon.tokens.mint
    monkeypatch.setattr(
        daemon.tokens, "mint", lambda *a, **k: minted.append(mint(*a, **k)) or minted[-1]
    )
    # The child reports where it runs: its parent process is the gateway, its boot document
    # is out of its environment, and llm() reaches the daemon over public_url.
    child = script(
        [
            {
                "code": "import os\n"
                "answer([os.environ.get('JPY_PARENT_PID'), "
                "os.environ.get('KERNEL_PRIME_BOOT'), llm('ping', model='scripted/echo')])"
            }
        ]
    )
    root = script([{"code": f"h = rlm('child task', model={child!r})\nanswer(h.result())"}])
    sid = (await daemon.admission.create_session(SessionRequest("parent task", model=root)))["id"]
    record = await state_of(daemon, sid, "DONE", "FAILED")
    assert record["state"] == "DONE", record
    assert record["answer_repr"] == repr([str(gateway.process.pid), None, "echo"])
    child_record = daemon.registry.descendants(sid)[0]
    assert child_record.state.value == "DONE"
    # The tokens minted for kernels (the child's, the pool's next) are in no record, nor in
    # the gateway's log.
    assert minted
    recorded = str([await daemon.listing.events(s) for s in (sid, child_record.id)])
    logged = (gateway.home / "gateway.log").read_text()
    for token in minted:
        assert token not in recorded
        assert token not in logged


async def test_the_kernel_is_the_gateways_and_interrupt_and_cancel_go_through_it(
    daemon, gateway, script
):
    sleep = "import time\ntime.sleep(120)"
    model = script([{"code": sleep}, {"code": sleep}, {"text": "never"}])
    sid = (await daemon.admission.create_session(SessionRequest("sleep twice", model=model)))["id"]
    await cell_started(daemon, sid)
    kernel_id = daemon.listing.session_json(sid)["kernel_id"]
    assert kernel_id in await asyncio.to_thread(gateway.kernel_ids)
    assert kernel_id not in (daemon.kernel_manager or {})

    await daemon.runs.interrupt(sid)  # POST /api/kernels/{id}/interrupt on the gateway

    async def interrupted() -> bool:
        cells = await events(daemon, sid, "cell")
        return bool(cells) and "KeyboardInterrupt" in str(cells[0]["data"]["outputs"])

    await wait_for(interrupted)
    await cell_started(daemon, sid, 2)
    await daemon.runs.cancel(sid)
    record = await state_of(daemon, sid, "CANCELLED")
    cells = await events(daemon, sid, "cell")
    assert [c["data"]["status"] for c in cells] == ["error", "cancelled"], record
    # Released: shut down on the gateway.
    await wait_for(lambda: asyncio.to_thread(lambda: kernel_id not in gateway.kernel_ids()))


async def test_a_gateway_killed_mid_cell_leaves_the_session_resumable(
    daemon, gateway: Gateway, script
):
    model = script(
        [
            {"code": "import time\ntime.sleep(120)"},
            {"code": "answer('resumed')"},
        ]
    )
    sid = (await daemon.admission.create_session(SessionRequest("long cell", model=model)))["id"]
    await cell_started(daemon, sid)
    await asyncio.to_thread(gateway.kill)
    record = await state_of(daemon, sid, "INACTIVE", "FAILED", "DONE")
    assert record["state"] == "INACTIVE", record
    [cell] = await events(daemon, sid, "cell")
    assert cell["data"]["status"] == "died"
    assert "gateway" in cell["data"]["exit"]  # why, in the cell
    reason = (await events(daemon, sid, "state"))[-1]["data"]["reason"]
    assert f"the kernel gateway at {gateway.url} is unreachable" in reason
    assert f"prime-agent resume {sid}" in reason

    await asyncio.to_thread(gateway.start)
    daemon.runs.resume(sid)
    record = await state_of(daemon, sid, "DONE", "FAILED")
    states = [e["data"] for e in await events(daemon, sid, "state")]
    assert record["state"] == "DONE", states
    assert record["answer_repr"] == repr("resumed")
    [resume] = await events(daemon, sid, "resume")
    assert resume["data"]["in_flight"] == "import time\ntime.sleep(120)"
    assert "kernel was lost" in resume["data"]["reason"]


class TestGatewayDown:
    @pytest.fixture
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{free_port()}"

    async def test_a_session_fails_with_the_reason(self, daemon, script):
        sid = (
            await daemon.admission.create_session(
                SessionRequest("task", model=script([{"code": "answer(1)"}]))
            )
        )["id"]
        record = await state_of(daemon, sid, "FAILED", "DONE")
        assert record["state"] == "FAILED"
        assert "the kernel gateway at http://127.0.0.1:" in record["error"]
        assert "is unreachable" in record["error"]

    async def test_kernels_left_on_it_are_remembered_until_it_answers(self, daemon, monkeypatch):
        store = daemon.store
        ours, elsewhere = daemon.launcher.url, "http://gateway.example:8888"
        store.record_kernel("left-1", {"gateway": ours})
        store.record_kernel("left-2", {"gateway": ours})
        store.record_kernel("other", {"gateway": elsewhere})
        asked: list[str] = []
        stop = daemon.launcher.stop_leftover

        async def counted(record: dict[str, Any]) -> bool | None:
            asked.append(record["kernel_id"])
            return await stop(record)

        monkeypatch.setattr(daemon.launcher, "stop_leftover", counted)
        await daemon.recovery.reap_kernels(daemon.launcher)  # as the next start does
        # Our gateway asked once (the first of its records may be a kernel the daemon is
        # starting there right now: recorded before it is asked for), the other one once.
        assert len(asked) == 2 and asked[-1] == "other", asked
        await store.flush()
        # Kept for the start after (the gateway is down), asked once, not once per kernel;
        # another gateway's is forgotten with a warning naming it.
        assert {r["kernel_id"] for r in await store.kernels()} >= {"left-1", "left-2"}
        assert "other" not in {r["kernel_id"] for r in await store.kernels()}


class TestSlowGateway:
    @pytest.fixture
    def gateway_url(self) -> Iterator[str]:
        # The OS queues the connections (the listen backlog); nothing ever answers them.
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            yield f"http://127.0.0.1:{listener.getsockname()[1]}"

    @pytest.fixture
    def prime_config(self, prime_config: dict[str, Any]) -> dict[str, Any]:
        return {**prime_config, "kernel_start_timeout": 2.0}

    @pytest.fixture
    def jp_server_config(self, jp_server_config: Config) -> Config:
        jp_server_config.GatewayLauncher.request_timeout = 2.0
        return jp_server_config

    async def test_a_session_fails_naming_the_limit(self, daemon, script):
        sid = (
            await daemon.admission.create_session(
                SessionRequest("task", model=script([{"code": "answer(1)"}]))
            )
        )["id"]
        record = await state_of(daemon, sid, "FAILED", "DONE")
        assert record["state"] == "FAILED"
        assert "did not answer within 2 s" in record["error"], record["error"]
        assert "c.KernelCustody.kernel_start_timeout sets that limit" in record["error"]


class TestWrongToken:
    @pytest.fixture
    def gateway_token(self) -> str:
        return "not-the-gateway-token"

    async def test_a_session_fails_with_the_reason(self, daemon, gateway, script):
        sid = (
            await daemon.admission.create_session(
                SessionRequest("task", model=script([{"code": "answer(1)"}]))
            )
        )["id"]
        record = await state_of(daemon, sid, "FAILED", "DONE")
        assert record["state"] == "FAILED"
        assert "refused our credentials (HTTP 401)" in record["error"]
        assert "not-the-gateway-token" not in str(await daemon.listing.events(sid))
        assert await asyncio.to_thread(gateway.kernels) == []


class TestUnreachablePublicURL:
    @pytest.fixture
    def public_url(self) -> str:
        return f"http://127.0.0.1:{free_port()}/"

    async def test_the_first_call_fails_the_session_with_the_reason(
        self, daemon, public_url, script
    ):
        sid = (
            await daemon.admission.create_session(
                SessionRequest("task", model=script([{"code": "answer(1)"}]))
            )
        )["id"]
        record = await state_of(daemon, sid, "FAILED", "DONE")
        assert record["state"] == "FAILED"
        assert f"cannot reach the Prime daemon at {public_url}" in record["error"]
        assert "c.GatewayLauncher.public_url" in record["error"]


@pytest.mark.timeout(300)
def test_kernels_a_crashed_server_left_on_the_gateway_are_shut_down(gateway, tmp_path):
    """kill -9 of the server leaves its kernels on the gateway (they are the gateway's
    processes); the next start asks the gateway to shut them down, before it says it started.
    The kill comes as soon as the gateway lists the pool's new kernel, before its start's
    reply can have reached the daemon: a kernel is recorded before it is asked for."""
    root = tmp_path / "root"
    root.mkdir()
    hold = {"turns": [{"code": "import time\ntime.sleep(600)"}]}
    server = ServerProcess(
        root,
        {"hold": hold, "echo": {"turns": [{"text": "echo"}]}},
        {"gateway_url": gateway.url, "pool_size": 1, "auto_resume": False},
        config={"GatewayLauncher": {"auth_token": GATEWAY_TOKEN}},
    )
    try:
        server.start()
        body = {"prompt": "hold", "model": "scripted/hold"}
        server.request("POST", "sessions", body)
        # The session's kernel and the pool's next one (started as the session took the
        # first), the moment the gateway lists that.
        left = server.wait(lambda: len(ids := gateway.kernel_ids()) == 2 and ids, every=0.005)
        server.stop(signal.SIGKILL)
        assert gateway.kernel_ids() == left  # nothing shut them down
        server.start()  # returns once the daemon started, which is after its reap
        # The new daemon shut down what the dead one left; its own warm kernel is new.
        assert not gateway.kernel_ids() & left, (left, server.log_tail())
    finally:
        if server.proc is not None:
            server.stop(signal.SIGKILL)
        for kernel_id in gateway.kernel_ids():  # what a failure left
            gateway.shutdown_kernel(kernel_id)
