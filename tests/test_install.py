"""What `pip install` must have done: the kernelspec, the server and the lab extension."""

from __future__ import annotations

import json
import subprocess
import sys


def jupyter(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "jupyter", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def test_kernelspec_is_installed() -> None:
    specs = json.loads(jupyter("kernelspec", "list", "--json"))["kernelspecs"]
    spec = specs["prime-agent"]["spec"]
    assert spec["display_name"] == "Prime Agent"
    assert spec["metadata"]["kernel_provisioner"]["provisioner_name"] == "prime-provisioner"


def test_server_extension_is_enabled() -> None:
    out = jupyter("server", "extension", "list")
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("prime_kernel"))
    assert "enabled" in line
    assert "prime_kernel 0" in out and "OK" in out


def test_lab_extension_is_installed_and_enabled() -> None:
    out = jupyter("labextension", "list")
    line = next(ln for ln in out.splitlines() if "prime-kernel" in ln)
    assert "enabled" in line and "OK" in line


def test_provisioner_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group="jupyter_client.kernel_provisioners")}
    assert names["prime-provisioner"] == "prime_kernel.provisioner:PrimeProvisioner"
