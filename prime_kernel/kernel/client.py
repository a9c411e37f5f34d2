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

TOKEN_HEADER = "X-Prime-Token"


class PrimeError(Exception):
    """An error the daemon reported for a call made from this kernel."""

    def __init__(self, message: str, *, code: str = "error", data: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.data = data or {}


class DaemonUnreachable(PrimeError, ConnectionError):
    pass


class NotConnected(PrimeError, RuntimeError):
    pass


class DepthExceeded(PrimeError):
    pass


class BudgetExceeded(PrimeError):
    pass


class ModelError(PrimeError, ValueError):
    pass


class TooLarge(PrimeError, ValueError):
    pass


class NotFound(PrimeError, LookupError):
    pass


class Forbidden(PrimeError, PermissionError):
    pass


class Conflict(PrimeError):
    """Someone else changed the thing since you read it (e.g. a harness entry)."""


_BY_CODE: dict[str, type[PrimeError]] = {
    "depth_exceeded": DepthExceeded,
    "budget_exceeded": BudgetExceeded,
    "model_error": ModelError,
    "not_found": NotFound,
    "too_large": TooLarge,
    "forbidden": Forbidden,
    "conflict": Conflict,
}


class DaemonClient:
    def __init__(self, url: str | None = None, token: str | None = None) -> None:
        self.url = url if url is not None else os.environ.get("PRIME_URL", "")
        self.token = token if token is not None else os.environ.get("PRIME_TOKEN", "")

    def _endpoint(self, path: str, query: dict[str, Any] | None = None) -> str:
        if not self.url or not self.token:
            raise NotConnected(
                "this kernel is not connected to a Prime daemon (PRIME_URL/PRIME_TOKEN are not "
                "set): start it from a Jupyter server with the prime_kernel extension enabled, "
                "e.g. the 'Prime Agent' kernel, or any kernel of `jupyter lab` after "
                "`pip install prime_kernel`"
            )
        url = self.url.rstrip("/") + "/api/prime/kernel/" + path.lstrip("/")
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
                f"cannot reach the Prime daemon at {self.url}: {reason}", code="unreachable"
            ) from None
        if binary:
            return payload
        return json.loads(payload) if payload else None


def _error_from(e: urllib.error.HTTPError) -> PrimeError:
    try:
        body = json.loads(e.read() or b"{}")
    except ValueError:
        body = {}
    code = str(body.get("error") or "error")
    message = str(body.get("message") or f"HTTP {e.code} {e.reason}")
    data = {k: v for k, v in body.items() if k not in ("error", "message")}
    cls = _BY_CODE.get(code, PrimeError)
    if e.code == 401:
        message = f"the daemon refused this kernel's token: {message}"
    return cls(message, code=code, data=data)
