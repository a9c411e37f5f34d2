"""A real jupyter_server with the Prime extension in a process of its own, to be killed for real
(SIGKILL, SIGTERM) and started again on the same root. Used by the recovery tests and by
bench/bench_recovery.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from tests.conftest import by_class

TOKEN = "recovery-test-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """`jupyter server` on `root`, its scripted models from `scripts` (PRIME_SCRIPTS)."""

    def __init__(
        self,
        root: Path,
        scripts: dict[str, Any],
        daemon: dict[str, Any] | None = None,
        *,
        log: Path | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.root = root
        self.home = root.parent / f"{root.name}-home"
        self.home.mkdir(exist_ok=True)
        self.scripts = self.home / "scripts.json"
        self.scripts.write_text(json.dumps(scripts))
        self.daemon = {"pool_size": 1, "default_model": "scripted/echo", **(daemon or {})}
        # More sections of the server's configuration (GatewayLauncher, say).
        self.config = config or {}
        self.log = log or self.home / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120) -> float:
        """Start the server; seconds until the daemon answers."""
        self.port = free_port()
        self.starts += 1
        config = self.home / "jupyter_server_config.json"
        config.write_text(
            json.dumps(
                {
                    "ServerApp": {
                        "jpserver_extensions": {"prime_kernel": True},
                        "port": self.port,
                        "ip": "127.0.0.1",
                        "root_dir": str(self.root),
                        "open_browser": False,
                        "allow_root": True,
                    },
                    "IdentityProvider": {"token": TOKEN},
                    **by_class(self.daemon),
                    **self.config,
                }
            )
        )
        env = {
            **os.environ,
            "PRIME_SCRIPTS": str(self.scripts),
            "JUPYTER_CONFIG_DIR": str(self.home),
            # A runtime folder per start: what the dead server left is its own.
            "JUPYTER_RUNTIME_DIR": str(self.home / f"runtime-{self.starts}"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_OFFLINE_MODE": "true",
        }
        out = self.log.open("ab")
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", f"--config={config}"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}); see {self.log}")
            try:
                if self.get("status")["started"]:
                    return time.monotonic() - started
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        raise TimeoutError(f"the server did not answer in {timeout} s; see {self.log}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> None:
        """Stop the server with `sig` (SIGKILL: the whole server dies at once, as in a crash;
        its kernels notice their parent is gone)."""
        assert self.proc is not None
        if sig == signal.SIGKILL:
            os.kill(self.proc.pid, signal.SIGKILL)
        else:
            self.proc.send_signal(sig)
        self.proc.wait(timeout)
        self.proc = None

    def request(self, method: str, path: str, body: Any = None, timeout: float = 60) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.url}/api/prime/{path}", data=data, method=method)
        req.add_header("Authorization", f"token {TOKEN}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            payload = resp.read()
        return json.loads(payload) if payload else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def start_kernel(self, name: str = "prime-agent") -> str:
        """A person's kernel (a notebook's) of this server; its id."""
        req = urllib.request.Request(
            f"{self.url}/api/kernels", data=json.dumps({"name": name}).encode(), method="POST"
        )
        req.add_header("Authorization", f"token {TOKEN}")
        with urllib.request.urlopen(req, timeout=120) as resp:
            return str(json.loads(resp.read())["id"])

    def execute(self, kernel_id: str, code: str, timeout: float = 120) -> dict[str, Any]:
        """Run `code` in a kernel of this server as JupyterLab does (its websocket); the
        reply's content, with the cell's text output as `output`."""
        return asyncio.run(self._execute(kernel_id, code, timeout))

    async def _execute(self, kernel_id: str, code: str, timeout: float) -> dict[str, Any]:
        from tornado.websocket import websocket_connect

        url = f"ws://127.0.0.1:{self.port}/api/kernels/{kernel_id}/channels?token={TOKEN}"
        ws = await websocket_connect(url)
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "session": uuid.uuid4().hex}
        request = {
            "channel": "shell",
            "header": {**header, "username": "user", "version": "5.3", "date": ""},
            "parent_header": {},
            "metadata": {},
            "content": {"code": code, "silent": False, "store_history": True},
        }
        await ws.write_message(json.dumps(request))
        output, reply, idle = [], None, False
        try:
            while reply is None or not idle:  # the reply (shell) and the outputs (iopub)
                raw = await asyncio.wait_for(ws.read_message(), timeout)
                assert raw is not None, "the kernel's websocket closed"
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream":
                    output.append(content["text"])
                elif kind in ("execute_result", "display_data"):
                    output.append(content["data"].get("text/plain", "") + "\n")
                elif kind == "error":
                    output.append("\n".join(content["traceback"]))
                elif kind == "execute_reply":
                    reply = content
                idle = idle or (kind == "status" and content["execution_state"] == "idle")
        finally:
            ws.close()
        return {**reply, "output": "".join(output)}

    def wait(
        self, predicate: Any, timeout: float = 120, what: str = "the condition", every: float = 0.2
    ) -> Any:
        """Poll `predicate()` until it returns something true; that value. A server that exited
        meanwhile (not stopped by `stop`) fails the wait at once, with its log's end."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the server exited waiting for {what}\n{self.log_tail()}")
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} was not met in {timeout} s\n{self.log_tail()}")
            time.sleep(every)

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def kernel_pids(self) -> list[int]:
        """Processes running our kernels (of any start of this server)."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if b"prime_kernel.kernel" in cmdline and str(self.home).encode() in cmdline:
                found.append(int(proc.name))
        return found
