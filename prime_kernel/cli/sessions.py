"""`prime-agent sessions` and `prime-agent show ID`: read the store, no server needed."""

from __future__ import annotations

import argparse
import asyncio
import json
import urllib.parse
from typing import Any

from ..protocol.errors import NotFound
from ..util.format import output_text
from .common import dump_json, fmt_time, fmt_usage, offline_daemon
from .longrun import describe
from .remote import call, find_server


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
    states = [s.upper() for s in args.state] if args.state else None
    info = find_server(args.root)
    if info is not None:  # the running daemon holds the store: ask it
        query = urllib.parse.urlencode({"state": states or [], "limit": args.limit}, doseq=True)
        rows = call(info, "GET", f"sessions?{query}")["sessions"]
    else:
        rows = offline_daemon(args.root).list_sessions(states=states, limit=args.limit)["sessions"]
    if args.json:
        print(dump_json(rows))
        return 0
    if not rows:
        print("no sessions")
        return 0
    for r in rows:
        parent = f" ← {r['parent_id']}" if r["parent_id"] else ""
        print(
            f"{r['id']}  {r['state']:<9} {fmt_time(r['created'])}  {r.get('model') or '-':<22} "
            f"{fmt_usage(r['usage']['subtree'])}  {r['name']}{parent}"
        )
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from .main import CLIError

    info = find_server(args.root)
    if info is not None:  # the running daemon holds the store: ask it
        record = call(info, "GET", f"sessions/{args.id}")
        events = call(info, "GET", f"sessions/{args.id}/events")["events"]
    else:
        daemon = offline_daemon(args.root)
        try:
            record = daemon.session_json(args.id)
        except NotFound as e:
            raise CLIError(e.message) from None
        events = asyncio.run(daemon.events(args.id))
    if args.json:
        print(json.dumps({"session": record, "events": events}, indent=2, default=str))
        return 0
    print(render_session(record, events))
    return 0


def render_session(record: dict[str, Any], events: list[dict[str, Any]]) -> str:
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
    if record.get("error"):
        lines.append(f"  error:   {record['error']}")
    if record.get("answer_repr") is not None:
        lines.append(f"  answer:  {record['answer_repr']}")
    if record.get("goal"):
        lines.append(f"  goal:    {record['goal']['text']} ({record['goal']['status']})")
    lines.append("")
    for e in events:
        kind, data = e["kind"], e["data"]
        if kind == "assistant" and data.get("content"):
            lines.append(f"── model: {data['content'].strip()}")
        elif kind == "cell":
            who = "person" if data.get("source") == "user" else "agent"
            lines.append(f"── {who} cell [{data.get('execution_count')}] {data.get('status')}")
            lines.extend("   > " + ln for ln in data["code"].splitlines())
            text = "".join(output_text(o) for o in data.get("outputs") or [])
            lines.extend("     " + ln for ln in text.splitlines()[:40])
        elif kind == "state":
            reason = f" ({data['reason']})" if data.get("reason") else ""
            lines.append(f"── state {data['state']}{reason}")
        elif kind == "child":
            lines.append(f"── child {data['child_id']}: {data['prompt'][:80]}")
        elif kind in ("mail_in", "mail_out"):
            peer = data.get("from") or data.get("to")
            lines.append(f"── {kind.replace('_', ' ')} {peer}: {data.get('message')}")
        elif kind == "compaction":
            lines.append(
                f"── context compacted: {data.get('summarised_messages')} messages summarised "
                f"({data.get('before_tokens')} → {data.get('after_tokens')} tokens)"
            )
        elif kind == "answer":
            lines.append(f"── answer: {data['repr']}")
        elif (line := describe(kind, data)) is not None:
            lines.append(f"── {line}")
    return "\n".join(lines)
