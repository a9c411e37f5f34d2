"""Refinement on an embedded model: is the reply valid JSON, and how long does it take?

    python bench/bench_refine.py [--model M] [--tries 20] [--timeout S] [--root DIR]

Starts a real server headless in DIR (a fresh folder by default). If no sessions are there yet,
runs the training variants of learning_tasks.py once (24 tasks), each verified by the checker,
as the evidence. Then asks for `--tries` refinements, each from a different slice of that
evidence with different instructions (the model's seed is fixed, so the same prompt would only
repeat the same reply), under the review policy `review`, so nothing is applied. Counts the
replies that parse and match the schema, and the seconds of each (the limit is
`c.Refiner.refine_timeout`, 120 s).

Per try, where its time went: the seconds until the reply's first character (the prompt read)
and in all, the CPU seconds this process spent (llama.cpp runs in it; the figure that does not
depend on how busy the machine is), the prompt's tokens and how many of them llama.cpp took from
its cache, the reply's tokens, and the edits that reached review against those refused. Prints,
last:

    refinement: valid JSON in V/N, seconds median S, max X, over 60 s O (model M)
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_learning import CHECKER, run_task
from learning_tasks import FAMILIES, split

from prime_kernel.cli.headless import serve
from prime_kernel.models.local import MODEL as DEFAULT_MODEL

INSTRUCTIONS = [
    "Improve the harness from the evidence.",
    "What should agents remember about tasks like these?",
    "Propose one note that would have prevented the wrong answers.",
]


async def evidence(daemon: Any, model: str) -> list[str]:
    """The agent sessions in the store, made first if there are none (checked and verified)."""
    # Every agent session, failed ones too (the evidence that has most to teach).
    ids = [r.id for r in daemon.registry if r.is_agent]
    if ids:
        return ids
    for family in FAMILIES:
        for task in split(family)[0]:
            row = await run_task(daemon, task, model)
            ids.append(row["id"])
            if row["state"] == "DONE":
                await daemon.learner.verify(row["id"], correct=row["ok"], by=CHECKER)
            print(f"  evidence {family:<14} {'✓' if row['ok'] else '✗'} {row['seconds']:5.1f}s")
    return ids


async def bench(app: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    daemon = app.web_app.settings["prime_daemon"]
    daemon.harness.review_policy = "review"
    daemon.learner.learn = False  # the evidence's verdicts are kept, nothing learned from them
    daemon.refiner.refine_model = args.model
    if args.timeout is not None:
        daemon.refiner.refine_timeout = args.timeout
    ids = await evidence(daemon, args.model)
    rows = []
    for i in range(args.tries):
        size = 2 + i % 3
        start = (i * 3) % max(1, len(ids) - size)
        first_text: list[float] = []
        start_time = time.perf_counter()
        start_cpu = _cpu()
        record = await daemon.refiner.refine(
            instructions=INSTRUCTIONS[i % len(INSTRUCTIONS)],
            author="bench_refine",
            trigger=f"bench_refine try {i + 1}",
            session_ids=ids[start : start + size],
            on_progress=lambda _, seen=first_text: seen or seen.append(time.perf_counter()),
        )
        seconds = time.perf_counter() - start_time
        row = {
            "status": record["status"],
            "valid": record["status"] not in ("invalid", "failed"),
            "seconds": seconds,
            "cpu": _cpu() - start_cpu,
            # The prompt is read before the first character of the reply; a late reply has none.
            "reading": (first_text[0] - start_time) if first_text else seconds,
            **{k: (record.get("usage") or {}).get(k, 0) for k in TOKENS},
            "proposed": sum(e["status"] != "refused" for e in record["edits"]),
            "refused": sum(e["status"] == "refused" for e in record["edits"]),
        }
        rows.append(row)
        error = f" — {record.get('error')}" if record.get("error") else ""
        print(
            f"  try {i + 1:>2}: {row['status']:<9} {seconds:5.1f}s (reading {row['reading']:5.1f}s)"
            f" cpu {row['cpu']:5.1f}s, prompt {row['prompt_tokens']:>5} tokens"
            f" ({row['cached_tokens']} cached), reply {row['completion_tokens']:>4};"
            f" edits {row['proposed']} proposed, {row['refused']} refused,"
            f" load {os.getloadavg()[0]:.1f}{error}",
            flush=True,
        )
    return rows


TOKENS = ("prompt_tokens", "cached_tokens", "completion_tokens")


def _cpu() -> float:
    """CPU seconds this process has used (the embedded model's threads included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="default: the default model")
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument(
        "--timeout",
        type=float,
        help="c.Refiner.refine_timeout (default 120 s); longer lets every try finish on a busy "
        "machine, so its tokens are counted",
    )
    parser.add_argument("--root", help="a folder with sessions to use as evidence (kept)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    print(f"{args.model} on {os.cpu_count()} CPUs, load average {load_before:.2f}\n")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.root or tmp).resolve()
        root.mkdir(parents=True, exist_ok=True)
        rows = serve(root, ["--KernelCustody.keep_root_kernel=0"], lambda app: bench(app, args))
    seconds = [r["seconds"] for r in rows]
    valid = sum(r["valid"] for r in rows)
    print(f"\nload average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    for key in ("cpu", "reading", *TOKENS):
        values = [r[key] for r in rows]
        print(f"  {key:<17} median {statistics.median(values):7.1f}, max {max(values):7.1f}")
    edits = sum(r["proposed"] for r in rows), sum(r["refused"] for r in rows)
    print(f"  edits             {edits[0]} proposed, {edits[1]} refused")
    print(
        f"refinement: valid JSON in {valid}/{len(rows)}, seconds median "
        f"{statistics.median(seconds):.1f}, max {max(seconds):.1f}, over 60 s "
        f"{sum(s > 60 for s in seconds)} (model {args.model})"
    )


if __name__ == "__main__":
    main()
