"""A deterministic litellm provider that replays scripted turns, for tests and benchmarks.

`scripted/<name>` replays the script registered under `<name>`. The turn played is chosen by
the number of assistant messages already in the conversation, so the provider is stateless and
many sessions can share one script. A turn is a dict (or a callable taking the messages and
returning one) with any of:

- ``text``: the assistant's text;
- ``extract``: a regular expression: the text is its first match in the last user message
  (its first group, if it has one), so one script answers many prompts each its own way;
- ``code``: code for a ``python`` tool call (finish reason ``tool_calls``); a list makes several;
- ``fenced``: code sent as a fenced ```python block inside the text (for the no-tools path);
- ``usage``: ``{"prompt_tokens", "completion_tokens", "cached_tokens"}`` to report instead of
  the estimate (about four characters per token);
- ``sleep``: seconds to wait before answering (to exercise cancellation and timeouts);
- ``pieces``: for a streamed call, the text's pieces in order (they must join to the text), or
  how many even pieces to cut it into (default 4);
- ``piece_delay``: seconds to wait before each piece after the first (default 0), so a test or
  a bench knows when each piece is sent (`on_piece` is told as it is).

A script registered with ``cache="openai"`` or ``cache="anthropic"`` reports cached prompt tokens
as that kind of provider would (`PromptCache`), and `price_like` prices it as a real model of
litellm's cost map (cache reads and writes included).

Streamed calls (`stream=True`) get the text of the turn in pieces, then each tool call (its id
and name first, its arguments in two pieces), then the finish reason with the whole usage, as
litellm's `GenericStreamingChunk`s.

Scripts come from `register_script()` in-process, or from a JSON file named by the
`PRIME_SCRIPTS` environment variable (``{"name": {"turns": [...], "tools": true}}``) so a
server started in another process replays the same scripts.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from .providers import ModelProvider

PROVIDER = "scripted"
# Priced like a small hosted model so cost accounting has something to add up.
INPUT_COST_PER_TOKEN = 1e-6
OUTPUT_COST_PER_TOKEN = 2e-6
# A cache read at a tenth of the input price, a write at 1.25 times it (Anthropic's ratios).
CACHE_READ_COST_PER_TOKEN = 1e-7
CACHE_WRITE_COST_PER_TOKEN = 1.25e-6

Turn = dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]]


@dataclass
class Script:
    turns: list[Turn]
    tools: bool = True
    context_window: int = 32768
    extra: dict[str, Any] = field(default_factory=dict)
    # "openai" or "anthropic": report cached prompt tokens as that provider does ("" none).
    cache: str = ""
    # A model of litellm's cost map to price this one as ("": the default scripted prices).
    price_like: str = ""


_SCRIPTS: dict[str, Script] = {}
_loaded_file: str | None = None


def register_script(
    name: str,
    turns: list[Turn],
    *,
    tools: bool = True,
    context_window: int = 32768,
    cache: str = "",
    price_like: str = "",
) -> str:
    """Register a script and return its litellm model name, `scripted/<name>`."""
    if cache not in ("", "openai", "anthropic"):
        raise ValueError(f"cache must be 'openai', 'anthropic' or '', not {cache!r}")
    _SCRIPTS[name] = Script(
        list(turns),
        tools=tools,
        context_window=context_window,
        cache=cache,
        price_like=price_like,
    )
    _CACHE.forget(f"{PROVIDER}/{name}")
    _register_price(name)
    return f"{PROVIDER}/{name}"


def load_scripts_file(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    for name, spec in data.items():
        register_script(
            name,
            spec["turns"],
            tools=spec.get("tools", True),
            context_window=spec.get("context_window", 32768),
            cache=spec.get("cache", ""),
            price_like=spec.get("price_like", ""),
        )


def _ensure_file_loaded() -> None:
    global _loaded_file
    path = os.environ.get("PRIME_SCRIPTS")
    if path and path != _loaded_file:
        load_scripts_file(path)
        _loaded_file = path


def script_names() -> list[str]:
    _ensure_file_loaded()
    return sorted(_SCRIPTS)


def get_script(name: str) -> Script:
    _ensure_file_loaded()
    try:
        return _SCRIPTS[name]
    except KeyError:
        raise KeyError(f"no scripted model named {name!r}; known: {sorted(_SCRIPTS)}") from None


def _register_price(name: str) -> None:
    # Only once litellm is fully imported (another thread may be importing it right now);
    # import_litellm() registers every known script's price when it finishes.
    from . import router

    if router.litellm_module() is not None:
        register_prices(router.litellm_module(), [name])


def register_prices(litellm: Any, names: list[str] | None = None) -> None:
    for name in names if names is not None else script_names():
        script = _SCRIPTS[name]
        prices = {
            "input_cost_per_token": INPUT_COST_PER_TOKEN,
            "output_cost_per_token": OUTPUT_COST_PER_TOKEN,
            "cache_read_input_token_cost": CACHE_READ_COST_PER_TOKEN,
            "cache_creation_input_token_cost": CACHE_WRITE_COST_PER_TOKEN,
        }
        if script.price_like:
            info = litellm.get_model_info(script.price_like)
            prices = {k: info[k] for k in prices if info.get(k) is not None}
        litellm.register_model(
            {
                f"{PROVIDER}/{name}": {
                    **prices,
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "max_tokens": 4096,
                    "max_input_tokens": script.context_window,
                    "supports_function_calling": script.tools,
                }
            }
        )


def register(litellm: Any) -> None:
    """Route `scripted/...` to the scripts (a fresh handler) and price every known script."""
    providers = [p for p in litellm.custom_provider_map if p["provider"] != PROVIDER]
    providers.append({"provider": PROVIDER, "custom_handler": make_handler()})
    litellm.custom_provider_map = providers
    register_prices(litellm)


def check(model: str) -> None:
    """Raise LookupError, naming the known scripts, unless `scripted/<name>` is registered."""
    try:
        get_script(model.partition("/")[2])
    except KeyError as e:
        raise LookupError(e.args[0]) from None


def breakpoints(model: str) -> bool:
    """Whether the script caches like Claude (`cache="anthropic"`): only what is marked."""
    try:
        return get_script(model.partition("/")[2]).cache == "anthropic"
    except KeyError:
        return False


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _message_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {}) if isinstance(call, dict) else {}
            parts.append(str(fn.get("arguments", "")))
    return "\n".join(parts)


def play(name: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The turn `name` plays next in this conversation, resolved to a dict."""
    script = get_script(name)
    index = sum(1 for m in messages if m.get("role") == "assistant" and m.get("name") != "example")
    if index >= len(script.turns):
        return {"text": "(the script has no more turns)"}
    turn = script.turns[index]
    played = turn(messages) if callable(turn) else dict(turn)
    if "extract" in played:
        played["text"] = _extract(played.pop("extract"), messages)
    return played


