"""Floors the benchmarks compare against: bare jupyter_client kernels, no daemon in the way.

Imported by the bench scripts, which run as `python bench/bench_x.py` (so this directory is on
sys.path).
"""

from __future__ import annotations

import statistics
import time

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager


async def ready_client(km: AsyncKernelManager) -> AsyncKernelClient:
    """Start km's kernel and return a client once it answers."""
    await km.start_kernel()
    kc = km.client()
    kc.start_channels(hb=False)  # as the daemon does: a fair floor
    await kc.wait_for_ready(timeout=60)
    return kc


async def kernel_start_floor(n: int) -> float:
    """Median of n bare kernel starts, each up to wait_for_ready."""
    times = []
    for _ in range(n):
        km = AsyncKernelManager(kernel_name="python3")
        t = time.perf_counter()
        kc = await ready_client(km)
        times.append(time.perf_counter() - t)
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
    return statistics.median(times)
