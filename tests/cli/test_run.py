"""`prime-agent run` headless (no server serves the root): progress, answer, context, budgets,
logs off the terminal; then the commands that read what it left, with no server."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

import nbformat
import pytest

from prime_kernel.models import local, profiles
from tests.cli.conftest import CLI, one_line_error

SQUARES = {
    "squares": {
        "turns": [
            {
                # Also writes to the kernel's own stderr, which must land in its log.
                "code": "import os\nos.write(2, b'kernel-noise\\n')\n"
                "total = sum(i * i for i in range(1, context['n'] + 1))\nprint(total)"
            },
            {
                "code": "h = rlm('double it', context=total, model='scripted/double')\n"
                "answer(h.result())"
            },
        ]
    },
    "double": {"turns": [{"code": "answer(context * 2)"}]},
}


def test_run_shows_progress_then_the_answer(cli: CLI, root: Path, tmp_path: Path) -> None:
    cli.scripts(SQUARES)
    context = tmp_path / "input.json"
    context.write_text(json.dumps({"n": 100}))
    proc = cli(
        "run",
        "sum of squares, doubled",
        "--model",
        "scripted/squares",
        "--context",
        str(context),
        "--budget-tokens",
        "200k",
        "--budget-seconds",
        "10m",
        "--name",
        "squares",
        "--root",  # after the command: it wins over the default (the current folder)
        str(root),
        root=None,
    )
    assert proc.returncode == 0, proc.stderr
    # Nothing on the terminal but the command's own output: no server or kernel logs.
    assert proc.stderr == ""
    out = proc.stdout
    assert "\r" not in out and "\x1b" not in out  # not a terminal: plain lines, no status line
    assert "turn 1 · model scripted/squares" in out and "turn 2 · model" in out
    assert "    338350" in out  # the cell's output, under its code
    assert "started child" in out
    child_lines = [line for line in out.splitlines() if line.startswith("  [s")]
    assert any(line.endswith("] answer: 676700") for line in child_lines)
    assert out.rstrip().splitlines()[-2] == "Answer: 676700"
    logs = list((root / ".prime" / "logs").glob("run-*.log"))
    assert len(logs) == 1
    assert "Kernel started" in logs[0].read_text()
    # An agent kernel's own output goes to a log of its own, not the server's (nor its fds).
    kernel_logs = (root / ".prime" / "logs" / "kernels").glob("*.log")
    assert any("kernel-noise" in path.read_text() for path in kernel_logs)

    # What the run left, read from the store with no server running.
    listed = cli.json("sessions", root=root)
    assert len(listed) == 2 and {s["state"] for s in listed} == {"DONE"}
    parent = next(s for s in listed if s["parent_id"] is None)
    shown = cli.json("show", parent["id"], root=root)
    assert shown["session"]["name"] == "squares"
    assert shown["session"]["budget"] == {"tokens": 200_000, "seconds": 600}
    task = next(e for e in shown["events"] if e["kind"] == "task")
    assert task["data"]["context_type"] == "dict"
    text = cli("show", parent["id"], root=root).stdout
    assert "answer:  676700" in text and "338350" in text
    target = tmp_path / "out.ipynb"
    assert cli("export", parent["id"], "-o", str(target), root=root).returncode == 0
    notebook = nbformat.read(target, as_version=4)
    assert "sum of squares, doubled" in notebook.cells[0].source

    # Acting on a session that has ended, with no server: said in one line.
    one_line_error(
        cli("send", parent["id"], "hi", root=root), 2, "has ended (DONE); cannot message it"
    )
    one_line_error(cli("resume", parent["id"], root=root), 2, "has ended (DONE)")
    one_line_error(cli("show", "s000000000000", root=root), 2, "no session s000000000000")
    cancel = cli("cancel", parent["id"], root=root)
    assert cancel.returncode == 0 and "already ended (DONE)" in cancel.stdout


def test_a_terminal_shows_what_the_run_waits_for(cli: CLI, root: Path) -> None:
    cli.scripts({"slow": {"turns": [{"sleep": 4, "code": "answer(7)"}]}})
    terminal, other_end = os.openpty()
    run = subprocess.Popen(
        cli.command("run", "seven", "--model", "scripted/slow", root=root),
        stdout=other_end,
        stderr=subprocess.DEVNULL,
        env=cli.env,
    )
    os.close(other_end)
    shown = b""
    with contextlib.suppress(OSError):  # EIO once the command has exited
        while chunk := os.read(terminal, 4096):
            shown += chunk
    os.close(terminal)
    assert run.wait(60) == 0
    text = shown.decode()
    # At once: the first line, then a status line while the server starts.
    assert text.startswith(f"starting a server for {root} (about 15 s the first time)…\r\n")
    assert text.index("starting a server · 0s") < text.index("session ")
    # A status line redrawn in place while the model thinks, its seconds counting up.
    assert "turn 1: waiting for scripted/slow · 2s" in text and "\r\x1b[K" in text
    # The answer and the end are said once, at the end.
    lines = [line.rsplit("\r\x1b[K", 1)[-1] for line in text.split("\r\n")]
    assert "Answer: 7" in lines and "answer: 7" not in lines and "DONE" not in lines
    assert any(line.startswith("Session ") and "1 model call, 1 cell" in line for line in lines)
    # The next run says how long this one's server took to start.
    rerun = cli("run", "seven", "--model", "scripted/slow", root=root)
    assert rerun.stdout.startswith(f"starting a server for {root} (about "), rerun.stdout
    assert " s last time)…\n" in rerun.stdout.splitlines()[0] + "\n"


def test_quiet_prints_only_the_answer(cli: CLI, root: Path, tmp_path: Path) -> None:
    cli.scripts(
        {
            "mean": {
                "turns": [
                    {"code": "answer(sum(float(r['score']) for r in context) / len(context))"}
                ]
            }
        }
    )
    table = tmp_path / "scores.csv"
    table.write_text("name,score\nada,3\nbob,5\ncyd,10\n")
    proc = cli(
        "run", "mean score", "--model", "scripted/mean", "--context", str(table), "-q", root=root
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "6.0\n", "")


def test_a_model_that_never_answers_fails_within_its_timeout(cli: CLI, root: Path) -> None:
    cli.scripts({"mute": {"turns": [{"sleep": 3600, "text": "too late"}]}})
    proc = cli(
        "run",
        "x",
        "--model",
        "scripted/mute",
        "--config",
        "ModelRouter.model_timeout=2",
        root=root,
        timeout=120,
    )
    one_line_error(proc, 1, "FAILED: the model 'scripted/mute' did not answer within 2 s")
    assert f"(log: {root / '.prime' / 'logs'}" in proc.stderr


@pytest.mark.local_model
@pytest.mark.skipif(not local.available(), reason="the embedded model is not installed")
def test_readme_main_command_on_the_embedded_model(cli: CLI, root: Path) -> None:
    """The README's first command, as a user types it: default model, default settings."""
    proc = cli("run", "Compute the sum of the squares of 1..100", root=root, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Answer: 338350" in proc.stdout
    (listed,) = cli.json("sessions", root=root)
    shown = cli.json("show", listed["id"], root=root)
    record = shown["session"]
    assert record["model"] == local.MODEL == "local/qwen2.5-coder-0.5b"
    assert record["usage"]["own"]["cost"] == 0
    kinds = [e["kind"] for e in shown["events"]]
    assert kinds.count("model_call") == record["usage"]["own"]["model_calls"] >= 1
    assert "cell" in kinds and "answer" in kinds
    # The imports the small model is promised are the harness's own cell, said so.
    first = profiles.CODER_SETUP.splitlines()[0]
    assert f"harness setup cell [1] ok:\n  > {first}" in proc.stdout