def _extract(pattern: str, messages: list[dict[str, Any]]) -> str:
    prompt = next((_message_text([m]) for m in reversed(messages) if m.get("role") == "user"), "")
    found = re.search(pattern, prompt)
    if found is None:
        return f"(no match for {pattern!r})"
    return found.group(1) if found.re.groups else found.group(0)


def reply_message(turn: dict[str, Any]) -> dict[str, Any]:
    """The assistant message a played turn (`play`) is: its text, fenced code, tool calls."""
    text = turn.get("text") or ""
    if turn.get("fenced"):
        text = (text + "\n\n" if text else "") + f"```python\n{turn['fenced']}\n```"
    codes = _codes(turn)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if codes:
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": "python", "arguments": json.dumps({"code": code})},
            }
            for code in codes
        ]
    return message


def _codes(turn: dict[str, Any]) -> list[str]:
    codes = turn.get("code") or []
    return [codes] if isinstance(codes, str) else list(codes)


def _build_response(
    model: str, turn: dict[str, Any], messages: list[dict[str, Any]], tools: Any = None
) -> Any:
    import litellm

    message = reply_message(turn)
    text = message["content"] or ""
    codes = _codes(turn)
    tool_calls = message.get("tool_calls", [])
    usage = turn.get("usage") or {}
    style = get_script(model.split("/", 1)[1]).cache
    if style and "usage" not in turn:
        prompt_tokens, cached, written = _CACHE.serve(style, model, messages, tools)
    else:
        prompt_tokens = usage.get("prompt_tokens", _tokens(_message_text(messages)))
        cached, written = usage.get("cached_tokens", 0), usage.get("cache_write_tokens", 0)
    completion_tokens = usage.get(
        "completion_tokens", _tokens(text + "".join(codes)) + 5 * len(tool_calls)
    )
    return litellm.ModelResponse(
        id=f"scripted-{uuid.uuid4().hex[:12]}",
        created=int(time.time()),
        model=model,
        choices=[
            {
                "index": 0,
                "finish_reason": "tool_calls" if tool_calls else "stop",
                "message": message,
            }
        ],
        usage={
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached},
            # Anthropic's own fields, as litellm reports them for Claude.
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": written,
        },
    )


