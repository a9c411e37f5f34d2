"""The store's writer: one thread that owns the only connection to the database.

Writes are queued to it and committed in groups (everything queued when the thread gets to it
goes in one transaction), each write in a savepoint so that a bad one is rolled back alone;
reads queue behind the writes before them, so they see them. A commit that fails for a reason
that may pass (busy, a full disk, I/O) keeps its writes, in order, and is tried again; a damaged
file stops all writing, and every flush then says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...protocol.errors import InsufficientStorage, StoreDamaged, Unavailable
from . import repair

log = logging.getLogger(__name__)

# Most operations folded into one transaction.
_GROUP = 1000


class _Op:
    """A unit of work for the store thread: `fn(db)`. A write has no `future` (writes are
    committed in groups, unanswered); a read (or, with no `fn`, a flush barrier) answers its
    `future`."""

    __slots__ = ("fn", "future")

    def __init__(
        self,
        fn: Callable[[sqlite3.Connection], Any] | None,
        future: concurrent.futures.Future[Any] | None = None,
    ) -> None:
        self.fn = fn
        self.future = future


class Writer:
    """The store thread of the database at `path`. `setup(db)` runs once, in the transaction
    that opens it (migrations), and `start()` returns what it returns."""

    def __init__(
        self, path: Path, *, exclusive: bool, setup: Callable[[sqlite3.Connection], Any]
    ) -> None:
        self.path = path
        self.exclusive = exclusive
        self.setup = setup
        self._queue: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        # Why the last commit failed, while commits are failing (None when healthy), and
        # whether for want of disk space.
        self.failure: str | None = None
        self.full = False
        # Set for good once the file is found damaged: what to tell people, and how many
        # writes could not be stored since.
        self.damage: str | None = None
        self.unwritten = 0
        self._logged = 0.0

    def start(self) -> Any:
        """Open the database on a new thread; what `setup` returned."""
        ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="prime-store", daemon=True
        )
        self._thread.start()
        return ready.result()

    async def flush(self, timeout: float | None = None) -> None:
        if self.damage is not None:
            raise StoreDamaged(self.damage, unwritten=self.unwritten)
        future = self.submit(None)
        try:
            await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except asyncio.TimeoutError:
            raise Unavailable(
                f"the store at {self.path} cannot be written ({self.failure or 'busy'}); "
                "nothing was acknowledged"
            ) from None

    async def close(self) -> None:
        if self._thread is None:
            return
        try:
            await self.flush(timeout=10)
        except (InsufficientStorage, StoreDamaged, Unavailable) as e:
            log.error("closing the store: %s", e)  # the writer gives up on what is left
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)
        self._thread = None

    def _connect(self) -> tuple[sqlite3.Connection, Any]:
        new = not self.path.exists()
        db = sqlite3.connect(self.path, isolation_level=None, timeout=0.2)
        db.row_factory = sqlite3.Row
        if new:
            self.path.chmod(0o600)
        try:
            if self.exclusive:
                # Before the first access, so the WAL index lives in our memory, not a shared
                # file, and the lock taken by the first write below is never released.
                db.execute("PRAGMA locking_mode=EXCLUSIVE")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            result = self.setup(db)
            db.execute("COMMIT")
        except sqlite3.OperationalError as e:
            db.close()
            if "locked" in str(e) or "busy" in str(e):
                raise Unavailable(
                    f"another Prime daemon is using the store at {self.path} (a server or "
                    "`prime-agent run` on the same root); stop it or use another root"
                ) from None
            if _kind(e) == _FULL:
                raise InsufficientStorage(disk_full(self.path, e)) from None
            raise
        except sqlite3.DatabaseError as e:  # SQLITE_CORRUPT, SQLITE_NOTADB
            db.close()
            raise StoreDamaged(repair.damaged(self.path, str(e))) from None
        except BaseException:
            db.close()
            raise
        return db, result

    # -- what the store asks of its thread -----------------------------------------------------
    def submit(
        self, fn: Callable[[sqlite3.Connection], Any] | None
    ) -> concurrent.futures.Future[Any]:
        """A read (a flush barrier without `fn`), answered in the order of the writes."""
        if self._thread is None:
            raise Unavailable("the store is not open")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put(_Op(fn, future))
        return future

    def write(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        if self._thread is None:
            raise Unavailable("the store is not open")
        self._queue.put(_Op(fn))

    async def read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        return await asyncio.wrap_future(self.submit(fn))

    # -- the thread -------------------------------------------------------------------------------
    def _serve(self, ready: concurrent.futures.Future[Any]) -> None:
        try:
            db, result = self._connect()
        except BaseException as e:
            ready.set_exception(e)
            return
        ready.set_result(result)
        pending: list[_Op] = []  # writes not committed yet, in order
        waiting: list[_Op] = []  # reads and flushes enqueued after them
        delay = 0.0
        stop = False
        give_up = 0.0  # once closing: when to stop trying to commit what is left
        while not stop or pending:
            try:
                ops = self._take(delay if pending else None)
            except BaseException:  # never end the only writer: say why, and go on
                log.exception("the store's writer failed to read its queue")
                ops = []
            for op in ops:
                if op is None:
                    stop, give_up = True, time.monotonic() + 10
                elif op.future is None:  # a write
                    if self.damage is None:
                        pending.append(op)
                    else:
                        self.unwritten += 1
                else:
                    waiting.append(op)
            if pending and not self._commit(db, pending):
                if self.damage is not None:
                    self.unwritten += len(pending)
                    pending = []
                else:
                    # Full or busy: the writes stay, in order, and are tried again (a full
                    # disk refuses what waits now, so no request hangs on it).
                    delay = min(max(delay * 2, 0.05), 2.0)
                    if self.full:
                        self._answer_whiledisk_full(db, pending, waiting)
                        waiting = []
                    if stop and (self.full or time.monotonic() > give_up):
                        break  # closing, and what is pending cannot be committed
                    continue
            pending, delay = [], 0.0
            for op in waiting:
                self._answer(db, op)
            waiting = []
        if pending:
            self.unwritten += len(pending)
            log.error("the store closed with %d writes it could not commit", len(pending))
        db.close()

    def _take(self, timeout: float | None) -> list[_Op | None]:
        """The next operations in the queue: at least one (waiting up to `timeout`; None:
        as long as it takes), at most _GROUP."""
        try:
            ops: list[_Op | None] = [self._queue.get(timeout=timeout)]
        except queue.Empty:
            return []
        while len(ops) < _GROUP:
            try:
                ops.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return ops

    def _answer(self, db: sqlite3.Connection, op: _Op) -> None:
        assert op.future is not None
        # Its reader may have gone (a cancelled task, a flush past its timeout): answering a
        # cancelled future raises, and would end this thread and with it the store.
        if not op.future.set_running_or_notify_cancel():
            return
        if op.fn is None:  # a flush barrier: everything before it is committed
            if self.damage is not None:
                op.future.set_exception(StoreDamaged(self.damage, unwritten=self.unwritten))
            else:
                op.future.set_result(None)
            return
        try:
            result = op.fn(db)
        except sqlite3.DatabaseError as e:
            if _kind(e) == _DAMAGED:
                self._damaged(e)
                op.future.set_exception(StoreDamaged(self.damage or str(e)))
            else:
                op.future.set_exception(e)
        except BaseException as e:
            op.future.set_exception(e)
        else:
            op.future.set_result(result)

    def _answer_whiledisk_full(
        self, db: sqlite3.Connection, pending: list[_Op], waiting: list[_Op]
    ) -> None:
        """While commits fail for want of space: a flush is refused at once (507), and a read
        is answered in a transaction that applies the pending writes and is rolled back (it
        sees them all; they fit in memory — if not, it is refused too)."""
        full = InsufficientStorage(self.failure or "the disk is full")
        reads = [op for op in waiting if op.fn is not None]
        for op in waiting:
            if op.fn is None and op.future is not None and op.future.set_running_or_notify_cancel():
                op.future.set_exception(full)
        if not reads:
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            for op in pending:
                self._apply(db, op)
        except sqlite3.Error:
            for op in reads:
                assert op.future is not None
                if op.future.set_running_or_notify_cancel():
                    op.future.set_exception(full)
            reads = []
        try:
            for op in reads:
                self._answer(db, op)
        finally:
            with contextlib.suppress(sqlite3.Error):
                if db.in_transaction:
                    db.execute("ROLLBACK")

    def _commit(self, db: sqlite3.Connection, writes: list[_Op]) -> bool:
        """Apply `writes` in one transaction; whether it committed. A write is never dropped
        for a failure that may pass (busy, disk full, I/O): the caller tries again. A damaged
        file stops all writing (`damage`), and every flush then says so."""
        try:
            db.execute("BEGIN IMMEDIATE")
            for op in writes:
                self._apply(db, op)
            db.execute("COMMIT")
        except sqlite3.Error as e:
            with contextlib.suppress(sqlite3.Error):
                if db.in_transaction:
                    db.execute("ROLLBACK")
            kind = _kind(e)
            if kind == _DAMAGED:
                self._damaged(e)
                return False
            failure = disk_full(self.path, e) if kind == _FULL else f"{e}"
            if failure != self.failure or time.monotonic() - self._logged > 60:
                log.error("the store could not commit %d writes: %s; retrying", len(writes), e)
                self._logged = time.monotonic()
            self.failure, self.full = failure, kind == _FULL
            return False
        if self.failure is not None:
            log.warning("the store commits again (after: %s)", self.failure)
        self.failure, self.full = None, False
        return True

    def _damaged(self, e: sqlite3.Error) -> None:
        if self.damage is None:
            self.damage = repair.damaged(self.path, str(e))
            log.error("%s; nothing more is written to it", self.damage)
        self.failure = self.damage

    def _apply(self, db: sqlite3.Connection, op: _Op) -> None:
        assert op.fn is not None
        db.execute("SAVEPOINT op")
        try:
            op.fn(db)
        except (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError):
            db.execute("ROLLBACK TO op")  # a bad write (a bug) is dropped alone, loudly
            log.exception("a store write failed and was skipped")
        except sqlite3.Error:
            raise  # the database's trouble, not the write's: the whole commit fails
        except Exception:
            db.execute("ROLLBACK TO op")
            log.exception("a store write failed and was skipped")
        db.execute("RELEASE op")


# How a failed commit is treated, by SQLite's result code.
_FULL = "full"  # SQLITE_FULL: tried again until there is space; requests meanwhile get 507
_DAMAGED = "damaged"  # SQLITE_CORRUPT, SQLITE_NOTADB: nothing more is written; 503, repair
_PASSING = "passing"  # busy, locked, I/O: tried again


def _kind(e: sqlite3.Error) -> str:
    code = getattr(e, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(e)
    if primary == 13 or "database or disk is full" in text:
        return _FULL
    if primary in (11, 26) or "malformed" in text or "not a database" in text:
        return _DAMAGED
    return _PASSING


def disk_full(path: Path, e: BaseException) -> str:
    return f"the disk under {path.parent} is full ({e}); free some space and try again"
