"""Self-improvement, measured: held-out tasks before and after learning on their siblings, and
after rolling the learning back.

    python bench/bench_learning.py [--model M] [--families word,dates] [--train-tries K]
        [--teacher T [--no-self]] [--json]

Starts a real server headless (the code path of `prime-agent run`) in a fresh folder, with
the review policy `auto`, and runs the task families of learning_tasks.py (eight kinds of task,
three training and three held-out variants each) as root sessions:

1. held-out, before: the harness is empty;
2. training: each training variant runs, and the benchmark's checker verifies its answer
   (`Learner.verify(..., by="checker bench_learning")`): the harness distils right answers
   into worked examples and wrong ones into cautions — no model call. A variant answered wrong
   is tried again (`--train-tries`, default 3), with its caution in the prompt and sampling at
   temperature 0.7 with the attempt's number as the seed;
3. held-out, after: the same tasks, recalling what was learned;
4. every learned entry is rolled back (their proposals, newest first);
5. held-out, after rollback: the harness is as it was, so the results must equal (1) exactly.

With `--teacher T`, steps 2-5 run again with the teacher training (its sessions verified by the
same checker) and the model scoring the held-out variants: a light model learning from a
stronger one's verified experience, as the product's shared harness allows. `--no-self` skips
the model's own arm.

A second arm measures model-written refinement (`refine()`, its reply constrained to the schema
where the backend allows): one refinement per family, from that family's training sessions and
their verdicts; the held-out tasks again; then those refinements are rolled back.

The model is the same throughout, with its fixed seed (the embedded models sample with seed 0).
To make the passes reproducible exactly, an embedded model reads every prompt whole (no reuse
of llama.cpp's prompt cache, whose logits may differ in their last bits), and each session has
a wall-time budget of 900 s, so that no answer depends on how busy the machine was. Prints per
family and in total, then, last, one line per arm:

    held-out: before B/N, after A/N, after rollback R/N (model M)
    held-out: before B/N, after A/N, after rollback R/N (model M, teacher T)
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from learning_tasks import FAMILIES, Task, split
from local_tasks import check

from prime_kernel.cli.headless import serve
from prime_kernel.harness import proposals
from prime_kernel.models.local import MODEL as DEFAULT_MODEL
from prime_kernel.protocol.requests import SessionRequest

CHECKER = "checker bench_learning"
# Generous wall time, so that no answer depends on how busy the machine was (a profile's own
# time limit applies only when the budget sets none).
BUDGET = {"seconds": 900}
# Every request reads its whole prompt: llama.cpp's reused prefixes may differ in their last
# bits with the batch they were computed in, and the passes must be reproducible exactly.
MODEL_KWARGS = {"cache_prompt": False}
TRAIN_TEMPERATURE = 0.7


async def run_task(daemon: Any, task: Task, model: str) -> dict[str, Any]:
    blob = ctype = None
    if task.has_context:
        blob = await daemon.store.put_blob(pickle.dumps(task.context))
        ctype = type(task.context).__name__
    start = time.perf_counter()
    record = await daemon.admission.create_session(
        SessionRequest(
            task.prompt, model=model, context_blob=blob, context_type=ctype, budget=BUDGET
        )
    )
    sid = record["id"]
    result = await daemon.runs.wait(sid, None)
    answer: Any = None
    if result.get("has_answer"):
        try:
            answer = pickle.loads(await daemon.answers.answer_bytes(sid))
        except Exception:  # an answer that is no value (a function, ...): its repr, wrong
            answer = result.get("answer_repr")
    return {
        "id": sid,
        "state": result["state"],
        "answer": answer,
        "ok": result["state"] == "DONE" and check(task.expected, answer),
        "seconds": time.perf_counter() - start,
    }


async def held_out(
    daemon: Any, model: str, families: list[str], phase: str, quiet: bool, answers: list[str]
) -> dict[str, list[bool]]:
    """Run the held-out variants: right or not, by family; each answer's repr to `answers`."""
    out: dict[str, list[bool]] = {}
    for family in families:
        out[family] = []
        for task in split(family)[1]:
            row = await run_task(daemon, task, model)
            out[family].append(row["ok"])
            answers.append(f"{row['state']} {row['answer']!r}")
            if not quiet:
                mark = "✓" if row["ok"] else "✗"
                print(
                    f"  {phase:<14} {family:<14} {mark} {row['seconds']:5.1f}s  "
                    f"{str(row['answer'])[:30]!s:<30} {task.prompt[:50]}",
                    flush=True,
                )
    return out


