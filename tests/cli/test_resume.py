"""A session an earlier `prime-agent run` left unfinished (it was killed) is not run again by
the next `run`: it waits INACTIVE until `prime-agent resume ID`, and says so meanwhile. With no
server, its goal can still be changed (the store is edited); a schedule cannot be added, and
the error says what to start."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.cli.conftest import CLI, one_line_error, read_until


def test_a_killed_run_waits_for_resume(cli: CLI, root: Path) -> None:
    cli.scripts(
        {
            "crash": {
                "turns": [
                    {"code": "import time\ntime.sleep(600)"},
                    {"code": "answer(goal.get()['text'])"},
                ]
            },
            "other": {"turns": [{"code": "answer(1)"}]},
        }
    )
    run = cli.start("run", "first", "--model", "scripted/crash", root=root)
    assert run.stdout is not None
    sid = read_until(run.stdout, "session ")[-1].split()[1]
    read_until(run.stdout, "turn 1 · model scripted/crash")
    run.send_signal(signal.SIGKILL)  # no clean stop: its record says RUNNING
    run.wait(60)
    # But nothing runs it: with no server, it is shown as what it is.
    assert cli.json("show", sid, root=root)["session"]["state"] == "INACTIVE"
    listed = cli("sessions", root=root).stdout.splitlines()
    assert listed[0].split() == ["ID", "STATE", "CREATED", "MODEL", "TOKENS", "COST", "TASK"]
    assert listed[1].split()[:2] == [sid, "INACTIVE"]
    shown = cli("show", sid, root=root).stdout.splitlines()
    assert shown[0] == f"Session {sid} · INACTIVE · agent"
    assert (
        f"  note:    unfinished: no server runs it since the one that did stopped; "
        f"`prime-agent resume {sid}` (or a Jupyter server on this root) takes it up"
    ) in shown

    other = cli("run", "second", "--model", "scripted/other", "-q", root=root)
    assert (other.returncode, other.stdout) == (0, "1\n"), other.stderr
    left = cli.json("show", sid, root=root)
    assert left["session"]["state"] == "INACTIVE"
    assert [e["kind"] for e in left["events"]].count("model_call") == 1  # not run again
    one_line_error(cli("send", sid, "hi", root=root), 1, "prime-agent resume")

    goal = cli("goal", sid, "went on", root=root)
    assert (goal.returncode, goal.stdout) == (0, "went on\n  active, set by user\n"), goal.stderr
    one_line_error(
        cli("schedule", "add", sid, "hi", "--every", "10m", root=root),
        1,
        f"cannot add a schedule: no server runs on {root}, and schedules tick only while one "
        f"does. Start one there and keep it running — `jupyter lab --ServerApp.root_dir={root}`",
    )

    resumed = cli("resume", sid, root=root)
    assert resumed.returncode == 0, resumed.stderr
    out = resumed.stdout
    assert "turn 1 ·" not in out and "turn 2 · model scripted/crash" in out  # only what's new
    assert "resumed: The daemon that ran this session stopped" in out
    assert "import time" in out  # the cell that was in flight, shown as not re-run
    assert out.rstrip().splitlines()[-2] == "Answer: went on"  # the goal set meanwhile
    assert cli.json("show", sid, root=root)["session"]["state"] == "DONE"
