"""Talking to a running daemon: finding the server that serves a root, and its REST API.

While a daemon runs it holds its store exclusively, so every command asks it over REST
(`/api/prime/...`, authenticated with the server's token) when one serves the root, and reads
the store directly only when none does. Finding one reads jupyter_server's server info files
(`jpserver-*.json` in the runtime folder) without importing jupyter_server.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from ..protocol.states import TERMINAL, SessionState
from .common import CLIError, read_store


def add_commands(sub: Any) -> None:
    p = sub.add_parser("cancel", help="cancel a session and all its descendants")
    p.add_argument("id")
    p.set_defaults(func=cmd_cancel)


def find_server(root: str) -> dict[str, Any] | None:
    """The info of the running jupyter_server serving ROOT, if any."""
    from jupyter_core.paths import jupyter_runtime_dir

    want = Path(root).resolve()
    folder = Path(jupyter_runtime_dir())
    for path in sorted(folder.glob("jpserver-*.json")) if folder.is_dir() else []:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # being written, or gone meanwhile
            continue
        if not isinstance(info, dict) or not _alive(info.get("pid")):
            continue
        if Path(str(info.get("root_dir", ""))).resolve() == want:
            return info
    return None


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


class Refused(CLIError):
    """The daemon refused a request: its message, and the HTTP status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message, exit_code=1)
        self.status = status


class Unreachable(CLIError):
    """The server did not answer (it stopped, or never was)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=1)


def call(
    info: dict[str, Any],
    method: str,
    path: str,
    body: Any = None,
    *,
    raw: bool = False,
) -> Any:
    """One REST call; a refusal becomes a CLIError carrying the daemon's message."""
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
            reply = json.loads(e.read())
        except ValueError:
            reply = None
        if not isinstance(reply, dict) or "message" not in reply:
            if e.code == 404:
                raise CLIError(
                    f"the Jupyter server at {info['url']} serves {info.get('root_dir')} without "
                    "the prime_kernel extension (jupyter server extension enable prime_kernel)",
                    exit_code=1,
                ) from None
            raise CLIError(f"HTTP {e.code} from {url}", exit_code=1) from None
        if e.code == 503 and reply.get("stopping"):
            raise Unreachable(f"the daemon at {info['url']} is stopping") from None
        raise Refused(str(reply["message"]), e.code) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise Unreachable(f"cannot reach the daemon at {info['url']}: {reason}") from None
    if raw:
        return payload
    return json.loads(payload) if payload else None


class Server:
    """The REST API of the daemon in a running server (blocking calls)."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info

    @property
    def url(self) -> str:
        return str(self.info["url"])

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(call(self.info, "POST", "sessions", body))

    def resume(self, session_id: str) -> dict[str, Any]:
        return dict(call(self.info, "POST", f"sessions/{session_id}/resume", {}))

    def session(self, session_id: str) -> dict[str, Any]:
        return dict(call(self.info, "GET", f"sessions/{session_id}"))

    def tree(self, root_id: str) -> list[dict[str, Any]]:
        """The session and every session below it."""
        query = urllib.parse.urlencode({"root": root_id})
        return list(call(self.info, "GET", f"sessions?{query}")["sessions"])

    def events(self, session_id: str, after: int = 0) -> list[dict[str, Any]]:
        return list(call(self.info, "GET", f"sessions/{session_id}/events?after={after}")["events"])

    def replay_report(self, session_id: str) -> dict[str, Any]:
        return dict(call(self.info, "GET", f"sessions/{session_id}/replay"))

    def cancel(self, session_id: str) -> dict[str, Any]:
        return dict(call(self.info, "DELETE", f"sessions/{session_id}"))


def live_server(root: str, session_id: str, action: str) -> dict[str, Any]:
    """The server to `action` (a verb) a session through; a clear error if there is none."""
    info = find_server(root)
    if info is not None:
        return info
    state = offline_state(root, session_id)
    if state in TERMINAL:
        raise CLIError(f"session {session_id} has ended ({state.value}); cannot {action} it")
    raise _no_daemon(root, session_id, state, action)


def offline_state(root: str, session_id: str) -> SessionState:
    """A session's state as the store has it (with no daemon running)."""
    from ..protocol.errors import NotFound

    reader = read_store(root)
    try:
        return SessionState(reader.session_json(session_id)["state"])
    except NotFound as e:
        raise CLIError(e.message) from None
    finally:
        reader.close()


def _no_daemon(root: str, session_id: str, state: SessionState, action: str) -> CLIError:
    # With no daemon, an unfinished session waits INACTIVE for one to take it up.
    how = (
        "`prime-agent resume` or `jupyter lab`"
        if state == SessionState.INACTIVE
        else "`jupyter lab`"
    )
    return CLIError(
        f"cannot {action} {session_id} ({state.value}): no running daemon serves "
        f"{Path(root).resolve()} (start one there with {how})",
        exit_code=1,
    )


def cmd_cancel(args: argparse.Namespace) -> int:
    info = find_server(args.root)
    if info is None:
        state = offline_state(args.root, args.id)
        if state in TERMINAL:
            print(f"{args.id} already ended ({state.value}); nothing to cancel")
            return 0
        raise _no_daemon(args.root, args.id, state, "cancel")
    out = call(info, "DELETE", f"sessions/{args.id}")
    if out.get("already_ended"):
        print(f"{args.id} already ended ({out['state']}); nothing to cancel")
    else:
        print(f"cancelled {len(out['cancelled'])} session(s): {', '.join(out['cancelled'])}")
    return 0


__all__ = ["Refused", "Server", "Unreachable", "add_commands", "call", "find_server", "live_server"]
