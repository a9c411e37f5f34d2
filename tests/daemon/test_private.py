"""The server process's private folders (0700, short enough for Unix sockets) and the store's
modes (0700 folder, 0600 database files), whatever the umask."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from prime_kernel.daemon import private

# sockaddr_un.sun_path: 108 bytes with the final NUL.
SUN_PATH = 107


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_a_kernels_folder_is_private_and_its_sockets_fit_a_unix_path(open_umask: None) -> None:
    kernel_id = str(uuid.uuid4())
    folder = private.kernel_dir(kernel_id)
    try:
        assert folder.parent == private.base()
        assert private.base().stat().st_mode & 0o777 == 0o700
        assert folder.stat().st_mode & 0o777 == 0o700
        assert len(os.fsencode(folder / "s-65535")) <= SUN_PATH
        assert len(os.fsencode(private.socket_path())) <= SUN_PATH
        assert private.kernel_dir(kernel_id) == folder  # made once, found again
    finally:
        private.remove_kernel_dir(kernel_id)
    assert not folder.exists()


def test_the_store_is_made_private(tmp_path: Path, open_umask: None) -> None:
    store = tmp_path / ".prime"
    database = store / "prime.db"
    store.mkdir(mode=0o777)
    (store / "prime.db-wal").write_bytes(b"")  # as SQLite leaves it, world-readable here
    private.private_store(store, database)
    assert store.stat().st_mode & 0o777 == 0o700
    assert database.stat().st_mode & 0o777 == 0o600
    assert (store / "prime.db-wal").stat().st_mode & 0o777 == 0o600
    assert not (store / "prime.db-shm").exists()
