"""The agent loop: model turn, run code in the session's kernel, show the model what happened.

One tool, `python(code)`. Models litellm says cannot call tools get the fenced-code protocol
instead: every ```python block in the reply runs. A session ends when its REPL calls
`answer(value)`; a reply without code ends a turn (the reply is the answer of a task session);
`max_turns`, the model profile's time limit and repeated turns end runaway loops.

How the loop talks to a model (prompt, examples, reply limits, retries, default limits) is the
model's profile (prime_kernel/models/profiles.py); what it decides between turns is in
policy.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from ..models.profiles import profile_for
from . import policy
from .compaction import compact_if_needed
from .observation import render

if TYPE_CHECKING:
    from .daemon import Daemon, LiveSession


T = TypeVar("T")


class TurnLimitReached(Exception):
    pass


class AgentLoop:
    """Runs one session's turns. Subclass and set `Daemon.loop_class` to change the policy."""

    def __init__(self, daemon: Daemon, live: LiveSession) -> None:
        self.daemon = daemon
        self.live = live
        self.model: str = live.record["model"]
        self.profile = profile_for(self.model)
        self.tools = daemon.gateway.supports_tools(self.model)
        self.messages: list[dict[str, Any]] = live.messages
        self.prefill = "" if self.tools else self.profile.prefill
        self.retry = False  # the last turn failed or repeated: sample the next one differently
        self.turn_keys: list[tuple[tuple[str, str], ...]] = []
        self.deadline: float | None = None

    def start_messages(self) -> None:
        record = self.live.record
        profile = self.profile
        extra = self.daemon.context_notes(self.live)
        self.messages[:] = [
            {"role": "system", "content": profile.system(self.tools, extra)},
            *([] if self.tools else profile.examples(record["prompt"])),
            {
                "role": "user",
                "content": profile.task(
                    record["prompt"], record.get("context_type"), record["depth"]
                ),
            },
        ]

    async def run(self, max_turns: int | None) -> None:
        """Take turns until an answer, a reply, or a limit. `max_turns` None: the default."""
        if not self.messages:
            self.start_messages()
            if self.profile.setup:
                await self.daemon.run_cell(self.live, self.profile.setup)
        limit = max_turns or min(
            self.daemon.max_turns, self.profile.max_turns or self.daemon.max_turns
        )
        budget = self.live.record.get("budget") or {}
        if self.profile.max_seconds and budget.get("seconds") is None:
            self.deadline = time.monotonic() + self.profile.max_seconds
        for _ in range(limit):
            self.absorb_news()
            self.daemon.check_limits(self.live)
            self.check_deadline()
            await compact_if_needed(self.daemon, self.live, self.messages)
            message = await self.model_turn()
            self.messages.append(message)
            self.daemon.record(
                self.live,
                "assistant",
                {"content": message.get("content") or "", "tool_calls": message.get("tool_calls")},
            )
            self.live.turns += 1
            runs = await self.run_code(message)
            if self.live.answered:
                return
            if runs is None:
                self.daemon.reply(self.live, message.get("content") or "")
                return
            self.after_turn(runs)
        raise TurnLimitReached(
            self.give_up(f"the turn limit ({limit}) was reached without an answer")
        )

    async def model_turn(self) -> dict[str, Any]:
        """One model call; the reply, with the prefill it continued, as an assistant message."""
        prefill = self.prefill
        sent = self.messages + ([{"role": "assistant", "content": prefill}] if prefill else [])
        call = self.daemon.model_call(
            self.live, sent, self.tools, **self.profile.request_kwargs(retry=self.retry)
        )
        completion = await self.within_deadline(call, "a model call was still running")
        message = dict(completion.message)
        if prefill:
            message["content"] = policy.complete_reply(prefill, message.get("content") or "")
        return message

    def after_turn(self, runs: list[policy.CellRun]) -> None:
        """Decide how the next turn starts, and add a nudge to what the model was shown."""
        profile = self.profile
        self.turn_keys.append(policy.turn_key(runs))
        repeated = policy.repeats(self.turn_keys)
        printed = policy.printed_result(runs)
        self.retry = repeated > 0 or not all(run.ok for run in runs)
        self.prefill = "" if self.tools else profile.prefill
        if repeated >= profile.max_repeats:
            raise TurnLimitReached(
                self.give_up(
                    f"the model repeated the same code with the same output {repeated + 1} "
                    "times without answering"
                )
            )
        hint = policy.error_hint(runs[-1].text) if profile.error_hints and self.retry else None
        if hint:
            self.add_note(hint)
        if repeated:
            self.add_note(policy.repeat_nudge())
        elif printed is not None:
            self.add_note(policy.answer_nudge(printed))
            if profile.prefill_answer and not self.tools:
                self.prefill = policy.answer_prefill(profile.prefill)

    def add_note(self, note: str) -> None:
        """Append `note` to the observation the model is about to read."""
        last = self.messages[-1]
        last["content"] = f"{last.get('content') or ''}\n\n{note}"

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TurnLimitReached(self.give_up(self.time_limit_text()))

    async def within_deadline(self, work: Awaitable[T], what: str) -> T:
        """Await `work`, cancelled at the profile's time limit (a cancelled cell is interrupted,
        a cancelled local generation stops)."""
        if self.deadline is None:
            return await work
        try:
            return await asyncio.wait_for(work, max(0.0, self.deadline - time.monotonic()))
        except asyncio.TimeoutError:
            raise TurnLimitReached(self.give_up(f"{self.time_limit_text()} ({what})")) from None

    def time_limit_text(self) -> str:
        return f"the time limit ({self.profile.max_seconds:g} s) was reached without an answer"

    def give_up(self, what: str) -> str:
        hint = self.profile.give_up_hint.format(model=self.model)
        return f"{what}; {hint}" if hint else what

    def absorb_news(self) -> None:
        """Show the model what happened since its last turn: a person's cells, messages."""
        for note in self.daemon.take_news(self.live):
            self.messages.append({"role": "user", "content": note})

    async def run_code(self, message: dict[str, Any]) -> list[policy.CellRun] | None:
        """Run the reply's code; what ran, or None if the reply had no code."""
        calls = message.get("tool_calls") or []
        runs: list[policy.CellRun] = []
        if calls:
            for call in calls:
                fn = call.get("function") or {}
                code, error = _code_argument(fn)
                run = policy.CellRun(code, error, False) if error else await self.execute(code)
                runs.append(run)
                self.messages.append(
                    {"role": "tool", "tool_call_id": call.get("id"), "content": run.text}
                )
                if self.live.answered:
                    break
            return runs
        blocks = policy.code_blocks(message.get("content") or "")
        if not blocks:
            return None
        for code in blocks:
            runs.append(await self.execute(code))
            if self.live.answered:
                break
        self.messages.append(
            {
                "role": "user",
                "content": "Output of your code:\n" + "\n---\n".join(run.text for run in runs),
            }
        )
        return runs

    async def execute(self, code: str) -> policy.CellRun:
        daemon = self.daemon
        profile = self.profile
        result = await self.within_deadline(
            daemon.run_cell(self.live, code), "a cell was still running"
        )
        text = render(
            result.outputs,
            status=result.status,
            limit=profile.observation_chars or daemon.observation_chars,
            timeout=daemon.cell_timeout,
            brief_errors=profile.brief_errors,
        )
        daemon.record(self.live, "observation", {"text": text})
        return policy.CellRun(code, text, result.status == "ok")


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
