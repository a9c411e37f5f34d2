"""`prime-agent replay ID [--subtree] [--until N]`: re-run a recorded session from its model's
recorded replies (no model call, no cost) in fresh kernels, and say where its cell outputs
diverge from the recording (see daemon/replay.py).

It runs like `prime-agent run` (a server that serves the root, or one started here, and the
session followed as it goes), then prints each replayed session's first divergent cell with a
short diff, and last `replayed T turns in S sessions, D divergent`. Exit code 0: every replayed
session ended as its recording did (DONE as DONE, FAILED as FAILED), with no divergent cell;
1 otherwise.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from ..protocol.requests import SessionRequest
from ..protocol.states import SessionState
from .common import CLIError
from .follow import Outcome
from .remote import Server
from .run import Job, submit


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="re-run a recorded session from its model's recorded replies; report divergence",
        description="Re-run an ended session: each turn is answered with the model's recorded "
        "reply (no model call, no cost) and its code runs again in a fresh kernel. Prints the "
        "first cell whose output differs from the recording, with a diff; exits 1 on any.",
    )
    p.add_argument("id", help="the session to replay")
    p.add_argument(
        "--subtree",
        action="store_true",
        help="replay its children too, each from its own record in its own kernel (default: "
        "a child ends at once with its recorded answer)",
    )
    p.add_argument(
        "--until",
        type=int,
        metavar="N",
        help="replay N turns, then hand the session to the live model (a branch)",
    )
    p.add_argument("--model", help="with --until: the live model (default: the recorded session's)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, only the report")
    p.set_defaults(func=cmd_replay, json=False, config=[])


def cmd_replay(args: argparse.Namespace) -> int:
    if args.until is not None and not 0 <= args.until <= 10_000:
        raise CLIError("--until must be from 0 to 10000")
    if args.model and args.until is None:
        raise CLIError("--model goes with --until (a whole replay calls no model)")
    request = SessionRequest(
        replay=args.id, subtree=args.subtree, until=args.until, model=args.model or None
    )

    def check(state: SessionState) -> None:
        if not state.terminal:
            raise CLIError(f"session {args.id} is {state.value}: only an ended session replays")

    return submit(args, Job(request=request, then=_divergence), about=(args.id, check))


def _divergence(server: Server, outcome: Outcome, code: int, out: TextIO) -> int:
    report = server.replay_report(outcome.record["id"])
    for line in report_lines(report):
        print(line, file=out)
    same = all(s["state"] == s["recorded_state"] for s in report["replays"])
    return 0 if same and not report["divergent"] else 1


def report_lines(report: dict[str, Any]) -> list[str]:
    """The report as printed: each session that diverged, its first divergent cell, the sum."""
    lines = []
    for s in report["replays"]:
        if not s["divergent"] and s["state"] == s["recorded_state"]:
            continue
        ended = s["state"]
        if s["state"] != s["recorded_state"]:
            ended += f", recorded {s['recorded_state']}"
        where = f"session {s['session_id']} (replaying {s['of']}, {ended})"
        lines.append(f"{where}: {s['divergent']} divergent of {s['cells']} cells")
        if s.get("error"):
            lines.append(f"  error: {s['error']}")
        first = s["first_divergence"]
        if first is not None:
            lines.append(f"  first divergent cell: turn {first['turn']}, cell {first['cell']}")
            lines += ["    " + line for line in first["code"].splitlines()[:8]]
            lines += ["  " + line for line in first["diff"].splitlines()]
    lines.append(
        f"replayed {report['turns']} turns in {report['sessions']} sessions, "
        f"{report['divergent']} divergent"
    )
    return lines
