"""`prime-agent replay` as a user runs it: record a tree with `run`, replay it headless (no
model is asked: the scripts are emptied first), change an input file, branch with --until."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import CLI, one_line_error

TREE = {
    "tree": {
        "turns": [
            {"code": "text = open('data.txt').read().strip()\nprint(text)"},
            {
                "code": "hs = rlm.map('double it', contexts=[1, 2], model='scripted/double')\n"
                "vals = rlm.gather(*hs)\nprint(vals)"
            },
            {"code": "answer(f'{text}: {sum(vals)}')"},
        ]
    },
    "double": {"turns": [{"code": "print(context * 2)"}, {"code": "answer(context * 2)"}]},
}
# Scripts whose every turn fails the session: a replay that asked a model would show it.
MUTE = {
    name: {"turns": [{"text": ""}] * len(spec["turns"])}
    for name, spec in TREE.items()  # type: ignore[arg-type]
}


def record(cli: CLI, root: Path) -> str:
    (root / "data.txt").write_text("hello\n")
    cli.scripts(TREE)
    result = cli.json("run", "read and double", "--model", "scripted/tree", root=root)
    assert result["answer"] == "hello: 6"
    return str(result["id"])


def test_replay_reruns_the_tree_and_reports_a_changed_file(cli: CLI, root: Path) -> None:
    sid = record(cli, root)
    cli.scripts(MUTE)
    proc = cli("replay", sid, "--subtree", root=root)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert "Answer: hello: 6" in proc.stdout
    assert f"model replay/{sid}" in proc.stdout
    assert lines[-1] == "replayed 7 turns in 3 sessions, 0 divergent"

    (root / "data.txt").write_text("goodbye\n")
    proc = cli("replay", sid, "-q", root=root)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "goodbye: 6"  # children ended as recorded: only the root's code ran
    assert "1 divergent of 3 cells" in lines[1] and sid in lines[1]
    assert lines[2] == "  first divergent cell: turn 1, cell 1"
    assert "open('data.txt')" in lines[3]
    assert "  -hello" in lines and "  +goodbye" in lines
    assert lines[-1] == "replayed 3 turns in 1 sessions, 1 divergent"


def test_until_branches_to_a_live_model(cli: CLI, root: Path) -> None:
    sid = record(cli, root)
    # The live model is asked from turn 3 on (its script is indexed by turn).
    live = {"turns": [{"text": "-"}, {"text": "-"}, {"code": "answer('branched: ' + text)"}]}
    cli.scripts({**MUTE, "live": live})
    proc = cli("replay", sid, "--until", "2", "--model", "scripted/live", root=root)
    assert proc.returncode == 0, proc.stderr
    assert "Answer: branched: hello" in proc.stdout
    assert "turn 3 · model scripted/live" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "replayed 2 turns in 1 sessions, 0 divergent"
    shown = cli.json("show", sid, root=root)
    assert shown["session"]["state"] == "DONE"  # the recording is left as it was


def test_bad_replays_are_refused_in_one_line(cli: CLI, root: Path) -> None:
    one_line_error(cli("replay", "s_nope", root=root), 2, "no Prime store in")
    one_line_error(cli("replay", "s_x", "--model", "m", root=root), 2, "--model goes with --until")
    one_line_error(cli("replay", "s_x", "--until", "-1", root=root), 2, "--until must be")
