"""A cacheable prompt on a real server: every model call begins with the previous call's stored
conversation, byte for byte, through goal changes (the session's and a person's) and mail; only
a compaction breaks it, and that break is counted. Cached tokens are recorded and priced."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prime_kernel.daemon.compaction import SUMMARY_INSTRUCTION
from prime_kernel.models import scripted

from ..conftest import events, post_message, start_session, wait_for

BIG = "print('x' * 6000)"  # a conversation long enough to be cached (1,024 tokens and up)


def _content(m: dict[str, Any]) -> str:
    content = m.get("content")
    if isinstance(content, list):  # with a breakpoint
        return "".join(b["text"] for b in content)
    return str(content or "")


def _text(m: dict[str, Any]) -> str:
    """A message as the provider caches it: all of it, without the breakpoint markers."""
    return json.dumps({**m, "content": _content(m)}, sort_keys=True)


def _goal(messages: list[dict[str, Any]]) -> str:
    last = _content(messages[-1])
    return last if last.startswith("## Your goal") else ""


def _marked(messages: list[dict[str, Any]]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        if isinstance(m.get("content"), list) and any("cache_control" in b for b in m["content"])
    ]


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_the_stored_conversation_is_a_stable_prefix(daemon, jp_fetch, style):
    calls: list[list[dict[str, Any]]] = []
    codes = [
        f"goal.set('count the primes')\n{BIG}",
        None,  # a reply: the session waits for mail
        f"goal.progress('half way')\n{BIG}",
        "compact()",
        BIG,
        None,
    ]

    def play(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if SUMMARY_INSTRUCTION in str(messages[0]["content"]):  # the compaction's summary
            return {"text": "It printed x's and noted progress."}
        calls.append(messages)
        code = codes[len(calls) - 1] if len(calls) <= len(codes) else None
        return {"code": code} if code else {"text": "waiting"}

    model = scripted.register_script(f"cache_{style}", [play] * 20, cache=style)
    sid = await start_session(jp_fetch, "primes", model=model, persistent=True)
    record = daemon.registry.get(sid)
    await wait_for(lambda: len(calls) == 2 and record.state.value == "IDLE", timeout=120)
    # A person changes the goal and writes: both reach the model at its next turn.
    body = json.dumps({"text": "count the primes below 100"})
    await jp_fetch("api", "prime", "sessions", sid, "goal", method="PUT", body=body)
    await post_message(jp_fetch, sid, "and below 1000?")
    await wait_for(lambda: len(calls) == 6 and record.state.value == "IDLE", timeout=120)

    # The system prompt never changes; the goal is the last message, after the conversation.
    assert len({_text(c[0]) for c in calls}) == 1
    assert "count the primes" not in _text(calls[1][0])
    assert [bool(_goal(c)) for c in calls] == [False] + [True] * 5
    assert "count the primes below 100" in _goal(calls[2])
    assert "- half way" in _goal(calls[3])
    stable = [c[:-1] if _goal(c) else c for c in calls]
    told = [_text(m) for m in stable[2]]
    assert any("A person set your goal" in t for t in told)
    assert any("and below 1000?" in t for t in told)
    compacted = next(i for i, c in enumerate(stable) if "[Earlier turns, summarised]" in str(c))
    assert compacted == 4
    for i in range(1, len(stable)):
        before, now = [_text(m) for m in stable[i - 1]], [_text(m) for m in stable[i]]
        assert (now[: len(before)] == before) == (i != compacted), i
    # Breakpoints only where the provider needs them: the system and the last stored message.
    for c, s in zip(calls, stable, strict=True):
        assert _marked(c) == ([0, len(s) - 1] if style == "anthropic" else [])

    # The one break is the compaction's (its summary follows the system prompt and the task),
    # counted on its call and planned.
    model_calls = [e["data"] for e in await events(daemon, sid, "model_call")]
    turns = [d for d in model_calls if d.get("purpose") != "compaction"]
    breaks = [None] * 4 + [{"at": 2, "planned": True}, None]
    assert [d.get("cache_break") for d in turns] == breaks
    # Cached tokens are recorded per call and in the session's usage, and priced lower.
    # The first two calls and the one after the compaction begin with fewer than the 1,024
    # tokens a provider caches (the system prompt and the task); the others are read from it.
    cached = [d["usage"]["cached_tokens"] for d in turns]
    assert cached[:2] == [0, 0] and cached[4] == 0, cached
    assert all(cached[i] >= 1024 for i in (2, 3, 5)), cached
    written = [d["usage"]["cache_write_tokens"] for d in turns]
    if style == "anthropic":  # written up to the last stored message, from what was read
        assert written[0] == 0 and all(written[i] > 0 for i in (1, 2, 3, 5)), written
    else:  # cached by itself, for free
        assert written == [0] * 6
    for d in (turns[2], turns[3], turns[5]):
        u = d["usage"]
        fresh = u["prompt_tokens"] - u["cached_tokens"] - u["cache_write_tokens"]
        price = (
            fresh * scripted.INPUT_COST_PER_TOKEN
            + u["cached_tokens"] * scripted.CACHE_READ_COST_PER_TOKEN
            + u["cache_write_tokens"] * scripted.CACHE_WRITE_COST_PER_TOKEN
            + u["completion_tokens"] * scripted.OUTPUT_COST_PER_TOKEN
        )
        assert d["cost"] == pytest.approx(price)
        plain = u["prompt_tokens"] * scripted.INPUT_COST_PER_TOKEN
        assert d["uncached_cost"] == pytest.approx(
            plain + u["completion_tokens"] * scripted.OUTPUT_COST_PER_TOKEN
        )
    usage = record.usage
    assert usage["cached_tokens"] == sum(d["usage"]["cached_tokens"] for d in model_calls)
    assert usage["uncached_cost"] > usage["cost"] > 0
    shown = await jp_fetch("api", "prime", "sessions", sid)
    own = json.loads(shown.body)["usage"]["own"]
    assert own["cached_tokens"] == usage["cached_tokens"]
    assert own["cache_write_tokens"] == usage["cache_write_tokens"]
