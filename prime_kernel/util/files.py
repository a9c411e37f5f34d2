"""Small file and id helpers every layer uses (stdlib only)."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path


def new_id(prefix: str = "") -> str:
    return prefix + uuid.uuid4().hex[:12]


def private_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a folder only its owner can enter (created if needed)."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    return folder


def atomic_write(path: Path, data: bytes, *, tmp_dir: Path | None = None) -> None:
    """Write a file so that it is either absent or complete, never half-written.

    The temporary file goes to `tmp_dir` when given and on the same filesystem as `path` (so
    that a folder being listed — by the contents API, say — never shows a half-written file);
    otherwise beside `path`, since a rename cannot cross filesystems.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    where = path.parent
    if tmp_dir is not None:
        tmp_dir.mkdir(parents=True, exist_ok=True)
        if tmp_dir.stat().st_dev == where.stat().st_dev:
            where = tmp_dir
    fd, tmp = tempfile.mkstemp(dir=where, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
