"""When the daemon cannot run — here, its store is damaged — the server runs on and every
/api/prime/* route answers a JSON 503 saying why and naming the repair command, to the
server's users only (review red-team-a982054, finding 5: HTML 404s)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from prime_kernel.daemon.store.schema import SCHEMA


@pytest.fixture
def damaged_root(jp_root_dir: Path) -> Path:
    """The server root, its store damaged before the server starts."""
    path = jp_root_dir / ".prime" / "prime.sqlite3"
    path.parent.mkdir()
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO events (session_id, ts, kind, data) VALUES ('s1', 1, 'task', '{}')")
    db.commit()
    db.close()
    with open(path, "r+b") as f:
        f.write(os.urandom(100))  # a garbage header
    return jp_root_dir


async def test_a_damaged_store_makes_every_route_say_so(
    damaged_root: Path, jp_serverapp: Any, jp_fetch: Any, http_server_client: Any, jp_base_url: str
) -> None:
    await jp_serverapp.extension_manager.start_all_extensions()
    for path in (("sessions",), ("status",), ("no", "such", "route")):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("api", "prime", *path)
        assert info.value.code == 503
        body = json.loads(info.value.response.body)
        assert body["error"] == "store_damaged"
        assert "is damaged" in body["message"]
        assert f"prime-agent doctor --repair --root {damaged_root.resolve()}" in body["message"]
    # Only for the server's users.
    with pytest.raises(HTTPClientError) as info:
        await http_server_client.fetch(jp_base_url.rstrip("/") + "/api/prime/sessions")
    assert info.value.code == 403 and b"damaged" not in info.value.response.body
    # The server itself runs on.
    assert (await jp_fetch("api", "status")).code == 200
    await jp_serverapp.extension_manager.stop_all_extensions()
