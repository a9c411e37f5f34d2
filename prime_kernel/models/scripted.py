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
- ``sleep``: seconds to wait before answering (to exercise cancellation and timeouts).

Streamed calls (`stream=True`) get the text of the turn in a few pieces, then the usage.

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

PROVIDER = "scripted"
# Priced like a small hosted model so cost accounting has something to add up.
INPUT_COST_PER_TOKEN = 1e-6
OUTPUT_COST_PER_TOKEN = 2e-6

Turn = dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]]


@dataclass
class Script:
    turns: list[Turn]
    tools: bool = True
    context_window: int = 32768
    extra: dict[str, Any] = field(default_factory=dict)


_SCRIPTS: dict[str, Script] = {}
_loaded_file: str | None = None


def register_script(
    name: str, turns: list[Turn], *, tools: bool = True, context_window: int = 32768
) -> str:
    """Register a script and return its litellm model name, `scripted/<name>`."""
    _SCRIPTS[name] = Script(list(turns), tools=tools, context_window=context_window)
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
        litellm.register_model(
            {
                f"{PROVIDER}/{name}": {
                    "input_cost_per_token": INPUT_COST_PER_TOKEN,
                    "output_cost_per_token": OUTPUT_COST_PER_TOKEN,
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "max_tokens": 4096,
                    "max_input_tokens": script.context_window,
                    "supports_function_calling": script.tools,
                }
            }
        )


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


def _build_response(model: str, turn: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
    import litellm

    text = turn.get("text") or ""
    if turn.get("fenced"):
        text = (text + "\n\n" if text else "") + f"```python\n{turn['fenced']}\n```"
    codes = turn.get("code")
    if isinstance(codes, str):
        codes = [codes]
    tool_calls = [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": "python", "arguments": json.dumps({"code": code})},
        }
        for code in codes or []
    ]
    usage = turn.get("usage") or {}
    prompt_tokens = usage.get("prompt_tokens", _tokens(_message_text(messages)))
    completion_tokens = usage.get(
        "completion_tokens", _tokens(text + "".join(codes or [])) + 5 * len(tool_calls)
    )
    cached = usage.get("cached_tokens", 0)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
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
            return _build_response(f"{PROVIDER}/{name}", turn, messages)

        async def acompletion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:
            name = model.split("/", 1)[-1]
            turn = play(name, messages)
            if turn.get("sleep"):
                await asyncio.sleep(float(turn["sleep"]))
            return _build_response(f"{PROVIDER}/{name}", turn, messages)

        async def astreaming(  # type: ignore[override]  # litellm spells out its arguments
            self, model: str, messages: list, *args: Any, **kwargs: Any
        ) -> AsyncIterator[dict[str, Any]]:
            # Text only (`stream=True` calls ask for no tools), in a few pieces.
            name = model.split("/", 1)[-1]
            turn = play(name, messages)
            if turn.get("sleep"):
                await asyncio.sleep(float(turn["sleep"]))
            response = _build_response(f"{PROVIDER}/{name}", turn, messages)
            text = response.choices[0].message.content or ""
            step = max(1, len(text) // 4)
            for i in range(0, len(text), step):
                yield _chunk(text[i : i + step])
            usage = response.usage
            yield _chunk(
                "",
                finished=True,
                usage={
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                    "total_tokens": usage.total_tokens,
                },
            )

    return ScriptedLLM()


def _chunk(text: str, *, finished: bool = False, usage: Any = None) -> dict[str, Any]:
    """A litellm GenericStreamingChunk."""
    return {
        "text": text,
        "tool_use": None,
        "is_finished": finished,
        "finish_reason": "stop" if finished else "",
        "usage": usage,
        "index": 0,
    }
