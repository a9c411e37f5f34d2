"""When a schedule is due (daemon/schedules.py): the grid an `every` keeps, the missed ticks a
late loop or a stopped server coalesces, an `at` that fires once, a cron's next time, the
listing's filter and order, and a tick standing for missed ones, with fakes for the store and
the mailbox. Delivery exactly once across restarts is tested end to end
(tests/longrun/test_schedules.py, test_restart.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

from prime_kernel.daemon.accounting import Accounting
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.schedules import Schedule, Schedules, listing
from prime_kernel.daemon.session import LiveSession
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import agent_record, shared

T0 = 1_800_000_000.0


def schedule(kind: str, spec: str, next_ts: float | None, **fields: Any) -> Schedule:
    return Schedule(
        id=fields.pop("id", "h1"),
        owner=fields.pop("owner", "user"),
        target_id=fields.pop("target_id", "s1"),
        kind=kind,
        spec=spec,
        message="beat",
        created=fields.pop("created", T0),
        next_ts=next_ts,
        **fields,
    )


def test_every_keeps_its_grid_and_counts_the_ticks_it_missed() -> None:
    s = schedule("every", "10", T0 + 10)
    assert s.due_count(T0 + 9.9) == 0 and s.after(T0 + 5) == T0 + 10  # not due yet
    assert s.due_count(T0 + 10) == 1 and s.after(T0 + 10) == T0 + 20
    # A loop 3 s late: one tick, the next still on the grid (not 10 s after the late one).
    assert s.due_count(T0 + 13) == 1 and s.after(T0 + 13) == T0 + 20
    # A server down for a minute: seven ticks fell due, one stands for them all.
    assert s.due_count(T0 + 75) == 7 and s.after(T0 + 75) == T0 + 80
    # A new schedule (no next time yet) starts from now.
    assert schedule("every", "10", None).after(T0) == T0 + 10
    assert s.describe() == "every 10s"


def test_at_fires_once() -> None:
    s = schedule("at", "2027-01-15T09:00", T0)
    assert s.due_count(T0 - 1) == 0
    assert s.due_count(T0 + 3600) == 1  # however late, once
    assert s.after(T0) is None  # never again
    assert s.describe() == "at 2027-01-15T09:00"


def test_a_cron_is_due_at_its_minutes_and_counts_those_missed() -> None:
    start = dt.datetime(2027, 1, 15, 9, 0).timestamp()  # local time, as cron reads it
    s = schedule("cron", "*/15 * * * *", start)
    assert s.after(start) == start + 15 * 60
    assert s.due_count(start - 1) == 0
    assert s.due_count(start) == 1
    assert s.due_count(start + 46 * 60) == 4  # 9:00, 9:15, 9:30, 9:45
    assert s.describe() == "*/15 * * * *"


def test_listing_filters_by_session_and_state_newest_first() -> None:
    mine = schedule("every", "60", T0, id="a", owner="s1", target_id="s1", created=T0)
    to_me = schedule("every", "60", T0, id="b", owner="user", target_id="s1", created=T0 + 1)
    other = schedule("every", "60", T0, id="c", owner="s2", target_id="s2", created=T0 + 2)
    done = schedule("at", "x", None, id="d", target_id="s1", created=T0 + 3, state="done")
    every = [mine, to_me, other, done]
    assert [s["id"] for s in listing(every)] == ["d", "c", "b", "a"]
    assert [s["id"] for s in listing(every, session_id="s1")] == ["d", "b", "a"]
    assert [s["id"] for s in listing(every, session_id="s1", state="active")] == ["b", "a"]
    assert listing([other])[0] == {
        "id": "c",
        "owner": "s2",
        "target_id": "s2",
        "kind": "every",
        "spec": "60",
        "message": "beat",
        "created": T0 + 2,
        "next": T0,
        "last": None,
        "ticks": 0,
        "missed": 0,
        "skipped": 0,
        "state": "active",
        "reason": None,
    }


class FakeStore:
    """The schedules' rows: one cron schedule, due since before the server stopped."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.updates: list[dict[str, Any]] = []

    def load_schedules(self) -> list[dict[str, Any]]:
        return [dict(row) for row in self.rows]

    def update_schedule(self, schedule_id: str, fields: dict[str, Any]) -> None:
        self.updates.append(fields)


class FakeMailbox:
    def __init__(self) -> None:
        self.delivered: list[tuple[str, str, dict[str, Any]]] = []
        self.arrived = asyncio.Event()

    def open_target(self, record: SessionRecord) -> LiveSession:
        return LiveSession(record)

    async def check_room(self, target: LiveSession) -> None:
        pass

    def deliver(self, sender: str, target: LiveSession, text: str, **extra: Any) -> None:
        self.delivered.append((target.id, text, extra))
        self.arrived.set()


def test_missed_cron_ticks_are_delivered_as_one_message_that_says_so(
    accounts: Accounting,
) -> None:
    async def main() -> None:
        accounts.registry.add(agent_record("s1", state=SessionState.IDLE), lambda s, f: None)
        # Due at :00 of an hour long past: ticks every 15 minutes fell due since.
        hour = dt.datetime.now().replace(minute=0, second=0, microsecond=0)
        due = (hour - dt.timedelta(hours=1)).timestamp()
        row = schedule("cron", "*/15 * * * *", due).row()
        store, mailbox = FakeStore([row]), FakeMailbox()
        tasks: list[asyncio.Future[Any]] = []

        def spawn(work: Any, name: str) -> asyncio.Future[Any]:
            tasks.append(asyncio.ensure_future(work))
            return tasks[-1]

        schedules = Schedules(
            shared(accounts.registry, store=store, accounting=accounts, spawn=spawn),  # type: ignore[arg-type]
            mailbox=mailbox,  # type: ignore[arg-type]
            released=lambda session_id: None,
        )
        schedules.load()
        schedules.start()
        try:
            await asyncio.wait_for(mailbox.arrived.wait(), 10)
        finally:
            for task in tasks:
                task.cancel()
        ((target, text, extra),) = mailbox.delivered
        missed = extra["extra"]["missed"]
        assert target == "s1" and missed >= 4  # 4 in the hour, and this hour's so far
        assert text == (
            f"beat\n[{missed} earlier ticks of this schedule (*/15 * * * *) fell due while "
            "the server was down or busy; this one stands for all of them.]"
        )
        claim = store.updates[0]
        assert claim["ticks"] == 1 and claim["missed"] == missed and claim["next_ts"] > time.time()

    asyncio.run(main())
