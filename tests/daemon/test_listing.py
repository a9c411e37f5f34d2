"""Lists of sessions: what `changed_after` and `epoch` promise, entries kept between lists that
still follow every change (records, children, usage below, kernels, running wall time), brief
entries, and the registry's indexes agreeing with a plain filter. An offline daemon over a real
store; no kernels. The Listing alone, over an in-memory registry, for what it keeps."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.daemon import usage as usage_mod
from prime_kernel.daemon.accounting import Accounting
from prime_kernel.daemon.daemon import Daemon
from prime_kernel.daemon.listing import BRIEF_CHARS, Listing
from prime_kernel.daemon.records import SessionRecord
from prime_kernel.protocol.requests import SessionFilter
from prime_kernel.protocol.states import TERMINAL, SessionKind, SessionState
from tests.daemon.conftest import session

_ids = itertools.count()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    d = Daemon(root_dir=str(tmp_path))
    d.open()
    yield d
    asyncio.run(d.store.close())


def add(
    daemon: Daemon,
    parent: SessionRecord | None = None,
    state: SessionState = SessionState.DONE,
    **fields: Any,
) -> SessionRecord:
    sid = f"s{next(_ids)}"
    now = time.time()
    record = SessionRecord(
        id=sid,
        name=fields.pop("name", sid),
        prompt=fields.pop("prompt", f"task {sid}"),
        state=state,
        kind=SessionKind.AGENT,
        parent_id=parent.id if parent else None,
        root_id=parent.root_id if parent else sid,
        depth=parent.depth + 1 if parent else 0,
        created=now,
        started=now,
        ended=now if state in TERMINAL else None,
        usage=usage_mod.empty(),
        **fields,
    )
    daemon.store.insert_session(record.to_row())
    daemon.registry.add(record, daemon.store.update_session)
    return record


def ids(listing: dict[str, Any]) -> list[str]:
    return [s["id"] for s in listing["sessions"]]


def entry(daemon: Daemon, session_id: str) -> dict[str, Any]:
    (found,) = [s for s in daemon.listing.list_sessions()["sessions"] if s["id"] == session_id]
    return found


def test_changed_after_returns_what_changed_since_the_cursor(daemon: Daemon) -> None:
    a = add(daemon)
    b = add(daemon, state=SessionState.RUNNING)
    c = add(daemon)
    first = daemon.listing.list_sessions()
    assert ids(first) == [c.id, b.id, a.id]  # newest first
    cursor = first["cursor"]
    nothing = daemon.listing.list_sessions(SessionFilter(changed_after=cursor))
    assert nothing["sessions"] == [] and nothing["cursor"] == cursor
    assert nothing["epoch"] == first["epoch"]

    daemon.lifecycle.change(b, SessionState.DONE)
    changed = daemon.listing.list_sessions(SessionFilter(changed_after=cursor))
    assert ids(changed) == [b.id]
    assert changed["sessions"][0]["state"] == "DONE"
    assert changed["cursor"] > cursor
    d = add(daemon, parent=a)
    # Since the first cursor: both, newest first; since the second: only the new one. A new
    # child changes its parent's view (children, usage) too.
    assert ids(daemon.listing.list_sessions(SessionFilter(changed_after=cursor))) == [
        d.id,
        b.id,
        a.id,
    ]
    assert ids(daemon.listing.list_sessions(SessionFilter(changed_after=changed["cursor"]))) == [
        d.id,
        a.id,
    ]
    # Filters combine with it.
    assert ids(
        daemon.listing.list_sessions(
            SessionFilter(changed_after=cursor, states=frozenset({SessionState.DONE}))
        )
    ) == [
        d.id,
        b.id,
        a.id,
    ]
    assert ids(daemon.listing.list_sessions(SessionFilter(changed_after=cursor, root_id=a.id))) == [
        d.id,
        a.id,
    ]
    assert ids(daemon.listing.list_sessions(SessionFilter(changed_after=cursor, limit=1))) == [d.id]
    # Every change after a list is in the next list asked with its cursor.
    last = daemon.listing.list_sessions()["cursor"]
    c.update(answer_repr="42")
    assert ids(daemon.listing.list_sessions(SessionFilter(changed_after=last))) == [c.id]


def test_a_cursor_is_only_good_for_its_epoch(tmp_path: Path) -> None:
    first = Daemon(root_dir=str(tmp_path))
    first.open()
    a = add(first)
    a.update(answer_repr="1")
    before = first.listing.list_sessions()
    asyncio.run(first.store.close())

    second = Daemon(root_dir=str(tmp_path))
    second.open()
    try:
        after = second.listing.list_sessions()
        # A new run: a new epoch, and cursors count again from its start. A client holding a
        # cursor of another epoch must list everything again.
        assert after["epoch"] != before["epoch"]
        assert after["cursor"] < before["cursor"]
        assert ids(after) == [a.id]
        assert (
            second.listing.list_sessions(SessionFilter(changed_after=after["cursor"]))["sessions"]
            == []
        )
    finally:
        asyncio.run(second.store.close())


def test_kept_entries_follow_every_change(daemon: Daemon) -> None:
    root = add(daemon)
    child = add(daemon, parent=root)
    assert entry(daemon, root.id)["children"] == [child.id]
    assert entry(daemon, root.id)["usage"]["subtree"]["model_calls"] == 0

    # Usage below a session changes its subtree's usage.
    daemon.accounting.add(child, model_calls=2, total_tokens=30, cost=0.5)
    usage = entry(daemon, root.id)["usage"]
    assert usage["own"]["model_calls"] == 0
    assert usage["subtree"]["model_calls"] == 2 and usage["subtree"]["cost"] == 0.5
    assert entry(daemon, child.id)["usage"]["own"]["total_tokens"] == 30

    # A new, running grandchild: listed, in its parent's children, its wall time running and
    # counted in every subtree above it.
    grandchild = add(daemon, parent=child, state=SessionState.RUNNING)
    assert entry(daemon, child.id)["children"] == [grandchild.id]
    walls = [entry(daemon, s)["usage"]["subtree"]["wall_time"] for s in (grandchild.id, root.id)]
    time.sleep(0.05)  # wall time passing is what is tested
    later = [entry(daemon, s)["usage"]["subtree"]["wall_time"] for s in (grandchild.id, root.id)]
    assert all(b > a for a, b in zip(walls, later, strict=True))
    daemon.lifecycle.change(grandchild, SessionState.DONE)
    ended = entry(daemon, root.id)["usage"]["subtree"]["wall_time"]
    time.sleep(0.02)  # time passes; an ended session's wall time does not grow
    assert entry(daemon, root.id)["usage"]["subtree"]["wall_time"] == ended

    # A kernel coming and going shows, though the record does not change.
    live = daemon.registry.attach(root)
    live.runner = object()  # type: ignore[assignment]
    assert entry(daemon, root.id)["kernel_alive"] is True
    live.runner = None
    assert entry(daemon, root.id)["kernel_alive"] is False

    # Kept or made afresh, an entry is the record's own view (nothing here is long).
    for record in (root, child, grandchild):
        assert entry(daemon, record.id) == json.loads(
            json.dumps(daemon.listing.session_json(record.id))
        )


def test_list_entries_are_brief(daemon: Daemon) -> None:
    long = "word " * 400
    record = add(
        daemon,
        prompt=long,
        name="n" * 500,  # a record stored before names had a limit
        answer_repr="a" * 4000,
        error="e" * 3000,
        options={"spec": "reviewer", "instructions": long},
    )
    listed = entry(daemon, record.id)
    assert listed["prompt"] == long[:500] + "…"
    assert listed["name"] == "n" * daemon.admission.max_name_chars + "…"
    assert listed["answer_repr"] == "a" * 500 + "…"
    assert listed["error"] == "e" * 500 + "…"
    assert listed["options"] == {"spec": "reviewer"}
    whole = daemon.listing.session_json(record.id)
    assert whole["prompt"] == long and whole["options"]["instructions"] == long
    assert whole["answer_repr"] == "a" * 4000 and whole["error"] == "e" * 3000


def test_indexes_agree_with_a_plain_filter(daemon: Daemon) -> None:
    rng = random.Random(14)
    records: list[SessionRecord] = []
    cursors = [0]
    for _ in range(300):
        roll = rng.random()
        if roll < 0.4 or not records:
            parent = rng.choice(records) if records and rng.random() < 0.6 else None
            if parent is not None and parent.depth >= 3:
                parent = None
            records.append(add(daemon, parent=parent, state=SessionState.ADMITTED))
        elif roll < 0.8:
            record = rng.choice(records)
            nexts = [s for s in SessionState if s in _NEXT.get(record.state, ())]
            if nexts:
                daemon.lifecycle.change(record, rng.choice(nexts))
        else:
            rng.choice(records).update(answer_repr=str(rng.random()))
        if rng.random() < 0.1:
            cursors.append(daemon.registry.version)

    registry = daemon.registry
    order = {r.id: i for i, r in enumerate(records)}

    def plain(f: SessionFilter) -> list[str]:
        out = [
            r
            for r in records
            if (not f.states or r.state in f.states)
            and (f.root_id is None or r.root_id == f.root_id)
            and (f.parent_id is None or r.parent_id == f.parent_id)
            and (f.changed_after is None or registry.changed_at(r.id) > f.changed_after)
        ]
        out.sort(key=lambda r: order[r.id], reverse=True)
        return [r.id for r in out][: f.limit]

    roots = [r.id for r in records if r.parent_id is None][:5]
    ended = frozenset({SessionState.DONE, SessionState.FAILED, SessionState.CANCELLED})
    for states, root_id, parent_id, changed_after, limit in itertools.product(
        [frozenset(), frozenset({SessionState.RUNNING}), ended],
        [None, *roots[:2]],
        [None, roots[0]],
        [None, *cursors[-3:]],
        [None, 7],
    ):
        f = SessionFilter(states, root_id, parent_id, limit, changed_after)
        assert [r.id for r in registry.select(f)] == plain(f), f
    for record in records:
        open_below = any(not r.terminal for r in [record, *registry.descendants(record.id)])
        assert registry.settled(record.id) is not open_below


_NEXT = {
    SessionState.ADMITTED: {SessionState.RUNNING, SessionState.CANCELLED},
    SessionState.RUNNING: {SessionState.IDLE, SessionState.DONE, SessionState.FAILED},
    SessionState.IDLE: {SessionState.RUNNING, SessionState.INACTIVE, SessionState.DONE},
    SessionState.INACTIVE: {SessionState.RUNNING, SessionState.CANCELLED},
}


class Made:
    """The Listing's `name_chars`, counting how many entries it made afresh (each asks once)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> int:
        self.count += 1
        return 20