async def train(
    daemon: Any, model: str, families: list[str], attempts: int, quiet: bool
) -> tuple[dict[str, list[str]], list[str], dict[str, Any]]:
    """Run the training variants with `model`, each verified by the checker, up to `attempts`
    times until one is right; (their sessions by family, the proposals learning applied,
    counts: `tries` holds, per variant, the attempts it took, and `solved` whether one was right).

    A wrong attempt's caution is in the next attempt's prompt; attempts after the first also
    sample (temperature TRAIN_TEMPERATURE, seed = the attempt's number), so the same model can
    find the right code at all (ExpeL's and Reflexion's retries: only a verified-right attempt
    teaches). Held-out passes never sample differently from the default.
    """
    sessions: dict[str, list[str]] = {}
    learned: list[str] = []
    counts: dict[str, Any] = {
        "model": model,
        "right": 0,
        "wrong": 0,
        "unanswered": 0,
        "attempts": 0,
        "learned": 0,
        "tries": [],
        "solved": [],
    }
    defaults = dict(daemon.host.model_kwargs)
    for family in families:
        sessions[family] = []
        for task in split(family)[0]:
            for attempt in range(attempts):
                daemon.host.model_kwargs = (
                    {**defaults, "temperature": TRAIN_TEMPERATURE, "seed": attempt}
                    if attempt
                    else defaults
                )
                try:
                    row = await run_task(daemon, task, model)
                finally:
                    daemon.host.model_kwargs = defaults
                counts["attempts"] += 1
                sessions[family].append(row["id"])
                verdict = await _verify(daemon, row, learned, counts)
                if not quiet:
                    mark = "✓" if row["ok"] else "✗"
                    print(
                        f"  {'training':<14} {family:<14} {mark} {row['seconds']:5.1f}s  "
                        f"attempt {attempt + 1}: {verdict}",
                        flush=True,
                    )
                if row["ok"]:
                    break
            counts["tries"].append(attempt + 1)
            counts["solved"].append(row["ok"])
    return sessions, learned, counts


async def _verify(
    daemon: Any, row: dict[str, Any], learned: list[str], counts: dict[str, Any]
) -> str:
    """The checker's verdict on a training session, and what the harness learned from it."""
    if row["state"] != "DONE":
        counts["unanswered"] += 1
        return f"{row['state']}: no answer to verify"
    counts["right" if row["ok"] else "wrong"] += 1
    v = await daemon.learner.verify(row["id"], correct=row["ok"], by=CHECKER)
    if v.get("learned", {}).get("status") == "applied":
        learned.append(v["learned"]["refinement_id"])
        counts["learned"] += 1
        return f"learned {v['learned']['entry']}"
    return f"nothing learned: {v.get('refused')}"


def roll_back(daemon: Any, rids: list[str]) -> None:
    for rid in reversed(rids):
        record = proposals.get_refinement(daemon.harness, rid)
        if record["status"] != "rolled_back" and any(
            e["status"] == "applied" for e in record["edits"]
        ):
            proposals.rollback_refinement(daemon.harness, rid, who="bench_learning")


async def refine_arm(
    daemon: Any, model: str, families: list[str], sessions: dict[str, list[str]], quiet: bool
) -> tuple[list[str], list[dict[str, Any]]]:
    rids, records = [], []
    for family in families:
        start = time.perf_counter()
        record = await daemon.refiner.refine(
            instructions="Improve how tasks like these are solved (their answers were checked).",
            author="bench_learning",
            trigger=f"bench_learning: {family}",
            session_ids=sessions[family],
        )
        seconds = time.perf_counter() - start
        rids.append(record["id"])
        records.append({"family": family, "status": record["status"], "seconds": seconds})
        if not quiet:
            edits = ", ".join(
                f"{e['op']} {e['kind']} {e['id']} ({e['status']})" for e in record["edits"]
            )
            error = f" — {record.get('error')}" if record.get("error") else ""
            print(
                f"  {'refinement':<14} {family:<14} {record['status']:<9} {seconds:5.1f}s  "
                f"{edits}{error}",
                flush=True,
            )
    return rids, records


