"""`prime-agent` as a user runs it: real processes, real servers and kernels, and the
deterministic `scripted/*` models (their turns in a PRIME_SCRIPTS file every process reads)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.procs import server_info


class CLI:
    """Runs `prime-agent` (this checkout's) in a private Jupyter runtime folder, so it finds
    only the servers a test starts."""

    def __init__(self, tmp_path: Path) -> None:
        self.runtime = tmp_path / "runtime"
        self.runtime.mkdir()
        self.scripts_file = tmp_path / "scripts.json"
        self.scripts_file.write_text("{}")
        self.env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(self.runtime)}
        self.env["PRIME_SCRIPTS"] = str(self.scripts_file)
        self.env.pop("PRIME_MODEL", None)
        self.started: list[subprocess.Popen[str]] = []

    def scripts(self, scripts: dict[str, Any]) -> None:
        """Scripted models: `{"name": {"turns": [...], "tools": bool}}` (see models/scripted)."""
        self.scripts_file.write_text(json.dumps(scripts))

    def command(self, *args: str, root: Path | None) -> list[str]:
        where = ["--root", str(root)] if root is not None else []
        return [sys.executable, "-m", "prime_kernel.cli.main", *where, *args]

    def __call__(
        self,
        *args: str,
        root: Path | None,
        input: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args, root=root),
            capture_output=True,
            text=True,
            input=input,
            env={**self.env, **(env or {})},
            timeout=timeout,
            cwd=self.runtime.parent,
        )

    def json(self, *args: str, root: Path) -> Any:
        proc = self(*args, "--json", root=root)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def start(self, *args: str, root: Path) -> subprocess.Popen[str]:
        """A `prime-agent` process to talk to while it runs (line-buffered pipes)."""
        process = subprocess.Popen(
            self.command(*args, root=root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=self.env,
            cwd=self.runtime.parent,
            preexec_fn=_in_the_foreground,
        )
        self.started.append(process)
        return process

    def stop_started(self) -> None:
        """Stop what a failed test left running (a `run` and its kernels): as Ctrl-C would,
        then for good."""
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _in_the_foreground() -> None:
    """Start it as a shell starts a command in the foreground, where Ctrl-C reaches it: a test
    run started in the background (`pytest &`, a CI script's `cmd &`) has SIGINT ignored, and
    every process it starts would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[CLI]:
    runner = CLI(tmp_path)
    yield runner
    runner.stop_started()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def one_line_error(proc: subprocess.CompletedProcess[str], exit_code: int, text: str) -> None:
    """The command failed with `exit_code` and said why in one line on stderr, naming `text`."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == exit_code, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("prime-agent: ") and text in lines[0], lines[0]


def read_until(stream: Any, text: str, timeout: float = 120) -> list[str]:
    """Lines read from a process's output up to (and with) the first one containing `text`."""
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    raise AssertionError(f"{text!r} never came; got {''.join(lines)!r}")


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (kernels a server started), from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited


class Server:
    """A `jupyter server` with the prime_kernel extension serving `root`, in its own process."""

    def __init__(self, cli: CLI, root: Path, *settings: str) -> None:
        self.token = secrets.token_hex(16)
        self.root = root
        self.log = cli.runtime.parent / f"server-{self.token[:8]}.log"
        with self.log.open("ab") as log:  # the child keeps its own copy of the handle
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "jupyter_server",
                    f"--ServerApp.root_dir={root}",
                    "--ServerApp.ip=127.0.0.1",
                    "--ServerApp.port=0",
                    "--ServerApp.open_browser=False",
                    "--ServerApp.allow_root=True",
                    f"--IdentityProvider.token={self.token}",
                    "--ServerApp.jpserver_extensions={'prime_kernel': True}",
                    *settings,
                ],
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=cli.env,
            )
        try:
            self.url = server_info(cli.runtime, self.process, 180)["url"]
            self.get("models")  # the daemon answers once it has started
        except (AssertionError, OSError) as e:
            # Why it did not come up is in its log (it may have exited): say it here.
            tail = self.log.read_text(errors="replace")[-4000:]
            state = self.process.poll()
            raise AssertionError(f"the server did not come up ({e}; exit {state}):\n{tail}") from e

    def get(self, path: str) -> Any:
        req = urllib.request.Request(self.url + "api/prime/" + path)
        req.add_header("Authorization", f"token {self.token}")
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)


@pytest.fixture
def start_server(cli: CLI) -> Iterator[Any]:
    """`start_server(root, *settings)`: a server on `root` (write the scripts first: a server
    reads them once), stopped after the test."""
    started: list[Server] = []

    def start(root: Path, *settings: str) -> Server:
        started.append(Server(cli, root, *settings))
        return started[-1]

    yield start
    for running in started:
        running.stop()
