"""The embedded model's KV cache across turns: prompt tokens evaluated per turn, and seconds.

    flock /work/team/heavy.lock python bench/bench_kv.py [--model MODEL] [--turns N]
        [--part conversation|sessions|both] [--json]

Two parts, each run for one session alone and for two sessions taking turns (as a parent and
its child, or two notebooks, do):

- conversation: a loop-shaped conversation sent through the real litellm to ``local/…``: the
  model's own profile (system prompt, worked examples, task, prefill and stop), its reply stored
  as the loop stores it, then a cell's output as the next user message, for --turns turns. The
  figures come from llama.cpp's own timings on each response (``prompt_n`` evaluated,
  ``cache_n`` reused, ``prompt_ms``).
- sessions: the README's tasks as real agent sessions on a headless server (the code path of
  ``prime-agent run``), one at a time, then two at once; the figures come from the sessions'
  stored ``model_call`` events (prompt tokens, cached tokens, seconds).

Per turn: prompt tokens (total), evaluated, cached, new (tokens the session added since its
previous request and reply: the floor a perfect cache would evaluate), seconds reading the
prompt (llama.cpp's ``prompt_ms``; conversation part) and seconds in all; then per run
the evaluated share of the new tokens over the turns after the first, and the median seconds of
a first turn against a later one. Nothing is asserted: the table is the result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prime_kernel.cli.run import DEFAULT_MODEL, make_server
from prime_kernel.daemon import policy
from prime_kernel.models import local, profiles, router
from prime_kernel.protocol.requests import SessionRequest

# The README's task and a sibling that shares most of its prompt (as rlm.map's children do):
# the hard case for a cache with one slot.
TASKS = (
    "Compute the sum of the squares of 1..100",
    "Compute the sum of the squares of 1..50",
)
README_TASKS = (
    "Compute the sum of the squares of 1..100",
    "What is the greatest common divisor of 462 and 1071?",
    "Reverse the string 'prime kernel'.",
)


def output_for(turn: int) -> str:
    """A cell's output, as the loop shows it: a few lines of numbers (about 60 tokens)."""
    rows = "\n".join(f"row {turn}.{i}: {turn * 37 + i * 11} {turn * i * 3 + 5}" for i in range(6))
    return f"Output:\n{rows}\nNot answered yet: print less and call answer(value)."


class Conversation:
    """One session's messages, kept as the agent loop keeps them (prefill unstored)."""

    def __init__(self, model: str, task: str) -> None:
        self.profile = profiles.profile_for(model)
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.profile.system(False, "")},
            *self.profile.examples(task, False),
            {"role": "user", "content": self.profile.task(task, None, 0, "")},
        ]
        self.last_total = 0  # prompt + reply tokens of the previous request

    def request(self) -> list[dict[str, Any]]:
        prefill = self.profile.prefill
        return self.messages + ([{"role": "assistant", "content": prefill}] if prefill else [])

    def add(self, reply: str, turn: int) -> None:
        content = policy.complete_reply(self.profile.prefill, reply)
        self.messages.append({"role": "assistant", "content": content})
        self.messages.append({"role": "user", "content": output_for(turn)})


async def conversation(model: str, turns: int, sessions: int) -> list[dict[str, Any]]:
    litellm = router.import_litellm()
    convs = [Conversation(model, TASKS[i % len(TASKS)]) for i in range(sessions)]
    rows = []
    for turn in range(turns):
        for s, conv in enumerate(convs):
            kwargs = conv.profile.request_kwargs(retry=False)
            start = time.perf_counter()
            response = await litellm.acompletion(
                model=model, messages=conv.request(), num_retries=0, **kwargs
            )
            seconds = time.perf_counter() - start
            usage = response.usage
            timings = getattr(usage, "timings", None) or {}
            prompt = int(usage.prompt_tokens)
            rows.append(
                {
                    "session": s,
                    "turn": turn,
                    "prompt": prompt,
                    "evaluated": int(timings.get("prompt_n", prompt)),
                    "cached": int(timings.get("cache_n", 0)),
                    "new": prompt - conv.last_total if turn else prompt,
                    "prompt_s": float(timings.get("prompt_ms", 0.0)) / 1000,
                    "seconds": seconds,
                }
            )
            conv.last_total = prompt + int(usage.completion_tokens)
            conv.add(response.choices[0].message.content or "", turn)
    return rows


