"""Every endpoint the extension mounts refuses a request without credentials.

The routes are read from the running extension, not listed by hand, so an endpoint added later
is covered without editing this test. User endpoints must answer 401/403 without jupyter_server
credentials; kernel endpoints must answer 401 without a session token and with a forged one.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

METHODS = ("get", "post", "put", "patch", "delete")


def concrete(pattern: str) -> str:
    """A URL the route pattern matches, with made-up values for its parameters."""

    def sample(match: re.Match[str]) -> str:
        body = match.group(2)
        for candidate in (*body.split("|"), "x1", "1"):
            if re.fullmatch(body, candidate):
                return candidate
        raise AssertionError(f"no sample value for {match.group(0)}")

    url = re.sub(r"\(\?P<(\w+)>([^)]*)\)", sample, pattern).rstrip("$")
    assert re.fullmatch(pattern, url), (pattern, url)
    return url


def routes(serverapp: Any) -> list[tuple[str, str, bool]]:
    from tornado.web import RequestHandler

    apps = serverapp.extension_manager.extension_apps["prime_kernel"]
    out = []
    for app in apps:
        for pattern, handler, *_ in app.handlers:
            kernel = "/api/prime/kernel/" in pattern
            for method in METHODS:
                impl = getattr(handler, method, None)
                if impl is not None and impl is not getattr(RequestHandler, method):
                    out.append((method.upper(), concrete(pattern), kernel))
    return out


async def test_every_endpoint_needs_credentials(
    daemon: Any, jp_serverapp: Any, jp_base_url: str, http_server_client: Any
) -> None:
    found = routes(jp_serverapp)
    # The extension mounts many routes; make sure the walk really found them.
    assert len(found) >= 30
    assert any(kernel for *_, kernel in found) and any(not kernel for *_, kernel in found)
    base = jp_base_url.rstrip("/")
    for method, path, kernel in found:
        for headers in ({}, {"X-Prime-Token": "forged"}) if kernel else ({},):
            with pytest.raises(HTTPClientError) as e:
                await http_server_client.fetch(
                    base + path,
                    method=method,
                    body="{}" if method in ("POST", "PUT", "PATCH") else None,
                    headers=headers,
                    allow_nonstandard_methods=True,
                )
            expected = (401,) if kernel else (401, 403)
            assert e.value.code in expected, (method, path, headers, e.value.code)
