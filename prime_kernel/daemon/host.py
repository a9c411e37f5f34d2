"""The host of the agent loop: what a session's turns ask of the daemon (loop.py's `LoopHost`).

`Host` decides what happens around a turn: before it, the notes and mail the model is shown,
the limits checked (budget, disk) and whether the conversation is compacted; the model call
itself, streamed to the event bus as it comes (streaming.py) and served from the provider's
prompt cache where it can be (prompt_cache.py); every completion accounted for; a cell run in
the session's REPL and whether a snapshot is due after it; a cell a person ran in the REPL,
shown to the model at its next turn; and `llm()` / `llm.batch()`, plain model calls from a REPL.

Configure as `c.Host.<trait>` (the old `c.Daemon.<trait>` works one more release).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from traitlets import Float, Instance, Int
from traitlets.config import LoggingConfigurable

from ..harness import Harness
from ..harness.examples import Example
from ..models.prompts import PYTHON_TOOL
from ..models.router import Completion, ModelRouter
from ..protocol.errors import Forbidden, PrimeError
from ..protocol.events import EventKind
from ..util.redact import Redactor
from .admission import Admission
from .answers import Answers
from .autonomy import Autonomy
from .compaction import compact_if_needed
from .disk import DiskSpace
from .goals import Goals
from .kernel_side import KernelSide
from .kernels import CellResult
from .learning import Learner
from .mailbox import Mailbox
from .observation import render
from .prompt_cache import stable_length
from .replay import Replays
from .session import LiveSession
from .shared import Shared
from .streaming import ReplyStream


class Host(LoggingConfigurable):
    """The agent loop's host. Configure as `c.Host.<trait>`."""

    max_turns = Int(20, config=True, help="Default limit of model turns per session.")
    observation_chars = Int(
        8000, config=True, help="Characters of cell output shown to the model per cell."
    )
    model_kwargs = Instance(
        dict, kw={}, config=True, help="Extra keyword arguments for every litellm completion."
    )
    compact_at = Float(
        0.8,
        min=0.0,
        max=1.0,
        config=True,
        help="Compact a session's conversation before a model call once its prompt fills this "
        "fraction of the model's context window (see daemon/compaction.py); 0 turns that off "
        "(compact() from the REPL still works).",
    )
    compact_keep_recent = Int(
        6, min=0, config=True, help="Most recent messages a compaction keeps verbatim."
    )
    snapshot_overhead = Float(
        0.05,
        min=0.0,
        config=True,
        help="Fraction of a session's time its REPL snapshots may take. A snapshot is taken at "
        "a turn boundary when that keeps the total under this share (so a restart or a dead "
        "kernel loses little); 0 takes them only before passivation and a clean stop.",
    )
    max_llm_batch = Int(1000, config=True, help="Most prompts one llm.batch() call may send.")
    llm_batch_concurrency = Int(
        8, config=True, help="Model calls of one llm.batch() in flight at once."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        router: ModelRouter,
        kernels: KernelSide,
        mailbox: Mailbox,
        goals: Goals,
        autonomy: Autonomy,
        admission: Admission,
        harness: Harness,
        learner: Learner,
        replays: Replays,
        disk: DiskSpace,
        redactor: Callable[[], Redactor],
        turn_taken: Callable[[], None],
        waits_after_answer: Callable[[LiveSession], bool],
        answers: Answers,
        unreachable: Callable[[], str],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.router = router
        self.events = shared.events
        self.accounting = shared.accounting
        self.custody = kernels.custody
        self.snapshots = kernels.snapshots
        self.passivation = kernels.passivation
        self.spills = kernels.spills
        self.mailbox = mailbox
        self.goals = goals
        self.autonomy = autonomy
        self.admission = admission
        self.harness = harness
        self.learner = learner
        self.replays = replays
        self.disk = disk
        self.redactor = redactor
        # A model turn was taken (refinement counts them).
        self.turn_taken = turn_taken
        # Whether the session waits for more once it answered (runs.py).
        self.waits_after_answer = waits_after_answer
        self.answers = answers
        # What to add when a kernel says it cannot reach the daemon (the URL it was given).
        self.unreachable = unreachable

    # -- what the loop reads --------------------------------------------------------------
    @property
    def cell_timeout(self) -> float:
        return self.custody.cell_timeout

    def supports_tools(self, model: str) -> bool:
        return self.router.supports_tools(model)

    def context_notes(self, live: LiveSession) -> str:
        """Extra system-prompt text for a session: harness notes, memories, skills."""
        return self.harness.context(live.record.to_row())

    def recall(
        self, live: LiveSession, *, shown: int | None, max_chars: int | None
    ) -> list[Example]:
        """Worked examples (`shown`, None: the Learner's setting; their code at most `max_chars`
        long) and cautions learned from verified sessions like this one."""
        return self.learner.recall(live.record, shown=shown, max_chars=max_chars)

    def emit(self, live: LiveSession, kind: EventKind, data: dict[str, Any]) -> dict[str, Any]:
        return self.events.emit(live.record, kind, data)

    def reply(self, live: LiveSession, text: str) -> None:
        """A turn that ended without code: for a task session the reply is its answer."""
        if not self.answers.answered(live):
            # No blob: the answer is the text itself (`answer_bytes` pickles it on demand).
            self.answers.record(live, None, text, "reply")

    def answered(self, live: LiveSession) -> bool:
        return self.answers.answered(live)

    # -- before a turn --------------------------------------------------------------------
    async def before_turn(self, live: LiveSession) -> None:
        notes, live.notes = live.notes, []
        for note in [*notes, *await self.mailbox.for_model(live)]:
            live.conversation.append({"role": "user", "content": note})
        self.check_limits(live)
        self.autonomy.before_turn(live)
        if await self._compact(live) and await self.spills.auto_spill(live, "compaction"):
            notes, live.notes = live.notes, []  # the model is told at once
            for note in notes:
                live.conversation.append({"role": "user", "content": note})

    def check_limits(self, live: LiveSession) -> None:
        """Called before every model call; raises to stop the session."""
        if live.cancelling:
            raise asyncio.CancelledError()
        self.accounting.check(live.record)
        # A full disk (an agent filled it, say) stops the session at once, for one clear
        # reason, instead of each of its turns failing to record anything.
        self.disk.check("another turn")

    async def _compact(self, live: LiveSession) -> bool:
        """Compact the session's conversation if it is due; whether it was."""
        requested, live.compact_requested = live.compact_requested, False
        result = await compact_if_needed(
            self.router,
            live.record.model or "",
            live.conversation.messages,
            compact_at=self.compact_at,
            keep_recent=self.compact_keep_recent,
            requested=requested,
            **self.model_kwargs,
        )
        if result is None:
            return False
        compacted, data = result
        if compacted.completion is not None:
            self.account(live, compacted.completion, purpose="compaction")
        live.conversation.replace(compacted.messages)
        live.prefix.planned = True  # the one break of the cached prefix that is meant
        self.emit(live, EventKind.COMPACTION, data)
        return True

    def request_compaction(self, live: LiveSession) -> dict[str, Any]:
        """`compact()` from a REPL: compact this session before its next model call."""
        if not live.record.is_agent:
            raise Forbidden("compact() is for agent sessions; this kernel is not running one")
        live.compact_requested = True
        return {"session_id": live.id, "requested": True}

    # -- the model call -------------------------------------------------------------------
    async def model_call(
        self, live: LiveSession, messages: list[dict[str, Any]], tools: bool, **kwargs: Any
    ) -> Completion:
        recorded = self.replays.reply(live.record, live.turns)
        if recorded is not None:  # no model call, nothing spent
            self.account(live, recorded, model=f"replay/{live.record.options['replay']['of']}")
            return recorded
        # The stored conversation goes first, unchanged, so the provider can serve it from its
        # prompt cache; the goal (and a prefill) follow it for this call only (prompt_cache.py).
        stable = stable_length(messages)
        sent = self.goals.decorate(live.record, messages, stable)
        # Checked as sent, so that anything rewriting the stable part is caught here.
        cache_break = live.prefix.check(sent[:stable])
        # The reply is told to the event bus as it streams (streaming.py); `done` goes however
        # the call ends. A cancel of the session's task closes the provider's stream.
        model = live.record.model or ""
        call = int(live.record.usage.get("model_calls", 0)) + 1
        start = time.monotonic()
        with ReplyStream(self.events, live.record, call, self.redactor()) as reply:
            live.reply_task = asyncio.ensure_future(
                self.router.stream(
                    model,
                    sent,
                    reply.push,
                    tools=[PYTHON_TOOL] if tools else None,
                    cache_at=stable,
                    **{**self.model_kwargs, **kwargs},
                )
            )
            try:
                completion = await live.reply_task
            except asyncio.CancelledError:
                # Stopped halfway (the session cancelled, or its reply interrupted): what it
                # said so far was generated, and is billed.
                interrupted = live.reply_interrupted and not live.cancelling
                if reply.text or interrupted:
                    partial = self.router.partial(model, sent, reply.text, time.monotonic() - start)
                    self.account(live, partial, cache_break=cache_break)
                if not interrupted:
                    raise
                return partial
            finally:
                live.reply_task = None
                live.reply_interrupted = False
        self.account(live, completion, cache_break=cache_break)
        self.turn_taken()
        return completion

    def account(
        self,
        live: LiveSession,
        completion: Completion,
        purpose: str = "",
        model: str | None = None,
        cache_break: dict[str, Any] | None = None,
    ) -> None:
        """Count a completion against the session (and its budget chain) and record it as a
        `model_call` event: who called which model, for what, at what cost."""
        self.accounting.add_completion(live.record, completion)
        data: dict[str, Any] = {
            "model": model or live.record.model,
            "usage": completion.usage,
            "cost": completion.cost,
            "uncached_cost": completion.uncached_cost,
            "duration": round(completion.duration, 6),
            "finish_reason": completion.finish_reason,
        }
        if purpose:
            data["purpose"] = purpose
        if cache_break is not None:
            data["cache_break"] = cache_break
        self.emit(live, EventKind.MODEL_CALL, data)

    # -- cells ----------------------------------------------------------------------------
    async def run_cell(self, live: LiveSession, code: str, source: str = "agent") -> CellResult:
        """Run `code` in the session's REPL and record it as a cell of `source` (the agent's,
        or "setup": the harness's own before the first turn)."""
        runner = live.runner
        if runner is None:
            raise PrimeError("the session has no kernel")
        self.answers.hold(live)
        try:
            result = await runner.execute(
                code,
                timeout=self.custody.cell_timeout,
                interrupt_grace=self.custody.interrupt_grace,
                names=True,
            )
        except asyncio.CancelledError:
            # Interrupt what runs; a cell that ignores it stays `busy` and its kernel is
            # stopped the hard way when it is released (never kept for co-working).
            with contextlib.suppress(Exception):
                await asyncio.shield(runner.interrupt())
                await asyncio.shield(runner.settle(self.custody.interrupt_grace))
            self.emit(live, EventKind.CELL, CellResult(code=code, status="cancelled").to_json())
            self.answers.release(live)
            raise
        self.accounting.add(live.record, cells=1, kernel_time=result.duration)
        if result.names is not None:
            live.repl_names = result.names
        self.emit(live, EventKind.CELL, result.to_json(source))
        self.answers.release(live)
        self._check_reach(result)
        if result.status in ("died", "killed"):
            await self.custody.replace(live, result)
        elif self.snapshot_due(live) and self.disk.full() is None:
            await self.snapshots.save(live, "turn")
        return result

    def _check_reach(self, result: CellResult) -> None:
        """A kernel that cannot reach the daemon (a remote one given a `public_url` it cannot
        reach) can do nothing a session needs: its first call says so, and the session ends
        with that reason instead of the model retrying blind."""
        for out in result.outputs:
            if out.get("output_type") == "error" and out.get("ename") == "DaemonUnreachable":
                raise PrimeError(f"the session's kernel {out.get('evalue')}{self.unreachable()}")

    def snapshot_due(self, live: LiveSession) -> bool:
        """Whether to snapshot at this turn boundary: while snapshots stay a small share of the
        session's time (`snapshot_overhead`)."""
        if self.snapshot_overhead <= 0 or not live.record.started:
            return False
        if self.answers.answered(live) and not (
            live.record.options.get("autonomous") or self.waits_after_answer(live)
        ):
            # Its REPL will never be resumed: the turn ends the session (a fan-out's children
            # answer at their first cell, where a snapshot would have doubled their time).
            return False
        since = time.time() - (live.last_snapshot or live.record.started)
        return live.snapshot_cost <= self.snapshot_overhead * since

    def on_user_cell(self, live: LiveSession, cell: CellResult) -> None:
        """A cell a person ran in the session's REPL: recorded, and shown to the model."""
        # A person working in the REPL keeps it in use: idle and keep timers start again.
        live.last_active = time.monotonic()
        self.passivation.touch(live.record, live)
        # Its code and outputs are scrubbed where they are written: the event, and the note
        # in the conversation (agent code can print a key, its token, the server's token).
        self.emit(live, EventKind.CELL, cell.to_json("user"))
        text = render(cell.outputs, status=cell.status, limit=self.observation_chars, timeout=0)
        live.notes.append(
            f"[A person ran this in your REPL]\n```python\n{cell.code}\n```\nOutput:\n{text}"
        )

    # -- plain model calls ----------------------------------------------------------------
    async def llm(
        self, caller: LiveSession, prompts: list[str], model: str | None = None
    ) -> list[str]:
        """`llm()` / `llm.batch()` from a REPL: one completion per prompt, billed to `caller`."""
        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            raise PrimeError("llm() takes a string prompt (llm.batch a list of strings)")
        if len(prompts) > self.max_llm_batch:
            raise PrimeError(
                f"llm.batch() got {len(prompts)} prompts; at most {self.max_llm_batch} at once "
                "(c.Host.max_llm_batch)"
            )
        model = self.admission.resolve_model(model, caller.record)
        await self.router.ready()
        self.router.validate(model)
        self.check_limits(caller)
        # A few calls at a time, each checked against the budget first, so a batch cannot
        # spend far past what remains.
        gate = asyncio.Semaphore(self.llm_batch_concurrency)

        async def one(prompt: str) -> str:
            async with gate:
                self.check_limits(caller)
                completion = await self.router.text(model, prompt, **self.model_kwargs)
                self.account(caller, completion, purpose="llm", model=model)
            return str(completion.message.get("content") or "")

        return list(await asyncio.gather(*(one(p) for p in prompts)))
