"""Fixtures of the attacker suite: the same real server in each sandbox mode.

`prime_mode` is "bwrap" or "none"; tests that claim something of one mode only take that
mode's fixture. Agent kernels are started by the daemon (the pool), exactly as rlm() gets
them, and attacks run as their agent code: scripted turns that run the attack and answer
the findings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from traitlets.config import Config

from prime_kernel.daemon.sandbox import Sandbox
from tests.conftest import server_config

requires_bwrap = pytest.mark.skipif(
    Sandbox(mode="auto").probe().mode != "bwrap",
    reason="bubblewrap does not work on this machine",
)


@pytest.fixture(params=["bwrap", "none"])
def prime_mode(request: pytest.FixtureRequest) -> str:
    if request.param == "bwrap" and Sandbox(mode="auto").probe().mode != "bwrap":
        pytest.skip("bubblewrap does not work on this machine")
    return str(request.param)


@pytest.fixture
def jp_server_config(prime_config: dict[str, Any], prime_mode: str) -> Config:
    return server_config(prime_config, Sandbox={"mode": prime_mode})


@pytest.fixture
def attack(daemon: Any, user_kernel: Any, script: Callable[..., str]) -> Callable[..., Any]:
    """Run `code` as an agent's cell (it must leave a JSON-able `found`); its findings."""

    async def run(code: str) -> Any:
        model = script([{"code": code}, {"code": "import json\nanswer(json.dumps(found))"}])
        nb = await user_kernel()
        out = await nb.value(f"rlm('attack', model={model!r}).result(timeout=120)")
        return json.loads(eval(out))  # the repr of a str

    return run
