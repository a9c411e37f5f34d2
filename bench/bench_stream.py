"""How fast a streamed reply reaches its watchers, and how fast a cancel stops it.

    python bench/bench_stream.py [--pieces 60] [--gap 0.02] [--cancels 5] [--json]

A real jupyter_server with the extension runs in this process; the `scripted/*` provider sends
a reply of `--pieces` pieces, `--gap` seconds apart (a fast hosted model sends 30-100 tokens a
second), each told to the bench as it is sent (`scripted.on_piece`). Prints, median and max:

- token -> event bus: from a piece sent to its text in a `ModelDelta` received by a websocket
  subscriber of /api/events/subscribe in a thread of its own (the CLI's client, cli/bus.py);
  pieces are coalesced (the first at once, then one notification per 50 ms), so the wait for
  the next notification is part of it;
- token -> CLI: to the piece on the terminal of a `prime-agent run` (its own process, on a pty,
  asking this server);
- cancel mid-stream -> ended: from `DELETE /api/prime/sessions/ID` (what `prime-agent cancel`
  sends), a few pieces into a long reply, to the answer saying the session is CANCELLED (the
  daemon answers once it ended), and whether the provider sent anything after it.

Goals (issue 27): a piece shown <= 100 ms after it was sent; a cancel ends the session <= 1 s.
Nothing is asserted. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pty
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from prime_kernel.cli.bus import EventBus
from prime_kernel.cli.headless import serve
from prime_kernel.cli.remote import Server
from prime_kernel.models import scripted
from prime_kernel.protocol.requests import SessionRequest
from prime_kernel.protocol.responses import MODEL_DELTA_SCHEMA_ID

GOALS = {"token -> event bus": 0.1, "token -> CLI": 0.1, "cancel mid-stream -> ended": 1.0}


class Sent:
    """When each piece of the streaming model's replies was sent (monotonic seconds)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.pieces: list[tuple[str, float]] = []

    def __call__(self, model: str, piece: str, at: float) -> None:
        if model == self.model:
            self.pieces.append((piece, at))


