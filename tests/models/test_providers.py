"""Model providers from the entry-point group: ours declared like another package's, a broken
one skipped with a log line, another package's served through the real litellm path."""

from __future__ import annotations

import asyncio
import logging
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.models import local, providers, scripted
from prime_kernel.models.router import ModelRouter, import_litellm
from prime_kernel.protocol.errors import ModelError

ROOT = Path(__file__).resolve().parents[2]


def _ep(name: str, value: str) -> EntryPoint:
    return EntryPoint(name, value, providers.GROUP)


def _echo_register(litellm: Any) -> None:
    class Echo(litellm.CustomLLM):
        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            return litellm.ModelResponse(
                model=model,
                choices=[
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": "echo: " + messages[-1]["content"],
                        },
                    }
                ],
            )

    litellm.custom_provider_map = [
        *(p for p in litellm.custom_provider_map if p["provider"] != "echo"),
        {"provider": "echo", "custom_handler": Echo()},
    ]


def _echo_check(model: str) -> None:
    if model != "echo/one":
        raise LookupError(f"no echo model {model!r}; the only one is 'echo/one'")


# What another package's `[project.entry-points."prime_kernel.model_providers"]` would name.
echo_provider = providers.ModelProvider(
    register=_echo_register, check=_echo_check, models=lambda: ["echo/one"]
)


def test_our_pyproject_declares_the_builtins_in_the_group_and_they_load() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"][providers.GROUP]
    loaded = providers.load(_ep(name, value) for name, value in declared.items())
    assert loaded == {"local": local.model_provider, "scripted": scripted.model_provider}
    assert loaded["local"].response_schema and not loaded["scripted"].response_schema


def test_a_broken_entry_point_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    eps = [
        _ep("missing", "prime_kernel_no_such_package.models:model_provider"),
        _ep("wrong", "prime_kernel.models.scripted:PROVIDER"),  # a str, not a provider
        _ep("echo", f"{__name__}:echo_provider"),
        _ep("echo", "another_package:model_provider"),  # the prefix is taken: ignored
    ]
    with caplog.at_level(logging.WARNING, logger=providers.__name__):
        loaded = providers.load(eps)
    assert loaded == {"echo": echo_provider}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert "'missing'" in lines[0] and "failed to load" in lines[0]
    assert "No module named 'prime_kernel_no_such_package'" in lines[0]
    assert "'wrong'" in lines[1] and "names a str, not a" in lines[1]
    assert "'another_package:model_provider' ignored" in lines[2]


def test_an_unknown_prefix_names_the_installed_providers() -> None:
    with pytest.raises(ModelError) as e:
        ModelRouter().validate("nosuchprovider/model")
    message = e.value.message
    assert "knows the provider 'nosuchprovider'" in message
    assert "(those serve local/, scripted/)" in message


def test_another_packages_provider_serves_its_models_through_litellm(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = {**providers.installed(), "echo": echo_provider}
    monkeypatch.setattr(providers, "installed", lambda: installed)
    router = ModelRouter()
    echo_provider.register(import_litellm())  # what import_litellm does for an installed one
    router.validate("echo/one")
    with pytest.raises(ModelError, match="the only one is 'echo/one'"):
        router.validate("echo/two")
    assert "echo/one" in router.known_models()
    assert not router.supports_response_schema("echo/one")
    assert not router.needs_breakpoints("echo/one")

    async def call() -> str:
        reply = await router.text("echo/one", "hello")
        await router.close()
        return str(reply.message["content"])

    assert asyncio.run(call()) == "echo: hello"
