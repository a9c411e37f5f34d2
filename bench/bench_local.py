"""The embedded model on small tasks: the harness against the same model without it.

    python bench/bench_local.py [--model MODEL] [--set eval|tuning|both] [--only KIND] [--json]

Starts a real server headless (the code path of `prime-agent run`) in a fresh folder, runs each
task as a root session with the default settings, and checks the answer it returns. Two sets:
the evaluation set (local_eval.py, frozen before any tuning: the headline) and the tuning set
(local_tasks.py, what the profiles are tuned on). The floor, in the same run: the same model
given the same task (with the context or file contents pasted in) in one plain completion, the
answer parsed from its text as leniently as the task allows; a context past the model's window
makes the floor's call fail, and that counts as wrong. Prints per task: correct or not, turns,
tokens, seconds; then per set the correct count and median seconds of both, and the machine's
load. Nothing is asserted: the table is the result.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import pickle
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import local_eval
from local_tasks import FILES, TUNING, Task, check

from prime_kernel.cli import inputs
from prime_kernel.cli.headless import serve
from prime_kernel.cli.run import DEFAULT_MODEL
from prime_kernel.models import profiles, prompts
from prime_kernel.protocol.requests import SessionRequest


def task_sets(which: str) -> dict[str, list[Task]]:
    """The sets to run; the evaluation set only if it is still the one that was frozen."""
    sets = {}
    if which in ("eval", "both"):
        tasks = local_eval.build()
        if local_eval.fingerprint(tasks) != local_eval.FROZEN:
            sys.exit(
                "bench/local_eval.py changed: the evaluation set is frozen (see its docstring)"
            )
        sets["eval"] = tasks
    if which in ("tuning", "both"):
        sets["tuning"] = TUNING
    return sets


def context_of(task: Task, root: Path) -> Any:
    """The task's `context`: given as is, or read from its file as `--context FILE` reads it."""
    if task.context_file is None:
        return task.context
    name, text = task.context_file
    (root / name).write_text(text)
    return inputs.load_context(str(root / name))


async def run_task(daemon: Any, task: Task, model: str, root: Path) -> dict[str, Any]:
    for name in task.files:
        (root / name).write_text(FILES[name])
    blob = ctype = None
    if task.has_context:
        context = context_of(task, root)
        blob = await daemon.store.put_blob(pickle.dumps(context))
        ctype = type(context).__name__
    start = time.perf_counter()
    record = await daemon.admission.create_session(
        SessionRequest(task.prompt, model=model, context_blob=blob, context_type=ctype)
    )
    sid = record["id"]
    result = await daemon.runs.wait(sid, None)
    seconds = time.perf_counter() - start
    answer: Any = None
    if result.get("has_answer"):
        answer = pickle.loads(await daemon.answers.answer_bytes(sid))
    usage = result["usage"]
    return {
        "id": sid,
        "state": result["state"],
        "error": result.get("error"),
        "answer": answer,
        "ok": result["state"] == "DONE" and check(task.expected, answer),
        "turns": usage["own"].get("model_calls", 0),
        "tokens": usage["subtree"].get("total_tokens", 0),
        "seconds": seconds,
    }


def floor_prompt(task: Task) -> str:
    parts = ["Answer with only the answer.", "", task.prompt]
    if task.context_file is not None:
        name, text = task.context_file
        parts.append(f"The file {name} (context) contains:\n{text}")
    elif task.has_context:
        parts.append(f"context = {task.context!r}")
    for name in task.files:
        parts.append(f"The file {name} contains:\n{FILES[name]}")
    return "\n".join(parts)


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def parse_floor(text: str, expected: Any) -> Any:
    """The answer in a plain reply, read as the expected type allows (leniently).

    The last number, list or quoted string counts, as in "17 * 23 = 391": a reply that
    restates the question first is not marked wrong for it.
    """
    if isinstance(expected, bool):
        words = re.findall(r"\b(yes|true|no|false)\b", text, re.IGNORECASE)
        return words[-1].lower() in ("yes", "true") if words else None
    if isinstance(expected, (int, float)):
        numbers = _NUMBER.findall(text)
        if not numbers:
            return None
        number = numbers[-1].replace(",", "")
        return float(number) if "." in number else int(number)
    if isinstance(expected, list):
        lists = re.findall(r"\[[^\[\]]*\]", text)
        try:
            return ast.literal_eval(lists[-1]) if lists else None
        except (ValueError, SyntaxError):
            return None
    quoted = re.findall(r"'([^']*)'|\"([^\"]*)\"", text)
    if quoted:
        single, double = quoted[-1]
        return single or double
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.strip(" .`*")


