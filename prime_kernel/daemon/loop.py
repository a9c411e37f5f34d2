"""The agent loop: model turn, run code in the session's kernel, show the model what happened.

One tool, `python(code)`. Models litellm says cannot call tools get the fenced-code protocol
instead: every ```python block in the reply runs. A session ends when its REPL calls
`answer(value)`; a reply without code ends a turn (the reply is the answer of a task session);
`max_turns` ends runaway loops.

The loop is given a `LoopHost` (the daemon) for everything outside the conversation — model
calls, cells, events, limits — and never imports the daemon.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from ..models.router import Completion
from ..protocol.errors import ModelError
from ..protocol.events import EventKind
from .kernels import CellResult
from .observation import render
from .prompts import FENCED_EXAMPLE, system_prompt, task_message
from .session import LiveSession

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


class TurnLimitReached(Exception):
    pass


class LoopHost(Protocol):
    """What the loop needs of the daemon."""

    observation_chars: int
    cell_timeout: float

    def supports_tools(self, model: str) -> bool: ...

    def context_notes(self, live: LiveSession) -> str: ...

    async def before_turn(self, live: LiveSession) -> None:
        """Show the model what happened since its last turn, check limits, compact."""

    async def model_call(
        self, live: LiveSession, messages: list[dict[str, Any]], tools: bool
    ) -> Completion: ...

    async def run_cell(self, live: LiveSession, code: str) -> CellResult: ...

    def emit(self, live: LiveSession, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]: ...

    def reply(self, live: LiveSession, text: str) -> None: ...


def fenced_blocks(text: str) -> list[str]:
    return [block.strip("\n") for block in _FENCE.findall(text or "") if block.strip()]


class AgentLoop:
    """Runs one session's turns. Subclass and set `Daemon.loop_class` to change the policy."""

    def __init__(self, host: LoopHost, live: LiveSession) -> None:
        self.host = host
        self.live = live
        self.model: str = live.record.model or ""
        self.tools = host.supports_tools(self.model)

    def start_messages(self) -> None:
        record = self.live.record
        extra = self.host.context_notes(self.live)
        self.live.conversation.replace(
            [
                {"role": "system", "content": system_prompt(tools=self.tools, extra=extra)},
                *([] if self.tools else [dict(m) for m in FENCED_EXAMPLE]),
                {
                    "role": "user",
                    "content": task_message(
                        record.prompt, context_type=record.context_type, depth=record.depth
                    ),
                },
            ]
        )

    async def run(self, max_turns: int) -> None:
        """Take turns until an answer, a reply, or the turn limit."""
        conversation = self.live.conversation
        if not len(conversation):
            self.start_messages()
        for _ in range(max_turns):
            await self.host.before_turn(self.live)
            completion = await self.host.model_call(self.live, conversation.messages, self.tools)
            message = completion.message
            conversation.append(message)
            self.host.emit(
                self.live,
                EventKind.ASSISTANT,
                {"content": message.get("content") or "", "tool_calls": message.get("tool_calls")},
            )
            self.live.turns += 1
            ran = await self.run_code(message)
            if self.live.answered:
                return
            if not ran:
                text = message.get("content") or ""
                if not text.strip():  # nothing to run and nothing to answer with
                    raise ModelError(f"the model {self.model!r} replied with no text and no code")
                self.host.reply(self.live, text)
                return
        raise TurnLimitReached(f"the turn limit ({max_turns}) was reached without an answer")

    async def run_code(self, message: dict[str, Any]) -> bool:
        conversation = self.live.conversation
        calls = message.get("tool_calls") or []
        if calls:
            for call in calls:
                fn = call.get("function") or {}
                code, error = _code_argument(fn)
                text = error if error else await self.execute(code)
                conversation.append(
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
        conversation.append(
            {"role": "user", "content": "Output of your code:\n" + "\n---\n".join(texts)}
        )
        return True

    async def execute(self, code: str) -> str:
        host = self.host
        result = await host.run_cell(self.live, code)
        text = render(
            result.outputs,
            status=result.status,
            limit=host.observation_chars,
            timeout=host.cell_timeout,
            exit=result.exit,
        )
        host.emit(self.live, EventKind.OBSERVATION, {"text": text})
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
