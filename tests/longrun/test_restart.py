"""Long-horizon state survives a crash: a real server (a subprocess: tests/recovery/server.py)
is killed with SIGKILL while a heartbeat ticks to a persistent agent with a goal and an
autonomous agent works through its continuations. A new server on the same root goes on: the
goal is still there, the ticks missed while it was down arrive as one that says so, no tick is
lost or delivered twice, and the autonomous session continues from the continuation it had
reached."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

from tests.recovery.server import ServerProcess

GOAL = "Keep the heartbeat going"
SCRIPTS = {
    "keeper": {
        "turns": [{"code": f"goal.set({GOAL!r})\nanswer('ready')"}] + [{"text": "beat noted"}] * 400
    },
    # An autonomous worker: each continuation is one slow reply; its gate waits for a file.
    "worker": {"turns": [{"text": "still working", "sleep": 1.5}] * 100},
}


def test_a_heartbeat_and_a_goal_survive_a_kill_9(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    server = ServerProcess(root, SCRIPTS, {"pool_size": 0, "default_model": "scripted/keeper"})
    server.start(timeout=180)
    try:
        sid = server.request("POST", "sessions", {"prompt": "keep going", "persistent": True})["id"]
        server.wait(lambda: server.get(f"sessions/{sid}")["state"] == "IDLE", 180, "IDLE")
        assert server.get(f"sessions/{sid}")["goal"]["text"] == GOAL
        body = {"session_id": sid, "every": 1, "message": "beat"}
        hid = server.request("POST", "schedules", body)["id"]
        plan = {"gate": "test -f go.txt", "turns": 1, "max_continuations": 30}
        body = {"prompt": "work", "model": "scripted/worker", "autonomous": plan}
        wid = server.request("POST", "sessions", body)["id"]

        def continuation() -> int:
            state = server.get(f"sessions/{wid}")["options"].get("autonomy") or {}
            return int(state.get("continuation") or 0)

        server.wait(lambda: server.get(f"schedules/{hid}")["ticks"] >= 3, 60, "three ticks")
        reached = server.wait(lambda: continuation() >= 2 and continuation(), 120, "two")
        server.stop(signal.SIGKILL)
        time.sleep(3)  # ticks fall due while no server runs

        server.start()  # a new server on the same root
        before = server.get(f"schedules/{hid}")["ticks"]
        server.wait(
            lambda: server.get(f"schedules/{hid}")["ticks"] >= before + 3, 120, "three more ticks"
        )
        record = server.get(f"sessions/{sid}")
        assert record["goal"]["text"] == GOAL and record["goal"]["set_by"] == sid
        assert server.get(f"sessions/{sid}/goal")["goal"]["status"] == "active"
        schedule = server.get(f"schedules/{hid}")
        assert schedule["state"] == "active" and schedule["missed"] >= 1

        def answered_the_coalesced_tick() -> bool:
            trajectory = server.get(f"sessions/{sid}/events")["events"]
            first = [
                e["seq"] for e in trajectory if e["kind"] == "mail_in" and e["data"].get("missed")
            ]
            return bool(first) and any(
                e["kind"] == "assistant" and e["seq"] > first[0] for e in trajectory
            )

        # The revived agent took a turn for it (its REPL back from the snapshot).
        server.wait(answered_the_coalesced_tick, 120, "a turn after the restart")

        # The autonomous session went on from the continuation it had reached.
        (root / "go.txt").write_text("go")
        server.wait(lambda: server.get(f"sessions/{wid}")["state"] == "DONE", 120, "DONE")
        trajectory = server.get(f"sessions/{wid}/events")["events"]
        numbers = [e["data"]["continuation"] for e in trajectory if e["kind"] == "continuation"]
        assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= reached
        assert any(e["kind"] == "resume" for e in trajectory)
        gates = [e["data"]["passed"] for e in trajectory if e["kind"] == "gate"]
        assert gates[-1] is True and not any(gates[:-1])
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.stop(signal.SIGTERM)

    # The store, read after the clean stop: every tick delivered exactly once.
    db = sqlite3.connect(root / ".prime" / "prime.sqlite3")
    ticks = db.execute("SELECT ticks FROM schedules WHERE id = ?", (hid,)).fetchone()[0]
    ids = [r[0] for r in db.execute("SELECT id FROM mailbox WHERE to_id = ? ORDER BY ts", (sid,))]
    assert ids == [f"m{hid}t{n}" for n in range(1, ticks + 1)]  # none lost, none twice
    arrivals = [
        json.loads(r[0])
        for r in db.execute(
            "SELECT data FROM events WHERE session_id = ? AND kind = 'mail_in' ORDER BY seq",
            (sid,),
        )
    ]
    assert [a["message_id"] for a in arrivals] == ids
    coalesced = [a for a in arrivals if a.get("missed")]
    assert coalesced and "fell due while the server was down" in coalesced[0]["message"]
    # The model was shown each tick it read once (the last ones may wait unread for its next
    # turn), the coalesced one included.
    shown = [
        r[0]
        for r in db.execute(
            "SELECT id FROM mailbox WHERE to_id = ? AND shown_ts IS NOT NULL", (sid,)
        )
    ]
    said = [
        json.loads(r[0])["content"]
        for r in db.execute("SELECT message FROM conversation WHERE session_id = ?", (sid,))
    ]
    assert sum(str(m).count("[message from schedule]: beat") for m in said) == len(shown)
    assert coalesced[0]["message_id"] in shown
