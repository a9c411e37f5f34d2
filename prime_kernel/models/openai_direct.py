"""Chat completions straight to an OpenAI(-compatible) endpoint, for the router's hot path.

litellm costs several milliseconds of CPU per call (request transformation, its logging payload,
base64 scans of the whole conversation, response objects, cost bookkeeping) — as much as the
rest of an agent turn. For `openai/<model>` calls that need none of its translation (no
sampling parameters, no litellm callbacks or global headers), `DirectOpenAI` posts the request
itself over one kept-alive aiohttp session and reads the JSON reply: the same endpoint, key and
base URL litellm would use (`api_base`/`api_key` arguments, litellm's module settings,
OPENAI_BASE_URL / OPENAI_API_BASE / OPENAI_API_KEY / OPENAI_ORGANIZATION), the same retries
(litellm's default: 2, on connection errors, 408, 409, 429 and 5xx), and the price from
litellm's own table. Every other call goes through litellm unchanged.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Keyword arguments the direct path handles itself; any other one (temperature, max_tokens, a
# provider option) may need litellm's per-model translation, so the call goes through litellm.
DIRECT_KWARGS = frozenset({"api_base", "base_url", "api_key", "timeout"})
DEFAULT_BASE = "https://api.openai.com/v1"
# litellm's defaults: its request timeout (seconds) and retries for the OpenAI client.
DEFAULT_TIMEOUT = 600.0
MAX_RETRIES = 2
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# Litellm module settings that change what a call does: with any of them set, litellm serves it.
_LITELLM_HOOKS = (
    "callbacks",
    "success_callback",
    "failure_callback",
    "input_callback",
    "_async_success_callback",
    "_async_failure_callback",
    "headers",
)


# Price keys that make a model's price more than one rate per kind of token (tiers by prompt
# size, reasoning or audio tokens priced apart, ...): litellm prices those itself.
_NONLINEAR = ("above_", "tiered", "reasoning", "audio", "image", "per_second", "per_character")


class DirectError(Exception):
    """A call that failed after its retries (the message says why)."""


@dataclass(frozen=True)
class Endpoint:
    url: str
    headers: tuple[tuple[str, str], ...]
    timeout: float


def endpoint(litellm: Any, model: str, kwargs: dict[str, Any]) -> Endpoint | None:
    """Where to post a call of `model` directly, or None when litellm must serve it."""
    if not model.startswith("openai/") or not DIRECT_KWARGS.issuperset(kwargs):
        return None
    if any(getattr(litellm, hook, None) for hook in _LITELLM_HOOKS):
        return None
    base = (
        kwargs.get("api_base")
        or kwargs.get("base_url")
        or litellm.api_base
        or os.environ.get("OPENAI_BASE_URL")
        or os.environ.get("OPENAI_API_BASE")
        or DEFAULT_BASE
    )
    key = (
        kwargs.get("api_key")
        or litellm.api_key
        or litellm.openai_key
        or os.environ.get("OPENAI_API_KEY")
    )
    headers = [("Content-Type", "application/json")]
    if key:
        headers.append(("Authorization", f"Bearer {key}"))
    organization = litellm.organization or os.environ.get("OPENAI_ORGANIZATION")
    if organization:
        headers.append(("OpenAI-Organization", organization))
    timeout = float(kwargs.get("timeout") or DEFAULT_TIMEOUT)
    return Endpoint(f"{str(base).rstrip('/')}/chat/completions", tuple(headers), timeout)


class DirectOpenAI:
    """One aiohttp session per event loop (a daemon has one), closed with the router."""

    def __init__(self) -> None:
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> Any:
        import aiohttp  # litellm's own HTTP transport: always installed with it

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            self._session = aiohttp.ClientSession()
            self._loop = loop
        return self._session

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()

    async def complete(
        self,
        where: Endpoint,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> dict[str, Any]:
        """The provider's JSON reply to one chat completion."""
        import aiohttp

        body: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            body["tools"] = tools
        data = json.dumps(body).encode()
        timeout = aiohttp.ClientTimeout(total=where.timeout)
        for attempt in range(MAX_RETRIES + 1):
            last = attempt == MAX_RETRIES
            try:
                async with self._client().post(
                    where.url, data=data, headers=dict(where.headers), timeout=timeout
                ) as response:
                    raw = await response.read()
                    status = response.status
                    retry_after = response.headers.get("retry-after")
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                if last:
                    raise DirectError(f"{type(e).__name__}: {e or 'timed out'}") from None
                await asyncio.sleep(_backoff(attempt, None))
                continue
            if status < 400:
                try:
                    reply = json.loads(raw)
                except ValueError:
                    raise DirectError(f"the reply was not JSON: {raw[:200]!r}") from None
                if not isinstance(reply, dict) or not reply.get("choices"):
                    raise DirectError(f"the reply has no choices: {raw[:200]!r}")
                return reply
            if status not in _RETRY_STATUS or last:
                raise DirectError(f"HTTP {status}: {_error_text(raw)}")
            await asyncio.sleep(_backoff(attempt, retry_after))
        raise AssertionError("unreachable")

    async def stream(
        self,
        where: Endpoint,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: Callable[[str], None],
    ) -> dict[str, Any]:
        """One chat completion streamed (server-sent events, the usage in the last one):
        `on_text(piece)` as the reply's text grows, then the reply as `complete` returns it,
        rebuilt from the pieces. Retried like `complete`, until the reply's first byte."""
        import aiohttp

        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = tools
        data = json.dumps(body).encode()
        timeout = aiohttp.ClientTimeout(total=where.timeout)
        for attempt in range(MAX_RETRIES + 1):
            last = attempt == MAX_RETRIES
            reply = StreamedReply()
            try:
                async with self._client().post(
                    where.url, data=data, headers=dict(where.headers), timeout=timeout
                ) as response:
                    status = response.status
                    if status < 400:
                        async for line in response.content:
                            if reply.take(line, on_text):
                                break
                        return reply.whole()
                    raw = await response.read()
                    retry_after = response.headers.get("retry-after")
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as e:
                if last or reply.started:  # a reply half read is not asked for again
                    raise DirectError(f"{type(e).__name__}: {e or 'timed out'}") from None
                await asyncio.sleep(_backoff(attempt, None))
                continue
            if status not in _RETRY_STATUS or last:
                raise DirectError(f"HTTP {status}: {_error_text(raw)}")
            await asyncio.sleep(_backoff(attempt, retry_after))
        raise AssertionError("unreachable")


