"""Small file and id helpers every layer uses (stdlib only)."""

from __future__ import annotations

import errno
import os
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def new_id(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:12]


def private_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a folder only its owner can enter (created if needed)."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    return folder


def renamed_into(folder: Path, private: Path | None, write: Callable[[Path], T]) -> T:
    """`write(tmp)` writes temporaries in the folder `tmp` and renames them into `folder`.

    It is called with `private` (a folder nobody browses, such as the store's `tmp/`) so that
    temporaries never appear in `folder`: jupyter_server lists a folder entry by entry, and one
    renamed away between the listing and its stat turns the whole listing into a 404 (with
    hidden files allowed). A rename cannot cross filesystems or mounts, so when it fails with
    EXDEV, `write` is called again with `folder` itself; `write` must then have removed its
    temporaries. Temporary names should end in `~`, which jupyter_server does not list by
    default (`ContentsManager.hide_globs`), for that fallback.
    """
    if private is not None:
        private.mkdir(parents=True, exist_ok=True)
        try:
            return write(private)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
    return write(folder)


def atomic_write(path: Path, data: bytes | bytearray, *, tmp_dir: Path | None = None) -> None:
    """Write a file so that it is either absent or complete, never half-written; the
    temporary file goes to `tmp_dir` if it can (see `renamed_into`)."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(folder: Path) -> None:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix="~")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    renamed_into(path.parent, tmp_dir, write)