async def bench(app: Any, args: argparse.Namespace) -> dict[str, Any]:
    daemon = app.web_app.settings["prime_daemon"]
    daemon.harness.review_policy = "auto"
    model, quiet = args.model, args.json
    daemon.host.model_kwargs = run_kwargs(model)
    families = args.families
    start = time.perf_counter()
    phases: dict[str, dict[str, list[bool]]] = {}
    answers: dict[str, list[str]] = {}
    phases["before"] = await held_out(
        daemon, model, families, "before", quiet, answers.setdefault("before", [])
    )
    training: dict[str, dict[str, Any]] = {}
    sessions: dict[str, list[str]] = {}
    for arm, trainer in arms(args):
        sessions, training[arm] = await learning_arm(daemon, args, arm, trainer, phases, answers)
    refinements: list[dict[str, Any]] = []
    if not args.no_refine:
        rids, refinements = await refine_arm(daemon, model, families, sessions, quiet)
        phases["refined"] = await held_out(
            daemon, model, families, "refined", quiet, answers.setdefault("refined", [])
        )
        roll_back(daemon, rids)
    return {
        "model": model,
        "teacher": args.teacher,
        "phases": phases,
        "answers": answers,
        # Per rollback pass: how many held-out tasks got the very same answer as before.
        "same_after_rollback": {
            ARM_PHASES[arm][1]: sum(
                a == b for a, b in zip(answers["before"], answers[ARM_PHASES[arm][1]], strict=True)
            )
            for arm in training
        },
        "training": training,
        "refinements": refinements,
        "seconds": time.perf_counter() - start,
    }


# The held-out passes of each learning arm: after its training, and after its rollback.
ARM_PHASES = {"self": ("after", "rollback"), "teacher": ("teacher", "teacher rollback")}


def arms(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The learning arms to run, in order, each (name, the model that trains): the model on its
    own experience, then (with --teacher) on a stronger model's; each rolls back before the next."""
    out = [] if args.no_self else [("self", args.model)]
    if args.teacher:
        out.append(("teacher", args.teacher))
    return out


async def learning_arm(
    daemon: Any,
    args: argparse.Namespace,
    arm: str,
    trainer: str,
    phases: dict[str, dict[str, list[bool]]],
    answers: dict[str, list[str]],
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Train with `trainer` (verified by the checker), score the held-out variants with the
    model, roll what was learned back and score them again; (training sessions, counts)."""
    after, rollback = ARM_PHASES[arm]
    model, families, quiet = args.model, args.families, args.json
    daemon.host.model_kwargs = run_kwargs(trainer)
    try:
        sessions, learned, counts = await train(daemon, trainer, families, args.train_tries, quiet)
    finally:
        daemon.host.model_kwargs = run_kwargs(model)
    phases[after] = await held_out(
        daemon, model, families, after, quiet, answers.setdefault(after, [])
    )
    roll_back(daemon, learned)
    assert not daemon.harness.list("example")[0], "the rollback left examples behind"
    phases[rollback] = await held_out(
        daemon, model, families, rollback, quiet, answers.setdefault(rollback, [])
    )
    return sessions, counts


def run_kwargs(model: str) -> dict[str, Any]:
    """The extra request fields of a model's calls in this benchmark."""
    return dict(MODEL_KWARGS) if model_is_local(model) else {}


def model_is_local(model: str) -> bool:
    return model.startswith("local/")


def score(phase: dict[str, list[bool]], family: str | None = None) -> tuple[int, int]:
    rows = [ok for f, oks in phase.items() if family in (None, f) for ok in oks]
    return sum(rows), len(rows)


HEADS = {
    "before": "before",
    "after": "after",
    "rollback": "rolled back",
    "teacher": "after teacher",
    "teacher rollback": "rolled back",
    "refined": "refined",
}


def table(result: dict[str, Any]) -> list[str]:
    phases = result["phases"]
    names = [p for p in HEADS if p in phases]
    widths = [max(13, len(HEADS[p]) + 2) for p in names]

    def row(label: str, cells: list[str]) -> str:
        return f"{label:<15}" + "".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))

    def scores(family: str | None) -> list[str]:
        return [f"{a}/{n}" for a, n in (score(phases[p], family) for p in names)]

    lines = [row("family", [HEADS[p] for p in names])]
    lines += [row(family, scores(family)) for family in phases["before"]]
    lines.append(row("total", scores(None)))
    return lines


