"""HTTP client from a kernel to the daemon. Stdlib only: a kernel must start fast.

The daemon's URL and this kernel's capability token come from the boot document the
provisioner piped to the kernel (prime_kernel/kernel/boot.py), or from a capability the user's
frontend obtained for it (`%load_ext prime_kernel` in another kernel), or, for kernels started
by hand, from `PRIME_URL` and `PRIME_TOKEN`. The daemon derives who is calling from the token
alone. The URL is usually `http+unix://<socket path, %-encoded>/<base url>`: the daemon's
kernel API on a Unix socket in a private folder (bound into sandboxed kernels).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
from typing import Any

# The protocol package is stdlib only, like this one: every error the daemon reports arrives
# here as its own class (NotFound, BudgetExceeded, ...), so agent code catches them by name.
from ..protocol.errors import (
    BudgetExceeded,
    Conflict,
    DaemonUnreachable,
    DepthExceeded,
    Forbidden,
    ModelError,
    NotConnected,
    NotFound,
    PrimeError,
    TooLarge,
    Unavailable,
    from_json,
)
from ..protocol.wire import KERNEL_API, TOKEN_ENV, TOKEN_HEADER, URL_ENV

__all__ = [
    "BudgetExceeded",
    "Conflict",
    "DaemonClient",
    "DaemonUnreachable",
    "DepthExceeded",
    "Forbidden",
    "ModelError",
    "NotConnected",
    "NotFound",
    "PrimeError",
    "TooLarge",
]


# Longest a call waits for a daemon that is still starting.
STARTING_WAIT = 120.0

_lock = threading.Lock()
_credentials: tuple[str, str] | None = None


def connect(url: str, token: str) -> None:
    """Use `url` and `token` for every call from this process (set once at boot, or when the
    frontend answers a capability request)."""
    global _credentials
    with _lock:
        _credentials = (url, token)


def credentials() -> tuple[str, str]:
    """The daemon URL and token of this process ('' where there are none)."""
    global _credentials
    with _lock:
        if _credentials is not None:
            return _credentials
    from . import boot

    doc = boot.read()  # a kernel not started by `python -m prime_kernel.kernel`
    if doc is not None:
        boot.apply(doc)
    with _lock:
        if _credentials is None:
            _credentials = (os.environ.get(URL_ENV, ""), os.environ.get(TOKEN_ENV, ""))
        return _credentials


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class DaemonClient:
    def __init__(self, url: str | None = None, token: str | None = None) -> None:
        self._url = url
        self._token = token

    @property
    def url(self) -> str:
        return self._url if self._url is not None else credentials()[0]

    @property
    def token(self) -> str:
        return self._token if self._token is not None else credentials()[1]

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, str]:
        url, token = self.url, self.token
        if not url or not token:
            from .capability import status

            raise NotConnected(
                status()
                or "this kernel is not connected to a Prime daemon: use the 'Prime Agent' "
                "kernel of a Jupyter server with the prime_kernel extension, or run "
                "`%load_ext prime_kernel` in this kernel from JupyterLab (its Agents extension "
                "asks the server for a capability for you), then call again"
            )
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "http+unix":
            conn: http.client.HTTPConnection = _UnixConnection(
                urllib.parse.unquote(parts.netloc), timeout
            )
        elif parts.scheme == "https":
            conn = http.client.HTTPSConnection(parts.netloc, timeout=timeout)
        else:
            conn = http.client.HTTPConnection(parts.netloc, timeout=timeout)
        return conn, parts.path

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        raw: bytes | None = None,
        timeout: float = 60,
        binary: bool = False,
    ) -> Any:
        """One call to the daemon. While it is still starting (a server just started imports
        its model library for a few seconds), say so once in the cell and wait for it."""
        deadline = time.monotonic() + STARTING_WAIT
        told = False
        while True:
            try:
                return self._request(method, path, body, query, raw, timeout, binary)
            except Unavailable as e:
                if not e.data.get("starting") or time.monotonic() > deadline:
                    raise
                if not told:
                    print("[prime] the daemon is still starting; waiting for it…", file=sys.stderr)
                    told = True
                time.sleep(float(e.data.get("retry_after") or 0.5))

    def _request(
        self,
        method: str,
        path: str,
        body: Any,
        query: dict[str, Any] | None,
        raw: bytes | None,
        timeout: float,
        binary: bool,
    ) -> Any:
        conn, base = self._connection(timeout)
        target = base.rstrip("/") + KERNEL_API + "/" + path.lstrip("/")
        if query:
            target += "?" + urllib.parse.urlencode(
                {k: v for k, v in query.items() if v is not None}
            )
        headers = {TOKEN_HEADER: self.token}
        data: bytes | None = None
        if raw is not None:
            data = raw
            headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        try:
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise DaemonUnreachable(f"cannot reach the Prime daemon at {self.url}: {e}") from None
        finally:
            conn.close()
        if resp.status >= 400:
            raise _error_from(resp.status, resp.reason, payload)
        if binary:
            return payload
        return json.loads(payload) if payload else None


def _error_from(status: int, reason: str, payload: bytes) -> PrimeError:
    try:
        body = json.loads(payload or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    error = from_json({"message": f"HTTP {status} {reason}", **body}, status=status)
    if status == 401:
        error = type(error)(
            f"the daemon refused this kernel's token: {error.message}", **error.data
        )
    return error
