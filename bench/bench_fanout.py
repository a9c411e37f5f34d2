"""Fan-out benchmark: agent kernels forked from a template vs. started from their command vs.
started on a Jupyter Kernel Gateway.

    python bench/bench_fanout.py [--sizes 10,50,100,200] [--starts 20] [--idle 10]
                                 [--sandbox auto|bwrap|none] [--launchers fork,plain,gateway]

One run measures, on this machine and at this load (printed with each phase):

- floor: a bare jupyter_client kernel start + wait_for_ready (no daemon, no sandbox);
- per launcher ("fork": `c.LocalLauncher.fork = True`; "plain": every kernel from its
  command; "gateway": `c.KernelPlacement.gateway_url`, every kernel started by a real
  `jupyter-kernel-gateway` on loopback with this checkout's Prime kernelspec, from its command
  and unsandboxed, as tests/gateway/ run it), each in a real server of its own (the
  `prime-agent run` code path, default settings: pool of 2, 4 sessions at once, 4
  kernels started ahead for queued sessions):
  - child kernel ready with the pool exhausted: `KernelPool.start_kernel()` (launch + the
    kernel answering), p50 and p95; and `rlm()` -> the child RUNNING, seen from the calling
    cell, with pool size 0;
  - `rlm.map` + `rlm.gather` of N trivial children, each one call to a model whose first turn
    runs `answer(1)` (`--model mock`, the default: bench/mock_model.py over HTTP, in a process
    of its own, as `openai/...`; `--model scripted`: the in-process `scripted` provider through
    litellm), wall time from the calling cell, for each N of --sizes; and the server
    process's CPU time (all its threads) meanwhile, per child: what the daemon spends on a
    child, which moves far less with the machine's load than the wall time does;
  - memory of an idle child kernel: PSS (/proc/<pid>/smaps_rollup) of each kernel's processes
    (with a sandbox: bwrap and the init too), over --idle kernels; for "fork" also the
    template's, and both together per kernel; for "gateway" the gateway's kernel processes
    (local here: found by their connection file). Reading another process's PSS needs the
    same user and, for Prime kernels (non-dumpable), CAP_SYS_PTRACE: run it as root, or it
    says n/a.

Ratios are to the floor, and fork and gateway to plain. Nothing is asserted. Each launcher
runs in a process of its own (with its gateway), one after the other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from floors import kernel_start_floor
from mock_model import Mock

from prime_kernel.cli.headless import serve
from prime_kernel.daemon.kernels import KernelRunner
from prime_kernel.models import scripted
from tests.gateway.server import GATEWAY_TOKEN, Gateway
from tests.procs import descendants

LAUNCHERS = ("fork", "plain", "gateway")


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


def cpu_seconds() -> float:
    """CPU time of this process (the server, every thread of it) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def gateway_kernel_pid(gateway: Gateway, kernel_id: str) -> int | None:
    """The process of the gateway's kernel `kernel_id`: the child of the gateway started on
    its connection file (kernel-<id>.json)."""
    assert gateway.process is not None
    needle = f"kernel-{kernel_id}.json".encode()
    for pid in descendants(gateway.process.pid):
        try:
            if needle in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


def kernel_pid(daemon: Any, runner: Any, gateway: Gateway | None) -> int | None:
    if gateway is not None:
        return gateway_kernel_pid(gateway, runner.kernel_id)
    return int(daemon.kernel_manager.get_kernel(runner.kernel_id).provisioner.pid)


async def drain_pool(daemon: Any) -> None:
    daemon.custody.pool.size = 0
    await asyncio.gather(*daemon.custody.pool._tasks, return_exceptions=True)
    while not daemon.custody.pool._ready.empty():
        await daemon.custody.pool.discard(daemon.custody.pool._ready.get_nowait())


async def refill_pool(daemon: Any, size: int, timeout: float = 300) -> None:
    daemon.custody.pool.size = size
    daemon.custody.pool.fill()
    deadline = time.monotonic() + timeout
    while daemon.custody.pool.ready < size:
        if time.monotonic() > deadline:
            raise TimeoutError("the warm pool did not fill")
        await asyncio.sleep(0.05)


async def run_cell(nb: KernelRunner, code: str, timeout: float = 3600) -> str:
    res = await nb.execute(code, timeout=timeout)
    errors = [o for o in res.outputs if o["output_type"] == "error"]
    if errors:
        raise RuntimeError("\n".join(errors[0]["traceback"]))
    return "".join(o.get("text", "") for o in res.outputs if o["output_type"] == "stream")


async def state_ts(daemon: Any, sid: str, state: str) -> float:
    for e in await daemon.store.events(sid, kinds=["state"]):
        if e["data"]["state"] == state:
            return float(e["ts"])
    raise LookupError(f"{sid} never reached {state}")