async def real_sessions(app: Any, model: str, together: int) -> list[dict[str, Any]]:
    """The README's tasks as agent sessions, `together` at a time; one row per model call."""
    daemon = app.web_app.settings["prime_daemon"]
    rows = []
    for first in range(0, len(README_TASKS), together):
        batch = README_TASKS[first : first + together]
        records = [
            await daemon.admission.create_session(SessionRequest(task, model=model))
            for task in batch
        ]
        for record in records:
            await daemon.runs.wait(record["id"], 600)
        for s, record in enumerate(records):
            calls = await daemon.store.events(record["id"], kinds=["model_call"])
            last_total = 0
            for turn, event in enumerate(calls):
                u = event["data"]["usage"]
                prompt, cached = int(u["prompt_tokens"]), int(u["cached_tokens"])
                rows.append(
                    {
                        "session": first + s,
                        "turn": turn,
                        "prompt": prompt,
                        "evaluated": prompt - cached,
                        "cached": cached,
                        "new": prompt - last_total if turn else prompt,
                        "prompt_s": None,
                        "seconds": float(event["data"].get("duration") or 0.0),
                    }
                )
                last_total = prompt + int(u["completion_tokens"])
    return rows


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else None


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    later = [r for r in rows if r["turn"] > 0]
    first = [r for r in rows if r["turn"] == 0]
    new = sum(r["new"] for r in later)
    evaluated = sum(r["evaluated"] for r in later)
    return {
        "first_read_s": _median(first, "prompt_s"),
        "later_read_s": _median(later, "prompt_s"),
        "later_turns": len(later),
        "later_new": new,
        "later_evaluated": evaluated,
        "later_over_new": evaluated / new if new else None,
        "first_s": _median(first, "seconds"),
        "later_s": _median(later, "seconds"),
    }


def show(title: str, rows: list[dict[str, Any]], result: dict[str, Any]) -> None:
    print(f"\n{title}")
    print(
        f"{'sess':>4} {'turn':>4} {'prompt':>7} {'eval':>6} {'cached':>7} {'new':>5} "
        f"{'read s':>7} {'s':>7}"
    )
    for r in rows:
        read = "" if r["prompt_s"] is None else f"{r['prompt_s']:.2f}"
        print(
            f"{r['session']:>4} {r['turn']:>4} {r['prompt']:>7} {r['evaluated']:>6} "
            f"{r['cached']:>7} {r['new']:>5} {read:>7} {r['seconds']:>7.2f}"
        )
    ratio = result["later_over_new"]
    if ratio is None:
        print("no turn after the first")
        return
    print(
        f"turns after the first: {result['later_evaluated']} tokens evaluated for "
        f"{result['later_new']} new ({ratio:.1%}); median seconds: first turn "
        f"{result['first_s']:.2f}, later turns {result['later_s']:.2f}"
    )
    if result["later_read_s"] is not None:
        print(
            f"median seconds reading the prompt: first turn {result['first_read_s']:.2f}, "
            f"later turns {result['later_read_s']:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--turns", type=int, default=5, help="turns per conversation")
    parser.add_argument("--part", choices=("conversation", "sessions", "both"), default="both")
    parser.add_argument(
        "--similarity",
        type=float,
        default=local.SLOT_SIMILARITY,
        help="llama.cpp's slot_prompt_similarity (0.1 is llama.cpp's default: the before)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    local.SLOT_SIMILARITY = args.similarity
    load_before = os.getloadavg()
    out: dict[str, Any] = {
        "model": args.model,
        "cache_mib": local.cache_mib(),
        "similarity": args.similarity,
        "runs": [],
    }
    if not args.json:
        print(
            f"{args.model}, prompt cache {local.cache_mib()} MiB, slot_prompt_similarity "
            f"{args.similarity}, load average {load_before[0]:.2f} {load_before[1]:.2f}"
        )
    if args.part in ("conversation", "both"):
        for sessions in (1, 2):
            # Each run starts with a fresh cache: the model is loaded anew.
            local.unload(args.model)
            rows = asyncio.run(conversation(args.model, args.turns, sessions))
            out["runs"].append({"part": "conversation", "sessions": sessions, "rows": rows})
    if args.part in ("sessions", "both"):
        for together in (1, 2):
            local.unload(args.model)
            with tempfile.TemporaryDirectory() as tmp:
                app = make_server(Path(tmp), ["--KernelCustody.keep_root_kernel=0"])
                try:
                    app.io_loop.run_sync(app._post_start)
                    rows = app.io_loop.run_sync(
                        lambda app=app, n=together: real_sessions(app, args.model, n)  # type: ignore[misc]
                    )
                finally:
                    app.io_loop.run_sync(app._cleanup)
            out["runs"].append({"part": "sessions", "sessions": together, "rows": rows})
    for run in out["runs"]:
        run["summary"] = summary(run["rows"])
    out["load"] = [load_before[0], os.getloadavg()[0]]
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for run in out["runs"]:
        what = "one session" if run["sessions"] == 1 else "two sessions taking turns"
        if run["part"] == "sessions":
            what = "README tasks, " + ("one at a time" if run["sessions"] == 1 else "two at once")
        show(f"{run['part']}: {what}", run["rows"], run["summary"])
    print(
        f"\nload average {out['load'][0]:.2f} before, {out['load'][1]:.2f} after; "
        f"peak RSS {out['peak_rss_mib']} MiB"
    )


if __name__ == "__main__":
    main()
