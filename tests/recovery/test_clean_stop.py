"""A server stopped with SIGTERM ends the sessions of its notebooks (their kernels go with it)
before its store closes, and logs no error doing so; with no server, every record reads as what
it now is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from prime_kernel.daemon.recovery import NOTEBOOK_ENDED

from .server import ServerProcess


@pytest.mark.timeout(300)
def test_sigterm_ends_the_notebook_sessions_quietly(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = ServerProcess(root, {"echo": {"turns": [{"text": "echo"}]}})
    server.start()
    try:
        kernel_id = server.start_kernel()
        reply = server.execute(kernel_id, "print(len(agents()))")  # its first call
        assert (reply["status"], reply["output"]) == ("ok", "0\n"), reply
        (notebook,) = [s for s in server.get("sessions")["sessions"] if s["kind"] == "notebook"]
        assert notebook["state"] == "IDLE"
    finally:
        server.stop(signal.SIGTERM)
    log = server.log.read_text(errors="replace")
    assert "Traceback" not in log and "the store is not open" not in log, log[-3000:]

    # Read from the store by the CLI (no server now): ended by the server that ran it, and its
    # trajectory says why.
    runtime = tmp_path / "no-servers"
    runtime.mkdir()
    cli = [sys.executable, "-m", "prime_kernel.cli.main", "--root", str(root)]
    shown = subprocess.run(
        [*cli, "show", notebook["id"], "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)},
        check=True,
    )
    data = json.loads(shown.stdout)
    assert data["session"]["state"] == "DONE"
    assert data["events"][-1]["data"] == {"state": "DONE", "reason": NOTEBOOK_ENDED}
