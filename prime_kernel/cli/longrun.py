"""`prime-agent goal ID [TEXT]` and `prime-agent schedule add|list|rm`: long-horizon control of
a running daemon (goals and lists also read the store when no server runs)."""

from __future__ import annotations

import argparse
import datetime as dt
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol.errors import PrimeError
from ..util.format import fmt_interval
from .common import CLIError, dump_json, edit_store, read_store, resolved_root
from .remote import call, find_server

if TYPE_CHECKING:
    from ..daemon.goals import Goals
    from ..daemon.records import SessionRecord

T = TypeVar("T")
# Who a person's change is by (daemon/goals.py's USER, without importing it for a REST call).
USER = "user"


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "goal",
        help="show a session's goal, or set it (the model sees it on every turn)",
        description="Without TEXT, print the goal; with TEXT, set it (as the user).",
    )
    p.add_argument("id")
    p.add_argument("text", nargs="?", help="the new goal")
    p.add_argument("--done", metavar="SUMMARY", help="mark the goal done, saying what was done")
    p.add_argument("--progress", metavar="NOTE", help="record progress on the goal")
    p.add_argument("--clear", action="store_true", help="remove the goal")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_goal)

    p = sub.add_parser("schedule", help="heartbeats: messages to a session on a timer or cron")
    ops = p.add_subparsers(dest="op", metavar="OP")
    ops.required = True
    add = ops.add_parser("add", help="deliver MESSAGE to session ID on a schedule")
    add.add_argument("id")
    add.add_argument("message")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--every", metavar="INTERVAL", help='repeat: "90s", "10m", "1h30m", 600')
    when.add_argument("--at", metavar="TIME", help='once: "in 30m" or an ISO time')
    when.add_argument("--cron", metavar="EXPR", help='5 fields, local time: "*/5 * * * *"')
    add.set_defaults(func=cmd_schedule_add)
    ls = ops.add_parser("list", help="schedules (of one session with --session)")
    ls.add_argument("--session", metavar="ID")
    ls.add_argument("--all", action="store_true", help="ended and cancelled ones too")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_schedule_list)
    rm = ops.add_parser("rm", help="cancel a schedule")
    rm.add_argument("schedule_id")
    rm.set_defaults(func=cmd_schedule_rm)


# -- goals --------------------------------------------------------------------------------------
def cmd_goal(args: argparse.Namespace) -> int:
    changes = [x for x in (args.text, args.done, args.progress) if x is not None] + (
        [True] if args.clear else []
    )
    if len(changes) > 1:
        raise CLIError("give one of TEXT, --done, --progress, --clear")
    info = find_server(args.root)
    path = f"sessions/{urllib.parse.quote(args.id)}/goal"
    if not changes:
        if info is not None:
            goal = call(info, "GET", path)["goal"]
        else:
            reader = read_store(args.root)
            try:
                goal = reader.goal(args.id)
            except PrimeError as e:
                raise CLIError(e.message) from None
            finally:
                reader.close()
    elif args.clear:
        if info is not None:
            cleared = call(info, "DELETE", path)["cleared"]
        else:
            cleared = _offline_goal(args, lambda goals, record: goals.clear(record, USER))
        print("goal cleared" if cleared else "there was no goal")
        return 0
    else:
        body = (
            {"text": args.text}
            if args.text is not None
            else {"status": "done", "summary": args.done}
            if args.done is not None
            else {"progress": args.progress}
        )
        if info is not None:
            goal = call(info, "PUT", path, body)["goal"]
        else:
            goal = _offline_goal(args, lambda goals, record: goals.change(record, body, USER))
    if args.json:
        print(dump_json(goal))
    elif goal is None:
        print(f"{args.id} has no goal")
    else:
        print(_goal_text(goal))
    return 0


def _offline_goal(args: argparse.Namespace, change: Callable[[Goals, SessionRecord], T]) -> T:
    """Make a goal change in the store itself: with no server running, nothing else holds it,
    and the session's model reads its goal from the record whenever it next runs."""
    editor = edit_store(args.root)
    try:
        return change(editor.goals, editor.registry.get(args.id))
    except PrimeError as e:
        raise CLIError(e.message, exit_code=1) from None
    finally:
        editor.close()


def _goal_text(goal: dict[str, Any]) -> str:
    lines = [f"{goal['text']}", f"  {goal['status']}, set by {goal['set_by']}"]
    lines += [f"  - {p['note']}" for p in goal.get("progress") or []]
    if goal.get("summary"):
        lines.append(f"  done: {goal['summary']}")
    return "\n".join(lines)


# -- schedules ----------------------------------------------------------------------------------
def _live(args: argparse.Namespace, what: str) -> dict[str, Any]:
    info = find_server(args.root)
    if info is None:
        root = resolved_root(args.root)
        raise CLIError(
            f"cannot {what}: no server runs on {root}, and schedules tick only while one does. "
            f"Start one there and keep it running — `jupyter lab --ServerApp.root_dir={root}` "
            f"(or `jupyter server --ServerApp.root_dir={root}`, without the browser) — then "
            "run this command again",
            exit_code=1,
        )
    return info


def cmd_schedule_add(args: argparse.Namespace) -> int:
    info = _live(args, "add a schedule")
    body: dict[str, Any] = {"session_id": args.id, "message": args.message}
    if args.every is not None:
        body["every"] = float(args.every) if _number(args.every) else args.every
    elif args.at is not None:
        body["at"] = args.at
    else:
        body["cron"] = args.cron
    made = call(info, "POST", "schedules", body)
    print(f"schedule {made['id']}: {_schedule_line(made)}")
    return 0


def cmd_schedule_list(args: argparse.Namespace) -> int:
    info = find_server(args.root)
    state = None if args.all else "active"
    if info is not None:
        query = urllib.parse.urlencode(
            {k: v for k, v in (("session", args.session), ("state", state)) if v}
        )
        rows = call(info, "GET", f"schedules?{query}")["schedules"]
    else:
        reader = read_store(args.root)
        try:
            rows = reader.schedules(session_id=args.session, state=state)
        finally:
            reader.close()
    if args.json:
        print(dump_json(rows))
        return 0
    if not rows:
        print("no schedules")
    for row in rows:
        print(f"{row['id']}  {row['state']:<9} {_schedule_line(row)}")
    return 0


def cmd_schedule_rm(args: argparse.Namespace) -> int:
    info = _live(args, "cancel a schedule")
    out = call(info, "DELETE", f"schedules/{urllib.parse.quote(args.schedule_id)}")
    print(f"schedule {out['id']} {out['state']}")
    return 0


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else "-"


def _schedule_line(row: dict[str, Any]) -> str:
    when = {"every": f"every {fmt_interval(float(row['spec']))}", "at": f"at {row['spec']}"}.get(
        row["kind"], f"cron {row['spec']}"
    )
    owner = "you" if row["owner"] == "user" else row["owner"]
    text = (
        f"{when} → {row['target_id']}: {row['message']!r} (owner {owner}; next {_when(row['next'])}"
        f"; {row['ticks']} delivered"
    )
    if row.get("missed"):
        text += f", {row['missed']} missed"
    if row.get("skipped"):
        text += f", {row['skipped']} skipped"
    text += ")"
    if row.get("reason"):
        text += f" — {row['reason']}"
    return text