def make_handler() -> Any:
    """The litellm CustomLLM instance serving `scripted/*` (litellm is imported lazily)."""
    import litellm

    class ScriptedLLM(litellm.CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            name = model.split("/", 1)[-1]
            turn = play(name, messages)
            if turn.get("sleep"):
                time.sleep(float(turn["sleep"]))
            return _build_response(f"{PROVIDER}/{name}", turn, messages, _tools(kwargs))

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            name = model.split("/", 1)[-1]
            turn = play(name, messages)
            if turn.get("sleep"):
                await asyncio.sleep(float(turn["sleep"]))
            return _build_response(f"{PROVIDER}/{name}", turn, messages, _tools(kwargs))

        async def astreaming(  # type: ignore[override]  # litellm spells out its arguments
            self, model: str, messages: list, *args: Any, **kwargs: Any
        ) -> AsyncIterator[dict[str, Any]]:
            name = model.split("/", 1)[-1]
            turn = play(name, messages)
            if turn.get("sleep"):
                await asyncio.sleep(float(turn["sleep"]))
            model = f"{PROVIDER}/{name}"
            response = _build_response(model, turn, messages, _tools(kwargs))
            message = response.choices[0].message
            delay = float(turn.get("piece_delay") or 0)
            for i, piece in enumerate(_pieces(message.content or "", turn.get("pieces", 4))):
                if i and delay:
                    await asyncio.sleep(delay)
                if on_piece is not None:
                    on_piece(model, piece, time.monotonic())
                yield _chunk(piece)
            for index, call in enumerate(message.tool_calls or []):
                arguments = call.function.arguments or ""
                half = len(arguments) // 2
                yield _chunk("", tool_use=_tool_use(index, call.id, call.function.name, ""))
                for part in (arguments[:half], arguments[half:]):
                    yield _chunk("", tool_use=_tool_use(index, None, None, part))
            # The whole usage (cached and cache-write tokens too): litellm keeps extra keys.
            yield _chunk(
                "",
                finished=response.choices[0].finish_reason,
                usage=response.usage.model_dump(exclude_none=True),
            )

    return ScriptedLLM()


# Told of each piece of text a streamed call sends, as it sends it: (model, piece, monotonic
# time). A bench measures the latency from there to the event bus and the CLI.
on_piece: Callable[[str, str, float], None] | None = None


def _pieces(text: str, pieces: int | list[str]) -> list[str]:
    if isinstance(pieces, list):
        if "".join(pieces) != text:
            raise ValueError(f"the turn's pieces {pieces!r} do not join to its text {text!r}")
        return [p for p in pieces if p]
    step = max(1, -(-len(text) // max(1, int(pieces))))
    return [text[i : i + step] for i in range(0, len(text), step)]


def _tool_use(index: int, call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    """A ChatCompletionToolCallChunk: a continuation has no id and no name."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
        "index": index,
    }


def _chunk(
    text: str, *, finished: str = "", usage: Any = None, tool_use: Any = None
) -> dict[str, Any]:
    """A litellm GenericStreamingChunk (`finished`: the finish reason of the last one)."""
    return {
        "text": text,
        "tool_use": tool_use,
        "is_finished": bool(finished),
        "finish_reason": finished,
        "usage": usage,
        "index": 0,
    }


def _tools(kwargs: dict[str, Any]) -> Any:
    return (kwargs.get("optional_params") or {}).get("tools")


class PromptCache:
    """Cached prompt tokens as a provider reports them, for the prompts it has seen.

    A prompt is rendered in the provider's cache order (tools, then each message's role, text
    and tool calls, breakpoints left out) at four characters a token. Per conversation (the
    model, its system message and first user message):

    - ``openai``: the longest common prefix with the previous request, in 128-token blocks,
      from 1,024 tokens (OpenAI, and alike Gemini and DeepSeek, cache by themselves);
    - ``anthropic``: only prefixes ending at a `cache_control` breakpoint of an earlier request
      are held (from 1,024 tokens); a request reads the longest held one it begins with and
      writes from there to its own last breakpoint. Without breakpoints nothing is cached.
    """

    BLOCK = 128
    MINIMUM = 1024

    def __init__(self) -> None:
        self.previous: dict[tuple[str, ...], str] = {}
        self.held: dict[tuple[str, ...], list[str]] = {}

    def forget(self, model: str) -> None:
        for store in (self.previous, self.held):
            for key in [k for k in store if k[0] == model]:
                del store[key]

    def serve(
        self, style: str, model: str, messages: list[dict[str, Any]], tools: Any = None
    ) -> tuple[int, int, int]:
        """(prompt tokens, read from the cache, written to it) for this request."""
        text, marks = _render(messages, tools)
        key = (model, *(_message_text([m]) for m in messages[:2]))
        prompt = _tokens(text)
        if style == "openai":
            before, self.previous[key] = self.previous.get(key, ""), text
            common = _common_prefix(before, text) // 4
            read = common // self.BLOCK * self.BLOCK if common >= self.MINIMUM else 0
            return prompt, read, 0
        held = self.held.setdefault(key, [])
        read = max(
            (len(p) // 4 for p in held if text.startswith(p)),
            default=0,
        )
        last = marks[-1] // 4 if marks else 0
        written = max(0, last - read) if last >= self.MINIMUM else 0
        # A prefix shorter than the minimum is not cached at all.
        held.extend(text[:m] for m in marks if m // 4 >= self.MINIMUM)
        return prompt, read, written


_CACHE = PromptCache()


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b` (bisection on slices: fast)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _render(messages: list[dict[str, Any]], tools: Any) -> tuple[str, list[int]]:
    """A prompt as one string in cache order, and where each `cache_control` breakpoint ends."""
    parts = [json.dumps(tools, sort_keys=True) if tools else ""]
    marks: list[int] = []
    size = len(parts[0])
    for m in messages:
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"text": content or ""}]
        piece = f"\n{m.get('role')}:{m.get('tool_call_id') or ''}\n"
        marked = bool(m.get("cache_control"))
        for b in blocks:
            piece += str(b.get("text", "")) if isinstance(b, dict) else str(b)
            marked = marked or bool(isinstance(b, dict) and b.get("cache_control"))
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {}) if isinstance(call, dict) else {}
            piece += f"\n[{fn.get('name')}] {fn.get('arguments', '')}"
        parts.append(piece)
        size += len(piece)
        if marked:
            marks.append(size)
    return "".join(parts), marks


# The entry point `scripted` of the group `prime_kernel.model_providers` (pyproject.toml).
model_provider = ModelProvider(
    register=register,
    check=check,
    models=lambda: [f"{PROVIDER}/{n}" for n in script_names()],
    breakpoints=breakpoints,
)
