"""Spine benchmark: rlm() latency and agent-turn cost against floors measured in the same run.

    python bench/bench_spine.py [--children 5] [--turns 30]

Prints, for this machine and this run:
- floor: a bare jupyter_client kernel start + wait_for_ready, and a bare execute round trip;
- the time for rlm() to return a handle (measured inside a kernel, median);
- the time from rlm() to the child's kernel being ready (RUNNING), with the warm pool and
  with pool size 0;
- one agent turn with the scripted model running `1+1`.
Nothing is asserted: the ratios are the result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from floors import kernel_start_floor, ready_client

from prime_kernel.cli.headless import serve
from prime_kernel.daemon.kernels import KernelRunner
from prime_kernel.models import scripted
from prime_kernel.protocol.requests import SessionRequest


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


async def bare_floor(starts: int, executes: int) -> dict[str, float]:
    kernel_start = await kernel_start_floor(starts)
    km = AsyncKernelManager(kernel_name="python3")
    kc = await ready_client(km)
    rtts = []
    for _ in range(executes):
        t = time.perf_counter()
        await kc.execute_interactive("1+1", output_hook=lambda msg: None)
        rtts.append(time.perf_counter() - t)
    kc.stop_channels()
    await km.shutdown_kernel(now=True)
    return {"kernel_start": kernel_start, "execute_rtt": median(rtts)}


async def wait_pool(daemon: Any, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while daemon.custody.pool._ready.qsize() < n:
        if time.monotonic() > deadline:
            raise TimeoutError("the warm pool did not fill")
        await asyncio.sleep(0.05)


async def state_ts(daemon: Any, sid: str, state: str) -> float:
    for e in await daemon.store.events(sid, kinds=["state"]):
        if e["data"]["state"] == state:
            return float(e["ts"])
    raise LookupError(f"{sid} never reached {state}")


async def child_ready(daemon: Any, nb: KernelRunner, model: str, n: int, warm: bool) -> list[float]:
    out = []
    for _ in range(n):
        if warm:
            await wait_pool(daemon, 1)
        res = await nb.execute(
            "import time\nt0 = time.time()\n"
            f"h = rlm('ready?', model={model!r})\nprint(t0, h.session_id)",
            timeout=120,
        )
        t0, sid = res.outputs[0]["text"].split()
        await daemon.runs.wait(sid, 120)
        out.append(await state_ts(daemon, sid, "RUNNING") - float(t0))
    return out


async def bench(app: Any, args: argparse.Namespace) -> dict[str, Any]:
    daemon = app.web_app.settings["prime_daemon"]
    answer_now = scripted.register_script("bench_answer", [{"code": "answer(1)"}])
    turns = scripted.register_script(
        "bench_turns", [{"code": "1+1"}] * args.turns + [{"code": "answer(2)"}]
    )
    km = daemon.kernel_manager
    kid = await km.start_kernel(kernel_name="prime-agent")
    nb = KernelRunner(km, kid)
    await nb.start()
    results: dict[str, Any] = {}

    # rlm() -> handle, measured where the user sees it: inside the calling kernel. Isolated:
    # one call at a time, each child finished first. Burst: calls back to back while the
    # earlier children start kernels and run on the same two cores.
    await wait_pool(daemon, daemon.custody.pool_size)
    code = (
        "import time\nts = []\nhs = []\n"
        f"for _ in range({args.handles}):\n"
        "    t = time.perf_counter()\n"
        f"    hs.append(rlm('x', model={answer_now!r}))\n"
        "    ts.append(time.perf_counter() - t)\n"
        "    {wait}\n"
        "print(ts)"
    )
    for label, wait in (("isolated", "hs[-1].result()"), ("burst", "pass")):
        await wait_pool(daemon, daemon.custody.pool_size)
        res = await nb.execute(code.replace("{wait}", wait), timeout=600)
        times = json.loads(res.outputs[0]["text"])
        await nb.execute("rlm.gather(*hs)", timeout=600)
        results[f"handle_{label}_median"] = median(times)
        results[f"handle_{label}_p95"] = p95(times)

    results["ready_warm"] = median(await child_ready(daemon, nb, answer_now, args.children, True))
    daemon.custody.pool.size = 0
    while not daemon.custody.pool._ready.empty():
        await daemon.custody.pool.discard(daemon.custody.pool._ready.get_nowait())
    results["ready_cold"] = median(await child_ready(daemon, nb, answer_now, args.children, False))
    daemon.custody.pool.size = daemon.custody.pool_size
    daemon.custody.pool.fill()

    # One agent turn: model call + run `1+1` + record, from consecutive observations.
    record = await daemon.admission.create_session(
        SessionRequest("turns", model=turns, max_turns=args.turns + 2)
    )
    await daemon.runs.wait(record["id"], 600)
    obs = [e["ts"] for e in await daemon.store.events(record["id"], kinds=["observation"])]
    results["turn"] = median([b - a for a, b in pairwise(obs)])
    await nb.stop()
    await km.shutdown_kernel(kid, now=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=5, help="children per ready measurement")
    parser.add_argument("--handles", type=int, default=20, help="rlm() calls timed for a handle")
    parser.add_argument("--turns", type=int, default=30, help="agent turns timed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    floor = asyncio.run(bare_floor(starts=5, executes=50))
    with tempfile.TemporaryDirectory() as root:
        res = serve(
            Path(root),
            [
                "--KernelCustody.pool_size=2",
                "--Daemon.max_concurrent=4",
                "--KernelCustody.keep_root_kernel=0",
            ],
            lambda app: bench(app, args),
        )
    res.update(floor)
    if args.json:
        print(json.dumps(res, indent=2))
        return
    ms = 1000.0
    print(f"{'measure':<44}{'value':>12}{'ratio to floor':>18}")
    rows = [
        ("bare kernel start + wait_for_ready", res["kernel_start"], None),
        ("bare execute_interactive round trip", res["execute_rtt"], None),
        ("rlm() -> Handle, isolated (median)", res["handle_isolated_median"], None),
        ("rlm() -> Handle, isolated (p95)", res["handle_isolated_p95"], None),
        ("rlm() -> Handle, burst of calls (median)", res["handle_burst_median"], None),
        ("rlm() -> Handle, burst of calls (p95)", res["handle_burst_p95"], None),
        (
            "rlm() -> child ready, warm pool",
            res["ready_warm"],
            res["ready_warm"] / res["kernel_start"],
        ),
        (
            "rlm() -> child ready, pool size 0",
            res["ready_cold"],
            res["ready_cold"] / res["kernel_start"],
        ),
        ("one agent turn (scripted, runs 1+1)", res["turn"], res["turn"] / res["execute_rtt"]),
    ]
    for name, value, ratio in rows:
        r = f"{ratio:>17.2f}x" if ratio is not None else ""
        print(f"{name:<44}{value * ms:>10.1f}ms{r}")


if __name__ == "__main__":
    main()
