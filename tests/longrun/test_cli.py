"""The CLI of long-horizon control: `run --autonomous --gate`, `goal`, `schedule add|list|rm`,
and `show` rendering the new events."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from prime_kernel.cli.main import main as cli_main
from tests.conftest import start_session, wait_for


def prime_agent(*args: str, root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    full.pop("PRIME_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", "prime_kernel.cli.main", "--root", str(root), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
    )


def test_run_autonomous_until_the_gate_passes(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    scripts = tmp_path / "scripts.json"
    turns = [
        {"code": "answer('first try')"},
        {"code": "open('ok.txt', 'w').write('ok')\nanswer('second try')"},
    ]
    scripts.write_text(json.dumps({"auto": {"turns": turns}}))
    env = {"PRIME_SCRIPTS": str(scripts)}
    argv = ["run", "make ok.txt", "--model", "scripted/auto", "--autonomous"]
    done = prime_agent(
        *argv,
        "--gate",
        "test -f ok.txt",
        "--config",
        "KernelCustody.pool_size=0",
        root=root,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "continuation 1 of 3" in out and "gate failed: test -f ok.txt (exit status 1)" in out
    assert "continuation 2 of 3 (the previous one ended: it answered)" in out
    assert "gate passed: test -f ok.txt (exit status 0)" in out
    assert "Answer: second try" in out
    sid = out.split("Session ", 1)[1].split()[0]
    shown = prime_agent("show", sid, root=root, env=env)
    assert "── gate failed: test -f ok.txt (exit status 1)" in shown.stdout, shown.stdout

    # Refused before any server starts.
    bad = prime_agent("run", "x", "--autonomous", "--gate", "no-such-program-q", root=root, env=env)
    assert bad.returncode == 2 and "'no-such-program-q' does not exist" in bad.stderr
    bad = prime_agent("run", "x", "--gate", "true", root=root, env=env)
    assert bad.returncode == 2 and "--gate and --continuations go with --autonomous" in bad.stderr


async def _cli(*argv: str, capsys: Any) -> tuple[int, str, str]:
    code = await asyncio.to_thread(cli_main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_goal_and_schedule_commands(daemon, jp_fetch, jp_serverapp, script, capsys):
    jp_serverapp.write_server_info_file()  # how `prime-agent` finds a running daemon
    root = daemon.root_dir
    model = script([{"code": "answer('up')"}] + [{"text": "tick seen"}] * 50)
    sid = await start_session(jp_fetch, "stay", model=model, persistent=True)
    await wait_for(lambda: daemon.registry.live[sid].state.value == "IDLE", timeout=120)

    code, out, _ = await _cli("--root", root, "goal", sid, capsys=capsys)
    assert (code, out) == (0, f"{sid} has no goal\n")
    code, out, _ = await _cli("--root", root, "goal", sid, "Watch the queue", capsys=capsys)
    assert code == 0 and out.startswith("Watch the queue\n  active, set by user")
    code, out, _ = await _cli("--root", root, "goal", sid, "--progress", "3 left", capsys=capsys)
    assert "  - 3 left" in out
    code, out, err = await _cli("--root", root, "goal", sid, "x", "--clear", capsys=capsys)
    assert code == 2 and "give one of" in err

    code, out, _ = await _cli(
        "--root", root, "schedule", "add", sid, "check", "--every", "1h", capsys=capsys
    )
    assert code == 0 and f"every 1h → {sid}: 'check' (owner you" in out
    hid = out.split()[1].rstrip(":")
    code, out, err = await _cli(
        "--root", root, "schedule", "add", sid, "x", "--cron", "99 * * * *", capsys=capsys
    )
    assert code == 1 and "the minute field '99': 99 is out of range 0-59" in err
    code, out, _ = await _cli("--root", root, "schedule", "list", capsys=capsys)
    assert out.startswith(f"{hid}  active") and out.count("\n") == 1
    code, out, _ = await _cli("--root", root, "schedule", "rm", hid, capsys=capsys)
    assert out == f"schedule {hid} cancelled\n"
    code, out, _ = await _cli("--root", root, "schedule", "list", capsys=capsys)
    assert out == "no schedules\n"
    code, out, _ = await _cli("--root", root, "schedule", "list", "--all", "--json", capsys=capsys)
    assert [s["state"] for s in json.loads(out)] == ["cancelled"]
