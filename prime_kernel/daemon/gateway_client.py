"""A kernel client over a Kernel Gateway's websocket (`/api/kernels/{id}/channels`): what the
daemon's `KernelRunner` uses of a jupyter_client client, for the kernels `GatewayLauncher`
(gateway.py) starts there; and how a gateway's failure is put in words."""

from __future__ import annotations

import asyncio
import json
import queue
import secrets
from typing import Any

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

# Largest websocket message taken from the gateway (a cell's rich output can be big).
MAX_MESSAGE = 100 * 1024 * 1024


class GatewayKernelClient:
    """A kernel client over a gateway's websocket: what `KernelRunner` uses of a
    jupyter_client `AsyncKernelClient` (execute and kernel_info requests out, shell and IOPub
    messages in)."""

    def __init__(self, request: HTTPRequest) -> None:
        self.request = request
        # The gateway checks no signature of ours (it signs what it forwards to its kernel
        # with the kernel's key); a random key keeps jupyter_client from warning.
        self.session = Session(key=secrets.token_bytes(16))
        self._shell: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._iopub: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: list[str] = []
        self._ws: WebSocketClientConnection | None = None
        self._task: asyncio.Task[None] | None = None
        # Why the connection (or the kernel behind it) ended; None while it works.
        self.ended: str | None = None

    @property
    def connected(self) -> bool:
        return self._ws is not None and self.ended is None

    def start_channels(
        self,
        shell: bool = True,
        iopub: bool = True,
        stdin: bool = False,
        hb: bool = False,
        control: bool = False,
    ) -> None:
        # One websocket carries every channel: nothing to choose.
        self._task = asyncio.create_task(self._run(), name="gateway-channels")

    def stop_channels(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._ws is not None:
            self._ws.close()
            self._ws = None
        self.ended = self.ended or "the client closed the connection"

    async def _run(self) -> None:
        try:
            ws = await websocket_connect(self.request, max_message_size=MAX_MESSAGE)
        except Exception as e:
            self.ended = f"could not open the kernel's websocket on the gateway: {reason(e)}"
            return
        # Requests made while connecting go first, in order (tornado queues writes in order).
        for text in self._outbox:
            _send(ws, text)
        self._outbox.clear()
        self._ws = ws
        while True:
            raw = await ws.read_message()
            if raw is None:
                self.ended = self.ended or "the gateway closed the kernel's websocket"
                return
            if isinstance(raw, bytes):  # binary buffers: nothing the daemon reads
                continue
            msg = json.loads(raw)
            channel = msg.get("channel")
            if channel == "shell":
                self._shell.put_nowait(msg)
            elif channel == "iopub":
                state = (msg.get("content") or {}).get("execution_state")
                if msg["header"].get("msg_type") == "status" and state in ("restarting", "dead"):
                    # The gateway's own restarter replaced a kernel that died: the REPL is gone.
                    self.ended = f"the kernel died on the gateway (status {state})"
                self._iopub.put_nowait(msg)

    def _send(self, msg: dict[str, Any], channel: str) -> str:
        msg["channel"] = channel
        text = json.dumps(msg, default=json_default)
        if self._ws is None:
            self._outbox.append(text)
        else:
            _send(self._ws, text)
        return str(msg["header"]["msg_id"])

    def kernel_info(self) -> str:
        return self._send(self.session.msg("kernel_info_request"), "shell")

    def execute(
        self,
        code: str,
        silent: bool = False,
        store_history: bool = True,
        user_expressions: dict[str, Any] | None = None,
        allow_stdin: bool | None = None,
        stop_on_error: bool = True,
    ) -> str:
        content = {
            "code": code,
            "silent": silent,
            "store_history": store_history,
            "user_expressions": user_expressions or {},
            "allow_stdin": bool(allow_stdin),
            "stop_on_error": stop_on_error,
        }
        return self._send(self.session.msg("execute_request", content), "shell")

    async def get_shell_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await _get(self._shell, timeout)

    async def get_iopub_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await _get(self._iopub, timeout)


def _send(ws: WebSocketClientConnection, text: str) -> None:
    try:
        future = ws.write_message(text)
    except Exception:  # closed: the read loop says why
        return
    # A write that fails later (the connection dropped) is seen by the read loop too.
    future.add_done_callback(lambda f: f.exception())


async def _get(q: asyncio.Queue[dict[str, Any]], timeout: float | None) -> dict[str, Any]:
    try:
        return await asyncio.wait_for(q.get(), timeout)
    except asyncio.TimeoutError:
        raise queue.Empty from None


def reason(e: BaseException) -> str:
    if isinstance(e, HTTPClientError) and e.code != 599:
        said = gateway_said(e)
        return f"HTTP {e.code}: {said}" if said else f"HTTP {e.code} {e.message or ''}".strip()
    return str(getattr(e, "real_error", None) or e) or type(e).__name__


def gateway_said(e: HTTPClientError) -> str:
    """What the gateway said in its error reply (the `message` of its JSON: tornado's, as both
    gateways send it), if anything."""
    body = getattr(e.response, "body", None) if e.response is not None else None
    try:
        reply = json.loads(body or b"")
    except (ValueError, TypeError):
        return ""
    if not isinstance(reply, dict):
        return ""
    return str(reply.get("message") or reply.get("reason") or "").strip()[:500]
