"""Mailboxes: messages between sessions, and from people, kept in the store until read.

Reach: an agent sends to its parent, its siblings and its own children; a person (REST, CLI)
to any session. The sender is always the caller the daemon resolved from the token (or
"user" for a person), never anything the message says about itself.

Delivery: a message is written to the store first. It is read either by `recv()` in the
recipient's REPL or, at the recipient's next turn, by being shown to its model — whichever
comes first. A message to an IDLE or INACTIVE agent wakes it for a new turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from .errors import Conflict, Forbidden, MailboxFull, NotFound, PrimeError, RateLimited, TooLarge
from .states import SessionState
from .store import new_id

if TYPE_CHECKING:
    from .daemon import Daemon, LiveSession

USER = "user"
GROUPS = {"parent": "parent", "children": "child", "siblings": "sibling"}
_TO_HELP = "a handle, a session id, a name, or one of 'parent', 'children', 'siblings'"


class Mailbox:
    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self._sent: dict[str, deque[float]] = {}  # sender -> times of its recent messages
        self._arrived: dict[str, asyncio.Event] = {}  # recipient -> set when mail arrives
        self._waiting: dict[str, int] = {}  # recipient -> recv() calls blocked now

    # -- reach ------------------------------------------------------------------------------
    def reachable(self, caller: LiveSession) -> list[tuple[str, dict[str, Any]]]:
        """(relation, record) for the caller's parent, siblings and children, oldest first."""
        daemon = self.daemon
        out: list[tuple[str, dict[str, Any]]] = []
        parent_id = caller.record.get("parent_id")
        if parent_id:
            out.append(("parent", daemon._record(parent_id)))
            for sib in reversed(daemon.store.list_sessions(parent_id=parent_id)):
                if sib["id"] != caller.id:
                    out.append(("sibling", daemon._record(sib["id"])))
        for child in reversed(daemon.store.list_sessions(parent_id=caller.id)):
            out.append(("child", daemon._record(child["id"])))
        return out

    def agents(self, caller: LiveSession) -> list[dict[str, Any]]:
        return [
            {
                "relation": relation,
                "id": r["id"],
                "name": r.get("name"),
                "depth": r.get("depth"),
                "state": r.get("state"),
                "kind": r.get("kind"),
            }
            for relation, r in self.reachable(caller)
        ]

    def resolve(self, caller: LiveSession | None, to: Any) -> list[dict[str, Any]]:
        """The records `to` names, as seen from `caller` (None: a person, who reaches all)."""
        if not isinstance(to, str) or not to.strip():
            raise PrimeError(f"'to' must be {_TO_HELP}; got {to!r}")
        if caller is None:
            return [self.daemon._record(to)]
        reach = self.reachable(caller)
        if to in GROUPS:
            targets = [r for rel, r in reach if rel == GROUPS[to]]
            if not targets:
                what = "no parent (it is a root session)" if to == "parent" else f"no {to}"
                raise NotFound(f"session {caller.id} has {what}")
            return targets
        by_id = [r for _, r in reach if r["id"] == to]
        if by_id:
            return by_id
        if to == caller.id or self.daemon.store.get_session(to) is not None:
            raise Forbidden(
                f"session {to} is out of reach of session {caller.id}: an agent can message "
                "only its parent, its siblings and its own children (see agents())"
            )
        by_name = [r for _, r in reach if r.get("name") == to]
        if len(by_name) > 1:
            ids = ", ".join(r["id"] for r in by_name)
            raise PrimeError(
                f"{len(by_name)} reachable sessions are called {to!r} ({ids}): use an id"
            )
        if not by_name:
            raise NotFound(
                f"no session {to!r}: it is neither a session id nor the name of a session "
                f"within reach of {caller.id} (see agents())"
            )
        return by_name

    # -- sending ----------------------------------------------------------------------------
    def send(self, caller: LiveSession | None, to: Any, message: Any) -> list[dict[str, Any]]:
        """Store a message for each target and wake whoever needs waking; returns receipts.

        Every check runs before anything is stored, so a refused send changes nothing.
        """
        daemon = self.daemon
        if not isinstance(message, str) or not message:
            raise PrimeError(f"the message must be a non-empty string, not {message!r:.80}")
        size = len(message.encode())
        if size > daemon.message_max_bytes:
            raise TooLarge(
                f"the message is {size} bytes; the limit is {daemon.message_max_bytes} "
                "(Daemon.message_max_bytes): send a file name or a summary instead",
                size=size,
                limit=daemon.message_max_bytes,
            )
        targets = self.resolve(caller, to)
        live_targets = [daemon.live[r["id"]] for r in targets if self._open(r)]
        if not live_targets:
            r = targets[0]
            raise Conflict(
                f"session {r['id']} has ended ({r['state']}); it receives no more messages"
                if SessionState(r["state"]).terminal
                else f"session {r['id']} is not running in this daemon"
            )
        sender_key = caller.id if caller is not None else USER
        self._check_rate(sender_key, len(live_targets))
        for target in live_targets:
            pending = len(daemon.store.pending_messages(target.id, daemon.max_pending_messages))
            if pending >= daemon.max_pending_messages:
                raise MailboxFull(
                    f"session {target.id} already has {pending} unread messages, the limit "
                    "(Daemon.max_pending_messages); wait until it reads them",
                    limit=daemon.max_pending_messages,
                )
        times = self._sent.setdefault(sender_key, deque())
        now = time.monotonic()
        times.extend([now] * len(live_targets))
        return [self._deliver(caller, target, message) for target in live_targets]

    def _open(self, record: dict[str, Any]) -> bool:
        live = self.daemon.live.get(record["id"])
        return live is not None and not live.state.terminal

    def _check_rate(self, sender: str, count: int) -> None:
        daemon = self.daemon
        window, limit = daemon.message_rate_window, daemon.message_rate_limit
        times = self._sent.setdefault(sender, deque())
        now = time.monotonic()
        while times and now - times[0] > window:
            times.popleft()
        if len(times) + count > limit:
            retry = window - (now - times[0]) if times else window
            who = "the user" if sender == USER else f"session {sender}"
            raise RateLimited(
                f"{who} sent {len(times)} messages in the last {window:g} s and the limit is "
                f"{limit} (Daemon.message_rate_limit); retry in {retry:.1f} s",
                retry_after=round(retry, 3),
            )

    def _deliver(
        self, caller: LiveSession | None, target: LiveSession, text: str
    ) -> dict[str, Any]:
        daemon = self.daemon
        message_id = new_id("m")
        sender = USER if caller is None else str(caller.record.get("name") or caller.id)
        daemon.store.put_message(
            {
                "id": message_id,
                "to_id": target.id,
                "from_id": caller.id if caller is not None else None,
                "sender": sender,
                "message": text,
                "ts": time.time(),
            }
        )
        if caller is not None:
            daemon.record(
                caller, "mail_out", {"to": target.id, "message": text, "message_id": message_id}
            )
        daemon.record(
            target,
            "mail_in",
            {
                "from": caller.id if caller is not None else USER,
                "sender": sender,
                "message": text,
                "message_id": message_id,
            },
        )
        waiting = self._waiting.get(target.id, 0) > 0
        if waiting:
            self._arrived[target.id].set()
        state = target.state
        if target.record["kind"] == "agent" and state in (SessionState.IDLE, SessionState.INACTIVE):
            daemon.passivation.wake(target)
        delivered = waiting or (
            target.record["kind"] == "agent" and state in (SessionState.RUNNING, SessionState.IDLE)
        )
        return {
            "to": target.id,
            "name": target.record.get("name"),
            "message_id": message_id,
            "status": "delivered" if delivered else "queued",
            "state": target.record["state"],
        }

    # -- reading ----------------------------------------------------------------------------
    def absorb(self, live: LiveSession) -> None:
        """Move unread mail into the news the model sees at its next turn (marking it read)."""
        pending = self.daemon.store.pending_messages(live.id)
        for m in pending:
            live.news.append(format_message(m))
        self.daemon.store.mark_read(m["id"] for m in pending)

    def has_unread(self, session_id: str) -> bool:
        return bool(self.daemon.store.pending_messages(session_id, 1))

    async def recv(self, caller: LiveSession, timeout: float) -> dict[str, Any] | None:
        """The caller's oldest unread message (marked read), waiting up to `timeout` s."""
        daemon = self.daemon
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        event = self._arrived.setdefault(caller.id, asyncio.Event())
        suspended = False
        self._waiting[caller.id] = self._waiting.get(caller.id, 0) + 1
        try:
            while True:
                event.clear()
                pending = daemon.store.pending_messages(caller.id, 1)
                if pending:
                    daemon.store.mark_read([pending[0]["id"]])
                    return public_message(pending[0])
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return None
                if not suspended:
                    # Waiting for mail is like waiting for a child: give the slot to others.
                    daemon.scheduler.suspend(caller.id)
                    suspended = True
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
        finally:
            self._waiting[caller.id] -= 1
            if not self._waiting[caller.id]:
                del self._waiting[caller.id]
                self._arrived.pop(caller.id, None)
            if suspended:
                daemon.scheduler.resume(caller.id)


def public_message(m: dict[str, Any]) -> dict[str, Any]:
    """A stored message as `recv()` returns it."""
    return {
        "id": m["id"],
        "from": m["sender"],
        "from_id": m["from_id"],
        "message": m["message"],
        "ts": m["ts"],
    }


def format_message(m: dict[str, Any]) -> str:
    """A stored message as the model sees it."""
    if m["from_id"] is None:
        return f"[message from {USER}]: {m['message']}"
    return f"[message from {m['sender']} ({m['from_id']})]: {m['message']}"
