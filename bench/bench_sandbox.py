"""What the sandbox costs: agent kernel start and one cell round trip, sandboxed vs. not.

    python bench/bench_sandbox.py [--starts 8] [--executes 200]

One real server (the `prime-agent run` code path, pool size 0). Agent kernels are started as
the daemon starts them (`KernelPool.start_kernel`: launch + wait_for_ready), alternately with
`c.Sandbox.mode` "bwrap" and "none", so both see the same machine load; then one kernel of
each mode runs `1+1` many times (the daemon's own `KernelRunner.execute`, IPC transport in
both). Prints medians and the ratios sandboxed / not (goal: <= 1.2x start, <= 1.1x round trip).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prime_kernel.cli.headless import serve


async def start_once(daemon: Any, sandbox: Any, mode: str) -> float:
    sandbox.mode = mode
    t = time.perf_counter()
    runner = await daemon.custody.pool.start_kernel()
    elapsed = time.perf_counter() - t
    km = daemon.kernel_manager.get_kernel(runner.kernel_id)
    assert km.provisioner.sandboxed == (mode == "bwrap"), mode
    await daemon.custody.pool.discard(runner)
    return elapsed


async def round_trips(daemon: Any, sandbox: Any, mode: str, n: int) -> list[float]:
    sandbox.mode = mode
    runner = await daemon.custody.pool.start_kernel()
    for _ in range(20):  # warm up
        await runner.execute("1+1")
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await runner.execute("1+1")
        out.append(time.perf_counter() - t)
    await daemon.custody.pool.discard(runner)
    return out


async def main(args: argparse.Namespace, app: Any) -> None:
    daemon = app.web_app.settings["prime_daemon"]
    sandbox = app.web_app.settings["prime_sandbox"]
    sandbox.mode = "bwrap"
    if sandbox.probe().bwrap is None:
        print(f"no sandbox on this machine: {sandbox.probe().reason}")
        return
    print(sandbox.describe())
    starts: dict[str, list[float]] = {"bwrap": [], "none": []}
    await start_once(daemon, sandbox, "none")  # the first start warms the disk cache
    for _ in range(args.starts):
        for mode in ("bwrap", "none"):
            starts[mode].append(await start_once(daemon, sandbox, mode))
    rtt = {mode: await round_trips(daemon, sandbox, mode, args.executes) for mode in starts}
    s = {m: statistics.median(v) for m, v in starts.items()}
    r = {m: statistics.median(v) for m, v in rtt.items()}
    print(f"{'measure':<40} {'sandboxed':>10} {'not':>10} {'ratio':>7}  goal")
    print(
        f"{'agent kernel start + ready (median)':<40} {s['bwrap'] * 1e3:>8.0f}ms "
        f"{s['none'] * 1e3:>8.0f}ms {s['bwrap'] / s['none']:>6.2f}x  <= 1.2x"
    )
    print(
        f"{'execute 1+1 round trip (median)':<40} {r['bwrap'] * 1e3:>8.2f}ms "
        f"{r['none'] * 1e3:>8.2f}ms {r['bwrap'] / r['none']:>6.2f}x  <= 1.1x"
    )
    print(f"({args.starts} starts and {args.executes} round trips per mode)")


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=8)
    parser.add_argument("--executes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        serve(Path(root), ["--KernelCustody.pool_size=0"], lambda app: main(args, app))


if __name__ == "__main__":
    run()
