"""Per-turn overhead: one agent turn of Prime against `rlms` (the RLM paper's library) and the
floor, on the same OpenAI-compatible mock model over HTTP, in one run.

    python bench/bench_turn.py [--turns 40] [--rounds 3] [--profile FILE]

A turn = the model call + running a trivial cell (`x = <turn>`) + everything the harness does around
them, timed the same way for every client: the gap between one conversation's consecutive
requests as they reach the mock (bench/mock_model.py, its own process). Rounds alternate the
clients so that a change in the machine's load hits them alike; the figures are medians over
every turn of every round, with the 95th percentile, and the load average while they ran.

- floor: a bare HTTP POST to the mock (aiohttp, JSON decoded) + a bare jupyter_client execute
  round trip of `x = 1` (a harness cannot do less per turn); an `openai` SDK call and a
  `litellm.acompletion` to the mock are shown beside it;
- prime: a real jupyter_server with the extension, a root session on `openai/gpt-4o-mini` served
  by the mock (python tool calls), its cells in a Prime agent kernel;
- rlms: `rlm.RLM` with the `openai` backend on the mock (```repl blocks), in its default `local`
  environment (exec in the same process) and in its `ipython` environment with
  `kernel_mode="subprocess"` (a jupyter kernel, as Prime uses).

`--profile FILE` runs Prime's rounds under cProfile (the server and daemon live in this process;
CPU time of its event loop's thread) and writes the stats to FILE. Nothing is asserted: the
ratios are the result.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from floors import ready_client
from jupyter_client.manager import AsyncKernelManager
from mock_model import Mock, turn_gaps

from prime_kernel.cli.headless import serve, start_daemon
from prime_kernel.protocol.requests import SessionRequest

HERE = Path(__file__).resolve().parent
# The daemon validates the model's key before it starts a session; the mock ignores it.
os.environ.setdefault("OPENAI_API_KEY", "sk-mock-key-for-the-benchmark")
PRIME_MODEL = "openai/gpt-4o-mini"


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


def load() -> float:
    return os.getloadavg()[0]


# -- floors ------------------------------------------------------------------------------------
def client_floor(url: str, n: int) -> list[float]:
    import openai

    client = openai.OpenAI(base_url=url, api_key="sk-mock")
    messages = [{"role": "user", "content": "floor"}]
    times = []
    for _ in range(n + 3):
        t = time.perf_counter()
        client.chat.completions.create(model="floor", messages=messages)  # type: ignore[arg-type]
        times.append(time.perf_counter() - t)
    client.close()
    return times[3:]


async def http_floor(url: str, n: int) -> list[float]:
    """A bare HTTP POST of the request and JSON decoding of the reply (aiohttp, kept alive)."""
    import aiohttp

    body = json.dumps({"model": "floor", "messages": [{"role": "user", "content": "floor"}]})
    times = []
    async with aiohttp.ClientSession() as session:
        for _ in range(n + 3):
            t = time.perf_counter()
            async with session.post(
                url + "/chat/completions", data=body, headers={"Content-Type": "application/json"}
            ) as r:
                json.loads(await r.read())
            times.append(time.perf_counter() - t)
    return times[3:]


async def litellm_floor(url: str, n: int) -> list[float]:
    from prime_kernel.models.router import import_litellm

    litellm = import_litellm()
    messages = [{"role": "user", "content": "floor"}]
    times = []
    for _ in range(n + 3):
        t = time.perf_counter()
        await litellm.acompletion(model="openai/floor", messages=messages, api_base=url)
        times.append(time.perf_counter() - t)
    return times[3:]


async def execute_floor(n: int) -> list[float]:
    km = AsyncKernelManager(kernel_name="python3")
    kc = await ready_client(km)
    times = []
    for _ in range(n + 3):
        t = time.perf_counter()
        await kc.execute_interactive("x = 1", output_hook=lambda msg: None)
        times.append(time.perf_counter() - t)
    kc.stop_channels()
    await km.shutdown_kernel(now=True)
    return times[3:]


# -- Prime -------------------------------------------------------------------------------------
async def prime_round(app: Any, mock: Mock, turns: int, tag: str) -> list[float]:
    daemon = app.web_app.settings["prime_daemon"]
    mock.log()
    record = await daemon.admission.create_session(
        SessionRequest(f"benchmark turns {tag}", max_turns=turns + 2)
    )
    final = await daemon.runs.wait(record["id"], 600)
    if final["state"] != "DONE":
        raise RuntimeError(f"the Prime session ended {final['state']}: {final.get('error')}")
    return turn_gaps(mock.log())


# -- rlms --------------------------------------------------------------------------------------
def rlms_round(mock: Mock, turns: int, tag: str, environment: str) -> list[float]:
    from rlm import RLM

    env_kwargs = {"kernel_mode": "subprocess"} if environment == "ipython" else {}
    rlm = RLM(
        backend="openai",
        backend_kwargs={"model_name": "rlms-mock", "base_url": mock.url, "api_key": "sk-mock"},
        environment=environment,
        environment_kwargs=env_kwargs,
        max_iterations=turns + 2,
    )
    mock.log()
    result = rlm.completion(f"benchmark turns {tag}")
    if str(result.response) != "1":
        raise RuntimeError(f"rlms answered {result.response!r}")
    return turn_gaps(mock.log())


class Rounds:
    """The alternating rounds, against one headless server: the floors, Prime, rlms. What does
    not run on the server's loop (the openai SDK, rlms) runs in a thread meanwhile."""

    def __init__(self, args: argparse.Namespace, mock: Mock) -> None:
        self.args = args
        self.mock = mock
        self.samples: dict[str, list[float]] = {
            k: []
            for k in ("http", "client", "litellm", "execute", "prime", "rlms_local", "rlms_ipython")
        }
        self.loads: dict[str, list[float]] = {k: [] for k in self.samples}
        # CPU time of the event loop's thread: on a loaded machine wall time would charge
        # whatever runs when the process is descheduled.
        self.cpu_process = self.cpu_loop = 0.0
        self.profiler = cProfile.Profile(time.thread_time) if args.profile else None

    async def run(self, app: Any) -> None:
        args, mock, samples, loads = self.args, self.mock, self.samples, self.loads
        app.web_app.settings["prime_daemon"].host.model_kwargs = {"api_base": mock.url}
        await start_daemon(app)
        calls = args.floor_calls // args.rounds
        for i in range(args.rounds):
            tag = f"r{i}"
            loads["http"].append(load())
            samples["http"] += await http_floor(mock.url, calls)
            loads["client"].append(load())
            samples["client"] += await asyncio.to_thread(client_floor, mock.url, calls)
            loads["litellm"].append(load())
            samples["litellm"] += await litellm_floor(mock.url, calls)
            loads["execute"].append(load())
            samples["execute"] += await execute_floor(calls)
            loads["prime"].append(load())
            if self.profiler is not None:
                self.profiler.enable()
            cpu = time.process_time(), time.thread_time()
            samples["prime"] += await prime_round(app, mock, args.turns, tag)
            self.cpu_process += time.process_time() - cpu[0]
            self.cpu_loop += time.thread_time() - cpu[1]
            if self.profiler is not None:
                self.profiler.disable()
            for env in ("local", "ipython"):
                loads[f"rlms_{env}"].append(load())
                samples[f"rlms_{env}"] += await asyncio.to_thread(
                    rlms_round, mock, args.turns, tag, env
                )


