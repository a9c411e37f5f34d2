"""Whether the disk under the root (and the store) has room for what the daemon must write.

An agent may fill the disk: its files live under the root, and so, usually, does the store.
Then every write the daemon makes fails — events, answers, snapshots — and, unchecked, each
failure became a 500 and each turn of the agent another "Unhandled error" until its turns ran
out. `DiskSpace.full()` says, cheaply (one statvfs per folder, plus what the store knows of its
own failed commits), whether that is where things stand. Requests that need space are then
refused with 507 before they change anything, and a session stops at its next turn with one
clear reason instead of spending its turns. Space freed, everything works again: the store
commits what it kept meanwhile.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from traitlets import Int
from traitlets.config import LoggingConfigurable

from ..protocol.errors import InsufficientStorage

FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


class DiskSpace(LoggingConfigurable):
    """Configure as `c.DiskSpace.<trait>`."""

    min_free_bytes = Int(
        1 << 20,
        min=0,
        config=True,
        help="Free bytes below which the disk under the root (or the store) counts as full: "
        "requests that need space get 507 and sessions stop with that reason at their next "
        "turn, until space is freed.",
    )

    def __init__(self, root: str, store_dir: str, store: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = os.path.realpath(root)
        folder = os.path.realpath(store_dir)
        self.folders = [self.root] + ([folder] if folder != self.root else [])
        self.store = store

    def full(self) -> str | None:
        """None while there is room; else why not, in words (the disk under the root, and
        how much is free). By the disk itself: once space is freed, at once (the store, whose
        commits failed meanwhile, catches up within seconds)."""
        for folder in self.folders:
            try:
                st = os.statvfs(folder)
            except OSError:
                if getattr(self.store, "full", False):
                    return f"the disk under {self.root} is full: the store cannot write"
                continue
            free = st.f_bavail * st.f_frsize
            if free < self.min_free_bytes:
                return f"the disk under {folder} is full ({free} bytes free)"
        return None

    def check(self, doing: str = "") -> None:
        """InsufficientStorage (507) if the disk is full."""
        why = self.full()
        if why is not None:
            what = f"; {doing} needs space" if doing else ""
            raise InsufficientStorage(f"{why}{what}. Free some space and try again.")


def is_full(error: BaseException) -> bool:
    """Whether `error` is the disk (or a quota) being full."""
    return isinstance(error, OSError) and error.errno in FULL_ERRNOS
