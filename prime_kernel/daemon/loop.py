"""The agent loop: model turn, run code in the session's kernel, show the model what happened.

One tool, `python(code)`. Models litellm says cannot call tools get the fenced-code protocol
instead: every ```python block in the reply runs. A session ends when its REPL calls
`answer(value)`; a reply without code ends a turn (the reply is the answer of a task session);
`max_turns` ends runaway loops.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .compaction import compact_if_needed
from .observation import render
from .prompts import FENCED_EXAMPLE, system_prompt, task_message

if TYPE_CHECKING:
    from .daemon import Daemon, LiveSession

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


class TurnLimitReached(Exception):
    pass


def fenced_blocks(text: str) -> list[str]:
    return [block.strip("\n") for block in _FENCE.findall(text or "") if block.strip()]


class AgentLoop:
    """Runs one session's turns. Subclass and set `Daemon.loop_class` to change the policy."""

    def __init__(self, daemon: Daemon, live: LiveSession) -> None:
        self.daemon = daemon
        self.live = live
        self.model: str = live.record["model"]
        self.tools = daemon.gateway.supports_tools(self.model)
        self.messages: list[dict[str, Any]] = live.messages

    def start_messages(self) -> None:
        record = self.live.record
        extra = self.daemon.context_notes(self.live)
        self.messages[:] = [
            {"role": "system", "content": system_prompt(tools=self.tools, extra=extra)},
            *([] if self.tools else [dict(m) for m in FENCED_EXAMPLE]),
            {
                "role": "user",
                "content": task_message(
                    record["prompt"], context_type=record.get("context_type"), depth=record["depth"]
                ),
            },
        ]

    async def run(self, max_turns: int) -> None:
        """Take turns until an answer, a reply, or the turn limit."""
        if not self.messages:
            self.start_messages()
        for _ in range(max_turns):
            self.absorb_news()
            self.daemon.check_limits(self.live)
            await compact_if_needed(self.daemon, self.live, self.messages)
            completion = await self.daemon.model_call(self.live, self.messages, self.tools)
            message = completion.message
            self.messages.append(message)
            self.daemon.record(
                self.live,
                "assistant",
                {"content": message.get("content") or "", "tool_calls": message.get("tool_calls")},
            )
            self.live.turns += 1
            ran = await self.run_code(message)
            if self.live.answered:
                return
            if not ran:
                self.daemon.reply(self.live, message.get("content") or "")
                return
        raise TurnLimitReached(f"the turn limit ({max_turns}) was reached without an answer")

    def absorb_news(self) -> None:
        """Show the model what happened since its last turn: a person's cells, messages."""
        for note in self.daemon.take_news(self.live):
            self.messages.append({"role": "user", "content": note})

    async def run_code(self, message: dict[str, Any]) -> bool:
        calls = message.get("tool_calls") or []
        if calls:
            for call in calls:
                fn = call.get("function") or {}
                code, error = _code_argument(fn)
                if error:
                    text = error
                else:
                    text = await self.execute(code)
                self.messages.append(
                    {"role": "tool", "tool_call_id": call.get("id"), "content": text}
                )
                if self.live.answered:
                    break
            return True
        blocks = fenced_blocks(message.get("content") or "")
        if not blocks:
            return False
        texts = []
        for code in blocks:
            texts.append(await self.execute(code))
            if self.live.answered:
                break
        self.messages.append(
            {"role": "user", "content": "Output of your code:\n" + "\n---\n".join(texts)}
        )
        return True

    async def execute(self, code: str) -> str:
        daemon = self.daemon
        result = await daemon.run_cell(self.live, code)
        text = render(
            result.outputs,
            status=result.status,
            limit=daemon.observation_chars,
            timeout=daemon.cell_timeout,
        )
        daemon.record(self.live, "observation", {"text": text})
        return text


def _code_argument(fn: dict[str, Any]) -> tuple[str, str | None]:
    if fn.get("name") != "python":
        return "", f"Unknown tool {fn.get('name')!r}; the only tool is `python(code)`."
    raw = fn.get("arguments") or "{}"
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (ValueError, TypeError):
        return "", 'The tool arguments were not valid JSON; call python with {"code": "..."}.'
    code = args.get("code") if isinstance(args, dict) else None
    if not isinstance(code, str):
        return "", "The python tool needs a string argument `code`."
    return code, None