class Subscriber:
    """The event bus's deltas, stamped as they arrive, read on a loop of their own."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.got: list[tuple[dict[str, Any], float]] = []
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.bus = EventBus(info, self._on_message, self.loop).start()

    def _on_message(self, data: dict[str, Any]) -> None:
        if data.get("schema_id") == MODEL_DELTA_SCHEMA_ID:
            self.got.append((data, time.monotonic()))

    def of(self, session_id: str) -> list[tuple[dict[str, Any], float]]:
        return [(d, t) for d, t in self.got if d["session_id"] == session_id]

    def close(self) -> None:
        self.bus.close()
        self.loop.call_soon_threadsafe(self.loop.stop)


def latencies(pieces: list[tuple[str, float]], arrivals: list[tuple[int, float]]) -> list[float]:
    """Per piece: when the text up to its end had arrived (`arrivals`: cumulative length,
    time), less when it was sent."""
    out, end = [], 0
    for piece, sent in pieces:
        end += len(piece)
        seen = next((t for length, t in arrivals if length >= end), None)
        if seen is not None:
            out.append(seen - sent)
    return out


def cumulative(deltas: list[tuple[dict[str, Any], float]]) -> list[tuple[int, float]]:
    out, length = [], 0
    for data, at in deltas:
        length += len(data["text"])
        out.append((length, at))
    return out


def words(n: int) -> list[str]:
    """Pieces each with a marker found once in any output: `w0001 `."""
    return [f"w{i:04d} " for i in range(1, n + 1)]


def read_terminal(fd: int, out: list[tuple[bytes, float]]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the command exited
            return
        if not chunk:
            return
        out.append((chunk, time.monotonic()))


async def cli_run(
    root: Path, env: dict[str, str], model: str, sent: Sent
) -> tuple[list[float], int]:
    """A `prime-agent run` on a pty against this server: per piece, sent -> on its terminal."""
    main, other = pty.openpty()
    command = [sys.executable, "-m", "prime_kernel.cli.main", "--root", str(root)]
    process = subprocess.Popen(
        [*command, "run", "stream", "--model", model],
        stdout=other,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(other)
    chunks: list[tuple[bytes, float]] = []
    reader = threading.Thread(target=read_terminal, args=(main, chunks), daemon=True)
    reader.start()
    sent.pieces.clear()
    code = await asyncio.to_thread(process.wait, 300)
    await asyncio.to_thread(reader.join, 10)
    os.close(main)
    shown, out = b"", []
    stamps = []
    for chunk, at in chunks:
        shown += chunk
        stamps.append((len(shown), at))
    for piece, at in sent.pieces:
        where = shown.find(piece.strip().encode())
        if where < 0:
            continue
        end = where + len(piece.strip())
        seen = next(t for length, t in stamps if length >= end)
        out.append(seen - at)
    return out, code


async def measure(app: Any, args: argparse.Namespace, root: Path, env: dict[str, str]) -> Any:
    daemon = app.web_app.settings["prime_daemon"]
    info = app.server_info()
    server = Server(info)
    pieces = words(args.pieces)
    model = scripted.register_script(
        "bench_stream",
        [{"text": "".join(pieces), "pieces": pieces, "piece_delay": args.gap}] * 2,
        tools=False,
    )
    endless = words(100_000 // 6)
    long_model = scripted.register_script(
        "bench_stream_long",
        [{"text": "".join(endless), "pieces": endless, "piece_delay": args.gap}],
        tools=False,
    )
    sent, long_sent = Sent(model), Sent(long_model)

    def on_piece(name: str, piece: str, at: float) -> None:
        sent(name, piece, at)
        long_sent(name, piece, at)

    scripted.on_piece = on_piece
    subscriber = await asyncio.to_thread(Subscriber, info)
    results: dict[str, list[float]] = {}
    try:
        # token -> event bus
        bus: list[float] = []
        for _ in range(args.runs):
            sent.pieces.clear()
            record = await daemon.admission.create_session(SessionRequest("stream", model=model))
            await daemon.runs.wait(record["id"], 300)
            deltas = subscriber.of(record["id"])
            while not (deltas and deltas[-1][0]["done"]):
                await asyncio.sleep(0.05)
                deltas = subscriber.of(record["id"])
            bus += latencies(list(sent.pieces), cumulative(deltas))
        results["token -> event bus"] = bus
        # token -> CLI
        shown: list[float] = []
        for _ in range(args.runs):
            got, code = await cli_run(root, env, model, sent)
            if code != 0:
                raise RuntimeError(f"prime-agent run exited {code}")
            shown += got
        results["token -> CLI"] = shown
        # cancel mid-stream -> ended
        cancels: list[float] = []
        after: list[int] = []
        for _ in range(args.cancels):
            record = await daemon.admission.create_session(
                SessionRequest("stream for long", model=long_model)
            )
            sid = record["id"]
            while len(subscriber.of(sid)) < 5:
                await asyncio.sleep(0.01)
            start = time.monotonic()
            answer = await asyncio.to_thread(server.cancel, sid)
            took = time.monotonic() - start
            if answer.get("state") != "CANCELLED":
                raise RuntimeError(f"the cancel answered {answer}")
            cancels.append(took)
            ended = len(long_sent.pieces)
            await asyncio.sleep(5 * args.gap)
            after.append(len(long_sent.pieces) - ended)
            long_sent.pieces.clear()
        results["cancel mid-stream -> ended"] = cancels
    finally:
        scripted.on_piece = None
        subscriber.close()
    return results, sum(after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, default=60, help="pieces per reply")
    parser.add_argument("--gap", type=float, default=0.02, help="seconds between pieces")
    parser.add_argument("--runs", type=int, default=3, help="replies measured per path")
    parser.add_argument("--cancels", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "work"
        root.mkdir()
        runtime = Path(folder) / "runtime"
        runtime.mkdir()
        os.environ["JUPYTER_RUNTIME_DIR"] = str(runtime)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
        env.pop("PRIME_MODEL", None)

        async def run(app: Any) -> Any:
            app.write_server_info_file()  # so the CLI finds this server
            return await measure(app, args, root, env)

        results, late = serve(
            root, ["--KernelCustody.pool_size=1", "--KernelCustody.keep_root_kernel=0"], run
        )
    load_after = os.getloadavg()[0]
    table = {
        name: {
            "median_ms": round(statistics.median(values) * 1000, 1),
            "max_ms": round(max(values) * 1000, 1),
            "n": len(values),
            "goal_ms": GOALS[name] * 1000,
        }
        for name, values in results.items()
        if values
    }
    if args.json:
        print(
            json.dumps(
                {
                    "pieces": args.pieces,
                    "gap": args.gap,
                    "results": table,
                    "pieces_after_cancel": late,
                    "load": [load_before, load_after],
                },
                indent=1,
            )
        )
        return
    print(f"{args.pieces} pieces a reply, {args.gap * 1000:g} ms apart; load {load_before:.2f}")
    for name, row in table.items():
        print(
            f"{name:30} median {row['median_ms']:7.1f} ms  max {row['max_ms']:7.1f} ms  "
            f"(n={row['n']}, goal <= {row['goal_ms']:g} ms)"
        )
    print(f"pieces the provider sent after a cancel answered: {late}")
    print(f"load average {load_before:.2f} before, {load_after:.2f} after")


if __name__ == "__main__":
    main()
