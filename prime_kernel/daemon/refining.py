"""Refinement from the daemon's side: the evidence (what recent sessions did, from the store),
the model call (validated, and accounted to the session that asked), the `/refine` command, and
the automatic triggers (`c.Refiner.auto_refine_every`, `auto_refine_after_failure`).

The refinement itself — the prompt, the reply's schema, the safety rules, review — is
`prime_kernel.harness.refine` (and `.reply`, `.proposals`), which know nothing of the daemon.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from traitlets import Bool, Float, Int, Unicode
from traitlets.config import LoggingConfigurable

from ..harness import Harness
from ..harness import refine as rules
from ..models.profiles import profile_for
from ..models.router import ModelRouter
from ..protocol.errors import PrimeError
from ..protocol.events import EventKind
from ..protocol.states import SessionState
from ..util.format import clip
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared


class Refiner(LoggingConfigurable):
    """Refines the harness from recent sessions: asked for, or automatically. Configure as
    `c.Refiner.<trait>`."""

    refine_model = Unicode(
        "", config=True, help="Model for refinement (default: the daemon's default model)."
    )
    evidence_sessions = Int(8, config=True, help="Recent sessions a refinement reads as evidence.")
    refine_timeout = Float(
        120.0,
        config=True,
        help="Seconds a refinement's model call may take; then it is stopped and the "
        "refinement fails, changing nothing (0: c.ModelRouter.model_timeout only).",
    )
    refine_reply_tokens = Int(1200, config=True, help="Most tokens a refinement's reply may have.")
    refine_prompt_tokens = Int(
        4000,
        config=True,
        help="Most tokens of a refinement's prompt (also bounded by the model's window): the "
        "evidence of the sessions furthest down the list is left out first. On a CPU every "
        "prompt token is read before the reply starts.",
    )
    auto_refine_every = Int(
        0, config=True, help="Refine automatically after this many model turns (0 = never)."
    )
    auto_refine_after_failure = Bool(
        False, config=True, help="Refine automatically after a session fails."
    )
    refine_cooldown = Float(600.0, config=True, help="Seconds between two automatic refinements.")

    def __init__(
        self,
        shared: Shared,
        *,
        harness: Harness,
        router: ModelRouter,
        resolve_model: Callable[[str | None], str],
        model_kwargs: Callable[[], dict[str, Any]],
        max_turns: Callable[[], int],
        **kwargs: Any,
    ) -> None:
        """`resolve_model(None)`: the daemon's default model; `model_kwargs()`: the extra
        arguments of every model call; `max_turns()`: the limit no spec may be raised above."""
        super().__init__(parent=shared.parent, **kwargs)
        self.registry = shared.registry
        self.store = shared.store
        self.events = shared.events
        self.harness = harness
        self.router = router
        self.accounting = shared.accounting
        self.resolve_model = resolve_model
        self.model_kwargs = model_kwargs
        self.max_turns = max_turns
        self.spawn = shared.spawn
        self._turns = 0
        self._last_auto = 0.0
        self._auto: asyncio.Task[Any] | None = None
        # The refinements under way: how long each has run and how much reply it has.
        self.running: list[dict[str, Any]] = []

    def model(self) -> str:
        """The model a refinement asks: `refine_model`, else the daemon's default."""
        return self.resolve_model(self.refine_model or None)

    async def evidence(
        self, session_id: str | None = None, limit: int = 8, session_ids: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """What the recent sessions (or one session and its subtree, or the sessions named)
        did, failed at and cost."""
        registry = self.registry
        if session_ids:
            records = [registry.get(i) for i in session_ids][:limit]
        elif session_id:
            records = [registry.get(session_id), *registry.descendants(session_id)][:limit]
        else:
            records = [r for r in registry.select() if r.is_agent][:limit]
        out = []
        for rec in records:
            events = await self.store.events(rec.id, kinds=["assistant", "cell", "error"])
            out.append(_evidence(rec, events))
        return out

    async def refine(
        self,
        *,
        instructions: str | None = None,
        author: str = "user",
        trigger: str = "manual",
        session_id: str | None = None,
        session_ids: list[str] | None = None,
        caller: LiveSession | None = None,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """One refinement: its record (the model call counts against `caller`, if any).

        The reply is streamed: `running` (and `on_progress`, as it grows) shows how far it got.
        """
        model = self.model()
        router = self.router
        progress: dict[str, Any] = {
            "model": model,
            "trigger": trigger,
            "started": time.time(),
            "seconds": 0.0,
            "chars": 0,
            "phase": "reading",  # the prompt; "writing" once the reply starts
        }

        def on_text(piece: str) -> None:
            progress.update(
                chars=progress["chars"] + len(piece),
                seconds=round(time.time() - progress["started"], 1),
                phase="writing",
            )
            if on_progress is not None:
                on_progress(progress)

        async def complete(
            model: str,
            messages: list[dict[str, Any]],
            response_format: dict[str, Any] | None,
            max_tokens: int,
        ) -> tuple[str, dict[str, Any]]:
            router.validate(model)
            kwargs: dict[str, Any] = {**self.model_kwargs(), "max_tokens": max_tokens}
            if response_format is not None:
                kwargs["response_format"] = response_format
            completion = await router.stream(model, messages, on_text, **kwargs)
            if caller is not None:
                self.accounting.add_completion(caller.record, completion)
            return str(completion.message.get("content") or ""), {
                **completion.usage,
                "cost": completion.cost,
            }

        evidence = await self.evidence(session_id, self.evidence_sessions, session_ids)
        window = router.context_window(model)

        def fits(messages: list[dict[str, Any]]) -> bool:
            # litellm's count is an estimate where it lacks the model's tokenizer (the embedded
            # models' llama.cpp counted 17% more on code): a quarter more, to be safe.
            tokens = router.count_tokens(model, messages) * 1.25
            if window is not None and tokens + self.refine_reply_tokens > window:
                return False
            return tokens <= self.refine_prompt_tokens

        self.running.append(progress)
        try:
            return await rules.refine(
                self.harness,
                complete,
                evidence=evidence,
                model=model,
                max_turns=self.max_turns(),
                reply_tokens=self.refine_reply_tokens,
                timeout=self.refine_timeout,
                constrained=router.supports_response_schema(model),
                brief=profile_for(model).brief_refinement,
                fits=fits,
                instructions=instructions,
                author=author,
                trigger=trigger,
            )
        finally:
            self.running.remove(progress)

    def progress(self) -> list[dict[str, Any]]:
        """The refinements under way, each with the seconds it has run."""
        now = time.time()
        return [{**p, "seconds": round(now - p["started"], 1)} for p in self.running]

    async def command(self, session_id: str, message: Any) -> dict[str, Any] | None:
        """Run `/refine [instructions]` sent to a session, with it (and its children) as the
        evidence. A receipt shaped like a message's, or None when `message` is no command."""
        instructions = rules.refine_command(message)
        if instructions is None:
            return None
        target = self.registry.get(session_id)  # a clear NotFound for unknown sessions
        record = await self.refine(
            instructions=instructions or None,
            author="user",
            trigger=f"/refine sent to {session_id}",
            session_id=session_id,
        )
        self.events.emit(
            target,
            EventKind.REFINEMENT,
            {"refinement_id": record["id"], "status": record["status"]},
        )
        return {
            "status": f"refinement {record['status']}",
            "to": session_id,
            "state": target.state.value,
            "message_id": record["id"],
            "refinement": record,
        }

    # -- automatic triggers (off by default) ----------------------------------------------------
    def turn_taken(self) -> None:
        every = self.auto_refine_every
        if every <= 0:
            return
        self._turns += 1
        if self._turns >= every:
            self._start(f"every {every} turns", None)

    def session_failed(self, record: SessionRecord, _: Any, __: SessionState) -> None:
        if self.auto_refine_after_failure and record.is_agent:
            self._start(f"session {record.id} failed", record.id)

    def _start(self, trigger: str, session_id: str | None) -> None:
        cooldown = self.refine_cooldown
        if self._auto is not None and not self._auto.done():
            return
        if self._last_auto and time.monotonic() - self._last_auto < cooldown:
            return
        self._last_auto = time.monotonic()
        self._turns = 0
        self._auto = self.spawn(
            self.refine(author="auto", trigger=trigger, session_id=session_id), "auto-refine"
        )
        self._auto.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            text = error.message if isinstance(error, PrimeError) else repr(error)
            self.log.error("automatic refinement failed: %s", text)


def _evidence(rec: SessionRecord, events: list[dict[str, Any]]) -> dict[str, Any]:
    turns = 0
    errors: list[dict[str, Any]] = []
    for ev in events:
        data = ev["data"]
        if ev["kind"] == "assistant":
            turns += 1
        elif ev["kind"] == "cell" and data.get("status") != "ok":
            text = next(
                (
                    f"{o.get('ename')}: {o.get('evalue')}"
                    for o in data.get("outputs") or []
                    if o.get("output_type") == "error"
                ),
                data.get("status"),
            )
            errors.append(
                {
                    "turn": turns,
                    "code": clip(data.get("code", ""), 300),
                    "error": clip(str(text), 300),
                }
            )
        elif ev["kind"] == "error":
            errors.append({"turn": turns, "error": clip(str(data.get("message")), 300)})
    usage = rec.usage or {}
    return {
        "session_id": rec.id,
        "parent_id": rec.parent_id,
        "task": clip(rec.prompt, 600),
        "model": rec.model,
        "state": rec.state.value,
        "error": rec.error,
        "answer": clip(rec.answer_repr or "", 300) or None,
        "verified": (
            {k: rec.verified[k] for k in ("correct", "by", "note") if k in rec.verified}
            if rec.verified
            else None
        ),
        "turns": turns,
        "errors": errors[-8:],
        "usage": {k: usage.get(k) for k in ("total_tokens", "cost", "model_calls", "cells")},
    }
