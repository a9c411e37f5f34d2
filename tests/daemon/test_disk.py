"""Whether the disk has room: by statvfs of the root and the store's folder, and by the store's
own failed commits when its folder cannot be read."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace

import pytest

from prime_kernel.daemon.disk import DiskSpace, is_full
from prime_kernel.protocol.errors import InsufficientStorage


def test_room_until_the_free_space_is_below_the_minimum(tmp_path: Path) -> None:
    store = SimpleNamespace(full=False)
    disk = DiskSpace(str(tmp_path), str(tmp_path / ".prime"), store, min_free_bytes=0)
    assert disk.full() is None
    disk.check("an upload")  # no error while there is room

    disk.min_free_bytes = 1 << 62  # more than any disk has free
    why = disk.full()
    assert why is not None and why.startswith(f"the disk under {tmp_path} is full (")
    with pytest.raises(InsufficientStorage, match=r"an upload needs space\. Free some space"):
        disk.check("an upload")


def test_the_store_folder_is_checked_too_and_its_failed_commits_count(tmp_path: Path) -> None:
    """A store folder that cannot be read is full only if the store says its commits fail."""
    tmp_path = tmp_path.resolve()
    store = SimpleNamespace(full=False)
    disk = DiskSpace(str(tmp_path), str(tmp_path / "gone"), store, min_free_bytes=0)
    assert disk.folders == [str(tmp_path), str(tmp_path / "gone")]
    assert disk.full() is None
    store.full = True
    assert disk.full() == f"the disk under {tmp_path} is full: the store cannot write"


def test_one_folder_when_the_store_is_the_root(tmp_path: Path) -> None:
    tmp_path = tmp_path.resolve()
    disk = DiskSpace(str(tmp_path), str(tmp_path / "." / ""), SimpleNamespace(full=False))
    assert disk.folders == [str(tmp_path)]


def test_is_full_means_no_space_or_quota() -> None:
    assert is_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not is_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_full(ValueError("no space"))