class StreamedReply:
    """A chat completion rebuilt from its stream's chunks (the first choice): the direct path's
    parsed events and litellm's streamed chunks alike (its objects answer `.get` like the
    dicts), so both paths rebuild a reply the same way, once."""

    def __init__(self) -> None:
        self.started = False
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        # The provider's usage as it sent it (a dict here, litellm's Usage through litellm).
        self.usage: Any = None

    def take(self, line: bytes, on_text: Callable[[str], None]) -> bool:
        """Take one line of a server-sent event stream; True at its end."""
        self.started = True
        line = line.strip()
        if not line.startswith(b"data:"):
            return False  # a blank line between events, a comment, an event name
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return True
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise DirectError(f"a streamed piece was not JSON: {payload[:200]!r}") from None
        if chunk.get("error"):
            raise DirectError(f"the stream failed: {_error_text(payload)}")
        self.add(chunk, on_text)
        return False

    def add(self, chunk: Any, on_text: Callable[[str], None]) -> None:
        """Take one chunk: `on_text` with its text, tool calls joined from their pieces, the
        finish reason and the usage (the last chunk's) kept."""
        usage = chunk.get("usage")
        if usage:
            self.usage = usage
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                self.text.append(text)
                on_text(text)
            for piece in delta.get("tool_calls") or ():
                call = self.calls.setdefault(
                    int(piece.get("index") or 0),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = call["id"] or piece.get("id")
                fn = piece.get("function") or {}
                call["function"]["name"] = call["function"]["name"] or fn.get("name") or ""
                call["function"]["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return message

    def whole(self) -> dict[str, Any]:
        choice = {"index": 0, "message": self.message(), "finish_reason": self.finish_reason}
        return {"choices": [choice], "usage": self.usage or {}}


def _backoff(attempt: int, retry_after: str | None) -> float:
    """The OpenAI client's schedule: 0.5 s doubling up to 8 s with jitter, or what the server
    asks for (up to a minute)."""
    try:
        asked = float(retry_after) if retry_after else None
    except ValueError:
        asked = None
    if asked is not None and 0 <= asked <= 60:
        return asked
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


def _error_text(raw: bytes) -> str:
    try:
        error = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:1000]
    if isinstance(error, str):
        return error[:1000]
    return raw[:1000].decode("utf-8", "replace")


def price(litellm: Any, model: str, usage: dict[str, Any], rates: dict[str, Any]) -> float:
    """What litellm charges for `usage` of the OpenAI model `model` (no provider prefix).

    A model priced per prompt, cached-prompt and completion token is priced here from
    litellm's table (`rates` caches the three rates per model); any other model and any usage
    with audio or image tokens is priced by litellm itself.
    """
    details = usage.get("prompt_tokens_details") or {}
    out_details = usage.get("completion_tokens_details") or {}
    plain = not any(details.get(k) or out_details.get(k) for k in ("audio_tokens", "image_tokens"))
    if model not in rates:
        rates[model] = _linear_rates(litellm, model)
    rate = rates[model]
    if rate is None or not plain:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, custom_llm_provider="openai", usage_object=litellm.Usage(**usage)
        )
        return float(prompt_cost + completion_cost)
    per_prompt, per_cached, per_completion = rate
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int(details.get("cached_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    return (prompt - cached) * per_prompt + cached * per_cached + completion * per_completion


def _linear_rates(litellm: Any, model: str) -> tuple[float, float, float] | None:
    info = litellm.model_cost.get(model) or litellm.model_cost.get(f"openai/{model}")
    if not info or any(part in key for key in info for part in _NONLINEAR if "cost" in key):
        return None
    per_prompt = info.get("input_cost_per_token")
    per_completion = info.get("output_cost_per_token")
    if per_prompt is None or per_completion is None:
        return None
    per_cached = info.get("cache_read_input_token_cost")
    return (
        float(per_prompt),
        float(per_prompt if per_cached is None else per_cached),
        float(per_completion),
    )