async def run_floor(daemon: Any, task: Task, model: str) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        completion = await daemon.router.text(model, floor_prompt(task))
    except Exception as e:  # a context past the window: the model alone cannot answer
        return {
            "answer": None,
            "text": f"{type(e).__name__}: {e}"[:200],
            "ok": False,
            "tokens": 0,
            "seconds": time.perf_counter() - start,
        }
    text = completion.message.get("content") or ""
    answer = parse_floor(text, task.expected)
    return {
        "answer": answer,
        "text": text,
        "ok": check(task.expected, answer),
        "tokens": completion.usage.get("total_tokens", 0),
        "seconds": time.perf_counter() - start,
    }


# What `--without` takes away from the model's profile, to measure what each crutch is worth.
def _plain_system(tools: bool, extra: str) -> str:
    return prompts.small_system_prompt(extra=extra, installed=profiles.installed_note())


CRUTCHES: dict[str, dict[str, Any]] = {
    "examples": {"examples": lambda task, has_context: []},
    "look": {"look": None},
    "retry-fresh": {"retry_fresh": False},
    "no-copies": {"no_copies": False},
    "hints": {"error_hints": False},
    "setup": {"setup": "", "system": _plain_system},
    "prefill": {"prefill": "", "prefill_answer": False, "stop": ()},
}


def without(model: str, crutches: list[str]) -> None:
    """Run `model` with its profile less `crutches` (this process's daemon reads it)."""
    changes: dict[str, Any] = {}
    for name in crutches:
        changes.update(CRUTCHES[name])
    profile = profiles.profile_for(model)
    profiles.PROFILES[model] = dataclasses.replace(profile, name=f"{profile.name}-less", **changes)


NO_FLOOR = {"answer": None, "text": "", "ok": False, "tokens": 0, "seconds": 0.0}


async def bench(app: Any, args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    daemon = app.web_app.settings["prime_daemon"]
    rows = []
    for name, tasks in task_sets(args.set).items():
        if not args.json:
            print(f"\n{name} set\n{HEADER}", flush=True)
        for task in tasks:
            if args.only and task.kind not in args.only.split(","):
                continue
            harness = await run_task(daemon, task, args.model, root)
            floor = NO_FLOOR if args.no_floor else await run_floor(daemon, task, args.model)
            rows.append({"set": name, "task": task, "harness": harness, "floor": floor})
            if not args.json:
                print_row(rows[-1], flush=True)
    return rows


def _short(value: Any, n: int = 22) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 1] + "…"


HEADER = (
    f"{'kind':<11}{'task':<44}{'ok':>3}{'turns':>6}{'tokens':>7}{'s':>6}  {'answer':<23}"
    f"{'floor':>6}  {'floor answer':<18}"
)