def test_the_listing_alone_makes_each_entry_once_until_it_changes(accounts: Accounting) -> None:
    alive: set[str] = set()
    made = Made()
    # No store: nothing here reads events or blobs.
    listing = Listing(accounts.registry, accounts, alive.__contains__, made, None, epoch="e1")  # type: ignore[arg-type]
    session(accounts, "root", None, name="r" * 30, answer_repr="x" * (BRIEF_CHARS + 1))
    child = session(accounts, "child", "root", state=SessionState.DONE, ended=time.time())

    def listed() -> dict[str, dict[str, Any]]:
        text = listing.text()
        body = json.loads(text)
        assert body["epoch"] == "e1" and body["cursor"] == accounts.registry.version
        return {s["id"]: s for s in body["sessions"]}

    asyncio.run(listing.prepare(slice_seconds=0))
    assert made.count == 2
    first = listed()
    assert made.count == 2  # prepared: nothing made again
    assert first["root"]["name"] == "r" * 20 + "…"
    assert first["root"]["answer_repr"] == "x" * BRIEF_CHARS + "…"
    assert first["root"]["children"] == ["child"] and first["root"]["has_answer"] is True
    assert not {"answer_blob", "context_blob"} & first["root"].keys()  # the store's own
    assert listing.session_json("root")["name"] == "r" * 30

    # A kernel coming up changes its entry alone; a change of a child changes its parent's too.
    alive.add("child")
    assert listed()["child"]["kernel_alive"] is True and made.count == 3
    accounts.add(child, total_tokens=7)
    again = listed()
    assert made.count == 5
    assert again["root"]["usage"]["subtree"]["total_tokens"] == 7
    assert again["root"]["usage"]["own"]["total_tokens"] == 0
    listed()
    assert made.count == 5


def test_prepare_makes_every_entry_and_lets_the_loop_serve_between_slices(daemon: Daemon) -> None:
    records = [add(daemon, prompt="word " * 2000) for _ in range(20)]
    served = 0

    async def serve() -> None:  # a request's turn on the loop, as often as it gets one
        nonlocal served
        while True:
            served += 1
            await asyncio.sleep(0)

    async def run() -> None:
        other = asyncio.create_task(serve())
        await daemon.listing.prepare(slice_seconds=0)  # each entry is over the slice
        other.cancel()

    asyncio.run(run())
    assert served >= len(records) - 1
    assert set(ids(daemon.listing.list_sessions())) == {r.id for r in records}