async def measure(
    app: Any, args: argparse.Namespace, gateway: Gateway | None, mock: Mock | None
) -> dict[str, Any]:
    daemon = app.web_app.settings["prime_daemon"]
    if mock is None:
        trivial = scripted.register_script("bench_trivial", [{"code": "answer(1)"}])
    else:
        trivial = "openai/gpt-4o-mini"  # its first reply runs answer(1)
        daemon.host.model_kwargs = {"api_base": mock.url}
    km = daemon.kernel_manager
    kid = await km.start_kernel(kernel_name="prime-agent")
    nb = KernelRunner(km, kid)
    await nb.start()
    pool_size = daemon.custody.pool_size
    out: dict[str, Any] = {"load": {"start": load()}}
    await refill_pool(daemon, pool_size)

    # Child kernel ready with the pool exhausted: every start pays the whole launch.
    await drain_pool(daemon)
    await daemon.custody.pool.discard(
        await daemon.custody.pool.start_kernel()
    )  # warm (a template starts)
    starts = []
    for _ in range(args.starts):
        t = time.perf_counter()
        runner = await daemon.custody.pool.start_kernel()
        starts.append(time.perf_counter() - t)
        await daemon.custody.pool.discard(runner)
    out["start_p50"], out["start_p95"] = statistics.median(starts), p95(starts)
    ready = []
    for _ in range(args.starts):
        res = await run_cell(
            nb,
            f"import time\nt0 = time.time()\nh = rlm('ready?', model={trivial!r})\n"
            "print(t0, h.session_id)",
        )
        t0, sid = res.split()
        await daemon.runs.wait(sid, 300)
        ready.append(await state_ts(daemon, sid, "RUNNING") - float(t0))
    out["rlm_ready_p50"], out["rlm_ready_p95"] = statistics.median(ready), p95(ready)
    out["load"]["starts"] = load()

    # Memory of idle kernels (no cell run yet beyond the start).
    idle = [await daemon.custody.pool.start_kernel() for _ in range(args.idle)]
    await asyncio.sleep(2)
    per_kernel = []
    for runner in idle:
        pid = kernel_pid(daemon, runner, gateway)
        if pid is None:
            continue
        sizes = [pss_kb(p) for p in [pid, *descendants(pid)]]
        if None not in sizes:
            per_kernel.append(sum(s for s in sizes if s is not None) / 1024)
    templates = []
    fork_server = getattr(daemon.launcher, "fork_server", None)
    if fork_server is not None:
        templates = [pss_kb(t.pid) for t in fork_server.templates()]
    out["pss_kernel"] = statistics.mean(per_kernel) if per_kernel else None
    out["pss_template"] = (
        sum(t for t in templates if t is not None) / 1024
        if templates and None not in templates
        else None
    )
    for runner in idle:
        await daemon.custody.pool.discard(runner)

    # Fan-out at the default pool size.
    await refill_pool(daemon, pool_size)
    out["fanout"] = {}
    out["fanout_cpu"] = {}
    for n in args.sizes:
        await refill_pool(daemon, pool_size)
        before = cpu_seconds()
        text = await run_cell(
            nb,
            "import time\nt = time.perf_counter()\n"
            f"hs = rlm.map(['c'] * {n}, model={trivial!r})\n"
            "rs = rlm.gather(hs, timeout=3600)\n"
            "assert rs == [1] * len(hs), rs[:3]\n"
            "print(time.perf_counter() - t)",
        )
        out["fanout"][str(n)] = float(text.split()[0])
        out["fanout_cpu"][str(n)] = (cpu_seconds() - before) / n
        out["load"][f"fanout {n}"] = load()
    await nb.stop()
    await km.shutdown_kernel(kid, now=True)
    out["sandbox"] = (
        "none (kernels on the gateway)"
        if gateway is not None
        else app.web_app.settings["prime_sandbox"].probe().mode
    )
    return out


