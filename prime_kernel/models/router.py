"""The model router: the one place that imports litellm (it takes seconds to import).

Everything the daemon asks of a model goes through `ModelRouter`: validation before any kernel
starts, completion with usage and cost, and whether a model takes native tool calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from traitlets import Bool, Float
from traitlets.config import LoggingConfigurable

from ..protocol.errors import ModelError
from . import openai_direct, providers

log = logging.getLogger(__name__)
_import_lock = threading.Lock()
_litellm: Any = None


def litellm_module() -> Any:
    """litellm if this process has finished importing it, else None (never imports it)."""
    return _litellm


# The finish reason of a reply a person interrupted while it streamed (`ModelRouter.partial`).
INTERRUPTED = "interrupted"
# Providers serving Claude, whose prompt cache holds only what `cache_control` breakpoints mark;
# the others (OpenAI, Gemini, DeepSeek) cache a prompt's beginning by themselves, and litellm
# would pass them the breakpoints unchanged.
BREAKPOINT_PROVIDERS = ("anthropic", "vertex_ai", "bedrock", "azure_ai")


def import_litellm() -> Any:
    """Import litellm once per process, offline, with the installed model providers
    registered (providers.py)."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            # Before the import: never reach for the network for the price map.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            # litellm ends each stream in a thread through anyio, whose asyncio backend is
            # imported on first use: a second or more of the first streamed reply, unless here.
            with contextlib.suppress(ImportError):
                importlib.import_module("anyio._backends._asyncio")
            for name, provider in providers.installed().items():
                try:
                    provider.register(litellm)
                except Exception as e:  # another package's bug: its models fail, not ours
                    log.error("model provider %r failed to register with litellm: %r", name, e)
            _litellm = litellm
    return _litellm


def preload() -> None:
    """Import litellm and make its first call, on a mocked reply (no provider, no network): the
    first call of a process imports some seventy more modules and builds litellm's response
    models, half a second of CPU that would otherwise run on the event loop (and in its
    executor's threads, holding the GIL) at a session's first turn. For the server, before it
    listens (server/app.py)."""
    litellm = import_litellm()
    with contextlib.suppress(Exception):  # a litellm that mocks differently: no warm-up
        reply = litellm.completion(
            model="openai/gpt-4o-mini",
            messages=[{"role": "user", "content": "warm-up"}],
            mock_response="warm-up",
            stream=True,
            stream_options={"include_usage": True},
        )
        for _ in reply:
            pass


@dataclass
class Completion:
    """One model call: the assistant message as a dict, with what it cost."""

    message: dict[str, Any]
    finish_reason: str | None
    usage: dict[str, float] = field(default_factory=dict)
    cost: float = 0.0
    duration: float = 0.0
    # The message is a whole reply as recorded (a replay's), the prefill it continued in it.
    whole: bool = False
    # What the call would have cost with nothing read from or written to the provider's cache.
    uncached_cost: float = 0.0


