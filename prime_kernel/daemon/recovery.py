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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traitlets import Bool, Float
from traitlets.config import LoggingConfigurable

from ..protocol.events import EventKind
from ..protocol.states import SessionState
from .policy import code_blocks
from .records import SessionRecord
from .session import LiveSession

if TYPE_CHECKING:
    from .daemon import Daemon
    from .launcher import KernelLauncher

RESTARTED = (
    "The daemon that ran this session stopped (a restart or a crash) and a new one took it up."
)
NOTEBOOK_ENDED = "its notebook's kernel ended with the server that ran it"


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

    def __init__(self, daemon: Daemon, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.daemon = daemon
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
        daemon = self.daemon
        lives = list(daemon.live.values())
        tasks = [lv.task for lv in lives if lv.task is not None and not lv.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with_kernels = [lv for lv in lives if lv.runner is not None and not lv.state.terminal]
        if with_kernels:
            saving = [
                daemon.snapshots.save(lv, "stop") for lv in with_kernels if lv.record.is_agent
            ]
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*saving, return_exceptions=True), self.stop_snapshot_timeout
                )
        await asyncio.gather(
            *(daemon.custody.release(lv) for lv in lives if lv.runner is not None),
            return_exceptions=True,
        )
        # Notebook kernels end with the server (it shuts them down after its extensions): their
        # sessions end now, while the store is open, as the next daemon would end them.
        for record in list(daemon.registry):
            if not record.is_agent and not record.terminal:
                if record.kernel_id is not None:
                    daemon.tokens.revoke(record.kernel_id)
                daemon.lifecycle.change(record, SessionState.DONE, reason=NOTEBOOK_ENDED)

    # -- starting -----------------------------------------------------------------------------
    async def reap_kernels(self, launcher: KernelLauncher) -> None:
        """Stop the kernels a previous daemon started and did not shut down: processes of this
        host by their pid, kernels on a gateway through `launcher` (a gateway that cannot be
        reached now keeps its records for the next start)."""
        store = self.daemon.store
        unreachable: set[str] = set()  # asked once per start, not once per kernel
        for row in await store.kernels():
            if row.get("gateway"):
                if row["gateway"] in unreachable:
                    continue
                stopped = await launcher.stop_leftover(row)
                if stopped is False:
                    unreachable.add(row["gateway"])
                    self.daemon.log.warning(
                        "could not reach %s to stop the kernels a previous daemon left there; "
                        "trying again at the next start",
                        row["gateway"],
                    )
                elif stopped:
                    self.daemon.log.warning(
                        "stopped kernel %s left on %s by a previous daemon",
                        row["kernel_id"],
                        row["gateway"],
                    )
                    store.forget_kernel(row["kernel_id"])
                else:
                    self.daemon.log.warning(
                        "kernel %s may still run on %s, which this server no longer uses "
                        "(c.Daemon.gateway_url); shut it down there",
                        row["kernel_id"],
                        row["gateway"],
                    )
                    store.forget_kernel(row["kernel_id"])
                continue
            pid, connection_file = row.get("pid"), row.get("connection_file")
            if pid and connection_file and _runs(pid, connection_file):
                self.daemon.log.warning(
                    "stopping kernel %s (pid %s) left running by a previous daemon",
                    row["kernel_id"],
                    pid,
                )
                await _stop_process(pid)
            if connection_file:
                with contextlib.suppress(OSError):
                    Path(connection_file).unlink()
            store.forget_kernel(row["kernel_id"])

    def adopt(self) -> None:
        """When the store is opened: take back what an earlier daemon left unfinished, so that
        records say the truth at once (an IDLE session has no kernel any more: INACTIVE)."""
        daemon = self.daemon
        for record in list(daemon.registry):
            if record.terminal or record.id in daemon.live:
                continue
            if not record.is_agent:
                daemon.lifecycle.change(record, SessionState.DONE, reason=NOTEBOOK_ENDED)
                continue
            live = daemon.new_live(record)
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
                daemon.lifecycle.change(
                    record, SessionState.INACTIVE, reason="its daemon stopped; a message wakes it"
                )
            elif state in (SessionState.ADMITTED, SessionState.RUNNING):
                self._to_run.append(live)

    def resume(self) -> None:
        """Once the daemon can run sessions: queue again what was queued or running (or, with
        `auto_resume` off, leave it INACTIVE until it is woken)."""
        daemon = self.daemon
        for live in self._to_run:
            if live.state.terminal:
                continue  # cancelled while the daemon was starting
            if not self.auto_resume:
                daemon.lifecycle.change(
                    live.record,
                    SessionState.INACTIVE,
                    reason="its daemon stopped; a message (or `prime-agent resume`) wakes it",
                )
            else:
                if live.state == SessionState.ADMITTED:
                    daemon.emit(live, EventKind.RESUME, {"reason": "queued again after a restart"})
                daemon.runs.start(live)
        self._to_run.clear()
        resting, self._resting = self._resting, []
        if resting and self.auto_resume:
            daemon.spawn(self._wake_if_mail(resting), "wake-if-mail")

    async def _wake_if_mail(self, lives: list[LiveSession]) -> None:
        """Mail that came while no daemon ran (a schedule's missed tick, a message) wakes the
        sessions it is for."""
        for live in lives:
            if live.state == SessionState.INACTIVE and await self.daemon.mailbox.has_unread(live):
                self.daemon.runs.wake(live)

    async def prepare(self, live: LiveSession) -> None:
        """Before a run of a session taken over from an earlier daemon: its conversation back
        from the store and, if it was running, a note of what was in flight."""
        if live.id not in self._unloaded:
            return
        self._unloaded.discard(live.id)
        daemon = self.daemon
        messages = await daemon.store.conversation(live.id)
        live.conversation.load(messages)
        last = await daemon.store.last_event(live.id, EventKind.CELL.value)
        if last is not None:
            live.repl_names = list(last["data"].get("names") or [])
        reason = self._interrupted.pop(live.id, None)
        # A turn cut short by an earlier daemon still lacks the outcome of its code, also in a
        # session that waited INACTIVE since (auto_resume off) instead of running at once.
        in_flight = self._close_dangling(live, reason or RESTARTED)
        if reason is None and in_flight is None:
            return
        reason = reason or RESTARTED
        daemon.emit(
            live,
            EventKind.RESUME,
            {"reason": reason, "in_flight": in_flight, "snapshot": None},
        )
        if in_flight is None:
            live.notes.append(f"[{reason} Your session continues from your last turn.]")

    def kernel_lost(self, live: LiveSession, error: str) -> None:
        """A running session lost its kernel and cannot have another now (see
        Daemon._kernels_unavailable): its next run starts as one a restart took back."""
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
