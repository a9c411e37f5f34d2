"""`prime-agent` on a root a server already serves (`jupyter lab` there): the server holds the
store, so every command goes through its REST API, and `run` submits its task to it."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import nbformat

from tests.cli.conftest import CLI, one_line_error, read_until
from tests.conftest import until_opened
from tests.procs import server_info

SCRIPTS = {
    "shout": {"turns": [{"code": "answer(context.upper())"}]},
    "prose": {"turns": [{"text": "It is probably 42."}], "tools": False},
    "empty": {"turns": [{"text": ""}]},
    "mute": {"turns": [{"sleep": 3600, "text": "too late"}]},
    "busy": {"turns": [{"code": "import time\ntime.sleep(600)"}]},
}


def test_run_goes_to_the_running_server(
    cli: CLI, root: Path, tmp_path: Path, start_server: Any
) -> None:
    cli.scripts(SCRIPTS)
    server = start_server(root, "--ModelRouter.model_timeout=3")
    proc = cli(
        "run",
        "shout it",
        "--model",
        "scripted/shout",
        "--context",
        "-",
        "--json",
        root=root,
        input="hello from stdin",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["state"], result["answer"]) == ("DONE", "HELLO FROM STDIN")
    # --json: progress on stderr; the answer once, in the result.
    assert "> answer(context.upper())" in proc.stderr and "HELLO" not in proc.stderr
    sid = result["id"]
    assert [s["id"] for s in server.get("sessions")["sessions"]] == [sid]
    assert not list((root / ".prime").glob("logs/run-*.log"))  # no server of its own started

    # Reading commands ask the server (its store is locked to anyone else).
    assert [s["id"] for s in cli.json("sessions", root=root)] == [sid]
    assert "answer:  'HELLO FROM STDIN'" in cli("show", sid, root=root).stdout
    target = tmp_path / "shout.ipynb"
    assert cli("export", sid, "-o", str(target), root=root).returncode == 0
    assert nbformat.read(target, as_version=4).cells

    # What the server refuses, in one line each.
    one_line_error(cli("run", "x", "--model", "local/smollm", root=root), 2, "unknown model")
    one_line_error(
        cli("run", "x", "--config", "KernelCustody.pool_size=0", root=root), 2, "one already serves"
    )
    one_line_error(cli("send", sid, "more", root=root), 1, "has ended (DONE)")
    one_line_error(cli("resume", sid, root=root), 1, "is DONE, not INACTIVE")

    # Models that answer badly.
    prose = cli("run", "x", "--model", "scripted/prose", root=root)
    assert prose.returncode == 0, prose.stderr
    assert "Answer (a reply, no code ran): It is probably 42." in prose.stdout
    empty = cli("run", "x", "--model", "scripted/empty", root=root)
    one_line_error(empty, 1, "FAILED: the model 'scripted/empty' replied with no text and no code")
    mute = cli("run", "x", "--model", "scripted/mute", root=root, timeout=120)
    one_line_error(mute, 1, "FAILED: the model 'scripted/mute' did not answer within 3 s")


def test_ctrl_c_cancels_the_session_on_the_server(cli: CLI, root: Path, start_server: Any) -> None:
    cli.scripts(SCRIPTS)
    server = start_server(root)
    run = cli.start("run", "sleep", "--model", "scripted/busy", root=root)
    assert run.stdout is not None and run.stderr is not None
    sid = read_until(run.stdout, "session ")[-1].split()[1]
    read_until(run.stdout, "turn 1 · model scripted/busy")
    run.send_signal(signal.SIGINT)
    assert run.wait(120) == 130
    assert run.stderr.read().strip().splitlines() == [
        f"prime-agent: cancelled (Ctrl-C): session {sid} CANCELLED, its kernels shut down"
    ]
    assert server.get(f"sessions/{sid}")["state"] == "CANCELLED"


def test_the_store_read_directly_says_what_the_server_says(
    cli: CLI, root: Path, start_server: Any
) -> None:
    cli.scripts(SCRIPTS)
    server = start_server(root, "--KernelCustody.keep_root_kernel=0")
    assert cli("run", "a", "--model", "scripted/prose", "-q", root=root).returncode == 0
    assert cli("run", "b", "--model", "scripted/empty", "-q", root=root).returncode == 1
    served = cli.json("sessions", root=root)
    shown = [cli.json("show", s["id"], root=root) for s in served]
    server.stop()
    assert cli.json("sessions", root=root) == served
    assert [cli.json("show", s["id"], root=root) for s in served] == shown


def start_two(
    cli: CLI, root: Path
) -> tuple[subprocess.Popen[str], subprocess.Popen[str], str, Path, Path]:
    """A run, and a second one started once the first one's server is up (so it hands its
    task to that server): both processes, the second's session id, and the gates the test
    opens for the first, then the second, to answer."""
    gates = root / "first-may-answer", root / "second-may-answer"
    cli.scripts(
        {
            "quick": {"turns": [{"code": until_opened(gates[0], "answer('first')")}]},
            "long": {"turns": [{"code": until_opened(gates[1], "answer('second')")}]},
        }
    )
    first = cli.start("run", "a", "--model", "scripted/quick", root=root)
    server_info(cli.runtime, first)  # its daemon may still be starting: sessions wait for it
    second = cli.start("run", "b", "--model", "scripted/long", root=root)
    assert second.stdout is not None
    # The second's session is on the first's server (admitted, running) before the first's
    # ends: otherwise the first would stop serving and the second start its own server.
    sid = read_until(second.stdout, "session ")[-1].split()[1]
    return first, second, sid, *gates


def test_a_second_run_goes_to_the_server_of_the_first(cli: CLI, root: Path) -> None:
    first, second, _, first_gate, second_gate = start_two(cli, root)
    assert first.stdout is not None and first.stderr is not None and second.stdout is not None
    first_gate.touch()
    # The first prints its answer at once, then serves on until the second's session ends.
    read_until(first.stdout, "Answer: first")
    assert second.poll() is None
    read_until(first.stderr, "this server also runs")
    assert second.poll() is None
    second_gate.touch()
    assert second.wait(180) == 0, second.stderr.read() if second.stderr else ""
    assert first.wait(60) == 0
    assert "Answer: second" in second.stdout.read()
    assert len(list((root / ".prime" / "logs").glob("run-*.log"))) == 1  # one server


def test_the_first_run_stopped_early_leaves_the_second_resumable(cli: CLI, root: Path) -> None:
    # The second's gate stays shut: its session runs on when the first stops serving.
    first, second, sid, first_gate, _ = start_two(cli, root)
    assert first.stderr is not None and second.stdout is not None and second.stderr is not None
    first_gate.touch()
    read_until(first.stderr, "this server also runs")
    first.send_signal(signal.SIGINT)  # stop serving now
    assert first.wait(60) == 0  # its own session had ended DONE
    assert second.wait(60) == 1
    (line,) = second.stderr.read().strip().splitlines()
    assert line.startswith("prime-agent: error: the server at http://127.0.0.1:")
    assert line.endswith(
        f" stopped before session {sid} ended; it goes on with `prime-agent resume {sid}`"
    )
