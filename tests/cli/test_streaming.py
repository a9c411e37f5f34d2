"""`prime-agent run` shows a streamed reply as it arrives on a terminal (over jupyter_server's
event bus), once; elsewhere its output is what it always was: the stored reply, one line."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from tests.cli.conftest import CLI

PIECES = ["alpha ", "beta ", "gamma ", "delta"]
# A second apart: a reply shown only once stored would show all four at one instant.
CHATTY = {
    "chatty": {
        "turns": [
            {"text": "".join(PIECES), "pieces": PIECES, "piece_delay": 1.0, "code": "x = 7"},
            {"code": "answer(x)"},
        ]
    }
}


def test_a_terminal_shows_the_reply_as_it_streams(cli: CLI, root: Path) -> None:
    cli.scripts(CHATTY)
    terminal, other_end = os.openpty()
    run = subprocess.Popen(
        cli.command("run", "seven", "--model", "scripted/chatty", root=root),
        stdout=other_end,
        stderr=subprocess.DEVNULL,
        env=cli.env,
    )
    os.close(other_end)
    shown = b""
    first_seen: dict[str, float] = {}
    with contextlib.suppress(OSError):  # EIO once the command has exited
        while chunk := os.read(terminal, 4096):
            shown += chunk
            for piece in PIECES:
                if piece.strip() in shown.decode(errors="replace"):
                    first_seen.setdefault(piece, time.monotonic())
    os.close(terminal)
    assert run.wait(120) == 0
    text = shown.decode()
    # Each piece was on the terminal before the next was sent: the first three pieces were
    # seen at least two seconds before the last one (it was sent three seconds after).
    assert first_seen[PIECES[-1]] - first_seen[PIECES[0]] >= 2.0, first_seen
    # Written in place on one line, not redrawn over by the status line...
    lines = [line.rsplit("\r\x1b[K", 1)[-1] for line in text.split("\r\n")]
    assert "says: alpha beta gamma delta" in lines, repr(text)
    # ...and not shown again when the stored reply is read.
    assert text.count("delta") == 1
    assert "Answer: 7" in lines


def test_output_that_is_not_a_terminal_has_no_pieces(cli: CLI, root: Path) -> None:
    cli.scripts(CHATTY)
    proc = cli("run", "seven", "--model", "scripted/chatty", root=root)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines.count("says: alpha beta gamma delta") == 1
    assert "\r" not in proc.stdout and "\x1b" not in proc.stdout
    assert lines[-1].startswith("Answer: 7") or "Answer: 7" in lines
