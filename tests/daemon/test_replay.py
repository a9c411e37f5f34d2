"""Replays over a real store and an in-memory registry, no kernels or models: the recorded
replies a replay is answered with, which children replay, how a replay is judged against its
recording, and recordings as files."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.daemon.records import SessionRecord
from prime_kernel.daemon.registry import SessionRegistry
from prime_kernel.daemon.replay import Replays, dump_recording, load_recording
from prime_kernel.daemon.store import SqliteStore
from prime_kernel.protocol.errors import NotFound, PrimeError
from prime_kernel.protocol.states import SessionState
from tests.daemon.conftest import agent_record

DONE = SessionState.DONE


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "store")
    store.open()
    yield store
    asyncio.run(store.close())


class Tree:
    """Sessions in the store and the registry, each with its cells as the loop records them."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.registry = SessionRegistry()
        self.replays = Replays(store, self.registry)

    def add(self, sid: str, parent: str | None = None, **fields: Any) -> SessionRecord:
        record = agent_record(sid, parent, **{"state": DONE, **fields})
        self.store.insert_session(record.to_row())
        return self.registry.add(record, self.store.update_session)

    def cells(self, sid: str, *turns: tuple[str, str]) -> None:
        """One turn per (code, output): the model's reply, the agent's cell, its output."""
        for code, output in turns:
            call = {
                "id": "c",
                "type": "function",
                "function": {"name": "python", "arguments": code},
            }
            self.store.append_event(sid, "assistant", {"content": "", "tool_calls": [call]})
            self.store.append_event(sid, "cell", {"code": code, "source": "agent"})
            self.store.append_event(sid, "observation", {"text": output})


def recorded(store: SqliteStore) -> Tree:
    """`r` ran two turns and started the child `c`."""
    tree = Tree(store)
    tree.add("r")
    tree.add("c", "r")
    tree.cells("r", ("h = rlm('x')", "started c"), ("answer(1)", "done"))
    return tree


def test_a_replay_is_answered_with_the_recorded_replies_until_it_goes_live(
    store: SqliteStore,
) -> None:
    tree = recorded(store)

    async def run() -> None:
        plan = await tree.replays.plan("r", 1, subtree=False)
        assert plan == {"of": "r", "until": 1, "subtree": False}
        replay = tree.add("p", state=SessionState.RUNNING, options={"replay": plan})
        first = tree.replays.reply(replay, 0)
        assert first is not None and first.message["tool_calls"][0]["function"]["arguments"] == (
            "h = rlm('x')"
        )
        assert first.usage["total_tokens"] == 0  # nothing spent
        assert tree.replays.reply(replay, 1) is None  # past `until`: the live model

        whole = tree.add("q", state=SessionState.RUNNING, options={"replay": {"of": "r"}})
        assert tree.replays.reply(whole, 1) is not None
        with pytest.raises(PrimeError, match="wants turn 3, and the recording has 2: it diverged"):
            tree.replays.reply(whole, 2)

    asyncio.run(run())


def test_what_cannot_replay_is_refused(store: SqliteStore) -> None:
    tree = recorded(store)
    tree.add("live", state=SessionState.RUNNING)

    async def run() -> None:
        for until, message in [(-1, "0 or more"), (True, "an integer"), ("2", "an integer")]:
            with pytest.raises(PrimeError, match=message):
                await tree.replays.plan("r", until, subtree=False)  # type: ignore[arg-type]
        with pytest.raises(PrimeError, match="is RUNNING: only an ended session replays"):
            await tree.replays.plan("live", None, subtree=False)
        with pytest.raises(NotFound, match="is not a replay"):
            await tree.replays.report("r")

    asyncio.run(run())


def test_the_recorded_child_of_the_same_rank_replays_or_ends_as_recorded(
    store: SqliteStore,
) -> None:
    tree = recorded(store)

    async def run() -> None:
        alone = tree.add("p", options={"replay": {"of": "r", "until": 1, "subtree": False}})
        assert await tree.replays.child_plan(alone, 0, 0) == {
            "of": "c",
            "until": None,
            "subtree": False,
            "answered": True,
        }
        assert await tree.replays.child_plan(alone, 0, 1) is None  # r started one child
        assert await tree.replays.child_plan(alone, 1, 0) is None  # a live turn's child
        whole = tree.add("q", options={"replay": {"of": "r", "subtree": True}})
        assert await tree.replays.child_plan(whole, 0, 0) == {
            "of": "c",
            "until": None,
            "subtree": True,
        }
        child = tree.add("pc", "p", options={"replay": {"of": "c", "answered": True}})
        assert tree.replays.answered(child) is tree.registry.get("c")

    asyncio.run(run())


def test_a_replay_is_judged_cell_by_cell_with_its_ids_read_as_the_recorded_ones(
    store: SqliteStore,
) -> None:
    tree = recorded(store)
    tree.add("again", options={"replay": {"of": "r"}})
    tree.add("kid", "again", options={"replay": {"of": "c", "answered": True}})
    tree.cells("again", ("h = rlm('x')", "started kid"), ("answer(1)", "done, differently"))

    async def run() -> dict[str, Any]:
        await tree.store.flush()
        return await tree.replays.report("again")

    report = asyncio.run(run())
    assert (report["of"], report["turns"], report["sessions"]) == ("r", 2, 1)
    assert report["divergent"] == 1  # "started kid" is "started c": not a difference
    first = report["replays"][0]["first_divergence"]
    assert (first["cell"], first["turn"], first["code"]) == (2, 2, "answer(1)")
    assert "-done\n+done, differently" in first["diff"]


def test_a_recording_travels_as_a_file_with_its_blobs(store: SqliteStore, tmp_path: Path) -> None:
    tree = Tree(store)

    async def run() -> tuple[str, str, list[dict[str, Any]], bytes]:
        blob = await store.put_blob(b"the context")
        tree.add("r", context_blob=blob)
        tree.add("c", "r")
        tree.cells("r", ("x = 1", "1"))
        await store.flush()
        recording = await dump_recording(store, tree.registry, "r")
        assert recording["format"] == "prime-kernel-recording/1"
        assert [s["record"]["id"] for s in recording["sessions"]] == ["r", "c"]  # parents first

        other = SqliteStore(tmp_path / "other")
        other.open()
        try:
            root = await load_recording(other, recording)
            rows = {row["id"]: row for row in other.load_sessions()}
            events = await other.events("r")
            moved = rows["r"]["context_blob"]
            return root, moved, events, await other.get_blob(moved)
        finally:
            await other.close()

    root, _, events, data = asyncio.run(run())
    assert root == "r" and data == b"the context"
    assert [e["kind"] for e in events] == ["assistant", "cell", "observation"]


def test_only_an_ended_tree_is_recorded(store: SqliteStore) -> None:
    tree = Tree(store)
    tree.add("r")
    tree.add("c", "r", state=SessionState.RUNNING)
    with pytest.raises(PrimeError, match="session c is RUNNING: only an ended tree is recorded"):
        asyncio.run(dump_recording(store, tree.registry, "r"))


def test_a_file_of_another_format_is_refused(store: SqliteStore) -> None:
    for bad in ({"format": "prime-kernel-recording/0", "sessions": []}, ["not", "one"]):
        with pytest.raises(PrimeError, match="not a recording of format"):
            asyncio.run(load_recording(store, bad))  # type: ignore[arg-type]
    assert store.load_sessions() == []
