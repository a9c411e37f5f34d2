"""Bad input to `prime-agent`: one clear line on stderr and a non-zero exit, before any server
starts (nothing is written under the root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import CLI, one_line_error


@pytest.fixture
def files(tmp_path: Path) -> Path:
    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "bad.json").write_text('{"a": 1,}')
    (folder / "bad.csv").write_text("a,b\n1,2\n3,4,5\n")
    (folder / "empty.txt").write_text("  \n")
    (folder / "binary.txt").write_bytes(b"\xff\xfe\x00 not text")
    return folder


BAD_RUNS = [
    (["--model", "nonexistent-model"], "unknown model 'nonexistent-model'"),
    (["--model", "local/smollm"], "unknown model 'local/smollm': the embedded models are"),
    (["--model", "scripted/nope"], "no scripted model named 'nope'"),
    (["--max-turns", "0"], "--max-turns must be from 1 to 10000"),
    (["--budget-tokens", "lots"], "--budget-tokens must be a number like 50000 or 200k"),
    (["--budget-tokens", "-5"], "budget tokens must not be negative"),
    (["--budget-seconds", "10 parsecs"], "--budget-seconds must be seconds or a duration"),
    (["--budget-dollars", "$x"], "--budget-dollars must be a number of dollars"),
    (["--context", "{inputs}/missing.json"], "No such file or directory"),
    (["--context", "{inputs}/bad.json"], "is not valid JSON: Expecting property name"),
    (["--context", "{inputs}/bad.csv"], "line 3: more fields than the header has"),
    (["--context", "{inputs}/empty.txt"], "is empty"),
    (["--context", "{inputs}/binary.txt"], "is not UTF-8 text"),
    (["--gateway", "gateway:8888"], "--gateway wants an http(s) URL, not 'gateway:8888'"),
    (["--public-url", "http://host:8888/"], "--public-url goes with --gateway"),
    (["--config", "foo"], "--config wants Class.trait=VALUE"),
    (["--config", "Daemon.pool_siz=0"], "the Daemon has no setting 'pool_siz'"),
    (["--config", "Daemon.pool_size=many"], "--config Daemon.pool_size wants an int"),
]


@pytest.mark.parametrize(("options", "message"), BAD_RUNS, ids=lambda v: str(v)[:40])
def test_bad_run_input_is_one_line(
    cli: CLI, root: Path, files: Path, options: list[str], message: str
) -> None:
    cli.scripts({"ok": {"turns": [{"code": "answer(1)"}]}})
    options = [o.replace("{inputs}", str(files)) for o in options]
    if not any(o == "--model" for o in options):
        options += ["--model", "scripted/ok"]
    proc = cli("run", "a task", *options, root=root)
    one_line_error(proc, 2, message)
    # Checks that take seconds (importing litellm for a hosted model, the daemon for its
    # settings) come after the first line, which says the server is next.
    slow = "nonexistent-model" in options or any(o.startswith("Daemon.") for o in options)
    assert proc.stdout == (
        f"starting a server for {root} (about 15 s the first time)…\n" if slow else ""
    )
    assert not (root / ".prime").exists()  # refused before any server started


def test_a_missing_key_is_one_line(cli: CLI, root: Path) -> None:
    cli.env = {k: v for k, v in cli.env.items() if not k.startswith("OPENAI")}
    proc = cli("run", "a task", "--model", "openai/gpt-4o-mini", "-q", root=root)
    one_line_error(proc, 2, "model 'openai/gpt-4o-mini' needs OPENAI_API_KEY")
    assert proc.stdout == ""
    assert not (root / ".prime").exists()


def test_reading_commands_without_a_store_or_folder(cli: CLI, root: Path) -> None:
    for command in (["sessions"], ["show", "s1"], ["export", "s1"], ["send", "s1", "hi"]):
        one_line_error(cli(*command, root=root), 2, "no Prime store in")
    one_line_error(cli("sessions", root=root / "missing"), 2, "is not a folder")
    one_line_error(cli("run", "x", root=root / "missing"), 2, "is not a folder")
    # The list's options are checked as the server checks its query (SessionFilter).
    one_line_error(cli("sessions", "--state", "bogus", root=root), 2, "unknown state 'BOGUS'")
    one_line_error(cli("sessions", "--limit", "0", root=root), 2, "limit must be an integer from 1")


def test_help_lists_every_command(cli: CLI, root: Path) -> None:
    proc = cli("--help", root=None)
    assert proc.returncode == 0
    for command in ("run", "resume", "sessions", "show", "send", "cancel", "export", "harness"):
        assert command in proc.stdout
    run_help = cli("run", "--help", root=None).stdout
    assert "--context FILE" in run_help and "200k" in run_help and "--root ROOT" in run_help
