"""A real Jupyter Kernel Gateway on loopback (tests/gateway/server.py), and a server whose agent
kernels start on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import server_config
from tests.gateway.server import GATEWAY_TOKEN, Gateway


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    home = tmp_path / "gateway"
    home.mkdir()
    gw = Gateway(home)
    gw.start()
    yield gw
    gw.stop()


@pytest.fixture
def gateway_url(gateway: Gateway) -> str:
    """The gateway the daemon is told to use (override: one that is down, say)."""
    return gateway.url


@pytest.fixture
def gateway_token() -> str:
    return GATEWAY_TOKEN


@pytest.fixture
def public_url(jp_http_port: int, jp_base_url: str) -> str:
    """The daemon's URL as the gateway's kernels reach it: the test server's own port."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}"


@pytest.fixture
def prime_config(gateway_url: str, public_url: str) -> dict[str, Any]:
    return {
        "pool_size": 1,
        "max_concurrent": 4,
        "cell_timeout": 60.0,
        "keep_root_kernel": 0.0,
        "default_model": "scripted/echo",
        "gateway_url": gateway_url,
        "public_url": public_url,
    }


@pytest.fixture
def jp_server_config(prime_config: dict[str, Any], gateway_token: str) -> Config:
    return server_config(prime_config, GatewayLauncher={"auth_token": gateway_token})