def summaries(result: dict[str, Any]) -> list[str]:
    """One line per learning arm: `held-out: before B/N, after A/N, after rollback R/N (...)`."""
    phases = result["phases"]
    b, n = score(phases["before"])
    lines = []
    for arm, (after, rollback) in ARM_PHASES.items():
        if after not in phases:
            continue
        (a, _), (r, _) = score(phases[after]), score(phases[rollback])
        who = f"model {result['model']}"
        if arm == "teacher":
            who += f", teacher {result['teacher']}"
        lines.append(f"held-out: before {b}/{n}, after {a}/{n}, after rollback {r}/{n} ({who})")
    return lines


def training_line(arm: str, counts: dict[str, Any]) -> str:
    tries = counts["tries"]
    solved = [t for t, ok in zip(tries, counts["solved"], strict=True) if ok]
    return (
        f"training ({arm}, {counts['model']}): {counts['attempts']} attempts at {len(tries)} "
        f"variants: {counts['right']} right, {counts['wrong']} wrong, "
        f"{counts['unanswered']} unanswered; {len(solved)} of {len(tries)} variants solved"
        + (f" (tries used: {', '.join(map(str, solved))})" if solved else "")
        + f"; {counts['learned']} entries learned"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="default: the default model")
    parser.add_argument(
        "--families",
        default=",".join(FAMILIES),
        help=f"comma-separated, of: {', '.join(FAMILIES)}",
    )
    parser.add_argument(
        "--train-tries",
        "--attempts",
        type=int,
        default=3,
        help="most tries per training variant until one is verified right (held-out: one)",
    )
    parser.add_argument(
        "--teacher",
        help="also train with this model and score the held-out variants with --model again",
    )
    parser.add_argument(
        "--no-self", action="store_true", help="skip the arm that trains with --model itself"
    )
    parser.add_argument("--no-refine", action="store_true", help="skip the refinement arm")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--root", help="run in this (empty) folder and keep the store")
    args = parser.parse_args()
    args.families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown families: {', '.join(unknown)}")
    if args.train_tries < 1:
        parser.error("--train-tries must be at least 1")
    if not arms(args):
        parser.error("--no-self without --teacher leaves no learning arm to run")
    load_before = os.getloadavg()[0]
    if not args.json:
        print(f"{args.model} on {os.cpu_count()} CPUs, load average {load_before:.2f}\n")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.root or tmp).resolve()
        root.mkdir(parents=True, exist_ok=True)
        result = serve(root, ["--KernelCustody.keep_root_kernel=0"], lambda app: bench(app, args))
    result["load"] = [load_before, os.getloadavg()[0]]
    final = summaries(result)
    if args.json:
        print(json.dumps(result, default=repr, indent=2))
        print("\n".join(final))
        return
    print()
    for arm, counts in result["training"].items():
        print(training_line(arm, counts))
    print("\n".join(table(result)))
    n = score(result["phases"]["before"])[1]
    for phase, same in result["same_after_rollback"].items():
        print(
            f"after {phase}, the same answer as before (state and value) in {same} of {n} "
            "held-out tasks"
        )
    print(
        f"\n{result['seconds']:.0f} s in all; load average {result['load'][0]:.2f} before, "
        f"{result['load'][1]:.2f} after"
    )
    print("\n".join(final))


if __name__ == "__main__":
    main()
