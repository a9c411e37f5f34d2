"""`prime-agent verify` with no server: a session run headless is verified from the store, the
harness learns from it, and `refinements` reviews what was learned."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import CLI, one_line_error

SQUARES = {
    "squares": {
        "turns": [
            {"fenced": "total = 0\nfor i in range(1, 101):\n    total += i * i\nprint(total)"},
            {"fenced": "answer(total)"},
        ],
        "tools": False,
    }
}


def test_verify_then_review_what_was_learned(cli: CLI, root: Path) -> None:
    cli.scripts(SQUARES)
    proc = cli(
        "run", "What is the sum of the squares of 1..100?", "--model", "scripted/squares", root=root
    )
    assert proc.returncode == 0, proc.stderr
    [session] = cli.json("sessions", root=root)
    sid = session["id"]

    proc = cli("verify", sid, root=root)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"verified {sid} right (by user)"
    assert lines[1].startswith("learned: worked example example/sum-square")
    rid = lines[1].split(" proposed in ")[1].split(":")[0]
    assert f"prime-agent refinements approve {rid}" in lines[1]

    assert cli("refinements", "approve", rid, root=root).returncode == 0
    listed = cli("harness", "list", "--kind", "example", root=root).stdout.splitlines()
    kind, entry_id = listed[1].split()[:2]
    assert kind == "example" and entry_id.startswith("sum-square-")
    assert "What is the sum of the squares" in listed[1]

    proc = cli("verify", sid, "--wrong", "--note", "squares of 0..100", root=root)
    assert proc.returncode == 0, proc.stderr
    assert f"verified {sid} wrong (by user)" in proc.stdout
    assert "learned: caution example/sum-square" in proc.stdout
    # The first verdict's worked example was taken back; the caution waits for review.
    assert "sum-square-" not in cli("harness", "list", root=root).stdout
    shown = cli("show", sid, root=root).stdout
    assert "answer verified wrong by user (squares of 0..100)" in shown

    one_line_error(cli("verify", "s-nope", root=root), 1, "s-nope")
