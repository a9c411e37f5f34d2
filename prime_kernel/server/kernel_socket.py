"""The kernel API on a Unix socket: how kernels (sandboxed or not) reach the daemon.

A second tornado HTTPServer serves the server's own web application, but only its
/api/prime/kernel/ routes, on a Unix socket (0600) in this process's private folder (0700).
A sandboxed kernel gets that one socket bound in; it needs no network to reach the daemon, and
nothing else of the server is served there. The URL kernels are given is
`http+unix://<socket path, %-encoded><base url>`.
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from pathlib import Path
from typing import Any

from tornado.httpserver import HTTPServer
from tornado.netutil import bind_unix_socket
from tornado.routing import PathMatches, Rule, RuleRouter

from ..daemon import private


def unix_url(path: str | Path, base_url: str) -> str:
    return "http+unix://" + urllib.parse.quote(str(path), safe="") + base_url


class KernelSocket:
    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self.path = private.socket_path()
        self._server: HTTPServer | None = None

    def start(self) -> str:
        """Listen; the URL kernels call back to."""
        app = self.serverapp.web_app
        base_url = app.settings.get("base_url") or "/"
        kernel_api = rf"{re.escape(base_url)}api/prime/kernel/.*"
        # Anything else on this socket is tornado's plain 404.
        router = RuleRouter([Rule(PathMatches(kernel_api), app)])
        self._server = HTTPServer(
            router,
            max_body_size=self.serverapp.max_body_size,
            max_buffer_size=self.serverapp.max_buffer_size,
        )
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server.add_socket(bind_unix_socket(str(self.path), mode=0o600))
        return unix_url(self.path, base_url)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
