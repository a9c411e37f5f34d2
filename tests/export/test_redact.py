"""Secrets never leave in an export: env keys, config keys, kernel tokens, the server token."""

from __future__ import annotations

import json

import nbformat
from traitlets.config import Config

from prime_kernel.daemon.daemon import Daemon
from prime_kernel.util.redact import REDACTED, Redactor, config_secrets, environment_secrets

from .conftest import finish

PLANTED = "sk-planted-0123456789abcdef"


def test_environment_names_that_hold_secrets():
    env = {
        "OPENAI_API_KEY": "sk-aaaaaaaaaaaa",
        "GITHUB_TOKEN": "ghp_bbbbbbbbbbbb",
        "MY_SECRET": "cccccccccccc",
        "AWS_SECRET_ACCESS_KEY": "dddddddddddd",
        "WATSONX_APIKEY": "eeeeeeeeeeee",
        "HOME": "/home/someone",
        "TOKENIZERS_PARALLELISM": "false",
    }
    assert environment_secrets(env) == {
        "sk-aaaaaaaaaaaa",
        "ghp_bbbbbbbbbbbb",
        "cccccccccccc",
        "dddddddddddd",
        "eeeeeeeeeeee",
    }


def test_config_values_under_key_like_names():
    config = {
        "Daemon": {"model_kwargs": {"api_key": "k-1234567890", "temperature": 0.2}},
        "IdentityProvider": {"token": "t-1234567890"},
        "Other": [{"password": "p-1234567890"}, {"name": "not-a-secret"}],
        "Host": {
            "model_kwargs": {
                "extra_headers": {"Authorization": "Bearer h-1234567890", "X-Api-Key": "x-123456"}
            }
        },
    }
    assert config_secrets(config) == {
        "k-1234567890",
        "t-1234567890",
        "p-1234567890",
        "Bearer h-1234567890",
        "x-123456",
    }


def test_redactor_replaces_everywhere_longest_first():
    redactor = Redactor(["abcdefgh", "abcdefgh-longer", "short", None, ""])
    assert redactor.count == 2  # values under 8 characters would blank ordinary words
    node = nbformat.from_dict({"a": ["x abcdefgh-longer y", {"abcdefgh": "abcdefgh"}], "n": 3})
    out = redactor.value(node)
    assert out == {"a": [f"x {REDACTED} y", {REDACTED: REDACTED}], "n": 3}
    assert isinstance(out, nbformat.NotebookNode) and isinstance(out["a"][1], dict)
    assert Redactor([]).text("abcdefgh") == "abcdefgh"


def test_daemon_secrets_include_config_env_and_live_tokens(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-123456789")
    config = Config({"Host": {"model_kwargs": {"api_key": "from-config-123"}}})
    daemon = Daemon(root_dir=str(tmp_path), config=config)
    token = daemon.tokens.mint("kernel-1")
    daemon.secrets.add("server-token-123")
    found = daemon.secrets.known()
    assert {"sk-ant-123456789", "from-config-123", token, "server-token-123"} <= found
    # ... and the daemon's scrubber blanks each of them out of any value.
    value = {"text": f"a {token} b sk-ant-123456789 server-token-123", "n": [token]}
    assert daemon.secrets.scrub(value) == {
        "text": f"a {REDACTED} b {REDACTED} {REDACTED}",
        "n": [REDACTED],
    }


async def test_planted_secrets_are_gone_from_the_export(
    daemon, script, exporter, jp_fetch, jp_serverapp, monkeypatch, tmp_path
):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    server_token = jp_serverapp.identity_provider.token
    assert len(server_token) >= 8
    model = script(
        [
            {"text": f"The key is {PLANTED}.", "code": f"key = {PLANTED!r}\nprint(key)"},
            {"code": "import prime_kernel.kernel.client as c\nprint(c.credentials()[1])"},
            {"code": f"print({server_token!r})\nkey"},
            {"code": "answer(key)"},
        ]
    )
    record = await finish(daemon, f"Keep {PLANTED} safe", model)
    assert record["state"] == "DONE"
    kernel_token = daemon.tokens.live_tokens()
    raw = json.dumps(await daemon.listing.events(record["id"]))
    # No secret even reaches the store: the daemon scrubs every event as it is recorded.
    for secret in [PLANTED, server_token, *kernel_token]:
        assert secret not in raw
    assert raw.count(REDACTED) >= 4

    resp = await jp_fetch("api", "prime", "sessions", record["id"], "export")
    text = resp.body.decode()
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    for secret in [PLANTED, server_token, *kernel_token]:
        assert secret not in text
    assert REDACTED in nb.cells[0].source  # the task, in the header
    assert REDACTED in nb.metadata.prime.prompt
    outputs = [c.outputs for c in nb.cells if c.cell_type == "code"]
    assert outputs[0][0].text == f"{REDACTED}\n"
    assert outputs[1][0].text == f"{REDACTED}\n"
    assert outputs[2][1].data["text/plain"] == f"'{REDACTED}'"
