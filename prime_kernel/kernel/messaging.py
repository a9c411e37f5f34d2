"""Messages and accounting from a REPL: send, recv, agents, usage.

Thin calls to the daemon, which stamps the sender from this kernel's token and enforces reach
and limits; nothing here decides who may talk to whom.
"""

from __future__ import annotations

import time
from typing import Any

from ..protocol.errors import InvalidRequest
from .primitives import POLL_SECONDS, Handle, client

GROUPS = ("children", "siblings")


def send(to: Any, message: str) -> dict[str, Any] | list[dict[str, Any]]:
    """Send `message` to `to`: a Handle, a session id, a name, "parent", "children" or
    "siblings". Returns a receipt ({"to", "status": "delivered" | "queued", ...}); a list of
    receipts for "children" and "siblings"."""
    if isinstance(to, Handle):
        to = to.session_id
    if not isinstance(message, str):
        raise TypeError(f"send() takes a string message, not {type(message).__name__}")
    out = client().request("POST", "messages", {"to": to, "message": message})
    receipts: list[dict[str, Any]] = out["receipts"]
    return receipts if to in GROUPS else receipts[0]


def recv(timeout: float | None = None) -> dict[str, Any] | None:
    """The next message for this session ({"from", "from_id", "message", ...}), waiting up to
    `timeout` seconds (None: until one comes; 0: only what is already there); None on timeout.
    """
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0
    ):
        raise InvalidRequest(
            f"timeout must be a non-negative number of seconds or None, not {timeout!r}"
        )
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        wait = (
            POLL_SECONDS
            if deadline is None
            else max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))
        )
        out = client().request(
            "GET", "messages", query={"timeout": f"{wait:.3f}"}, timeout=wait + 30
        )
        if out.get("message") is not None:
            return dict(out["message"])
        if deadline is not None and time.monotonic() >= deadline:
            return None


def agents() -> list[dict[str, Any]]:
    """Who this session can message: its parent, siblings and children (relation, id, name,
    depth, state)."""
    return list(client().request("GET", "agents")["agents"])


def usage() -> dict[str, Any]:
    """This session's resource use: {"own": {...}, "subtree": {...}} (itself + descendants)."""
    return dict(client().request("GET", "usage"))


EXPORTS: dict[str, Any] = {"send": send, "recv": recv, "agents": agents, "usage": usage}
