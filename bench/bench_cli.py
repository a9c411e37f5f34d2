"""How long `prime-agent` takes to answer, as real processes, against a floor from the same run.

    python bench/bench_cli.py [--repeat 5] [--json]

Prints, each the median (and the fastest) of `--repeat` runs, wall time of the whole process:
- floor: `python -c pass`, the interpreter starting and stopping;
- `--help`, and `sessions`, `show ID`, `export ID` with no server (the store read directly) and
  with a server serving the root (asked over REST);
- the time to the one-line error for an unknown model: an embedded name (`local/smollm`), a
  scripted one, and a hosted one litellm must be imported to judge (`nonexistent-model`), and
  for a missing API key;
- `run` of a two-turn scripted task: headless (this process starts a server) and submitted to
  the running server;
- `run` on a terminal (a pty), headless: its first byte, and its exit after its answer and
  after Ctrl-C (a scripted model whose cell sleeps; the signal once its turn is shown);
- the commands that only read or edit files: `harness list`, `refinements`, `doctor`.
The machine's load average is printed before and after. Nothing is asserted; the goals
(issue 23: first byte, both exits and the admin commands each at most 1 s on a quiet machine)
are printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import secrets
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

SCRIPTS = {
    "two": {"turns": [{"code": "x = 6 * 7\nprint(x)"}, {"code": "answer(x)"}]},
    "busy": {"turns": [{"code": "import time\ntime.sleep(600)"}]},
}
# Seconds each "terminal:" measure should stay within (issue 23's goals).
GOALS = {
    "terminal: run, first byte": 1.0,
    "terminal: run, exit after the answer": 1.0,
    "terminal: run, exit after Ctrl-C": 1.0,
    "harness list": 1.0,
    "refinements": 1.0,
    "doctor": 1.0,
}


class Bench:
    def __init__(self, folder: Path, repeat: int) -> None:
        self.root = folder / "work"
        self.root.mkdir()
        runtime = folder / "runtime"
        runtime.mkdir()
        scripts = folder / "scripts.json"
        scripts.write_text(json.dumps(SCRIPTS))
        self.env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime)}
        self.env["PRIME_SCRIPTS"] = str(scripts)
        self.env.pop("PRIME_MODEL", None)
        self.env = {k: v for k, v in self.env.items() if not k.startswith("OPENAI")}
        self.runtime = runtime
        self.folder = folder
        self.repeat = repeat
        self.results: dict[str, dict[str, float]] = {}

    def once(self, argv: list[str], ok: tuple[int, ...] = (0,)) -> float:
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=600)
        took = time.perf_counter() - start
        if proc.returncode not in ok:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
        return took

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "prime_kernel.cli.main", "--root", str(self.root), *args]

    def measure(self, name: str, argv: list[str], ok: tuple[int, ...] = (0,)) -> None:
        times = [self.once(argv, ok) for _ in range(self.repeat)]
        self.results[name] = {"median": statistics.median(times), "min": min(times)}
        print(f"  {name}: {self.results[name]['median']:.2f} s", file=sys.stderr)

    def terminal(self, argv: list[str], interrupt_on: bytes | None = None) -> dict[str, float]:
        """`argv` on a pseudo-terminal: seconds to its first byte, and from its answer (or from
        the Ctrl-C sent once `interrupt_on` is shown) to its exit."""
        start = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # the child: the command, as a person runs it in a terminal
            os.execve(argv[0], argv, self.env)
        seen, first, mark = b"", None, None
        while True:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the command has exited
                break
            if not chunk:
                break
            now = time.perf_counter() - start
            first = now if first is None else first
            seen += chunk
            if mark is None and interrupt_on is None and b"Answer: " in seen:
                mark = now
            if mark is None and interrupt_on is not None and interrupt_on in seen:
                os.kill(pid, signal.SIGINT)
                mark = now
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        end = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 130) or first is None or mark is None:
            raise SystemExit(f"{' '.join(argv)} exited {code}: {seen.decode(errors='replace')}")
        return {"first": first, "exit": end - mark}

    def measure_terminal(self) -> None:
        runs = [
            self.terminal(self.cli("run", "t", "--model", "scripted/two"))
            for _ in range(self.repeat)
        ]
        stops = [
            self.terminal(
                self.cli("run", "t", "--model", "scripted/busy"),
                interrupt_on=b"turn 1 \xc2\xb7 model",
            )
            for _ in range(self.repeat)
        ]
        for name, times in (
            ("terminal: run, first byte", [r["first"] for r in runs + stops]),
            ("terminal: run, exit after the answer", [r["exit"] for r in runs]),
            ("terminal: run, exit after Ctrl-C", [r["exit"] for r in stops]),
        ):
            self.results[name] = {"median": statistics.median(times), "min": min(times)}
            print(f"  {name}: {self.results[name]['median']:.2f} s", file=sys.stderr)

    def reading(self, where: str, session_id: str) -> None:
        target = self.folder / "out.ipynb"
        self.measure(f"sessions ({where})", self.cli("sessions"))
        self.measure(f"show ID ({where})", self.cli("show", session_id))
        self.measure(
            f"export ID ({where})", self.cli("export", session_id, "-o", str(target), "--force")
        )


def start_server(bench: Bench) -> tuple[subprocess.Popen[bytes], str]:
    token = secrets.token_hex(16)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--ServerApp.root_dir={bench.root}",
            "--ServerApp.ip=127.0.0.1",
            "--ServerApp.port=0",
            "--ServerApp.open_browser=False",
            "--ServerApp.allow_root=True",
            f"--IdentityProvider.token={token}",
            "--ServerApp.jpserver_extensions={'prime_kernel': True}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=bench.env,
    )
    info = bench.runtime / f"jpserver-{server.pid}.json"
    while not info.exists():
        if server.poll() is not None:
            raise SystemExit("the server did not start")
        time.sleep(0.2)
    time.sleep(0.2)
    url = json.loads(info.read_text())["url"]
    req = urllib.request.Request(url + "api/prime/models")
    req.add_header("Authorization", f"token {token}")
    urllib.request.urlopen(req, timeout=300).read()  # the daemon has started
    return server, url


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp), args.repeat)
        print("measuring (each the median of runs)…", file=sys.stderr)
        bench.measure("floor: python -c pass", [sys.executable, "-c", "pass"])
        bench.measure("--help", bench.cli("--help"))
        for name, model, code in (
            ("unknown model error: local/smollm", "local/smollm", 2),
            ("unknown model error: scripted/nope", "scripted/nope", 2),
            ("unknown model error: nonexistent-model (litellm)", "nonexistent-model", 2),
            ("missing key error: openai/gpt-4o-mini (litellm)", "openai/gpt-4o-mini", 2),
        ):
            bench.measure(name, bench.cli("run", "x", "--model", model), ok=(code,))
        bench.measure(
            "run, two scripted turns, headless",
            bench.cli("run", "t", "--model", "scripted/two", "-q"),
        )
        rows = json.loads(
            subprocess.run(
                bench.cli("sessions", "--json"), capture_output=True, env=bench.env, check=True
            ).stdout
        )
        session_id = rows[0]["id"]
        bench.reading("no server", session_id)
        bench.measure_terminal()
        bench.measure("harness list", bench.cli("harness", "list"))
        bench.measure("refinements", bench.cli("refinements"))
        bench.measure("doctor", bench.cli("doctor"), ok=(0, 1))
        server, _ = start_server(bench)
        try:
            bench.reading("server running", session_id)
            bench.measure(
                "run, two scripted turns, on the running server",
                bench.cli("run", "t", "--model", "scripted/two", "-q"),
            )
        finally:
            server.terminate()
            server.wait(60)
    load_after = os.getloadavg()
    floor = bench.results["floor: python -c pass"]["median"]
    if args.json:
        print(json.dumps({"results": bench.results, "load": [load_before, load_after]}, indent=2))
        return 0
    print(
        f"\nload average (1, 5, 15 min): before {_load(load_before)}, after {_load(load_after)}; "
        f"{os.cpu_count()} CPUs\n"
    )
    print("| measure | median | fastest | ratio to floor | goal |")
    print("|---|---|---|---|---|")
    for name, r in bench.results.items():
        ratio = "" if name.startswith("floor") else f"{r['median'] / floor:.1f}x"
        goal = f"≤ {GOALS[name]:g} s" if name in GOALS else ""
        if goal:
            goal += " (met)" if r["median"] <= GOALS[name] else " (NOT met)"
        print(f"| {name} | {r['median']:.2f} s | {r['min']:.2f} s | {ratio} | {goal} |")
    return 0


def _load(values: Any) -> str:
    return " / ".join(f"{v:.1f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
