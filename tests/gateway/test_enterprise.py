"""`prime-agent run --gateway` on a real Enterprise Gateway (tests/gateway/enterprise.py) that
lets only `alice` start kernels: with KERNEL_USERNAME=alice in the environment (as Enterprise
Gateway's docs say to set it) the agent runs there; without it, the session fails with the
gateway's own reason."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import CLI, cli, root  # noqa: F401  (fixtures)
from tests.gateway.enterprise import TOKEN, EnterpriseGateway


@pytest.fixture
def enterprise_gateway(tmp_path: Path) -> Iterator[EnterpriseGateway]:
    home = tmp_path / "eg"
    home.mkdir()
    gateway = EnterpriseGateway(home, users=["alice"])
    gateway.start()
    yield gateway
    gateway.stop()


@pytest.mark.timeout(600)
def test_run_on_enterprise_gateway_forwards_kernel_variables(
    cli: CLI,  # noqa: F811  (the fixture imported above)
    root: Path,  # noqa: F811
    enterprise_gateway: EnterpriseGateway,
) -> None:
    cli.scripts(
        {"where": {"turns": [{"code": "import os\nanswer(os.environ.get('KERNEL_USERNAME'))"}]}}
    )
    env = {"PRIME_GATEWAY_AUTH_TOKEN": TOKEN, "KERNEL_USERNAME": "alice"}
    argv = ["run", "who am I", "--model", "scripted/where", "--gateway", enterprise_gateway.url]
    ran = cli(*argv, "-q", root=root, env=env)
    assert (ran.returncode, ran.stdout) == (0, "alice\n"), (
        ran.stderr + enterprise_gateway.log.read_text()[-2000:]
    )

    # Without it the gateway refuses the start, and says why: that is what the user reads.
    cli.env.pop("KERNEL_USERNAME", None)
    refused = cli(*argv, "-q", root=root, env={"PRIME_GATEWAY_AUTH_TOKEN": TOKEN})
    assert refused.returncode == 1
    # (root is refused as one of its default unauthorized_users; another user as not alice)
    said = refused.stderr
    assert f"refused the request (HTTP 403): User '{getpass.getuser()}' is " in said, said
    assert "to start kernel 'Prime Agent'. Ensure KERNEL_USERNAME is set" in said
    assert "check c.GatewayLauncher.auth_token" not in said  # not a credentials problem
