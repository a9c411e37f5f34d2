"""HTTP client from a kernel to the daemon. Stdlib only: a kernel must start fast.

The daemon URL and this kernel's capability token come from the environment our provisioner
set (`PRIME_URL`, `PRIME_TOKEN`). The daemon derives who is calling from the token alone.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
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


class DaemonClient:
    def __init__(self, url: str | None = None, token: str | None = None) -> None:
        self.url = url if url is not None else os.environ.get(URL_ENV, "")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV, "")

    def _endpoint(self, path: str, query: dict[str, Any] | None = None) -> str:
        if not self.url or not self.token:
            raise NotConnected(
                "this kernel is not connected to a Prime daemon (PRIME_URL/PRIME_TOKEN are not "
                "set): start it from a Jupyter server with the prime_kernel extension enabled, "
                "e.g. the 'Prime Agent' kernel, or any kernel of `jupyter lab` after "
                "`pip install prime_kernel`"
            )
        url = self.url.rstrip("/") + KERNEL_API + "/" + path.lstrip("/")
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        return url

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
        url = self._endpoint(path, query)
        headers = {TOKEN_HEADER: self.token}
        data: bytes | None = None
        if raw is not None:
            data = raw
            headers["Content-Type"] = "application/octet-stream"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            raise _error_from(e) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise DaemonUnreachable(
                f"cannot reach the Prime daemon at {self.url}: {reason}"
            ) from None
        if binary:
            return payload
        return json.loads(payload) if payload else None


def _error_from(e: urllib.error.HTTPError) -> PrimeError:
    try:
        body = json.loads(e.read() or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    error = from_json({"message": f"HTTP {e.code} {e.reason}", **body}, status=e.code)
    if e.code == 401:
        error = type(error)(
            f"the daemon refused this kernel's token: {error.message}", **error.data
        )
    return error
