"""Runs: a session's loop started, woken, waited for, cancelled, resumed, interrupted.

`Runs` owns the run of every agent session: `start` makes its task; the task waits for the
daemon to have started, for a concurrency slot (slots.py) and for a kernel (custody.py),
restores its REPL when it was passivated or taken over, runs the agent loop (loop.py, against
the `LoopHost`) and settles the session: DONE with an answer, IDLE when it waits for more (a
persistent session, or one a schedule ticks to), FAILED saying why, CANCELLED, or INACTIVE
(resumable) when no kernel can be had. `wake` runs an IDLE or INACTIVE session again (a
message, a resume); `wait`, `cancel` and `interrupt` are what people and parent sessions do
to a run.

Configure as `c.Runs.<trait>` (the old `c.Daemon.loop_class` works one more release).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from traitlets import Type
from traitlets.config import LoggingConfigurable

from ..protocol.errors import Conflict, KernelsUnavailable, PrimeError
from ..protocol.states import SessionState
from .answers import Answers
from .autonomy import Autonomy
from .disk import DiskSpace
from .kernel_side import KernelSide
from .listing import Listing
from .loop import AgentLoop, LoopHost, TurnLimitReached
from .records import SessionRecord
from .recovery import Resumption
from .replay import Replays
from .session import LiveSession
from .shared import Shared
from .slots import Slots


class Runs(LoggingConfigurable):
    """Runs agent sessions' loops. Configure as `c.Runs.<trait>`."""

    loop_class = Type(AgentLoop, config=True, help="The agent loop implementation.")

    def __init__(
        self,
        shared: Shared,
        *,
        host: LoopHost,
        slots: Slots,
        kernels: KernelSide,
        replays: Replays,
        autonomy: Autonomy,
        disk: DiskSpace,
        listing: Listing,
        waits: Callable[[str], bool],
        has_unread: Callable[[LiveSession], Coroutine[Any, Any, bool]],
        answers: Answers,
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.host = host
        self.registry = shared.registry
        self.lifecycle = shared.lifecycle
        self.slots = slots
        self.custody = kernels.custody
        self.snapshots = kernels.snapshots
        self.passivation = kernels.passivation
        self.recovery = kernels.recovery
        self.replays = replays
        self.autonomy = autonomy
        self.disk = disk
        self.listing = listing
        # Whether a schedule still ticks to the session (it waits IDLE for that).
        self.waits = waits
        self.has_unread = has_unread
        self.answers = answers
        # Set once the daemon's start() made the kernel pool: the server takes requests
        # before that (start runs after it listens and imports litellm), so a session created
        # early waits for it here.
        self.started = asyncio.Event()
        self.spawn = shared.spawn

    # -- a run ----------------------------------------------------------------------------
    def start(self, live: LiveSession) -> None:
        """Run the session's loop (in a task of its own)."""
        live.task = asyncio.get_running_loop().create_task(
            self._run(live), name=f"session-{live.id}"
        )

    async def _run(self, live: LiveSession) -> None:
        acquired = False
        try:
            await self.started.wait()
            recorded = self.replays.answered(live.record)
            if recorded is not None:  # a replayed child that runs nothing: it ends as recorded
                self._end_as(live, recorded)
                return
            async with self.passivation.lock(live.id):
                pass  # a passivation in progress finishes first
            await self.slots.acquire(live.id)
            acquired = True
            self.disk.check("running a session")
            await self.recovery.prepare(live)
            if live.runner is None:  # a woken IDLE session still has its kernel
                if live.state == SessionState.INACTIVE and live.restore_reason is None:
                    live.restore_reason = (
                        "Your session was inactive: its kernel was shut down and a new one started."
                    )
                await self.custody.attach(live)
                if live.restore_reason is not None:
                    await self.snapshots.restore(live, live.restore_reason)
                    live.restore_reason = None
            self.lifecycle.change(live.record, SessionState.RUNNING)
            loop = self.loop_class(self.host, live)
            if live.record.options.get("autonomous"):
                await self.autonomy.run(live, loop)
            else:
                await loop.run(live.record.options.get("max_turns"))
            if self.waits_after_answer(live):
                self.lifecycle.change(live.record, SessionState.IDLE)
            elif self.answers.answered(live):
                self.lifecycle.change(live.record, SessionState.DONE)
            else:
                self.fail(live, "ended without an answer")
        except asyncio.CancelledError:
            if live.cancelling and not live.state.terminal:
                self.lifecycle.change(live.record, SessionState.CANCELLED, reason="cancelled")
            elif not live.cancelling:
                raise  # the daemon is stopping: the session stays resumable
        except TurnLimitReached as e:
            self.fail(live, str(e))
        except KernelsUnavailable as e:
            self._kernels_unavailable(live, e.message)
        except PrimeError as e:
            self.fail(live, e.message)
        except Exception as e:
            self.log.exception("session %s failed", live.id)
            self.fail(live, f"{type(e).__name__}: {e}")
        finally:
            if acquired:
                self.slots.release(live.id)

    def _end_as(self, live: LiveSession, recorded: SessionRecord) -> None:
        if recorded.state != SessionState.DONE:
            self.fail(live, recorded.error or f"ended {recorded.state.value}")
            return
        kind = "answer" if recorded.answer_blob else "reply"
        self.answers.record(live, recorded.answer_blob, recorded.answer_repr or "", kind)
        self.lifecycle.change(live.record, SessionState.DONE)

    def _kernels_unavailable(self, live: LiveSession, error: str) -> None:
        """No kernel can be had (a gateway down, or refusing us). A root that was at work
        waits INACTIVE, resumable once the gateway is back (its conversation at its last
        turn, its REPL from its latest snapshot); a child fails, so that its parent's rlm()
        is not left waiting on it; a session that never started fails."""
        if live.runner is not None:
            self.spawn(self.custody.release(live), f"release-{live.id}")
        worked = live.state in (SessionState.RUNNING, SessionState.INACTIVE)
        if live.state.terminal or not worked or live.record.parent_id is not None:
            self.fail(live, error)
            return
        self.recovery.kernel_lost(live, error)
        live.restore_reason = f"{error}; a new kernel was started."
        if live.state != SessionState.INACTIVE:
            self.lifecycle.change(
                live.record,
                SessionState.INACTIVE,
                reason=f"{error}; `prime-agent resume {live.id}` (or a message) runs it again",
            )

    def fail(self, live: LiveSession, error: str) -> None:
        if not live.state.terminal:
            self.lifecycle.change(live.record, SessionState.FAILED, error=error)

    def waits_after_answer(self, live: LiveSession) -> bool:
        """Whether the session waits IDLE for more once its run ends (a persistent one, or one
        a schedule still ticks to: its heartbeat) instead of ending."""
        return bool(live.record.options.get("persistent")) or self.waits(live.id)

    # -- another run ----------------------------------------------------------------------
    def wake(self, live: LiveSession) -> None:
        """Start another run of an IDLE or INACTIVE agent's loop (a message arrived)."""
        if not live.record.is_agent or live.state not in (
            SessionState.IDLE,
            SessionState.INACTIVE,
        ):
            return
        if live.task is not None and not live.task.done():
            return  # already woken; the turn to come reads all unread mail
        # The answer a persistent session gave belongs to the request it answered; whoever
        # waits on it now waits for the answer to this turn.
        self.answers.forget(live)
        self.start(live)

    def take_back(self, plan: Resumption) -> None:
        """After a restart (Recovery.resume): run again what was queued or running; wake what
        rested if mail came for it while no daemon ran (a schedule's missed tick, a message)."""
        for live in plan.run:
            self.start(live)
        if plan.resting:
            self.spawn(self._wake_if_mail(plan.resting), "wake-if-mail")

    async def _wake_if_mail(self, lives: list[LiveSession]) -> None:
        for live in lives:
            if live.state == SessionState.INACTIVE and await self.has_unread(live):
                self.wake(live)

    def released(self, session_id: str) -> None:
        """No schedule ticks to the session any more: one that waited IDLE (or INACTIVE) only
        for its heartbeats ends now, as it would have when it answered."""
        live = self.registry.live.get(session_id)
        if (
            live is None
            or not live.record.is_agent
            or live.record.options.get("persistent")
            or live.state not in (SessionState.IDLE, SessionState.INACTIVE)
            or (live.task is not None and not live.task.done())
        ):
            return
        if live.record.answer_repr is not None or live.record.answer_blob:
            self.lifecycle.change(live.record, SessionState.DONE, reason="its schedules ended")
        else:
            self.fail(live, "ended without an answer")

    def wake_if_mail(self, record: SessionRecord, live: LiveSession | None, _: Any) -> None:
        """(An effect of IDLE.) Mail that came in after the last turn took its news: wake
        again, once the run that is now settling has finished."""
        if live is None or not record.is_agent:
            return

        async def check() -> None:
            await asyncio.sleep(0)
            if live.state == SessionState.IDLE and await self.has_unread(live):
                self.wake(live)

        self.spawn(check(), f"mail-{record.id}")

    # -- what people and parents do to a run ----------------------------------------------
    async def wait(
        self, session_id: str, timeout: float | None, *, caller: LiveSession | None = None
    ) -> dict[str, Any]:
        """Wait until the session settles (or `timeout`); a calling session gives its
        concurrency slot to others meanwhile."""
        self.registry.get(session_id)
        live = self.registry.live.get(session_id)
        if live is not None and not live.settled.is_set():
            if caller is not None:
                self.slots.suspend(caller.id)
            try:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(live.settled.wait(), timeout)
            finally:
                if caller is not None:
                    self.slots.resume(caller.id)
        return self.listing.session_json(session_id)

    async def cancel(self, session_id: str) -> dict[str, Any]:
        """Cancel a session and its whole subtree; a no-op (that says so) if it has ended."""
        record = self.registry.get(session_id)
        targets = [record, *self.registry.descendants(session_id)]
        lives = self.registry.live
        cancelled = []
        for rec in reversed(targets):  # children first, so none outlives its parent's cancel
            if rec.terminal:
                continue
            live = lives.get(rec.id)
            if not rec.is_agent:
                # A notebook session ends when its kernel does; cancelling it means its
                # children (cancelled above) and nothing more.
                continue
            cancelled.append(rec.id)
            if live is None:
                self.lifecycle.change(rec, SessionState.CANCELLED, reason="cancelled")
                continue
            live.cancelling = True
            if live.task and not live.task.done():
                live.task.cancel()
            else:
                self.lifecycle.change(rec, SessionState.CANCELLED, reason="cancelled")
        waits = [lives[s].task for s in cancelled if s in lives and lives[s].task]
        await asyncio.gather(*[t for t in waits if t], return_exceptions=True)
        return {
            "cancelled": cancelled,
            "already_ended": record.terminal and session_id not in cancelled,
            "state": record.state.value,
        }

    def resume(self, session_id: str) -> dict[str, Any]:
        """Run an INACTIVE agent session again (one a restart left waiting, see recovery.py)."""
        record = self.registry.get(session_id)
        live = self.registry.live.get(session_id)
        if not record.is_agent or record.state != SessionState.INACTIVE or live is None:
            raise Conflict(
                f"session {session_id} is {record.state.value}, not INACTIVE: nothing to resume"
            )
        self.wake(live)
        return self.listing.session_json(session_id)

    async def interrupt(self, session_id: str) -> None:
        """Interrupt what the session does: its model's reply as it streams (the agent keeps
        what was said and is told), else its running cell. Its loop goes on."""
        self.registry.get(session_id)
        live = self.registry.live.get(session_id)
        if live is not None and live.reply_task is not None and not live.reply_task.done():
            live.reply_interrupted = True
            live.reply_task.cancel()
            return
        if live is None or live.runner is None:
            raise PrimeError(f"session {session_id} has no running kernel to interrupt")
        await live.runner.interrupt()
