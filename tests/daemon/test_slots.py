"""The concurrency slots: at most `limit` sessions hold one, the rest wait in FIFO order; a
session waiting on its children gives its slot back until its last wait ends."""

from __future__ import annotations

import asyncio

import pytest

from prime_kernel.daemon.slots import Slots


async def test_waiters_get_freed_slots_in_the_order_they_asked() -> None:
    slots = Slots(1)
    asked = asyncio.Event()
    slots.on_wait = asked.set  # told once a session is in the queue
    await slots.acquire("a")
    second = asyncio.ensure_future(slots.acquire("b"))
    await asked.wait()
    asked.clear()
    third = asyncio.ensure_future(slots.acquire("c"))
    await asked.wait()
    assert slots.queued == ["b", "c"] and slots.running == 1
    slots.release("a")
    await second
    assert not third.done() and slots.queued == ["c"]
    slots.release("b")
    await third
    assert slots.running == 1 and slots.waiting == 0


async def test_a_session_waiting_in_two_threads_takes_its_slot_back_after_both() -> None:
    slots = Slots(1)
    await slots.acquire("p")
    slots.suspend("p")
    slots.suspend("p")  # a second thread of the same kernel waits too
    assert slots.running == 0
    slots.resume("p")
    assert slots.running == 0  # still waiting in the other thread
    slots.resume("p")
    assert slots.running == 1


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Slots(0)
