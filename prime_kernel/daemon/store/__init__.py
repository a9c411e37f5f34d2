"""The durable record behind one interface: sessions, their trajectories and conversations,
mailboxes, kernels, schedules and blobs.

`Store` is what the daemon needs of a database; `Daemon.store_class` picks the implementation
(`SqliteStore` by default). The contract every implementation keeps:

- Writes are *enqueued* and return at once, in the order the daemon made them; one writer applies
  them off the event loop. A crash loses at most a suffix of the queue, never a write in the
  middle, so the store is always a consistent prefix of the daemon's history.
- `await flush()` returns once everything enqueued before it is durable: the daemon calls it
  before it acknowledges anything (a REST reply, a kernel call's answer).
- Reads are async and see every write enqueued before them.
- Event sequence numbers are assigned by the store when the event is enqueued, so listeners can
  be told `seq` before the write lands.
"""

from __future__ import annotations

from .base import Store
from .sqlite import SqliteStore

__all__ = ["SqliteStore", "Store"]
