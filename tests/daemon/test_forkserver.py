"""The fork server's own rules, with templates that cannot start (a forked kernel itself is end
to end: tests/server/test_fork.py): a failed template is a ForkError (the kernel is then
started the usual way), a template that keeps failing is not started again for a while, and a
template's environment holds nothing per kernel."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from prime_kernel.daemon import private
from prime_kernel.daemon.forkserver import RETRIES, ForkError, ForkServer, template_env


async def fork(server: ForkServer, python: str) -> None:
    read, write = os.pipe()
    try:
        await server.fork(
            python=python,
            cwd="/",
            env={"PATH": os.environ["PATH"]},
            sandbox=None,
            argv=[],
            boot_fd=read,
        )
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize(
    ("python", "why"),
    [("missing", "the kernel template did not start: "), ("false", "the kernel template ended")],
)
def test_a_template_that_fails_is_a_fork_error_and_then_rests(
    tmp_path: Path, python: str, why: str
) -> None:
    if python == "false":
        exits = tmp_path / "python"  # starts, and ends before it is ready
        exits.write_text("#!/bin/sh\nexit 3\n")
        exits.chmod(0o755)
        python = str(exits)
    else:
        python = str(tmp_path / "no-python")

    async def run() -> list[str]:
        server = ForkServer(start_timeout=30)
        errors = []
        try:
            for _ in range(RETRIES + 1):
                with pytest.raises(ForkError) as raised:
                    await fork(server, python)
                errors.append(str(raised.value))
            assert server.templates() == []
        finally:
            await server.close()
        return errors

    errors = asyncio.run(run())
    assert all(e.startswith(why) for e in errors[:RETRIES]), errors
    assert errors[RETRIES] == f"the kernel template ended {RETRIES} times in 60 s"


def test_a_templates_environment_holds_nothing_per_kernel() -> None:
    kernel = {"PATH": "/bin", "JPY_SESSION_TOKEN": "t", "JPY_API_URL": "u", "LANG": "C"}
    assert template_env(kernel, sandboxed=False) == {"PATH": "/bin", "LANG": "C"}
    sandboxed = template_env(kernel, sandboxed=True)
    folder = Path(sandboxed.pop("IPYTHONDIR"))
    assert sandboxed == {"PATH": "/bin", "LANG": "C"}
    # Not the home's IPython folder (a sandboxed kernel sees none): a private one.
    assert folder.parent == private.base() and folder.stat().st_mode & 0o777 == 0o700
