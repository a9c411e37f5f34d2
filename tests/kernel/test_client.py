"""The kernel-side client against a real HTTP server on a Unix socket: errors become the
protocol's exception classes, and a daemon that is still starting is waited for, with one line
said in the cell."""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from prime_kernel.kernel.client import DaemonClient
from prime_kernel.protocol.errors import BudgetExceeded, NotFound


class UnixHTTPServer(HTTPServer):
    address_family = socket.AF_UNIX

    def server_bind(self) -> None:
        self.socket.bind(self.server_address)

    def get_request(self) -> tuple[Any, Any]:
        request, _ = self.socket.accept()
        return request, ("local", 0)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[DaemonClient, list[tuple[int, dict[str, Any]]]]]:
    replies: list[tuple[int, dict[str, Any]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = replies.pop(0)
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    path = tmp_path / "d.sock"
    server = UnixHTTPServer(str(path), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = "http+unix://" + urllib.parse.quote(str(path), safe="") + "/"
    yield DaemonClient(url=url, token="t"), replies
    server.shutdown()


def test_errors_are_the_protocols_classes(daemon: Any) -> None:
    client, replies = daemon
    replies.append((404, {"error": "not_found", "message": "no session x"}))
    with pytest.raises(NotFound, match="no session x") as info:
        client.request("GET", "sessions/x")
    assert isinstance(info.value, LookupError)
    replies.append((403, {"error": "budget_exceeded", "message": "spent", "limit": "tokens"}))
    with pytest.raises(BudgetExceeded) as budget:
        client.request("GET", "usage")
    assert budget.value.data == {"limit": "tokens"}


def test_a_starting_daemon_is_waited_for_and_said_once(daemon: Any, capsys: Any) -> None:
    client, replies = daemon
    starting = {
        "error": "unavailable",
        "message": "starting",
        "starting": True,
        "retry_after": 0.05,
    }
    replies += [(503, starting), (503, starting), (200, {"ok": 1})]
    assert client.request("GET", "whoami") == {"ok": 1}
    assert capsys.readouterr().err.count("the daemon is still starting") == 1
