"""The router's prompt-cache decisions: breakpoints only for the providers that need them; its
preload (litellm imported and warmed before the server listens)."""

from __future__ import annotations

import sys

from prime_kernel.models import scripted
from prime_kernel.models.router import ModelRouter, preload, with_breakpoints


def test_only_claude_gets_breakpoints() -> None:
    router = ModelRouter()
    needs = {
        m: router.needs_breakpoints(m)
        for m in (
            "anthropic/claude-sonnet-4-5",
            "vertex_ai/claude-sonnet-4-5",
            "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
            "openai/gpt-4o",
            "gemini/gemini-2.5-flash",
            "deepseek/deepseek-chat",
            "local/qwen2.5-coder-0.5b",
        )
    }
    assert [m for m, n in needs.items() if n] == [
        "anthropic/claude-sonnet-4-5",
        "vertex_ai/claude-sonnet-4-5",
        "bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0",
    ]
    claude_like = scripted.register_script("router_claude_like", [], cache="anthropic")
    openai_like = scripted.register_script("router_openai_like", [], cache="openai")
    assert router.needs_breakpoints(claude_like) and not router.needs_breakpoints(openai_like)


def test_breakpoints_mark_the_system_and_the_last_stored_message_in_a_copy() -> None:
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        {"role": "user", "content": "## Your goal"},  # after the stored conversation
    ]
    marked = with_breakpoints(messages, 4)
    mark = {"type": "ephemeral"}
    assert marked[0]["content"] == [{"type": "text", "text": "S", "cache_control": mark}]
    assert marked[3]["content"] == [{"type": "text", "text": "out", "cache_control": mark}]
    assert marked[1:3] == messages[1:3] and marked[4] == messages[4]
    assert messages[0]["content"] == "S"  # the stored conversation is untouched


async def test_after_the_preload_a_first_call_imports_nothing_and_leaves_no_trace() -> None:
    router = ModelRouter()
    known = router.known_models()
    preload()
    assert router.known_models() == known  # the warm-up's mocked reply registers nothing
    model = scripted.register_script("router_after_preload", [{"text": "hi"}])
    modules = set(sys.modules)
    pieces: list[str] = []
    try:
        reply = await router.stream(model, [{"role": "user", "content": "x"}], pieces.append)
    finally:
        await router.close()
    assert reply.message["content"] == "hi" and "".join(pieces) == "hi"
    # What the first call of a process would import on the event loop, the preload did.
    assert sorted(set(sys.modules) - modules) == []
