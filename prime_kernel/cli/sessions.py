"""`prime-agent sessions` and `prime-agent show ID`: from the running daemon, or the store."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from ..protocol.errors import InvalidRequest
from ..protocol.requests import QUERY, SessionFilter
from ..util.format import fmt_cost, fmt_tokens
from .common import CLIError, dump_json, fmt_time, fmt_usage, print_table, read_store
from .remote import call, find_server
from .render import render


def add_commands(sub: Any) -> None:
    p = sub.add_parser("sessions", help="list sessions recorded under --root")
    p.add_argument("--state", action="append", help="only sessions in this state (repeatable)")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sessions)

    p = sub.add_parser("show", help="print one session: record, usage and trajectory")
    p.add_argument("id")
    p.add_argument("--json", action="store_true", help="the record and events as JSON")
    p.set_defaults(func=cmd_show)


def cmd_sessions(args: argparse.Namespace) -> int:
    # The options are the list's query arguments: read as the server reads them.
    try:
        filters = SessionFilter.from_query(
            {QUERY["states"]: args.state or [], QUERY["limit"]: [str(args.limit)]}
        )
    except InvalidRequest as e:
        raise CLIError(e.message) from None
    info = find_server(args.root)
    if info is not None:  # the running daemon holds the store: ask it
        rows = call(info, "GET", f"sessions?{filters.to_query()}")["sessions"]
    else:
        reader = read_store(args.root)
        try:
            rows = reader.list_sessions(filters)["sessions"]
        finally:
            reader.close()
    if args.json:
        print(dump_json(rows))
        return 0
    if not rows:
        print("no sessions")
        return 0
    print_table(
        ["ID", "STATE", "CREATED", "MODEL", "TOKENS", "COST", "TASK"],
        [
            [
                r["id"],
                r["state"],
                fmt_time(r["created"]),
                r.get("model") or "-",
                fmt_tokens(r["usage"]["subtree"].get("total_tokens", 0)),
                fmt_cost(r["usage"]["subtree"].get("cost", 0)),
                r["name"] + (f" (child of {r['parent_id']})" if r["parent_id"] else ""),
            ]
            for r in rows
        ],
    )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from ..protocol.errors import NotFound

    info = find_server(args.root)
    note = None
    if info is not None:  # the running daemon holds the store: ask it
        record = call(info, "GET", f"sessions/{args.id}")
        events = call(info, "GET", f"sessions/{args.id}/events")["events"]
    else:
        reader = read_store(args.root)
        try:
            record = reader.session_json(args.id)
            events = asyncio.run(reader.events(args.id))
            note = reader.unattended.get(args.id)
        except NotFound as e:
            raise CLIError(e.message) from None
        finally:
            reader.close()
    if args.json:
        print(json.dumps({"session": record, "events": events}, indent=2, default=str))
        return 0
    print(render_session(record, events, note))
    return 0


def render_session(
    record: dict[str, Any], events: list[dict[str, Any]], note: str | None = None
) -> str:
    """The record, then its trajectory; `note`: why its state is not what the trajectory
    last says (a server stopped)."""
    lines = [
        f"Session {record['id']} · {record['state']} · {record['kind']}",
        f"  task:    {record['prompt']}",
        f"  model:   {record.get('model')}",
        f"  parent:  {record.get('parent_id') or '-'}   depth {record['depth']}",
        f"  created: {fmt_time(record['created'])}   ended: {fmt_time(record.get('ended'))}",
        f"  usage:   own {fmt_usage(record['usage']['own'])}",
        f"           subtree {fmt_usage(record['usage']['subtree'])}",
    ]
    if record.get("children"):
        lines.append(f"  children: {', '.join(record['children'])}")
    if note:
        lines.append(f"  note:    {note}")
    if record.get("error"):
        lines.append(f"  error:   {record['error']}")
    if record.get("answer_repr") is not None:
        lines.append(f"  answer:  {record['answer_repr']}")
    if record.get("goal"):
        lines.append(f"  goal:    {record['goal']['text']} ({record['goal']['status']})")
    lines.append("")
    for event in events:
        if event["kind"] == "task":  # the header says it
            continue
        shown = render(event, limit=4000)
        if shown:
            lines.append(f"── {shown[0]}")
            lines.extend("   " + line for line in shown[1:])
    return "\n".join(lines)
