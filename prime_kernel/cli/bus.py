"""Listening to jupyter_server's event bus (`/api/events/subscribe`) from the CLI.

The bus pushes the daemon's session notifications (something was stored: look now) and the
pieces of streamed model replies (`ModelDelta`, never stored). A minimal RFC 6455 client on the
standard library, in a thread of its own: importing tornado's would cost the CLI a tenth of a
second, and the CLI only reads. Messages are handed to `on_message` on the caller's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import struct
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

PATH = "api/events/subscribe"
# Seconds to connect and to read the handshake's answer; after it, reads wait for as long as
# the bus is quiet.
CONNECT_TIMEOUT = 5.0

_TEXT, _CLOSE, _PING, _PONG = 0x1, 0x8, 0x9, 0xA


class BusError(Exception):
    """The bus could not be reached (the CLI polls instead)."""


class EventBus:
    """One subscription: `start()` connects (BusError if it cannot), then a thread reads."""

    def __init__(
        self,
        info: dict[str, Any],
        on_message: Callable[[dict[str, Any]], None],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.info = info
        self.on_message = on_message
        self.loop = loop
        self.sock: socket.socket | None = None
        self._early = b""  # frames that came with the handshake's answer
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._read, name="prime-bus", daemon=True)

    def start(self) -> EventBus:
        self.sock, self._early = _connect(self.info)
        self.thread.start()
        return self

    def close(self) -> None:
        self.closed.set()
        sock, self.sock = self.sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()

    def _read(self) -> None:
        sock = self.sock
        assert sock is not None
        stream = sock.makefile("rb")
        early = self._early

        def read(n: int) -> bytes:
            nonlocal early
            got, early = early[:n], early[n:]
            return got + stream.read(n - len(got)) if len(got) < n else got

        message = b""
        try:
            while not self.closed.is_set():
                head = read(2)
                if len(head) < 2:
                    return
                fin, opcode = head[0] & 0x80, head[0] & 0x0F
                size = head[1] & 0x7F
                if size == 126:
                    (size,) = struct.unpack("!H", read(2))
                elif size == 127:
                    (size,) = struct.unpack("!Q", read(8))
                payload = read(size)  # a server's frames are not masked
                if opcode == _CLOSE:
                    return
                if opcode == _PING:
                    sock.sendall(_frame(_PONG, payload))
                    continue
                if opcode in (_TEXT, 0x0):  # a text frame, or its continuation
                    message += payload
                    if fin:
                        data, message = json.loads(message), b""
                        self.loop.call_soon_threadsafe(self.on_message, data)
        except (OSError, ValueError, RuntimeError):
            return  # closed, a broken frame, or the loop has ended: polling goes on
        finally:
            self.closed.set()


def _connect(info: dict[str, Any]) -> tuple[socket.socket, bytes]:
    """A socket past the handshake, and what came after the handshake's answer."""
    url = urllib.parse.urlsplit(str(info["url"]))
    secure = url.scheme == "https"
    host = url.hostname or "localhost"
    port = url.port or (443 if secure else 80)
    path = url.path.rstrip("/") + "/" + PATH
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET {path} HTTP/1.1\r\n"
        f"Host: {url.netloc}\r\n"
        "Upgrade: websocket\r\n"
        "Connection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n"
        f"Authorization: token {info.get('token', '')}\r\n"
        "\r\n"
    )
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        if secure:
            import ssl  # tens of milliseconds: only for https

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        sock.sendall(request.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                raise BusError("the server closed the connection")
            answer += chunk
    except OSError as e:
        raise BusError(f"cannot reach {info['url']}: {e}") from None
    status = answer.split(b"\r\n", 1)[0]
    if b" 101 " not in status + b" ":
        sock.close()
        raise BusError(f"the event bus refused: {status.decode(errors='replace')}")
    sock.settimeout(None)
    return sock, answer.split(b"\r\n\r\n", 1)[1]


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client's frame: always masked (RFC 6455 5.3)."""
    mask = os.urandom(4)
    size = len(payload)
    head = bytes([0x80 | opcode])
    if size < 126:
        head += bytes([0x80 | size])
    elif size < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", size)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", size)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
