"""Sessions outlive the daemon: what a stop leaves behind, and how a new daemon picks it up.

A clean stop (`suspend_all`) stops every run where it is, snapshots the REPLs it can within
`c.Recovery.stop_snapshot_timeout`, and shuts the kernels down — leaving every agent's record as it
was, so nothing is marked failed (the notebooks' sessions end: their kernels go with the server).
A crash leaves the same records, minus the snapshots and with the notebooks' sessions open.
While no daemon runs, `unattended` says what each such record stands for.

On start, `reap_kernels` stops kernels a dead daemon left running (each kernel's pid and
connection file are in the store; for a kernel on a gateway, the gateway's URL: it is asked to
shut it down), and `resume` takes every unfinished session back:

- ADMITTED: queued again;
- RUNNING: resumes at its last recorded turn. Its conversation comes back from the store; the
  REPL from its latest snapshot; the model is told which cell was in flight and that it was
  **not** re-run (its outcome is uncertain), and which variables were lost;
- IDLE and INACTIVE: INACTIVE, reviving from the latest snapshot when a message wakes them —
  at once if one is already waiting (a message or a schedule's tick that arrived just before
  the stop, which would otherwise wait for the next);
- notebook sessions: their kernel ended with the old server, so they end (DONE, with the reason);
  their children go on, and what they answer stays retrievable.

With `c.Recovery.auto_resume` off (the CLI's `prime-agent run`), queued and running sessions wait
INACTIVE instead, until a message or `prime-agent resume` wakes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets import Bool, Float
from traitlets.config import LoggingConfigurable

from ..protocol.events import EventKind
from ..protocol.states import SessionState
from .policy import code_blocks
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared

if TYPE_CHECKING:  # (`prime-agent sessions` reads `unattended` and imports nothing heavy)
    from .launcher import KernelLauncher
    from .snapshots import Snapshots

RESTARTED = (
    "The daemon that ran this session stopped (a restart or a crash) and a new one took it up."
)
NOTEBOOK_ENDED = "its notebook's kernel ended with the server that ran it"


@dataclass
class Resumption:
    """What a restart takes back (Recovery.resume): sessions to run again, and sessions to
    wake if mail came for them while no daemon ran (a schedule's missed tick, a message)."""

    run: list[LiveSession] = field(default_factory=list)
    resting: list[LiveSession] = field(default_factory=list)


def unattended(record: SessionRecord) -> tuple[SessionState, str] | None:
    """What a session is while no daemon runs, if not what its record says: a stopped daemon
    (killed, or stopped cleanly: its records stay as they were) left it RUNNING, ADMITTED or
    IDLE, but nothing runs it. A notebook's session ended with its kernel; an agent's waits
    INACTIVE until a daemon takes it up (`adopt` below says the same when one starts)."""
    if record.terminal or record.state == SessionState.INACTIVE:
        return None
    if not record.is_agent:
        return SessionState.DONE, NOTEBOOK_ENDED
    return SessionState.INACTIVE, (
        f"unfinished: no server runs it since the one that did stopped; `prime-agent resume "
        f"{record.id}` (or a Jupyter server on this root) takes it up"
    )


class Recovery(LoggingConfigurable):
    """A clean stop and a restart: what ran is left resumable, and taken back after. Configure
    as `c.Recovery.<trait>`."""

    auto_resume = Bool(
        True,
        config=True,
        help="After a restart, run the sessions a previous daemon left unfinished: queued ones "
        "are queued again, running ones resume at their last turn. Off: they wait INACTIVE "
        "until a message (or `prime-agent resume`) wakes them.",
    )
    stop_snapshot_timeout = Float(
        10.0, config=True, help="Seconds a clean stop spends snapshotting live REPLs."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        snapshots: Snapshots,
        release: Callable[[LiveSession], Awaitable[None]],
        revoke: Callable[[str], None],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.registry = shared.registry
        self.store = shared.store
        self.lifecycle = shared.lifecycle
        self.events = shared.events
        self.snapshots = snapshots
        # Shuts a session's kernel down (KernelCustody.release); revokes a kernel's token.
        self.release = release
        self.revoke = revoke
        # Sessions whose conversation must be read back from the store before their next run.
        self._unloaded: set[str] = set()
        # Of those, the ones that were running: the model must be told what was in flight,
        # and why it stopped.
        self._interrupted: dict[str, str] = {}
        # Queued or running when the earlier daemon stopped: run again once this one can.
        self._to_run: list[LiveSession] = []
        # Idle or inactive then: woken if mail came for them meanwhile.
        self._resting: list[LiveSession] = []

    # -- stopping -----------------------------------------------------------------------------
    async def suspend_all(self) -> None:
        lives = list(self.registry.live.values())
        tasks = [lv.task for lv in lives if lv.task is not None and not lv.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with_kernels = [lv for lv in lives if lv.runner is not None and not lv.state.terminal]
        if with_kernels:
            saving = [self.snapshots.save(lv, "stop") for lv in with_kernels if lv.record.is_agent]
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*saving, return_exceptions=True), self.stop_snapshot_timeout
                )
        await asyncio.gather(
            *(self.release(lv) for lv in lives if lv.runner is not None),
            return_exceptions=True,
        )
        # Notebook kernels end with the server (it shuts them down after its extensions): their
        # sessions end now, while the store is open, as the next daemon would end them.
        for record in list(self.registry):
            if not record.is_agent and not record.terminal:
                if record.kernel_id is not None:
                    self.revoke(record.kernel_id)
                self.lifecycle.change(record, SessionState.DONE, reason=NOTEBOOK_ENDED)

    # -- starting -----------------------------------------------------------------------------
    async def reap_kernels(self, launcher: KernelLauncher) -> None:
        """Stop the kernels a previous daemon started and did not shut down: processes of this
        host by their pid, kernels on a gateway through `launcher` (a gateway that cannot be
        reached now keeps its records for the next start)."""
        store = self.store
        unreachable: set[str] = set()  # asked once per start, not once per kernel
        for row in await store.kernels():
            if row.get("gateway"):
                if row["gateway"] in unreachable:
                    continue
                stopped = await launcher.stop_leftover(row)
                if stopped is False:
                    unreachable.add(row["gateway"])
                    self.log.warning(
                        "could not reach %s to stop the kernels a previous daemon left there; "
                        "trying again at the next start",
                        row["gateway"],
                    )
                elif stopped:
                    self.log.warning(
                        "stopped kernel %s left on %s by a previous daemon",
                        row["kernel_id"],
                        row["gateway"],
                    )
                    store.forget_kernel(row["kernel_id"])
                else:
                    self.log.warning(
                        "kernel %s may still run on %s, which this server no longer uses "
                        "(c.KernelPlacement.gateway_url); shut it down there",
                        row["kernel_id"],
                        row["gateway"],
                    )
                    store.forget_kernel(row["kernel_id"])
                continue
            pid, connection_file = row.get("pid"), row.get("connection_file")
            # The files off the event loop: the server listens by now, and a busy disk took
            # 0.9 s to unlink one connection file.
            if pid and connection_file and await asyncio.to_thread(_runs, pid, connection_file):
                self.log.warning(
                    "stopping kernel %s (pid %s) left running by a previous daemon",
                    row["kernel_id"],
                    pid,
                )
                await _stop_process(pid)
            if connection_file:
                await asyncio.to_thread(_remove, connection_file)
            store.forget_kernel(row["kernel_id"])

    def adopt(self) -> None:
        """When the store is opened: take back what an earlier daemon left unfinished, so that
        records say the truth at once (an IDLE session has no kernel any more: INACTIVE)."""
        for record in list(self.registry):
            if record.terminal or record.id in self.registry.live:
                continue
            if not record.is_agent:
                self.lifecycle.change(record, SessionState.DONE, reason=NOTEBOOK_ENDED)
                continue
            live = self.registry.attach(record)
            self._unloaded.add(record.id)
            state = record.state
            if state == SessionState.RUNNING:
                self._interrupted[record.id] = RESTARTED
            if state in (SessionState.IDLE, SessionState.RUNNING, SessionState.INACTIVE):
                live.restore_reason = RESTARTED
            if record.kernel_id is not None:
                record.update(kernel_id=None)
            if state in (SessionState.IDLE, SessionState.INACTIVE):
                self._resting.append(live)
            if state == SessionState.IDLE:
                self.lifecycle.change(
                    record, SessionState.INACTIVE, reason="its daemon stopped; a message wakes it"
                )
            elif state in (SessionState.ADMITTED, SessionState.RUNNING):
                self._to_run.append(live)

    def resume(self) -> Resumption:
        """Once the daemon can run sessions: what to run again (what was queued or running)
        and what to wake if mail came for it meanwhile; with `auto_resume` off, neither: what
        was at work waits INACTIVE until it is woken."""
        plan = Resumption()
        for live in self._to_run:
            if live.state.terminal:
                continue  # cancelled while the daemon was starting
            if not self.auto_resume:
                self.lifecycle.change(
                    live.record,
                    SessionState.INACTIVE,
                    reason="its daemon stopped; a message (or `prime-agent resume`) wakes it",
                )
            else:
                if live.state == SessionState.ADMITTED:
                    self.events.emit(
                        live.record, EventKind.RESUME, {"reason": "queued again after a restart"}
                    )
                plan.run.append(live)
        self._to_run.clear()
        resting, self._resting = self._resting, []
        if self.auto_resume:
            plan.resting = resting
        return plan

    async def prepare(self, live: LiveSession) -> None:
        """Before a run of a session taken over from an earlier daemon: its conversation back
        from the store and, if it was running, a note of what was in flight."""
        if live.id not in self._unloaded:
            return
        self._unloaded.discard(live.id)
        messages = await self.store.conversation(live.id)
        live.conversation.load(messages)
        last = await self.store.last_event(live.id, EventKind.CELL.value)
        if last is not None:
            live.repl_names = list(last["data"].get("names") or [])
        reason = self._interrupted.pop(live.id, None)
        # A turn cut short by an earlier daemon still lacks the outcome of its code, also in a
        # session that waited INACTIVE since (auto_resume off) instead of running at once.
        in_flight = self._close_dangling(live, reason or RESTARTED)
        if reason is None and in_flight is None:
            return
        reason = reason or RESTARTED
        self.events.emit(
            live.record,
            EventKind.RESUME,
            {"reason": reason, "in_flight": in_flight, "snapshot": None},
        )
        if in_flight is None:
            live.notes.append(f"[{reason} Your session continues from your last turn.]")

    def kernel_lost(self, live: LiveSession, error: str) -> None:
        """A running session lost its kernel and cannot have another now (see
        Runs._kernels_unavailable): its next run starts as one a restart took back."""
        self._unloaded.add(live.id)
        self._interrupted[live.id] = f"The session's kernel was lost: {error}."

    def _close_dangling(self, live: LiveSession, reason: str) -> str | None:
        """Answer the tool calls (or fenced blocks) of the last turn that got no output — the
        cell that was in flight — with a note that it was not re-run; its code, if any."""
        conversation = live.conversation
        if not len(conversation) or conversation[-1].get("role") == "user":
            return None
        index = max(i for i, m in enumerate(conversation) if m.get("role") == "assistant")
        turn = conversation[index]
        note = (
            f"[{reason} This cell was running then and was NOT re-run, because its outcome "
            "is uncertain: check what it did (files, variables) before running it again.]"
        )
        answered = {m.get("tool_call_id") for m in list(conversation)[index + 1 :]}
        calls = [c for c in turn.get("tool_calls") or [] if c.get("id") not in answered]
        if calls:
            first = _code(calls[0])
            for call in calls:
                text = note if call is calls[0] else f"[{reason} Not run.]"
                conversation.append(
                    {"role": "tool", "tool_call_id": call.get("id"), "content": text}
                )
            return first
        blocks = code_blocks(str(turn.get("content") or ""))
        if not blocks or index != len(conversation) - 1:
            return None
        conversation.append({"role": "user", "content": "Output of your code:\n" + note})
        return blocks[0]


def _code(call: dict[str, Any]) -> str:
    raw = (call.get("function") or {}).get("arguments") or "{}"
    try:
        return str(json.loads(raw).get("code") or "")
    except (ValueError, AttributeError):
        return str(raw)


def _runs(pid: int, connection_file: str) -> bool:
    """Whether `pid` is still the kernel started with `connection_file` (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone (or no /proc to check against: leave a process of unknown kind)
        return False
    return connection_file.encode() in cmdline


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        Path(path).unlink()


async def _stop_process(pid: int, grace: float = 2.0) -> None:
    with contextlib.suppress(OSError):
        os.killpg(os.getpgid(pid), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        await asyncio.sleep(0.05)
    with contextlib.suppress(OSError):
        os.killpg(os.getpgid(pid), signal.SIGKILL)
