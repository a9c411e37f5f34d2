"""Background tasks (no server): each is kept while it runs, and a stop cancels what is left
and waits for it to end."""

from __future__ import annotations

import asyncio

from prime_kernel.daemon.tasks import Background


def test_tasks_are_kept_while_they_run_and_cancelled_together() -> None:
    async def main() -> None:
        background = Background()
        ended: list[str] = []

        async def quick() -> None:
            ended.append("quick")

        async def slow() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                ended.append("slow")

        done = background.spawn(quick(), "quick")
        hanging = background.spawn(slow(), "slow")
        assert hanging.get_name() == "slow" and len(background) == 2
        await done  # (its done-callback, added first, ran before this await returned)
        assert len(background) == 1
        await background.cancel()
        assert hanging.cancelled() and ended == ["quick", "slow"] and len(background) == 0

    asyncio.run(main())
