"""The agent loop: model turn, run code in the session's kernel, show the model what happened.

One tool, `python(code)`. Models litellm says cannot call tools get the fenced-code protocol
instead: every ```python block in the reply runs. A session ends when its REPL calls
`answer(value)`; a reply without code ends a turn (the reply is the answer of a task session);
`max_turns`, the model profile's time limit and repeated turns end runaway loops.

How the loop talks to a model (prompt, examples, reply limits, retries, default limits) is the
model's profile (prime_kernel/models/profiles.py); what it decides between turns is in
policy.py. The loop is given a `LoopHost` (the daemon) for everything outside the conversation
— model calls, cells, events, limits — and never imports the daemon.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from ..harness.examples import Example
from ..models.profiles import profile_for
from ..models.router import INTERRUPTED, Completion
from ..protocol.errors import ModelError
from ..protocol.events import EventKind
from ..util.format import NO_OUTPUT
from . import policy
from .kernels import CellResult
from .observation import render
from .session import LiveSession

T = TypeVar("T")
Message = dict[str, Any]


# What the model is told at its next turn when a person interrupted its reply.
INTERRUPTED_NOTE = (
    "[A person interrupted your reply. Your unfinished code did not run; read their messages, "
    "if any, and go on.]"
)


class TurnLimitReached(Exception):
    """The loop stopped without an answer. `what` says why, without the model profile's
    advice the message adds; `turns`: because its turns ran out (not its time, not repeats)."""

    def __init__(self, message: str, what: str = "", *, turns: bool = False) -> None:
        super().__init__(message)
        self.what = what or message
        self.turns = turns


class LoopHost(Protocol):
    """What the loop needs of the daemon."""

    observation_chars: int
    max_turns: int

    @property
    def cell_timeout(self) -> float: ...

    def supports_tools(self, model: str) -> bool: ...

    def context_notes(self, live: LiveSession) -> str: ...

    def recall(
        self, live: LiveSession, *, shown: int | None, max_chars: int | None
    ) -> list[Example]:
        """Worked examples (`shown` of them, None: the Learner's setting; their code at most
        `max_chars` long) and cautions learned from verified sessions with similar tasks."""

    async def before_turn(self, live: LiveSession) -> None:
        """Show the model what happened since its last turn, check limits, compact."""

    async def model_call(
        self, live: LiveSession, messages: list[dict[str, Any]], tools: bool, **kwargs: Any
    ) -> Completion: ...

    async def run_cell(self, live: LiveSession, code: str, source: str = "agent") -> CellResult: ...

    def emit(self, live: LiveSession, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]: ...

    def reply(self, live: LiveSession, text: str) -> None: ...

    def answered(self, live: LiveSession) -> bool:
        """Whether the session answered in this run (its REPL's answer(), or a reply)."""


class AgentLoop:
    """Runs one session's turns. Subclass and set `Runs.loop_class` to change the policy."""

    def __init__(self, host: LoopHost, live: LiveSession) -> None:
        self.host = host
        self.live = live
        self.model: str = live.record.model or ""
        self.profile = profile_for(self.model)
        self.tools = host.supports_tools(self.model)
        self.prefill = "" if self.tools else self.profile.prefill
        self.retry = False  # the last turn failed or repeated: sample the next one differently
        self.turn_keys: list[tuple[tuple[str, str], ...]] = []
        self.deadline: float | None = None
        # The failed turns' messages the model no longer sees (held, so that their ids stay
        # theirs after a compaction drops them), and what went wrong last (profile.retry_fresh).
        self.failed: list[Message] = []
        self.failure = ""
        # A person interrupted the last reply as it streamed (Daemon.interrupt).
        self.interrupted = False
        # The code of the profile's worked examples this session was shown, and of the learned
        # ones recalled for it (profile.no_copies).
        self.example_code: list[str] = []
        self.recalled_code: list[str] = []

    def start_messages(self, about: str = "") -> None:
        """The conversation's start; `about`: what the profile's `look` said about `context`."""
        record = self.live.record
        profile = self.profile
        extra = self.host.context_notes(self.live)
        # The profile's bound: a learned example (a stronger model's, say) this model could not
        # write back in one reply is passed over for a shorter one.
        recalled = self.host.recall(
            self.live, shown=profile.learned_examples, max_chars=profile.example_chars
        )
        worked = [e for e in recalled if e.right]
        notes = []
        if cautions := [e.caution() for e in recalled if not e.right]:
            notes.append("Cautions, from answers verified wrong:\n" + "\n".join(cautions))
        examples: list[dict[str, Any]] = []
        if self.tools and worked:
            notes.append(
                "Worked examples, from sessions whose answers were verified right:\n\n"
                + "\n\n".join(e.text() for e in worked)
            )
        elif not self.tools:
            # A learned example takes the place of the farthest of the profile's own (the
            # nearest come last), so the prompt does not grow: every token of it is read.
            examples = profile.examples(record.prompt, bool(record.context_type))[2 * len(worked) :]
            if profile.no_copies:
                # A recalled example may be this very task, solved right: copying it is no copy
                # (copies_example: every value of its code is then in the task).
                self.example_code = [
                    code for m in examples[1::2] for code in policy.code_blocks(m["content"])
                ]
                self.recalled_code = [e.code for e in worked]
            for e in reversed(worked):  # the most relevant last, nearest the task
                examples += [
                    {
                        "role": "user",
                        "name": "example",
                        "content": profile.task(e.task, e.context_type, 0, ""),
                    },
                    {
                        "role": "assistant",
                        "name": "example",
                        "content": f"```python\n{e.code}\n```",
                    },
                ]
        extra = "\n\n".join(part for part in (extra, *notes) if part)
        self.live.conversation.replace(
            [
                {"role": "system", "content": profile.system(self.tools, extra)},
                *examples,
                {
                    "role": "user",
                    "content": profile.task(
                        record.prompt, record.context_type, record.depth, about
                    ),
                },
            ]
        )

    async def run(self, max_turns: int | None) -> None:
        """Take turns until an answer, a reply, or a limit. `max_turns` None: the default."""
        host = self.host
        if not len(self.live.conversation):
            if self.profile.setup:
                await host.run_cell(self.live, self.profile.setup, source="setup")
            self.start_messages(await self.look())
        limit = max_turns or min(host.max_turns, self.profile.max_turns or host.max_turns)
        budget = self.live.record.budget or {}
        if self.profile.max_seconds and budget.get("seconds") is None:
            self.deadline = time.monotonic() + self.profile.max_seconds
        for _ in range(limit):
            await host.before_turn(self.live)
            self.check_deadline()
            reply = await self.model_turn()
            if self.interrupted and not str(reply.get("content") or "").strip():
                self.live.notes.append(INTERRUPTED_NOTE)  # interrupted before it said a thing
                continue
            # The message as kept: a retry from a clean slate leaves it out by its identity.
            (message,) = self.live.conversation.append(reply)
            host.emit(
                self.live,
                EventKind.ASSISTANT,
                {"content": message.get("content") or "", "tool_calls": message.get("tool_calls")},
            )
            self.live.turns += 1
            if self.interrupted:  # its code, if any, is unfinished: it is not run
                self.live.notes.append(INTERRUPTED_NOTE)
                continue
            if not await self.run_code(message):
                text = message.get("content") or ""
                if not text.strip():  # nothing to run and nothing to answer with
                    raise ModelError(f"the model {self.model!r} replied with no text and no code")
                self.host.reply(self.live, text)
                return
            if self.host.answered(self.live):
                return
        raise self.give_up(f"the turn limit ({limit}) was reached without an answer", turns=True)

    async def look(self) -> str:
        """What the profile's look at the task's input printed ("" if it has nothing to look
        at, or its code failed)."""
        record, look = self.live.record, self.profile.look
        code = look(record.prompt, bool(record.context_type)) if look else ""
        if not code:
            return ""
        result = await self.host.run_cell(self.live, code, source="setup")
        if result.status != "ok":
            return ""
        limit = self.profile.observation_chars or self.host.observation_chars
        text = render(result.outputs, status="ok", limit=limit, timeout=0).strip()
        return "" if text == NO_OUTPUT else text

    async def model_turn(self) -> dict[str, Any]:
        """One model call; the reply, with the prefill it continued, as an assistant message."""
        prefill = self.prefill
        sent = self.live.conversation.messages
        if self.failed:
            sent = policy.without_failed_turns(sent, {id(m) for m in self.failed}, self.failure)
        if prefill:
            sent.append({"role": "assistant", "content": prefill})
        call = self.host.model_call(
            self.live, sent, self.tools, **self.profile.request_kwargs(retry=self.retry)
        )
        completion = await self.within_deadline(call, "a model call was still running")
        self.interrupted = completion.finish_reason == INTERRUPTED
        message = dict(completion.message)
        if prefill and not completion.whole:
            message["content"] = policy.complete_reply(prefill, message.get("content") or "")
        return message

    async def run_code(self, message: dict[str, Any]) -> bool:
        """Run the reply's code and show the model its output; False if it had none.

        Each tool call's output is stored as soon as it ran (a restarted daemon knows what
        ran); the last one waits for the turn's notes (a hint after an error, a nudge to
        answer), which go with it.
        """
        conversation = self.live.conversation
        calls = message.get("tool_calls") or []
        runs: list[policy.CellRun] = []
        if calls:
            replies = []
            for call in calls:
                fn = call.get("function") or {}
                code, error = _code_argument(fn)
                run = policy.CellRun(code, error, False) if error else await self.execute(code)
                runs.append(run)
                replies.append(
                    {"role": "tool", "tool_call_id": call.get("id"), "content": run.text}
                )
                if self.host.answered(self.live):
                    break
            conversation.append(*replies[:-1])
            last = replies[-1]
        else:
            blocks = policy.code_blocks(message.get("content") or "")
            if not blocks:
                return False
            for code in blocks:
                if self.copied_example(code):
                    runs.append(policy.CellRun(code, policy.copied_example_text(), False))
                    break
                if self.overwrites_context(code):
                    runs.append(policy.CellRun(code, policy.overwritten_context_text(), False))
                    break
                runs.append(await self.execute(code))
                if self.host.answered(self.live):
                    break
            output = "\n---\n".join(run.text for run in runs)
            last = {"role": "user", "content": "Output of your code:\n" + output}
        notes = [] if self.host.answered(self.live) else self.after_turn(runs)
        if notes:
            last = {**last, "content": "\n\n".join([str(last["content"]), *notes])}
        (last,) = conversation.append(last)
        if self.profile.retry_fresh and not calls:
            self.note_failure(runs, notes, (message, last))
        return True

    def copied_example(self, code: str) -> bool:
        """(profile.no_copies) Whether `code` copies a shown example's whole; if so, a cookbook
        example is hidden from the model from now on, or it copies it again."""
        task = self.live.record.prompt
        if any(policy.copies_example(code, e, task) for e in self.recalled_code):
            # A learned example stays shown: it is right code for this kind of task with a
            # similar task's values (the default model copied a learned example's list whole),
            # and the retry is told to use this task's own; without it the model is back to the
            # cookbook, which had not solved the task.
            return True
        if not any(policy.copies_example(code, e, task) for e in self.example_code):
            return False
        messages = self.live.conversation.messages
        for i, m in enumerate(messages):
            if m.get("name") == "example" and any(
                policy.copies_example(code, e, task) for e in policy.code_blocks(m["content"])
            ):
                self.failed.extend(messages[i - 1 : i + 1])  # the example's task and code
        return True

    def overwrites_context(self, code: str) -> bool:
        """(profile.no_copies) Whether `code` would replace the task's data with a literal."""
        return (
            self.profile.no_copies
            and bool(self.live.record.context_type)
            and policy.overwrites_context(code)
        )

    def note_failure(
        self, runs: list[policy.CellRun], notes: list[str], turn: tuple[Message, Message]
    ) -> None:
        """(profile.retry_fresh) Hide a failed turn from the model from now on; keep what
        went wrong to tell it instead."""
        if all(run.ok for run in runs) or self.host.answered(self.live):
            self.failure = ""
            return
        self.failed.extend(turn)
        output = "\n---\n".join(run.text.strip() for run in runs)
        self.failure = "\n\n".join([f"Your previous code failed:\n{output}", *notes])

    def after_turn(self, runs: list[policy.CellRun]) -> list[str]:
        """Decide how the next turn starts; the notes to add to what the model is shown."""
        profile = self.profile
        self.turn_keys.append(policy.turn_key(runs))
        repeated = policy.repeats(self.turn_keys)
        printed = policy.printed_result(runs)
        self.retry = repeated > 0 or not all(run.ok for run in runs)
        self.prefill = "" if self.tools else profile.prefill
        if repeated >= profile.max_repeats:
            raise self.give_up(
                f"the model repeated the same code with the same output {repeated + 1} "
                "times without answering"
            )
        notes = []
        last = runs[-1]
        hint = (
            policy.error_hint(last.text, last.code, self.live.record.context_type or "")
            if profile.error_hints and self.retry
            else None
        )
        if hint:
            notes.append(hint)
        if repeated:
            notes.append(policy.repeat_nudge())
        elif printed is not None:
            notes.append(policy.answer_nudge(printed))
            if profile.prefill_answer and not self.tools:
                self.prefill = policy.answer_prefill(profile.prefill)
        return notes

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise self.give_up(self.time_limit_text())

    async def within_deadline(self, work: Awaitable[T], what: str) -> T:
        """Await `work`, cancelled at the profile's time limit (a cancelled cell is interrupted,
        a cancelled local generation stops)."""
        if self.deadline is None:
            return await work
        try:
            return await asyncio.wait_for(work, max(0.0, self.deadline - time.monotonic()))
        except asyncio.TimeoutError:
            raise self.give_up(f"{self.time_limit_text()} ({what})") from None

    def time_limit_text(self) -> str:
        return f"the time limit ({self.profile.max_seconds:g} s) was reached without an answer"

    def give_up(self, what: str, *, turns: bool = False) -> TurnLimitReached:
        """The error ending the loop without an answer because `what`, with the profile's
        advice (a small model's: try a bigger one)."""
        hint = self.profile.give_up_hint.format(model=self.model)
        return TurnLimitReached(f"{what}; {hint}" if hint else what, what, turns=turns)

    async def execute(self, code: str) -> policy.CellRun:
        host = self.host
        profile = self.profile
        result = await self.within_deadline(
            host.run_cell(self.live, code), "a cell was still running"
        )
        text = render(
            result.outputs,
            status=result.status,
            limit=profile.observation_chars or host.observation_chars,
            timeout=host.cell_timeout,
            exit=result.exit,
            brief_errors=profile.brief_errors,
        )
        host.emit(self.live, EventKind.OBSERVATION, {"text": text})
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