def print_row(row: dict[str, Any], flush: bool = False) -> None:
    task, h, f = row["task"], row["harness"], row["floor"]
    prompt = task.prompt if len(task.prompt) <= 42 else task.prompt[:41] + "…"
    shown = h["answer"] if h["state"] == "DONE" else h["state"]
    print(
        f"{task.kind:<11}{prompt:<44}{'✓' if h['ok'] else '✗':>3}{h['turns']:>6}"
        f"{h['tokens']:>7}{h['seconds']:>6.1f}  {_short(shown):<23}"
        f"{'✓' if f['ok'] else '✗':>6}  {_short(f['answer'], 18):<18}",
        flush=flush,
    )


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    seconds = [r["harness"]["seconds"] for r in rows]
    return {
        "tasks": n,
        "harness_correct": sum(r["harness"]["ok"] for r in rows),
        "floor_correct": sum(r["floor"]["ok"] for r in rows),
        "median_seconds": statistics.median(seconds) if seconds else 0.0,
        "max_seconds": max(seconds, default=0.0),
        "total_seconds": sum(seconds),
        "total_tokens": sum(r["harness"]["tokens"] for r in rows),
        "floor_median_seconds": statistics.median(r["floor"]["seconds"] for r in rows)
        if rows
        else 0.0,
    }


def print_totals(name: str, totals: dict[str, Any]) -> None:
    n = totals["tasks"]
    print(
        f"{name} set, harness: {totals['harness_correct']}/{n} correct, "
        f"median {totals['median_seconds']:.1f} s (max {totals['max_seconds']:.1f} s, "
        f"all {totals['total_seconds']:.0f} s), {totals['total_tokens']} tokens"
    )
    print(
        f"{name} set, floor (one plain completion, same model): "
        f"{totals['floor_correct']}/{n} correct, median {totals['floor_median_seconds']:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument(
        "--set",
        choices=("eval", "tuning", "both"),
        default="both",
        help="the evaluation set (frozen, the headline), the tuning set, or both (default)",
    )
    parser.add_argument(
        "--only", help="run only the tasks of these kinds (e.g. csv or dates,units)"
    )
    parser.add_argument(
        "--no-floor", action="store_true", help="skip the floor (quicker, while tuning)"
    )
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=sorted(CRUTCHES),
        help="run the model's profile without this crutch (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--examples", action="store_true", help="also show the cookbook examples each task got"
    )
    parser.add_argument(
        "--root", help="run in this (empty) folder and keep the store, for `prime-agent show`"
    )
    args = parser.parse_args()
    without(args.model, args.without)
    load_before = os.getloadavg()[0]
    if not args.json:
        less = f", without {', '.join(args.without)}" if args.without else ""
        print(f"{args.model}{less} on {os.cpu_count()} CPUs, load average {load_before:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.root or tmp).resolve()
        root.mkdir(parents=True, exist_ok=True)
        rows = serve(
            root, ["--KernelCustody.keep_root_kernel=0"], lambda app: bench(app, args, root)
        )
    load_after = os.getloadavg()[0]
    sets = {name: summary([r for r in rows if r["set"] == name]) for name in task_sets(args.set)}
    if args.json:
        out = [
            {
                "set": r["set"],
                "kind": r["task"].kind,
                "task": r["task"].prompt,
                "expected": r["task"].expected,
                "harness": r["harness"],
                "floor": r["floor"],
            }
            for r in rows
        ]
        load = {"load_before": load_before, "load_after": load_after}
        report = {"model": args.model, "tasks": out, "totals": sets, **load}
        print(json.dumps(report, default=repr, indent=2))
        return
    print()
    for name, totals in sets.items():
        print_totals(name, totals)
    print(f"load average: {load_before:.2f} before, {load_after:.2f} after")
    if args.examples:
        print("\ncookbook examples shown per task (nearest last):")
        examples = profiles.profile_for(args.model).examples
        for r in rows:
            task = r["task"]
            shown = [m["content"] for m in examples(task.prompt, task.has_context)]
            print(f"- {task.prompt}\n    " + "\n    ".join(shown[::2]))
    failed = [r for r in rows if not r["harness"]["ok"] and r["harness"]["error"]]
    if failed:
        print("\nhow the failed sessions ended:")
        for r in failed:
            print(f"- {r['task'].prompt[:60]}: {r['harness']['error']}")


if __name__ == "__main__":
    main()
