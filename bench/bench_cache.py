"""How much of a long session's prompt a provider serves from its prompt cache, and what that
saves: a 30-turn session with a goal change, two messages and one compaction.

    python bench/bench_cache.py [--turns 30] [--style openai|anthropic|both] [--json]

The session runs on a real jupyter_server with the extension (its cells in a Prime agent
kernel) against the `scripted/*` provider in its recording mode, which reports cached tokens as a
provider would (prime_kernel/models/scripted.py, `PromptCache`: four characters a token):

- openai: the longest common prefix with the previous request, in 128-token blocks, from 1,024
  tokens (OpenAI, Gemini and DeepSeek cache by themselves); priced as `openai/gpt-4o`;
- anthropic: only prefixes ending at a `cache_control` breakpoint of an earlier request are
  cached (from 1,024 tokens), reads at a tenth of the input price, writes at 1.25 times it;
  priced as `anthropic/claude-sonnet-4-5`.

Each turn runs 300-800 characters of code printing 1-2 kB. The session sets its goal at turn 1
and notes progress at turns 8 and 24 (`goal.progress` in its REPL); a person sets a new goal
before turn 12 (the path of `PUT .../goal`) and writes before turns 15 and 22 (the path of
`POST .../messages`); `compact()` runs before turn 20. The figures are the daemon's own
`model_call` events (the accounting is what is measured): per turn the prompt, read and written
tokens, the share read from the cache, the cost and the cost without the cache; in total the
share over the turns less the one after the compaction (the one planned break: its prefix is
rebuilt), and the compaction's summary call priced apart. Nothing is asserted; the goal is a
share of at least 90%.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from prime_kernel.cli.headless import serve, start_daemon
from prime_kernel.daemon.compaction import SUMMARY_INSTRUCTION
from prime_kernel.daemon.loop import AgentLoop
from prime_kernel.models import scripted
from prime_kernel.protocol.requests import SessionRequest
from prime_kernel.util.format import fmt_usage

PRICED_AS = {"openai": "openai/gpt-4o", "anthropic": "anthropic/claude-sonnet-4-5"}
# A task as people write them for long runs: what to do, the data, the rules (~1,500 tokens).
TASK = (
    "Analyse the sales ledger in `ledger.csv` (columns: date, region, store, sku, units, "
    "unit_price, discount, returned) and build a weekly report.\n\n"
    + "\n".join(
        f"{i}. Rule {i}: when a row's region is R{i % 7} and its store id ends in {i % 10}, "
        f"apply the adjustment table A{i} to units and unit_price before aggregating, and "
        f"keep a note of every row changed so the report can list them per week."
        for i in range(1, 31)
    )
)
GOAL = "Produce the weekly report for Q1 with totals per region."
NEW_GOAL = "Produce the weekly report for Q1 and Q2, with totals per region and per store."
PERSON_GOAL_TURN = 12
MAIL_TURNS = (15, 22)
COMPACT_TURN = 20
PROGRESS_TURNS = (8, 24)


def code_for(turn: int, turns: int) -> str:
    """Turn `turn`'s code: 300-800 characters that print 1-2 kB."""
    if turn == turns:
        return "answer('the weekly report is in report.md')"
    lines = [
        f"# Turn {turn}: look at the next slice of the ledger and check the totals so far.",
        f"rows = [(w, r, {turn} * 17 + w * r) for w in range(1, {8 + turn % 5}) "
        f"for r in range(1, 8)]",
        "by_region = {}",
        "for week, region, units in rows:",
        "    by_region.setdefault(region, []).append(units)",
        "for region, units in sorted(by_region.items()):",
        "    print(f'region R{region}: weeks={len(units)} units={units} total={sum(units)}')",
        f"print('slice {turn} checked;', len(rows), 'rows')",
    ]
    if turn == 1:
        lines.insert(0, f"goal.set({GOAL!r})")
    if turn in PROGRESS_TURNS:
        lines.insert(0, f"goal.progress('slices 1-{turn} checked')")
    return "\n".join(lines)


class BenchLoop(AgentLoop):
    """The documented policy seam: after turn N's code ran, what a person does before N+1."""

    async def execute(self, code: str) -> Any:
        run = await super().execute(code)
        daemon: Any = self.host
        record = self.live.record
        upcoming = self.live.turns + 1  # turn N is counted once its code ran
        if upcoming == PERSON_GOAL_TURN:
            daemon.goals.set(record, NEW_GOAL, "user")
        if upcoming in MAIL_TURNS:
            await daemon.mailbox.send(None, record.id, f"Note for turn {upcoming}: keep going.")
        if upcoming == COMPACT_TURN:
            daemon.host.request_compaction(self.live)
        return run


