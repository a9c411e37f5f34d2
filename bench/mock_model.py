"""An OpenAI-compatible chat-completions server on loopback with a fixed reply, for benchmarks.

    python bench/mock_model.py [--turns N] [--delay S]    # prints its base URL, then serves

Every request is answered at once (after `--delay` seconds; as server-sent events when it asks
to be streamed) with one turn of trivial code
(`x = <turn>`): a `python` tool call when the request offers tools (Prime's loop), a fenced
```repl block when the model's name contains "rlms" (the RLM paper's library), a fenced
```python block otherwise. A
conversation that already holds N-1 assistant messages gets the code that answers instead, so a
run takes exactly N turns. Each request's arrival time is logged: `GET /log` returns and clears
the log, so a benchmark can time turns as the gaps between one conversation's requests, the same
way for every client.

It runs in a process of its own, so the client under test pays nothing for it but the round trip.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A trivial cell, a different one each turn: a harness may stop a model that repeats itself.
CELL = "x = {turn}"
ANSWERS = {
    "tools": "answer(1)",
    "rlms": 'answer["content"] = "1"\nanswer["ready"] = True',
    "fenced": "answer(1)",
}


def reply(body: dict[str, Any], turns: int) -> dict[str, Any]:
    messages = body.get("messages") or []
    done = sum(1 for m in messages if m.get("role") == "assistant")
    model = str(body.get("model") or "")
    style = "tools" if body.get("tools") else "rlms" if "rlms" in model else "fenced"
    code = ANSWERS[style] if done + 1 >= turns else CELL.format(turn=done + 1)
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    finish = "stop"
    if style == "tools":
        call = {"name": "python", "arguments": json.dumps({"code": code})}
        message["tool_calls"] = [{"id": f"call_{done}", "type": "function", "function": call}]
        finish = "tool_calls"
    else:
        fence = "repl" if style == "rlms" else "python"
        message["content"] = f"Running it.\n```{fence}\n{code}\n```"
    return {
        "id": f"chatcmpl-{done}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }


def chunks(whole: dict[str, Any]) -> list[dict[str, Any]]:
    """A reply as a provider streams it (`stream: true`): the message in one delta, the
    finish reason, then the usage in a chunk of its own (`stream_options.include_usage`)."""
    choice = whole["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(delta["tool_calls"])]
    head = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    return [
        head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
        head | {"choices": [], "usage": whole["usage"]},
    ]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    # Headers and body go out in separate writes: without this, Nagle's algorithm holds the
    # body back for the client's delayed ACK (~40 ms a reply).
    disable_nagle_algorithm = True
    server: MockServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        with self.server.lock:
            log, self.server.log = self.server.log, []
        self._send({"log": log})

    def do_POST(self) -> None:
        arrived = time.time()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        messages = body.get("messages") or []
        first_user = next((m for m in messages if m.get("role") == "user"), {})
        key = f"{body.get('model')}|{str(first_user.get('content'))[:200]}"
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        with self.server.lock:
            self.server.log.append({"t": arrived, "key": key, "turn": turn})
        if self.server.delay:
            time.sleep(self.server.delay)
        whole = reply(body, self.server.turns)
        if body.get("stream"):
            self._send_events(chunks(whole))
        else:
            self._send(whole)

    def _send_events(self, events: list[dict[str, Any]]) -> None:
        data = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class MockServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, turns: int, delay: float) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.turns = turns
        self.delay = delay
        self.lock = threading.Lock()
        self.log: list[dict[str, Any]] = []


def turn_gaps(log: list[dict[str, Any]]) -> list[float]:
    """Seconds between consecutive turns of each conversation in a request log."""
    last: dict[str, dict[str, Any]] = {}
    gaps = []
    for entry in sorted(log, key=lambda e: e["t"]):
        before = last.get(entry["key"])
        if before is not None and entry["turn"] == before["turn"] + 1:
            gaps.append(entry["t"] - before["t"])
        last[entry["key"]] = entry
    return gaps


class Mock:
    """This server in a process of its own, for a benchmark: its URL, its request log."""

    def __init__(self, turns: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--turns", str(turns)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def log(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.url.rsplit("/v1", 1)[0] + "/log") as r:
            return list(json.load(r)["log"])

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="turns before the answer")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds added per reply")
    args = parser.parse_args()
    server = MockServer(args.turns, args.delay)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    sys.stdout.close()
    server.serve_forever()


if __name__ == "__main__":
    main()
