"""Private places of this server process: folders only its OS user can enter.

One folder per server process (0700, under the temporary folder: Unix socket paths must stay
short) holds the daemon's Unix socket and, per kernel, a folder with that kernel's ZMQ IPC
sockets. A sandboxed kernel gets its own folder and the daemon socket bound in, nothing else.
The store is made private the same way: its folder 0700, its database files 0600.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

_lock = threading.Lock()
_base: Path | None = None

# sockaddr_un.sun_path holds 108 bytes with the final NUL; a kernel's sockets are
# <base>/k-<36-char kernel id>/s-<n>, 45 bytes below the base.
_MAX_BASE = 60


def base() -> Path:
    """This process's private folder, made on first use."""
    global _base
    with _lock:
        if _base is None or not _base.is_dir():
            parent = tempfile.gettempdir()
            if len(parent) > _MAX_BASE - 16:
                parent = "/tmp"
            _base = Path(tempfile.mkdtemp(prefix="prime-", dir=parent))  # mode 0700
            # Not when the server extension stops: the server shuts its kernels down after
            # its extensions, through their sockets in here.
            atexit.register(cleanup)
        return _base


def socket_path() -> Path:
    """Where the daemon's kernel API listens (a Unix socket, 0600)."""
    return base() / "daemon.sock"


def kernel_dir(kernel_id: str) -> Path:
    """A kernel's own private folder (its IPC sockets live here)."""
    path = base() / f"k-{kernel_id}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def remove_kernel_dir(kernel_id: str) -> None:
    if _base is not None:
        shutil.rmtree(_base / f"k-{kernel_id}", ignore_errors=True)


def cleanup() -> None:
    """Remove the private folder (at exit)."""
    global _base
    with _lock:
        if _base is not None:
            shutil.rmtree(_base, ignore_errors=True)
            _base = None


def private_store(directory: str | os.PathLike[str], database: str | os.PathLike[str]) -> None:
    """Make the store's folder 0700 and its database (and, by SQLite's rule that they copy the
    database's mode, its -wal and -shm files) 0600, whatever the umask."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    db = Path(database)
    fd = os.open(db, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            path.chmod(0o600)
