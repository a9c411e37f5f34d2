"""The store on real SQLite: what recovery needs of a kernel record survives later updates, and
readers that went away do not stop the store, and a blob is only ever found by its own id."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from prime_kernel.daemon.store.base import Store
from prime_kernel.daemon.store.sqlite import SqliteStore
from prime_kernel.protocol.errors import Unavailable


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


def test_readers_that_went_away_leave_the_store_working(tmp_path: Path) -> None:
    """A flush past its timeout and a cancelled read leave their answers unwanted: the store
    thread skips them (it used to die answering a cancelled future, and every later flush,
    the server's shutdown among them, waited forever)."""

    async def run() -> list[dict[str, object]]:
        store = SqliteStore(tmp_path / "store")
        store.open()
        try:
            for i in range(3000):  # work queued ahead of the reads below
                store.record_kernel(f"k{i}", {"pid": i})
            with pytest.raises(Unavailable):
                await store.flush(timeout=0)  # gives up at once, its barrier still queued
            reader = asyncio.ensure_future(store.kernels())
            await asyncio.sleep(0)  # one loop turn: the read is queued, then cancelled
            reader.cancel()
            await asyncio.wait_for(store.flush(), 10)
            return await asyncio.wait_for(store.kernels(), 10)
        finally:
            await asyncio.wait_for(store.close(), 10)

    kernels = asyncio.run(run())
    assert len(kernels) == 3000


def test_a_blob_id_names_a_file_in_the_blob_folder_and_nothing_else(tmp_path: Path) -> None:
    """Blob ids come from kernels (a spilled value, a context): one that is not the store's
    own shape never names a path."""

    async def run(store: Store) -> None:
        blob_id = await store.put_blob(b"value")
        assert store.has_blob(blob_id) and await store.get_blob(blob_id) == b"value"
        assert store.blob_path(blob_id).parent == store.blob_dir
        assert store.blob_path(blob_id).stat().st_mode & 0o777 == 0o600
        for bad in ("../prime.sqlite3", "b1/../../x", "", None, 7):
            assert not store.has_blob(bad)
            with pytest.raises(ValueError, match="invalid blob id"):
                store.blob_path(bad)  # type: ignore[arg-type]
        assert not store.has_blob("b0000")

    store = SqliteStore(tmp_path / "store")
    store.open()
    try:
        asyncio.run(run(store))
    finally:
        asyncio.run(store.close())