class ModelRouter(LoggingConfigurable):
    """Every model call of the daemon, through litellm (or straight to an OpenAI endpoint).
    Configure as `c.ModelRouter.<trait>`."""

    # A model that never answers fails the call instead of hanging its session.
    model_timeout = Float(
        600.0,
        config=True,
        help="Seconds a model call may take; a call that takes longer fails (0: no limit).",
    )
    direct_openai = Bool(
        True,
        config=True,
        help="Send `openai/...` model calls that carry no keyword arguments but api_base, "
        "api_key and timeout straight to the endpoint instead of through litellm (which spends "
        "milliseconds of CPU per call); the endpoint, key, retries, usage and price are the "
        "same. Off: every call goes through litellm.",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._litellm: Any = None
        self._direct = openai_direct.DirectOpenAI()
        # Per-token rates of the models the direct path priced (see openai_direct.price).
        self._rates: dict[str, Any] = {}
        self._breakpoints: dict[str, bool] = {}

    @property
    def timeout(self) -> float | None:
        """Seconds one call may take (None: no limit)."""
        return self.model_timeout or None

    @property
    def litellm(self) -> Any:
        if self._litellm is None:
            self._litellm = import_litellm()
        return self._litellm

    async def close(self) -> None:
        """Close the direct path's connections and stop litellm's background logging worker
        (a task on this loop), if it runs."""
        await self._direct.close()
        if self._litellm is None:
            return
        # RuntimeError: the worker's tasks belong to another, closed loop (it is global and
        # rebinds only when something is logged); nothing of it runs on this one.
        with contextlib.suppress(ImportError, RuntimeError):
            from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

            await GLOBAL_LOGGING_WORKER.stop(discard_pending=True, timeout=2)

    async def ready(self) -> None:
        """Import litellm off the event loop so a starting server stays responsive."""
        if self._litellm is None:
            self._litellm = await asyncio.to_thread(import_litellm)

    def provider(self, model: str) -> str:
        return model.split("/", 1)[0] if "/" in model else ""

    def validate(self, model: str) -> None:
        """Raise ModelError for a model litellm cannot route or whose API key is missing."""
        if not model or not isinstance(model, str):
            raise ModelError("model must be a non-empty string like 'provider/model'")
        prefix = self.provider(model)
        installed = providers.installed()
        if prefix in installed:
            try:
                installed[prefix].check(model)
            except Exception as e:
                raise ModelError(str(e), model=model) from None
            return
        litellm = self.litellm
        try:
            litellm.get_llm_provider(model)
        except Exception:
            # None at all: the installed metadata predates the entry points (a stale editable
            # install), since our own `scripted` and `local` are declared there.
            ours = ", ".join(f"{name}/" for name in installed) or (
                "none, not even prime_kernel's own: reinstall it, e.g. pip install -e ."
            )
            raise ModelError(
                f"unknown model {model!r}: neither litellm nor an installed model provider "
                f"(those serve {ours}) knows the provider {prefix or model!r}; use "
                "'provider/model', e.g. 'openai/gpt-4o-mini' or the embedded "
                "'local/qwen2.5-coder-0.5b'",
                model=model,
            ) from None
        env = litellm.validate_environment(model=model)
        if not env.get("keys_in_environment", True):
            missing = ", ".join(env.get("missing_keys") or []) or "an API key"
            raise ModelError(f"model {model!r} needs {missing} in the environment", model=model)

    def supports_tools(self, model: str) -> bool:
        try:
            return bool(self.litellm.supports_function_calling(model=model))
        except Exception:
            return False

    def needs_breakpoints(self, model: str) -> bool:
        """Whether `model`'s provider caches only what `cache_control` breakpoints mark (Claude;
        a scripted model declared `cache="anthropic"`)."""
        known = self._breakpoints.get(model)
        if known is None:
            prefix = self.provider(model)
            provider = providers.installed().get(prefix)
            if provider is not None:
                known = provider.breakpoints(model)
            else:
                known = prefix in BREAKPOINT_PROVIDERS and "claude" in model.lower()
            self._breakpoints[model] = known
        return known

    def context_window(self, model: str) -> int | None:
        try:
            info = self.litellm.get_model_info(model)
        except Exception:
            return None
        return info.get("max_input_tokens") or info.get("max_tokens")

    def count_tokens(self, model: str, messages: list[dict[str, Any]]) -> int:
        """The prompt size of `messages` for `model`; about four characters a token if litellm
        has no tokenizer for it."""
        try:
            return int(self.litellm.token_counter(model=model, messages=messages))
        except Exception:
            return sum(len(json.dumps(m, default=str)) for m in messages) // 4

    def known_models(self) -> list[str]:
        """The models the installed providers can serve here, provider by provider."""
        return [m for provider in providers.installed().values() for m in provider.models()]

    async def complete(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        cache_at: int | None = None,
        **kwargs: Any,
    ) -> Completion:
        """One model call. `cache_at`: how many leading messages are the stable, cacheable
        part (prompt_cache.py), marked with breakpoints for the providers that need them."""
        litellm = self.litellm
        start = time.monotonic()
        where = openai_direct.endpoint(litellm, model, kwargs) if self.direct_openai else None
        if where is not None:
            try:
                reply = await self._direct.complete(where, model.split("/", 1)[1], messages, tools)
            except openai_direct.DirectError as e:
                raise ModelError(f"model call to {model!r} failed: {e}", model=model) from None
            return _from_json(litellm, model, reply, time.monotonic() - start, self._rates)
        if cache_at and self.needs_breakpoints(model):
            messages = with_breakpoints(messages, cache_at)
        try:
            response = await asyncio.wait_for(
                litellm.acompletion(model=model, messages=messages, tools=tools or None, **kwargs),
                self.timeout,
            )
        except asyncio.TimeoutError:
            raise self._late(model) from None
        except Exception as e:
            raise ModelError(f"model call to {model!r} failed: {e}", model=model) from e
        return _completion(litellm, model, response, time.monotonic() - start)

    async def stream(
        self,
        model: str,
        messages: list[dict[str, Any]],
        on_text: Callable[[str], None],
        *,
        tools: list[dict[str, Any]] | None = None,
        cache_at: int | None = None,
        **kwargs: Any,
    ) -> Completion:
        """One model call streamed: `on_text(piece)` as the reply's text grows, then the same
        Completion `complete` returns (tool calls rebuilt from their pieces, the usage of the
        stream's last chunk), priced the same way; on the direct OpenAI path too. Cancelling the
        call closes the provider's stream at once."""
        litellm = self.litellm
        start = time.monotonic()
        where = openai_direct.endpoint(litellm, model, kwargs) if self.direct_openai else None
        if where is not None:
            name = model.split("/", 1)[1]
            try:
                reply = await asyncio.wait_for(
                    self._direct.stream(where, name, messages, tools, on_text), self.timeout
                )
            except asyncio.TimeoutError:
                raise self._late(model) from None
            except openai_direct.DirectError as e:
                raise ModelError(f"model call to {model!r} failed: {e}", model=model) from None
            return _from_json(litellm, model, reply, time.monotonic() - start, self._rates)
        if cache_at and self.needs_breakpoints(model):
            messages = with_breakpoints(messages, cache_at)

        async def read() -> openai_direct.StreamedReply | None:
            response = await litellm.acompletion(
                model=model,
                messages=messages,
                tools=tools or None,
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
            # Rebuilt here from the chunks as they pass, as on the direct path: litellm has
            # already rebuilt and priced the whole reply once (in a thread, for its logging),
            # and a second `stream_chunk_builder` cost more CPU than the rest of the call.
            reply = openai_direct.StreamedReply()
            got = False
            # Closed however the read ends (a cancel too): the provider stops generating.
            async with contextlib.aclosing(response):
                async for chunk in response:
                    got = True
                    reply.add(chunk, on_text)
            return reply if got else None

        # The timeout covers the whole read, not only the wait for the first chunk.
        try:
            streamed = await asyncio.wait_for(read(), self.timeout)
        except asyncio.TimeoutError:
            raise self._late(model) from None
        except Exception as e:
            raise ModelError(f"model call to {model!r} failed: {e}", model=model) from e
        if streamed is None:
            raise ModelError(f"model call to {model!r} returned nothing", model=model)
        return _from_stream(litellm, model, streamed, time.monotonic() - start)

    def partial(
        self, model: str, messages: list[dict[str, Any]], text: str, duration: float
    ) -> Completion:
        """What a stream stopped halfway (a cancel, an interrupt) produced: its text so far,
        and its usage and cost estimated (a provider bills what it generated, but sends no usage
        for a stream closed early), finish reason INTERRUPTED."""
        prompt = self.count_tokens(model, messages)
        completion = self.count_tokens(model, [{"role": "assistant", "content": text}])
        usage = _usage_dict(prompt, completion, 0, 0)
        try:
            cost = float(
                sum(
                    self.litellm.cost_per_token(
                        model=model, prompt_tokens=prompt, completion_tokens=completion
                    )
                )
            )
        except Exception:  # a model litellm cannot price
            cost = 0.0
        message = {"role": "assistant", "content": text}
        return Completion(message, INTERRUPTED, usage, cost, duration, uncached_cost=cost)

    def _late(self, model: str) -> ModelError:
        return ModelError(
            f"the model {model!r} did not answer within {self.timeout:g} s "
            "(c.ModelRouter.model_timeout)",
            model=model,
        )

    def supports_response_schema(self, model: str) -> bool:
        """Whether `response_format={"type": "json_schema", ...}` constrains the model's
        decoding: llama.cpp's grammars do (the embedded models), and so do hosted models that
        litellm says take a schema."""
        provider = providers.installed().get(self.provider(model))
        if provider is not None:
            return provider.response_schema
        try:
            return bool(self.litellm.supports_response_schema(model=model))
        except Exception:
            return False

    async def text(self, model: str, prompt: str, **kwargs: Any) -> Completion:
        return await self.complete(model, [{"role": "user", "content": prompt}], **kwargs)


def with_breakpoints(messages: list[dict[str, Any]], stable: int) -> list[dict[str, Any]]:
    """`messages` with Anthropic-style `cache_control` breakpoints on the system message and on
    the last stable message (the cache then holds the conversation so far; the goal and a
    prefill after it are read at full price). Copies; the conversation is never changed."""
    marks = {0, stable - 1} if stable > 0 else set()
    out = []
    for i, m in enumerate(messages):
        content = m.get("content")
        if i in marks and content and m.get("role") in ("system", "user", "tool"):
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": content}]
                if isinstance(content, str)
                else [dict(b) for b in content]
            )
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
            m = {**m, "content": blocks}
        out.append(m)
    return out


def _from_json(
    litellm: Any, model: str, reply: dict[str, Any], duration: float, rates: dict[str, Any]
) -> Completion:
    """A Completion from an OpenAI chat-completion reply (the direct path), priced like litellm
    prices it."""
    choice = reply["choices"][0]
    message = _json_message(choice.get("message") or {})
    raw = reply.get("usage") or {}
    prompt = int(raw.get("prompt_tokens") or 0)
    completion = int(raw.get("completion_tokens") or 0)
    cached = int((raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    usage = _usage_dict(prompt, completion, cached, 0)
    cost = uncached = 0.0
    if raw:
        name = model.split("/", 1)[1]
        try:
            cost = openai_direct.price(litellm, name, raw, rates)
            plain = {**raw, "prompt_tokens_details": {}}
            uncached = openai_direct.price(litellm, name, plain, rates)
        except Exception:  # a model litellm cannot price, as on its own path
            cost = uncached = 0.0
    return Completion(
        message, choice.get("finish_reason"), usage, cost, duration, uncached_cost=uncached
    )


def _json_message(msg: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of an OpenAI-shaped reply message, as a Completion holds it."""
    message: dict[str, Any] = {"role": "assistant", "content": msg.get("content") or ""}
    calls = msg.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {
                "id": c.get("id"),
                "type": "function",
                "function": {
                    "name": (c.get("function") or {}).get("name"),
                    "arguments": (c.get("function") or {}).get("arguments"),
                },
            }
            for c in calls
        ]
    return message


def _from_stream(
    litellm: Any, model: str, reply: openai_direct.StreamedReply, duration: float
) -> Completion:
    """A Completion from a reply litellm streamed, priced as `_completion` prices the whole
    reply: litellm prices it at the stream's end and puts the price on the last chunk's usage
    (`usage.cost`), so it is priced again only where that is missing."""
    usage_object = reply.usage
    usage = _usage(usage_object)
    cost = getattr(usage_object, "cost", None)
    if cost is None and usage_object is not None:
        try:
            cost = sum(litellm.cost_per_token(model=model, usage_object=usage_object))
        except Exception:  # models litellm cannot price (unregistered local ones)
            cost = 0.0
    cost = float(cost or 0.0)
    return Completion(
        _json_message(reply.message()),
        reply.finish_reason,
        usage,
        cost,
        duration,
        uncached_cost=_uncached_cost(litellm, model, usage, cost),
    )


def _completion(litellm: Any, model: str, response: Any, duration: float) -> Completion:
    """A Completion from a litellm ModelResponse, priced (once) as litellm prices it."""
    choice = response.choices[0]
    msg = choice.message
    message: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
    calls = getattr(msg, "tool_calls", None) or []
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments},
            }
            for c in calls
        ]
    usage = _usage(getattr(response, "usage", None))
    # litellm has already priced the response; price it again only if it did not.
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # models litellm cannot price (unregistered local ones)
            cost = 0.0
    cost = float(cost or 0.0)
    return Completion(
        message,
        choice.finish_reason,
        usage,
        cost,
        duration,
        uncached_cost=_uncached_cost(litellm, model, usage, cost),
    )


def _uncached_cost(litellm: Any, model: str, usage: dict[str, float], cost: float) -> float:
    """The price of `usage` had every prompt token been read at the plain input rate."""
    if not (usage["cached_tokens"] or usage["cache_write_tokens"]) or not cost:
        return cost
    try:
        prompt, completion = litellm.cost_per_token(
            model=model,
            prompt_tokens=int(usage["prompt_tokens"]),
            completion_tokens=int(usage["completion_tokens"]),
        )
    except Exception:  # priced by litellm above, but not by name: keep what was paid
        return cost
    return float(prompt + completion)


def _usage_dict(prompt: int, completion: int, cached: int, written: int) -> dict[str, float]:
    # `prompt` counts every prompt token, read from the cache (`cached`), written to it
    # (`written`, Anthropic's cache_creation_input_tokens) or neither, for every provider.
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_tokens": cached,
        "cache_write_tokens": written,
        "total_tokens": prompt + completion,
    }


def _usage(u: Any) -> dict[str, float]:
    """Our usage dict from litellm's Usage (None: nothing used)."""
    if u is None:
        return _usage_dict(0, 0, 0, 0)
    details = getattr(u, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) if details is not None else 0
    written = getattr(u, "cache_creation_input_tokens", None)
    if written is None and details is not None:
        written = getattr(details, "cache_creation_tokens", 0)
    return _usage_dict(
        int(getattr(u, "prompt_tokens", 0) or 0),
        int(getattr(u, "completion_tokens", 0) or 0),
        int(cached or 0),
        int(written or 0),
    )
