"""Every endpoint the extension mounts refuses a request without credentials.

The routes are read from the running extension, not listed by hand, so an endpoint added later
is covered without editing this test. User endpoints must answer 401/403 without jupyter_server
credentials; kernel endpoints must answer 401 without a session token and with a forged one.
"""

from __future__ import annotations

from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from .routes import routes


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
