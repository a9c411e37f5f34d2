"""The sandbox without a kernel: its detection says why not, its command line mounts parents
before children, what a kernel sees of the Python installation, and the limits a kernel sets on
itself (moved from tests/security/test_units.py; the sandbox around real kernels is
tests/security/)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from prime_kernel.daemon.sandbox import Layout, Sandbox, SandboxMounts
from prime_kernel.daemon.sandbox.limits import KernelLimits


def test_mounts_come_parents_first(tmp_path: Path):
    home, root = tmp_path / "home", tmp_path / "home" / "work"
    store, py = root / ".prime", home / ".pyenv"
    for d in (store, py):
        d.mkdir(parents=True)
    layout = Layout(
        hidden=[str(home)], sealed=[str(store)], read_only=[str(py)], writable=[str(root)]
    )
    argv = Sandbox().command_for(["python", "-m", "k"], layout, cwd=str(root), bwrap="bwrap")
    ops = [(argv[i], argv[i + 1]) for i in range(len(argv) - 1) if argv[i].startswith("--")]
    paths = {str(home), str(root), str(store), str(py)}
    order = [op for op in ops if op[1] in paths and op[0] != "--chdir"]
    assert order == [
        ("--tmpfs", str(home)),
        ("--ro-bind", str(py)),
        ("--bind", str(root)),
        ("--tmpfs", str(store)),
        ("--remount-ro", str(store)),
    ]
    assert argv[:3] == ["/bin/sh", "-c", "trap '' INT; exec \"$@\""]
    assert argv[-3:] == ["python", "-m", "k"]


def test_the_servers_working_folder_on_sys_path_does_not_expose_home(tmp_path: Path):
    home = os.path.expanduser("~")
    layout = SandboxMounts().layout(
        root_dir=str(tmp_path),
        store_dir=str(tmp_path / ".prime"),
        runtime_dirs=[],
        python_paths=[home, "/"],  # `python -m jupyter lab` started in ~
        private_dirs=[],
        private_files=[],
    )
    assert os.path.realpath(home) in layout.hidden
    assert os.path.realpath(home) not in layout.read_only and "/" not in layout.read_only


def test_detection_says_why_not(tmp_path: Path):
    assert Sandbox(mode="none").probe().mode == "none"
    missing = Sandbox(mode="auto", bwrap_path=str(tmp_path / "no-bwrap")).probe()
    assert missing.mode == "none" and "not installed" in missing.reason
    required = Sandbox(mode="bwrap", bwrap_path=str(tmp_path / "no-bwrap")).probe()
    assert required.mode == "bwrap" and required.bwrap is None
    # A bwrap that cannot create namespaces (as with user namespaces disabled).
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    broken = Sandbox(mode="auto", bwrap_path=str(fake)).probe()
    assert broken.mode == "none" and "No permissions" in broken.reason


def test_the_probe_runs_real_bwrap_here():
    probe = Sandbox(mode="auto").probe()
    if probe.mode != "bwrap":
        pytest.skip(probe.reason)
    assert probe.version.startswith("bubblewrap")
    assert subprocess.run([probe.bwrap, "--version"], capture_output=True).returncode == 0


def test_a_kernels_limits_bind_its_own_processes_only_in_the_sandbox() -> None:
    limits = KernelLimits(memory_limit=1 << 30, cpu_time_limit=0, process_limit=64)
    outside = limits.rlimits(sandboxed=False)
    # No user namespace of its own outside: a process limit would count every process of
    # the server's user.
    assert "nproc" not in outside and limits.rlimits(sandboxed=True)["nproc"] == 64
    assert outside["data"] == 1 << 30 and outside["core"] == 0
    assert "cpu" not in outside  # 0: no limit
    half = KernelLimits().rlimits(sandboxed=False)
    assert half["data"] == half["as"] > 0  # -1: half the machine's memory
