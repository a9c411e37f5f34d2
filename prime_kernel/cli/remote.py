"""Commands that act on live sessions through a running daemon's REST API."""

from __future__ import annotations

import argparse
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .common import dump_json, offline_daemon


def add_commands(sub: Any) -> None:
    p = sub.add_parser("cancel", help="cancel a session and all its descendants")
    p.add_argument("id")
    p.set_defaults(func=cmd_cancel)


def find_server(root: str) -> dict[str, Any] | None:
    """The running jupyter_server (with our extension) serving ROOT, if any."""
    from jupyter_server.serverapp import list_running_servers

    want = Path(root).resolve()
    for info in list_running_servers():
        if Path(info.get("root_dir", "")).resolve() == want:
            return info
    return None


def call(
    info: dict[str, Any], method: str, path: str, body: Any = None, *, raw: bool = False
) -> Any:
    from .main import CLIError

    url = info["url"].rstrip("/") + "/api/prime/" + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"token {info.get('token', '')}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            payload = resp.read()
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read()).get("message")
        except ValueError:
            message = None
        raise CLIError(message or f"HTTP {e.code} from {url}", exit_code=1) from None
    except urllib.error.URLError as e:
        raise CLIError(f"cannot reach the daemon at {info['url']}: {e.reason}") from None
    if raw:
        return payload
    return json.loads(payload) if payload else None


def live_server(root: str, session_id: str, action: str) -> dict[str, Any]:
    from ..protocol.errors import NotFound
    from .main import CLIError

    info = find_server(root)
    if info is None:
        try:
            state = offline_daemon(root).session_json(session_id)["state"]
        except NotFound as e:
            raise CLIError(e.message) from None
        raise CLIError(
            f"cannot {action} {session_id} ({state}): no running daemon serves "
            f"{Path(root).resolve()} (start one with `jupyter lab` or `prime-agent run`)",
            exit_code=1,
        )
    return info


def cmd_cancel(args: argparse.Namespace) -> int:
    out = call(live_server(args.root, args.id, "cancel"), "DELETE", f"sessions/{args.id}")
    if out.get("already_ended"):
        print(f"{args.id} already ended ({out['state']}); nothing to cancel")
    else:
        print(f"cancelled {len(out['cancelled'])} session(s): {', '.join(out['cancelled'])}")
    return 0


__all__ = ["add_commands", "call", "dump_json", "find_server"]
