"""Commands that only read or edit files answer without the daemon's heavy imports (litellm,
jupyter_server and jupyter_client, the daemon, jsonschema's IRI parser): each is run in a
process of its own that then lists which of those it imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import CLI

HEAVY = (
    "litellm",
    "jupyter_server",
    "jupyter_client",
    "prime_kernel.daemon.daemon",
    "prime_kernel.harness.refine",
    "prime_kernel.harness.reply",
    "rfc3987_syntax",
    "jsonschema",
)
# Runs a command as `prime-agent` would, then prints what of HEAVY it imported.
PROBE = f"""
import json, sys
from prime_kernel.cli.main import main
code = main(sys.argv[1:])
print("IMPORTED", json.dumps([m for m in {HEAVY!r} if sys.modules.get(m) is not None]))
sys.exit(code)
"""


def imported(cli: CLI, root: Path, *argv: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "--root", str(root), *argv],
        capture_output=True,
        text=True,
        env=cli.env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("IMPORTED "), proc.stdout
    return list(json.loads(last.removeprefix("IMPORTED ")))


@pytest.fixture
def session(cli: CLI, root: Path) -> str:
    """A session in the store (no server runs)."""
    cli.scripts({"ok": {"turns": [{"code": "answer(1)"}]}})
    assert cli("run", "one", "--model", "scripted/ok", "-q", root=root).returncode == 0
    return str(cli.json("sessions", root=root)[0]["id"])


def test_reading_and_editing_commands_import_nothing_heavy(
    cli: CLI, root: Path, session: str
) -> None:
    for argv in (
        ["harness", "list"],
        ["harness", "new", "note", "style", "--content", "Be brief."],
        ["harness", "show", "note", "style"],
        ["refinements"],
        ["doctor"],
        ["sessions"],
        ["show", session],
        ["goal", session],
        ["schedule", "list"],
    ):
        assert imported(cli, root, *argv) == [], argv


def test_doctor_reads_the_servers_config_files(cli: CLI, root: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"Sandbox": {"network": False}, "KernelLimits": {"process_limit": 77}})
    )
    env = {"JUPYTER_CONFIG_DIR": str(config)}
    report = json.loads(cli("doctor", "--json", root=root, env=env).stdout)
    assert (report["network"], report["limits"].get("nproc")) == (False, 77)
    # --config wins over the files.
    shown = cli("doctor", "--json", "--config", "Sandbox.network=True", root=root, env=env)
    assert json.loads(shown.stdout)["network"] is True


def test_a_mistyped_option_shows_its_commands_usage(cli: CLI, root: Path) -> None:
    proc = cli("run", "a task", "--turbo", root=root)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: prime-agent run [-h]")
    assert proc.stderr.rstrip().endswith("prime-agent run: error: unrecognized arguments: --turbo")
    proc = cli("harness", "list", "--all", root=root)
    assert proc.stderr.startswith("usage: prime-agent harness list [-h]")
