"""Listing at scale: `GET /api/prime/sessions` of a real server over a store of 1,000 and
10,000 sessions (with their trajectories), timed from another process.

    python bench/bench_listing.py [--sizes 1000 10000] [--requests 30]

For each size, a store is filled the way a daemon fills it (session rows and events written
through `SqliteStore`): trees of a root and 0-30 children (some with children of their own),
mostly ended (DONE, some FAILED or CANCELLED), a few left unfinished (they come back INACTIVE),
prompts from a line to 20,000 characters, about ten events each. Then a jupyter_server with the
extension starts on that root in a process of its own (the registry loads every record, as after
a restart) and this process times, over one kept-alive HTTP connection:

- the first whole list once the daemon has started (it makes list entries in the background
  as it starts), then the whole list; `?limit=50` (the newest 50); `?state=FAILED` (a few hundred);
  `?state=RUNNING` (none: the filter alone); `?root=ID` (one tree); `?changed_after=CURSOR`
  (the panel's poll: nothing changed);

each as median and 95th percentile, with the response size and the load average while it ran.
Goals (issue 14): the list of 1,000 sessions in <= 50 ms, of 10,000 in <= 200 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prime_kernel.daemon.store import SqliteStore
from prime_kernel.util.files import new_id

WORDS = ["alpha", "beta", "gamma", "delta", "chapter", "summary", "count", "mean", "list", "data"]


def text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


def prompt_length(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.7:
        return rng.randint(40, 200)
    if roll < 0.95:
        return rng.randint(500, 2000)
    return rng.randint(5000, 20000)


def usage(rng: random.Random) -> dict[str, float]:
    prompt, completion = rng.randint(500, 20000), rng.randint(50, 2000)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_tokens": 0,
        "total_tokens": prompt + completion,
        "cost": round((prompt * 0.15 + completion * 0.6) / 1e6, 10),
        "model_calls": rng.randint(1, 12),
        "cells": rng.randint(1, 12),
        "wall_time": rng.uniform(1, 120),
        "kernel_time": rng.uniform(0.01, 10),
    }


def fill(root: Path, n: int, seed: int = 14) -> None:
    """n sessions and ~10 events each, written as a daemon writes them."""
    rng = random.Random(seed)
    store = SqliteStore(root / ".prime")
    store.open()
    now = time.time() - 86400
    made = 0
    while made < n:
        root_id = new_id("s")
        tree = [(root_id, None, 0)]
        for _ in range(min(rng.randint(0, 30), n - made - 1)):
            parent_id, _, depth = rng.choice(tree) if rng.random() < 0.2 else tree[0]
            if depth >= 2:
                parent_id, depth = root_id, 0
            tree.append((new_id("s"), parent_id, depth + 1))
        for sid, parent_id, depth in tree:
            now += rng.uniform(0.5, 5)
            roll = rng.random()
            state = (
                "DONE"
                if roll < 0.9
                else "FAILED"
                if roll < 0.95
                else "CANCELLED"
                if roll < 0.98
                else "RUNNING"
            )
            prompt = text(rng, prompt_length(rng))
            ended = now + rng.uniform(1, 60) if state != "RUNNING" else None
            store.insert_session(
                {
                    "id": sid,
                    "name": " ".join(prompt.split()[:8]),
                    "prompt": prompt,
                    "model": "openai/gpt-4o-mini",
                    "state": state,
                    "kind": "agent",
                    "parent_id": parent_id,
                    "root_id": root_id,
                    "depth": depth,
                    "created": now,
                    "started": now + 0.05,
                    "ended": ended,
                    "error": "budget exceeded: 1000 of 1000 tokens" if state == "FAILED" else None,
                    "answer_repr": repr(rng.randint(0, 10**6)) if state == "DONE" else None,
                    "budget": None,
                    "options": {"max_turns": 20, "persistent": False},
                    "usage": usage(rng),
                }
            )
            events = [
                ("task", {"prompt": prompt, "model": "openai/gpt-4o-mini", "budget": None}),
                ("state", {"state": "ADMITTED"}),
                ("state", {"state": "RUNNING"}),
            ]
            for i in range(rng.randint(1, 3)):
                code = f"x{i} = sum(range({rng.randint(1, 1000)}))\nprint(x{i})"
                events += [
                    ("model_call", {"model": "openai/gpt-4o-mini", "usage": {}, "cost": 0.0}),
                    ("assistant", {"content": "", "tool_calls": [{"code": code}]}),
                    ("cell", {"code": code, "source": "agent", "outputs": [], "status": "ok"}),
                    ("observation", {"text": str(rng.randint(0, 10**6))}),
                ]
            events.append(("state", {"state": state}))
            for kind, data in events:
                store.append_event(sid, kind, data)
        made += len(tree)
    import asyncio

    asyncio.run(store.close())


def serve(root: str) -> None:
    """Run a server with the extension on `root` (in this process); print its port and token."""
    import secrets
    import socket

    from jupyter_server.serverapp import ServerApp
    from traitlets.config import Config

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = Config()
    config.ServerApp.jpserver_extensions = {"prime_kernel": True}
    config.IdentityProvider.token = token = secrets.token_hex(24)
    app = ServerApp(config=config)
    app.initialize(
        argv=[
            f"--ServerApp.root_dir={root}",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.allow_root=True",
            "--ServerApp.open_browser=False",
            "--ServerApp.log_level=WARN",
            "--Recovery.auto_resume=False",
            "--KernelCustody.pool_size=0",
        ]
    )
    print(json.dumps({"port": port, "token": token}), flush=True)
    app.start()


class Client:
    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.headers = {"Authorization": f"token {token}"}

    def status(self) -> dict[str, Any]:
        self.conn.request("GET", "/api/prime/status", headers=self.headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET status: {response.status}")
        return dict(json.loads(body))

    def get(self, query: str = "") -> tuple[float, int, dict[str, Any]]:
        t = time.perf_counter()
        self.conn.request("GET", "/api/prime/sessions" + query, headers=self.headers)
        response = self.conn.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - t
        if response.status != 200:
            raise RuntimeError(f"GET {query}: {response.status} {body[:300]!r}")
        return elapsed, len(body), json.loads(body)


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


def measure(n: int, requests: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as root:
        t = time.perf_counter()
        fill(Path(root), n)
        filled = time.perf_counter() - t
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", root],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            info = json.loads(server.stdout.readline())
            client = Client(info["port"], info["token"])
            deadline = time.monotonic() + 300
            while True:  # the server loads the records, then the daemon starts
                try:
                    if client.status()["started"]:
                        break
                except (ConnectionError, RuntimeError):
                    client = Client(info["port"], info["token"])
                if time.monotonic() > deadline:
                    raise TimeoutError("the server did not start")
                time.sleep(0.2)
            first, _, whole = client.get()
            some_root = next(s["id"] for s in whole["sessions"] if len(s["children"]) > 10)
            queries = [
                ("whole list", ""),
                ("?limit=50", "?limit=50"),
                ("?state=FAILED", "?state=FAILED"),
                ("?state=RUNNING", "?state=RUNNING"),
                ("?root=ID (one tree)", f"?root={some_root}"),
                ("?changed_after=CURSOR", f"?changed_after={whole['cursor']}"),
            ]
            rows = [
                {
                    "sessions": n,
                    "query": "first list after start",
                    "median": first,
                    "p95": first,
                    "bytes": len(json.dumps(whole)),
                    "returned": len(whole["sessions"]),
                    "load": os.getloadavg()[0],
                    "fill_seconds": filled,
                }
            ]
            for label, query in queries:
                client.get(query)  # warm
                times, size, count = [], 0, 0
                load = os.getloadavg()[0]
                for _ in range(requests):
                    elapsed, size, data = client.get(query)
                    times.append(elapsed)
                    count = len(data["sessions"])
                rows.append(
                    {
                        "sessions": n,
                        "query": label,
                        "median": statistics.median(times),
                        "p95": p95(times),
                        "bytes": size,
                        "returned": count,
                        "load": load,
                        "fill_seconds": filled,
                    }
                )
            return rows
        finally:
            server.terminate()
            server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    rows = [row for n in args.sizes for row in measure(n, args.requests)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    goal = {1000: 0.050, 10000: 0.200}
    head = f"{'sessions':>8}  {'query':<24}{'median':>9}{'p95':>9}"
    print(f"{head}{'returned':>9}{'size':>10}{'load':>7}")
    for r in rows:
        mark = ""
        if r["query"] == "whole list" and r["sessions"] in goal:
            mark = f"  (goal <= {goal[r['sessions']] * 1000:.0f} ms)"
        ms = f"{r['median'] * 1000:>7.1f}ms{r['p95'] * 1000:>7.1f}ms"
        print(
            f"{r['sessions']:>8}  {r['query']:<24}{ms}"
            f"{r['returned']:>9}{r['bytes'] / 1024:>8.0f}KB{r['load']:>7.2f}{mark}"
        )


if __name__ == "__main__":
    main()
