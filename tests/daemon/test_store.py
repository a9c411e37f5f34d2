"""The store's kernel records, on real SQLite: what recovery needs survives later updates."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prime_kernel.daemon.store.sqlite import SqliteStore


def test_a_kernel_record_keeps_what_recovery_needs(tmp_path: Path) -> None:
    async def run() -> list[dict[str, object]]:
        store = SqliteStore(tmp_path / "store")
        store.open()
        try:
            store.record_kernel("k1", {"pid": 42, "connection_file": "/c.json", "gateway": None})
            store.record_kernel("k2", {"pid": None, "connection_file": None, "gateway": "http://g"})
            # The session the kernels went to: the pid, file and gateway stay.
            store.record_kernel("k1", {"session_id": "s1"})
            store.record_kernel("k2", {"session_id": "s2"})
            await store.flush()
            return sorted(await store.kernels(), key=lambda r: str(r["kernel_id"]))
        finally:
            await store.close()

    k1, k2 = asyncio.run(run())
    assert (k1["pid"], k1["connection_file"], k1["session_id"]) == (42, "/c.json", "s1")
    assert (k2["gateway"], k2["session_id"]) == ("http://g", "s2")
