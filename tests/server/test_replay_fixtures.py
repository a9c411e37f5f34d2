"""Recorded trajectories as regression fixtures: each file of tests/fixtures/trajectories/ is
loaded into a fresh daemon's store and replayed (its whole tree, in fresh kernels) with no
divergent cell and the recorded end. A change to the loop, the kernels or the rendering that
alters what a recorded session's code prints fails here, at the first divergent cell.

The fixtures were made by real runs of the scenarios below on `scripted/*` models:

    PRIME_RECORD_FIXTURES=1 python -m pytest -q tests/server/test_replay_fixtures.py -k record

rewrites them (see docs/replay.md: when a change is meant to alter a trajectory)."""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.cli.replay import report_lines
from prime_kernel.daemon.daemon import Daemon
from prime_kernel.daemon.replay import dump_recording, load_recording
from prime_kernel.daemon.store import SqliteStore
from prime_kernel.protocol.requests import SessionRequest
from tests.conftest import events, start_session
from tests.server.test_replay import report, settled, start_replay

FIXTURES = Path(__file__).parents[1] / "fixtures" / "trajectories"
RECORDING = os.environ.get("PRIME_RECORD_FIXTURES") == "1"
# The file the scenarios read, in the working folder (where agent kernels start).
DATA = ("data.txt", "hello\n")

Scenario = Callable[[Daemon, Any, Callable[..., str]], Awaitable[str]]


async def tree(daemon: Daemon, jp_fetch: Any, script: Callable[..., str]) -> str:
    """A root that reads a file, maps two children over numbers, then answers."""
    child = script(
        [{"code": "print(context * 2)"}, {"code": "answer(context * 2)"}], name="fx_child"
    )
    root = script(
        [
            {"code": "text = open('data.txt').read().strip()\nprint(text)"},
            {
                "code": f"hs = rlm.map('double it', contexts=[1, 2], model={child!r})\n"
                "vals = rlm.gather(*hs)\nprint(vals, hs[0].session_id)"
            },
            {"code": "answer(f'{text}: {sum(vals)}')"},
        ],
        name="fx_tree",
    )
    return await start_session(jp_fetch, "read the file, double numbers", model=root)


async def with_context(daemon: Daemon, jp_fetch: Any, script: Callable[..., str]) -> str:
    """A root given a context (a blob in the recording), whose child answers an object."""
    child = script([{"code": "answer(sum(len(w) for w in context))"}], name="fx_letters")
    root = script(
        [
            {"code": "print(len(context), context[:3])"},
            {
                "code": f"h = rlm('count the letters', context=context[:2], model={child!r})\n"
                "answer({'words': len(context), 'letters': h.result()})"
            },
        ],
        name="fx_context",
    )
    words = ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]
    blob = await daemon.store.put_blob(pickle.dumps(words))
    record = await daemon.admission.create_session(
        SessionRequest(
            "count words and letters", model=root, context_blob=blob, context_type="list"
        )
    )
    return str(record["id"])


async def failing(daemon: Daemon, jp_fetch: Any, script: Callable[..., str]) -> str:
    """A session whose code raises, then runs out of turns."""
    model = script(
        [
            {"code": "rows = [3, 1, 2]\nprint(sorted(rows))"},
            {"code": "print(sum(rows) / 0)"},
            {"code": "answer(sum(rows))"},
        ],
        name="fx_failing",
    )
    return await start_session(jp_fetch, "add the rows", model=model, max_turns=2)


SCENARIOS: dict[str, Scenario] = {"tree": tree, "context": with_context, "failing": failing}


def fixture_path(name: str) -> Path:
    return FIXTURES / f"{name}.json"


@pytest.fixture(params=sorted(SCENARIOS))
def scenario(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def recorded_root(scenario: str, jp_root_dir: Path, jp_asyncio_loop: Any) -> str | None:
    """The fixture of `scenario` loaded into the store the daemon will open (its default, under
    the working folder), before the server starts; None when recording."""
    (jp_root_dir / DATA[0]).write_text(DATA[1])
    if RECORDING:
        return None
    store = SqliteStore(jp_root_dir / ".prime")
    store.open()
    recording = json.loads(fixture_path(scenario).read_text())
    try:
        return str(jp_asyncio_loop.run_until_complete(load_recording(store, recording)))
    finally:
        jp_asyncio_loop.run_until_complete(store.close())


@pytest.fixture
def prime_config(recorded_root: str | None, prime_config: dict[str, Any]) -> dict[str, Any]:
    return prime_config  # depends on recorded_root: the store is filled before the server starts


@pytest.mark.skipif(not RECORDING, reason="PRIME_RECORD_FIXTURES=1 records the fixtures")
async def test_record(daemon, jp_fetch, script, scenario):
    root = await SCENARIOS[scenario](daemon, jp_fetch, script)
    for session in [root, *(r.id for r in daemon.registry.descendants(root))]:
        await settled(jp_fetch, session)
    recording = await dump_recording(daemon.store, daemon.registry, root)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    fixture_path(scenario).write_text(json.dumps(recording, indent=1, sort_keys=True) + "\n")


@pytest.mark.skipif(RECORDING, reason="recording the fixtures")
async def test_fixture_replays_as_recorded(daemon, jp_fetch, recorded_root):
    recorded = daemon.registry.get(recorded_root)
    replay = await start_replay(jp_fetch, recorded_root, subtree=True)
    record = await settled(jp_fetch, replay)
    result = await report(jp_fetch, replay)
    # On failure, the report as `prime-agent replay` prints it: the first divergent cell, a diff.
    assert result["divergent"] == 0, "\n".join(report_lines(result))
    assert (record["state"], record["answer_repr"], record["error"]) == (
        recorded.state.value,
        recorded.answer_repr,
        recorded.error,
    )
    tree = [recorded, *daemon.registry.descendants(recorded_root)]
    assert result["sessions"] == len(tree)
    for session in result["replays"]:
        assert session["state"] == session["recorded_state"], session
    # Every recorded turn was replayed, none asked of a model.
    replies = [len(await events(daemon, r.id, "assistant")) for r in tree]
    assert result["turns"] == sum(replies) > 0
    assert record["usage"]["subtree"]["cost"] == 0

    # Without subtree, its children end as recorded: answered from the recording's blobs.
    replay = await start_replay(jp_fetch, recorded_root)
    record = await settled(jp_fetch, replay)
    result = await report(jp_fetch, replay)
    assert (result["sessions"], result["divergent"]) == (1, 0), "\n".join(report_lines(result))
    assert (record["state"], record["answer_repr"]) == (recorded.state.value, recorded.answer_repr)


@pytest.mark.skipif(RECORDING, reason="recording the fixtures")
@pytest.mark.parametrize("scenario", ["tree"])
async def test_a_changed_trajectory_fails_at_its_first_divergent_cell(
    daemon, jp_fetch, recorded_root, jp_root_dir
):
    # What a fixture catches: here a changed input, as a change of the loop or the kernels
    # that alters what a cell prints would show.
    (jp_root_dir / DATA[0]).write_text("goodbye\n")
    replay = await start_replay(jp_fetch, recorded_root, subtree=True)
    await settled(jp_fetch, replay)
    result = await report(jp_fetch, replay)
    assert result["divergent"] == 1
    first = result["replays"][0]["first_divergence"]
    assert (first["turn"], first["cell"]) == (1, 1)
    assert "-hello" in first["diff"] and "+goodbye" in first["diff"]
