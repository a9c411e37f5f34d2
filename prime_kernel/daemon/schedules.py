"""Schedules and heartbeats: messages delivered to a session on a timer or a cron.

`every` repeats an interval, `at` fires once, `cron` follows a 5-field expression (daemon/cron.py)
in the server's local time. A tick delivers the schedule's message to its target as a message
from "schedule": an IDLE or INACTIVE agent wakes for a new turn, a RUNNING one sees it at its next
turn, a notebook gets it from `recv()`.

Owners. A schedule made in a REPL (`schedule.every(...)`) belongs to the calling session and may
target it or a session within its reach (as `send()`); it ends when its owner ends. A person's
schedule (REST, `prime-agent schedule add`) may target any session and is never ended by the
daemon: while its target cannot take a message (it ended, its budget is spent, its mailbox is
full) ticks are skipped and counted, until the person removes it. A session some schedule still
ticks to stays IDLE after it answers instead of ending DONE: it is waiting for its heartbeat.

Exactly once, across restarts. A tick is claimed in the store before it is delivered: the
schedule's row is updated (its next time, its count, and `pending`: the id and text of the
message this tick delivers), then the message is stored under that id. The store applies writes
in order, so after a crash either neither is there (the tick is still due: it fires on start),
or both (done), or only the claim — and then the start delivers `pending` under the same id.
No tick is lost and none is delivered twice. Ticks that fell due while the server was down (or
the loop was late) are coalesced into one, whose message says how many were missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from traitlets import Float, Int
from traitlets.config import LoggingConfigurable

from ..protocol.errors import (
    BudgetExceeded,
    Forbidden,
    InvalidRequest,
    LimitExceeded,
    MailboxFull,
    NotFound,
    PrimeError,
)
from ..protocol.events import EventKind
from ..util.files import new_id
from ..util.format import fmt_interval
from . import budget as budget_rules
from . import cron as cron_mod
from . import timespec
from .mailbox import Mailbox
from .records import SessionRecord
from .session import LiveSession
from .shared import Shared

log = logging.getLogger(__name__)

SENDER = "schedule"
USER = "user"
KINDS = ("every", "at", "cron")
# Missed ticks counted one by one up to this many (a cron every minute, a year down).
MAX_COUNTED = 10_000

Sink = Callable[[str, dict[str, Any]], "dict[str, Any] | None"]


@dataclass(eq=False)
class Schedule:
    id: str
    owner: str  # a session id, or "user"
    target_id: str
    kind: str
    spec: str
    message: str
    created: float
    next_ts: float | None
    last_ts: float | None = None
    ticks: int = 0
    missed: int = 0
    skipped: int = 0
    # The tick claimed last: {"message_id", "text", "missed"}; delivered once the mailbox holds
    # a message with that id.
    pending: dict[str, Any] | None = None
    state: str = "active"
    reason: str | None = None
    sink: Sink | None = field(default=None, repr=False)

    @property
    def active(self) -> bool:
        return self.state == "active"

    def update(self, **fields: Any) -> None:
        """Change fields: written to the store, then here (as session records do)."""
        if self.sink is not None:
            written = self.sink(self.id, fields)
            if written is not None:  # as the store wrote it (scrubbed)
                fields = written
        for key, value in fields.items():
            setattr(self, key, value)

    def row(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "sink"}

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "owner": self.owner,
            "target_id": self.target_id,
            "kind": self.kind,
            "spec": self.spec,
            "message": self.message,
            "created": self.created,
            "next": self.next_ts,
            "last": self.last_ts,
            "ticks": self.ticks,
            "missed": self.missed,
            "skipped": self.skipped,
            "state": self.state,
            "reason": self.reason,
        }

    def after(self, ts: float) -> float | None:
        """When it is due next after `ts` (None: never again)."""
        if self.kind == "every":
            interval = float(self.spec)
            base = self.next_ts if self.next_ts is not None else ts
            if base > ts:
                return base
            return base + (math.floor((ts - base) / interval) + 1) * interval
        if self.kind == "cron":
            return cron_mod.Cron.parse(self.spec).next_after(ts)
        return None

    def due_count(self, now: float) -> int:
        """How many ticks fell due up to `now` (at least 1 when it is due)."""
        if self.next_ts is None or self.next_ts > now:
            return 0
        if self.kind == "every":
            return int((now - self.next_ts) // float(self.spec)) + 1
        if self.kind == "cron":
            count, ts, cron = 1, self.next_ts, cron_mod.Cron.parse(self.spec)
            while count < MAX_COUNTED:
                nxt = cron.next_after(ts)
                if nxt is None or nxt > now:
                    break
                count, ts = count + 1, nxt
            return count
        return 1

    def describe(self) -> str:
        # Only an `every`'s spec is a number (a cron's described as one failed the tick that
        # coalesced missed ticks, which then stayed due).
        if self.kind == "every":
            return f"every {fmt_interval(float(self.spec))}"
        return f"at {self.spec}" if self.kind == "at" else self.spec


def listing(
    schedules: Iterable[Schedule], *, session_id: str | None = None, state: str | None = None
) -> list[dict[str, Any]]:
    """Schedules (newest first): owned by or ticking to `session_id`, in `state`."""
    out = [
        s
        for s in schedules
        if (session_id is None or session_id in (s.owner, s.target_id))
        and (state is None or s.state == state)
    ]
    out.sort(key=lambda s: s.created, reverse=True)
    return [s.to_json() for s in out]


class Schedules(LoggingConfigurable):
    """Configure as `c.Schedules.<trait>`."""

    min_interval = Float(
        1.0, min=0.001, config=True, help="Shortest interval of an `every` schedule (seconds)."
    )
    max_per_owner = Int(
        100, config=True, help="Active schedules one session (or all people together) may own."
    )

    def __init__(
        self,
        shared: Shared,
        *,
        mailbox: Mailbox,
        released: Callable[[str], None],
        **kwargs: Any,
    ) -> None:
        super().__init__(parent=shared.parent, **kwargs)
        self.store = shared.store
        self.registry = shared.registry
        self.mailbox = mailbox
        self.events = shared.events
        self.accounting = shared.accounting
        self.spawn = shared.spawn
        # Told a session's id when the last schedule ticking to it ended (it may end too).
        self.released = released
        self._items: dict[str, Schedule] = {}
        # Claimed ticks whose message a previous daemon may not have stored (see start()).
        self._undelivered: set[str] = set()
        # Why each schedule's last tick was skipped (an error code), while ticks are skipped.
        self._skipping: dict[str, str] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None

    # -- loading and running --------------------------------------------------------------------
    def load(self) -> None:
        for row in self.store.load_schedules():
            delivered = bool(row.pop("delivered", 0))
            s = Schedule(**row, sink=self.store.update_schedule)
            self._items[s.id] = s
            if s.pending and not delivered:
                self._undelivered.add(s.id)

    def start(self) -> None:
        """Deliver the ticks a previous daemon claimed but did not deliver, then tick."""
        for sid in sorted(self._undelivered):
            s = self._items[sid]
            if s.pending is not None:
                self._redeliver(s, s.pending)
        self._undelivered.clear()
        self._task = self.spawn(self._run(), "schedules")

    def _redeliver(self, s: Schedule, pending: dict[str, Any]) -> None:
        record = self.registry.find(s.target_id)
        try:
            if record is None:
                raise NotFound(f"no session {s.target_id}")
            target = self.mailbox.open_target(record)
        except PrimeError as e:
            s.update(ticks=s.ticks - 1, skipped=s.skipped + 1, reason=f"tick skipped: {e.message}")
            return
        self.mailbox.deliver(
            SENDER,
            target,
            pending["text"],
            message_id=pending["message_id"],
            extra=_extra(s.id, int(pending.get("missed") or 0)),
        )

    async def _run(self) -> None:
        while True:
            self._changed.clear()
            now = time.time()
            for s in sorted(self._due(now), key=lambda s: s.next_ts or 0.0):
                try:
                    await self._tick(s, now)
                except Exception:
                    log.exception("schedule %s: a tick failed", s.id)
            upcoming = [s.next_ts for s in self._items.values() if s.active and s.next_ts]
            wait = max(0.0, min(upcoming) - time.time()) if upcoming else None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), wait)

    def _due(self, now: float) -> list[Schedule]:
        return [
            s
            for s in self._items.values()
            if s.active and s.next_ts is not None and s.next_ts <= now
        ]

    async def _tick(self, s: Schedule, now: float) -> None:
        missed = s.due_count(now) - 1
        nxt = s.after(now)
        ending = {} if nxt is not None else {"state": "done", "reason": "its last tick is past"}
        try:
            target = await self._deliverable(s)
        except MailboxFull as e:  # passes once the target reads its mail
            self._skip(s, nxt, missed, e, ending, lasting=False)
            return
        except PrimeError as e:  # the target is gone or its budget is spent: it stays so
            self._skip(s, nxt, missed, e, ending, lasting=True)
            return
        if not s.active or s.next_ts is None or s.next_ts > time.time():
            return  # cancelled (or changed) while the checks awaited
        number = s.ticks + s.skipped + 1
        text = s.message
        if missed:
            text += (
                f"\n[{missed} earlier tick{'s' if missed != 1 else ''} of this schedule "
                f"({s.describe()}) fell due while the server was down or busy; this one "
                "stands for all of them.]"
            )
        self._skipping.pop(s.id, None)
        message_id = f"m{s.id}t{number}"
        pending = {"message_id": message_id, "text": text, "missed": missed}
        # The claim, then the delivery: the store applies them in this order.
        s.update(
            next_ts=nxt,
            last_ts=now,
            ticks=s.ticks + 1,
            missed=s.missed + missed,
            pending=pending,
            **ending,
        )
        self.mailbox.deliver(
            SENDER, target, text, message_id=message_id, extra=_extra(s.id, missed)
        )
        if ending:
            self._ended(s, "ended", "its last tick was delivered")

    async def _deliverable(self, s: Schedule) -> LiveSession:
        """The live target of a tick, if it can take one now (else the PrimeError why not)."""
        record = self.registry.find(s.target_id)
        if record is None:
            raise NotFound(f"no session {s.target_id}")
        target = self.mailbox.open_target(record)
        if record.is_agent:
            spent = budget_rules.first_exhausted(self.accounting, record.id)
            if spent is not None:
                raise BudgetExceeded(budget_rules.message(record.id, spent))
        await self.mailbox.check_room(target)
        return self.mailbox.open_target(record)  # still open after the wait

    def _skip(
        self,
        s: Schedule,
        nxt: float | None,
        missed: int,
        error: PrimeError,
        ending: dict[str, Any],
        *,
        lasting: bool,
    ) -> None:
        why, reason = error.message, f"tick skipped: {error.message}"
        # One event per cause, not one per tick (a spent budget's numbers change every tick).
        first = self._skipping.get(s.id) != error.code
        self._skipping[s.id] = error.code
        if lasting and s.owner != USER:
            # A session's schedule whose ticks can never be delivered has nothing left to do.
            s.update(skipped=s.skipped + 1 + missed, next_ts=None, state="ended", reason=why)
            self._ended(s, "ended", why)
            return
        s.update(skipped=s.skipped + 1 + missed, next_ts=nxt, reason=reason, **ending)
        if first:  # once per reason, not once per tick
            self._event(s, "skipped", reason=why)
        if ending:
            self._ended(s, "ended", "its last tick is past")

    # -- creating -------------------------------------------------------------------------------
    async def create(self, caller: LiveSession | None, body: dict[str, Any]) -> dict[str, Any]:
        """A new schedule from a request body; every check runs before anything is stored."""
        now = time.time()
        kinds = [k for k in KINDS if body.get(k) is not None]
        if len(kinds) != 1:
            raise InvalidRequest(
                "give exactly one of 'every' (an interval), 'at' (a time) or 'cron' "
                f"(an expression); got {', '.join(kinds) or 'none'}"
            )
        kind = kinds[0]
        spec, first = self._when(kind, body[kind], now)
        message = body.get("message")
        if not isinstance(message, str) or not message.strip():
            raise InvalidRequest("the message must be a non-empty string")
        size = len(message.encode("utf-8", "surrogatepass"))
        if size > self.mailbox.message_max_bytes:
            raise InvalidRequest(
                f"the message is {size} bytes; a tick carries at most "
                f"{self.mailbox.message_max_bytes} (c.Mailbox.message_max_bytes)"
            )
        target = self._target(caller, body)
        owner = caller.id if caller is not None else USER
        owned = sum(1 for s in self._items.values() if s.active and s.owner == owner)
        if owned >= self.max_per_owner:
            raise LimitExceeded(
                f"{'session ' + owner if caller else 'people'} already own {owned} active "
                f"schedules, the limit (c.Schedules.max_per_owner)",
                limit=self.max_per_owner,
            )
        s = Schedule(
            id=new_id("h"),
            owner=owner,
            target_id=target.id,
            kind=kind,
            spec=spec,
            message=message,
            created=now,
            next_ts=first,
        )
        for key, value in self.store.insert_schedule(s.row()).items():
            setattr(s, key, value)  # as the store wrote it (scrubbed)
        s.sink = self.store.update_schedule
        self._items[s.id] = s
        self._event(s, "created")
        self._changed.set()
        return s.to_json()

    def _when(self, kind: str, value: Any, now: float) -> tuple[str, float]:
        """The stored spec and the first tick of a schedule of `kind`."""
        if kind == "every":
            seconds = timespec.duration(value)
            if seconds < self.min_interval:
                raise InvalidRequest(
                    f"every({value!r:.40}): the interval must be at least {self.min_interval:g} "
                    "s (c.Schedules.min_interval)"
                )
            return repr(seconds), now + seconds
        if kind == "at":
            when = timespec.moment(value, now)
            if when <= now:
                raise InvalidRequest(
                    f"at({value!r:.60}): {timespec.describe(when)} is in the past (it is "
                    f"{timespec.describe(now)} now)"
                )
            if when - now > timespec.MAX_SECONDS:
                raise InvalidRequest(f"at({value!r:.60}) is more than ten years ahead")
            return timespec.iso(when), when
        cron = cron_mod.parse(value, now)
        first = cron.next_after(now)
        assert first is not None  # parse() checked it matches
        return cron.expression, first

    def _target(self, caller: LiveSession | None, body: dict[str, Any]) -> SessionRecord:
        if caller is None:
            record = self.registry.get(body.get("session_id", ""))
        elif body.get("to") is None:
            record = caller.record
        else:
            found = self.mailbox.resolve(caller, body["to"])
            if len(found) != 1:
                raise InvalidRequest(
                    f"a schedule ticks to one session; {body['to']!r} names {len(found)}"
                )
            record = found[0]
        self.mailbox.open_target(record)
        return record

    # -- reading and cancelling -----------------------------------------------------------------
    def get(self, schedule_id: str) -> Schedule:
        s = self._items.get(schedule_id) if isinstance(schedule_id, str) else None
        if s is None:
            raise NotFound(f"no schedule {schedule_id}")
        return s

    def listing(
        self, *, session_id: str | None = None, state: str | None = None
    ) -> list[dict[str, Any]]:
        return listing(self._items.values(), session_id=session_id, state=state)

    def visible(self, caller: LiveSession, schedule_id: str) -> Schedule:
        """A schedule the calling session owns (NotFound for one it cannot see at all)."""
        s = self.get(schedule_id)
        if caller.id not in (s.owner, s.target_id):
            raise NotFound(f"no schedule {schedule_id}")
        if s.owner != caller.id:
            owner = "a person" if s.owner == USER else f"session {s.owner}"
            raise Forbidden(f"schedule {schedule_id} belongs to {owner}; only its owner cancels it")
        return s

    def cancel(self, caller: LiveSession | None, schedule_id: str) -> dict[str, Any]:
        s = self.get(schedule_id) if caller is None else self.visible(caller, schedule_id)
        if s.active:
            who = "a person" if caller is None else f"session {caller.id}"
            s.update(state="cancelled", next_ts=None, reason=f"cancelled by {who}")
            self._ended(s, "cancelled", f"cancelled by {who}")
            self._changed.set()
        return s.to_json()

    # -- sessions ending ------------------------------------------------------------------------
    def session_ended(self, record: SessionRecord, live: LiveSession | None, _: Any) -> None:
        """A lifecycle effect (terminal states): a session's schedules end with it, and so do
        other sessions' schedules to it (their ticks could never be delivered)."""
        for s in list(self._items.values()):
            if not s.active or record.id not in (s.owner, s.target_id) or s.owner == USER:
                continue
            role = "owner" if s.owner == record.id else "target"
            why = f"its {role} {record.id} ended ({record.state.value})"
            s.update(state="ended", next_ts=None, reason=why)
            self._ended(s, "ended", why)

    def keeps_alive(self, session_id: str) -> bool:
        """Whether an active schedule still ticks to the session (it then waits IDLE)."""
        return any(s.active and s.target_id == session_id for s in self._items.values())

    def _ended(self, s: Schedule, event: str, why: str) -> None:
        self._event(s, event, reason=why)
        if not self.keeps_alive(s.target_id):
            self.released(s.target_id)

    def _event(self, s: Schedule, event: str, **extra: Any) -> None:
        data = {
            "event": event,
            "schedule_id": s.id,
            "kind": s.kind,
            "spec": s.spec,
            "message": s.message,
            "owner": s.owner,
            "target_id": s.target_id,
            "next": s.next_ts,
            **extra,
        }
        for sid in dict.fromkeys((s.target_id, s.owner)):
            record = self.registry.find(sid)
            if record is not None:
                self.events.emit(record, EventKind.SCHEDULE, data)


def _extra(schedule_id: str, missed: int) -> dict[str, Any]:
    return {"schedule_id": schedule_id, **({"missed": missed} if missed else {})}
