"""The global concurrency limit: at most `limit` sessions take turns at once (each holds a
slot), FIFO after that. (Timers that deliver messages are schedules.py, not this.)

A session blocked waiting on its children gives its slot back (`suspend`) so that a parent
waiting on children never starves them; it takes a slot again without queueing (`resume`),
so the limit can be briefly exceeded by parents that resume, never by new sessions.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable


class Slots:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the concurrency limit must be at least 1")
        self.limit = limit
        self._holders: set[str] = set()
        # session -> how many of its waits are in progress (a kernel may wait in several threads)
        self._suspended: dict[str, int] = {}
        self._queue: deque[tuple[str, asyncio.Future[None]]] = deque()
        # Told whenever a session starts to wait for a slot (the kernel pool starts kernels
        # for waiting sessions, so that a freed slot finds one ready).
        self.on_wait: Callable[[], None] | None = None

    @property
    def running(self) -> int:
        return len(self._holders)

    @property
    def queued(self) -> list[str]:
        return [sid for sid, _ in self._queue]

    @property
    def waiting(self) -> int:
        return len(self._queue)

    async def acquire(self, session_id: str) -> None:
        if len(self._holders) < self.limit and not self._queue:
            self._holders.add(session_id)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((session_id, fut))
        if self.on_wait is not None:
            self.on_wait()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(session_id)  # granted just as we were cancelled
            else:
                self._queue = deque((s, f) for s, f in self._queue if f is not fut)
            raise

    def release(self, session_id: str) -> None:
        self._holders.discard(session_id)
        self._suspended.pop(session_id, None)
        self._grant()

    def suspend(self, session_id: str) -> None:
        if session_id in self._suspended:
            self._suspended[session_id] += 1
        elif session_id in self._holders:
            self._holders.discard(session_id)
            self._suspended[session_id] = 1
            self._grant()

    def resume(self, session_id: str) -> None:
        waits = self._suspended.get(session_id)
        if waits is None:
            return
        if waits > 1:
            self._suspended[session_id] = waits - 1
        else:
            del self._suspended[session_id]
            self._holders.add(session_id)

    def _grant(self) -> None:
        while self._queue and len(self._holders) < self.limit:
            session_id, fut = self._queue.popleft()
            if fut.done():
                continue
            self._holders.add(session_id)
            fut.set_result(None)
