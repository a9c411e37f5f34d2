"""`prime-agent send ID "message"`: a person's message to a session of a running daemon."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import CLIError
from .remote import call, live_server


def add_commands(sub: Any) -> None:
    p = sub.add_parser("send", help="send a message to a session (the model sees it from 'user')")
    p.add_argument("id")
    p.add_argument("message", help='the message; "-" reads it from standard input')
    p.set_defaults(func=cmd_send)


def cmd_send(args: argparse.Namespace) -> int:
    message = sys.stdin.read() if args.message == "-" else args.message
    if not message.strip():
        raise CLIError("the message is empty")
    info = live_server(args.root, args.id, "message")
    receipt = call(info, "POST", f"sessions/{args.id}/messages", {"message": message})
    status, to, state = receipt["status"], receipt["to"], receipt["state"]
    print(f"{status} to {to} ({state}): message {receipt['message_id']}")
    return 0