def worker(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        argv = [
            f"--LocalLauncher.fork={args.worker == 'fork'}",
            f"--Sandbox.mode={args.sandbox}",
            "--KernelCustody.keep_root_kernel=0",
        ]
        gateway = None
        if args.worker == "gateway":
            (Path(tmp) / "gateway").mkdir()
            gateway = Gateway(Path(tmp) / "gateway")
            gateway.start()
            # public_url: the server's own URL (its default), loopback like the gateway.
            argv += [
                f"--KernelPlacement.gateway_url={gateway.url}",
                f"--GatewayLauncher.auth_token={GATEWAY_TOKEN}",
            ]
        mock = None
        if args.model == "mock":
            # A hosted model's setup: its key in the environment (the mock ignores it).
            os.environ.setdefault("OPENAI_API_KEY", "sk-mock-key-for-the-benchmark")
            mock = Mock(turns=1)
        try:
            res = serve(root, argv, lambda app: measure(app, args, gateway, mock))
        finally:
            if gateway is not None:
                gateway.stop()
            if mock is not None:
                mock.close()
    print(json.dumps(res))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,100,200")
    parser.add_argument("--starts", type=int, default=20, help="starts timed per measure")
    parser.add_argument("--idle", type=int, default=10, help="idle kernels for the PSS")
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    parser.add_argument("--launchers", default="fork,plain")
    parser.add_argument(
        "--model",
        default="mock",
        choices=["mock", "scripted"],
        help="the children's model: a mock OpenAI-compatible server over HTTP, or `scripted`",
    )
    parser.add_argument("--worker", choices=LAUNCHERS, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.sizes = [int(n) for n in args.sizes.split(",") if n]
    unknown = set(args.launchers.split(",")) - set(LAUNCHERS)
    if unknown:
        parser.error(f"unknown launchers {sorted(unknown)}; choose from {','.join(LAUNCHERS)}")
    if args.worker:
        worker(args)
        return

    print(f"load {load()}: floor (bare kernel start + wait_for_ready)", file=sys.stderr)
    floor = asyncio.run(kernel_start_floor(5))
    results: dict[str, Any] = {"floor": floor, "floor_load": load()}
    for launcher in args.launchers.split(","):
        print(f"load {load()}: {launcher}", file=sys.stderr)
        argv = [sys.executable, __file__, "--worker", launcher, "--sandbox", args.sandbox]
        argv += ["--model", args.model]
        argv += ["--sizes", ",".join(map(str, args.sizes))]
        argv += ["--starts", str(args.starts), "--idle", str(args.idle)]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{launcher} failed:\n{done.stderr[-4000:]}")
        results[launcher] = json.loads(done.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(results, indent=2))
        return
    report(results, args)


def report(r: dict[str, Any], args: argparse.Namespace) -> None:
    floor = r["floor"]
    names = [n for n in LAUNCHERS if n in r]
    # Each launcher beside plain (the same kernel, started from its command by the daemon).
    pairs = [(n, "plain") for n in ("fork", "gateway") if n in r and "plain" in r]
    print(
        f"floor: bare kernel start + wait_for_ready {floor * 1e3:.0f} ms (load {r['floor_load']})"
    )
    print(f"children's model: {args.model}")
    for name in names:
        print(
            f"{name}: sandbox {r[name]['sandbox']}; load "
            + "; ".join(f"{k} {v}" for k, v in r[name]["load"].items())
        )
    header = f"{'measure':<44}" + "".join(f"{n:>10}{n + '/floor':>15}" for n in names)
    header += "".join(f"{a + '/' + b:>15}" for a, b in pairs)
    print(header)

    def line(label: str, values: dict[str, float | None], unit: str, ratio: bool) -> str:
        out = f"{label:<44}"
        for name in names:
            v = values.get(name)
            if name not in values:  # nothing of the kind (a template, for plain)
                out += f"{'':>25}"
            elif v is None:
                out += f"{'n/a':>10}{'':>15}"
            elif unit == "ms":
                out += f"{v * 1e3:>8.0f}ms" + (f"{v / floor:>14.2f}x" if ratio else f"{'':>15}")
            elif unit == "s":
                out += f"{v:>9.1f}s" + (f"{v / floor:>14.1f}x" if ratio else f"{'':>15}")
            else:
                out += f"{v:>8.1f}MB{'':>15}"
        for a, b in pairs:
            va, vb = values.get(a), values.get(b)
            out += f"{va / vb:>14.2f}x" if va is not None and vb else f"{'':>15}"
        return out

    def row(label: str, key: str, unit: str = "ms", ratio: bool = True) -> None:
        print(line(label, {n: r[n].get(key) for n in names}, unit, ratio))

    row("child kernel ready, pool exhausted (p50)", "start_p50")
    row("child kernel ready, pool exhausted (p95)", "start_p95")
    row("rlm() -> child RUNNING, pool 0 (p50)", "rlm_ready_p50")
    row("rlm() -> child RUNNING, pool 0 (p95)", "rlm_ready_p95")
    for n in args.sizes:
        print(
            line(
                f"rlm.map + gather, {n} children",
                {name: r[name]["fanout"][str(n)] for name in names},
                "s",
                True,
            )
        )
    for n in args.sizes:
        print(
            line(
                f"server CPU per child, {n} children",
                {name: r[name].get("fanout_cpu", {}).get(str(n)) for name in names},
                "ms",
                False,
            )
        )
    row("idle child kernel PSS", "pss_kernel", unit="MB")
    fork = r.get("fork", {})
    if fork.get("pss_template") is not None:
        print(
            line(
                "template PSS (shared by every kernel)", {"fork": fork["pss_template"]}, "MB", False
            )
        )
        if fork.get("pss_kernel") is not None:
            values = {n: r[n].get("pss_kernel") for n in names}
            values["fork"] = fork["pss_kernel"] + fork["pss_template"] / args.idle
            print(line("idle child kernel PSS + template share", values, "MB", False))


if __name__ == "__main__":
    main()
