"""Mailboxes: messages between sessions, and from people, kept in the store until read.

Reach: an agent sends to its parent, its siblings and its own children; a person (REST, CLI)
to any session. The sender is always the caller the daemon resolved from the token (or
"user" for a person), never anything the message says about itself.

Delivery: a message is written to the store first. It has two readers, each of which gets it
once and independently of the other: the session's model (shown at its next turn) and `recv()`
in its REPL — so code waiting in `recv()` is not starved by the model having seen a message,
and the reverse. A message to an IDLE or INACTIVE agent wakes it for a new turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from traitlets import Float, Int
from traitlets.config import LoggingConfigurable

from ..protocol.errors import (
    Conflict,
    Forbidden,
    MailboxFull,
    NotFound,
    PrimeError,
    RateLimited,
    TooLarge,
)
from ..protocol.events import EventKind
from ..protocol.states import SessionState
from ..util.files import new_id
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared
from .slots import Slots

USER = "user"
GROUPS = {"parent": "parent", "children": "child", "siblings": "sibling"}
_TO_HELP = "a handle, a session id, a name, or one of 'parent', 'children', 'siblings'"


class Mailbox(LoggingConfigurable):
    """Messages between sessions. Configure as `c.Mailbox.<trait>` (the limits are read at
    each send, so a change takes effect at once)."""

    message_max_bytes = Int(
        64_000, config=True, help="Largest message (UTF-8 bytes) a send() may carry."
    )
    max_pending_messages = Int(
        100, config=True, help="Unread messages a session's mailbox holds before sends fail."
    )
    message_rate_limit = Int(
        60, config=True, help="Messages a sender may send per message_rate_window seconds."
    )
    message_rate_window = Float(
        10.0, config=True, help="The window (seconds) message_rate_limit counts over."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        slots: Slots,
        wake: Callable[[LiveSession], None],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.registry = shared.registry
        self.store = shared.store
        self.events = shared.events
        self.slots = slots
        self.wake = wake
        self._sent: dict[str, deque[float]] = {}  # sender -> times of its recent messages
        self._arrived: dict[str, asyncio.Event] = {}  # recipient -> set when mail arrives
        self._waiting: dict[str, int] = {}  # recipient -> recv() calls blocked now
        # Sessions whose model has been shown all their mail (none delivered since): their next
        # turn need not ask the store.
        self._shown: set[str] = set()
        # Nor need the first turn of a session that was never sent anything: mail is stored
        # only by `_deliver`, so a model has mail to be shown only if it had some when this
        # daemon started (asked of the store once, at the first turn) or was sent some since.
        # A fan-out's children then start their turn without waiting on the store.
        self._mailed: set[str] = set()
        self._unshown_at_start: asyncio.Future[set[str]] | None = None

    # -- reach ------------------------------------------------------------------------------
    def reachable(self, caller: LiveSession) -> list[tuple[str, SessionRecord]]:
        """(relation, record) for the caller's parent, siblings and children, oldest first."""
        registry = self.registry
        out: list[tuple[str, SessionRecord]] = []
        parent_id = caller.record.parent_id
        if parent_id:
            out.append(("parent", registry.get(parent_id)))
            out += [("sibling", r) for r in registry.children(parent_id) if r.id != caller.id]
        out += [("child", r) for r in registry.children(caller.id)]
        return out

    def agents(self, caller: LiveSession) -> list[dict[str, Any]]:
        return [
            {
                "relation": relation,
                "id": r.id,
                "name": r.name,
                "depth": r.depth,
                "state": r.state.value,
                "kind": r.kind.value,
            }
            for relation, r in self.reachable(caller)
        ]

    def resolve(self, caller: LiveSession | None, to: Any) -> list[SessionRecord]:
        """The records `to` names, as seen from `caller` (None: a person, who reaches all)."""
        if not isinstance(to, str) or not to.strip():
            raise PrimeError(f"'to' must be {_TO_HELP}; got {to!r:.80}")
        if caller is None:
            return [self.registry.get(to)]
        reach = self.reachable(caller)
        if to in GROUPS:
            targets = [r for rel, r in reach if rel == GROUPS[to]]
            if not targets:
                what = f"no {to}"
                if to == "parent":
                    what += " (it is a root session)"
                    if not caller.record.is_agent:  # send("parent", ...) is an agent's call
                        what += "; a notebook messages the agents it started: send(h, ...)"
                raise NotFound(f"session {caller.id} has {what}")
            return targets
        by_id = [r for _, r in reach if r.id == to]
        if by_id:
            return by_id
        if to == caller.id or self.registry.find(to) is not None:
            raise Forbidden(
                f"session {to} is out of reach of session {caller.id}: an agent can message "
                "only its parent, its siblings and its own children (see agents())"
            )
        by_name = [r for _, r in reach if r.name == to]
        if len(by_name) > 1:
            ids = ", ".join(r.id for r in by_name)
            raise PrimeError(
                f"{len(by_name)} reachable sessions are called {to!r} ({ids}): use an id"
            )
        if not by_name:
            raise NotFound(
                f"no session {to!r:.80}: it is neither a session id nor the name of a session "
                f"within reach of {caller.id} (see agents())"
            )
        return by_name

    # -- sending ----------------------------------------------------------------------------
    async def send(
        self, caller: LiveSession | None, to: Any, message: Any, *, sender: str | None = None
    ) -> list[dict[str, Any]]:
        """Store a message for each target and wake whoever needs waking; returns receipts.

        Every check runs before anything is stored, so a refused send changes nothing.
        `sender` names a sender that is not a session (a person: "user"; a schedule).
        """
        if not isinstance(message, str) or not message:
            raise PrimeError(f"the message must be a non-empty string, not {message!r:.80}")
        try:
            size = len(message.encode())
        except UnicodeEncodeError:
            raise PrimeError(
                "the message is not valid Unicode (it holds a lone surrogate such as \\ud800)"
            ) from None
        if size > self.message_max_bytes:
            raise TooLarge(
                f"the message is {size} bytes; the limit is {self.message_max_bytes} "
                "(c.Mailbox.message_max_bytes): send a file name or a summary instead",
                size=size,
                limit=self.message_max_bytes,
            )
        targets = self.resolve(caller, to)
        live_targets = [self.registry.live[r.id] for r in targets if self._open(r)]
        if not live_targets:
            self.open_target(targets[0])  # raises, saying why
        sender_key = caller.id if caller is not None else (sender or USER)
        self._check_rate(sender_key, len(live_targets))
        for target in live_targets:
            await self.check_room(target)
        self._sent.setdefault(sender_key, deque()).extend([time.monotonic()] * len(live_targets))
        return [self._deliver(caller, sender or USER, target, message) for target in live_targets]

    def _open(self, record: SessionRecord) -> bool:
        return record.id in self.registry.live and not record.terminal

    def open_target(self, record: SessionRecord) -> LiveSession:
        """The live session `record` stands for, if it can receive messages (Conflict if not)."""
        if not self._open(record):
            raise Conflict(
                f"session {record.id} has ended ({record.state.value}); it receives no more "
                "messages"
                if record.terminal
                else f"session {record.id} is not running in this daemon"
            )
        return self.registry.live[record.id]

    async def check_room(self, target: LiveSession) -> None:
        """MailboxFull if `target` already holds as many unread messages as it may."""
        limit = self.max_pending_messages
        pending = len(await self.store.unread(target.id, _reader(target), limit))
        if pending >= limit:
            raise MailboxFull(
                f"session {target.id} already has {pending} unread messages, the limit "
                "(c.Mailbox.max_pending_messages); wait until it reads them",
                limit=limit,
            )

    def deliver(
        self,
        sender: str,
        target: LiveSession,
        text: str,
        *,
        message_id: str,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store and deliver a message from the daemon itself (`sender`: a schedule's tick),
        under the id its sender chose; the sender checked reach, room and size already."""
        return self._deliver(None, sender, target, text, message_id=message_id, extra=extra)

    def _check_rate(self, sender: str, count: int) -> None:
        window, limit = self.message_rate_window, self.message_rate_limit
        times = self._sent.setdefault(sender, deque())
        now = time.monotonic()
        while times and now - times[0] > window:
            times.popleft()
        if len(times) + count > limit:
            retry = window - (now - times[0]) if times else window
            who = f"session {sender}" if sender in self.registry.live else f"the {sender}"
            raise RateLimited(
                f"{who} sent {len(times)} messages in the last {window:g} s and the limit is "
                f"{limit} (c.Mailbox.message_rate_limit); retry in {retry:.1f} s",
                retry_after=round(retry, 3),
            )

    def _deliver(
        self,
        caller: LiveSession | None,
        sender: str,
        target: LiveSession,
        text: str,
        *,
        message_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        message_id = message_id or new_id("m")
        name = sender if caller is None else (caller.record.name or caller.id)
        self._shown.discard(target.id)
        self._mailed.add(target.id)
        self.store.put_message(
            {
                "id": message_id,
                "to_id": target.id,
                "from_id": caller.id if caller is not None else None,
                "sender": name,
                "message": text,
                "ts": time.time(),
            }
        )
        if caller is not None:
            self.events.emit(
                caller.record,
                EventKind.MAIL_OUT,
                {"to": target.id, "message": text, "message_id": message_id},
            )
        self.events.emit(
            target.record,
            EventKind.MAIL_IN,
            {
                "from": caller.id if caller is not None else sender,
                "sender": name,
                "message": text,
                "message_id": message_id,
                **(extra or {}),
            },
        )
        waiting = self._waiting.get(target.id, 0) > 0
        if waiting:
            self._arrived[target.id].set()
        state = target.state
        agent = target.record.is_agent
        if agent and state in (SessionState.IDLE, SessionState.INACTIVE):
            self.wake(target)
        delivered = waiting or (agent and state in (SessionState.RUNNING, SessionState.IDLE))
        return {
            "to": target.id,
            "name": target.record.name,
            "message_id": message_id,
            "status": "delivered" if delivered else "queued",
            "state": target.state.value,
        }

    # -- reading ----------------------------------------------------------------------------
    async def for_model(self, live: LiveSession) -> list[str]:
        """Messages the session's model has not been shown yet (now marked shown)."""
        if live.id in self._shown or not await self._may_have_mail(live.id):
            return []
        # Before the read: mail delivered while it runs is then read at the next turn.
        self._shown.add(live.id)
        try:
            pending = await self.store.unread(live.id, "model")
        except BaseException:
            self._shown.discard(live.id)
            raise
        self.store.mark_read((m["id"] for m in pending), "model")
        return [format_message(m) for m in pending]

    async def _may_have_mail(self, session_id: str) -> bool:
        """Whether the session's model may have mail it was not shown: some was sent to it by
        this daemon, or it had some when this daemon started."""
        if session_id in self._mailed:
            return True
        loading = self._unshown_at_start
        if loading is None or (
            loading.done() and (loading.cancelled() or loading.exception() is not None)
        ):  # (asked again after a read that failed)
            # Mail sent while this is read is in `_mailed`: nothing falls between the two.
            loading = self._unshown_at_start = asyncio.ensure_future(
                self.store.unread_recipients("model")
            )
        # Shielded: one turn cancelled while it waits does not cancel the others' read.
        return session_id in await asyncio.shield(loading)

    async def has_unread(self, live: LiveSession) -> bool:
        return bool(await self.store.unread(live.id, _reader(live), 1))

    async def recv(self, caller: LiveSession, timeout: float) -> dict[str, Any] | None:
        """The caller's oldest message `recv()` has not returned yet, waiting up to `timeout` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        event = self._arrived.setdefault(caller.id, asyncio.Event())
        suspended = False
        self._waiting[caller.id] = self._waiting.get(caller.id, 0) + 1
        try:
            while True:
                event.clear()
                pending = await self.store.unread(caller.id, "recv", 1)
                if pending:
                    self.store.mark_read([pending[0]["id"]], "recv")
                    return public_message(pending[0])
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return None
                if not suspended:
                    # Waiting for mail is like waiting for a child: give the slot to others.
                    self.slots.suspend(caller.id)
                    suspended = True
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
        finally:
            self._waiting[caller.id] -= 1
            if not self._waiting[caller.id]:
                del self._waiting[caller.id]
                self._arrived.pop(caller.id, None)
            if suspended:
                self.slots.resume(caller.id)


def _reader(live: LiveSession) -> Any:
    """Whose reading empties a mailbox: an agent's model, or a notebook's `recv()`."""
    return "model" if live.record.is_agent else "recv"


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
    if m["from_id"] is None:  # a person ("user") or the daemon itself ("schedule")
        return f"[message from {m['sender'] or USER}]: {m['message']}"
    return f"[message from {m['sender']} ({m['from_id']})]: {m['message']}"
