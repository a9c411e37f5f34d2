"""How long a replay takes against the run it replays, as a user runs both (`prime-agent`).

    python bench/bench_replay.py [--model local/qwen2.5-coder-0.5b] [--turns 20] [--children 5]

Records a tree with `prime-agent run`: a root of `--turns` turns (a scripted model, so that its
shape is exactly that: it starts `--children` children in its first turns, computes in the
next ones, gathers and answers in the last) whose children are agents on `--model` (the
embedded one by default: real model calls, the time a replay saves). Then replays it with
`prime-agent replay ID --subtree` and prints both sessions' times (from started to ended, as
their records say: the server's start is outside both), their ratio, and the replay's last line
(`replayed T turns in S sessions, D divergent`). The goal (issue 28): 0 divergent, a ratio of
at most 0.2. The load average is printed before and after. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TASKS = [
    ("What is the sum of the numbers in context?", [3, 8, 12, 7]),
    ("What is the largest number in context?", [14, 2, 31, 9]),
    ("How many words are in the string context?", "the quick brown fox jumps"),
    ("What is the product of the numbers in context?", [2, 3, 7]),
    ("Return the string context reversed.", "replay"),
]


def root_script(turns: int, children: int, model: str) -> dict[str, Any]:
    steps = []
    for i in range(children):
        prompt, context = TASKS[i % len(TASKS)]
        steps.append({"code": f"h{i} = rlm({prompt!r}, context={context!r}, model={model!r})"})
    for i in range(turns - children - 1):
        steps.append({"code": f"x{i} = sum(range({i + 10}))\nprint(x{i})"})
    handles = ", ".join(f"h{i}" for i in range(children))
    steps.append({"code": f"answer([str(r) for r in rlm.gather({handles})])"})
    return {"turns": steps}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--children", type=int, default=5)
    args = parser.parse_args()
    if not 1 <= args.children < args.turns:
        parser.error("--children must be from 1 to --turns - 1")
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        scripts = Path(tmp) / "scripts.json"
        scripts.write_text(json.dumps({"tree": root_script(args.turns, args.children, args.model)}))
        env = {**os.environ, "PRIME_SCRIPTS": str(scripts), "JUPYTER_RUNTIME_DIR": tmp}

        def cli(*argv: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-m", "prime_kernel.cli.main", "--root", str(work), *argv]
            return subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)

        start = time.monotonic()
        run = cli("run", "a tree to replay", "--model", "scripted/tree", "--json")
        if run.returncode != 0:
            print(run.stdout, run.stderr)
            return 1
        original = json.loads(run.stdout)["id"]
        print(f"recorded {original} in {time.monotonic() - start:.1f} s (process)")
        start = time.monotonic()
        replay = cli("replay", original, "--subtree")
        print(f"replayed in {time.monotonic() - start:.1f} s (process), exit {replay.returncode}")
        found = re.search(r"Session (\S+) \w+ ·", replay.stdout)
        if found is None:
            print(replay.stdout, replay.stderr)
            return 1
        seconds = {}
        for label, sid in (("original", original), ("replay", found.group(1))):
            record = json.loads(cli("show", sid, "--json").stdout)["session"]
            seconds[label] = record["ended"] - record["started"]
            print(f"{label} {sid}: {seconds[label]:.2f} s, {record['state']}")
        print(f"ratio replay/original: {seconds['replay'] / seconds['original']:.3f} (goal <= 0.2)")
        lines = replay.stdout.strip().splitlines()
        # The report: what follows the line on the replayed session (divergences, the sum).
        print(
            "\n".join(lines[next(i for i, x in enumerate(lines) if x.startswith("Session ")) + 1 :])
        )
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
