"""A model reply as it streams, told to the event bus in coalesced pieces (never stored).

The router calls `ReplyStream.push` with each piece of text the provider sends (dozens a
second). Telling the bus costs about half a millisecond of the server's loop per notification,
so pieces are merged: the first goes at once (the reply has begun), then at most one
notification every `interval` seconds carries what came meanwhile, and `close` sends the rest
with `done: true`, whatever ended the call (its reply, a failure, a cancel).

A secret may arrive split across pieces: each notification is scrubbed, and text ending in the
beginning of a secret waits for the next piece (or `close`) so the secret is never sent in
halves that each look harmless.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..util.redact import Redactor
from .events import EventLog
from .records import SessionRecord

# Seconds between two notifications of one stream: 20 a second at most.
INTERVAL = 0.05


class ReplyStream:
    """The pieces of model call `call` of a session, on their way to the delta listeners."""

    def __init__(
        self,
        log: EventLog,
        record: SessionRecord,
        call: int,
        redactor: Redactor,
        *,
        interval: float = INTERVAL,
    ) -> None:
        self.log = log
        self.record = record
        self.call = call
        self.redactor = redactor
        self.interval = interval
        self.seq = 0
        self.text = ""  # the reply so far, as the provider sent it
        self._sent = 0  # how much of `text` was told
        self._last = 0.0  # when the latest notification went (loop time)
        self._timer: asyncio.TimerHandle | None = None
        self.closed = False

    def push(self, piece: str) -> None:
        if self.closed or not piece:
            return
        self.text += piece
        if self._timer is not None:
            return  # a flush is due: it takes this piece too
        loop = asyncio.get_running_loop()
        wait = self._last + self.interval - loop.time()
        if self.seq == 0 or wait <= 0:
            self._flush(done=False)
        else:
            self._timer = loop.call_later(wait, self._flush, False)

    def close(self) -> None:
        """The last notification (`done`), with whatever was not told yet; once."""
        if self.closed:
            return
        self._flush(done=True)
        self.closed = True

    def _flush(self, done: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        end = len(self.text)
        if not done:
            end -= self.redactor.unfinished(self.text[self._sent :])
        piece = self.text[self._sent : end]
        if not piece and not done:
            return
        self._sent = end
        self.seq += 1
        self._last = asyncio.get_running_loop().time()
        self.log.delta(self.record, self.call, self.seq, self.redactor.text(piece), done)

    def __enter__(self) -> ReplyStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
