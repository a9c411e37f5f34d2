"""The daemon's secrets (no server, no store): what the config, the environment, the server and
live kernel tokens hold is known, and blanked out of any value, for as long as it is a secret."""

from __future__ import annotations

import pytest
from traitlets.config import Config

from prime_kernel.daemon.access import TokenRegistry
from prime_kernel.daemon.secrets import Secrets
from prime_kernel.util.redact import REDACTED


def test_every_secret_the_daemon_knows_is_blanked_while_it_is_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-123456789")
    tokens = TokenRegistry()
    config = Config({"Host": {"model_kwargs": {"api_key": "from-config-123"}}})
    secrets = Secrets(config, tokens)
    token = tokens.mint("kernel-1")
    secrets.add("server-token-123", None)
    assert {"sk-ant-123456789", "from-config-123", token, "server-token-123"} <= secrets.known()
    text = f"{token} sk-ant-123456789 from-config-123 server-token-123 plain"
    assert secrets.scrub({"t": [text]}) == {"t": [" ".join([REDACTED] * 4 + ["plain"])]}
    assert secrets.redactor().text(token) == REDACTED
    tokens.revoke("kernel-1")  # a revoked token is no secret any more
    assert token not in secrets.known() and secrets.scrub(token) == token
