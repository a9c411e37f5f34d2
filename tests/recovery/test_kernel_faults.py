"""Kernels that die or will not stop, for real: `os._exit` and SIGKILL in a cell, a loop that
ignores SIGINT, a session that keeps killing its kernel, and a very large answer while someone
lists sessions."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from typing import Any

import pytest

from tests.conftest import events, start_session, wait_for
from tests.procs import descendants, disposition

# Sets `x`, is snapshotted at the turn boundary, then dies in its second cell.
SETUP = {"code": "x = 41\nprint('set')"}


@pytest.fixture
def prime_config(prime_config: dict[str, Any]) -> dict[str, Any]:
    return {
        **prime_config,
        "cell_timeout": 2.0,
        "interrupt_grace": 1.0,
        "kernel_poll_interval": 0.2,
        "keep_root_kernel": 0.0,
    }


def _cells(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in found]


@pytest.mark.parametrize(
    ("death", "exit_text"),
    [
        ("import os\nos._exit(3)", "exit code 3"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "signal SIGKILL"),
    ],
    ids=["os._exit", "sigkill"],
)
async def test_a_dead_kernel_is_noticed_and_the_repl_restored(
    daemon, script, jp_fetch, death: str, exit_text: str
) -> None:
    seen: list[str] = []

    def after(messages: list[dict[str, Any]]) -> dict[str, Any]:
        seen.append(json.dumps(messages[-3:]))
        return {"code": "answer(x + 1)"}

    sid = await start_session(jp_fetch, "die", model=script([SETUP, {"code": death}, after]))
    await wait_for(lambda: daemon.registry.get(sid).terminal, timeout=120)
    record = daemon.listing.session_json(sid)
    assert record["state"] == "DONE" and record["answer_repr"] == "42", record["error"]
    died = _cells(await events(daemon, sid, "cell"))[1]
    assert died["status"] == "died" and exit_text in died["exit"]
    # Noticed by watching the process (every 0.2 s here), not at the 2 s cell timeout.
    assert died["duration"] < 2.0
    kernel = [e["data"]["event"] for e in await events(daemon, sid, "kernel")]
    assert kernel == ["died", "restarted"]
    restore = (await events(daemon, sid, "restore"))[-1]["data"]
    assert "x" in restore["restored"]
    # The model was told: the kernel died, how, and what came back.
    assert "the kernel died during this cell (" in seen[0] and exit_text in seen[0]
    assert "Restored REPL variables: x" in seen[0]


async def test_a_cell_that_ignores_interrupts_is_killed_and_the_session_goes_on(
    daemon, script, jp_fetch
) -> None:
    # Ignoring SIGUSR1 too is the test's sign that the cell runs and ignores SIGINT (an idle
    # kernel ignores SIGINT too, so that alone tells nothing).
    spin = (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\nwhile True:\n    pass"
    )
    model = script([SETUP, {"code": spin}, {"code": "answer(x)"}])
    sid = await start_session(jp_fetch, "spin", model=model)
    await wait_for(lambda: daemon.registry.get(sid).terminal, timeout=120)
    record = daemon.listing.session_json(sid)
    assert record["state"] == "DONE" and record["answer_repr"] == "41", record["error"]
    killed = _cells(await events(daemon, sid, "cell"))[1]
    assert killed["status"] == "killed"
    assert [e["data"]["event"] for e in await events(daemon, sid, "kernel")] == [
        "killed",
        "restarted",
    ]


async def test_cancel_frees_a_kernel_that_ignores_interrupts(daemon, script, jp_fetch) -> None:
    # Ignoring SIGUSR1 too is the test's sign that the cell runs and ignores SIGINT (an idle
    # kernel ignores SIGINT too, so that alone tells nothing).
    spin = (
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\nwhile True:\n    pass"
    )
    daemon.custody.cell_timeout = 600.0  # only the cancel can stop it
    sid = await start_session(jp_fetch, "spin", model=script([{"code": spin}]))
    await wait_for(lambda: daemon.registry.get(sid).kernel_id is not None)
    runner = daemon.registry.live[sid].runner
    assert runner is not None
    await wait_for(lambda: runner.busy)
    pid = daemon.launcher.record(runner.kernel_id)["pid"]
    assert pid is not None
    kernel = [pid, *descendants(pid)]  # the kernel, or bwrap and the kernel below it
    await wait_for(lambda: any(disposition(p, signal.SIGUSR1) == "ignored" for p in kernel), 30)
    resp = await jp_fetch("api", "prime", "sessions", sid, method="DELETE")
    assert json.loads(resp.body)["cancelled"] == [sid]
    assert daemon.registry.get(sid).state.value == "CANCELLED"
    # The kernel process is gone within seconds, and the concurrency slot is free.
    await wait_for(lambda: not _alive(pid), timeout=15)
    assert daemon.slots.running == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


@pytest.mark.parametrize(
    "prime_config",
    [
        {
            "pool_size": 1,
            "cell_timeout": 5.0,
            "kernel_poll_interval": 0.2,
            "max_kernel_restarts": 1,
            "default_model": "scripted/echo",
        }
    ],
)
async def test_a_session_that_keeps_killing_its_kernel_fails_clearly(
    daemon, script, jp_fetch
) -> None:
    die = {"code": "import os\nos._exit(1)"}
    sid = await start_session(jp_fetch, "die again", model=script([die, die, die]))
    await wait_for(lambda: daemon.registry.get(sid).terminal, timeout=120)
    record = daemon.listing.session_json(sid)
    assert record["state"] == "FAILED"
    assert "died (exit code 1) 2 times; the limit is 1" in record["error"]


@pytest.mark.parametrize(
    "prime_config",
    [{"pool_size": 1, "cell_timeout": 120.0, "default_model": "scripted/echo"}],
)
async def test_a_huge_answer_while_others_list_sessions(daemon, script, jp_fetch) -> None:
    big = {"code": "answer(b'x' * 150_000_000)"}
    sid = await start_session(jp_fetch, "big", model=script([big]))
    listed = 0
    while not daemon.registry.get(sid).terminal:
        resp = await jp_fetch("api", "prime", "sessions")
        assert resp.code == 200
        listed += 1
        await asyncio.sleep(0.01)  # a client listing every 10 ms: the load under test
    assert listed and daemon.listing.session_json(sid)["state"] == "DONE"
    assert len(await daemon.answers.answer_bytes(sid)) > 150_000_000


async def test_a_notebook_whose_kernel_is_shut_down_ends(
    daemon, user_kernel, script, jp_fetch
) -> None:
    nb = await user_kernel()
    model = script([{"code": "answer(7)"}])
    assert await nb.value(f"rlm('x', model={model!r}).result()") == "7"
    (notebook,) = [r for r in daemon.registry if not r.is_agent]
    await jp_fetch("api", "kernels", nb.kernel_id, method="DELETE")
    await wait_for(lambda: daemon.registry.get(notebook.id).terminal)
    record = daemon.listing.session_json(notebook.id)
    assert record["state"] == "DONE"
    states = [e["data"] for e in await events(daemon, notebook.id, "state")]
    assert states[-1]["reason"] == "its kernel was shut down"
    # Its child's answer stays retrievable.
    (child,) = record["children"]
    assert daemon.listing.session_json(child)["answer_repr"] == "7"
