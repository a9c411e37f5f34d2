"""An agent's code that opens the daemon's SQLite store and asks for its write lock (possible
without a sandbox: the files are the same OS user's) gets "database is locked" at once, and the
daemon goes on serving everyone else: it holds the database exclusively."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.conftest import events, start_session, until_opened, wait_for


@pytest.fixture
def jp_server_config(jp_server_config: Config) -> Config:
    # No sandbox: agent code can reach the store's files, as a plain local kernel can.
    jp_server_config.Sandbox.mode = "none"
    return jp_server_config


async def test_an_agent_cannot_lock_the_store(daemon: Any, script: Any, jp_fetch: Any) -> None:
    # The agent's connection stays open (had it got the lock, it would hold it) until the
    # bystander has ended.
    gate = Path(daemon.root_dir) / "bystander-ended"
    lock = (
        "import sqlite3\n"
        f"db = sqlite3.connect({str(daemon.store.directory / 'prime.sqlite3')!r}, timeout=0.5)\n"
        "try:\n"
        "    db.execute('BEGIN IMMEDIATE')\n"
        "    held = 'locked'\n"
        "except Exception as e:\n"
        "    held = f'{type(e).__name__}: {e}'\n" + until_opened(gate)
    )
    locker = await start_session(
        jp_fetch, "lock", model=script([{"code": lock}, {"code": "answer(held)"}])
    )
    await wait_for(lambda: events(daemon, locker, "assistant"))
    # Meanwhile the daemon serves everyone else: a session in another tree runs and ends.
    other = await start_session(jp_fetch, "bystander", model=script([{"code": "answer(1)"}]))
    await wait_for(lambda: daemon.registry.get(other).terminal, timeout=60)
    assert daemon.listing.session_json(other)["state"] == "DONE"
    gate.touch()
    await wait_for(lambda: daemon.registry.get(locker).terminal, timeout=60)
    assert (
        daemon.listing.session_json(locker)["answer_repr"]
        == "'OperationalError: database is locked'"
    )
