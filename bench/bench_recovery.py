"""Recovery benchmark: how fast the daemon gets back to work after faults, and how long a
client listing sessions waits while they happen. A real server in a process of its own.

    python bench/bench_recovery.py [--sessions 200]

Prints, for this machine and this run:
- restart to ready: SIGKILL of a server holding `--sessions` finished sessions and a running
  fan-out, until the new daemon runs sessions again (floor: the first cold start);
- time to notice a dead kernel: `os._exit` in a cell, until the daemon records the death;
- time to free a kernel that ignores interrupts: DELETE of its session, until its process is
  gone;
- the longest wait of GET /api/prime/sessions (polled every 20 ms) during each fault (goal:
  at most 100 ms), beside the same poll on an idle server.
Nothing is asserted: the figures are the result.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.recovery.server import ServerProcess

SPIN = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
SCRIPTS: dict[str, Any] = {
    "echo": {"turns": [{"text": "echo"}]},
    "quick": {"turns": [{"code": "answer(1)"}]},
    "slow": {"turns": [{"code": "import time\ntime.sleep(30)"}, {"code": "answer(2)"}]},
    "fan": {
        "turns": [
            {"code": "hs = rlm.map('slow', contexts=list(range(6)), model='scripted/slow')"},
            {"code": "answer(len(rlm.gather(*hs)))"},
        ]
    },
    # The time of death goes to a file: output sent just before os._exit may never leave the
    # kernel (ZMQ's queue dies with the process).
    "die": {
        "turns": [
            {"code": "import os, time\nopen('died_at', 'w').write(repr(time.time()))\nos._exit(1)"}
        ]
    },
    "spin": {"turns": [{"code": SPIN}]},
    "big": {"turns": [{"code": "answer(b'x' * 150_000_000)"}]},
}


class Poller:
    """GET /api/prime/sessions every 20 ms in a thread; the longest wait."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.waits: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                self.server.get("sessions?limit=50")
            except Exception:
                pass  # the server is down (a restart): not a stall
            else:
                self.waits.append(time.perf_counter() - started)
            time.sleep(0.02)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def worst(self) -> float:
        return max(self.waits, default=0.0)

    @property
    def median(self) -> float:
        return statistics.median(self.waits) if self.waits else 0.0


def state(server: ServerProcess, sid: str) -> str:
    return str(server.get(f"sessions/{sid}")["state"])


def start(server: ServerProcess, script: str) -> str:
    body = {"prompt": script, "model": f"scripted/{script}"}
    return str(server.request("POST", "sessions", body)["id"])


def run(sessions: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        server = ServerProcess(
            root,
            SCRIPTS,
            {"max_concurrent": 4, "cell_timeout": 600.0, "max_blob_bytes": 300_000_000},
        )
        out["cold start"] = server.start()
        try:
            with Poller(server) as idle:
                time.sleep(3)
            out["idle list median"] = idle.median
            out["idle list worst"] = idle.worst

            ids = [start(server, "quick") for _ in range(sessions)]
            server.wait(lambda: all(state(server, s) == "DONE" for s in ids[-5:]), timeout=900)
            fan = start(server, "fan")
            server.wait(lambda: len(server.get(f"sessions/{fan}")["children"]) == 6)
            time.sleep(2)
            server.stop(signal.SIGKILL)
            with Poller(server) as restart:
                out["restart to ready"] = server.start()
                server.wait(lambda: state(server, fan) == "DONE", timeout=300)
            out["restart: list worst"] = restart.worst

            with Poller(server) as dying:
                sid = start(server, "die")
                server.wait(lambda: any(e["kind"] == "kernel" for e in events(server, sid)))
            died_at = float((server.root / "died_at").read_text())
            noticed = next(e for e in events(server, sid) if e["kind"] == "kernel")["ts"]
            out["dead kernel noticed"] = noticed - died_at
            out["dead kernel: list worst"] = dying.worst

            with Poller(server) as spinning:
                sid = start(server, "spin")
                server.wait(
                    lambda: (
                        any(e["kind"] == "cell" for e in events(server, sid))
                        or server.get(f"sessions/{sid}")["kernel_alive"]
                    )
                )
                time.sleep(2)
                pids = set(server.kernel_pids())
                cancelled = time.monotonic()
                server.request("DELETE", f"sessions/{sid}")
                server.wait(lambda: len(pids - set(server.kernel_pids())) >= 1, every=0.02)
                out["spinning kernel freed"] = time.monotonic() - cancelled
            out["spinning kernel: list worst"] = spinning.worst

            with Poller(server) as big:
                sid = start(server, "big")
                server.wait(lambda: state(server, sid) == "DONE", timeout=300)
            out["150 MB answer: list worst"] = big.worst
        finally:
            if server.proc is not None:
                server.stop(signal.SIGTERM)
    return out


def events(server: ServerProcess, sid: str) -> list[dict[str, Any]]:
    return list(server.get(f"sessions/{sid}/events")["events"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    figures = run(args.sessions)
    print(f"load average at start: {load:.1f}")
    for name, value in figures.items():
        print(f"{name:<32} {value * 1000:9.1f} ms")


if __name__ == "__main__":
    main()
