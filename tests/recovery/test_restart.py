"""Sessions outlive the server: a real server is killed (SIGKILL) or stopped (SIGTERM) in the
middle of a fan-out — a root waiting in `rlm.gather`, children running, children queued, an
idle persistent child, messages unread — and a new server on the same root finishes the work.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import until_opened

from .server import ServerProcess

CHILDREN = 6


# Each child: a first cell that runs until the test opens `gate` once the server is back (the
# kill lands in it, or before the child started), then an answer with every message recv()
# returned (each must come exactly once).
def child(gate: Path) -> dict[str, Any]:
    return {
        "turns": [
            {"code": until_opened(gate)},
            {
                "code": "got = []\nwhile (m := recv(timeout=0)) is not None:\n"
                "    got.append(m['message'])\nanswer((context * 2, got))"
            },
        ]
    }


# Answers at once and stays IDLE (persistent); woken after the restart, it answers with the
# message that woke it.
HELPER = {
    "turns": [
        {"code": "answer('ready')"},
        {"code": "answer(recv(timeout=30)['message'])"},
    ]
}
ROOT = {
    "turns": [
        {
            "code": "helper = rlm('help later', model='scripted/helper', persistent=True)\n"
            "helper.wait(timeout=60)\n"
            f"hs = rlm.map('double it', contexts=list(range({CHILDREN})), "
            "model='scripted/child')\n"
            "for h in hs:\n    h.send('hello')"
        },
        # In flight when the server dies: the model is told it was not re-run, and runs it.
        {"code": "res = rlm.gather(*hs)"},
        {"code": "res = rlm.gather(*hs)\nanswer(res)"},
    ]
}
SCRIPTS = {"helper": HELPER, "root": ROOT, "echo": {"turns": [{"text": "echo"}]}}


def sessions(server: ServerProcess) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in server.get("sessions")["sessions"]}


def events(server: ServerProcess, sid: str) -> list[dict[str, Any]]:
    return list(server.get(f"sessions/{sid}/events")["events"])


@pytest.fixture
def server(tmp_path: Path) -> Any:
    root = tmp_path / "root"
    root.mkdir()
    scripts = {**SCRIPTS, "child": child(root / "children-may-go-on")}
    proc = ServerProcess(root, scripts, {"max_concurrent": 3, "pool_size": 1})
    yield proc
    if proc.proc is not None:
        proc.stop(signal.SIGKILL)


@pytest.mark.timeout(420)
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_a_fan_out_survives_the_server(server: ServerProcess, how: int) -> None:
    server.start()
    root_id = server.request("POST", "sessions", {"prompt": "fan out", "model": "scripted/root"})[
        "id"
    ]

    def mid_flight() -> dict[str, dict[str, Any]] | None:
        found = sessions(server)
        kids = [s for s in found.values() if s["parent_id"] == root_id]
        states = {s["state"] for s in kids}
        turns = sum(e["kind"] == "assistant" for e in events(server, root_id))
        helper = [s for s in kids if s["name"].startswith("help")]
        ready = turns >= 2 and {"RUNNING", "ADMITTED"} <= states
        return found if ready and helper and helper[0]["state"] == "IDLE" else None

    before = server.wait(mid_flight, timeout=180)
    pids = server.kernel_pids()
    assert pids  # the root's, the running children's and the helper's kernels
    server.stop(how)

    server.start()
    (server.root / "children-may-go-on").touch()
    # Kernels of the dead server are gone (they noticed, or the new daemon stopped them).
    server.wait(lambda: not set(server.kernel_pids()) & set(pids), timeout=30)
    after = sessions(server)
    for sid in before:
        assert after[sid]["state"] != "FAILED", (sid, after[sid]["error"])
    helper_id = next(s for s in after if after[s]["name"].startswith("help"))
    assert after[helper_id]["state"] == "INACTIVE"  # it was idle: back without a kernel

    done = server.wait(
        lambda: sessions(server)[root_id]["state"] in ("DONE", "FAILED") and sessions(server),
        timeout=240,
    )
    root = done[root_id]
    assert root["state"] == "DONE", root["error"]
    kids = [s for s in done.values() if s["parent_id"] == root_id and s["id"] != helper_id]
    assert {s["state"] for s in kids} == {"DONE"}
    # Every child got the root's message exactly once; the answers are right and in order.
    answer = root["answer_repr"]
    for i in range(CHILDREN):
        assert f"({i * 2}, ['hello'])" in answer, answer

    # The root was told what was in flight, and that it was not re-run.
    resume = [e for e in events(server, root_id) if e["kind"] == "resume"]
    assert resume and "rlm.gather(*hs)" in (resume[-1]["data"].get("in_flight") or "")
    tool_notes = [
        e for e in events(server, root_id) if e["kind"] == "observation"
    ]  # what the model saw of its cells
    assert tool_notes  # its cells ran before and after the restart
    restored = [e for e in events(server, root_id) if e["kind"] == "restore"]
    assert restored and "hs" in restored[-1]["data"]["restored"]

    # The idle helper wakes on a message after the restart and answers with it.
    receipt = server.request("POST", f"sessions/{helper_id}/messages", {"message": "wake up"})
    assert receipt["status"] == "queued"
    server.wait(lambda: sessions(server)[helper_id]["answer_repr"] == "'wake up'", timeout=120)
    # No session ended "the daemon stopped"; nothing was left behind running.
    assert not [s for s in sessions(server).values() if "daemon stopped" in (s["error"] or "")]
