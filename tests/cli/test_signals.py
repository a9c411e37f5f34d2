"""Ctrl-C during `prime-agent run`, and a reader that goes away (`prime-agent sessions | head`)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.cli.conftest import CLI, alive, children, read_until

BUSY = {"busy": {"turns": [{"code": "import time\ntime.sleep(600)"}]}}


def test_ctrl_c_cancels_the_session_and_stops_its_kernels(cli: CLI, root: Path) -> None:
    cli.scripts(BUSY)
    run = cli.start("run", "sleep", "--model", "scripted/busy", root=root)
    assert run.stdout is not None and run.stderr is not None
    header = read_until(run.stdout, "session ")
    session_id = header[-1].split()[1]
    read_until(run.stdout, "turn 1 · model scripted/busy")  # its cell runs now
    kernels = children(run.pid)
    assert kernels, "no kernel was started"
    run.send_signal(signal.SIGINT)
    assert run.wait(120) == 130
    out, err = run.stdout.read(), run.stderr.read()
    assert "cell cancelled:" in out
    assert err.strip().splitlines() == [
        f"prime-agent: cancelled (Ctrl-C): session {session_id} CANCELLED, its kernels shut down"
    ]
    assert not [pid for pid in kernels if alive(pid)]
    assert cli.json("show", session_id, root=root)["session"]["state"] == "CANCELLED"
    assert not list(cli.runtime.glob("jpserver-*.json"))  # the server said it is gone


def test_ctrl_c_while_the_server_starts_creates_nothing(cli: CLI, root: Path) -> None:
    cli.scripts(BUSY)
    run = cli.start("run", "sleep", "--model", "scripted/busy", root=root)
    assert run.stdout is not None and run.stderr is not None
    logs = root / ".prime" / "logs"
    while not list(logs.glob("run-*.log")):  # the log exists: the server is being made
        assert run.poll() is None, run.stderr.read()
        time.sleep(0.01)  # a file's appearing has no event; Ctrl-C must come right after
    run.send_signal(signal.SIGINT)
    assert run.wait(120) == 130
    assert run.stdout.read() == f"starting a server for {root} (about 15 s the first time)…\n"
    assert run.stderr.read().strip().splitlines() == [
        "prime-agent: interrupted before the session started"
    ]
    assert not list(cli.runtime.glob("jpserver-*.json"))


def test_a_closed_pipe_ends_quietly(cli: CLI, root: Path) -> None:
    cli.scripts({"ok": {"turns": [{"code": "answer(1)"}]}})
    assert cli("run", "one", "--model", "scripted/ok", "-q", root=root).returncode == 0
    session_id = cli.json("sessions", root=root)[0]["id"]
    for command in (["sessions"], ["show", session_id], ["--help"]):
        reader = cli.start(*command, root=root)
        assert reader.stdout is not None and reader.stderr is not None
        reader.stdout.close()  # like `| head` that has read what it wanted
        assert reader.wait(60) in (0, 141)
        assert reader.stderr.read() == ""