def register(style: str, turns: int) -> str:
    calls = {"n": 0}

    def play(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if SUMMARY_INSTRUCTION in str(messages[0].get("content")):
            return {"text": "Slices checked so far: totals per region printed; no anomalies."}
        calls["n"] += 1
        return {"code": code_for(calls["n"], turns)}

    return scripted.register_script(
        f"bench_cache_{style}", [play] * (turns + 5), cache=style, price_like=PRICED_AS[style]
    )


async def session(app: Any, model: str, turns: int) -> tuple[list[dict[str, Any]], str]:
    """The session's model calls, and its usage as `prime-agent show` prints it."""
    daemon = app.web_app.settings["prime_daemon"]
    record = await daemon.admission.create_session(
        SessionRequest(TASK, model=model, max_turns=turns + 2)
    )
    final = await daemon.runs.wait(record["id"], 900)
    if final["state"] != "DONE":
        raise RuntimeError(f"the session ended {final['state']}: {final.get('error')}")
    calls = [e["data"] for e in await daemon.store.events(record["id"], kinds=["model_call"])]
    return calls, fmt_usage(daemon.accounting.own(daemon.registry.get(record["id"])))


def report(style: str, calls: list[dict[str, Any]], shown: str) -> dict[str, Any]:
    rows = []
    turn = 0
    summary = None
    for d in calls:
        u = d["usage"]
        row = {
            "prompt": int(u["prompt_tokens"]),
            "read": int(u["cached_tokens"]),
            "written": int(u.get("cache_write_tokens") or 0),
            "cost": d["cost"],
            "uncached_cost": d.get("uncached_cost", d["cost"]),
            "break": d.get("cache_break"),
        }
        if d.get("purpose") == "compaction":
            summary = row
            continue
        turn += 1
        rows.append({"turn": turn, **row})
    counted = [r for r in rows if not (r["break"] and r["break"]["planned"])]
    unplanned = [r["turn"] for r in rows if r["break"] and not r["break"]["planned"]]
    prompt = sum(r["prompt"] for r in counted)
    read = sum(r["read"] for r in counted)
    every = rows + ([summary] if summary else [])
    return {
        "style": style,
        "priced_as": PRICED_AS[style],
        "turns": rows,
        "summary_call": summary,
        "share": read / prompt if prompt else 0.0,
        "share_all_turns": sum(r["read"] for r in rows) / max(1, sum(r["prompt"] for r in rows)),
        "excluded_turns": [r["turn"] for r in rows if r not in counted],
        "unplanned_breaks": unplanned,
        "written": sum(r["written"] for r in every),
        "cost": sum(r["cost"] for r in every),
        "uncached_cost": sum(r["uncached_cost"] for r in every),
        "shown": shown,
    }


def show(result: dict[str, Any]) -> None:
    print(f"\n{result['style']}-style cache, priced as {result['priced_as']}")
    print(
        f"{'turn':>4} {'prompt':>7} {'read':>7} {'written':>7} {'share':>6} {'cost':>9} "
        f"{'no cache':>9}"
    )
    for r in result["turns"]:
        share = r["read"] / r["prompt"] if r["prompt"] else 0.0
        mark = "  <- after the compaction (excluded)" if r["break"] else ""
        print(
            f"{r['turn']:>4} {r['prompt']:>7} {r['read']:>7} {r['written']:>7} {share:>6.1%} "
            f"{r['cost']:>9.5f} {r['uncached_cost']:>9.5f}{mark}"
        )
    s = result["summary_call"]
    if s:
        print(
            f" sum {s['prompt']:>7} {s['read']:>7} {s['written']:>7} {'':>6} "
            f"{s['cost']:>9.5f} {s['uncached_cost']:>9.5f}  <- the compaction's summary call"
        )
    print(
        f"cached share {result['share']:.1%} of prompt tokens (turns less "
        f"{result['excluded_turns']}; {result['share_all_turns']:.1%} over every turn), "
        f"{result['written']} tokens written; unplanned breaks: "
        f"{result['unplanned_breaks'] or 'none'}"
    )
    saved = result["uncached_cost"] - result["cost"]
    print(
        f"cost ${result['cost']:.4f} with the cache, ${result['uncached_cost']:.4f} without "
        f"(saved ${saved:.4f}, {saved / result['uncached_cost']:.0%})"
    )
    print(f"prime-agent show: usage: own {result['shown']}")


async def sessions(app: Any, models: dict[str, str], turns: int) -> list[dict[str, Any]]:
    """One session per style, with the bench's loop (set before the daemon starts)."""
    app.web_app.settings["prime_daemon"].runs.loop_class = BenchLoop
    await start_daemon(app)
    return [report(style, *await session(app, model, turns)) for style, model in models.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--style", choices=["openai", "anthropic", "both"], default="both")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.turns <= max(PROGRESS_TURNS):
        parser.error(f"--turns must be more than {max(PROGRESS_TURNS)}")
    styles = ["openai", "anthropic"] if args.style == "both" else [args.style]
    models = {style: register(style, args.turns) for style in styles}
    with tempfile.TemporaryDirectory() as root:
        results = serve(
            Path(root),
            ["--KernelCustody.pool_size=1", "--KernelCustody.keep_root_kernel=0"],
            lambda app: sessions(app, models, args.turns),
            start=False,
        )
    if args.json:
        print(json.dumps({"load": os.getloadavg()[0], "results": results}, indent=1))
        return
    for result in results:
        show(result)
    print(f"\nload average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
