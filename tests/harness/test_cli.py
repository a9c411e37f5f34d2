"""`prime-agent harness ...` and `prime-agent refine` offline, on the files and the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prime_kernel.cli.main import main


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def run(root: Path, *argv: str) -> int:
    return main(["--root", str(root), *argv])


def test_cli_edit_history_rollback(root: Path, capsys: pytest.CaptureFixture[str]):
    assert (
        run(
            root,
            "harness",
            "new",
            "subagent",
            "reviewer",
            "--title",
            "Reviews code",
            "--content",
            "Review it.",
            "--set",
            "max_turns=3",
        )
        == 0
    )
    path = root / ".prime" / "harness" / "subagents" / "reviewer.md"
    assert "max_turns: 3" in path.read_text()
    assert (
        run(
            root,
            "harness",
            "edit",
            "subagent",
            "reviewer",
            "--content",
            "Review it twice.",
            "--reason",
            "be thorough",
        )
        == 0
    )
    assert (
        run(
            root, "harness", "edit", "subagent", "reviewer", "--content", "x", "--base-version", "1"
        )
        == 1
    )
    assert "now version 2" in capsys.readouterr().err
    assert run(root, "harness", "list") == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["KIND", "ID", "VERSION", "SCOPE", "SUMMARY"]
    assert row.split()[:4] == ["subagent", "reviewer", "v2", "project"]
    assert row.index("reviewer") == header.index("ID")  # in columns
    assert run(root, "harness", "history", "subagent", "reviewer") == 0
    out = capsys.readouterr().out
    assert "v1" in out and "v2" in out and "be thorough" in out
    assert run(root, "harness", "history", "subagent", "reviewer", "--diff", "1", "2") == 0
    assert "+Review it twice." in capsys.readouterr().out
    assert run(root, "harness", "rollback", "subagent", "reviewer", "1") == 0
    assert "Review it.\n" in path.read_text() and "twice" not in path.read_text()
    assert run(root, "harness", "rollback", "subagent", "reviewer", "9") == 1
    assert "has no version 9" in capsys.readouterr().err
    assert run(root, "harness", "show", "note", "../x") == 1
    assert "invalid id '../x'" in capsys.readouterr().err
    assert run(root, "harness", "rm", "subagent", "reviewer") == 0
    assert not path.exists()


def test_cli_reads_the_old_kind_name_with_a_note(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(root, "harness", "new", "spec", "critic", "--content", "Be critical.") == 0
    err = capsys.readouterr().err
    assert "note: the harness kind 'spec' is deprecated: use 'subagent'" in err
    assert (root / ".prime" / "harness" / "subagents" / "critic.md").is_file()
    assert run(root, "harness", "list", "--kind", "specs") == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1].split()[:2] == ["subagent", "critic"]
    assert "use 'subagents'" in err


def test_cli_refine_and_review(root: Path, script, capsys: pytest.CaptureFixture[str]):
    model = script(
        [
            {
                "text": json.dumps(
                    {
                        "summary": "Add a note",
                        "rationale": "r",
                        "expected_outcome": "o",
                        "edits": [
                            {
                                "op": "create",
                                "kind": "note",
                                "id": "be-brief",
                                "content": "Be brief.",
                                "reason": "long answers",
                            }
                        ],
                    }
                )
            }
        ]
    )
    assert run(root, "refinements") == 0  # none yet: says how to get one
    assert capsys.readouterr().out == (
        "no refinements yet: `prime-agent refine` asks a model to propose harness edits from "
        "recent sessions (they wait here for review)\n"
    )
    assert run(root, "refine", "--model", model, "shorter", "answers") == 0
    out, err = capsys.readouterr()
    assert "proposed" in out and "[0] pending  create note be-brief" in out
    # Not a terminal: the progress is one line saying what runs and for how long at most.
    assert err == f"refining with {model} (at most 120 s)…\n"
    rid = out.split()[1]
    assert run(root, "refinements") == 0
    header, row, hint = capsys.readouterr().out.splitlines()
    assert header.split() == ["ID", "STATUS", "CREATED", "SUMMARY"]
    assert row.startswith(f"{rid}  proposed") and row.endswith("Add a note")
    assert hint == "details: prime-agent refinements show ID"
    assert not (root / ".prime" / "harness" / "notes" / "be-brief.md").exists()
    assert run(root, "refinements", "approve", rid) == 0
    assert (root / ".prime" / "harness" / "notes" / "be-brief.md").is_file()
    assert run(root, "refinements", "rollback", rid) == 0
    assert not (root / ".prime" / "harness" / "notes" / "be-brief.md").exists()
    assert run(root, "refine", "--session", "nope") == 1
    assert "no session nope" in capsys.readouterr().err
