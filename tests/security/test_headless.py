"""`prime-agent run`: the server's token is on no command line, and the agent's answer is
unpickled with the allow-list (the server process runs none of the agent's code)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import until_opened
from tests.procs import server_info


def test_run_keeps_its_token_off_the_command_line_and_refuses_a_bomb(tmp_path: Path) -> None:
    root, runtime = tmp_path / "work", tmp_path / "runtime"
    root.mkdir()
    marker = tmp_path / "pwned"
    bomb = (
        # Runs until the test has read the command line (the run lives as long as its session).
        until_opened(root / "cmdline-read") + "\nclass Bomb:\n    def __reduce__(self):\n"
        f"        return (os.system, ('touch {marker}',))\n"
        "answer(Bomb())"
    )
    scripts = tmp_path / "scripts.json"
    scripts.write_text(json.dumps({"bomb": {"turns": [{"code": bomb}]}}))
    env = {**os.environ, "PRIME_SCRIPTS": str(scripts), "JUPYTER_RUNTIME_DIR": str(runtime)}
    env.pop("PRIME_MODEL", None)
    argv = ["--root", str(root), "run", "go", "--model", "scripted/bomb"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prime_kernel.cli.main",
            *argv,
            "--config",
            "KernelCustody.pool_size=0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        token = server_info(runtime, proc, 120)["token"]
        assert len(token) >= 32
        with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
            assert token.encode() not in f.read()
        (root / "cmdline-read").touch()
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert "Answer: <" in out and "Bomb object" in out, (out, err)
    assert not marker.exists()
