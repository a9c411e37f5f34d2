"""A real Jupyter Enterprise Gateway on loopback, as it is deployed: in a Python environment of
its own (a venv this module makes once, from PyPI, and keeps), starting the Prime kernel from a
kernelspec whose argv names the kernel's Python (this checkout's interpreter and code)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
import venv
from pathlib import Path

from tests.gateway.server import write_kernelspec
from tests.recovery.server import free_port

VERSION = "3.3.0"
TOKEN = "enterprise-gateway-test-token"
# Kept between runs: making it takes a minute (PRIME_TEST_CACHE moves it).
CACHE = Path(os.environ.get("PRIME_TEST_CACHE") or Path.home() / ".cache" / "prime_kernel")


def environment() -> Path:
    """The venv's Python, with jupyter-enterprise-gateway installed (made the first time)."""
    home = CACHE / f"enterprise-gateway-{VERSION}"
    python = home / "bin" / "python"
    done = home / "installed"
    if not done.exists():
        venv.create(home, with_pip=True, clear=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"jupyter-enterprise-gateway=={VERSION}"],
            check=True,
            timeout=900,
        )
        done.write_text(VERSION)
    return python


class EnterpriseGateway:
    """`python -m enterprise_gateway` from its own venv, with a "Prime Agent" kernelspec; only
    `users` may start kernels (Enterprise Gateway's `authorized_users`)."""

    def __init__(self, home: Path, users: list[str]) -> None:
        self.home = home
        self.users = users
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        write_kernelspec(home, "Prime Agent")

    @property
    def log(self) -> Path:
        return self.home / "gateway.log"

    def start(self) -> None:
        python = environment()
        env = {
            # Nothing of this process's Python leaks in (its packages, its PYTHONPATH).
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(self.home),
            "JUPYTER_PATH": str(self.home / "share"),
            "JUPYTER_DATA_DIR": str(self.home / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
            "JUPYTER_CONFIG_DIR": str(self.home / "config"),
        }
        users = json.dumps(self.users)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [
                    str(python),
                    "-m",
                    "enterprise_gateway",
                    "--EnterpriseGatewayApp.ip=127.0.0.1",
                    f"--EnterpriseGatewayApp.port={self.port}",
                    "--EnterpriseGatewayApp.port_retries=0",
                    f"--EnterpriseGatewayApp.auth_token={TOKEN}",
                    f"--EnterpriseGatewayApp.authorized_users={users}",
                    "--EnterpriseGatewayApp.list_kernels=True",
                ],
                env=env,
                cwd=self.home,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(self.log.read_text()[-3000:])
            try:
                self.kernels()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("Enterprise Gateway did not start: " + self.log.read_text()[-3000:])

    def kernels(self) -> list[dict[str, object]]:
        request = urllib.request.Request(
            self.url + "/api/kernels", headers={"Authorization": f"token {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=5) as resp:
            return list(json.loads(resp.read()))

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