def summary(xs: list[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "p95": p95(xs), "n": len(xs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40, help="turns per run")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--floor-calls", type=int, default=100)
    parser.add_argument("--profile", default="", help="write cProfile stats of Prime's rounds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    mock = Mock(args.turns)
    rounds = Rounds(args, mock)
    try:
        with tempfile.TemporaryDirectory() as root:
            serve(
                Path(root),
                [
                    f"--Admission.default_model={PRIME_MODEL}",
                    "--KernelCustody.pool_size=1",
                    "--KernelCustody.keep_root_kernel=0",
                ],
                rounds.run,
                start=False,
            )
    finally:
        mock.close()
    if rounds.profiler is not None:
        rounds.profiler.dump_stats(args.profile)
    samples, loads = rounds.samples, rounds.loads

    res = {k: summary(v) for k, v in samples.items()}
    floor = res["http"]["median"] + res["execute"]["median"]
    res["floor"] = {"median": floor}
    res["load"] = {k: round(statistics.mean(v), 2) for k, v in loads.items()}
    # CPU the server process spent per Prime turn: steadier than wall time on a busy machine.
    turns = args.turns * args.rounds
    res["prime_cpu"] = {
        "process": rounds.cpu_process / turns,
        "event_loop": rounds.cpu_loop / turns,
    }
    if args.json:
        print(json.dumps(res, indent=2))
        return
    ms = 1000.0
    rows = [
        ("bare HTTP POST to the mock (aiohttp)", "http"),
        ("openai SDK call to the mock", "client"),
        ("litellm.acompletion to the mock", "litellm"),
        ("bare execute round trip (x = 1)", "execute"),
        ("Prime turn", "prime"),
        ("rlms turn, local REPL", "rlms_local"),
        ("rlms turn, ipython subprocess kernel", "rlms_ipython"),
    ]
    print(f"{'per turn / call':<40}{'median':>9}{'p95':>9}{'load':>7}{'x floor':>9}{'x rlms':>8}")
    for label, key in rows:
        r = res[key]
        ratio = r["median"] / floor
        vs = r["median"] / res["rlms_local"]["median"]
        print(
            f"{label:<40}{r['median'] * ms:>7.1f}ms{r['p95'] * ms:>7.1f}ms"
            f"{res['load'][key]:>7.2f}{ratio:>8.2f}x{vs:>7.2f}x"
        )
    print(f"{'floor (HTTP POST + execute)':<40}{floor * ms:>7.1f}ms")
    cpu = res["prime_cpu"]
    print(
        f"Prime server CPU per turn: {cpu['process'] * ms:.1f}ms (all threads), "
        f"{cpu['event_loop'] * ms:.1f}ms (event loop thread)"
    )
    prime = res["prime"]["median"]
    print(
        f"Prime / rlms (local): {prime / res['rlms_local']['median']:.2f}x; "
        f"Prime / rlms (ipython kernel): {prime / res['rlms_ipython']['median']:.2f}x; "
        f"Prime / floor: {prime / floor:.2f}x"
    )


if __name__ == "__main__":
    main()
