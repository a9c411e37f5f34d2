"""A real Jupyter Kernel Gateway on loopback, in a process of its own, with this checkout's Prime
kernelspec. Used by the gateway tests (tests/gateway/conftest.py) and by
bench/bench_fanout.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.recovery.server import free_port

REPO = Path(__file__).resolve().parents[2]
GATEWAY_TOKEN = "gateway-test-token"


def write_kernelspec(home: Path, display_name: str) -> None:
    """The Prime Agent kernelspec under HOME/share, on this Python and this checkout (the
    gateway's own Python may differ: the kernel's is named)."""
    spec = home / "share" / "kernels" / "prime-agent"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "prime_kernel.kernel", "-f", "{connection_file}"]
    kernel = {
        "argv": argv,
        "display_name": display_name,
        "language": "python",
        "env": {"PYTHONPATH": str(REPO)},
    }
    (spec / "kernel.json").write_text(json.dumps(kernel))


class Gateway:
    """`jupyter-kernel-gateway` in a process of its own, with the Prime kernelspec (this
    checkout's code) as `prime-agent`; `kill()` it (SIGKILL) and `start()` it again on the
    same port."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        write_kernelspec(home, "Prime Agent (gateway)")

    def start(self) -> None:
        env = {
            **os.environ,
            "JUPYTER_PATH": str(self.home / "share"),
            "JUPYTER_DATA_DIR": str(self.home / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
            "JUPYTER_CONFIG_DIR": str(self.home / "config"),
            "PYTHONPATH": str(REPO),
        }
        log = open(self.home / "gateway.log", "ab")  # noqa: SIM115  (the process keeps it)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernel_gateway",
                "--KernelGatewayApp.ip=127.0.0.1",
                f"--KernelGatewayApp.port={self.port}",
                f"--KernelGatewayApp.auth_token={GATEWAY_TOKEN}",
                "--KernelGatewayApp.port_retries=0",
                # The tests look at what runs there (a listing is off by default).
                "--JupyterWebsocketPersonality.list_kernels=True",
            ],
            env=env,
            cwd=self.home,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.home / "gateway.log").read_text()[-2000:])
            try:
                self.kernels()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the kernel gateway did not start")

    def kernels(self) -> list[dict[str, Any]]:
        request = urllib.request.Request(
            self.url + "/api/kernels", headers={"Authorization": f"token {GATEWAY_TOKEN}"}
        )
        for _ in range(100):
            try:
                # Kernel Gateway answers nothing while it launches a kernel's process: 8 s on
                # a loaded machine (2 cores, load 20); 60 s, as c.GatewayLauncher.request_timeout.
                with urllib.request.urlopen(request, timeout=60) as resp:
                    return list(json.loads(resp.read()))
            except urllib.error.HTTPError as e:
                # A listing made while a kernel's start is midway fails (500: jupyter_server
                # models the kernel before it has a `last_activity`); the start goes on.
                if e.code != 500:
                    raise
        raise RuntimeError("the kernel gateway failed 100 listings in a row")

    def kernel_ids(self) -> set[str]:
        return {k["id"] for k in self.kernels()}

    def shutdown_kernel(self, kernel_id: str) -> None:
        request = urllib.request.Request(
            f"{self.url}/api/kernels/{kernel_id}",
            method="DELETE",
            headers={"Authorization": f"token {GATEWAY_TOKEN}"},
        )
        with contextlib.suppress(urllib.error.HTTPError):  # 404: gone already
            urllib.request.urlopen(request, timeout=10).close()

    def kill(self) -> None:
        """As a crash: SIGKILL, no shutdown of its kernels (they notice their parent is gone)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
