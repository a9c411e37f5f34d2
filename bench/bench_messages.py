"""Messages and fan-out benchmark, through a real server, against floors from the same run.

    python bench/bench_messages.py [--messages 50] [--children 50] [--max-concurrent 4]

Prints:
- floor: one kernel -> daemon call (`usage()`, an authenticated GET) timed inside a kernel, and
  a bare jupyter_client kernel start;
- message latency: `send()` in one kernel to `recv()` returning in another (a notebook kernel
  and its child agent), median and 95th percentile;
- fan-out: `rlm.map` of N children with a scripted model that answers on its first turn, then
  `rlm.gather`, wall time from the calling cell.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from floors import kernel_start_floor

from prime_kernel.cli.headless import serve
from prime_kernel.daemon.kernels import KernelRunner
from prime_kernel.models import scripted

RECEIVER = """
import time
lat = []
for _ in range({n}):
    m = recv(120)
    lat.append(time.time() - float(m['message']))
answer(lat)
"""

SENDER = """
import time
while h.status != 'RUNNING' or not h.usage['own']['model_calls']:
    time.sleep(0.05)
time.sleep(0.5)  # the receiver's cell is now blocked in recv()
for _ in range({n}):
    send(h, repr(time.time()))
    time.sleep(0.02)
"""


def p95(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=20, method="inclusive")[-1]


async def run_cell(nb: KernelRunner, code: str, timeout: float = 900) -> str:
    res = await nb.execute(code, timeout=timeout)
    text = "".join(o.get("text", "") for o in res.outputs if o["output_type"] == "stream")
    errors = [o for o in res.outputs if o["output_type"] == "error"]
    if errors:
        raise RuntimeError("\n".join(errors[0]["traceback"]))
    return text


async def bench(app: Any, args: argparse.Namespace) -> dict[str, Any]:
    daemon = app.web_app.settings["prime_daemon"]
    receiver = scripted.register_script(
        "bench_receiver", [{"code": RECEIVER.format(n=args.messages)}]
    )
    quick = scripted.register_script("bench_quick", [{"text": "done"}])
    km = daemon.kernel_manager
    kid = await km.start_kernel(kernel_name="prime-agent")
    nb = KernelRunner(km, kid)
    await nb.start()
    out: dict[str, Any] = {}

    calls = json.loads(
        await run_cell(
            nb,
            "import json, time\nts = []\nfor _ in range(50):\n"
            "    t = time.perf_counter(); usage(); ts.append(time.perf_counter() - t)\n"
            "print(json.dumps(ts))",
        )
    )
    out["daemon_call"] = statistics.median(calls)

    await run_cell(nb, f"h = rlm('receive', model={receiver!r})")
    await run_cell(nb, SENDER.format(n=args.messages))
    latencies = json.loads(await run_cell(nb, "import json\nprint(json.dumps(h.result(120)))"))
    out["message_median"] = statistics.median(latencies)
    out["message_p95"] = p95(latencies)

    fan = await run_cell(
        nb,
        "t = time.perf_counter()\n"
        f"hs = rlm.map(['c'] * {args.children}, model={quick!r})\n"
        "rs = rlm.gather(hs, timeout=1800)\n"
        "print(time.perf_counter() - t, len(rs))",
        timeout=1800,
    )
    out["fan_out"] = float(fan.split()[0])
    await nb.stop()
    await km.shutdown_kernel(kid, now=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--children", type=int, default=50)
    parser.add_argument("--max-concurrent", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    kernel_start = asyncio.run(kernel_start_floor(3))
    with tempfile.TemporaryDirectory() as root:
        res = serve(
            Path(root),
            [
                "--KernelCustody.pool_size=2",
                f"--Daemon.max_concurrent={args.max_concurrent}",
                "--KernelCustody.keep_root_kernel=0",
                "--Mailbox.message_rate_limit=100000",
            ],
            lambda app: bench(app, args),
        )
    res["kernel_start"] = kernel_start
    if args.json:
        print(json.dumps(res, indent=2))
        return
    call = res["daemon_call"]
    rows = [
        ("floor: kernel -> daemon call (usage())", res["daemon_call"], None),
        ("floor: bare kernel start", kernel_start, None),
        (
            "send -> recv in another kernel (median)",
            res["message_median"],
            res["message_median"] / call,
        ),
        ("send -> recv in another kernel (p95)", res["message_p95"], res["message_p95"] / call),
        (
            f"fan out + gather {args.children} children (max_concurrent {args.max_concurrent})",
            res["fan_out"],
            res["fan_out"] / kernel_start,
        ),
    ]
    print(f"{'measure':<58}{'value':>12}{'ratio to floor':>18}")
    for name, value, ratio in rows:
        r = f"{ratio:>17.2f}x" if ratio is not None else ""
        print(f"{name:<58}{value * 1000:>10.1f}ms{r}")


if __name__ == "__main__":
    main()
